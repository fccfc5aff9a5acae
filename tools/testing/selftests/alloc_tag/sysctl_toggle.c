// SPDX-License-Identifier: GPL-2.0
/*
 * vm.mem_profiling at run time: 0 stops counting and 1 resumes it, and every
 * invalid write fails with EINVAL and leaves the value as it was.  No flip
 * leaves a row wrong: what is allocated while on and freed while off is
 * uncharged (the free side's key stays on once profiling has been on);
 * what is allocated while off is not charged, and its free uncharges
 * nothing.  Upstream 6.12 tests one key on both sides, so there the first
 * stays counted: the tests check that too, as its known defect.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

FIXTURE(sysctl) {
	struct att_site s;
};

FIXTURE_SETUP(sysctl)
{
	if (access(AI_SYSCTL, F_OK))
		SKIP(return, AI_SYSCTL " missing");
	if (!ai_sysctl_switchable())
		SKIP(return, AI_SYSCTL " does not switch in this boot");
	ASSERT_EQ(1, ai_sysctl_read());
}

FIXTURE_TEARDOWN(sysctl)
{
	att_ctl("free kmalloc");
	att_ctl("flip_go");
	att_ctl("free flip");
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
	EXPECT_EQ(start.bytes + 3 * ai_kmalloc_bytes(128), r.bytes)
		TH_LOG("not counted after on again");
	EXPECT_EQ(start.calls + 3, r.calls);
	ASSERT_EQ(0, att_ctl("free kmalloc"));
	ASSERT_EQ(0, row_at(&self->s, &r));
	EXPECT_EQ(start.bytes, r.bytes);
	EXPECT_EQ(start.calls, r.calls);
}

/*
 * An allocation whose alloc_hooks() ran while profiling was off and whose
 * allocator hook runs after it was switched on is charged to its own site:
 * alloc_hooks() sets current->alloc_tag whatever the key, as upstream's
 * does.  (Setting it only behind the key left the hook with no tag, and the
 * allocation went uncounted.)
 */
TEST_F(sysctl, alloc_hooks_before_on_charges_its_site)
{
	struct ai_row start, r;
	int status;
	pid_t pid;

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, att_site("flip", &self->s));
	ASSERT_EQ(0, row_at(&self->s, &start));

	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(att_ctl("flip 8192 1") ? 1 : 0);
	/* The child's alloc_hooks() has run; its allocation waits. */
	EXPECT_EQ(0, att_ctl("flip_entered"));
	EXPECT_EQ(0, ai_sysctl_write("1", 1));
	EXPECT_EQ(0, att_ctl("flip_go"));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("flip 8192 1 failed");

	ASSERT_EQ(0, row_at(&self->s, &r));
	EXPECT_EQ(start.bytes + ai_kmalloc_bytes(8192), r.bytes)
		TH_LOG("%s:%u: allocated after the switch, not charged to its site",
		       self->s.file, self->s.line);
	EXPECT_EQ(start.calls + 1, r.calls);
	ASSERT_EQ(0, att_ctl("free flip"));
	ASSERT_EQ(0, row_at(&self->s, &r));
	EXPECT_EQ(start.bytes, r.bytes);
	EXPECT_EQ(start.calls, r.calls);
}

#define HOLD_MOD "alloc_tag_test_hold"

struct hold_sums {
	int live_rows;
	long long bytes;
	unsigned long long calls;
};

static int sum_hold(const struct ai_row *r, void *arg)
{
	struct hold_sums *h = arg;

	if (strcmp(r->module, HOLD_MOD) || !r->calls)
		return 0;
	h->live_rows++;
	h->bytes += r->bytes;
	h->calls += r->calls;
	return 0;
}

static int read_hold(struct hold_sums *h)
{
	memset(h, 0, sizeof(*h));
	return ai_walk(sum_hold, h);
}

/*
 * A module's allocations made while on (3 x 512 bytes and 8 KiB at load)
 * and freed while off: uncharged, so that the module's rows drain and its
 * unload leaves nothing behind.
 */
TEST_F(sysctl, module_freed_while_off)
{
	struct hold_sums before, h;
	int ret;

	if (access(AI_MODDIR "/" HOLD_MOD ".ko", R_OK))
		SKIP(return, HOLD_MOD ".ko not found");
	ret = ai_load_module("alloc_tag_test");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, read_hold(&before));

	ASSERT_EQ(0, ai_load_module(HOLD_MOD));
	ASSERT_EQ(0, read_hold(&h));
	ASSERT_EQ(before.live_rows + 2, h.live_rows);
	ASSERT_EQ(before.bytes + 3 * ai_kmalloc_bytes(512) + 8192, h.bytes);
	ASSERT_EQ(before.calls + 4, h.calls);
	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, ai_sysctl_write("1", 1));
	ASSERT_EQ(0, read_hold(&h));
	if (ai_is_upstream()) {
		/* Upstream 6.12: the frees went unseen; the rows keep them. */
		EXPECT_EQ(before.live_rows + 2, h.live_rows);
		EXPECT_EQ(before.bytes + 3 * ai_kmalloc_bytes(512) + 8192, h.bytes);
		EXPECT_EQ(before.calls + 4, h.calls);
		return;
	}
	EXPECT_EQ(before.live_rows, h.live_rows) TH_LOG("freed while off, still charged");
	EXPECT_EQ(before.bytes, h.bytes);
	EXPECT_EQ(before.calls, h.calls);

	/* Nothing left live: the unload frees the tag area, no row stays. */
	ASSERT_EQ(0, ai_unload_module(HOLD_MOD));
	ASSERT_EQ(0, read_hold(&h));
	EXPECT_EQ(before.live_rows, h.live_rows);
	EXPECT_EQ(before.bytes, h.bytes);
	EXPECT_EQ(before.calls, h.calls);
}

/*
 * Every kind of allocation the test module makes, at its own row, around
 * one flip: @alloc while on, then the row must hold exactly what @alloc
 * charged or be back where it started, never marked.  @split: split_page()
 * the blocks while off (each block of 4 pages becomes 4 charged pieces).
 */
FIXTURE(flip) {
	struct att_site s;
	struct ai_row start;
};

FIXTURE_VARIANT(flip) {
	const char *kind;
	const char *alloc;
	bool split;
};

FIXTURE_VARIANT_ADD(flip, kmalloc) { .kind = "kmalloc", .alloc = "kmalloc 100 3" };
FIXTURE_VARIANT_ADD(flip, large) { .kind = "large", .alloc = "large 8193 3" };
FIXTURE_VARIANT_ADD(flip, cache) { .kind = "cache", .alloc = "cache 3" };
FIXTURE_VARIANT_ADD(flip, pages) { .kind = "pages", .alloc = "pages 0 4" };
FIXTURE_VARIANT_ADD(flip, pages_order3) { .kind = "pages", .alloc = "pages 3 2" };
FIXTURE_VARIANT_ADD(flip, vmalloc) { .kind = "vmalloc", .alloc = "vmalloc 16384 3" };
FIXTURE_VARIANT_ADD(flip, percpu) { .kind = "percpu", .alloc = "percpu 64 3" };
FIXTURE_VARIANT_ADD(flip, order2) { .kind = "order2", .alloc = "order2 2" };
FIXTURE_VARIANT_ADD(flip, order2_split) { .kind = "order2", .alloc = "order2 2", .split = true };

FIXTURE_SETUP(flip)
{
	if (access(AI_SYSCTL, F_OK))
		SKIP(return, AI_SYSCTL " missing");
	if (!ai_sysctl_switchable())
		SKIP(return, AI_SYSCTL " does not switch in this boot");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(1, ai_sysctl_read());
	ASSERT_EQ(0, att_site(variant->kind, &self->s));
	ASSERT_EQ(0, att_ctl("free %s", variant->kind));
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &self->start));
}

FIXTURE_TEARDOWN(flip)
{
	ai_sysctl_write("1", 1);
	att_ctl("free %s", variant->kind);
}

/* The row now, less the row at the start. */
static struct ai_row flip_delta(struct __test_metadata *_metadata,
				struct _test_data_flip *self)
{
	struct ai_row r;

	memset(&r, 0, sizeof(r));
	EXPECT_EQ(0, ai_get(self->s.file, self->s.line, &r));
	/* Earlier tests may have marked it (fault_inject); the flip may not. */
	EXPECT_EQ(self->start.inaccurate, r.inaccurate)
		TH_LOG("%s:%u marked accurate:no", self->s.file, self->s.line);
	r.bytes -= self->start.bytes;
	r.calls -= self->start.calls;
	return r;
}

/* Charged while on; the row's delta, which must be a real charge. */
static struct ai_row flip_alloc(struct __test_metadata *_metadata,
				struct _test_data_flip *self, const char *alloc)
{
	struct ai_row held;

	EXPECT_EQ(0, att_ctl("%s", alloc));
	held = flip_delta(_metadata, self);
	EXPECT_GT(held.bytes, 0) TH_LOG("%s charged nothing", alloc);
	EXPECT_GT(held.calls, 0);
	return held;
}

/* Charged while on, split and freed while off, on again: row back at 0. */
TEST_F(flip, freed_while_off)
{
	struct ai_row held, d;

	held = flip_alloc(_metadata, self, variant->alloc);
	if (ai_is_upstream() && !held.calls)
		SKIP(return, "upstream 6.12 does not count %s at all", variant->alloc);
	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	if (variant->split)
		ASSERT_EQ(0, att_ctl("split"));
	ASSERT_EQ(0, att_ctl("free %s", variant->kind));
	ASSERT_EQ(0, ai_sysctl_write("1", 1));
	d = flip_delta(_metadata, self);
	if (ai_is_upstream()) {
		/* Upstream 6.12: unseen frees, silent phantom bytes. */
		EXPECT_EQ(held.bytes, d.bytes);
		EXPECT_EQ(held.calls, d.calls);
		return;
	}
	EXPECT_EQ(0, d.bytes) TH_LOG("freed while off, %lld bytes still charged", d.bytes);
	EXPECT_EQ(0, d.calls);
}

/*
 * Charged while on, held (split) across off and on, freed while on: the
 * row is exact throughout.
 */
TEST_F(flip, held_across_flip)
{
	struct ai_row held, d;
	bool upstream = ai_is_upstream();

	held = flip_alloc(_metadata, self, variant->alloc);
	if (upstream && !held.calls)
		SKIP(return, "upstream 6.12 does not count %s at all", variant->alloc);
	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	if (variant->split)
		ASSERT_EQ(0, att_ctl("split"));
	ASSERT_EQ(0, ai_sysctl_write("1", 1));
	d = flip_delta(_metadata, self);
	EXPECT_EQ(held.bytes, d.bytes);
	/* A split block is 4 pieces, 4 calls (unseen upstream: still 1). */
	EXPECT_EQ(held.calls * (variant->split && !upstream ? 4 : 1), d.calls);
	ASSERT_EQ(0, att_ctl("free %s", variant->kind));
	d = flip_delta(_metadata, self);
	if (upstream && variant->split) {
		/* Each piece uncharged one page: the tails' 3 stay, no call. */
		EXPECT_EQ(held.bytes / 4 * 3, d.bytes);
		EXPECT_EQ(0, d.calls);
		return;
	}
	EXPECT_EQ(0, d.bytes);
	EXPECT_EQ(0, d.calls);
}

/* Allocated while off, freed while on: never charged, nothing uncharged. */
TEST_F(flip, allocated_while_off)
{
	struct ai_row d;

	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	ASSERT_EQ(0, att_ctl("%s", variant->alloc));
	if (variant->split)
		ASSERT_EQ(0, att_ctl("split"));
	ASSERT_EQ(0, ai_sysctl_write("1", 1));
	d = flip_delta(_metadata, self);
	EXPECT_EQ(0, d.bytes);
	EXPECT_EQ(0, d.calls);
	ASSERT_EQ(0, att_ctl("free %s", variant->kind));
	d = flip_delta(_metadata, self);
	if (ai_is_upstream() && (d.bytes || d.calls))
		/* Its pages held stale references from frees while off. */
		SKIP(return, "upstream 6.12: frees uncharged stale tags: %lld bytes, %lld calls",
		     d.bytes, (long long)d.calls);
	EXPECT_EQ(0, d.bytes);
	EXPECT_EQ(0, d.calls);
}

/*
 * The Rust test module's sites (a KBox, a KVec, a VBox, a KVBox, a Page,
 * an atomic KBox), summed: charged while on, freed while off.
 */
static int sum_rust(const struct ai_row *r, void *arg)
{
	struct ai_row *sum = arg;

	if (!strcmp(r->module, "alloc_tag_rust_test")) {
		sum->bytes += r->bytes;
		sum->calls += r->calls;
	}
	return 0;
}

TEST_F(sysctl, rust_freed_while_off)
{
	struct ai_row start = { 0 }, held = { 0 }, end = { 0 };

	if (ai_is_upstream())
		SKIP(return, "upstream 6.12 charges all Rust allocations to rust/helpers/");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	if (access(AI_MODDIR "/alloc_tag_rust_test.ko", F_OK))
		SKIP(return, "no alloc_tag_rust_test.ko (kernel without CONFIG_RUST)");
	ASSERT_EQ(0, ai_load_module("alloc_tag_rust_test"));
	ASSERT_EQ(0, ai_walk(sum_rust, &start));
	ASSERT_EQ(0, att_ctl("rust alloc"));
	ASSERT_EQ(0, ai_walk(sum_rust, &held));
	ASSERT_GT(held.bytes, start.bytes);
	/* As rust_sites checks: 1 call each, but the VBox's 4 pages + array. */
	ASSERT_EQ(start.calls + 10, held.calls);
	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	ASSERT_EQ(0, att_ctl("rust free"));
	ASSERT_EQ(0, ai_sysctl_write("1", 1));
	ASSERT_EQ(0, ai_walk(sum_rust, &end));
	EXPECT_EQ(start.bytes, end.bytes) TH_LOG("freed while off, still charged");
	EXPECT_EQ(start.calls, end.calls);
	EXPECT_EQ(0, ai_unload_module("alloc_tag_rust_test"));
}

/* Invalid writes, one variant each. */
FIXTURE(bad_write) {
	int unused;
};

FIXTURE_SETUP(bad_write)
{
	if (access(AI_SYSCTL, F_OK))
		SKIP(return, AI_SYSCTL " missing");
	if (!ai_sysctl_switchable())
		SKIP(return, AI_SYSCTL " does not switch in this boot");
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
