# SPDX-License-Identifier: GPL-2.0
"""Judges cacheplug's calibration boot: the misses of calib.c's three windows
against what the model must give for them.  Prints one summary line; exits 1
if a window is off or missing.

usage: python3 check.py CONSOLE_LOG PLUGIN_LOG
"""

import re
import sys


def main():
    console, plugin = sys.argv[1], sys.argv[2]
    sizes, got = {}, {}
    with open(console, errors="replace") as f:
        for line in f:
            m = re.search(r"calib: id=(\d+) lines=(\d+) passes=(\d+)", line)
            if m:
                sizes[int(m.group(1))] = int(m.group(2)) * int(m.group(3))
    with open(plugin, errors="replace") as f:
        for line in f:
            m = re.search(r"cacheplug: id=(\d+) insns=\d+ l1i_miss=\d+ l1d_access=(\d+) "
                          r"l1d_miss=(\d+) l2_access=\d+ l2_miss=(\d+)", line)
            if m:
                got[int(m.group(1))] = tuple(int(x) for x in m.groups()[1:])
    bad, parts = [], []
    # id: (what, l1d_miss bounds, l2_miss bounds), as fractions of the loads.
    want = {
        1: ("16 KiB, L1-resident", (0, 0.02), (0, 0.02)),
        2: ("1 MiB, L2-resident", (0.98, 1.05), (0, 0.01)),
        3: ("32 MiB, from memory", (0.98, 1.05), (0.98, 1.05)),
    }
    for i, (what, l1, l2) in want.items():
        if i not in sizes or i not in got:
            bad.append(f"window {i} missing")
            continue
        loads = sizes[i]
        _, l1d, l2m = got[i]
        parts.append(f"{what}: {loads} loads, {l1d} L1D and {l2m} L2 misses")
        if not l1[0] * loads <= l1d <= l1[1] * loads:
            bad.append(f"window {i}: {l1d} L1D misses for {loads} loads")
        if not l2[0] * loads <= l2m <= l2[1] * loads:
            bad.append(f"window {i}: {l2m} L2 misses for {loads} loads")
    print("; ".join(parts) + (" (as the model must)" if not bad else ""))
    for b in bad:
        print(f"cacheplug calibration: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
