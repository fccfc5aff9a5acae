// SPDX-License-Identifier: GPL-2.0
/*
 * Where page tags are kept, as the kernel says it (ai_page_store():
 * vm.mem_profiling_compressed, the boot parameter, the boot log), one of
 *
 *   page_ext    tags in page_ext
 *   compressed  tag indexes in page->flags
 *   fallback    compressed asked for, did not fit: page_ext, profiling on
 *   overflow    compressed with too few bits: the module's tags have no
 *               index and its pages are counted on the overflow row
 *
 * Each store is checked against the boot log line, the page_ext rows of
 * /proc/allocinfo and the exact counts of the test module's page site.
 * Whether it is the store the boot should have got is the harness's
 * question: the first test prints "page tag store: NAME", which make test
 * compares with the boot's --store in tools/testing/allocprof/matrix.
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define PAGE		4096LL
#define OVF_FILE	"rust/kernel/alloc_tag/compressed.rs"
#define OVF_FUNC	"page_tag_index_overflow"

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
	self->store = ai_page_store();
	if (ai_is_upstream())
		SKIP(return, "upstream 6.12 has no compressed page tags");
	if (!self->store)
		SKIP(return, "no page tag store (vm.mem_profiling_compressed missing)");
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	ASSERT_EQ(1, ai_sysctl_read()) TH_LOG("profiling must be on in every store");
}

FIXTURE_TEARDOWN(store)
{
	att_ctl("free pages");
}

/*
 * The boot log states the store in effect, and why for the fallback; the
 * store is printed for the harness.
 */
TEST_F(store, logged)
{
	const char *s = self->store;

	TH_LOG("page tag store: %s", s);
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

/* The row of function @func of the hold module. */
struct hold_row {
	const char *func;
	struct ai_row row;
	int n;
};

static int hold_row_fn(const struct ai_row *r, void *arg)
{
	struct hold_row *h = arg;

	if (!strcmp(r->func, h->func) && !strcmp(r->module, "alloc_tag_test_hold")) {
		h->row = *r;
		h->n++;
	}
	return 0;
}

/* The Rust test module's "page_ids MODULES RUST" line: indexes in use. */
static int page_ids(long *modules, long *rust)
{
	FILE *f = fopen(ATT_DIR "/rust_sites", "r");
	char word[64];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fscanf(f, "%63s", word) == 1) {
		if (!strcmp(word, "page_ids")) {
			ret = fscanf(f, "%ld %ld", modules, rust) == 2 ? 0 : -EBADMSG;
			break;
		}
	}
	fclose(f);
	return ret;
}

/*
 * Rust call-site tags have an index reserve of their own: adding every
 * block of Rust site tags Kconfig allows ("rust grow") takes no module
 * index, and a module loaded afterwards gets indexes, so its page rows are
 * exact and nothing of it lands on the overflow row.
 */
TEST_F(store, rust_blocks_leave_module_ids)
{
	struct hold_row big = { "ath_big" }, obj = { "ath_obj" };
	long mods0, rust0, mods1, rust1;
	struct scan s0, s1;
	int ret;

	if (strcmp(self->store, "compressed"))
		SKIP(return, "page tags are not compressed with room to spare");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	if (access(AI_MODDIR "/alloc_tag_rust_test.ko", F_OK))
		SKIP(return, "no alloc_tag_rust_test.ko (kernel without CONFIG_RUST)");
	ASSERT_EQ(0, ai_load_module("alloc_tag_rust_test"));
	ret = page_ids(&mods0, &rust0);
	if (ret == -ENOENT) {
		ASSERT_EQ(0, ai_unload_module("alloc_tag_rust_test"));
		SKIP(return, "no page_ids line: CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS=n");
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, att_ctl("rust grow"));
	ASSERT_EQ(0, page_ids(&mods1, &rust1));
	TH_LOG("indexes in use: modules %ld -> %ld, Rust sites %ld -> %ld",
	       mods0, mods1, rust0, rust1);
	EXPECT_EQ(mods0, mods1) TH_LOG("Rust site blocks took module indexes");
	EXPECT_LE(rust0, rust1);
	EXPECT_LT(0, rust1);
	ASSERT_EQ(0, ai_unload_module("alloc_tag_rust_test"));
	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, scan(&s0));
	ret = ai_load_module_params("alloc_tag_test_hold", "big=2");
	if (ret == -ENOENT)
		SKIP(return, "alloc_tag_test_hold.ko not found");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, scan(&s1));
	ASSERT_EQ(0, ai_walk(hold_row_fn, &big));
	ASSERT_EQ(0, ai_walk(hold_row_fn, &obj));
	ASSERT_EQ(1, big.n);
	EXPECT_EQ(2 * (PAGE << 4), big.row.bytes);
	EXPECT_EQ(2, (long long)big.row.calls);
	EXPECT_FALSE(big.row.inaccurate) TH_LOG("the module's pages went to the overflow row");
	ASSERT_EQ(1, obj.n);
	EXPECT_EQ(3 * ai_kmalloc_bytes(512), obj.row.bytes);
	EXPECT_FALSE(obj.row.inaccurate);
	EXPECT_EQ(s0.overflow.bytes, s1.overflow.bytes);
	EXPECT_EQ(s0.overflow.calls, s1.overflow.calls);
	ASSERT_EQ(0, ai_unload_module("alloc_tag_test_hold"));
	ASSERT_EQ(0, att_ctl("release"));
}

TEST_HARNESS_MAIN
