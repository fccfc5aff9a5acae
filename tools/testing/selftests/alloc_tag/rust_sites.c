// SPDX-License-Identifier: GPL-2.0
/*
 * Rust call sites: what alloc_tag_rust_test.ko allocates through KBox, KVec
 * (grown by pushes), VBox, KVBox and Page, and a KBox in atomic context, is
 * charged to the Rust line that asked, under the module's name and the
 * function's, with exact bytes and calls;
 * freeing brings each row to zero, unloading takes the rows away, and an
 * allocation that outlives the module keeps its row until it is freed.
 * Nothing of it is charged to a rust/helpers/ line.
 */
#include "alloc_tag_util.h"

#include <sys/ioctl.h>

/* Upstream 6.12 has no ioctls: its tree has no header for them. */
#if __has_include("../../../../include/uapi/linux/alloc_tag.h")
#include "../../../../include/uapi/linux/alloc_tag.h"
#define HAVE_UAPI 1
#else
#define HAVE_UAPI 0
#endif

#include "../kselftest_harness.h"

#define PAGE		4096LL
#define RT_MOD		"alloc_tag_rust_test"
#define RT_FILE		"tools/testing/selftests/alloc_tag/test_modules/alloc_tag_rust_test.rs"
#define RT_SITES	ATT_DIR "/rust_sites"
#define RT_SITES_NR	6	/* held by "rust alloc" */

/* The module's site of @kind: the line it reports and the function it names. */
static int rt_site(const char *kind, unsigned int *line, char func[64])
{
	char k[16];
	unsigned int l;
	FILE *f = fopen(RT_SITES, "r");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fscanf(f, "%15s %u %63s", k, &l, func) == 3) {
		if (!strcmp(k, kind)) {
			*line = l;
			ret = l ? 0 : -ENOENT;
			break;
		}
	}
	fclose(f);
	return ret;
}

struct rt_expect {
	const char *kind, *func;
	long long bytes;
	unsigned long long calls;
};

/* Rows the Rust test module has, and rows under rust/helpers/ (but the profiler's own). */
struct rt_count {
	int module_rows;
	long long helper_bytes;
	unsigned long long helper_calls;
};

static int rt_count_fn(const struct ai_row *r, void *arg)
{
	struct rt_count *c = arg;

	if (!strcmp(r->module, RT_MOD))
		c->module_rows++;
	if (!strncmp(r->file, "rust/helpers/", 13) &&
	    strcmp(r->file, "rust/helpers/alloc_tag.c")) {
		c->helper_bytes += r->bytes;
		c->helper_calls += r->calls;
	}
	return 0;
}

static int rt_count(struct rt_count *c)
{
	memset(c, 0, sizeof(*c));
	return ai_walk(rt_count_fn, c);
}

FIXTURE(rust) {
	struct rt_expect exp[RT_SITES_NR];
};

FIXTURE_SETUP(rust)
{
	const struct rt_expect exp[RT_SITES_NR] = {
		{ "kbox", "alloc_kbox", ai_kmalloc_bytes(256), 1 },
		/* 100 pushes from empty: capacity 128 u64, one kmalloc-1k object */
		{ "kvec", "grow_kvec", ai_kmalloc_bytes(1024), 1 },
		/* four pages, one call each, and their 32-byte page array */
		{ "vbox", "alloc_vbox", 4 * PAGE + ai_kmalloc_bytes(32), 5 },
		{ "kvbox", "alloc_kvbox", ai_kmalloc_bytes(512), 1 },
		{ "page", "alloc_one_page", PAGE, 1 },
		/* GFP_ATOMIC with preemption off: registered in atomic context */
		{ "atomic", "alloc_atomic", ai_kmalloc_bytes(64), 1 },
	};

	if (ai_is_upstream())
		SKIP(return, "upstream 6.12 charges all Rust allocations to rust/helpers/");
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	if (access(AI_MODDIR "/" RT_MOD ".ko", F_OK))
		SKIP(return, "no " RT_MOD ".ko (kernel without CONFIG_RUST)");
	ASSERT_EQ(1, ai_sysctl_read()) TH_LOG("profiling must be on for this test");
	memcpy(self->exp, exp, sizeof(exp));
	ASSERT_EQ(0, ai_load_module(RT_MOD));
}

FIXTURE_TEARDOWN(rust)
{
	att_ctl("rust free");
	ai_unload_module(RT_MOD);
	att_ctl("release");
}

/* Every row is at the line the module reports, with its module and function. */
static void rt_check_rows(struct __test_metadata *_metadata,
			  const struct rt_expect *exp, bool held)
{
	for (int i = 0; i < RT_SITES_NR; i++) {
		struct ai_row r;
		unsigned int line;
		char func[64];

		ASSERT_EQ(0, rt_site(exp[i].kind, &line, func));
		ASSERT_STREQ(exp[i].func, func);
		ASSERT_EQ(0, ai_get(RT_FILE, line, &r)) {
			TH_LOG("no single row for %s:%u (%s)", RT_FILE, line, exp[i].kind);
		}
		EXPECT_STREQ(RT_MOD, r.module) TH_LOG("%s", exp[i].kind);
		EXPECT_STREQ(exp[i].func, r.func) TH_LOG("%s", exp[i].kind);
		EXPECT_FALSE(r.inaccurate) TH_LOG("%s", exp[i].kind);
		EXPECT_EQ(held ? exp[i].bytes : 0, r.bytes) TH_LOG("%s bytes", exp[i].kind);
		EXPECT_EQ(held ? exp[i].calls : 0, r.calls) TH_LOG("%s calls", exp[i].kind);
	}
}

/* The exact rows while held and once freed, and again on a second round. */
TEST_F(rust, rows_exact_before_and_after_free)
{
	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, att_ctl("rust alloc"));
		rt_check_rows(_metadata, self->exp, true);
		ASSERT_EQ(0, att_ctl("rust free"));
		rt_check_rows(_metadata, self->exp, false);
	}
}

/* One row per site, and no Rust allocation charged to a rust/helpers/ line. */
TEST_F(rust, one_row_per_site_none_on_helpers)
{
	struct rt_count before, held, after;

	ASSERT_EQ(0, rt_count(&before));
	ASSERT_EQ(0, att_ctl("rust alloc"));
	ASSERT_EQ(0, rt_count(&held));
	ASSERT_EQ(0, att_ctl("rust free"));
	ASSERT_EQ(0, rt_count(&after));
	EXPECT_EQ(RT_SITES_NR, held.module_rows);
	EXPECT_EQ(RT_SITES_NR, after.module_rows);
	EXPECT_EQ(before.helper_bytes, held.helper_bytes);
	EXPECT_EQ(before.helper_calls, held.helper_calls);
	EXPECT_EQ(before.helper_bytes, after.helper_bytes);
	EXPECT_EQ(before.helper_calls, after.helper_calls);
}

#if HAVE_UAPI
/* The ioctls report the same tags: a module filter finds the sites. */
TEST_F(rust, ioctl_reports_the_sites)
{
	struct allocinfo_get_at g = { .pos = 0 };
	struct allocinfo_tag_data d[8];
	int fd, n = 0, ret;

	ASSERT_EQ(0, att_ctl("rust alloc"));
	fd = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, fd);
	g.filter.mask = ALLOCINFO_FILTER_MASK_MODNAME;
	snprintf(g.filter.fields.modname, sizeof(g.filter.fields.modname), "%s", RT_MOD);
	ASSERT_EQ(0, ioctl(fd, ALLOCINFO_IOC_GET_AT, &g)) TH_LOG("errno %d", errno);
	d[n++] = g.data;
	while (n < 8 && !(ret = ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d[n])))
		n++;
	EXPECT_EQ(ENOENT, n < 8 ? errno : ENOENT);
	close(fd);
	ASSERT_EQ(RT_SITES_NR, n);
	for (int i = 0; i < RT_SITES_NR; i++) {
		unsigned int line;
		char func[64];
		int k;

		for (k = 0; k < RT_SITES_NR; k++)
			if (!strcmp(d[i].tag.function, self->exp[k].func))
				break;
		ASSERT_GT(RT_SITES_NR, k) TH_LOG("unexpected function %s", d[i].tag.function);
		ASSERT_EQ(0, rt_site(self->exp[k].kind, &line, func));
		EXPECT_STREQ(RT_MOD, d[i].tag.modname);
		EXPECT_EQ(line, d[i].tag.lineno);
		EXPECT_EQ(self->exp[k].bytes, (long long)d[i].counter.bytes);
		EXPECT_EQ(self->exp[k].calls, d[i].counter.calls);
		EXPECT_EQ(1, d[i].counter.accurate);
		/* The file name's tail, as the ioctl keeps it. */
		EXPECT_EQ(0, strcmp(d[i].tag.filename,
				    RT_FILE + strlen(RT_FILE) - strlen(d[i].tag.filename)));
	}
}
#endif

/* Unloading frees what the module held and takes its rows away. */
TEST_F(rust, unload_takes_the_rows)
{
	struct rt_count c;
	struct ai_row r;
	unsigned int line;
	char func[64];

	ASSERT_EQ(0, att_ctl("rust alloc"));
	ASSERT_EQ(0, rt_site("kvec", &line, func));
	ASSERT_EQ(0, ai_get(RT_FILE, line, &r));
	ASSERT_EQ(0, ai_unload_module(RT_MOD));
	ASSERT_EQ(-ENOENT, ai_get(RT_FILE, line, &r));
	ASSERT_EQ(0, rt_count(&c));
	EXPECT_EQ(0, c.module_rows);
	/* Loaded again, the sites come back (at reused tags) exactly. */
	ASSERT_EQ(0, ai_load_module(RT_MOD));
	ASSERT_EQ(0, att_ctl("rust alloc"));
	rt_check_rows(_metadata, self->exp, true);
}

/* An allocation handed over outlives the module on its row, until freed. */
TEST_F(rust, adopted_allocation_outlives_the_module)
{
	struct ai_row r;
	unsigned int line;
	char func[64];

	ASSERT_EQ(0, att_ctl("rust adopt"));
	ASSERT_EQ(0, rt_site("adopt", &line, func));
	ASSERT_STREQ("adopt_kbox", func);
	ASSERT_EQ(0, ai_get(RT_FILE, line, &r));
	EXPECT_EQ(ai_kmalloc_bytes(128), r.bytes);
	EXPECT_EQ(1, r.calls);
	ASSERT_EQ(0, ai_unload_module(RT_MOD));
	ASSERT_EQ(0, ai_get(RT_FILE, line, &r)) TH_LOG("the row went with the module");
	EXPECT_STREQ(RT_MOD, r.module);
	EXPECT_STREQ("adopt_kbox", r.func);
	EXPECT_EQ(ai_kmalloc_bytes(128), r.bytes);
	EXPECT_EQ(1, r.calls);
	ASSERT_EQ(0, att_ctl("release"));
	EXPECT_EQ(-ENOENT, ai_get(RT_FILE, line, &r)) TH_LOG("the drained row stayed");
}

TEST_HARNESS_MAIN
