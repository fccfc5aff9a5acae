# SPDX-License-Identifier: GPL-2.0
"""What both pprof validators expect: the sites of the tool's --json rows,
and the comparison of a consumer's view with them."""

import json
import sys


def fail(msg):
    print(msg)
    sys.exit(1)


def expected_sites(json_path, drop_zero):
    """(file, line, function, module) -> (calls, bytes), rows with the same
    tag summed; with drop_zero, without the sites at (0, 0)."""
    with open(json_path, encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    want = {}
    for r in rows:
        key = (r["file"], r["line"], r["function"], r["module"] or "")
        calls, size = want.get(key, (0, 0))
        want[key] = (calls + r["calls"], size + r["bytes"])
    if drop_zero:
        want = {k: v for k, v in want.items() if v != (0, 0)}
    return want


def compare(got, want, consumer, what):
    """Fails, naming up to 20 sites, unless got equals want."""
    if got != want:
        diffs = [k for k in sorted(set(got) | set(want), key=str) if got.get(k) != want.get(k)]
        for k in diffs[:20]:
            print(f"{k}: {consumer} {got.get(k)}, allocinfo {want.get(k)}")
        fail(f"{what} at {len(diffs)} sites")
    print(f"{len(got)} sites match")
