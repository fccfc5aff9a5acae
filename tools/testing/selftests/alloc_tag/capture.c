// SPDX-License-Identifier: GPL-2.0
/*
 * Context capture (/sys/kernel/debug/allocinfo_capture).  The test module's
 * "capture" site is one kmalloc() in a wrapper that three callers reach
 * (64, 128 and 256 bytes each).  Armed, the report must show exactly three
 * stacks for the site, each naming its caller, with exact live bytes and
 * calls; freeing one caller's objects zeroes its stack; disarming keeps the
 * site's /proc/allocinfo totals exact, before and after the objects go.
 * Bad commands are refused.  A record whose allocation fails (failslab
 * through this thread's fail-nth) leaves the object allocated and counted
 * on the site, as uncaptured.  Not on the upstream C core, which has no
 * capture.
 */
#include "alloc_tag_util.h"
#include "../kselftest_harness.h"

#define CAP_PATH	"/sys/kernel/debug/allocinfo_capture"

static const char *const callers[] = {
	"att_capture_caller0", "att_capture_caller1", "att_capture_caller2",
};
static const long sizes[] = { 64, 128, 256 };

struct cap_stack {
	long long bytes, calls;
	int caller;	/* index in callers[] named by a frame, -1 if none */
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

/* The report's section of site FILE:LINE. */
static int cap_read(const struct att_site *s, struct cap_site *out)
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
				char *p = strstr(line, " bytes:");

				out->found = true;
				if (!p || sscanf(p, " bytes:%lld calls:%lld captured:%lld uncaptured:%lld",
						 &out->bytes, &out->calls, &out->captured,
						 &out->uncaptured) != 4) {
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
			if (sscanf(line, "  stack bytes:%lld calls:%lld", &cur->bytes, &cur->calls) != 2) {
				free(text);
				return -EINVAL;
			}
			continue;
		}
		if (cur && !strncmp(line, "    ", 4)) {
			for (int c = 0; c < (int)ARRAY_SIZE(callers); c++) {
				if (strstr(line, callers[c]) && cur->caller != c) {
					cur->caller = c;
					cur->callers_named++;
				}
			}
		}
	}
	free(text);
	return 0;
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
	ASSERT_EQ(0, att_site("capture", &self->s));
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &self->start));
}

FIXTURE_TEARDOWN(capture)
{
	cap_cmd("disarm all");
	att_ctl("free capture");
}

#define EXPECT_ROW(exp_bytes, exp_calls, what) do {				\
	struct ai_row r_;							\
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &r_));			\
	EXPECT_EQ((long long)(exp_bytes), r_.bytes - self->start.bytes)		\
		TH_LOG("%s: row bytes", what);					\
	EXPECT_EQ((long long)(exp_calls),					\
		  (long long)(r_.calls - self->start.calls))			\
		TH_LOG("%s: row calls", what);					\
} while (0)

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

		ASSERT_NE(NULL, st) TH_LOG("no single stack naming %s", callers[c]);
		EXPECT_EQ(1, st->callers_named);
		EXPECT_EQ(n[c] * ai_kmalloc_bytes(sizes[c]), st->bytes) TH_LOG("%s", callers[c]);
		EXPECT_EQ(n[c], st->calls) TH_LOG("%s", callers[c]);
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

		ASSERT_NE(NULL, st) TH_LOG("no single stack naming %s", callers[c]);
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
	/* The records' own allocation site would recurse. */
	EXPECT_EQ(-EINVAL, cap_cmd("arm function:rust_helper_alloc_tag_capture_alloc"));
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
	EXPECT_TRUE(ai_kmsg_has("capture: 1 sites of alloc_tag_test_hold disarmed at unload", NULL));
	/* The objects outlive the module, counted on its row. */
	ASSERT_EQ(0, ai_find_func("ath_obj", &r));
	EXPECT_EQ(3 * ai_kmalloc_bytes(512), r.bytes);
	EXPECT_EQ(3, r.calls);
	ASSERT_EQ(0, att_ctl("release"));
	EXPECT_NE(0, ai_find_func("ath_obj", &r)) TH_LOG("the row outlived its objects");
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
 * object's (the command fails, nothing changes) or the record's (the object
 * is counted on the site, uncaptured), or one after both.
 */
TEST_F(capture, record_allocation_fails)
{
	int ok = 0, uncaptured_seen = 0, failed = 0, ctl;
	struct cap_site cs;

	if (fi_slab(true))
		SKIP(return, "no failslab or fail-nth");
	ctl = open(ATT_DIR "/ctl", O_WRONLY);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, cap_cmd("arm %s:%u", self->s.file, self->s.line));
	for (int nth = 1; nth <= 8; nth++) {
		long long before_unc, before_cap;
		char v[8];
		int r;

		ASSERT_EQ(0, cap_read(&self->s, &cs));
		before_unc = cs.uncaptured;
		before_cap = cs.captured;
		snprintf(v, sizeof(v), "%d", nth);
		ASSERT_EQ(0, ai_write("/proc/thread-self/fail-nth", v, strlen(v)));
		r = write(ctl, "capture 0 1", 11) < 0 ? -errno : 0;
		ai_write("/proc/thread-self/fail-nth", "0", 1);
		ASSERT_EQ(0, cap_read(&self->s, &cs));
		if (r) {
			EXPECT_EQ(-ENOMEM, r);
			EXPECT_EQ(before_unc, cs.uncaptured);
			EXPECT_EQ(before_cap, cs.captured);
			failed++;
			continue;
		}
		ok++;
		EXPECT_EQ(1, (cs.uncaptured - before_unc) + (cs.captured - before_cap))
			TH_LOG("nth %d: one allocation, recorded or not", nth);
		uncaptured_seen += cs.uncaptured - before_unc;
	}
	close(ctl);
	fi_slab(false);
	EXPECT_LE(1, failed) TH_LOG("no object allocation failed");
	EXPECT_EQ(1, uncaptured_seen) TH_LOG("no record allocation failed");
	/* Every object that was allocated is on the site's row. */
	EXPECT_ROW(ok * ai_kmalloc_bytes(64), ok, "after the failures");
	ASSERT_EQ(0, cap_cmd("disarm all"));
	ASSERT_EQ(0, att_ctl("free capture"));
	EXPECT_ROW(0, 0, "all freed");
}

TEST_HARNESS_MAIN
