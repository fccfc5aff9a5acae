# SPDX-License-Identifier: GPL-2.0
# gdb script: instruction trace of the benchmark's hot path in a QEMU guest.
#
# Run by tools/testing/allocprof/bench/itrace.sh as
#   gdb -batch -ex 'set $entry="__kmalloc_noprof"' ... -x itrace.py vmlinux
# It waits for the benchmark module to load, lets ITRACE_SKIP calls of
# ITRACE_ENTRY pass (the warm-up), then single-steps ITRACE_STEPS
# instructions and prints, for the ITRACE_PAIRS loop iterations between
# consecutive entries, how many instructions each function executed.
import collections
import os

import gdb

entry = os.environ.get("ITRACE_ENTRY", "__kmalloc_noprof")
skip = int(os.environ.get("ITRACE_SKIP", "200"))
pairs = int(os.environ.get("ITRACE_PAIRS", "30"))
limit = int(os.environ.get("ITRACE_STEPS", "40000"))

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("target remote :%s" % os.environ.get("ITRACE_PORT", "1234"))
gdb.execute("hbreak do_init_module")
gdb.execute("continue")
gdb.execute("delete")
gdb.execute("hbreak %s" % entry)
gdb.execute("ignore 2 %d" % skip)
gdb.execute("continue")
gdb.execute("delete")

start = int(gdb.parse_and_eval("$pc"))
frame = gdb.selected_frame()
pcs = []
entries = 0
for _ in range(limit):
    pc = int(gdb.selected_frame().pc())
    if pc == start:
        entries += 1
        if entries > pairs:
            break
    pcs.append(pc)
    gdb.execute("stepi", to_string=True)

names = {}


def name(pc):
    if pc not in names:
        s = gdb.execute("info symbol %#x" % pc, to_string=True).strip()
        names[pc] = s.split(" + ")[0].split(" in ")[0] if not s.startswith("No symbol") else "(module)"
    return names[pc]


count = collections.Counter(name(pc) for pc in pcs)
print("ITRACE entry=%s pairs=%d instructions=%d per_pair=%.1f" %
      (entry, entries - 1 if entries > pairs else entries, len(pcs), len(pcs) / max(1, pairs)))
for fn, n in count.most_common():
    print("ITRACE %8.1f %s" % (n / pairs, fn))
# ITRACE_DETAIL=fn1,fn2: the instructions of these functions in the first
# iteration, in execution order.
detail = [d for d in os.environ.get("ITRACE_DETAIL", "").split(",") if d]
if detail:
    first = pcs[: pcs.index(start, 1)] if start in pcs[1:] else pcs
    for pc in first:
        if name(pc) in detail:
            insn = gdb.execute("x/i %#x" % pc, to_string=True).strip().lstrip("=> ")
            print("ITRACE-I %s" % insn)
gdb.execute("kill")
