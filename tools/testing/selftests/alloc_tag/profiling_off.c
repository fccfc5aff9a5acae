// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel built with Rust and without CONFIG_MEM_ALLOC_PROFILING (the
 * harness says so with allocprof_noprof on the command line): nothing of the
 * profiler is there for user space, and Rust allocations of every kind still
 * work and are freed, with no tag asked for.  Skipped on other kernels.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define RT_MOD		"alloc_tag_rust_test"
#define RT_SITES	ATT_DIR "/rust_sites"

FIXTURE(noprof) {
	int unused;
};

FIXTURE_SETUP(noprof)
{
	if (!ai_cmdline_has("allocprof_noprof"))
		SKIP(return, "not the profiling-off kernel (no allocprof_noprof)");
}

FIXTURE_TEARDOWN(noprof)
{
	att_ctl("rust free");
	ai_unload_module(RT_MOD);
}

/* No /proc/allocinfo and no profiling sysctls. */
TEST_F(noprof, no_interfaces)
{
	EXPECT_EQ(-1, access(AI_PATH, F_OK));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, access(AI_SYSCTL, F_OK));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, access("/proc/sys/vm/mem_profiling_compressed", F_OK));
	EXPECT_EQ(ENOENT, errno);
}

/*
 * The Rust test module's KBox, KVec grown by pushes, VBox, KVBox, Page and
 * atomic KBox allocate and free, three rounds, and the module unloads.
 */
TEST_F(noprof, rust_allocations)
{
	char kind[16], func[64];
	unsigned int line;
	int sites;
	FILE *f;

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, ai_load_module(RT_MOD));
	for (int round = 0; round < 3; round++) {
		ASSERT_EQ(0, att_ctl("rust alloc")) TH_LOG("round %d", round);
		f = fopen(RT_SITES, "r");
		ASSERT_NE(NULL, f);
		sites = 0;
		while (fscanf(f, "%15s %u %63s", kind, &line, func) == 3)
			sites += line > 0 && strcmp(kind, "lock_hold");
		fclose(f);
		EXPECT_EQ(6, sites) TH_LOG("round %d: sites with a line", round);
		ASSERT_EQ(0, att_ctl("rust free"));
	}
	EXPECT_EQ(0, ai_unload_module(RT_MOD));
}

TEST_HARNESS_MAIN
