// SPDX-License-Identifier: GPL-2.0
/*
 * A module whose license is not GPL-compatible loads, and its kmalloc()
 * calls are counted exactly: alloc_hooks() in a module's code needs no
 * symbol exported only to GPL modules (alloc_tag_test_nongpl.ko, three
 * 256-byte objects held from load to unload).  Loading it taints the
 * kernel and so turns lockdep off: the test runs only in boots with
 * allocprof_nongpl on the command line, after which nothing else runs.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define NG_MOD		"alloc_tag_test_nongpl"
#define NG_PARAM	"allocprof_nongpl"

struct ng_sum {
	int rows;
	long long bytes;
	unsigned long long calls;
};

static int ng_sum_fn(const struct ai_row *r, void *arg)
{
	struct ng_sum *s = arg;

	if (!strcmp(r->module, NG_MOD)) {
		s->rows++;
		s->bytes += r->bytes;
		s->calls += r->calls;
	}
	return 0;
}

static int ng_sum(struct ng_sum *s)
{
	memset(s, 0, sizeof(*s));
	return ai_walk(ng_sum_fn, s) < 0 ? -1 : 0;
}

TEST(loads_and_counts)
{
	struct ng_sum s;
	int ret;

	if (!ai_cmdline_has(NG_PARAM))
		SKIP(return, "taints the kernel: runs in its own boot (" NG_PARAM ")");
	ret = ai_load_module(NG_MOD);
	if (ret == -ENOENT && access(AI_MODDIR "/" NG_MOD ".ko", F_OK))
		SKIP(return, NG_MOD ".ko not found");
	ASSERT_EQ(0, ret) {
		TH_LOG("%s did not load (%s): a symbol it needs is GPL-only?",
		       NG_MOD, strerror(-ret));
	}
	if (access("/proc/allocinfo", F_OK)) {
		ASSERT_EQ(0, ai_unload_module(NG_MOD));
		SKIP(return, "no /proc/allocinfo (profiling compiled out)");
	}
	ASSERT_EQ(0, ng_sum(&s));
	EXPECT_EQ(1, s.rows);
	EXPECT_EQ(3, s.calls);
	EXPECT_EQ(3 * ai_kmalloc_bytes(256), s.bytes);
	ASSERT_EQ(0, ai_unload_module(NG_MOD));
	ASSERT_EQ(0, ng_sum(&s));
	EXPECT_EQ(0, s.rows);
}

TEST_HARNESS_MAIN
