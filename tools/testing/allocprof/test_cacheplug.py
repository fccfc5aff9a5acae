# SPDX-License-Identifier: GPL-2.0
"""Host tests of make bench's cache-model and macro pieces on synthetic logs:
the calibration judge (tools/testing/allocprof/bench/cacheplug/check.py), the pairing of the
module's windows with the plugin's and a loop's median run (tools/testing/allocprof/bench/report.py's
cachesim()), the per-function sums of the plugin's top=N lines
(tools/testing/allocprof/bench/cacheplug/where.py), the
macro table (tools/testing/allocprof/bench/report.py's write_macro()), the misses over the macro
runs (cachesim_macro(), write_cachesim_macro()) and issue 33's targets
table (issue33_targets()).

Prints "N passed, N failed" last and exits non-zero on any failure.
"""

import io
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench")
sys.path.insert(0, BENCH)
import report  # noqa: E402

CALIB = """\
calib: id=1 lines=256 passes=64 sum=16384
calib: id=2 lines=16384 passes=8 sum=262144
calib: id=3 lines=524288 passes=2 sum=3145728
"""
PLUGIN_OK = """\
cacheplug: l1i=32768/8 l1d=49152/12 l2=2097152/16 (bytes/ways), 1 vCPUs
cacheplug: id=1 insns=90379 l1i_miss=449 l1d_access=20563 l1d_miss=80 l2_access=529 l2_miss=1
cacheplug: id=2 insns=660913 l1i_miss=9 l1d_access=134129 l1d_miss=131402 l2_access=131411 l2_miss=3
cacheplug: id=3 insns=5295208 l1i_miss=29 l1d_access=1077390 l1d_miss=1051642 l2_access=1051671 l2_miss=1050708
"""


class CacheplugTest(unittest.TestCase):
    def check(self, plugin, console=CALIB):
        with tempfile.TemporaryDirectory() as d:
            c, p = os.path.join(d, "c"), os.path.join(d, "p")
            open(c, "w").write(console)
            open(p, "w").write(plugin)
            r = subprocess.run([sys.executable, os.path.join(BENCH, "cacheplug", "check.py"), c, p],
                               capture_output=True, text=True)
            return r.returncode, r.stdout + r.stderr

    def test_calibration_passes(self):
        rc, out = self.check(PLUGIN_OK)
        self.assertEqual(rc, 0, out)
        self.assertIn("1048576 loads, 1051642 L1D and 1050708 L2 misses", out)

    def test_calibration_small_l2_fails(self):
        # What the model gives with a 64 KiB L2: window 2 misses L2 too.
        bad = PLUGIN_OK.replace("l2_access=131411 l2_miss=3", "l2_access=131411 l2_miss=131554")
        rc, out = self.check(bad)
        self.assertEqual(rc, 1)
        self.assertIn("window 2: 131554 L2 misses for 131072 loads", out)

    def test_calibration_window_missing_fails(self):
        rc, out = self.check("\n".join(PLUGIN_OK.splitlines()[:3]))
        self.assertEqual(rc, 1)
        self.assertIn("window 3 missing", out)

    def test_windows_pair_with_loops_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            # The console echoes each kernel line, dmesg prints it again.
            console = ("[ 3.8] alloc_tag_bench: cachesim window=0 loop=kmalloc pairs=200\n"
                       "[ 3.9] alloc_tag_bench: cachesim window=1 loop=page_batch pairs=40\n")
            open(os.path.join(d, "cachesim-x.log"), "w").write(console + console)
            open(os.path.join(d, "cachesim-x.plugin"), "w").write(
                "cacheplug: id=0 insns=1000 l1i_miss=2 l1d_access=9 l1d_miss=4 l2_access=6 l2_miss=1\n"
                "cacheplug: id=0 insns=4000 l1i_miss=8 l1d_access=9 l1d_miss=40 l2_access=48 l2_miss=20\n")
            got = report.cachesim(d, "x")
            self.assertEqual(got, {"kmalloc": (200, 1000, 2, 4, 1),
                                   "page_batch": (40, 4000, 8, 40, 20)})
            # A window without its loop line: nothing rather than a shifted table.
            open(os.path.join(d, "cachesim-x.log"), "w").write(console.splitlines()[0] + "\n")
            self.assertEqual(report.cachesim(d, "x"), {})

    def test_median_of_a_loops_runs(self):
        # cachesim=3: three runs of one loop; the one a grace period's scans landed in
        # (many L1I misses) and the quietest are left out, the middle one makes the row.
        # The plugin's per-address lines (top=N) neither count as windows nor shift them.
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "cachesim-x.log"), "w").write("".join(
                f"[ 3.{k}] alloc_tag_bench: cachesim window={k} loop=order3 pairs=100\n"
                for k in range(3)))
            open(os.path.join(d, "cachesim-x.plugin"), "w").write(
                "cacheplug: id=0 insns=5000 l1i_miss=900 l1d_access=9 l1d_miss=10 l2_access=9 l2_miss=0\n"
                "cacheplug-top: id=0 pc=0xffffffff81000010 l1i_miss=800 l1d_miss=0 l2_miss=0\n"
                "cacheplug: id=0 insns=5000 l1i_miss=30 l1d_access=9 l1d_miss=10 l2_access=9 l2_miss=0\n"
                "cacheplug: id=0 insns=5000 l1i_miss=20 l1d_access=9 l1d_miss=10 l2_access=9 l2_miss=0\n")
            self.assertEqual(report.cachesim(d, "x"), {"order3": (100, 5000, 30, 10, 0)})
        self.assertEqual(report.median_run([(1, 10, 0, 0, 0), (1, 30, 0, 0, 0)]), (1, 10, 0, 0, 0))

    def test_where_sums_per_function(self):
        # tools/testing/allocprof/bench/cacheplug/where.py: window 1's per-address lines summed per function of
        # the System.map; an address outside the kernel's text is "?".
        smap = ("ffffffff81000000 T _stext\n"
                "ffffffff81000100 T get_page_from_freelist\n"
                "ffffffff81000400 t rcu_gp_fqs_loop\n"
                "ffffffff81000500 D some_data\n"
                "ffffffff81000600 T _etext\n")
        plugin = (
            "cacheplug: id=0 insns=10 l1i_miss=1 l1d_access=1 l1d_miss=0 l2_access=1 l2_miss=0\n"
            "cacheplug: id=0 insns=99 l1i_miss=60 l1d_access=9 l1d_miss=8 l2_access=68 l2_miss=2\n"
            "cacheplug-top: id=0 pc=0xffffffff81000410 l1i_miss=40 l1d_miss=2 l2_miss=0\n"
            "cacheplug-top: id=0 pc=0xffffffff81000120 l1i_miss=10 l1d_miss=4 l2_miss=2\n"
            "cacheplug-top: id=0 pc=0xffffffff81000108 l1i_miss=6 l1d_miss=0 l2_miss=0\n"
            "cacheplug-top: id=0 pc=0xffffffffc0001000 l1i_miss=4 l1d_miss=2 l2_miss=0\n")
        with tempfile.TemporaryDirectory() as d:
            m, p = os.path.join(d, "map"), os.path.join(d, "p")
            open(m, "w").write(smap)
            open(p, "w").write(plugin)
            where = os.path.join(BENCH, "cacheplug", "where.py")
            r = subprocess.run([sys.executable, where, p, m, "1", "2"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = [l.split() for l in r.stdout.splitlines()[1:]]
            self.assertEqual(rows[0], ["rcu_gp_fqs_loop", "20.000", "1.000", "0.000"])
            self.assertEqual(rows[1], ["get_page_from_freelist", "8.000", "2.000", "1.000"])
            self.assertEqual(rows[2], ["?", "2.000", "1.000", "0.000"])
            self.assertEqual(rows[3][:4], ["(window)", "30.000", "4.000", "1.000"])
            self.assertIn("rows cover 70 of 70 misses", r.stdout)
            # A window the plugin closed without per-address lines: said, not an empty table.
            r = subprocess.run([sys.executable, where, p, m, "0"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("window 0 has no cacheplug-top lines", r.stderr)
            r = subprocess.run([sys.executable, where, p, m, "2"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("no window 2", r.stderr)

    def test_report_writes_the_table(self):
        # report.py end to end on one production log and two cachesim boots.
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "prod-compiled-out.log"), "w").write(
                "alloc_tag_bench: loop=kmalloc round=1 pairs=10 ns_per_pair=270.0\n")
            for n, insns in (("prod-upstream-on", 4000), ("prod-rust-on", 3000)):
                open(os.path.join(d, f"cachesim-{n}.log"), "w").write(
                    "alloc_tag_bench: cachesim window=0 loop=kmalloc pairs=10\n")
                open(os.path.join(d, f"cachesim-{n}.plugin"), "w").write(
                    f"cacheplug: id=0 insns={insns} l1i_miss=1 l1d_access=9 l1d_miss=2 "
                    "l2_access=3 l2_miss=1\n")
            r = subprocess.run([sys.executable, os.path.join(BENCH, "report.py"), d,
                                os.path.join(BENCH, "..", "..", "..", "..")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| kmalloc | prod-rust-on | 300.0 | 0.10 | 0.20 | 0.10 |", r.stdout)
            self.assertIn("- kmalloc: 0.40 against 0.40: met", r.stdout)

    def test_cycle_model(self):
        # 1000 instructions, 10 L1 misses of which 4 miss L2.
        self.assertEqual(report.cycles(1000, 10, 4),
                         1000 + 6 * report.L2_HIT_CYCLES + 4 * report.MEMORY_CYCLES)

    def macro_report(self, logs):
        with tempfile.TemporaryDirectory() as d:
            for n, text in logs.items():
                open(os.path.join(d, f"macro-{n}.log"), "w").write(text)
            lines = []
            report.write_macro(lines.append, d, os.path.join(BENCH, "..", "..", "..", ".."))
            return "\n".join(lines)

    @staticmethod
    def macro_line(what, med, lo, hi):
        return f"macro: what={what} runs=5 median_ns={med} min_ns={lo} max_ns={hi}\n"

    def test_macro_table_and_goal(self):
        out = self.macro_report({
            "prod-compiled-out": "console noise\n" + self.macro_line("hackbench", 2000000000, 1990000000,
                                                                     2010000000),
            "prod-rust-on": self.macro_line("hackbench", 2030000000, 2000000000, 2040000000)})
        self.assertIn("| prod-compiled-out | 2000.0 | +0.0% | 1.0% |", out)
        self.assertIn("| prod-rust-on | 2030.0 | +1.5% | 2.0% |", out)
        self.assertIn("within +1% of compiled out: +1.50%, missed", out)

    def test_macro_failed_run_gives_no_row(self):
        out = self.macro_report({
            "prod-compiled-out": self.macro_line("hackbench", 100, 100, 100),
            "prod-rust-on": "macro: what=hackbench failed: exit status 1\n"})
        self.assertIn("| prod-compiled-out |", out)
        self.assertNotIn("| prod-rust-on |", out)
        self.assertNotIn("Goal:", out)

    @staticmethod
    def window(insns, l1i, l1d, l2):
        return (f"cacheplug: id=1 insns={insns} l1i_miss={l1i} l1d_access=9 l1d_miss={l1d} "
                f"l2_access=9 l2_miss={l2}\n")

    def test_macro_windows_pair_with_runs_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "cachesim-macro-x.log"), "w").write(
                "noise\n" + self.macro_line("hackbench", 9, 9, 9).replace("runs=5", "runs=2") +
                self.macro_line("stress-ng-mmap", 9, 9, 9).replace("runs=5", "runs=1"))
            plugin = ("cacheplug: l1i=32768/8 ...\n" + self.window(10, 1, 2, 3) +
                      self.window(20, 4, 5, 6) + self.window(30, 7, 8, 9))
            open(os.path.join(d, "cachesim-macro-x.plugin"), "w").write(plugin)
            self.assertEqual(report.cachesim_macro(d, "x"),
                             {"hackbench": [(10, 1, 2, 3), (20, 4, 5, 6)],
                              "stress-ng-mmap": [(30, 7, 8, 9)]})
            # One window short (a run outside the model): nothing, not a shifted table.
            open(os.path.join(d, "cachesim-macro-x.plugin"), "w").write(
                "".join(plugin.splitlines(True)[:3]))
            self.assertEqual(report.cachesim_macro(d, "x"), {})

    def test_macro_misses_table_takes_the_median_run(self):
        with tempfile.TemporaryDirectory() as d:
            for n, runs in (("prod-compiled-out", [(1000000, 0, 0, 0)] * 3),
                            ("prod-upstream-on", [(3000000, 0, 0, 0)] * 3),
                            # est. cycles 2,000,000 + 1000 * 14, 5,000,000 and 1,000,000.
                            ("prod-rust-on", [(2000000, 600, 400, 0), (5000000, 0, 0, 0),
                                              (1000000, 0, 0, 0)])):
                open(os.path.join(d, f"cachesim-macro-{n}.log"), "w").write(
                    self.macro_line("hackbench", 9, 9, 9).replace("runs=5", "runs=3"))
                open(os.path.join(d, f"cachesim-macro-{n}.plugin"), "w").write(
                    "".join(self.window(*r) for r in runs))
            lines = []
            report.write_cachesim_macro(lines.append, d, os.path.join(BENCH, "..", "..", "..", ".."))
            out = "\n".join(lines)
            self.assertIn("| hackbench | prod-rust-on | 3 | 2.0 | 0.001 | 0.000 | 0.000 | 2.0 | 198.6% | +101.4% |",
                          out)
            self.assertIn("hackbench: estimated cycles of prod-rust-on against prod-upstream-on: "
                          "-32.9% (no more than upstream)", out)

    def test_issue33_targets(self):
        med = {("compiled-out", "kmalloc"): 100.0, ("rust-on", "kmalloc"): 125.0,
               ("upstream-on", "kmalloc"): 150.0, ("rust-off", "kmalloc"): 103.0,
               ("compiled-out", "order1"): 1000.0, ("rust-on", "order1"): 1070.0,
               ("upstream-on", "order1"): 1100.0}
        # rows, text read and ioctl walks as report.parse() gives them: 1000 tags.
        data = {"rust-on": ([], (1000, 99, 600000), 0, 0, 2, {"batch": (1000, 150000)})}
        with tempfile.TemporaryDirectory() as d:
            lines = []
            report.issue33_targets(lines.append, d, os.path.join(BENCH, "..", "..", "..", ".."), med, data)
        out = "\n".join(lines)
        self.assertIn("| 1 | kmalloc on against compiled out | <= +30% | +25.0% | met |", out)
        self.assertIn("| 1 | kmalloc on: our overhead / upstream-on's | <= 0.6x | 0.500x | met |", out)
        self.assertIn("| 2 | kmalloc off against compiled out | <= +2% | +3.0% | missed by 1.0 points |",
                      out)
        self.assertIn("| 3 | order1 on: our overhead / upstream-on's | <= 0.6x | 0.70x | missed by 0.10x |",
                      out)
        self.assertIn("| 4 | full binary walk with names (GET_BATCH) against the full text read | "
                      ">= 3x fewer | 4.00x fewer (150000 vs 600000) | met |", out)
        self.assertIn("3 of 5 met.", out)


if __name__ == "__main__":
    result = unittest.TextTestRunner(verbosity=1, stream=io.StringIO()).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(CacheplugTest))
    bad = len(result.failures) + len(result.errors)
    for test, tb in result.failures + result.errors:
        last = [l for l in tb.splitlines() if l.strip()][-1]
        print(f"FAIL {test.id().rsplit('.', 1)[-1]}: {last[:300]}")
    print(f"host cacheplug: {result.testsRun - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)
