// SPDX-License-Identifier: GPL-2.0
/*
 * Exact counter deltas for known allocations: the test module allocates at
 * known sites, each test checks the bytes and calls its row gains, frees, and
 * checks the row is back where it started.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define PAGE	4096LL

FIXTURE(site) {
	struct att_site s;
	struct ai_row start;
};

FIXTURE_SETUP(site)
{
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(1, ai_sysctl_read()) TH_LOG("profiling must be on for this test");
}

FIXTURE_TEARDOWN(site)
{
	static const char *const kinds[] = {
		"kmalloc", "large", "cache", "pages", "vmalloc", "percpu", "order2",
		"node",
	};

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		att_ctl("free %s", kinds[i]);
}

/* Find the module's site of @kind and its row, and remember the row. */
#define BEGIN(kind) do {							\
	ASSERT_EQ(0, att_site(kind, &self->s));					\
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &self->start)) {	\
		TH_LOG("no single row for %s:%u", self->s.file, self->s.line);	\
	}									\
	ASSERT_STREQ("alloc_tag_test", self->start.module);			\
	ASSERT_STREQ(self->s.func, self->start.func);				\
} while (0)

/* The row now, minus the row at the start. */
static int delta(const struct att_site *s, const struct ai_row *start,
		 long long *bytes, long long *calls)
{
	struct ai_row now = { 0 };

	if (ai_get(s->file, s->line, &now))
		return -1;
	*bytes = now.bytes - start->bytes;
	*calls = (long long)(now.calls - start->calls);
	return 0;
}

#define EXPECT_DELTA(exp_bytes, exp_calls, what) do {				\
	const char *w_ = (what);						\
	long long b_, c_;							\
	ASSERT_EQ(0, delta(&self->s, &self->start, &b_, &c_));			\
	EXPECT_EQ((long long)(exp_bytes), b_) TH_LOG("%s: bytes", w_);		\
	EXPECT_EQ((long long)(exp_calls), c_) TH_LOG("%s: calls", w_);		\
} while (0)

/* Freeing everything brings the row back to its starting value. */
#define EXPECT_RETURNED(kind) do {						\
	ASSERT_EQ(0, att_ctl("free %s", kind));					\
	EXPECT_DELTA(0, 0, "after free");					\
} while (0)

/* kmalloc is charged at the slot size of the kmalloc cache that serves it. */
TEST_F(site, slot_size)
{
	static const struct { long size, slot; } cases[] = {
		{ 8, 8 }, { 24, 32 }, { 72, 96 }, { 100, 128 }, { 150, 192 },
		{ 1000, 1024 }, { 5000, 8192 },
	};
	const int n = 5;

	BEGIN("kmalloc");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char what[32];

		snprintf(what, sizeof(what), "kmalloc(%ld)", cases[i].size);
		ASSERT_EQ(0, att_ctl("kmalloc %ld %d", cases[i].size, n));
		EXPECT_DELTA(n * ai_kmalloc_bytes(cases[i].slot), n, what);
		EXPECT_RETURNED("kmalloc");
	}
}

/* Above the largest kmalloc cache (2 pages) kmalloc takes whole pages. */
TEST_F(site, above_largest_cache)
{
	BEGIN("large");
	ASSERT_EQ(0, att_ctl("large 8193 3"));
	EXPECT_DELTA(3 * 4 * PAGE, 3, "kmalloc(8193): order 2");
	EXPECT_RETURNED("large");
	ASSERT_EQ(0, att_ctl("large 20000 2"));
	EXPECT_DELTA(2 * 8 * PAGE, 2, "kmalloc(20000): order 3");
	EXPECT_RETURNED("large");
}

/*
 * A cache of 200-byte objects without flags has 200-byte slots (larger
 * ones under KASAN or slab debugging, as its slab_size shows).
 */
TEST_F(site, own_cache)
{
	BEGIN("cache");
	ASSERT_EQ(200, att_info("cache_size"));
	ASSERT_EQ(0, att_ctl("cache 7"));
	EXPECT_DELTA(7 * ai_slab_bytes("alloc_tag_test", 200), 7, "kmem_cache_alloc");
	EXPECT_RETURNED("cache");
}

TEST_F(site, page_orders)
{
	BEGIN("pages");
	ASSERT_EQ(PAGE, att_info("page_size"));
	ASSERT_EQ(0, att_ctl("pages 0 4"));
	EXPECT_DELTA(4 * PAGE, 4, "alloc_pages order 0");
	EXPECT_RETURNED("pages");
	ASSERT_EQ(0, att_ctl("pages 3 2"));
	EXPECT_DELTA(2 * 8 * PAGE, 2, "alloc_pages order 3");
	EXPECT_RETURNED("pages");
}

/*
 * vmalloc(4 pages): the four pages, one call each, and the 32-byte page
 * array from kmalloc-32, all charged to the vmalloc caller.
 */
TEST_F(site, vmalloc_pages_and_array)
{
	BEGIN("vmalloc");
	ASSERT_EQ(0, att_ctl("vmalloc %lld 3", 4 * PAGE));
	EXPECT_DELTA(3 * (4 * PAGE + ai_kmalloc_bytes(32)), 3 * 5, "vmalloc(16384)");
	EXPECT_RETURNED("vmalloc");
}

/*
 * alloc_percpu(size) is charged size x possible CPUs, plus, where memcg
 * accounts kernel memory (CONFIG_MEMCG without cgroup.memory=nokmem), the
 * obj_cgroup pointer memcg keeps per 4-byte unit (pcpu_obj_full_size() in
 * mm/percpu-internal.h, as upstream).  Upstream 6.12 has no extension array
 * for the first percpu chunk, so an allocation served from it (the case for
 * a small one soon after boot) is not counted at all: a known upstream
 * defect that the Rust core fixes.
 */
TEST_F(site, percpu_size_times_cpus)
{
	long cpus = att_info("possible_cpus");
	bool upstream = !strcmp(ai_base(), "upstream");
	bool kmemcg = att_info("memcg") == 1 && !ai_cmdline_has("cgroup.memory=nokmem");
	long long one = 64 * cpus + (kmemcg ? 64 / 4 * (long long)sizeof(void *) : 0);

	BEGIN("percpu");
	ASSERT_GT(cpus, 0);
	ASSERT_EQ(0, att_ctl("percpu 64 3"));
	if (upstream) {
		TH_LOG("upstream defect: first-chunk percpu allocations are not counted");
		EXPECT_DELTA(0, 0, "alloc_percpu(64) on upstream 6.12");
	} else {
		EXPECT_DELTA(3 * one, 3, "alloc_percpu(64)");
	}
	EXPECT_RETURNED("percpu");
}

/*
 * alloc_pages_node() on every online node in turn (n + 1 pages on node n,
 * each checked to be from that node): one row for the site, exact whatever
 * node the page comes from.  The NUMA boots (allocprof_numa on the command
 * line) must have at least two nodes, so that this is not a one-node run.
 */
TEST_F(site, pages_per_node)
{
	long nodes = att_info("online_nodes");
	long long pages = 0;

	BEGIN("node");
	ASSERT_GT(nodes, 0);
	if (ai_cmdline_has("allocprof_numa"))
		ASSERT_GE(nodes, 2) TH_LOG("a NUMA boot with one online node");
	for (long n = 0; n < nodes; n++) {
		ASSERT_EQ(0, att_ctl("node %ld %ld", n, n + 1)) TH_LOG("node %ld", n);
		pages += n + 1;
		EXPECT_DELTA(pages * PAGE, pages, "alloc_pages_node");
	}
	TH_LOG("%ld nodes, %lld pages", nodes, pages);
	EXPECT_RETURNED("node");
}

/*
 * A non-compound order-2 block split into 4 pages: every piece keeps the
 * tag, so calls go up by 3 per block and bytes stay; freeing the pieces
 * one by one returns the row to its start.
 */
TEST_F(site, split_page)
{
	BEGIN("order2");
	ASSERT_EQ(0, att_ctl("order2 2"));
	EXPECT_DELTA(2 * 4 * PAGE, 2, "order-2 blocks");
	ASSERT_EQ(0, att_ctl("split"));
	EXPECT_DELTA(2 * 4 * PAGE, 2 * 4, "after split_page");
	EXPECT_RETURNED("order2");
}

/*
 * __free_pages() of a non-compound order-2 block whose head page someone
 * else still holds frees the three tail pages at once and the head page at
 * the last put: the tail pages' bytes leave the row with the first, the
 * call and the head page's bytes with the second.
 */
TEST_F(site, free_pages_held_head)
{
	BEGIN("order2");
	ASSERT_EQ(0, att_ctl("order2 2"));
	EXPECT_DELTA(2 * 4 * PAGE, 2, "order-2 blocks");
	ASSERT_EQ(0, att_ctl("free_tails"));
	EXPECT_DELTA(2 * PAGE, 2, "tail pages freed, head pages held");
	EXPECT_RETURNED("order2");
}

TEST_HARNESS_MAIN
