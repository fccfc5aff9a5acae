#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks what real consumers read from `allocinfo export` against sums made here from the fixture.

usage: check_series.py openmetrics FIXTURE EXPORT
       check_series.py scrape FIXTURE METRICS RELEASE
       check_series.py pprof-totals FIXTURE RAW

The expected values come from the fixture's rows (/proc/allocinfo text), read here: one series per
function, file and module (empty for built-in code), the sum of its rows' bytes and live calls (a
count printed as 2^64 - n is -n), and allocinfo_inaccurate 1 where a row says accurate:no (version
2.0 only).

openmetrics: EXPORT (export -f openmetrics) parsed by prometheus_client's OpenMetrics parser.
scrape: METRICS is node_exporter's /metrics page with the export in its textfile directory: every
  series with the label release=RELEASE and exact values, and node_textfile_scrape_error 0.
pprof-totals: RAW is `go tool pprof -raw` of export -f pprof: its samples' inuse_objects and
  inuse_space add up to the fixture's live calls and bytes.
"""

import re
import sys

ROW = re.compile(r"^\s*(-?\d+)\s+(\d+)\s+(\S+):(\d+)(?: \[(\S+)\])? func:(\S+)(.*)$")


def fail(msg):
    print(msg)
    sys.exit(1)


def fixture(path):
    """(version, [(function, file, module, line, bytes, calls, accurate)])"""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    version = lines[0].rsplit(" ", 1)[-1]
    rows = []
    for line in lines[2:]:
        m = ROW.match(line)
        if not m:
            fail(f"{path}: not a row: {line!r}")
        calls = int(m[2])
        if calls >= 1 << 63:
            calls -= 1 << 64
        rows.append((m[6], m[3], m[5] or "", int(m[4]), int(m[1]), calls, "accurate:no" not in m[7]))
    return version, rows


def series(rows):
    """(function, file, module) -> [bytes, calls, inaccurate]"""
    out = {}
    for function, file, module, _, size, calls, accurate in rows:
        s = out.setdefault((function, file, module), [0, 0, False])
        s[0] += size
        s[1] += calls
        s[2] = s[2] or not accurate
    return out


def compare(families, version, rows, release, consumer):
    want = series(rows)
    names = {"allocinfo_bytes": 0, "allocinfo_calls": 1}
    if version == "2.0":
        names["allocinfo_inaccurate"] = 2
    for name, index in names.items():
        if name not in families:
            fail(f"{consumer}: no {name}")
        got = {}
        for s in families[name].samples:
            labels = dict(s.labels)
            if labels.pop("release", None) != release:
                fail(f"{consumer}: {name} {s.labels}: release is not {release!r}")
            if set(labels) != {"function", "file", "module"}:
                fail(f"{consumer}: {name} labels {sorted(s.labels)}")
            key = (labels["function"], labels["file"], labels["module"])
            if key in got:
                fail(f"{consumer}: {name}: two series for {key}")
            if s.value != int(s.value):
                fail(f"{consumer}: {name}{key} = {s.value}, not an integer")
            got[key] = int(s.value)
        if index == 2:
            expect = {k: 1 for k, v in want.items() if v[2]}
        else:
            expect = {k: v[index] for k, v in want.items()}
        if got != expect:
            diffs = [k for k in sorted(set(got) | set(expect)) if got.get(k) != expect.get(k)]
            for k in diffs[:20]:
                print(f"{name}{k}: {consumer} {got.get(k)}, fixture {expect.get(k)}")
            fail(f"{consumer}: {name} differs at {len(diffs)} series")
    extra = {n for n in families if n.startswith("allocinfo_")} - set(names)
    if extra:
        fail(f"{consumer}: unexpected families {sorted(extra)}")
    print(f"{consumer}: {len(rows)} rows, {len(want)} series per family, values exact")


def main():
    mode, fixture_path, path = sys.argv[1:4]
    version, rows = fixture(fixture_path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if mode == "openmetrics":
        from prometheus_client.openmetrics.parser import text_string_to_metric_families

        families = {f.name: f for f in text_string_to_metric_families(text)}
        if families["allocinfo_bytes"].unit != "bytes":
            fail("allocinfo_bytes lacks UNIT bytes")
        compare(families, version, rows, None, "OpenMetrics parser")
    elif mode == "scrape":
        from prometheus_client.parser import text_string_to_metric_families

        families = {f.name: f for f in text_string_to_metric_families(text)}
        errors = [s.value for s in families["node_textfile_scrape_error"].samples]
        if errors != [0.0]:
            fail(f"node_textfile_scrape_error {errors}")
        compare(families, version, rows, sys.argv[4], "node_exporter")
    elif mode == "pprof-totals":
        lines = text.splitlines()
        if lines[lines.index("Samples:") + 1].split() != ["inuse_objects/count", "inuse_space/bytes[dflt]"]:
            fail("sample types are not inuse_objects/count and inuse_space/bytes[dflt]")
        got = [0, 0]
        for line in lines[lines.index("Samples:") + 2 : lines.index("Locations")]:
            m = re.fullmatch(r"\s*(-?\d+)\s+(-?\d+): \d+ ", line)
            if m:
                got[0] += int(m[1])
                got[1] += int(m[2])
        want = [sum(r[5] for r in rows), sum(r[4] for r in rows)]
        if got != want:
            fail(f"go tool pprof: {got[0]} calls, {got[1]} bytes; the fixture: {want[0]}, {want[1]}")
        print(f"go tool pprof: {got[0]} live calls, {got[1]} bytes, as in the fixture")
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
