# SPDX-License-Identifier: GPL-2.0
"""Host tests of the serial-log judge (ktap.py) on synthetic logs.

Prints "N passed, N failed" last and exits non-zero on any failure.
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktap  # noqa: E402

KUNIT_OK = """\
[    0.900000] KTAP version 1
[    0.900001] 1..1
[    0.900002]     KTAP version 1
[    0.900003]     # Subtest: rust_doctests_kernel
[    0.900004]     1..2
[    0.900005]     ok 1 rust_doctest_kernel_a
[    0.900006]     ok 2 rust_doctest_kernel_b
[    0.900007] # rust_doctests_kernel: pass:2 fail:0 skip:0 total:2
[    0.900008] ok 1 rust_doctests_kernel
"""

SELFTEST_OK = """\
ALLOCPROF: selftest fmt begin
TAP version 13
1..3
# Starting 3 tests from 1 test cases.
ok 1 allocinfo.header_exact
ok 2 allocinfo.rows_match_grammar
ok 3 allocinfo.module_rows # SKIP module not loaded
# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:1 error:0
ALLOCPROF: selftest fmt exit 0
"""

END = "ALLOCPROF: dmesg begin\n[    1.0] all quiet\nALLOCPROF: dmesg end\nALLOCPROF: done\n"


def judge(text, kunit=True, expect=("fmt",), store=None):
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        return ktap.judge(path, "t", kunit, list(expect), store=store)
    finally:
        os.unlink(path)


class JudgeTest(unittest.TestCase):
    def assertFailure(self, j, fragment):
        self.assertTrue(any(fragment in f for f in j.failures),
                        f"no failure mentioning {fragment!r} in {j.failures}")

    STORE_OK = """ALLOCPROF: selftest page_store begin
TAP version 13
1..1
# page_store.c:80:logged:page tag store: compressed
ok 1 store.logged
# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0
ALLOCPROF: selftest page_store exit 0
"""

    def test_store_as_expected(self):
        j = judge(KUNIT_OK + self.STORE_OK + END, expect=("page_store",), store="compressed")
        self.assertEqual(j.failures, [])
        self.assertEqual(j.passed, 4)  # 3 KUnit, the selftest's 1, the store

    def test_store_not_the_expected_one(self):
        j = judge(KUNIT_OK + self.STORE_OK + END, expect=("page_store",), store="fallback")
        self.assertFailure(j, "page tag store compressed, the boot must get fallback")

    def test_store_said_without_expectation(self):
        j = judge(KUNIT_OK + self.STORE_OK + END, expect=("page_store",))
        self.assertFailure(j, "the boot's row gives no --store")

    def test_store_not_said(self):
        log = self.STORE_OK.replace("# page_store.c:80:logged:page tag store: compressed\n", "")
        j = judge(KUNIT_OK + log + END, expect=("page_store",), store="page_ext")
        self.assertFailure(j, "named no page tag store (the boot must get page_ext)")

    def test_store_expected_but_page_store_did_not_run(self):
        j = judge(KUNIT_OK + SELFTEST_OK + END, store="page_ext")
        self.assertFailure(j, "page_store: did not run")

    def test_clean_run(self):
        j = judge(KUNIT_OK + SELFTEST_OK + END)
        self.assertEqual(j.failures, [])
        self.assertEqual((j.passed, j.failed, j.skipped), (4, 0, 1))

    def test_not_ok_is_named(self):
        log = SELFTEST_OK.replace("ok 2 allocinfo.rows_match_grammar",
                                  "not ok 2 allocinfo.rows_match_grammar")
        log = log.replace("exit 0", "exit 1")
        j = judge(KUNIT_OK + log + END)
        self.assertEqual(j.failed, 1)
        self.assertFailure(j, "fmt: allocinfo.rows_match_grammar: not ok")

    def test_kunit_failure_in_subtest(self):
        log = KUNIT_OK.replace("    ok 2 rust_doctest_kernel_b", "    not ok 2 rust_doctest_kernel_b")
        log = log.replace("] ok 1 rust_doctests_kernel", "] not ok 1 rust_doctests_kernel")
        j = judge(log + SELFTEST_OK + END)
        self.assertEqual(j.failed, 1)
        self.assertFailure(j, "rust_doctest_kernel_b")

    def test_short_plan(self):
        log = SELFTEST_OK.replace("1..3", "1..4")
        j = judge(KUNIT_OK + log + END)
        self.assertFailure(j, "plan 1..4 but 3 results")

    def test_missing_plan(self):
        log = SELFTEST_OK.replace("1..3\n", "")
        j = judge(KUNIT_OK + log + END)
        self.assertFailure(j, "without a plan")

    def test_missing_selftest(self):
        j = judge(KUNIT_OK + SELFTEST_OK + END, expect=("fmt", "stress"))
        self.assertFailure(j, "selftest stress: did not run")

    def test_nonzero_exit_without_not_ok(self):
        j = judge(KUNIT_OK + SELFTEST_OK.replace("exit 0", "exit 139") + END)
        self.assertFailure(j, "exit status 139")

    def test_no_kunit_output(self):
        j = judge(SELFTEST_OK + END)
        self.assertFailure(j, "no KTAP output from KUnit")

    def test_panic(self):
        log = KUNIT_OK + "[    2.0] Kernel panic - not syncing: Fatal exception\n"
        j = judge(log)
        self.assertFailure(j, "kernel panic")
        self.assertFailure(j, "stopped before the test run finished")

    def test_oops(self):
        dump = END.replace("all quiet", "Oops: general protection fault, probably for non-canonical address")
        j = judge(KUNIT_OK + SELFTEST_OK + dump)
        self.assertFailure(j, "Oops")

    def test_unexpected_warning(self):
        dump = END.replace("all quiet", "WARNING: CPU: 1 PID: 1 at mm/slub.c:100 foo+0x1/0x2")
        j = judge(KUNIT_OK + SELFTEST_OK + dump)
        self.assertFailure(j, "WARNING")

    def test_expected_unload_warning(self):
        dump = END.replace("[    1.0] all quiet\n", (
            "[    1.0] ------------[ cut here ]------------\n"
            "[    1.0] x/alloc_tag_test_leak.c:25 module alloc_tag_test_leak func:atl_init "
            "has 1536 allocated at module unload\n"
            "[    1.0] WARNING: CPU: 0 PID: 309 at lib/alloc_tag.c:173 alloc_tag_module_unload+0xc1/0xe0\n"))
        j = judge(KUNIT_OK + SELFTEST_OK + dump)
        self.assertEqual(j.failures, [])

    def test_expected_unload_warning_interleaved(self):
        # Another CPU's show_mem() lines between "cut here" and the WARNING.
        other = "".join(f"[    1.0]     8.00 MiB      128 x.c:{n} func:f\n" for n in range(8))
        block = ("[    1.0] ------------[ cut here ]------------\n"
                 "[    1.0] x/alloc_tag_test_hold.c:49 module alloc_tag_test_hold func:ath_init "
                 "has 1536 allocated at module unload\n" + other +
                 "[    1.0] WARNING: CPU: 1 PID: 371 at lib/alloc_tag.c:173 alloc_tag_module_unload+0xc1/0xe0\n")
        j = judge(KUNIT_OK + SELFTEST_OK + END.replace("[    1.0] all quiet\n", block))
        self.assertEqual(j.failures, [])
        # Another module's unload warning is still a failure.
        j = judge(KUNIT_OK + SELFTEST_OK +
                  END.replace("[    1.0] all quiet\n", block.replace("alloc_tag_test_hold", "foo")))
        self.assertFailure(j, "WARNING")

    def test_jump_label_module_load_failure(self):
        # fault_inject failing jump_label_add_module()'s allocation: its WARN
        # and the unwinding WARN_ON right after are expected; the unwinding
        # one alone is not.
        add = ("[    1.0] ------------[ cut here ]------------\n"
               "[    1.0] Failed to allocate memory: jump_label may not work properly.\n"
               "[    1.0] WARNING: CPU: 0 PID: 226 at kernel/jump_label.c:840 "
               "jump_label_module_notify+0x423/0x460\n")
        unwind = ("[    1.0] ------------[ cut here ]------------\n"
                  "[    1.0] WARNING: CPU: 0 PID: 226 at kernel/jump_label.c:806 "
                  "jump_label_del_module+0x30/0x1f0\n")
        j = judge(KUNIT_OK + SELFTEST_OK + END.replace("[    1.0] all quiet\n", add + unwind))
        self.assertEqual(j.failures, [])
        j = judge(KUNIT_OK + SELFTEST_OK + END.replace("[    1.0] all quiet\n", unwind))
        self.assertFailure(j, "WARNING")

    def test_kasan_and_lockdep(self):
        dump = END.replace("all quiet", "BUG: KASAN: slab-use-after-free in foo\n"
                           "[    1.1] WARNING: possible circular locking dependency detected")
        j = judge(KUNIT_OK + SELFTEST_OK + dump)
        self.assertFailure(j, "KASAN")
        self.assertFailure(j, "lockdep")

    def test_lockdep_banner_is_not_a_report(self):
        dump = END.replace("all quiet", "rcu: \tRCU lockdep checking is enabled.\n"
                           "[    1.1]  ? lockdep_hardirqs_on_prepare+0x126/0x200")
        j = judge(KUNIT_OK + SELFTEST_OK + dump)
        self.assertEqual(j.failures, [])

    def test_suspicious_rcu_usage(self):
        dump = END.replace("all quiet", "WARNING: suspicious RCU usage")
        j = judge(KUNIT_OK + SELFTEST_OK + dump)
        self.assertFailure(j, "lockdep")

    def test_timeout(self):
        j = judge(KUNIT_OK + "ALLOCPROF-HOST: timeout after 300s\n")
        self.assertFailure(j, "timeout")

    def test_crlf_and_timestamps(self):
        log = (KUNIT_OK + SELFTEST_OK + END).replace("\n", "\r\n")
        j = judge(log)
        self.assertEqual(j.failures, [])
        self.assertEqual(j.passed, 4)

    def test_insmod_failure(self):
        j = judge(KUNIT_OK + "ALLOCPROF: insmod alloc_tag_test failed\n" + SELFTEST_OK + END)
        self.assertFailure(j, "insmod alloc_tag_test failed")

    # make fuzz boots (ktap.py --fuzz): the driver's operation log names
    # anything (a function called warn_alloc, a command "BUG: "), and the
    # boot-time sysctl message is a failure only there.
    FUZZ = ("ALLOCPROF: selftest fuzz begin\n"
            "[   22.5] fuzz: w0 #1 capture: arm function:BUG: x\n"
            "[   22.6] fuzz: w1 #7 capture: arm mm/slub.c:1 WARNING: y\n"
            "TAP version 13\n1..1\nok 1 workers finished in time\n"
            "ALLOCPROF: selftest fuzz exit 0\nALLOCPROF: done\n")

    def fuzz_judge(self, text, fuzz=True):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(text)
            path = f.name
        try:
            return ktap.judge(path, "t", False, ["fuzz"], fuzz)
        finally:
            os.unlink(path)

    def test_fuzz_operation_lines_are_not_reports(self):
        j = self.fuzz_judge(self.FUZZ)
        self.assertEqual(j.failures, [])
        self.assertEqual(j.passed, 1)

    def test_fuzz_boot_time_sysctl_error(self):
        log = "[    0.5] Failed to set sysctl parameter 'vm.mem_profiling=1': x\n" + self.FUZZ
        self.assertFailure(self.fuzz_judge(log), "Failed to set sysctl")
        self.assertFalse(any("sysctl" in f for f in self.fuzz_judge(log, fuzz=False).failures))

    def test_fuzz_expected_upstream_warning(self):
        warn = ("[   20.1] ------------[ cut here ]------------\n"
                "[   20.2] WARNING: CPU: 1 PID: 63 at mm/vmalloc.c:1804 alloc_vmap_area+0x908/0x1350\n")
        log = self.FUZZ.replace("TAP version", warn + "TAP version")
        self.assertEqual(self.fuzz_judge(log).failures, [])
        self.assertFailure(self.fuzz_judge(log, fuzz=False), "WARNING")

    def test_fuzz_expected_percpu_area_warning_only_at_va_clip(self):
        # make fuzz FUZZ_TARGET=rust-numa, 2026-12-07: a new percpu chunk's
        # va_clip() failed under failslab.
        def judge(line, **kw):
            warn = ("[   22.79] ------------[ cut here ]------------\n"
                    f"[   22.79] WARNING: CPU: 0 PID: 70 at mm/vmalloc.c:{line} "
                    "pcpu_get_vm_areas+0x975/0xf00\n")
            return self.fuzz_judge(self.FUZZ.replace("TAP version", warn + "TAP version"), **kw)
        self.assertEqual(judge(4833).failures, [])
        self.assertFailure(judge(4833, fuzz=False), "WARNING")
        self.assertFailure(judge(4827), "WARNING")

    # Seed 7's report (make fuzz, 2026-12-06): an open of a test module's
    # debugfs file while another worker's unload of it had taken its last
    # reference but not yet marked it GOING (ktap.DEBUGFS_OWNER).
    DEBUGFS_RACE = (
        "[   85.97] fuzz: w0 #1108 module: unload alloc_tag_test\n"
        "[   85.97] fuzz: w3 #1272 ctl: capture_pages_tails 3\n"
        "[   85.97] ------------[ cut here ]------------\n"
        "[   85.98] debugfs file owner did not clean up at exit: ctl\n"
        "[   85.98] WARNING: CPU: 0 PID: 68 at fs/debugfs/file.c:419 full_proxy_open+0x176/0x3a0\n"
        "[   85.98] Modules linked in: alloc_tag_test(O) [last unloaded: alloc_tag_rust_test(O)]\n"
        "[   85.99] ---[ end trace 0000000000000000 ]---\n"
        "[   86.01] fuzz: w3 #1273 ctl: kmalloc 10 1\n"
        "RESULT")

    def debugfs_race(self, result, **kw):
        log = self.DEBUGFS_RACE.replace("RESULT", result)
        return self.fuzz_judge(self.FUZZ.replace("TAP version", log + "TAP version"), **kw)

    def test_fuzz_debugfs_open_racing_an_unload_that_went_through(self):
        ok = "[   86.89] fuzz: w0 #1109 module: unload alloc_tag_test: 0\n"
        self.assertEqual(self.debugfs_race(ok).failures, [])
        self.assertFailure(self.debugfs_race(ok, fuzz=False), "WARNING")

    def test_fuzz_debugfs_owner_warning_without_an_unload_through(self):
        # No result logged (a driver before 2026-12-06), an unload that
        # failed (the module stayed: a real leak of its files would WARN
        # like this), another worker's op first, another module.
        for result in ("",
                       "[   86.89] fuzz: w0 #1109 module: unload alloc_tag_test: -11\n",
                       "[   86.89] fuzz: w0 #1109 ctl: kmalloc 1 1\n"
                       "[   86.90] fuzz: w0 #1110 module: unload alloc_tag_test: 0\n",
                       "[   86.89] fuzz: w0 #1109 module: unload alloc_tag_tes: 0\n"):
            self.assertFailure(self.debugfs_race(result), "WARNING")
        # The unload had finished before the open: the module is gone.
        done = self.DEBUGFS_RACE.replace(
            "ctl: capture_pages_tails 3\n",
            "ctl: capture_pages_tails 3\n[   85.97] fuzz: w0 #1109 module: unload alloc_tag_test: 0\n")
        log = self.FUZZ.replace("TAP version", done.replace("RESULT", "") + "TAP version")
        self.assertFailure(self.fuzz_judge(log), "WARNING")
        # Not listed among the modules loaded when it WARNed.
        other = self.DEBUGFS_RACE.replace("Modules linked in: alloc_tag_test(O)",
                                          "Modules linked in: alloc_tag_test_hold(O)")
        log = self.FUZZ.replace("TAP version", other.replace(
            "RESULT", "[   86.89] fuzz: w0 #1109 module: unload alloc_tag_test: 0\n") + "TAP version")
        self.assertFailure(self.fuzz_judge(log), "WARNING")

    def test_fuzz_report_after_an_operation(self):
        log = self.FUZZ.replace("TAP version", "[   22.7] BUG: KASAN: use-after-free in f\nTAP version")
        self.assertFailure(self.fuzz_judge(log), "KASAN")


if __name__ == "__main__":
    result = unittest.TextTestRunner(verbosity=1).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(JudgeTest))
    bad = len(result.failures) + len(result.errors)
    print(f"host ktap: {result.testsRun - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)
