// SPDX-License-Identifier: GPL-2.0
/*
 * Slab objects that KFENCE serves are counted like any other object of
 * their cache: on their call site's row, charged the cache's object size,
 * and uncounted when freed.  (Upstream's documentation of later kernels
 * says KFENCE objects are not accounted; ours, like 6.12's hooks, charges
 * them through the extension KFENCE keeps per object with memcg, or a
 * vector of one for its page without.)  The test module's "kfence"
 * command allocates at a site of its own, one object per 2 ms, until
 * KFENCE has served some; the row must count every object held, KFENCE's
 * or not.  It skips unless KFENCE samples in this boot (the harness boots
 * the distro kernel with kfence.sample_interval=1).
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define KFENCE_INTERVAL	"/sys/module/kfence/parameters/sample_interval"

TEST(kfence_objects_counted)
{
	long long held, kfence, slot;
	struct ai_row before, after;
	struct att_site s;
	char *text;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	text = ai_slurp(KFENCE_INTERVAL, 64, NULL);
	if (!text || atol(text) <= 0) {
		free(text);
		SKIP(return, "KFENCE does not sample in this boot");
	}
	free(text);
	ASSERT_EQ(1, ai_sysctl_read()) TH_LOG("profiling must be on for this test");
	ASSERT_EQ(0, att_site("kfence", &s));
	ASSERT_EQ(0, ai_get(s.file, s.line, &before));
	ASSERT_EQ(0, att_ctl("kfence 100 4"));
	held = att_info("kfence_held");
	kfence = att_info("kfence_objects");
	TH_LOG("%lld objects held, %lld of them KFENCE's", held, kfence);
	EXPECT_LE(1, kfence) TH_LOG("KFENCE served none of %lld objects", held);
	slot = ai_kmalloc_bytes(128);
	ASSERT_EQ(0, ai_get(s.file, s.line, &after));
	EXPECT_EQ(held * slot, after.bytes - before.bytes);
	EXPECT_EQ(held, (long long)(after.calls - before.calls));
	EXPECT_FALSE(after.inaccurate);
	ASSERT_EQ(0, att_ctl("free kfence"));
	ASSERT_EQ(0, ai_get(s.file, s.line, &after));
	EXPECT_EQ(before.bytes, after.bytes);
	EXPECT_EQ(before.calls, after.calls);
}

TEST_HARNESS_MAIN
