// SPDX-License-Identifier: GPL-2.0
/*
 * Context capture (/sys/kernel/debug/allocinfo_capture).  The test module's
 * "capture" site is one kmalloc() in a wrapper that three callers reach
 * (64, 128 and 256 bytes each).  Armed, the report must show exactly three
 * stacks for the site, each naming its caller, with exact live bytes and
 * calls; freeing one caller's objects zeroes its stack; disarming keeps the
 * site's /proc/allocinfo totals exact, before and after the objects go.
 * Bad commands are refused.  Records come from a pool, never from an
 * allocation of their own: an object whose allocation fails (failslab
 * through this thread's fail-nth) takes no record, and with the pool empty
 * an object is counted on the site as uncaptured.  Pages ("capture_pages":
 * orders 0, 1, 2 from three callers) get records when their tags live in
 * page_ext, none in compressed mode; a split drops the block's record, a
 * tail free keeps it.  Any site can be armed, the allocator's own
 * included (every site of /proc/allocinfo is, in turn); arming is all or
 * nothing, also when memory runs out; an armed tag of an unloaded module
 * outlives its allocations until disarmed.
 * Not on the upstream C core, which has no capture.
 */
#include "alloc_tag_util.h"

#include <signal.h>
#include <sys/wait.h>
#include "../kselftest_harness.h"

#define CAP_PATH	"/sys/kernel/debug/allocinfo_capture"

/* The callers' function names: a prefix and 0, 1, 2. */
#define CAP_CALLERS		3
#define CAP_KMALLOC_CALLER	"att_capture_caller"
#define CAP_PAGES_CALLER	"att_capture_pages_caller"
static const long sizes[] = { 64, 128, 256 };

struct cap_stack {
	long long bytes, calls;
	int caller;	/* which caller (0-2) a frame names, -1 if none */
	int callers_named;
};

struct cap_site {
	bool found;
	long long bytes, calls, captured, uncaptured;
	int nstacks;
	struct cap_stack stacks[8];
};

static int cap_cmd(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return ai_write(CAP_PATH, cmd, strlen(cmd));
}

/*
 * The report's section of site FILE:LINE; a stack's caller is the one of
 * @prefix0..2 its frames name.
 */
static int cap_read_callers(const struct att_site *s, struct cap_site *out,
			    const char *prefix)
{
	char want[400], *text, *line, *save = NULL;
	struct cap_stack *cur = NULL;
	bool in = false;
	size_t len;

	memset(out, 0, sizeof(*out));
	text = ai_slurp(CAP_PATH, 4096, &len);
	if (!text)
		return -errno;
	snprintf(want, sizeof(want), "site %s:%u ", s->file, s->line);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "site ", 5)) {
			in = !strncmp(line, want, strlen(want));
			if (in) {
				static const char fmt[] =
					" bytes:%lld calls:%lld captured:%lld uncaptured:%lld";
				char *p = strstr(line, " bytes:");

				out->found = true;
				if (!p || sscanf(p, fmt, &out->bytes, &out->calls,
						 &out->captured, &out->uncaptured) != 4) {
					free(text);
					return -EINVAL;
				}
			}
			cur = NULL;
			continue;
		}
		if (!in)
			continue;
		if (!strncmp(line, "  stack ", 8)) {
			if (out->nstacks == ARRAY_SIZE(out->stacks)) {
				free(text);
				return -E2BIG;
			}
			cur = &out->stacks[out->nstacks++];
			cur->caller = -1;
			if (sscanf(line, "  stack bytes:%lld calls:%lld",
				   &cur->bytes, &cur->calls) != 2) {
				free(text);
				return -EINVAL;
			}
			continue;
		}
		if (cur && !strncmp(line, "    ", 4)) {
			for (int c = 0; c < CAP_CALLERS; c++) {
				char name[64];

				snprintf(name, sizeof(name), "%s%d", prefix, c);
				if (strstr(line, name) && cur->caller != c) {
					cur->caller = c;
					cur->callers_named++;
				}
			}
		}
	}
	free(text);
	return 0;
}

static int cap_read(const struct att_site *s, struct cap_site *out)
{
	return cap_read_callers(s, out, CAP_KMALLOC_CALLER);
}

/* The stack of caller @c, NULL if there is none or more than one. */
static const struct cap_stack *cap_stack_of(const struct cap_site *cs, int c)
{
	const struct cap_stack *found = NULL;

	for (int i = 0; i < cs->nstacks; i++) {
		if (cs->stacks[i].caller != c)
			continue;
		if (found)
			return NULL;
		found = &cs->stacks[i];
	}
	return found;
}

/* The row of function @func of the hold module (loaded or gone). */
static int ai_find_func_fn(const struct ai_row *r, void *arg)
{
	struct ai_row *out = arg;

	if (strcmp(r->func, out->func) || strcmp(r->module, "alloc_tag_test_hold"))
		return 0;
	*out = *r;
	return 1;
}

static int ai_find_func(const char *func, struct ai_row *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->func, sizeof(out->func), "%s", func);
	return ai_walk(ai_find_func_fn, out) == 1 ? 0 : -ENOENT;
}

/* The report's "N of M sites armed". */
static int cap_armed(void)
{
	size_t len;
	char *text = ai_slurp(CAP_PATH, 4096, &len);
	int n = -1;

	if (text && sscanf(text, "# allocinfo capture 1.0: %d of", &n) != 1)
		n = -1;
	free(text);
	return n;
}

/* Whether the report contains @needle. */
static bool cap_has(const char *needle)
{
	size_t len;
	char *text = ai_slurp(CAP_PATH, 4096, &len);
	bool found = text && strstr(text, needle);

	free(text);
	return found;
}

/* The report's live records ("N of M records live"). */
static int cap_records(void)
{
	size_t len;
	char *text = ai_slurp(CAP_PATH, 4096, &len);
	int armed, max, n = -1;

	if (text && sscanf(text, "# allocinfo capture 1.0: %d of %d sites armed, %d of",
			   &armed, &max, &n) != 3)
		n = -1;
	free(text);
	return n;
}

FIXTURE(capture) {
	struct att_site s;
	struct ai_row start;
};

FIXTURE_SETUP(capture)
{
	if (ai_is_upstream())
		SKIP(return, "the upstream C core has no context capture");
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (access(CAP_PATH, F_OK))
		SKIP(return, CAP_PATH " missing (CONFIG_MEM_ALLOC_PROFILING_CAPTURE=n)");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(1, ai_sysctl_read()) TH_LOG("profiling must be on for this test");
	/*
	 * A test the harness killed (its timeout) ran no teardown: start from
	 * nothing armed, so that its sites do not fail the tests after it.
	 */
	cap_cmd("disarm all");
	ASSERT_EQ(0, att_site("capture", &self->s));
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &self->start));
}

FIXTURE_TEARDOWN(capture)
{
	cap_cmd("disarm all");
	att_ctl("free capture");
	att_ctl("free capture_pages");
}

/* The row of @site against @start: exact bytes and calls deltas. */
#define EXPECT_SITE_ROW(site, start, exp_bytes, exp_calls, what) do {	\
	const struct att_site *s_ = (site);				\
	const struct ai_row *st_ = (start);				\
	const char *w_ = (what);					\
	struct ai_row r_;						\
	ASSERT_EQ(0, ai_get(s_->file, s_->line, &r_));			\
	EXPECT_EQ((long long)(exp_bytes), r_.bytes - st_->bytes)	\
		TH_LOG("%s: row bytes", w_);				\
	EXPECT_EQ((long long)(exp_calls),				\
		  (long long)(r_.calls - st_->calls))			\
		TH_LOG("%s: row calls", w_);				\
} while (0)

#define EXPECT_ROW(exp_bytes, exp_calls, what)				\
	EXPECT_SITE_ROW(&self->s, &self->start, exp_bytes, exp_calls, what)

TEST_F(capture, three_callers)
{
	static const int n[] = { 3, 5, 7 };
	long long bytes = 0, calls = 0;
	struct cap_site cs;

	/* Made before arming: counted on the site, in no stack. */
	ASSERT_EQ(0, att_ctl("capture 0 2"));
	ASSERT_EQ(0, cap_cmd("arm %s:%u", self->s.file, self->s.line));
	for (int c = 0; c < 3; c++) {
		ASSERT_EQ(0, att_ctl("capture %d %d", c, n[c]));
		bytes += n[c] * ai_kmalloc_bytes(sizes[c]);
		calls += n[c];
	}
	EXPECT_ROW(bytes + 2 * ai_kmalloc_bytes(64), calls + 2, "armed");
	ASSERT_EQ(0, cap_read(&self->s, &cs));
	ASSERT_TRUE(cs.found) TH_LOG("no section for %s:%u", self->s.file, self->s.line);
	EXPECT_EQ(3, cs.nstacks);
	EXPECT_EQ(calls, cs.captured);
	EXPECT_EQ(0, cs.uncaptured);
	for (int c = 0; c < 3; c++) {
		const struct cap_stack *st = cap_stack_of(&cs, c);

		ASSERT_NE(NULL, st) TH_LOG("no single stack naming %s%d", CAP_KMALLOC_CALLER, c);
		EXPECT_EQ(1, st->callers_named);
		EXPECT_EQ(n[c] * ai_kmalloc_bytes(sizes[c]), st->bytes)
			TH_LOG("%s%d", CAP_KMALLOC_CALLER, c);
		EXPECT_EQ(n[c], st->calls) TH_LOG("%s%d", CAP_KMALLOC_CALLER, c);
	}

	/* One caller's objects freed: its stack is zero, the others stay. */
	ASSERT_EQ(0, att_ctl("capture_free 1"));
	bytes -= n[1] * ai_kmalloc_bytes(128);
	calls -= n[1];
	EXPECT_ROW(bytes + 2 * ai_kmalloc_bytes(64), calls + 2, "caller 1 freed");
	ASSERT_EQ(0, cap_read(&self->s, &cs));
	EXPECT_EQ(3, cs.nstacks);
	for (int c = 0; c < 3; c++) {
		const struct cap_stack *st = cap_stack_of(&cs, c);

		ASSERT_NE(NULL, st) TH_LOG("no single stack naming %s%d", CAP_KMALLOC_CALLER, c);
		EXPECT_EQ(c == 1 ? 0 : n[c] * ai_kmalloc_bytes(sizes[c]), st->bytes);
		EXPECT_EQ(c == 1 ? 0 : n[c], st->calls);
	}

	/* Disarmed with live records: the totals stay, then go with the objects. */
	ASSERT_EQ(0, cap_cmd("disarm %s:%u", self->s.file, self->s.line));
	ASSERT_EQ(0, cap_read(&self->s, &cs));
	EXPECT_FALSE(cs.found);
	EXPECT_ROW(bytes + 2 * ai_kmalloc_bytes(64), calls + 2, "disarmed");
	ASSERT_EQ(0, att_ctl("free capture"));
	EXPECT_ROW(0, 0, "all freed");
}

TEST_F(capture, arm_by_function_and_module)
{
	struct cap_site cs;

	ASSERT_EQ(0, cap_cmd("arm function:%s module:alloc_tag_test", self->s.func));
	ASSERT_EQ(0, att_ctl("capture 2 4"));
	ASSERT_EQ(0, cap_read(&self->s, &cs));
	ASSERT_TRUE(cs.found);
	EXPECT_EQ(1, cs.nstacks);
	EXPECT_EQ(4, cs.captured);
	/* Already armed: nothing changes. */
	ASSERT_EQ(0, cap_cmd("arm %s:%u", self->s.file, self->s.line));
	ASSERT_EQ(0, cap_read(&self->s, &cs));
	EXPECT_EQ(4, cs.captured);
	ASSERT_EQ(0, cap_cmd("disarm all"));
	ASSERT_EQ(0, att_ctl("free capture"));
	EXPECT_ROW(0, 0, "all freed");
}

TEST_F(capture, bad_commands)
{
	EXPECT_EQ(-ENOENT, cap_cmd("arm no/such/file.c:1"));
	EXPECT_EQ(-ENOENT, cap_cmd("arm %s:%u module:no_such_module", self->s.file, self->s.line));
	EXPECT_EQ(-EINVAL, cap_cmd("arm"));
	EXPECT_EQ(-EINVAL, cap_cmd("arm nocolon"));
	EXPECT_EQ(-EINVAL, cap_cmd("arm %s:x", self->s.file));
	EXPECT_EQ(-EINVAL, cap_cmd("arm %s:%u extra", self->s.file, self->s.line));
	EXPECT_EQ(-EINVAL, cap_cmd("fire %s:%u", self->s.file, self->s.line));
	EXPECT_EQ(-ENOENT, cap_cmd("disarm %s:%u", self->s.file, self->s.line));
	EXPECT_EQ(-EINVAL, cap_cmd("disarm"));
	EXPECT_EQ(-EINVAL, cap_cmd("disarm all extra"));
	EXPECT_EQ(-EINVAL, cap_cmd("arm function:"));
	EXPECT_EQ(-EINVAL, cap_cmd("arm :12"));
	EXPECT_EQ(-EINVAL, cap_cmd("arm %s:%u module:", self->s.file, self->s.line));
	EXPECT_EQ(-EINVAL, cap_cmd("arm %s:99999999999", self->s.file));
	EXPECT_EQ(0, cap_armed());
}

/*
 * Pages from three callers (order 0, 1, 2).  page_ext: three stacks with
 * exact bytes and calls; freeing the tail pages of caller 2's blocks (their
 * heads still held) keeps their records and stack until the heads go;
 * splitting caller 1's blocks drops their records (uncaptured, the site's
 * row unchanged).  Compressed: the site is armed, its pages get no record.
 */
TEST_F(capture, pages)
{
	static const int n[] = { 3, 2, 2 };
	long long bytes = 0, calls = 0, pg = sysconf(_SC_PAGESIZE);
	struct ai_row start;
	struct cap_site cs;
	struct att_site p;
	int ext = ai_page_ext_store();

	if (ext < 0)
		SKIP(return, "no page tag store (vm.mem_profiling_compressed missing)");
	ASSERT_EQ(0, att_site("capture_pages", &p));
	ASSERT_EQ(0, ai_get(p.file, p.line, &start));
	ASSERT_EQ(0, cap_cmd("arm %s:%u", p.file, p.line));
	for (int c = 0; c < 3; c++) {
		ASSERT_EQ(0, att_ctl("capture_pages %d %d", c, n[c]));
		bytes += n[c] * (pg << c);
		calls += n[c];
	}
	EXPECT_SITE_ROW(&p, &start, bytes, calls, "armed");
	ASSERT_EQ(0, cap_read_callers(&p, &cs, CAP_PAGES_CALLER));
	ASSERT_TRUE(cs.found) TH_LOG("no section for %s:%u", p.file, p.line);
	if (!ext) {
		EXPECT_EQ(0, cs.nstacks);
		EXPECT_EQ(0, cs.captured);
		EXPECT_EQ(0, cs.uncaptured);
		ASSERT_EQ(0, cap_cmd("disarm all"));
		ASSERT_EQ(0, att_ctl("free capture_pages"));
		EXPECT_SITE_ROW(&p, &start, 0, 0, "all freed");
		return;
	}
	EXPECT_EQ(3, cs.nstacks);
	EXPECT_EQ(calls, cs.captured);
	EXPECT_EQ(0, cs.uncaptured);
	for (int c = 0; c < 3; c++) {
		const struct cap_stack *st = cap_stack_of(&cs, c);

		ASSERT_NE(NULL, st) TH_LOG("no single stack naming pages caller %d", c);
		EXPECT_EQ(n[c] * (pg << c), st->bytes) TH_LOG("pages caller %d", c);
		EXPECT_EQ(n[c], st->calls) TH_LOG("pages caller %d", c);
	}

	/* Tail pages freed, heads held: the row loses 3 pages a block. */
	ASSERT_EQ(0, att_ctl("capture_pages_tails 2"));
	bytes -= n[2] * 3 * pg;
	EXPECT_SITE_ROW(&p, &start, bytes, calls, "caller 2's tails freed");
	ASSERT_EQ(0, cap_read_callers(&p, &cs, CAP_PAGES_CALLER));
	EXPECT_EQ(calls, cs.captured);
	EXPECT_EQ(n[2] * 4 * pg, cap_stack_of(&cs, 2) ?
		  cap_stack_of(&cs, 2)->bytes : -1);

	/* Split: one more call per piece on the row, the records go. */
	ASSERT_EQ(0, att_ctl("capture_pages_split 1"));
	calls += n[1];
	EXPECT_SITE_ROW(&p, &start, bytes, calls, "caller 1's blocks split");
	ASSERT_EQ(0, cap_read_callers(&p, &cs, CAP_PAGES_CALLER));
	EXPECT_EQ(n[0] + n[2], cs.captured);
	EXPECT_EQ(n[1], cs.uncaptured);
	EXPECT_EQ(0, cap_stack_of(&cs, 1) ?
		  cap_stack_of(&cs, 1)->calls : -1);

	/* Caller 0's and caller 2's pages freed: their stacks are empty. */
	ASSERT_EQ(0, att_ctl("capture_pages_free 0"));
	ASSERT_EQ(0, att_ctl("capture_pages_free 2"));
	bytes -= n[0] * pg + n[2] * pg;
	calls -= n[0] + n[2];
	EXPECT_SITE_ROW(&p, &start, bytes, calls, "callers 0 and 2 freed");
	ASSERT_EQ(0, cap_read_callers(&p, &cs, CAP_PAGES_CALLER));
	EXPECT_EQ(0, cs.captured);
	for (int c = 0; c < 3; c++) {
		const struct cap_stack *st = cap_stack_of(&cs, c);

		ASSERT_NE(NULL, st) TH_LOG("pages caller %d", c);
		EXPECT_EQ(0, st->bytes) TH_LOG("pages caller %d", c);
		EXPECT_EQ(0, st->calls) TH_LOG("pages caller %d", c);
	}

	ASSERT_EQ(0, cap_cmd("disarm all"));
	EXPECT_SITE_ROW(&p, &start, bytes, calls, "disarmed");
	ASSERT_EQ(0, att_ctl("free capture_pages"));
	EXPECT_SITE_ROW(&p, &start, 0, 0, "all freed");
}

/* 8 sites at most; a command that would pass the cap is refused. */
TEST_F(capture, site_cap)
{
	static const char *const kinds[] = {
		"kmalloc", "large", "cache", "pages", "vmalloc", "percpu", "order2",
		"node", "stress_on",
	};
	struct att_site k;

	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(0, att_site(kinds[i], &k));
		ASSERT_EQ(0, cap_cmd("arm %s:%u", k.file, k.line)) TH_LOG("%s", kinds[i]);
	}
	EXPECT_EQ(8, cap_armed());
	ASSERT_EQ(0, att_site(kinds[8], &k));
	EXPECT_EQ(-ENOSPC, cap_cmd("arm %s:%u", k.file, k.line));
	EXPECT_EQ(-ENOSPC, cap_cmd("arm function:att_capture_wrapper"));
	EXPECT_EQ(8, cap_armed());
	EXPECT_EQ(-ENOENT, cap_cmd("disarm %s:%u", k.file, k.line));
	ASSERT_EQ(0, att_site(kinds[0], &k));
	ASSERT_EQ(0, cap_cmd("disarm %s:%u", k.file, k.line));
	EXPECT_EQ(7, cap_armed());
	ASSERT_EQ(0, cap_cmd("disarm all"));
	EXPECT_EQ(0, cap_armed());
}

/*
 * A module whose armed site still has live records when it unloads: the
 * unload disarms it (the records go, the objects stay counted on the
 * module's row), and freeing the objects then brings the row to nothing.
 */
TEST_F(capture, module_unload_with_records)
{
	struct ai_row r;
	int ret;

	ASSERT_EQ(0, att_ctl("release"));
	ret = ai_load_module_params("alloc_tag_test_hold", "arm=1");
	if (ret == -ENOENT)
		SKIP(return, "alloc_tag_test_hold.ko not found");
	ASSERT_EQ(0, ret);
	EXPECT_EQ(1, cap_armed());
	/* Its three 512-byte objects, each with a record. */
	EXPECT_TRUE(cap_has("func:ath_obj module:alloc_tag_test_hold bytes:"));
	EXPECT_TRUE(cap_has(" captured:3 uncaptured:0 stacks:1"));
	ASSERT_EQ(0, ai_unload_module("alloc_tag_test_hold"));
	EXPECT_EQ(0, cap_armed());
	EXPECT_TRUE(ai_kmsg_has("capture: 1 sites of alloc_tag_test_hold disarmed at unload",
				NULL));
	/* The objects outlive the module, counted on its row. */
	ASSERT_EQ(0, ai_find_func("ath_obj", &r));
	EXPECT_EQ(3 * ai_kmalloc_bytes(512), r.bytes);
	EXPECT_EQ(3, r.calls);
	ASSERT_EQ(0, att_ctl("release"));
	EXPECT_NE(0, ai_find_func("ath_obj", &r)) TH_LOG("the row outlived its objects");
}

/*
 * Arming and disarming one site again and again while every online CPU
 * allocates and frees at it ("stress on": kmalloc/kfree on a kthread per
 * CPU): frees race the disarm that rewrites their references, allocations
 * race the arm.  Once all is freed the row is back where it was and no
 * record is live (under make test-debug, with KASAN and lockdep watching).
 * Every round patches the hooks' static calls (the first site armed, the
 * last disarmed) while the other CPUs run them; tools/testing/allocprof/vm.sh boots this
 * selftest with one TCG thread, as QEMU 7.2's multi-threaded TCG breaks
 * text_poke_bp() ("Oops: int3" in the slab hook, on any site's arm).
 */
TEST_F(capture, arm_disarm_under_load)
{
	long long seen = 0;
	struct ai_row start, end;
	struct att_site st;
	struct cap_site cs;
	int status = 0;
	pid_t pid;

	ASSERT_EQ(0, att_site("stress_on", &st));
	ASSERT_EQ(0, ai_get(st.file, st.line, &start));
	ASSERT_EQ(0, cap_armed());
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		for (;;)
			if (att_ctl("stress on %d", 2000))
				_exit(1);
	}
	for (int round = 0; round < 40; round++) {
		ASSERT_EQ(0, cap_cmd("arm %s:%u", st.file, st.line));
		usleep(2000);
		ASSERT_EQ(0, cap_read(&st, &cs));
		seen += cs.captured;
		ASSERT_EQ(0, cap_cmd("disarm %s:%u", st.file, st.line));
		usleep(500);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("stress on failed");
	EXPECT_LT(0, seen) TH_LOG("no allocation captured while armed");
	ASSERT_EQ(0, cap_cmd("disarm all"));
	ASSERT_EQ(0, ai_get(st.file, st.line, &end));
	EXPECT_EQ(start.bytes, end.bytes);
	EXPECT_EQ(start.calls, end.calls);
	EXPECT_EQ(0, cap_records());
}

/* failslab counts GFP_KERNEL and GFP_NOWAIT allocations; only fail-nth fires. */
static int fi_slab(bool on)
{
	const char *v = on ? "N" : "Y";

	if (access("/sys/kernel/debug/failslab/ignore-gfp-wait", W_OK) ||
	    access("/proc/thread-self/fail-nth", W_OK))
		return -ENOENT;
	if (ai_write("/sys/kernel/debug/failslab/ignore-gfp-wait", v, 1))
		return -EIO;
	return on ? ai_write("/sys/kernel/debug/failslab/verbose", "0", 1) : 0;
}

/*
 * "capture 0 1" with the @nth slab allocation of the write failing: the
 * object's (the command fails, nothing changes, no record is taken), or
 * one after it (the object is counted on the site, with a record from the
 * pool: records are never allocated on the allocation's path).  A third
 * outcome when the object needs a new slab: the failure hits the slab's
 * extension vector, and the object is allocated but not counted (no
 * reference, so no record either; the row says accurate:no).  That slab
 * then exists, so the same nth is tried again.
 */
TEST_F(capture, object_allocation_fails)
{
	int ok = 0, failed = 0, untracked = 0, ctl;
	struct cap_site cs;
	struct ai_row r;

	if (fi_slab(true))
		SKIP(return, "no failslab or fail-nth");
	ctl = open(ATT_DIR "/ctl", O_WRONLY);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, cap_cmd("arm %s:%u", self->s.file, self->s.line));
	for (int nth = 1, retries = 0; nth <= 8; nth++) {
		long long before_unc, before_cap, before_live, delta;
		char v[8];
		int ret;

		ASSERT_EQ(0, cap_read(&self->s, &cs));
		before_unc = cs.uncaptured;
		before_cap = cs.captured;
		before_live = cap_records();
		snprintf(v, sizeof(v), "%d", nth);
		ASSERT_EQ(0, ai_write("/proc/thread-self/fail-nth", v, strlen(v)));
		ret = write(ctl, "capture 0 1", 11) < 0 ? -errno : 0;
		ai_write("/proc/thread-self/fail-nth", "0", 1);
		ASSERT_EQ(0, cap_read(&self->s, &cs));
		if (ret) {
			EXPECT_EQ(-ENOMEM, ret);
			EXPECT_EQ(before_unc, cs.uncaptured);
			EXPECT_EQ(before_cap, cs.captured);
			EXPECT_EQ(before_live, cap_records());
			failed++;
			continue;
		}
		ok++;
		delta = (cs.uncaptured - before_unc) + (cs.captured - before_cap);
		if (delta == 0) {
			/* The new slab's vector failed: once more, the same nth. */
			untracked++;
			ASSERT_GT(3, retries++) TH_LOG("nth %d: never counted", nth);
			nth--;
			continue;
		}
		EXPECT_EQ(1, delta) TH_LOG("nth %d: one allocation, recorded or not", nth);
		EXPECT_EQ(before_live + (cs.captured - before_cap), cap_records());
	}
	close(ctl);
	fi_slab(false);
	EXPECT_LE(1, failed) TH_LOG("no object allocation failed");
	/* Every object that was allocated and counted is on the site's row. */
	EXPECT_ROW((ok - untracked) * ai_kmalloc_bytes(64), ok - untracked, "after the failures");
	if (untracked) {
		ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &r));
		EXPECT_TRUE(r.inaccurate)
			TH_LOG("%d objects not counted, row not marked", untracked);
	}
	ASSERT_EQ(0, cap_cmd("disarm all"));
	EXPECT_EQ(0, cap_records());
	ASSERT_EQ(0, att_ctl("free capture"));
	EXPECT_ROW(0, 0, "all freed");
}

/*
 * More objects at once than the pool holds when the site is armed (64
 * records, refilled from a work item as it runs low): every object is
 * counted on the site, each either captured (with a live record) or
 * uncaptured, at least the first 64 captured; all records go at disarm.
 */
TEST_F(capture, record_pool)
{
	struct cap_site cs;

	ASSERT_EQ(0, cap_cmd("arm %s:%u", self->s.file, self->s.line));
	ASSERT_EQ(0, att_ctl("capture 1 1000"));
	EXPECT_ROW(1000 * ai_kmalloc_bytes(128), 1000, "1000 objects");
	ASSERT_EQ(0, cap_read(&self->s, &cs));
	EXPECT_EQ(1000, cs.captured + cs.uncaptured);
	EXPECT_LE(64, cs.captured);
	EXPECT_EQ(cs.captured, cap_records());
	ASSERT_EQ(0, cap_cmd("disarm all"));
	EXPECT_EQ(0, cap_records());
	ASSERT_EQ(0, att_ctl("free capture"));
	EXPECT_ROW(0, 0, "all freed");
}

/* The (function, module) of the first rows that name one function 2 to 8 times. */
struct cap_multi {
	char func[128], module[64];
	int n;
};

static int cap_multi_fn(const struct ai_row *r, void *arg)
{
	struct cap_multi *m = arg;

	if (m->n >= 2)
		return 0;
	if (!strcmp(m->func, r->func) && !strcmp(m->module, r->module)) {
		m->n++;
		return 0;
	}
	snprintf(m->func, sizeof(m->func), "%s", r->func);
	snprintf(m->module, sizeof(m->module), "%s", r->module);
	m->n = 1;
	return 0;
}

/* Rows of function @func in module @module ("" for vmlinux). */
struct cap_count {
	const char *func, *module;
	int n;
};

static int cap_count_fn(const struct ai_row *r, void *arg)
{
	struct cap_count *c = arg;

	c->n += !strcmp(c->func, r->func) && !strcmp(c->module, r->module);
	return 0;
}

/*
 * Arming is all or nothing: a spec naming several sites, with the @nth
 * allocation of the write failing (a site's state, the slab extension
 * vector of a new slab for one, which fails nothing, or the record pool's
 * first chunk, which falls back to vmalloc), arms none of them and returns
 * -ENOMEM; else it arms them all.  Every nth from 1 to 12 is tried, so the
 * failures land on the first site's allocation and on later ones.  An nth
 * that lands on a new slab's extension vector fails nothing, and the next
 * try of the same nth finds that slab and fails a site's state instead, so
 * each nth is tried until it fails or has armed all three times (on a KASAN
 * kernel, whose quarantine keeps freed sites from being reused, a site's
 * slab is often new).
 */
TEST_F(capture, arm_all_or_nothing)
{
	struct cap_multi m = { "", "", 0 };
	int enomem = 0, armed_all = 0;
	struct cap_count c;
	char cmd[256];

	if (fi_slab(true))
		SKIP(return, "no failslab or fail-nth");
	/* Consecutive rows of one function: a function with several sites. */
	ASSERT_LE(0, ai_walk(cap_multi_fn, &m));
	ASSERT_EQ(2, m.n) TH_LOG("no function with two sites in a row");
	c = (struct cap_count){ m.func, m.module, 0 };
	ASSERT_LE(0, ai_walk(cap_count_fn, &c));
	if (c.n > 8)
		SKIP(return, "function %s has %d sites", m.func, c.n);
	if (m.module[0])
		snprintf(cmd, sizeof(cmd), "arm function:%s module:%s", m.func, m.module);
	else
		snprintf(cmd, sizeof(cmd), "arm function:%s", m.func);
	TH_LOG("%s: %d sites", cmd, c.n);
	for (int nth = 1, tries = 0; nth <= 12; ) {
		int fd = open(CAP_PATH, O_WRONLY), ret;
		char v[8];

		ASSERT_LE(0, fd);
		snprintf(v, sizeof(v), "%d", nth);
		/* Only the command's allocations: the file is open already. */
		ASSERT_EQ(0, ai_write("/proc/thread-self/fail-nth", v, strlen(v)));
		ret = write(fd, cmd, strlen(cmd)) < 0 ? -errno : 0;
		ai_write("/proc/thread-self/fail-nth", "0", 1);
		close(fd);
		if (ret) {
			ASSERT_EQ(-ENOMEM, ret) TH_LOG("nth %d", nth);
			EXPECT_EQ(0, cap_armed()) TH_LOG("nth %d: -ENOMEM left sites armed", nth);
		} else {
			EXPECT_EQ(c.n, cap_armed()) TH_LOG("nth %d", nth);
		}
		EXPECT_EQ(0, cap_records());
		ASSERT_EQ(0, cap_cmd("disarm all"));
		if (ret && tries)
			TH_LOG("nth %d: armed all %d times, then -ENOMEM", nth, tries);
		if (ret || ++tries == 3) {
			enomem += !!ret;
			armed_all += !ret;
			nth++;
			tries = 0;
		}
	}
	fi_slab(false);
	/* Each site's state failed at some nth, and the rest went through. */
	EXPECT_LE(c.n, enomem);
	EXPECT_LE(1, armed_all);
	EXPECT_EQ(0, cap_armed());
}

/*
 * The allocator's own sites: slab pages armed, then objects that need new
 * slabs (in the cache the records' pool would come from, too).  The
 * record path allocates nothing, so nothing recurses; the slab pages are
 * captured (or counted uncaptured), and all goes at disarm.
 */
TEST_F(capture, arm_slab_pages)
{
	size_t len;
	char *text;

	ASSERT_EQ(0, cap_cmd("arm function:alloc_slab_page"));
	ASSERT_EQ(0, att_ctl("kmalloc 200 600"));
	ASSERT_EQ(0, att_ctl("kmalloc 4000 200"));
	text = ai_slurp(CAP_PATH, 4096, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, " func:alloc_slab_page bytes:"));
	free(text);
	ASSERT_EQ(0, att_ctl("free kmalloc"));
	ASSERT_EQ(0, cap_cmd("disarm all"));
	EXPECT_EQ(0, cap_records());
}

struct cap_sites {
	struct ai_row *rows;
	int n, cap;
};

static int cap_sites_fn(const struct ai_row *r, void *arg)
{
	struct cap_sites *s = arg;

	if (s->n == s->cap) {
		struct ai_row *nr = realloc(s->rows, (s->cap * 2 + 64) * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		s->rows = nr;
		s->cap = s->cap * 2 + 64;
	}
	s->rows[s->n++] = *r;
	return 0;
}

static int cap_arm_row(const struct ai_row *r)
{
	if (r->module[0])
		return cap_cmd("arm %s:%u module:%s", r->file, r->line, r->module);
	return cap_cmd("arm %s:%u", r->file, r->line);
}

/* Some of everything the test module allocates, and a process. */
static void cap_activity(struct __test_metadata *_metadata)
{
	static const char *const cmds[] = {
		"kmalloc 100 8", "cache 8", "pages 0 2", "pages 2 1", "vmalloc 20000 1",
		"percpu 64 2", "capture 2 2", "rust alloc",
	};
	pid_t pid;
	size_t len;
	char *text;

	for (unsigned int i = 0; i < ARRAY_SIZE(cmds); i++)
		att_ctl("%s", cmds[i]);
	pid = fork();
	if (!pid)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	text = ai_slurp(CAP_PATH, 4096, &len);
	EXPECT_NE(NULL, text);
	free(text);
	text = ai_slurp(AI_PATH, 4096, &len);
	EXPECT_NE(NULL, text);
	free(text);
	for (unsigned int i = 0; i < ARRAY_SIZE(cmds); i++) {
		char kind[32];

		int n = sscanf(cmds[i], "%31s", kind);

		ASSERT_EQ(1, n);
		if (!strcmp(kind, "rust"))
			att_ctl("rust free");
		else
			att_ctl("free %s", kind);
	}
}

/*
 * Every site of /proc/allocinfo armed in turn, eight at a time, with
 * allocations of every kind and a fork while they are armed: the
 * allocator's internals (slab pages, page_ext, vmalloc, percpu, the stack
 * unwinder's), the core's own and capture's own record pool included.
 * Nothing is refused but too many sites at once (a FILE:LINE that several
 * tags share); no record outlives the disarm.
 */
/*
 * Every site of the kernel, eight at a time, each group re-pointing static
 * calls: thousands of text patches on a distribution config, minutes under
 * one TCG thread on a loaded host, so not the harness's 30 s.  The boot's
 * own timeout still bounds it.
 */
TEST_F_TIMEOUT(capture, arm_every_site, 600)
{
	struct cap_sites all = { NULL, 0, 0 };
	int armed = 0, shared = 0, gone = 0, in_group = 0;

	ASSERT_EQ(0, ai_walk(cap_sites_fn, &all));
	ASSERT_LT(100, all.n);
	for (int i = 0; i < all.n; i++) {
		int ret = cap_arm_row(&all.rows[i]);

		if (ret == -ENOSPC && in_group) {
			cap_activity(_metadata);
			ASSERT_EQ(0, cap_cmd("disarm all"));
			in_group = 0;
			ret = cap_arm_row(&all.rows[i]);
		}
		if (ret == -ENOSPC) {
			shared++;	/* more than 8 tags on one FILE:LINE */
			continue;
		}
		if (ret == -ENOENT) {
			gone++;		/* a Rust site or a module's tag that went */
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("arm %s:%u %s", all.rows[i].file, all.rows[i].line,
					 all.rows[i].module);
		armed++;
		in_group++;
		if (in_group == 8) {
			cap_activity(_metadata);
			ASSERT_EQ(0, cap_cmd("disarm all"));
			in_group = 0;
		}
	}
	if (in_group) {
		cap_activity(_metadata);
		ASSERT_EQ(0, cap_cmd("disarm all"));
	}
	TH_LOG("%d of %d sites armed, %d shared, %d gone", armed, all.n, shared, gone);
	EXPECT_LE(all.n - 50, armed);
	EXPECT_EQ(0, cap_armed());
	EXPECT_EQ(0, cap_records());
	free(all.rows);
}

/*
 * A detached tag of an unloaded module can be armed; its tag area then
 * outlives the module's last allocation until it is disarmed (no report
 * reads a freed tag), and goes at the next reclaim after.
 */
TEST_F(capture, armed_detached_tag_outlives_its_allocations)
{
	struct ai_row r;
	size_t len;
	char *text;
	int ret;

	ASSERT_EQ(0, att_ctl("release"));
	ret = ai_load_module("alloc_tag_test_hold");
	if (ret == -ENOENT)
		SKIP(return, "alloc_tag_test_hold.ko not found");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, ai_unload_module("alloc_tag_test_hold"));
	ASSERT_EQ(0, ai_find_func("ath_obj", &r)) TH_LOG("the row went with the module");
	ASSERT_EQ(0, cap_cmd("arm function:ath_obj module:alloc_tag_test_hold"));
	EXPECT_EQ(1, cap_armed());
	/* Its allocations go, and a read of /proc/allocinfo reclaims. */
	ASSERT_EQ(0, att_ctl("release"));
	text = ai_slurp(AI_PATH, 4096, &len);
	ASSERT_NE(NULL, text);
	free(text);
	text = ai_slurp(CAP_PATH, 4096, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "func:ath_obj module:alloc_tag_test_hold bytes:0 calls:0 "));
	free(text);
	ASSERT_EQ(0, ai_find_func("ath_obj", &r)) TH_LOG("an armed tag's row went");
	EXPECT_EQ(0, r.bytes);
	EXPECT_EQ(0, r.calls);
	ASSERT_EQ(0, cap_cmd("disarm function:ath_obj module:alloc_tag_test_hold"));
	EXPECT_EQ(0, cap_armed());
	/* Disarmed and drained: the next reclaim frees the tag area. */
	EXPECT_NE(0, ai_find_func("ath_obj", &r)) TH_LOG("the row outlived the disarm");
}

TEST_HARNESS_MAIN
