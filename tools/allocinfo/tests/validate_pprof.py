#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks what `go tool pprof -raw` read from `allocinfo export -f pprof` against `--json top -n 0`.

Usage: validate_pprof.py RAW JSON. RAW is pprof's own dump of the profile, so this checks that a real
consumer decodes every site (function, file, line, module label) with its live allocations and bytes,
rows with the same tag text summed, and that inuse_space is the default sample type. Sites holding 0
bytes in 0 allocations are left out of the comparison: pprof drops all-zero samples.
"""

import re
import sys


from pprof_expect import compare, expected_sites, fail


def parse_raw(text):
    lines = text.splitlines()
    try:
        start = lines.index("Samples:")
        loc_start = lines.index("Locations")
    except ValueError:
        fail("no Samples or Locations section in pprof -raw output")
    types = lines[start + 1].split()
    if types != ["inuse_objects/count", "inuse_space/bytes[dflt]"]:
        fail(f"sample types {types}")
    samples = []
    for line in lines[start + 2:loc_start]:
        m = re.fullmatch(r"\s*(-?\d+)\s+(-?\d+): (\d+) ", line)
        if m:
            samples.append([int(m[1]), int(m[2]), int(m[3]), None])
            continue
        m = re.fullmatch(r"\s+module:\[(.*)\]", line)
        if m and samples:
            samples[-1][3] = m[1]
            continue
        fail(f"unexpected sample line {line!r}")
    locations = {}
    for line in lines[loc_start + 1:]:
        if line == "Mappings":
            break
        m = re.fullmatch(r"\s*(\d+): 0x0 (?:M=\d+ )?(\S+) (\S+):(\d+) s=0", line)
        if not m:
            fail(f"unexpected location line {line!r}")
        locations[int(m[1])] = (m[3], int(m[4]), m[2])
    got = {}
    for calls, size, loc, module in samples:
        if loc not in locations:
            fail(f"sample names location {loc}, which is missing")
        file, line, function = locations[loc]
        key = (file, line, function, "" if module == "vmlinux" else module)
        if key in got:
            fail(f"two samples for {key}")
        got[key] = (calls, size)
    return got


def main():
    raw_path, json_path = sys.argv[1:3]
    with open(raw_path, encoding="utf-8") as f:
        got = parse_raw(f.read())
    # pprof drops samples whose values are all zero.
    want = expected_sites(json_path, drop_zero=True)
    compare(got, want, "pprof", "pprof's view differs from the profile")


if __name__ == "__main__":
    main()
