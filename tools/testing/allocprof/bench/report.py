# SPDX-License-Identifier: GPL-2.0
"""Turn the logs of one `make bench` run into tools/testing/allocprof/bench/RESULTS.md (stdout).

usage: python3 report.py BENCH_OUT_DIR REPO
"""

import os
import platform
import re
import statistics
import subprocess
import sys
import time


def matrix_bench(repo):
    """(group, name) of every bench row of tools/testing/allocprof/matrix, in order."""
    rows = []
    with open(os.path.join(repo, "tools", "testing", "allocprof", "matrix")) as f:
        for line in f:
            fields = line.rstrip("\n").split("|")
            if fields[0] == "bench" and len(fields) == 5:
                group, _, name = fields[1].partition(":")
                rows.append((group, name))
    return rows


# The test-config rows; the production ones are these names with "prod-".
CONFIGS = [(g, n) for g, n in matrix_bench(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
           if not g.startswith("p")]
LOOPS = ["kmalloc", "page", "order0", "order1", "order2", "order3", "cache", "rust_kbox", "rust_kvec",
         "kmalloc_armed", "kmalloc_batch", "cache_batch", "page_batch"]
# The cycle model of the misses table: one cycle per instruction (L1 hits
# included), plus these penalties; no overlap of misses, no prefetching.
L2_HIT_CYCLES = 14     # an L1 miss served by L2
MEMORY_CYCLES = 200    # an L2 miss (DRAM, about 70 ns at 3 GHz)
# Measured on this kind of machine for upstream 6.12.118 (issue #4, FACTS 8).
ANCHOR = {
    ("compiled-out", "kmalloc"): 233.1, ("compiled-out", "page"): 546.3,
    ("upstream-off", "kmalloc"): 293.2, ("upstream-off", "page"): 580.3,
    ("upstream-never", "kmalloc"): 293.2, ("upstream-never", "page"): 580.3,
    ("upstream-on", "kmalloc"): 397.2, ("upstream-on", "page"): 742.4,
}
TARGETS = {  # overhead against compiled out, never asserted
    ("off", "kmalloc"): 1.0, ("off", "page"): 1.0,
    ("never", "kmalloc"): 1.0, ("never", "page"): 1.0,
    ("on", "kmalloc"): 25.0, ("on", "page"): 15.0,
    ("compressed-on", "page"): 8.0, ("conly-on", "page"): 8.0,
}


def parse(path):
    loops, read, slab_ext, page_ext, cpus, ioc = {}, None, 0, None, None, {}
    seen = set()
    with open(path, errors="replace") as f:
        for line in f:
            # The console echoes kernel lines that dmesg then prints again.
            if line in seen:
                continue
            seen.add(line)
            m = re.search(r"loop=(\w+) round=\d+ pairs=\d+ ns_per_pair=([\d.]+)", line)
            if m:
                loops.setdefault(m.group(1), []).append(float(m.group(2)))
            m = re.search(r"allocinfo_read: rows=(\d+) bytes=(\d+) median_ns=(\d+) min_ns=(\d+) max_ns=(\d+)", line)
            if m:
                read = tuple(int(x) for x in m.groups())
            m = re.search(r"allocinfo_ioctl: what=(\S+) tags=(\d+) median_ns=(\d+) min_ns=(\d+) max_ns=(\d+)", line)
            if m:
                ioc[m.group(1)] = tuple(int(x) for x in m.groups()[1:])
            m = re.match(r"\s*(-?\d+)\s+\d+ mm/slub\.c:\d+ func:alloc_slab_obj_exts ", line)
            if m:
                slab_ext += int(m.group(1))
            m = re.search(r"allocated (\d+) bytes of page_ext", line)
            if m:
                page_ext = int(m.group(1))
            m = re.search(r"possible_cpus=0-(\d+)", line)
            if m:
                cpus = int(m.group(1)) + 1
    return loops, read, slab_ext, page_ext, cpus, ioc


def matrix_logs(repo, kind, read):
    """{NAME: read(NAME)} for tools/testing/allocprof/matrix's KIND|NAME rows, in order, leaving out the
    names whose logs gave nothing."""
    with open(os.path.join(repo, "tools", "testing", "allocprof", "matrix")) as f:
        names = [r.split("|")[1] for r in f.read().splitlines() if r.startswith(kind + "|")]
    return {n: d for n, d in ((n, read(n)) for n in names) if d}


def plugin_windows(path, wid):
    """(insns, l1i_miss, l1d_miss, l2_miss) of each window WID the plugin's log at PATH
    closed, in order (OSError if there is no log)."""
    pat = re.compile(rf"cacheplug: id={wid} insns=(\d+) l1i_miss=(\d+) l1d_access=\d+ "
                     r"l1d_miss=(\d+) l2_access=\d+ l2_miss=(\d+)")
    with open(path, errors="replace") as f:
        return [tuple(int(x) for x in m.groups()) for m in map(pat.search, f) if m]


def cachesim(out, name):
    """{loop: (pairs, insns, l1i_miss, l1d_miss, l2_miss)} of cachesim-NAME's boot: the
    module's windows in order, paired with the plugin's; of a loop run more than once
    (the module's cachesim=N), its median run by estimated cycles."""
    loops = []
    try:
        seen = set()
        with open(os.path.join(out, f"cachesim-{name}.log"), errors="replace") as f:
            for line in f:
                m = re.search(r"cachesim window=(\d+) loop=(\w+) pairs=(\d+)", line)
                if m and m.group(0) not in seen:
                    seen.add(m.group(0))
                    loops.append((int(m.group(1)), m.group(2), int(m.group(3))))
        windows = plugin_windows(os.path.join(out, f"cachesim-{name}.plugin"), 0)
    except OSError:
        return {}
    if len(loops) != len(windows):
        return {}
    runs = {}
    for (_, loop, pairs), w in zip(sorted(loops), windows):
        runs.setdefault(loop, []).append((pairs,) + w)
    return {loop: median_run(r) for loop, r in runs.items()}


def median_run(runs):
    """Of a loop's runs (pairs, insns, l1i, l1d, l2), the median by estimated cycles
    (of an even count, the lower middle one)."""
    by = sorted(runs, key=run_cycles)
    return by[(len(by) - 1) // 2]


def run_cycles(r):
    """Estimated cycles of a run whose tuple ends with (insns, l1i, l1d, l2)."""
    insns, l1i, l1d, l2 = r[-4:]
    return cycles(insns, l1i + l1d, l2)


def cycles(insns, l1_miss, l2_miss):
    return insns + (l1_miss - l2_miss) * L2_HIT_CYCLES + l2_miss * MEMORY_CYCLES


def write_cachesim(w, out, repo):
    data = matrix_logs(repo, "cachesim", lambda n: cachesim(out, n))
    if not data:
        return
    w("\n## Cache misses (tools/testing/allocprof/bench/cacheplug: a TCG plugin's model of one core)\n")
    w("Each loop run three times (CACHESIM_RUNS), each run after an RCU grace period and a "
      "warm-up run, on CPU 0 of a boot under -icount (so that the timer interrupts a window "
      "holds do not depend on the host's load); the row is the median run by estimated "
      "cycles (a grace period pending during a run puts RCU's scans and the wake-ups they "
      "cause in its window: Documentation/allocprof/batch-and-cache.md). Model: "
      "tools/testing/allocprof/bench/cacheplug/cacheplug.c: L1I 32 KiB 8-way, L1D 48 KiB 12-way, L2 2 MiB 16-way, "
      "64-byte lines, LRU, no prefetcher, every level private to the core. Figures per "
      "allocate+free pair. Estimated cycles: one per instruction plus "
      f"{L2_HIT_CYCLES} per L1 miss served by L2 and {MEMORY_CYCLES} per L2 miss, with no "
      "overlap: a model, not a measurement; the TLB and the page walks are not modelled. "
      "The batch loops allocate 25,000 kmalloc-256 objects, 50,000 of a 128-byte cache or "
      "4,000 pages, then free them: working sets of 6 to 16 MiB, beyond L2.\n")
    try:
        calib = open(os.path.join(out, "cachesim-calibration.txt")).read().strip()
        w(f"Calibration (tools/testing/allocprof/bench/cacheplug/calib.c under the same model): {calib}\n")
    except OSError:
        pass
    w("| loop | configuration | instructions | L1I misses | L1D misses | L2 misses | est. cycles |")
    w("|---|---|---|---|---|---|---|")
    loops = [l for l in LOOPS if any(l in d for d in data.values())]
    for l in loops:
        for n, d in data.items():
            if l not in d:
                continue
            pairs, insns, l1i, l1d, l2 = d[l]
            w(f"| {l} | {n} | {insns / pairs:.1f} | {l1i / pairs:.2f} | {l1d / pairs:.2f} | "
              f"{l2 / pairs:.2f} | {cycles(insns, l1i + l1d, l2) / pairs:.1f} |")
    ours, up, comp = data.get("prod-rust-on"), data.get("prod-upstream-on"), data.get("prod-rust-compressed-on")
    if ours and up:
        w("\nGoal: ours (prod-rust-on) no more misses per pair (L1I + L1D + L2) than upstream "
          "(prod-upstream-on) in every loop:")
        for l in loops:
            if l in ours and l in up:
                a = sum(ours[l][2:]) / ours[l][0]
                b = sum(up[l][2:]) / up[l][0]
                w(f"- {l}: {a:.2f} against {b:.2f}: {'met' if a <= b else f'missed by {a - b:.2f}'}")
    if ours and comp:
        w("\nGoal: compressed (prod-rust-compressed-on) fewer misses per pair than page_ext "
          "(prod-rust-on) on the page loops:")
        for l in ["page", "order0", "order1", "order2", "order3", "page_batch"]:
            if l in ours and l in comp:
                a = sum(comp[l][2:]) / comp[l][0]
                b = sum(ours[l][2:]) / ours[l][0]
                w(f"- {l}: {a:.2f} against {b:.2f}: {'met' if a < b else 'missed'}")


def macro(out, name):
    """{workload: (runs, median, min, max)} of macro-NAME's boot (tools/testing/allocprof/bench/macro_time)."""
    res = {}
    try:
        with open(os.path.join(out, f"macro-{name}.log"), errors="replace") as f:
            for line in f:
                m = re.match(r"macro: what=(\S+) runs=(\d+) median_ns=(\d+) min_ns=(\d+) "
                             r"max_ns=(\d+)", line.strip())
                if m:
                    res[m.group(1)] = tuple(int(x) for x in m.groups()[1:])
    except OSError:
        pass
    return res


MACRO_GOAL = ("hackbench", "prod-rust-on", 1.0)  # ours on within +1% of compiled out


def write_macro(w, out, repo):
    data = matrix_logs(repo, "macro", lambda n: macro(out, n))
    if not data:
        return
    work = sorted({k for d in data.values() for k in d})
    base = data.get("prod-compiled-out", {})
    w("\n## Macro benchmark (whole runs, guest instructions)\n")
    w("Debian 12's hackbench (rt-tests: `-p -g 2 -l 1000`, 80 processes passing 1,000 "
      "100-byte messages each through pipes; the test kernels have no AF_UNIX) and stress-ng's "
      "mmap stressor (`--mmap 1 --mmap-bytes 2M --mmap-ops 10`), the binaries and shared "
      "libraries the host installed, run in the VM by tools/testing/allocprof/bench/macro_time.c: one warm-up run, "
      "then 11 timed, median shown, spread = (max-min)/median. One vCPU (`-smp 1`, "
      "MACRO_SMP): with two, hackbench's runs spread by 10%, with one by 2-3%, and the medians "
      "of three boots of one kernel within 0.6% of each other. `-icount shift=0,sleep=off`: "
      "the guest clock counts instructions and skips idle time to the next timer: "
      "instructions, not cycles, and cache misses are invisible here.\n")
    w("| configuration | " + " | ".join(f"{k} (M instr.) | against compiled out | spread" for k in work) + " |")
    w("|---|" + "---|---|---|" * len(work))
    for n, d in data.items():
        cells = []
        for k in work:
            if k not in d:
                cells += ["", "", ""]
                continue
            runs, med, lo, hi = d[k]
            vs = pct(med, base[k][1]) if k in base else ""
            cells += [f"{med / 1e6:.1f}", vs, f"{(hi - lo) / med * 100:.1f}%"]
        w(f"| {n} | " + " | ".join(cells) + " |")
    k, cfg, goal = MACRO_GOAL
    if k in base and k in data.get(cfg, {}):
        over = (data[cfg][k][1] / base[k][1] - 1) * 100
        w(f"\nGoal: {k} on {cfg} within +{goal:.0f}% of compiled out: {over:+.2f}%, "
          f"{'met' if over <= goal else 'missed'} (the spread of a configuration's runs is beside it).")


def cachesim_macro(out, name):
    """{workload: [(insns, l1i_miss, l1d_miss, l2_miss), ...]} of cachesim-macro-NAME's boot:
    macro_time's windows (id 1, one per timed run) in the order of its report lines."""
    order = []
    try:
        with open(os.path.join(out, f"cachesim-macro-{name}.log"), errors="replace") as f:
            for line in f:
                m = re.match(r"macro: what=(\S+) runs=(\d+) median_ns=", line.strip())
                if m:
                    order.append((m.group(1), int(m.group(2))))
        windows = plugin_windows(os.path.join(out, f"cachesim-macro-{name}.plugin"), 1)
    except OSError:
        return {}
    if sum(n for _, n in order) != len(windows):
        return {}
    res, i = {}, 0
    for what, n in order:
        res[what] = windows[i:i + n]
        i += n
    return res


def write_cachesim_macro(w, out, repo):
    data = matrix_logs(repo, "cachesim", lambda n: cachesim_macro(out, n))
    if not data:
        return
    w("\n## Cache misses over the macro runs\n")
    w("The macro benchmark's workloads (above) under the cache model of the loops' table: the "
      "cachesim configurations booted once more with one vCPU under the plugin and -icount, "
      "each timed run of macro_time a window (the workload's processes and the kernel's work "
      "for them, on the one vCPU), one warm-up run before them; the run with the median "
      "estimated cycles is shown, in millions per run, with the number of runs and the "
      "spread of the runs' estimated cycles ((max-min)/median: the workload's scheduling "
      "varies from run to run, and its misses with it). The same model of cycles as the "
      "loops' table.\n")
    work = sorted({k for d in data.values() for k in d})
    w("| workload | configuration | runs | M instructions | M L1I misses | M L1D misses | "
      "M L2 misses | M est. cycles | spread | est. cycles against compiled out |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    med = {}
    for k in work:
        for n, d in data.items():
            if k not in d or not d[k]:
                continue
            runs = sorted(d[k], key=run_cycles)
            i, l1i, l1d, l2 = runs[len(runs) // 2]
            med[(n, k)] = cyc = run_cycles(runs[len(runs) // 2])
            lo, hi = run_cycles(runs[0]), run_cycles(runs[-1])
            b = med.get(("prod-compiled-out", k))
            w(f"| {k} | {n} | {len(runs)} | {i / 1e6:.1f} | {l1i / 1e6:.3f} | {l1d / 1e6:.3f} | "
              f"{l2 / 1e6:.3f} | {cyc / 1e6:.1f} | {(hi - lo) / cyc * 100:.1f}% | "
              f"{pct(cyc, b) if b else ''} |")
    for k in work:
        o, u = med.get(("prod-rust-on", k)), med.get(("prod-upstream-on", k))
        if o and u:
            w(f"\n{k}: estimated cycles of prod-rust-on against prod-upstream-on: "
              f"{pct(o, u)} ({'no more than upstream' if o <= u else 'more than upstream'}).")


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def pct(x, base):
    return f"{(x / base - 1) * 100:+.1f}%"


def load(out, prefix):
    """The parsed logs of one config set (names without the set's prefix)."""
    data = {}
    for _, name in CONFIGS:
        p = os.path.join(out, prefix + name + ".log")
        if os.path.exists(p):
            data[name] = parse(p)
    return data


def medians(data):
    med = {(n, l): statistics.median(v) for n, d in data.items() for l, v in d[0].items()}
    spread = {(n, l): (max(v) - min(v)) / statistics.median(v) * 100
              for n, d in data.items() for l, v in d[0].items()}
    return med, spread


PAGE_LOOPS = ["page", "order0", "order1", "order2", "order3"]
SLAB_LOOPS = ["kmalloc", "cache"]
# Issue 18's targets on the production config: overhead against compiled out
# of the same config, in guest instructions per pair; reported, never asserted.
PROD_TARGETS = [
    ("off", SLAB_LOOPS, 2.0), ("never", SLAB_LOOPS, 2.0),
    ("off", PAGE_LOOPS, 1.0), ("never", PAGE_LOOPS, 1.0),
    ("on", SLAB_LOOPS, 30.0), ("on", PAGE_LOOPS, 18.0),
    ("compressed-on", PAGE_LOOPS, 10.0), ("conly-on", PAGE_LOOPS, 10.0),
]


def ours(mode):
    return mode if mode.startswith("conly") else f"rust-{mode}"


def prod_targets(w, med, data=None):
    """The targets table of the production config, met or not."""
    base = "compiled-out"
    w("\n## Targets (issue 18; overhead against compiled out of this config; reported, "
      "never asserted)\n")
    w("| mode | loop | target | upstream | ours | met |")
    w("|---|---|---|---|---|---|")
    for mode, loops, t in PROD_TARGETS:
        for l in loops:
            b, r = med.get((base, l)), med.get((ours(mode), l))
            u = med.get((f"upstream-{mode}", l))
            if not (b and r):
                continue
            ro = (r / b - 1) * 100
            up = pct(u, b) if u else "(none in 6.12)"
            w(f"| {mode} | {l} | <= +{t:.0f}% | {up} | {ro:+.1f}% | "
              f"{'yes' if ro <= t else 'no, by %.1f points' % (ro - t)} |")
    for l in ("rust_kbox", "rust_kvec"):
        u, r = med.get(("upstream-on", l)), med.get(("rust-on", l))
        if u and r:
            w(f"| on | {l} per call site | <= upstream's helper line | {u:.1f} | {r:.1f} | "
              f"{'yes' if r <= u else 'no, by %.1f%%' % ((r / u - 1) * 100)} |")
    for mode in ("on", "compressed-on"):
        for l in LOOPS:
            b, r, u = med.get((base, l)), med.get((ours(mode), l)), med.get(("upstream-on", l))
            if not (b and r and u) or u <= b:
                continue
            ratio = (r - b) / (u - b)
            w(f"| {mode} | {l}: our overhead / upstream-on's | <= 0.6x | +{u - b:.1f} | "
              f"+{r - b:.1f} ({ratio:.2f}x) | {'yes' if ratio <= 0.6 else 'no'} |")
    ro, up = (data or {}).get("rust-on"), (data or {}).get("upstream-on")
    if ro and up and ro[1] and up[1]:
        x = up[1][2] / ro[1][2]
        w(f"| read | full /proc/allocinfo, instructions | >= 5x fewer than upstream | "
          f"{up[1][2]} | {ro[1][2]} ({x:.2f}x fewer) | {'yes' if x >= 5 else 'no'} |")


def issue33_targets(w, out, repo, med, data):
    """Issue 33's targets on the production config in one table, met or not and by how
    much; each row's figures are the ones the sections below show in full."""
    rows = []

    def over(n, l):
        b, r = med.get(("compiled-out", l)), med.get((n, l))
        return (r / b - 1) * 100 if b and r else None

    def ratio(l):
        b, r, u = med.get(("compiled-out", l)), med.get(("rust-on", l)), med.get(("upstream-on", l))
        return (r - b) / (u - b) if b and r and u and u > b else None

    for l in ("kmalloc", "cache"):
        o = over("rust-on", l)
        if o is not None:
            rows.append(("1", f"{l} on against compiled out", "<= +30%", f"{o:+.1f}%",
                         "met" if o <= 30 else f"missed by {o - 30:.1f} points"))
    for l in ("kmalloc", "cache", "rust_kbox", "rust_kvec"):
        x = ratio(l)
        if x is not None:
            rows.append(("1", f"{l} on: our overhead / upstream-on's", "<= 0.6x", f"{x:.3f}x",
                         "met" if x <= 0.6 else f"missed by {x - 0.6:.3f}x"))
    for l in ("kmalloc", "cache"):
        o = over("rust-off", l)
        if o is not None:
            rows.append(("2", f"{l} off against compiled out", "<= +2%", f"{o:+.1f}%",
                         "met" if o <= 2 else f"missed by {o - 2:.1f} points"))
    for l in ("order1", "order2", "order3"):
        x = ratio(l)
        if x is not None:
            rows.append(("3", f"{l} on: our overhead / upstream-on's", "<= 0.6x", f"{x:.2f}x",
                         "met" if x <= 0.6 else f"missed by {x - 0.6:.2f}x"))
    ro = data.get("rust-on")
    if ro and ro[1] and ro[5].get("batch") and ro[5]["batch"][1]:
        x = ro[1][2] / ro[5]["batch"][1]
        rows.append(("4", "full binary walk with names (GET_BATCH) against the full text read",
                     ">= 3x fewer", f"{x:.2f}x fewer ({ro[5]['batch'][1]} vs {ro[1][2]})",
                     "met" if x >= 3 else f"missed by {3 - x:.2f}x"))
    sim = {n: cachesim(out, n) for n in ("prod-rust-on", "prod-upstream-on", "prod-rust-compressed-on")}
    o, u, c = sim["prod-rust-on"], sim["prod-upstream-on"], sim["prod-rust-compressed-on"]

    def misses(d, l):
        return sum(d[l][2:]) / d[l][0]

    if o and u:
        for l in LOOPS:
            if l in o and l in u:
                a, b = misses(o, l), misses(u, l)
                rows.append(("5", f"{l}: misses per pair, ours on against upstream on", "<= upstream",
                             f"{a:.3f} vs {b:.3f}", "met" if a <= b else f"missed by {a - b:.3f}"))
    if o and c:
        for l in PAGE_LOOPS + ["page_batch"]:
            if l in o and l in c:
                a, b = misses(c, l), misses(o, l)
                rows.append(("5", f"{l}: misses per pair, compressed against page_ext", "< page_ext",
                             f"{a:.3f} vs {b:.3f}", "met" if a < b else f"missed by {a - b:.3f}"))
    base, ours_m = macro(out, "prod-compiled-out"), macro(out, "prod-rust-on")
    if "hackbench" in base and "hackbench" in ours_m:
        x = (ours_m["hackbench"][1] / base["hackbench"][1] - 1) * 100
        rows.append(("6", "hackbench, ours on against compiled out", "<= +1%", f"{x:+.2f}%",
                     "met" if x <= 1 else f"missed by {x - 1:.2f} points"))
    if not rows:
        return
    w("\n## Issue 33 targets (production config; reported, never asserted)\n")
    w("Items 1-4 and 6 in guest instructions (cache misses invisible); item 5 in the cache "
      "model's misses per pair (section \"Cache misses\" below). Each figure comes from the "
      "section that shows it in full.\n")
    w("| item | what | target | measured | met |")
    w("|---|---|---|---|---|")
    for r in rows:
        w("| " + " | ".join(r) + " |")
    missed = sum(1 for r in rows if r[4] != "met")
    w(f"\n{len(rows) - missed} of {len(rows)} met.")


ITRACE_NAMES = ["compiled-out", "upstream-on", "rust-off", "rust-on", "rust-compressed-on"]


def itrace(w, out, prefix):
    """Per-function instructions per pair (tools/testing/allocprof/bench/itrace.sh), if run."""
    for loop in ("kmalloc", "page"):
        per = {}
        totals = {}
        for n in ITRACE_NAMES:
            p = os.path.join(out, f"itrace-{prefix}{n}-{loop}.txt")
            if not os.path.exists(p):
                continue
            fns = {}
            for line in open(p, errors="replace"):
                m = re.match(r"ITRACE entry=\S+ pairs=\d+ instructions=\d+ per_pair=([\d.]+)", line)
                if m:
                    totals[n] = float(m.group(1))
                    continue
                m = re.match(r"ITRACE\s+([\d.]+) (\S+)", line)
                if m:
                    fns[m.group(2)] = float(m.group(1))
            if fns:
                per[n] = fns
        if not per:
            continue
        names = [n for n in ITRACE_NAMES if n in per]
        w(f"\n## Per-function breakdown: {loop} loop (tools/testing/allocprof/bench/itrace.sh, instructions per pair)\n")
        w("Single-stepped in the VM under -icount (instructions, not cycles: cache misses are "
          "invisible); functions with at least 2 instructions per pair in some configuration.\n")
        w("| function | " + " | ".join(names) + " |")
        w("|---" * (len(names) + 1) + "|")
        fns = sorted({f for n in names for f, v in per[n].items() if v >= 2},
                     key=lambda f: (-max(per[n].get(f, 0) for n in names), f))
        for f in fns:
            w(f"| {f} | " + " | ".join(f"{per[n].get(f, 0):.1f}" for n in names) + " |")
        w("| **total** | " + " | ".join(f"{totals.get(n, 0):.1f}" for n in names) + " |")


def prod_notes(w):
    w("\n## Notes (production config)\n")
    w("- Figures are guest instructions (QEMU -icount): the cost of a `lock` prefix, a cache "
      "miss or a return thunk's real latency does not show. INIT_ON_ALLOC zeroes every page "
      "(`clear_page_rep`, 517 instructions of an order-0 pair), so page percentages are about "
      "half the test config's for the same hook work.")
    w("- Off and never: every hook is one patched no-op (`static_branch_unlikely()` whatever "
      "the default; the page hooks' arguments are computed behind the key). What remains "
      "against compiled out is register allocation around those no-ops: in `__kmalloc_noprof` "
      "and `kfree` a spilled gfp mask, the object in a stack slot and the asm goto join marked "
      "`endbr64`, and in the caller `alloc_hooks()`' save and restore of `current->alloc_tag` "
      "(kept as upstream has it, so that an allocation whose hook runs after a switch on is "
      "charged to its own site: 4 a pair). For pages, `post_alloc_hook()` no longer inlined "
      "into `prep_new_page()`. Next step (Documentation/allocprof/hot-paths.md): the hooks' on path in a cold "
      "block that reloads what it needs, so that no value must survive the fast path's calls "
      "for it; compare with gcc.")
    w("- On, slab loops: the allocation fast path hands its slab to the hook (no "
      "`virt_to_slab()`, no kfence test), the object's index is one multiplication and a "
      "shift, the kfence test of `kfree()` is a branch of its own, and the Rust entry points "
      "take the reference without a NULL test. What is left per side (Documentation/allocprof/hot-paths.md, "
      "third round): `slab_address()` 5 (vmemmap and direct-map bases are loads under "
      "KASLR), the cache-flags test 3 or 4, the vector's load and mask 3, current's tag 2, "
      "the call into Rust with its return thunk 4; on the free side also the kfence test of "
      "`obj_to_index()` 5. Next step for the +30% target: a free path that tests kfence once "
      "for the tagging hook and `slab_free_hook()`, and the cache-flags test of the free hook "
      "left to debug builds (an object of such a cache was never charged, so its reference "
      "is empty).")
    w("- On, pages: the page_ext lookup is inline (page_ext_get_owned(), SPARSEMEM) and the "
      "store mode is a static key tested in C, so each hook makes one call into Rust "
      "(`alloc_tag_add`/`alloc_tag_sub`, or the compressed entries); upstream makes "
      "`page_ext_get()`/`page_ext_put()` and, with PREEMPT_RCU, the RCU lock calls. Orders "
      "1-3 (non-compound blocks freed with `__free_pages()`) drop the caller's reference with "
      "`page_ref_freeze(page, 1)` first: the block is then freed whole with the one lookup of "
      "its free hook, and only a shared block has its tag read before the drop.")


def main():
    out, repo = sys.argv[1], sys.argv[2]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    commit = sh("git", "-C", repo, "rev-parse", "--short", "HEAD")
    w = print
    w("# make bench results\n")
    w(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; commit {commit}")
    w(f"- host: {os.cpu_count()} cores, {cpu}, {platform.system()} {platform.release()}")
    try:
        # A partial re-run (BENCH_ONLY) says here which rows are newer.
        w("- run note: " + open(os.path.join(out, "RUN-NOTE")).read().strip())
    except OSError:
        pass
    w("- kernel: Linux 6.12.118 (Debian linux-source-6.12), LLVM=-19, two configs: the "
      "**production config** (tools/testing/allocprof/kernel-prod.config on the test config: Debian 6.12 "
      "amd64's hot-path options: full SLUB with per-CPU partials, jump labels, -O2, "
      "PREEMPT_DYNAMIC, MEMCG, SLAB_FREELIST_HARDENED/RANDOM, SLAB_BUCKETS, "
      "INIT_ON_ALLOC_DEFAULT_ON, HARDENED_USERCOPY, KFENCE built in and not sampling, "
      "stack protector, CPU mitigations), the headline; and the test config (tinyconfig + "
      "tools/testing/allocprof/kernel.config: SLUB_TINY, -Os, no jump labels), kept for continuity")
    w("- method: QEMU TCG `-icount shift=0,sleep=off` (the guest clock advances one ns per "
      "executed instruction, so every figure is **guest instructions**, deterministic, not "
      "cycles), `-smp 2 -m 1G`; tools/testing/allocprof/bench/module/alloc_tag_bench.ko on a kthread bound to CPU 0 "
      "times N allocate+free pairs with ktime_get_ns(), 3 rounds after a warm-up, median "
      "shown, spread = (max-min)/median. Same QEMU settings and the same module source "
      "(built against each kernel) for every configuration. KVM: not usable on this machine "
      "(no vmx/svm; nested software KVM hangs), so no wall-clock ratios.")
    w("- configurations: (a) profiling compiled out; (b) upstream C 6.12 on / off "
      "(`sysctl.vm.mem_profiling=0`) / `never`; (c) the Rust core on / off / never / "
      "flipped-off (booted on, switched off before the loops), page tags in page_ext; (d) the "
      "same kernel booted `1,compressed` / `0,compressed` / `1,compressed` and switched off "
      "(tag index in page->flags); (e) a compressed-only build (tools/testing/allocprof/kernel-conly.config: no PAGE_EXTENSION "
      "at all) on / off. Each config set has its own compiled-out build (a).\n")

    prod = load(out, "prod-")
    if prod:
        w("# Production config (headline)\n")
        med, _ = medians(prod)
        section(w, out, "prod-", prod)
        prod_targets(w, med, prod)
        issue33_targets(w, out, repo, med, prod)
        itrace(w, out, "prod-")
        write_cachesim(w, out, repo)
        write_macro(w, out, repo)
        write_cachesim_macro(w, out, repo)
        prod_notes(w)
        w("")
    w("# Test config (continuity)\n")
    data = load(out, "")
    section(w, out, "", data)
    notes(w)


def capture_cost(w, med, names):
    """Issue 21: what an armed site costs per kmalloc/kfree pair."""
    rows = [(n, med[(n, "kmalloc")], med[(n, "kmalloc_armed")]) for n in names
            if (n, "kmalloc") in med and (n, "kmalloc_armed") in med]
    if not rows:
        return
    w("\n## Context capture: an armed site (issue 21)\n")
    w("The kmalloc loop's sizes at a site armed for context capture (bench module loop "
      "`kmalloc_armed`: each allocation takes a stack trace and a record, each free releases "
      "it). With nothing armed the hooks call the core through static calls patched to the "
      "plain entry points; for the unarmed cost compare the loop rows with tools/testing/allocprof/bench/RESULTS.md "
      "of 41b6a91 (before capture) and of 9ab1a90 (before page capture).\n")
    w("| config | kmalloc | kmalloc_armed | armed cost per pair |")
    w("|---|---|---|---|")
    for n, plain, armed in rows:
        w(f"| {n} | {plain:.1f} | {armed:.1f} | {armed - plain:+.1f} |")


def flip_cost(w, med, names):
    """Issue 35: off after a switch from on, beside off from boot."""
    pairs = [(o, f) for o, f in (("rust-off", "rust-flipped-off"),
                                 ("rust-compressed-off", "rust-compressed-flipped-off"))
             if o in names and f in names]
    if not pairs:
        return
    w("\n## Off after a switch (issue 35)\n")
    w("Booted on, then `echo 0 > /proc/sys/vm/mem_profiling` before the loops (*flipped-off*), "
      "beside booted off. Frees keep uncharging what was charged while on: the free side's "
      "static key stays on once profiling has been on, so each free looks its reference up "
      "(and finds it empty for what was allocated while off). Booted off, every hook stays a "
      "patched no-op.\n")
    w("| loop | " + " | ".join(f"{o} | {f} | flip cost per pair" for o, f in pairs) + " |")
    w("|---" * (1 + 3 * len(pairs)) + "|")
    for l in LOOPS:
        cells = []
        for o, f in pairs:
            a, b = med.get((o, l)), med.get((f, l))
            cells += [f"{a:.1f}" if a else "", f"{b:.1f}" if b else "",
                      f"{b - a:+.1f} ({pct(b, a)})" if a and b else ""]
        if any(cells):
            w(f"| {l} | " + " | ".join(cells) + " |")


def node_cost(w, med, names, prefix=""):
    """Per-node attribution (issue 34): the NUMA kernel with it compiled out,
    built but off at boot, and on (alloc_tag_node=1), two QEMU nodes."""
    cols = [("numa-node-compiled-out", "compiled out"), ("numa-node-off", "off"),
            ("numa-node-on", "on")]
    if not all(n in names for n, _ in cols):
        return
    config = ("The production config (tools/testing/allocprof/kernel-prod.config: jump labels, so off is one "
              "patched no-op per hook)" if prefix else
              "The test config (SLUB_TINY, -Os, no jump labels: off is a load and a test per hook)")
    w("\n## Per-node attribution (issue 34)\n")
    w(f"{config} with NUMA (tools/testing/allocprof/kernel-numa.config), profiling on, booted on two QEMU "
      "nodes: per-node attribution compiled out (tools/testing/allocprof/kernel-nonode.config), built and off "
      "at boot, and on (`alloc_tag_node=1`). The loops run on CPU 0 of node 0: the usual ones "
      "ask for no node, so their memory is node 0's but where SLUB's per-CPU slab of a cache "
      "is node 1's (the production kmalloc loop's eight caches: Documentation/allocprof/numa.md); node-local "
      "memory pays the node path (preemption off around the charge, a node id compared) but "
      "no correction; the remote ones allocate on node 1 (`kmalloc_node()`, "
      "`alloc_pages_node()`), where `on` also looks the tag up and moves the charge (four "
      "atomic additions on the allocation, bytes and calls on both nodes, and four on the "
      "free).\n")
    w("| loop | " + " | ".join(t for _, t in cols) + " | off over compiled out | on over compiled out |")
    w("|---" * (len(cols) + 3) + "|")
    for l in ("kmalloc", "cache", "page", "order0", "order1", "order2", "order3", "kmalloc_batch",
              "kmalloc_remote", "page_remote"):
        v = [med.get((n, l)) for n, _ in cols]
        if None in v:
            continue
        w(f"| {l} | " + " | ".join(f"{x:.1f}" for x in v) +
          f" | {pct(v[1], v[0])} | {pct(v[2], v[0])} |")


def section(w, out, prefix, data):
    """Every table of one config set."""
    med, spread = medians(data)
    w("## Loops: instructions per allocate+free pair (median of 3 rounds)\n")
    names = [n for _, n in CONFIGS if n in data]
    w("| loop | " + " | ".join(names) + " | max spread |")
    w("|---" * (len(names) + 2) + "|")
    for l in LOOPS:
        row = [l]
        sp = 0.0
        for n in names:
            v = med.get((n, l))
            row.append("" if v is None else f"{v:.1f}")
            sp = max(sp, spread.get((n, l), 0.0))
        w("| " + " | ".join(row) + f" | {sp:.2f}% |")

    base = "compiled-out"
    w("\n## Overhead against compiled out (a)\n")
    w("| loop | " + " | ".join(n for n in names if n != base) + " |")
    w("|---" * len(names) + "|")
    for l in LOOPS:
        if (base, l) not in med:
            continue
        cells = [pct(med[(n, l)], med[(base, l)]) if (n, l) in med else "" for n in names if n != base]
        w(f"| {l} | " + " | ".join(cells) + " |")
    capture_cost(w, med, names)
    flip_cost(w, med, names)
    node_cost(w, med, names, prefix)

    w("\n## Rust core against upstream C, same mode\n")
    w("| loop | on | off | never |")
    w("|---|---|---|---|")
    for l in LOOPS:
        cells = []
        for mode in ("on", "off", "never"):
            r, u = med.get((f"rust-{mode}", l)), med.get((f"upstream-{mode}", l))
            cells.append(f"{r / u:.3f}x ({pct(r, u)})" if r and u else "")
        if any(cells):
            w(f"| {l} | " + " | ".join(cells) + " |")

    w("\n## Rust allocations: per-call-site tags against the helper line (issue 7)\n")
    w("tools/testing/allocprof/bench/module/alloc_tag_rust_bench.ko: `KBox::new()` of 64 bytes + drop (`rust_kbox`), "
      "`KVec::with_capacity(16)` + drop (`rust_kvec`). Upstream charges every Rust allocation "
      "to the static tag of one line in rust/helpers/slab.c; the Rust core looks up the tag "
      "of the Rust call site (rust_sites.rs). Goal: per-site tagging within +10% of the "
      "helper-line baseline (reported, never asserted).\n")
    w("| loop | compiled out (a) | helper line, upstream-on | per site, rust-on | ratio | within +10% |")
    w("|---|---|---|---|---|---|")
    for l in ("rust_kbox", "rust_kvec"):
        a, u, r = (med.get((n, l)) for n in ("compiled-out", "upstream-on", "rust-on"))
        if not (u and r):
            continue
        w(f"| {l} | {a:.1f} | {u:.1f} | {r:.1f} | {r / u:.3f}x ({pct(r, u)}) | "
          f"{'yes' if r / u <= 1.10 else 'no'} |" if a else
          f"| {l} |  | {u:.1f} | {r:.1f} | {r / u:.3f}x ({pct(r, u)}) | "
          f"{'yes' if r / u <= 1.10 else 'no'} |")

    w("\n## Compressed page tags against page_ext (ours, profiling on)\n")
    w("| loop | page_ext (c) | compressed (d) | compressed-only (e) | (d)/(c) | (e)/(c) |")
    w("|---|---|---|---|---|---|")
    for l in LOOPS:
        c, d, e = (med.get((n, l)) for n in ("rust-on", "rust-compressed-on", "conly-on"))
        if not c:
            continue
        cells = [f"{c:.1f}", f"{d:.1f}" if d else "", f"{e:.1f}" if e else "",
                 f"{d / c:.3f}x" if d else "", f"{e / c:.3f}x" if e else ""]
        w(f"| {l} | " + " | ".join(cells) + " |")

    if prefix:
        anchor_and_reads(w, out, prefix, data, med, names, base)
        return
    w("\n## Targets (overhead against compiled out; reported, never asserted)\n")
    w("| mode | loop | target | upstream | ours | met |")
    w("|---|---|---|---|---|---|")
    for (mode, l), t in TARGETS.items():
        b = med.get((base, l))
        u = med.get((f"upstream-{mode}", l))
        r = med.get((mode if mode.startswith("conly") else f"rust-{mode}", l))
        if not (b and r):
            continue
        ro = (r / b - 1) * 100
        up = pct(u, b) if u else "(none in 6.12)"
        w(f"| {mode} | {l} | <= +{t:.0f}% | {up} | {ro:+.1f}% | {'yes' if ro <= t else 'no'} |")

    anchor_and_reads(w, out, prefix, data, med, names, base)


def anchor_and_reads(w, out, prefix, data, med, names, base):
    """The anchor check (test config only), reads and memory."""
    if not prefix:
        anchor(w, med, base)
    reads(w, out, prefix, data, names, base)


def anchor(w, med, base):
    w("\n## Anchor check: upstream here against the figures measured before (FACTS 8)\n")
    w("| configuration | loop | anchor | here | deviation |")
    w("|---|---|---|---|---|")
    for (n, l), a in ANCHOR.items():
        v = med.get((n, l))
        if v:
            w(f"| {n} | {l} | {a:.1f} | {v:.1f} | {pct(v, a)} |")
    w("\nRatios against compiled out, anchor vs here:")
    for n in ("upstream-off", "upstream-on"):
        for l in ("kmalloc", "page"):
            a = ANCHOR[(n, l)] / ANCHOR[(base, l)]
            v = med.get((n, l)), med.get((base, l))
            if all(v):
                w(f"- {n} {l}: anchor {pct(a, 1)}, here {pct(v[0], v[1])}")



def reads(w, out, prefix, data, names, base):
    w("\n## /proc/allocinfo full read (median of 21 reads, 128 KiB read() calls)\n")
    w("| configuration | rows | bytes | median instructions | per row |")
    w("|---|---|---|---|---|")
    for n in names:
        r = data[n][1]
        if r:
            w(f"| {n} | {r[0]} | {r[1]} | {r[2]} | {r[2] / max(r[0], 1):.0f} |")
    ro, up = data.get("rust-on", [None, None])[1], data.get("upstream-on", [None, None])[1]
    if ro and up:
        w(f"\nRust core against upstream: {up[2] / ro[2]:.2f}x fewer instructions per full read "
          f"(target: at least 3x).")
    w("\n## ioctl reads (median of 21, ours only: upstream 6.12 has no ioctls)\n")
    w("`all`: every tag by ALLOCINFO_IOC_GET_NEXT from a fresh open (binary, no text); "
      "`batch`: every tag by ALLOCINFO_IOC_GET_BATCH, 256 records per call, from a fresh open; "
      "`counters`: the same with ALLOCINFO_BATCH_COUNTERS, records of a tag id and the counters "
      "without names, the walk of a reader that has the names of the content id (allocinfo "
      "watch between its named walks); "
      "`file:mm/slub.c`: GET_AT with a filename filter, then GET_NEXT to the end, the ioctl "
      "form of `grep mm/slub.c /proc/allocinfo`, which costs a full text read plus the grep.\n")
    w("| configuration | walk | tags | median instructions | against the full text read |")
    w("|---|---|---|---|---|")
    for n in names:
        ioc, r = data[n][5], data[n][1]
        for what, v in sorted(ioc.items()):
            against = f"{r[2] / v[1]:.1f}x fewer" if r and v[1] else ""
            w(f"| {n} | {what} | {v[0]} | {v[1]} | {against} |")
    for n in names:
        r = data[n][1]
        for what, walk in [("batch", "the batched binary walk with names"),
                           ("counters", "the batched walk of counter records")]:
            bt = data[n][5].get(what)
            if bt and r and bt[1]:
                ratio = r[2] / bt[1]
                w(f"\n{n}: {walk} costs {ratio:.1f}x fewer instructions than the full text "
                  f"read (target: at least 3x, {'met' if ratio >= 3 else 'missed'}).")
    up = data.get("upstream-on", [None, None])[1]
    ro = data.get("rust-on", [None] * 6)[5].get("file:mm/slub.c") if "rust-on" in data else None
    if up and ro:
        w(f"\nFiltered ioctl read (ours) against a full text read of upstream 6.12: "
          f"{up[2] / ro[1]:.1f}x fewer instructions.")

    w("\n## Memory\n")
    w("| configuration | page_ext bytes | slab ext bytes | tag section | percpu counters | text | data | bss |")
    w("|---|---|---|---|---|---|---|---|")
    sizes = {}
    for n in names:
        try:
            t, d, b = (int(x) for x in open(os.path.join(out, prefix + n + ".size")).read().split()[:3])
        except (OSError, ValueError):
            t = d = b = 0
        sizes[n] = (t, d, b)
        tags = {}
        try:
            for line in open(os.path.join(out, prefix + n + ".tags")):
                addr, _, sym = line.split()
                tags[sym] = int(addr, 16)
        except (OSError, ValueError):
            pass
        sec = tags.get("__stop_alloc_tags", 0) - tags.get("__start_alloc_tags", 0)
        cpus = data[n][4] or 0
        pcpu = sec // 40 * 16 * cpus
        _, _, slab_ext, page_ext, _, _ = data[n]
        w(f"| {n} | {page_ext if page_ext is not None else 0} | {slab_ext} | {sec} | {pcpu} | "
          f"{t} | {d} | {b} |")
    if base in sizes:
        w("\nvmlinux against compiled out:")
        for n in names:
            if n != base and n.endswith("-on"):
                dt = [sizes[n][i] - sizes[base][i] for i in range(3)]
                w(f"- {n}: text {dt[0]:+d}, data {dt[1]:+d}, bss {dt[2]:+d} bytes")


def notes(w):
    w("\n## Notes (test config; the figures in them are from the runs each describes)\n")
    w("- The test config has no CONFIG_JUMP_LABEL (tinyconfig), so `mem_alloc_profiling_enabled()` "
      "is an atomic read and a branch on every hook, not a patched NOP: that is most of the "
      "compiled-in-but-off overhead, for upstream and ours alike (same C shims). The +1% off "
      "target needs JUMP_LABEL; not changed here so that the upstream anchor stays comparable.")
    w("- The slab loops hold one live object per size so that no slab empties during a loop; "
      "without that, slab turnover that depends on the boot state added up to +230 instructions "
      "per pair in some boots (seen in the first runs of this bench) and swamped the hooks.")
    w("- Ours on: every hook is one call into Rust; 6.12 has no cross-language inlining, so "
      "each hook pays a call, `endbr64` and `ret` that upstream's inlined C does not.")
    w("- Profiled with `tools/testing/allocprof/bench/itrace.sh` (QEMU gdb stub, single-steps 30 pairs of one loop "
      "under icount and counts instructions per function). Changed after it (measured with "
      "itrace, instructions per pair, profiling on): (1) a tag's counters pointer was read "
      "twice and the call count added through a register: now one read and an immediate "
      "add (kmalloc 408 -> 401; upstream 396); (2) `__free_pages()` looked the page's tag "
      "up (a page_ext lookup) on every order-0 free, where it is never used: the __free_pages() patch "
      "skips it (page 763 -> 710; upstream 741); (3) compressed mode found a vmlinux tag's "
      "index by dividing its offset by 40 and shifted by boot-time amounts: every tag now "
      "keeps its index in its flags and the field is a build constant (page, module tag, "
      "compressed 698 -> 673); (4) the text read (itrace of allocinfo_show, ITRACE_CMD) zeroed a "
      "512-byte row buffer per row, pushed through out-of-line memcpy calls and copied the row "
      "again with seq_write: rows are now formatted straight into the seq_file buffer (full "
      "read 2,355,614 -> 878,018, from 1.28x to 3.4x fewer than upstream).")
    w("- Where ours is still slower than upstream (profiling on): the kmalloc/cache loops by "
      "about 1% and the order1..3 loops (non-compound pages freed with `__free_pages()`, three "
      "page hooks per pair) by 3 to 6%. itrace for order1: prep_new_page + __pgalloc_tag_add "
      "73 instructions against upstream's inlined 65, free_unref_page + __pgalloc_tag_sub 132 "
      "against 124, __free_pages + __pgalloc_tag_get 47 against 34: each hook pays the "
      "out-of-line call into Rust (call, endbr64, prologue, ret), about 8 instructions. "
      "Closing it needs the hot part inlined on the C side or cross-language LTO; not done.")
    w("- Targets not met and why: the +1% off targets need jump labels (above); in page_ext "
      "mode the two page_ext lookups per page pair alone cost 64 + 8 instructions (+13% of "
      "the page loop), so +15% on is out of reach there; compressed mode removes them "
      "(+23% here) but the remaining hook work and the off-path cost of this config "
      "(+4.8%) are above +8%. Ours beats upstream's compressed figure of FACTS 8 "
      "(+22.2% over sysctl 0 on 7.3.4) with +17.9% over our own sysctl 0.")
    w("- The compiled-out kmalloc loop varies by up to 2% between rounds (235.5 in round 1, "
      "240.3 after, this run): the held objects are freed and allocated again between rounds "
      "and may land on other slabs. The other configurations vary by under 0.1%.")
    w("\npercpu counters = tags x 16 bytes x possible CPUs; tag section = "
      "`__stop_alloc_tags - __start_alloc_tags` in vmlinux (40 bytes a tag).")


if __name__ == "__main__":
    main()
