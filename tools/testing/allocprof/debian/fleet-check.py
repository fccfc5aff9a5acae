#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make test-fleet: Prometheus's answers against each machine's own reading.

Each machine left on its share the one read of /proc/allocinfo (allocinfo.txt)
that it exported as the textfile from the freeze on, and that file's mtime
(frozen).  At T_EVAL every machine's latest scrape is that export (checked
here through node_textfile_mtime_seconds), so PromQL over Prometheus's data
and sums over the machines' own files must agree exactly.  The growth query
is evaluated at T_FREEZE, the end of the run, over the samples of the run
(the last RUN_S seconds), and the shipped 15-minute rule and alert beside it.

Prints KTAP result lines ("ok N ..."/"not ok N ...") and "# " notes, among
them the table of answers beside the machines' own totals.
"""
import argparse
import json
import math
import sys
import urllib.parse
import urllib.request

N = 0
FAILED = 0


def result(good, desc):
    global N, FAILED
    N += 1
    if not good:
        FAILED += 1
    print(f"{'ok' if good else 'not ok'} {N} {desc}")


def note(text):
    for line in str(text).splitlines():
        print(f"# {line}")


def query(prom, expr, t):
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{t:.3f}"})
    with urllib.request.urlopen(url, timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success" or body["data"]["resultType"] != "vector":
        raise RuntimeError(f"{expr}: {body}")
    return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]


def read_allocinfo(path):
    """Rows of a /proc/allocinfo copy: (bytes, calls, file, function, module)."""
    rows = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = f.read().splitlines()
    if not lines or not lines[0].startswith("allocinfo - version: "):
        raise RuntimeError(f"{path}: not a /proc/allocinfo copy")
    for ln in lines[1:]:
        if ln.startswith("#") or not ln.strip():
            continue
        t = ln.split()
        fileline = t[2]
        module = ""
        func = None
        for tok in t[3:]:
            if tok.startswith("[") and tok.endswith("]"):
                module = tok[1:-1]
            elif tok.startswith("func:"):
                func = tok[5:]
        if func is None:
            raise RuntimeError(f"{path}: no func: in {ln!r}")
        rows.append((int(t[0]), int(t[1]), fileline.rsplit(":", 1)[0], func, module))
    return rows


def read_kv(path):
    kv = {}
    with open(path, encoding="utf-8") as f:
        for ln in f:
            k, _, v = ln.strip().partition("=")
            kv[k] = v
    return kv


def site(m):
    return (m.get("function", ""), m.get("file", ""), m.get("module", ""))


def fmt_site(s):
    f, fl, mod = s
    return f"{f} {fl}" + (f" [{mod}]" if mod else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prom", required=True)
    ap.add_argument("--t-eval", type=float, required=True)
    ap.add_argument("--t-freeze", type=float, required=True)
    ap.add_argument("--vm", action="append", required=True, help="NAME:ROLE:SHAREDIR")
    ap.add_argument("--leak-size", type=int, required=True)
    ap.add_argument("--leak-period-ms", type=int, required=True)
    ap.add_argument("--leak-function", default="fleet_leak_alloc")
    ap.add_argument("--leak-module", default="allocprof_fleet_leak")
    ap.add_argument("--threshold", type=float, required=True, help="growth threshold, B/s")
    ap.add_argument("--run-s", type=int, required=True, help="the run's length: the growth window, s")
    ap.add_argument("--rate-tolerance", type=float, default=0.10)
    ap.add_argument("--top", type=int, default=10)
    a = ap.parse_args()
    te, tf = a.t_eval, a.t_freeze

    vms = []
    for spec in a.vm:
        name, role, share = spec.split(":", 2)
        vms.append((name, role, read_allocinfo(f"{share}/allocinfo.txt"), read_kv(f"{share}/frozen")))
    leakers = [v[0] for v in vms if v[1] == "leak"]

    # The sample: at T_EVAL Prometheus's latest scrape of each machine is
    # the frozen export.
    mt = {m["instance"]: v for m, v in query(a.prom, 'node_textfile_mtime_seconds{file=~"(.*/)?allocinfo[.]prom"}', te)}
    for name, _, _, kv in vms:
        result(mt.get(name) == float(kv["mtime"]),
               f"{name}: Prometheus's sample at T_EVAL is the frozen export (textfile mtime {mt.get(name)} = {kv['mtime']})")

    # (b) Per machine: the recording rule, the plain sum and the machine's own file.
    rec = {m["instance"]: v for m, v in query(a.prom, "instance:allocinfo_bytes:sum", te)}
    raw = {m["instance"]: v for m, v in query(a.prom, "sum by (instance) (allocinfo_bytes)", te)}
    recc = {m["instance"]: v for m, v in query(a.prom, "instance:allocinfo_calls:sum", te)}
    note("per machine:  PromQL instance:allocinfo_bytes:sum | sum by (instance) (allocinfo_bytes) | "
         "own /proc/allocinfo sum of bytes | PromQL instance:allocinfo_calls:sum | own sum of calls | rows")
    for name, _, rows, _ in vms:
        own_b = sum(r[0] for r in rows)
        own_c = sum(r[1] for r in rows)
        note(f"  {name}: {rec.get(name, math.nan):.0f} | {raw.get(name, math.nan):.0f} | {own_b} | "
             f"{recc.get(name, math.nan):.0f} | {own_c} | {len(rows)}")
        result(rec.get(name) == own_b and raw.get(name) == own_b,
               f"{name}: total bytes, PromQL = its own /proc/allocinfo ({own_b})")
        result(recc.get(name) == own_c, f"{name}: total calls, PromQL = its own /proc/allocinfo ({own_c})")
    result(sorted(rec) == sorted(v[0] for v in vms), f"instance:allocinfo_bytes:sum has the machines {sorted(rec)}")

    # (a) The fleet's top sites: topk over the per-site recording rule
    # against the union of the machines' files.
    union = {}
    for _, _, rows, _ in vms:
        for b, _, fl, fn, mod in rows:
            union[(fn, fl, mod)] = union.get((fn, fl, mod), 0) + b
    own_top = sorted(union.items(), key=lambda kv: -kv[1])[: a.top]
    kth = own_top[-1][1]
    got = sorted(((site(m), v) for m, v in query(a.prom, f"topk({a.top}, site:allocinfo_bytes:sum)", te)),
                 key=lambda kv: -kv[1])
    note(f"fleet top {a.top}: PromQL topk({a.top}, site:allocinfo_bytes:sum) | the machines' files summed")
    for i in range(max(len(got), len(own_top))):
        g = f"{got[i][1]:.0f} {fmt_site(got[i][0])}" if i < len(got) else "-"
        o = f"{own_top[i][1]} {fmt_site(own_top[i][0])}" if i < len(own_top) else "-"
        note(f"  {i + 1:2}. {g} | {o}")
    # Equal values may tie at the k-th place: any of them may be chosen.
    good = (len(got) == len(own_top) and [v for _, v in got] == [float(v) for _, v in own_top]
            and all(union.get(s) == v and v >= kth for s, v in got))
    result(good, f"fleet top {a.top} sites by bytes: PromQL = the union of the machines' own files")
    nsites = query(a.prom, "count(site:allocinfo_bytes:sum)", te)
    result(nsites and nsites[0][1] == len(union),
           f"the fleet's distinct sites: PromQL {nsites[0][1] if nsites else None:.0f} = the files' {len(union)}")

    # (c) Growth over the run, at the freeze: the shipped rule's expression
    # over the run's window, and the shipped 15-minute rule beside it.
    growth = f"sum by (instance, function, file, module) (deriv(allocinfo_bytes[{a.run_s}s]))"
    for expr in (growth, "instance_site:allocinfo_bytes:deriv15m"):
        gr = sorted(query(a.prom, expr, tf), key=lambda mv: -mv[1])
        note(f"growth ({expr} at T_FREEZE), the 3 fastest sites per machine, B/s:")
        for name, _, _, _ in vms:
            mine = [(site(m), v) for m, v in gr if m.get("instance") == name][:3]
            note(f"  {name}: " + "; ".join(f"{v:.0f} {fmt_site(s)}" for s, v in mine))
    above = [(m["instance"], site(m), v) for m, v in query(a.prom, f"{growth} > {a.threshold}", tf)]
    note(f"above {a.threshold:.0f} B/s over the run: " +
         ("; ".join(f"{i} {fmt_site(s)} {v:.0f}" for i, s, v in above) or "none"))
    want = [(n, a.leak_function, a.leak_module) for n in leakers]
    result(sorted((i, s[0], s[2]) for i, s, _ in above) == sorted(want),
           f"growth above {a.threshold:.0f} B/s names {a.leak_function} [{a.leak_module}] on {', '.join(leakers)} and nothing else")
    nominal = a.leak_size * 1000.0 / a.leak_period_ms
    for i, s, v in above:
        if s[0] == a.leak_function:
            result(abs(v - nominal) <= a.rate_tolerance * nominal,
                   f"{i}: the leak's growth by PromQL {v:.0f} B/s = its known rate {nominal:.0f} B/s "
                   f"within {a.rate_tolerance:.0%}")
    # The machine's own view of the leak: the row is leaked * size, its
    # count between the module's count just before and just after the
    # read, and leaked follows the module's clock.
    for name, role, rows, kv in vms:
        if role != "leak":
            continue
        row = [r for r in rows if r[3] == a.leak_function and r[4] == a.leak_module]
        leaked, after = int(kv["leaked_before"]), int(kv["leaked_after"])
        el = float(kv["uptime"]) - float(kv["leak_loaded_uptime"])
        note(f"{name}: own row {row}; module leaked {leaked} in {el:.1f} s, {after} after the read "
             f"({leaked * a.leak_size / el:.0f} B/s; known {nominal:.0f} B/s)")
        result(len(row) == 1 and row[0][0] == row[0][1] * a.leak_size and leaked <= row[0][1] <= after,
               f"{name}: its own row holds calls x {a.leak_size} B, calls = the module's count "
               f"({leaked}..{after})")
        result(abs(leaked * a.leak_size / el - nominal) <= 0.02 * nominal + 2 * a.leak_size / el,
               f"{name}: the module leaked at its known rate by the machine's clock (2%)")

    # The shipped alert on the leaking site.
    al = query(a.prom, 'ALERTS{alertname="AllocinfoSiteGrowing"}', tf)
    note("ALERTS at T_FREEZE: " + ("; ".join(f"{m['instance']} {m.get('function')} {m['alertstate']}"
                                            for m, _ in al) or "none"))
    result(all(any(m["instance"] == n and m.get("function") == a.leak_function and
                   m["alertstate"] in ("pending", "firing") for m, _ in al) for n in leakers),
           f"AllocinfoSiteGrowing is pending or firing for {a.leak_function} on {', '.join(leakers)}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, RuntimeError, KeyError, ValueError, IndexError) as e:
        result(False, f"fleet-check: {type(e).__name__}: {e}")
        sys.exit(1)
