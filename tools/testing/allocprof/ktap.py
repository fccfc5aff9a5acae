# SPDX-License-Identifier: GPL-2.0
"""Judge one test boot's serial log: KTAP results of KUnit and the selftests,
and the kernel log's reports (panic, Oops, WARNING, BUG, KASAN, lockdep).

usage: python3 ktap.py LOG [--kunit] [--expect t1,t2,...] [--name NAME] [--fuzz]
                        [--store STORE]

--store (tools/testing/allocprof/matrix): the page tag store the boot must get.  The
page_store selftest learns the store from the kernel and prints "page tag
store: NAME"; the judge compares it with STORE, and fails a boot whose
page_store names a store while its row gives none.

--fuzz (a make fuzz boot, tools/testing/allocprof/fuzz.sh): also fails on the reports of
FUZZ_REPORTS, and does not read the driver's operation lines as reports.

Prints one line per failed check, naming it, and a summary line
"NAME: P passed, F failed, S skipped".  Exit status 1 if anything failed.
"""

import argparse
import re
import sys

TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
VERSION = re.compile(r"^(\s*)(?:KTAP version \d+|TAP version \d+)\s*$")
PLAN = re.compile(r"^(\s*)1\.\.(\d+)\s*$")
RESULT = re.compile(r"^(\s*)(not ok|ok) (\d+)(?: -)? ?([^#]*?)\s*(?:#\s*(.*))?$")
MARK = re.compile(r"^ALLOCPROF: (.*)$")
STORE = re.compile(r"page tag store: (\w+)")

# Kernel reports that fail a boot wherever they appear, most specific first.
REPORTS = [
    (re.compile(r"KASAN|KFENCE: "), "KASAN/KFENCE report"),
    # Lockdep's reports, not every line naming it ("RCU lockdep checking is
    # enabled." at boot, lockdep functions in a backtrace).
    (re.compile(r"possible circular locking|possible recursive locking|"
                r"inconsistent lock state|suspicious RCU usage|"
                r"bad unlock balance|held lock freed|lock held when returning|"
                r"DEBUG_LOCKS_WARN_ON|lockdep (?:is )?turned off|"
                r"INFO: lockdep is"), "lockdep report"),
    (re.compile(r"UBSAN:"), "UBSAN report"),
    (re.compile(r"Kernel panic"), "kernel panic"),
    (re.compile(r"\bOops\b|general protection fault"), "Oops"),
    (re.compile(r"^WARNING:|\bWARNING: "), "WARNING"),
    (re.compile(r"\bBUG: |\bBUG at\b|kernel BUG"), "BUG"),
    (re.compile(r"soft lockup|hard LOCKUP|hung_task|blocked for more than"),
     "lockup"),
]

# Reports that only a make fuzz boot fails on: the test boots provoke them
# on purpose (a malformed boot parameter) or do not run kmemleak.
FUZZ_REPORTS = [
    (re.compile(r"Failed to set sysctl"), "sysctl report"),
    # Leaks themselves the driver judges (alloc_tag_test_leak's are expected).
    (re.compile(r"kmemleak: .*detector disabled"), "kmemleak"),
    (re.compile(r"invoked oom-killer|Out of memory"), "OOM"),
]
# Warnings that fault injection provokes in upstream 6.12 outside the
# profiler (make fuzz's failslab): alloc_vmap_area() WARNs when va_clip()
# cannot get a vmap_area with GFP_NOWAIT (its per-CPU preload failed too),
# and so does pcpu_get_vm_areas() (a new percpu chunk) at 6.12.118's line
# 4833; its check four lines above (no free area enclosing the address) is
# no allocation failure and stays a report.
FUZZ_EXPECTED_WARNINGS = [
    re.compile(r"at mm/vmalloc\.c:\d+ alloc_vmap_area\+"),
    re.compile(r"at mm/vmalloc\.c:4833 pcpu_get_vm_areas\+"),
]
# A line of the fuzz driver's operation log: "fuzz: w<worker> #<seq> ...".
FUZZ_OP = re.compile(r"^fuzz: w-?\d+ #\d+ ")
FUZZ_WORKER_OP = re.compile(r"^fuzz: (w-?\d+) #\d+ (.*)$")

# A race of upstream 6.12 between module unload and debugfs open, outside
# the profiler.  delete_module() takes the module's last reference
# (try_release_module_ref() leaves refcnt at 0) before it marks the module
# GOING (try_stop_module()); an open of one of the module's debugfs files
# in between finds try_module_get() failing on a module still LIVE, and
# full_proxy_open() WARNs "did not clean up at exit", a case its GOING test
# (upstream's fix for the same false report, 2020) does not cover.  Only
# an unload that went through can open the window (refcnt reaches 0 only
# then), so the judge lets this warning pass only when the log shows one:
# some worker's last operation before the report is "module: unload M" and
# its next after the report is "module: unload M: 0", M among the modules
# the report lists.  Anything else (no unload in flight, one that failed,
# a module no longer loaded) stays a failure: a module that really left a
# file behind.
DEBUGFS_OWNER = re.compile(r"debugfs file owner did not clean up at exit: ")
LINKED = re.compile(r"Modules linked in: (.*)$")


def unload_in_flight(lines, start, end):
    """True if a module the report lists was being unloaded, successfully,
    by one fuzz worker across lines start..end (the WARNING's block)."""
    listed = set()
    for line in lines[start:min(len(lines), end + 40)]:
        m = LINKED.search(line)
        if m:
            listed = {re.sub(r"\(.*", "", w) for w in m.group(1).split()
                      if not w.startswith("[")}
            break
    last = {}  # worker -> its last operation before the report
    for line in lines[:start]:
        m = FUZZ_WORKER_OP.match(line)
        if m:
            last[m.group(1)] = m.group(2)
    nxt = {}  # worker -> its first operation after the report
    for line in lines[end + 1:]:
        m = FUZZ_WORKER_OP.match(line)
        if m and m.group(1) not in nxt:
            nxt[m.group(1)] = m.group(2)
    for w, op in last.items():
        m = re.fullmatch(r"module: unload (\S+)", op)
        if m and m.group(1) in listed and nxt.get(w) == f"module: unload {m.group(1)}: 0":
            return True
    return False

# Warnings the suite provokes on purpose: upstream 6.12 WARNs once per live
# tag when a module with live allocations unloads (module_unload checks the
# report itself; show_mem_during_unload unloads alloc_tag_test_hold with its
# allocations handed over).  Each entry: a regex over the lines of one "cut
# here" block.
#
# On kernels with jump labels (rust-distro) the fault_inject selftest's
# failed_module_loads_leave_nothing makes every allocation of a module load
# fail in turn, jump_label_add_module()'s among them: upstream 6.12 WARNs
# "Failed to allocate memory" there, and once more (WARN_ON(!jlm) in
# jump_label_del_module()) while it unwinds that same load.  The second is
# expected only right after the first (JUMP_LABEL_UNWIND).
EXPECTED_WARNINGS = [
    re.compile(r"alloc_tag_test_leak .*allocated at module unload"),
    re.compile(r"alloc_tag_test_hold .*allocated at module unload"),
    re.compile(r"Failed to allocate memory: jump_label may not work properly"),
]
JUMP_LABEL_ADD_FAILED = EXPECTED_WARNINGS[-1]
JUMP_LABEL_UNWIND = re.compile(r"at kernel/jump_label\.c:\d+ jump_label_del_module\+")


def clean(line):
    line = line.rstrip("\r\n").replace("\r", "")
    return TIMESTAMP.sub("", line)


class Doc:
    """One KTAP document (or subtest list) at one indentation."""

    def __init__(self, indent, where):
        self.indent = indent
        self.where = where
        self.plan = None
        self.results = []


class Judge:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        self.failures = []

    def fail(self, what):
        self.failed += 1
        self.failures.append(what)

    def ktap(self, lines, where):
        """Count the results of the KTAP documents in lines."""
        stack = []  # open docs, innermost last
        seen_any = False
        diag = []  # comment lines since the last result, for failure messages

        def close(doc):
            if doc.plan is None:
                self.fail(f"{doc.where}: KTAP document without a plan")
            elif doc.plan != len(doc.results):
                self.fail(f"{doc.where}: plan 1..{doc.plan} but "
                          f"{len(doc.results)} results")

        for line in lines:
            m = VERSION.match(line)
            if m:
                indent = len(m.group(1))
                while stack and stack[-1].indent >= indent:
                    close(stack.pop())
                stack.append(Doc(indent, where))
                seen_any = True
                continue
            m = PLAN.match(line)
            if m and stack:
                indent = len(m.group(1))
                if stack[-1].indent != indent:
                    # subtest list without its own version line
                    while stack and stack[-1].indent > indent:
                        close(stack.pop())
                    if not stack or stack[-1].indent < indent:
                        stack.append(Doc(indent, where))
                stack[-1].plan = int(m.group(2))
                continue
            if line.lstrip().startswith("#"):
                text = line.strip().lstrip("#").strip()
                if text and not text.startswith(("RUN", "OK", "Subtest:", "Starting")):
                    diag.append(text)
                continue
            m = RESULT.match(line)
            if m and stack:
                indent = len(m.group(1))
                ok = m.group(2) == "ok"
                name = m.group(4).strip()
                directive = (m.group(5) or "").strip()
                children = []
                while stack and stack[-1].indent > indent:
                    children.append(stack.pop())
                    close(children[-1])
                is_parent = bool(children)
                child_failed = any(not r for c in children for r in c.results)
                if not stack or stack[-1].indent != indent:
                    continue
                stack[-1].results.append(ok)
                label = f"{where}: {name or '#' + m.group(3)}"
                why = "; ".join(d for d in diag if "FAIL" not in d)[-600:]
                diag = []
                if why:
                    why = f" ({why})"
                if directive.upper().startswith("SKIP"):
                    if not is_parent:
                        self.skipped += 1
                elif is_parent:
                    if not ok and not child_failed:
                        self.fail(f"{label}: not ok{why}")
                elif ok:
                    self.passed += 1
                else:
                    self.fail(f"{label}: not ok{why}")
        while stack:
            close(stack.pop())
        return seen_any


def judge_store(j, sections, store):
    """The page_store selftest's store against the one the boot must get."""
    said = [m.group(1) for line in sections.get("page_store", [])
            for m in [STORE.search(line)] if m]
    if store is None:
        if said:
            j.fail(f"page_store: the store is {said[0]}, and the boot's row gives no --store")
        return
    if "page_store" not in sections:
        j.fail(f"page_store: did not run, and the boot must get store {store}")
    elif not said:
        j.fail(f"page_store: named no page tag store (the boot must get {store})")
    elif said[0] != store:
        j.fail(f"page_store: page tag store {said[0]}, the boot must get {store}")
    else:
        j.passed += 1


def judge(path, name, kunit, expect, fuzz=False, store=None):
    j = Judge(name)
    try:
        with open(path, errors="replace") as f:
            raw = f.readlines()
    except OSError as e:
        j.fail(f"cannot read log: {e}")
        return j
    lines = [clean(l) for l in raw]

    # Split the log: kernel boot (KUnit), selftest sections, dmesg dump.
    boot, sections, dump = [], {}, []
    current, in_dump, done, timeout = None, False, False, False
    exits = {}
    for line in lines:
        m = MARK.match(line)
        if m:
            word = m.group(1).split()
            if word[:1] == ["selftest"] and len(word) == 3 and word[2] == "begin":
                current = word[1]
                sections[current] = []
            elif word[:1] == ["selftest"] and len(word) == 4 and word[2] == "exit":
                exits[word[1]] = int(word[3])
                current = None
            elif word == ["dmesg", "begin"]:
                in_dump = True
            elif word == ["dmesg", "end"]:
                in_dump = False
            elif word == ["done"]:
                done = True
            elif word[:1] == ["insmod"] or word[:1] == ["rmmod"]:
                j.fail(m.group(1))
            continue
        if line.startswith("ALLOCPROF-HOST: timeout"):
            timeout = True
        if in_dump:
            dump.append(line)
        elif current is not None:
            sections[current].append(line)
        else:
            boot.append(line)

    if timeout:
        j.fail("timeout: the VM did not power off in time")
    elif not done:
        j.fail("the VM stopped before the test run finished (crash or panic?)")

    if kunit and not j.ktap(boot, "kunit"):
        j.fail("kunit: no KTAP output from KUnit at boot")

    for t in expect:
        if t not in sections:
            j.fail(f"selftest {t}: did not run")
            continue
        if not j.ktap(sections[t], t):
            j.fail(f"selftest {t}: no KTAP output")
        rc = exits.get(t)
        if rc is None:
            j.fail(f"selftest {t}: did not finish")
        elif rc == 127:
            j.fail(f"selftest {t}: not found in the initramfs")
        elif rc not in (0, 4):  # 4: KSFT_SKIP, every test skipped
            if not any(f.startswith(f"{t}:") for f in j.failures):
                j.fail(f"selftest {t}: exit status {rc}")

    judge_store(j, sections, store)

    # Kernel reports anywhere in the log, once each.
    seen = set()
    reports = REPORTS + FUZZ_REPORTS if fuzz else REPORTS
    for i, line in enumerate(lines):
        if fuzz and FUZZ_OP.search(line):
            continue
        for rx, what in reports:
            if not rx.search(line):
                continue
            if what == "WARNING":
                # From its "cut here" line (other CPUs' lines may come in
                # between, e.g. a show_mem() report), at most 60 back.
                start = max(0, i - 4)
                for k in range(i, max(-1, i - 60), -1):
                    if "cut here" in lines[k]:
                        start = k
                        break
                block = "\n".join(lines[start:i + 1])
                expected = EXPECTED_WARNINGS + (FUZZ_EXPECTED_WARNINGS if fuzz else [])
                if any(e.search(block) for e in expected):
                    break
                if fuzz and DEBUGFS_OWNER.search(block) and unload_in_flight(lines, start, i):
                    break
                if JUMP_LABEL_UNWIND.search(block) and any(
                        JUMP_LABEL_ADD_FAILED.search(l) for l in lines[max(0, start - 80):start]):
                    break
            key = (what, line.strip())
            if key not in seen:
                seen.add(key)
                j.fail(f"kernel: {what}: {line.strip()}")
            break
    return j


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--name", default="boot")
    ap.add_argument("--kunit", action="store_true")
    ap.add_argument("--expect", default="")
    ap.add_argument("--fuzz", action="store_true")
    ap.add_argument("--store")
    a = ap.parse_args()
    expect = [t for t in a.expect.split(",") if t]
    j = judge(a.log, a.name, a.kunit, expect, a.fuzz, a.store)
    for f in j.failures:
        print(f"FAIL {a.name}: {f}")
    print(f"{a.name}: {j.passed} passed, {j.failed} failed, {j.skipped} skipped")
    return 1 if j.failed else 0


if __name__ == "__main__":
    sys.exit(main())
