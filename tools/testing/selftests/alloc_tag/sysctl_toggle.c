// SPDX-License-Identifier: GPL-2.0
/*
 * vm.mem_profiling at run time: 0 stops counting and 1 resumes it, and every
 * invalid write fails with EINVAL and leaves the value as it was.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

FIXTURE(sysctl) {
	struct att_site s;
};

FIXTURE_SETUP(sysctl)
{
	struct stat st;

	if (access(AI_SYSCTL, F_OK))
		SKIP(return, AI_SYSCTL " missing");
	ASSERT_EQ(0, stat(AI_SYSCTL, &st));
	if (!(st.st_mode & 0200))
		SKIP(return, AI_SYSCTL " is read-only in this boot");
	ASSERT_EQ(1, ai_sysctl_read());
}

FIXTURE_TEARDOWN(sysctl)
{
	att_ctl("free kmalloc");
	ai_sysctl_write("1", 1);
}

static int row_at(struct att_site *s, struct ai_row *r)
{
	return ai_get(s->file, s->line, r);
}

/* What is allocated (and freed) while off is not counted; on again counts. */
TEST_F(sysctl, toggle_counts_only_while_on)
{
	struct ai_row start, r;

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, att_site("kmalloc", &self->s));
	ASSERT_EQ(0, row_at(&self->s, &start));

	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	ASSERT_EQ(0, ai_sysctl_read());
	ASSERT_EQ(0, att_ctl("kmalloc 100 3"));
	ASSERT_EQ(0, row_at(&self->s, &r));
	EXPECT_EQ(start.bytes, r.bytes) TH_LOG("counted while off");
	EXPECT_EQ(start.calls, r.calls) TH_LOG("counted while off");
	ASSERT_EQ(0, att_ctl("free kmalloc"));
	ASSERT_EQ(0, row_at(&self->s, &r));
	EXPECT_EQ(start.bytes, r.bytes) TH_LOG("free while off changed the row");

	ASSERT_EQ(0, ai_sysctl_write("1\n", 2));
	ASSERT_EQ(1, ai_sysctl_read());
	ASSERT_EQ(0, att_ctl("kmalloc 100 3"));
	ASSERT_EQ(0, row_at(&self->s, &r));
	EXPECT_EQ(start.bytes + 3 * 128, r.bytes) TH_LOG("not counted after on again");
	EXPECT_EQ(start.calls + 3, r.calls);
	ASSERT_EQ(0, att_ctl("free kmalloc"));
	ASSERT_EQ(0, row_at(&self->s, &r));
	EXPECT_EQ(start.bytes, r.bytes);
	EXPECT_EQ(start.calls, r.calls);
}

/* Invalid writes, one variant each. */
FIXTURE(bad_write) {
	int unused;
};

FIXTURE_SETUP(bad_write)
{
	struct stat st;

	if (access(AI_SYSCTL, F_OK))
		SKIP(return, AI_SYSCTL " missing");
	ASSERT_EQ(0, stat(AI_SYSCTL, &st));
	if (!(st.st_mode & 0200))
		SKIP(return, AI_SYSCTL " is read-only in this boot");
}

FIXTURE_TEARDOWN(bad_write)
{
	ai_sysctl_write("1", 1);
}

FIXTURE_VARIANT(bad_write) {
	const char *val;
	size_t len;
	int err;	/* expected write() result: -EINVAL, or 0 for a no-op */
};

static char long_val[8192];

FIXTURE_VARIANT_ADD(bad_write, two) { .val = "2", .len = 1, .err = -EINVAL };
FIXTURE_VARIANT_ADD(bad_write, minus_one) { .val = "-1", .len = 2, .err = -EINVAL };
FIXTURE_VARIANT_ADD(bad_write, abc) { .val = "abc", .len = 3, .err = -EINVAL };
/* What "echo > mem_profiling" writes. */
FIXTURE_VARIANT_ADD(bad_write, empty) { .val = "\n", .len = 1, .err = -EINVAL };
/* A zero-length write(2) is a no-op that succeeds. */
FIXTURE_VARIANT_ADD(bad_write, zero_length) { .val = "", .len = 0, .err = 0 };
FIXTURE_VARIANT_ADD(bad_write, very_long) {
	.val = long_val, .len = sizeof(long_val), .err = -EINVAL
};

/* Run once per variant: the write is refused (or a no-op) from both states. */
TEST_F(bad_write, einval_value_kept)
{
	memset(long_val, '1', sizeof(long_val));
	for (int state = 1; state >= 0; state--) {
		char s[2] = { '0' + state, 0 };

		ASSERT_EQ(0, ai_sysctl_write(s, 1));
		EXPECT_EQ(variant->err, ai_sysctl_write(variant->val, variant->len)) {
			TH_LOG("write of '%.16s' (%zu bytes) with value %d", variant->val,
			       variant->len, state);
		}
		EXPECT_EQ(state, ai_sysctl_read()) TH_LOG("value changed");
	}
}

TEST_HARNESS_MAIN
