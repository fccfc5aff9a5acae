# SPDX-License-Identifier: GPL-2.0
"""Where a window's misses fall: sums cacheplug's per-address lines
(cacheplug-top:, the plugin's top=N argument) per kernel function, with the
symbols of a System.map (or `nm vmlinux` output).  Addresses outside every
text symbol (a module's, for one) are summed as "?".

usage: python3 where.py PLUGIN_LOG SYSTEM_MAP WINDOW [PAIRS]

WINDOW counts the plugin's windows from 0 in the order they closed, as the
bench module's "cachesim window=K" lines do (every window has marker id 0).

Prints one line per function, most misses first: L1I, L1D and L2 misses,
per pair when PAIRS (the window's allocate+free pairs) is given.  Only the
N addresses the plugin printed count, so the sums are a lower bound of the
window's misses; the last line says how much of the window they cover.
"""

import bisect
import re
import sys


def text_symbols(path):
    """Sorted (address, name) of the text symbols of a System.map."""
    syms = []
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return syms


def window(plugin, k):
    """Window k's totals (l1i, l1d, l2 misses) and its per-address rows: the
    k-th (from 0) window line and the cacheplug-top lines right after it."""
    total, rows, n = None, [], -1
    with open(plugin, errors="replace") as f:
        for line in f:
            m = re.match(r"cacheplug: id=\d+ insns=\d+ l1i_miss=(\d+) l1d_access=\d+ "
                         r"l1d_miss=(\d+) l2_access=\d+ l2_miss=(\d+)", line)
            if m:
                n += 1
                if n == k:
                    total = tuple(int(x) for x in m.groups())
                continue
            m = re.match(r"cacheplug-top: id=\d+ pc=0x([0-9a-f]+) l1i_miss=(\d+) "
                         r"l1d_miss=(\d+) l2_miss=(\d+)", line)
            if m and n == k:
                rows.append((int(m.group(1), 16),) + tuple(int(x) for x in m.groups()[1:]))
    return total, rows


def per_function(rows, syms):
    """{function: [l1i, l1d, l2]} for the rows, by the symbol at or below each address."""
    addrs = [a for a, _ in syms]
    out = {}
    for pc, l1i, l1d, l2 in rows:
        i = bisect.bisect_right(addrs, pc) - 1
        name = syms[i][1] if i >= 0 else "?"
        # Past the last symbol (a module's text is far above the kernel's).
        if i == len(syms) - 1 or i < 0 or pc - addrs[i] > 1 << 20:
            name = "?"
        s = out.setdefault(name, [0, 0, 0])
        s[0] += l1i
        s[1] += l1d
        s[2] += l2
    return out


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    plugin, smap, wid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    pairs = int(sys.argv[4]) if len(sys.argv) == 5 else 1
    total, rows = window(plugin, wid)
    if total is None:
        print(f"where: no window {wid} in {plugin}", file=sys.stderr)
        return 1
    if not rows:
        print(f"where: window {wid} has no cacheplug-top lines (boot with the plugin's top=N)",
              file=sys.stderr)
        return 1
    funcs = per_function(rows, text_symbols(smap))
    unit = "a pair" if pairs > 1 else "in the window"
    print(f"{'function':40} {'L1I':>9} {'L1D':>9} {'L2':>9}  (misses {unit})")
    for name, (l1i, l1d, l2) in sorted(funcs.items(), key=lambda kv: -sum(kv[1])):
        print(f"{name:40} {l1i / pairs:9.3f} {l1d / pairs:9.3f} {l2 / pairs:9.3f}")
    got = [sum(r[k] for r in rows) for k in (1, 2, 3)]
    print(f"{'(window)':40} {total[0] / pairs:9.3f} {total[1] / pairs:9.3f} {total[2] / pairs:9.3f}"
          f"  rows cover {sum(got)} of {sum(total)} misses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
