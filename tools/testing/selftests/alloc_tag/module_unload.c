// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading a module whose allocations are still alive: the unload goes
 * through without an Oops, the kernel log names every live site of the
 * module, and /proc/allocinfo stays readable and well-formed.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define LEAK_MOD "alloc_tag_test_leak"

struct live_rows {
	struct ai_row rows[8];
	int nr;
};

static int collect_live(const struct ai_row *r, void *arg)
{
	struct live_rows *l = arg;

	if (!strcmp(r->module, LEAK_MOD) && r->calls && l->nr < 8)
		l->rows[l->nr++] = *r;
	return 0;
}

static int no_negative(const struct ai_row *r, void *arg)
{
	return r->bytes < 0 || r->calls > (1ULL << 62);
}

TEST(live_allocations_reported)
{
	struct live_rows live = { .nr = 0 };
	char *text;
	int ret, i;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (ai_sysctl_read() != 1)
		SKIP(return, "profiling is off");
	ret = ai_load_module(LEAK_MOD);
	if (ret == -ENOENT)
		SKIP(return, LEAK_MOD ".ko not found");
	ASSERT_EQ(0, ret);

	text = ai_slurp(AI_PATH, 1 << 16, NULL);
	ASSERT_NE(NULL, text);
	ASSERT_EQ(0, ai_walk_rows(text, collect_live, &live, NULL));
	free(text);
	/* 3 x kmalloc(512) at one site and one page at another. */
	ASSERT_EQ(2, live.nr);
	for (i = 0; i < live.nr; i++) {
		struct ai_row *r = &live.rows[i];

		if (r->calls == 3) {
			EXPECT_EQ(3 * 512, r->bytes);
		} else {
			EXPECT_EQ(1, r->calls);
			EXPECT_EQ(4096, r->bytes);
		}
	}

	ASSERT_EQ(0, ai_unload_module(LEAK_MOD));
	ASSERT_NE(0, access("/sys/module/" LEAK_MOD, F_OK));

	for (i = 0; i < live.nr; i++) {
		char site[300];

		snprintf(site, sizeof(site), "%s:%u", live.rows[i].file, live.rows[i].line);
		EXPECT_TRUE(ai_kmsg_has(site, LEAK_MOD, NULL)) {
			TH_LOG("no kernel log line reports live site %s of %s", site, LEAK_MOD);
		}
	}

	text = ai_slurp(AI_PATH, 1 << 16, NULL);
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, ai_walk_rows(text, no_negative, NULL, NULL));
	free(text);
}

TEST_HARNESS_MAIN
