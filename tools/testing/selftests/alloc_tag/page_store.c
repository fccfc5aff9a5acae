// SPDX-License-Identifier: GPL-2.0
/*
 * Where page tags are kept, as the boot that runs this test expects it: the
 * harness puts allocprof_store=<store> on the command line, one of
 *
 *   page_ext    tags in page_ext
 *   compressed  tag indexes in page->flags
 *   fallback    compressed asked for, did not fit: page_ext, profiling on
 *   overflow    compressed-only with too few bits: the module's tags have no
 *               index and its pages are counted on the overflow row
 *
 * Each store is checked against the boot log line, the page_ext rows of
 * /proc/allocinfo and the exact counts of the test module's page site.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define PAGE		4096LL
#define OVF_FILE	"rust/kernel/alloc_tag/compressed.rs"
#define OVF_FUNC	"page_tag_index_overflow"

/* The value of allocprof_store= on the command line, "" if none. */
static const char *expected_store(void)
{
	static char store[32];
	char *text = ai_slurp("/proc/cmdline", 4096, NULL), *p;

	store[0] = '\0';
	if (!text)
		return store;
	p = strstr(text, "allocprof_store=");
	if (p)
		sscanf(p + strlen("allocprof_store="), "%31[a-z_]", store);
	free(text);
	return store;
}

struct scan {
	long long page_ext_bytes;
	int page_ext_rows;
	struct ai_row overflow;
	int overflow_rows;
};

static int scan_fn(const struct ai_row *r, void *arg)
{
	struct scan *s = arg;

	if (!strcmp(r->file, "mm/page_ext.c")) {
		s->page_ext_rows++;
		s->page_ext_bytes += r->bytes;
	}
	if (!strcmp(r->file, OVF_FILE) && !strcmp(r->func, OVF_FUNC)) {
		s->overflow = *r;
		s->overflow_rows++;
	}
	return 0;
}

static int scan(struct scan *s)
{
	memset(s, 0, sizeof(*s));
	return ai_walk(scan_fn, s);
}

FIXTURE(store) {
	const char *store;
};

FIXTURE_SETUP(store)
{
	self->store = expected_store();
	if (ai_is_upstream())
		SKIP(return, "upstream 6.12 has no compressed page tags");
	if (!self->store[0])
		SKIP(return, "no allocprof_store= on the command line");
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	ASSERT_EQ(1, ai_sysctl_read()) TH_LOG("profiling must be on in every store");
}

FIXTURE_TEARDOWN(store)
{
	att_ctl("free pages");
}

/* The boot log states the store in effect, and why for the fallback. */
TEST_F(store, logged)
{
	const char *s = self->store;

	if (!strcmp(s, "page_ext")) {
		EXPECT_TRUE(ai_kmsg_has("alloc_tag: ", "profiling on, page tags page_ext\n", NULL));
	} else if (!strcmp(s, "fallback")) {
		EXPECT_TRUE(ai_kmsg_has("alloc_tag: ",
					"page tags page_ext (compressed does not fit)", NULL));
		EXPECT_TRUE(ai_kmsg_has("alloc_tag: compressed page tags do not fit: ",
					"using page_ext", NULL));
	} else if (!strcmp(s, "compressed") || !strcmp(s, "overflow")) {
		EXPECT_TRUE(ai_kmsg_has("alloc_tag: ", "page tags compressed in page->flags",
					NULL));
		EXPECT_TRUE(ai_kmsg_has("alloc_tag: ", "-bit page tag index (", NULL));
		if (!strcmp(s, "overflow"))
			EXPECT_TRUE(ai_kmsg_has("alloc_tag: ", "on the overflow row", NULL));
	} else {
		ASSERT_TRUE(false) TH_LOG("unknown allocprof_store=%s", s);
	}
}

/*
 * page_ext is allocated (and logs "allocated N bytes of page_ext") only when
 * page tags live there: in compressed mode it allocates nothing for us, and
 * /proc/allocinfo has no mm/page_ext.c row with bytes.
 */
TEST_F(store, page_ext_allocation)
{
	struct scan sc;
	bool page_ext = !strcmp(self->store, "page_ext") || !strcmp(self->store, "fallback");

	ASSERT_EQ(0, scan(&sc));
	TH_LOG("%d mm/page_ext.c rows, %lld bytes", sc.page_ext_rows, sc.page_ext_bytes);
	if (page_ext) {
		EXPECT_TRUE(ai_kmsg_has("bytes of page_ext", NULL));
	} else {
		EXPECT_FALSE(ai_kmsg_has("bytes of page_ext", NULL));
		EXPECT_EQ(0, sc.page_ext_bytes);
	}
	/* The overflow row is always there, and always accurate:no. */
	ASSERT_EQ(1, sc.overflow_rows);
	EXPECT_TRUE(sc.overflow.inaccurate);
}

/*
 * The module's page site: exact counts, or, without an index, nothing on its
 * row (which turns accurate:no) and exactly the same on the overflow row.
 */
TEST_F(store, module_pages)
{
	struct att_site site;
	struct ai_row before = {0}, after = {0};
	struct scan s0, s1;
	bool overflow = !strcmp(self->store, "overflow");

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, att_site("pages", &site));
	ASSERT_EQ(0, ai_get(site.file, site.line, &before));
	ASSERT_EQ(0, scan(&s0));
	ASSERT_EQ(0, att_ctl("pages 1 3"));
	ASSERT_EQ(0, ai_get(site.file, site.line, &after));
	ASSERT_EQ(0, scan(&s1));
	if (overflow) {
		EXPECT_EQ(before.bytes, after.bytes);
		EXPECT_EQ(before.calls, after.calls);
		EXPECT_TRUE(after.inaccurate);
		EXPECT_EQ(3 * 2 * PAGE, s1.overflow.bytes - s0.overflow.bytes);
		EXPECT_EQ(3, (long long)(s1.overflow.calls - s0.overflow.calls));
	} else {
		EXPECT_EQ(3 * 2 * PAGE, after.bytes - before.bytes);
		EXPECT_EQ(3, (long long)(after.calls - before.calls));
		EXPECT_FALSE(after.inaccurate);
	}
	ASSERT_EQ(0, att_ctl("free pages"));
	ASSERT_EQ(0, ai_get(site.file, site.line, &after));
	ASSERT_EQ(0, scan(&s1));
	EXPECT_EQ(before.bytes, after.bytes);
	EXPECT_EQ(before.calls, after.calls);
	EXPECT_EQ(s0.overflow.bytes, s1.overflow.bytes);
	EXPECT_EQ(s0.overflow.calls, s1.overflow.calls);
}

/*
 * vm.mem_profiling_compressed (read-only, as upstream 7.3) tells user space
 * the store in effect: 1 only when tags are indexes in page->flags.
 */
TEST_F(store, compressed_sysctl)
{
	const char *path = "/proc/sys/vm/mem_profiling_compressed";
	bool flags = !strcmp(self->store, "compressed") || !strcmp(self->store, "overflow");
	struct stat st;
	char *text;

	ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
	EXPECT_EQ(0444, st.st_mode & 07777);
	text = ai_slurp(path, 64, NULL);
	ASSERT_NE(NULL, text);
	EXPECT_STREQ(flags ? "1\n" : "0\n", text);
	free(text);
	/* Read-only for root too. */
	EXPECT_EQ(-1, open(path, O_WRONLY));
	EXPECT_EQ(EACCES, errno);
}

/* The module's slab site is exact in every store, index or not. */
TEST_F(store, module_kmalloc_exact)
{
	struct att_site site;
	struct ai_row before = { 0 }, after = { 0 };

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, att_site("kmalloc", &site));
	ASSERT_EQ(0, ai_get(site.file, site.line, &before));
	ASSERT_EQ(0, att_ctl("kmalloc 100 4"));
	ASSERT_EQ(0, ai_get(site.file, site.line, &after));
	EXPECT_EQ(4 * ai_kmalloc_bytes(128), after.bytes - before.bytes);
	EXPECT_EQ(4, (long long)(after.calls - before.calls));
	EXPECT_FALSE(after.inaccurate);
	ASSERT_EQ(0, att_ctl("free kmalloc"));
}

TEST_HARNESS_MAIN
