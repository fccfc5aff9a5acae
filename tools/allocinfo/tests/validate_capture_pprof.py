#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks `allocinfo capture export -f pprof` against `capture show --json -n 0`.

Usage:
  validate_capture_pprof.py proto PROFILE JSON   decode with the protobuf library (schema of
                                                 validate_pprof_proto.py)
  validate_capture_pprof.py raw RAWTEXT JSON     read `go tool pprof -raw PROFILE`

Every stack of the report that holds something must be one sample with the values [calls, bytes]
and its frames' functions leaf first; a site's other bucket is [site function, "[other stacks]"].
With proto, also the labels site/site_function/module, and each function's file name (the module,
vmlinux for built-in code, empty for a bare address). The same stack twice (two sites whose stacks
read alike) counts twice.
"""

import collections
import json
import re
import sys

from pprof_expect import fail


def expected(json_path, with_labels):
    with open(json_path, encoding="utf-8") as f:
        report = json.load(f)
    want = collections.Counter()
    for s in report["sites"]:
        if len(s["stacks"]) != s["stacks_total"]:
            fail("the JSON was not made with -n 0")
        module = s["module"] or "vmlinux"
        labels = (f'{s["file"]}:{s["line"]}', s["function"], module) if with_labels else ()
        for st in s["stacks"]:
            if st["bytes"] == 0 and st["calls"] == 0:
                continue
            frames = []
            for fr in st["frames"]:
                filename = fr["module"] or ("vmlinux" if fr["offset"] is not None else "")
                frames.append((fr["function"], filename) if with_labels else fr["function"])
            want[(tuple(frames), st["calls"], st["bytes"], labels)] += 1
        o = s["other"]
        if o and (o["bytes"] != 0 or o["calls"] != 0):
            own = (s["function"], module) if with_labels else s["function"]
            other = ("[other stacks]", "") if with_labels else "[other stacks]"
            want[((own, other), o["calls"], o["bytes"], labels)] += 1
    return want


def from_proto(path):
    from validate_pprof_proto import profile_class

    p = profile_class()()
    with open(path, "rb") as f:
        p.ParseFromString(f.read())
    st = list(p.string_table)
    if not st or st[0] != "":
        fail("string_table[0] is not empty")
    types = [(st[t.type], st[t.unit]) for t in p.sample_type]
    if types != [("inuse_objects", "count"), ("inuse_space", "bytes")]:
        fail(f"sample types {types}")
    if st[p.default_sample_type] != "inuse_space":
        fail(f"default sample type {st[p.default_sample_type]}")
    functions = {f.id: f for f in p.function}
    locations = {l.id: l for l in p.location}
    got = collections.Counter()
    for s in p.sample:
        frames = []
        for lid in s.location_id:
            loc = locations[lid]
            if len(loc.line) != 1:
                fail(f"location {lid} has {len(loc.line)} lines")
            fn = functions[loc.line[0].function_id]
            if st[fn.name] != st[fn.system_name]:
                fail(f"function {fn} has two names")
            frames.append((st[fn.name], st[fn.filename]))
        labels = {st[l.key]: st[l.str] for l in s.label}
        if len(s.value) != 2 or len(labels) != 3:
            fail(f"sample {s} is not two values and three labels")
        key = (labels["site"], labels["site_function"], labels["module"])
        got[(tuple(frames), s.value[0], s.value[1], key)] += 1
    return got


def from_raw(path):
    """The Samples and Locations sections of pprof -raw."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    locations = {}
    for m in re.finditer(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S.*?) \S*:\d+ s=\d+$", text, re.M):
        locations[m.group(1)] = m.group(2)
    got = collections.Counter()
    samples = text.split("Samples:\n", 1)[1].split("Locations\n", 1)[0]
    for m in re.finditer(r"^\s+(-?\d+)\s+(-?\d+): ([\d ]+)$", samples, re.M):
        frames = tuple(locations[i] for i in m.group(3).split())
        got[(frames, int(m.group(1)), int(m.group(2)), ())] += 1
    return got


def main():
    mode, path, json_path = sys.argv[1:4]
    got = from_proto(path) if mode == "proto" else from_raw(path)
    want = expected(json_path, mode == "proto")
    if got != want:
        for k in sorted(set(got) | set(want), key=str):
            if got.get(k) != want.get(k):
                print(f"{k}: pprof {got.get(k)}, allocinfo {want.get(k)}")
        fail("the capture profile differs from the report")
    print(f"{sum(got.values())} stacks match")


if __name__ == "__main__":
    main()
