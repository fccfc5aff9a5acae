// SPDX-License-Identifier: GPL-2.0
/*
 * A module the kernel requests early in boot, before device initcalls
 * (test_alloc_tag_early.modprobe=alloc_tag_test, the built-in hook of
 * CONFIG_TEST_ALLOC_TAG_EARLY at rootfs_initcall), loads as it would
 * without the profiler, and its tags are registered and count exactly.
 * Skipped on boots without that parameter.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define EARLY_PARAM	"test_alloc_tag_early.modprobe=alloc_tag_test"
#define EARLY_LOG	"test_alloc_tag_early: request_module(alloc_tag_test) at rootfs_initcall: 0"

TEST(early_module_loads_and_counts)
{
	struct att_site s;
	struct ai_row before, held, freed;

	if (!ai_cmdline_has(EARLY_PARAM))
		SKIP(return, "not an early-module boot (" EARLY_PARAM ")");
	ASSERT_TRUE(ai_kmsg_has(EARLY_LOG, NULL)) {
		TH_LOG("the early request_module() failed or did not run");
	}
	ASSERT_EQ(0, access("/sys/module/alloc_tag_test", F_OK));
	ASSERT_FALSE(ai_kmsg_has("alloc_tag: module alloc_tag_test", NULL))
		TH_LOG("the profiler refused the early module");
	/* Its tags are registered, and count. */
	ASSERT_EQ(0, att_site("kmalloc", &s));
	ASSERT_EQ(0, ai_get(s.file, s.line, &before)) TH_LOG("no row for %s:%u", s.file, s.line);
	ASSERT_STREQ("alloc_tag_test", before.module);
	ASSERT_EQ(0, att_ctl("kmalloc 96 3"));
	ASSERT_EQ(0, ai_get(s.file, s.line, &held));
	EXPECT_EQ(before.calls + 3, held.calls);
	EXPECT_EQ(before.bytes + 3 * ai_kmalloc_bytes(96), held.bytes);
	EXPECT_FALSE(held.inaccurate);
	ASSERT_EQ(0, att_ctl("free kmalloc"));
	ASSERT_EQ(0, ai_get(s.file, s.line, &freed));
	EXPECT_EQ(0, freed.calls);
	EXPECT_EQ(0, freed.bytes);
}

TEST_HARNESS_MAIN
