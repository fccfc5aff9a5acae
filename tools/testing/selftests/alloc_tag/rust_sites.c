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

/*
 * The module's site of @kind: the line it reports and the function it names;
 * -ENOENT when the module has no such line, -ENODATA when it reports line 0.
 */
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
			ret = l ? 0 : -ENODATA;
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

#define RT_CAPTURE	"/sys/kernel/debug/allocinfo_capture"

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
	/* Nothing armed by a test killed before its teardown (capture.c). */
	if (!access(RT_CAPTURE, F_OK))
		ai_write(RT_CAPTURE, "disarm all", strlen("disarm all"));
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

/*
 * With profiling off, a Rust allocation makes no call into the core: a site
 * that allocates only then is not registered (no row), and takes no tag.
 */
TEST_F(rust, no_site_registered_while_off)
{
	struct rt_count before, after;

	if (!ai_sysctl_switchable())
		SKIP(return, AI_SYSCTL " does not switch in this boot");
	ASSERT_EQ(0, rt_count(&before));
	ASSERT_EQ(0, ai_sysctl_write("0", 1));
	ASSERT_EQ(0, att_ctl("rust alloc"));
	ASSERT_EQ(0, att_ctl("rust free"));
	ASSERT_EQ(0, ai_sysctl_write("1", 1));
	ASSERT_EQ(0, rt_count(&after));
	EXPECT_EQ(before.module_rows, after.module_rows)
		TH_LOG("%d sites registered while profiling was off",
		       after.module_rows - before.module_rows);
	/* On again, the same sites register and count exactly. */
	ASSERT_EQ(0, att_ctl("rust alloc"));
	rt_check_rows(_metadata, self->exp, true);
}

/* Where two sorted lists of row identities disagree. */
struct rt_diff {
	const void *id;
	int before, during;
};

/*
 * Whether @b (a walk during which new sites registered) differs from @a
 * (a walk before) other than by new rows: an identity of @a must be in @b
 * as often as in @a (identities can repeat: a module loaded again next to
 * its detached copy), one only in @b at most once.  Both sorted by @cmp.
 */
static bool rt_rows_differ(const void *a, int na, const void *b, int nb, size_t sz,
			   int (*cmp)(const void *, const void *), struct rt_diff *d)
{
	const char *pa = a, *pb = b;
	int i = 0, j = 0;

	while (i < na || j < nb) {
		const void *id = i < na && (j >= nb || cmp(pa + i * sz, pb + j * sz) <= 0) ?
				 pa + i * sz : pb + j * sz;
		int ca = 0, cb = 0;

		for (; i < na && !cmp(pa + i * sz, id); i++)
			ca++;
		for (; j < nb && !cmp(pb + j * sz, id); j++)
			cb++;
		if (ca ? ca != cb : cb > 1) {
			d->id = id;
			d->before = ca;
			d->during = cb;
			return true;
		}
	}
	return false;
}

#if HAVE_UAPI
/* A row's identity: what no two rows of one walk share. */
struct rt_ident {
	char modname[64], function[64], filename[64];
	unsigned long long lineno;
};

static int rt_ident_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct rt_ident));
}

/*
 * A GET_AT + GET_NEXT walk into @ids (at most @max), sorted; "rust alloc"
 * is sent after row @trigger (-1: never).  Returns the number of rows.
 */
static int rt_walk(int fd, struct rt_ident *ids, int max, int trigger)
{
	struct allocinfo_get_at g;
	int n = 0;

	memset(&g, 0, sizeof(g));
	if (ioctl(fd, ALLOCINFO_IOC_GET_AT, &g))
		return -errno;
	do {
		struct allocinfo_tag *t = &g.data.tag;

		memset(&ids[n], 0, sizeof(ids[n]));
		memcpy(ids[n].modname, t->modname, 64);
		memcpy(ids[n].function, t->function, 64);
		memcpy(ids[n].filename, t->filename, 64);
		ids[n].lineno = t->lineno;
		if (n++ == trigger && att_ctl("rust alloc"))
			return -EIO;
	} while (n < max && !ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &g.data));
	qsort(ids, n, sizeof(*ids), rt_ident_cmp);
	return n;
}

/*
 * Sites that register in the middle of a walk move no other row: a
 * GET_NEXT walk past the Rust site rows when the module's six sites
 * register sees no row twice and misses none that was there before, or
 * else the content id changed.
 */
TEST_F(rust, new_sites_move_no_row)
{
	struct allocinfo_content_id id0, id1;
	struct rt_ident *before, *during;
	int fd, nb, nd, max = 1 << 16;
	struct rt_count c;

	ASSERT_EQ(0, rt_count(&c));
	ASSERT_EQ(0, c.module_rows) TH_LOG("the module's sites are registered already");
	before = calloc(max, sizeof(*before));
	during = calloc(max, sizeof(*during));
	ASSERT_NE(NULL, before);
	ASSERT_NE(NULL, during);
	fd = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, fd);
	nb = rt_walk(fd, before, max, -1);
	ASSERT_LT(16, nb);
	ASSERT_EQ(0, ioctl(fd, ALLOCINFO_IOC_CONTENT_ID, &id0));
	/* Near the end, well past every row before the modules': new sites. */
	nd = rt_walk(fd, during, max, nb - 8);
	ASSERT_EQ(0, ioctl(fd, ALLOCINFO_IOC_CONTENT_ID, &id1));
	close(fd);
	ASSERT_EQ(0, rt_count(&c));
	ASSERT_EQ(RT_SITES_NR, c.module_rows) TH_LOG("the sites did not register");
	if (id0.id == id1.id) {
		struct rt_diff d;
		const struct rt_ident *x;

		EXPECT_FALSE(rt_rows_differ(before, nb, during, nd, sizeof(*before),
					    rt_ident_cmp, &d)) {
			x = d.id;
			TH_LOG("%s:%llu func:%s: %d rows before, %d in the walk, same content id",
			       x->filename, x->lineno, x->function, d.before, d.during);
		}
	}
	free(before);
	free(during);
}
#endif

static int rt_strptr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The identities (text after the counters) of the rows of @text, sorted. */
static int rt_text_idents(char *text, char ***out)
{
	char **lines = calloc(strlen(text) / 8 + 1, sizeof(*lines));
	int n = 0;

	if (!lines)
		return -ENOMEM;
	for (char *p = text, *e; *p; p = e + 1) {
		e = strchr(p, '\n');
		if (!e)
			break;
		*e = '\0';
		if (strlen(p) > 22 && p[0] != '#' && strncmp(p, "allocinfo", 9))
			lines[n++] = p + 22;
	}
	qsort(lines, n, sizeof(*lines), rt_strptr_cmp);
	*out = lines;
	return n;
}

/* The same for /proc/allocinfo read in 512-byte pieces. */
TEST_F(rust, new_sites_move_no_text_row)
{
	char *before, *after, buf[512], **lb, **la;
	size_t len, mark, cap = 1 << 22, got = 0;
	bool added = false;
	struct rt_diff d;
	struct rt_count c;
	int fd, nb, na;
	ssize_t r;

	ASSERT_EQ(0, rt_count(&c));
	ASSERT_EQ(0, c.module_rows) TH_LOG("the module's sites are registered already");
	before = ai_slurp(AI_PATH, 4096, &len);
	ASSERT_NE(NULL, before);
	/* Past most of the text, after every row before the modules'. */
	mark = len > 4096 ? len - 1024 : len / 2;
	after = malloc(cap);
	ASSERT_NE(NULL, after);
	fd = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, fd);
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		ASSERT_GT(cap, got + r);
		memcpy(after + got, buf, r);
		got += r;
		if (!added && got >= mark) {
			ASSERT_EQ(0, att_ctl("rust alloc"));
			added = true;
		}
	}
	close(fd);
	after[got] = '\0';
	ASSERT_EQ(0, rt_count(&c));
	ASSERT_EQ(RT_SITES_NR, c.module_rows) TH_LOG("the sites did not register");
	nb = rt_text_idents(before, &lb);
	na = rt_text_idents(after, &la);
	ASSERT_LT(16, nb);
	EXPECT_FALSE(rt_rows_differ(lb, nb, la, na, sizeof(*lb), rt_strptr_cmp, &d)) {
		TH_LOG("%s: %d rows before, %d in the read", *(char *const *)d.id,
		       d.before, d.during);
	}
	free(lb);
	free(la);
	free(after);
	free(before);
}

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

/*
 * The core holds its sites lock (a raw spinlock, interrupts off) for a
 * bounded number of slot and site reads, whatever the number of sites
 * Kconfig allows: also when a module with live sites goes, and when its
 * drained sites are reclaimed and reused.  The module reports the largest
 * hold since boot and the bound.
 */
TEST_F(rust, sites_lock_held_briefly)
{
	unsigned int hold;
	char bound[64];
	int ret;

	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, att_ctl("rust alloc"));
		ASSERT_EQ(0, att_ctl("rust free"));
		ASSERT_EQ(0, ai_unload_module(RT_MOD));
		ASSERT_EQ(0, ai_load_module(RT_MOD));
	}
	/* Sites at reused tags: the free list hands them out again. */
	ASSERT_EQ(0, att_ctl("rust alloc"));
	rt_check_rows(_metadata, self->exp, true);
	ret = rt_site("lock_hold", &hold, bound);
	if (ret == -ENOENT)
		SKIP(return, "no lock_hold line: CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS=n");
	ASSERT_EQ(0, ret);
	ksft_print_msg("most slot and site reads under one hold of the sites lock: %u (bound %s)\n",
		       hold, bound);
	EXPECT_LE(hold, (unsigned int)atoi(bound)) {
		TH_LOG("%u reads under one hold of the sites lock, bound %s",
		       hold, bound);
	}
}

struct rt_cap {
	bool found;
	long long captured, uncaptured;
	int stacks;
	bool module_frame;	/* a frame of the stacks names the module */
};

/* The capture report's section of site RT_FILE:@line. */
static int rt_cap_read(unsigned int line, struct rt_cap *out)
{
	char want[256], *text, *l, *save = NULL;
	bool in = false;
	size_t len;

	memset(out, 0, sizeof(*out));
	text = ai_slurp(RT_CAPTURE, 4096, &len);
	if (!text)
		return -errno;
	snprintf(want, sizeof(want), "site %s:%u ", RT_FILE, line);
	for (l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "site ", 5)) {
			char *p = strstr(l, " captured:");

			in = !strncmp(l, want, strlen(want));
			if (in && (!p || sscanf(p, " captured:%lld uncaptured:%lld stacks:%d",
						&out->captured, &out->uncaptured,
						&out->stacks) != 3)) {
				free(text);
				return -EINVAL;
			}
			out->found |= in;
		} else if (in && !strncmp(l, "    ", 4) && strstr(l, "[" RT_MOD "]")) {
			out->module_frame = true;
		}
	}
	free(text);
	return 0;
}

/*
 * Context capture arms a Rust call site like any other (capture.c tests
 * the rest): the KBox site's allocation gets a record whose stack runs
 * through the module; the Page site's too where page tags live in
 * page_ext, none in compressed mode.  Freeing releases them.
 */
TEST_F(rust, capture_arms_rust_sites)
{
	static const char *const kinds[] = { "kbox", "page" };
	unsigned int line[2];
	int page_ext = ai_page_ext_store();
	struct rt_cap c;
	char func[64];

	if (access(RT_CAPTURE, F_OK))
		SKIP(return, RT_CAPTURE " missing (CONFIG_MEM_ALLOC_PROFILING_CAPTURE=n)");
	/* A Rust site has a tag once it has allocated. */
	ASSERT_EQ(0, att_ctl("rust alloc"));
	ASSERT_EQ(0, att_ctl("rust free"));
	for (int i = 0; i < 2; i++) {
		char cmd[400];

		ASSERT_EQ(0, rt_site(kinds[i], &line[i], func));
		snprintf(cmd, sizeof(cmd), "arm %s:%u module:%s", RT_FILE, line[i], RT_MOD);
		ASSERT_EQ(0, ai_write(RT_CAPTURE, cmd, strlen(cmd))) TH_LOG("%s", cmd);
	}
	ASSERT_EQ(0, att_ctl("rust alloc"));
	ASSERT_EQ(0, rt_cap_read(line[0], &c));
	ASSERT_TRUE(c.found) TH_LOG("kbox site not in the capture report");
	EXPECT_EQ(1, c.captured);
	EXPECT_EQ(0, c.uncaptured);
	EXPECT_EQ(1, c.stacks);
	EXPECT_TRUE(c.module_frame) TH_LOG("no frame of " RT_MOD " in the kbox stack");
	ASSERT_EQ(0, rt_cap_read(line[1], &c));
	ASSERT_TRUE(c.found) TH_LOG("page site not in the capture report");
	if (page_ext >= 0) {
		EXPECT_EQ(page_ext, c.captured);
		EXPECT_EQ(page_ext, c.stacks);
		EXPECT_EQ(page_ext == 1, c.module_frame);
	}
	ASSERT_EQ(0, att_ctl("rust free"));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, rt_cap_read(line[i], &c));
		EXPECT_EQ(0, c.captured) TH_LOG("%s", kinds[i]);
	}
	rt_check_rows(_metadata, self->exp, false);
	ASSERT_EQ(0, ai_write(RT_CAPTURE, "disarm all", 10));
}

/*
 * An armed Rust site of an unloaded module outlives its allocation: once
 * the adopted KBox is freed, reclaim does not unlist (and later reuse) the
 * site while it is armed, so the capture report and a "disarm SPEC" read a
 * live tag; disarmed, the next reclaim takes the row away, and a site
 * registered later starts disarmed.
 */
TEST_F(rust, armed_detached_site_outlives_its_allocation)
{
	char cmd[400], want[400], func[64];
	unsigned int line;
	struct rt_cap c;
	struct ai_row r;
	size_t len;
	char *text;

	if (access(RT_CAPTURE, F_OK))
		SKIP(return, RT_CAPTURE " missing (CONFIG_MEM_ALLOC_PROFILING_CAPTURE=n)");
	ASSERT_EQ(0, att_ctl("rust adopt"));
	ASSERT_EQ(0, rt_site("adopt", &line, func));
	ASSERT_EQ(0, ai_unload_module(RT_MOD));
	ASSERT_EQ(0, ai_get(RT_FILE, line, &r)) TH_LOG("the row went with the module");
	snprintf(cmd, sizeof(cmd), "arm %s:%u module:%s", RT_FILE, line, RT_MOD);
	ASSERT_EQ(0, ai_write(RT_CAPTURE, cmd, strlen(cmd))) TH_LOG("%s", cmd);
	/* The allocation goes; reading /proc/allocinfo reclaims. */
	ASSERT_EQ(0, att_ctl("release"));
	text = ai_slurp(AI_PATH, 4096, &len);
	ASSERT_NE(NULL, text);
	free(text);
	ASSERT_EQ(0, rt_cap_read(line, &c));
	EXPECT_TRUE(c.found) TH_LOG("the armed site left the report");
	text = ai_slurp(RT_CAPTURE, 4096, &len);
	ASSERT_NE(NULL, text);
	snprintf(want, sizeof(want), "site %s:%u func:adopt_kbox module:%s bytes:0 calls:0 ",
		 RT_FILE, line, RT_MOD);
	EXPECT_NE(NULL, strstr(text, want)) TH_LOG("no line '%s'", want);
	free(text);
	ASSERT_EQ(0, ai_get(RT_FILE, line, &r)) TH_LOG("an armed site's row went");
	EXPECT_EQ(0, r.bytes);
	EXPECT_EQ(0, r.calls);
	snprintf(cmd, sizeof(cmd), "disarm %s:%u module:%s", RT_FILE, line, RT_MOD);
	ASSERT_EQ(0, ai_write(RT_CAPTURE, cmd, strlen(cmd))) TH_LOG("%s", cmd);
	EXPECT_EQ(-ENOENT, ai_get(RT_FILE, line, &r)) TH_LOG("the row outlived the disarm");
	/* The module's sites register again, at reused tags, none armed. */
	ASSERT_EQ(0, ai_load_module(RT_MOD));
	ASSERT_EQ(0, att_ctl("rust alloc"));
	ASSERT_EQ(0, att_ctl("rust free"));
	text = ai_slurp(RT_CAPTURE, 4096, &len);
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, ": 0 of 8 sites armed, 0 of ")) TH_LOG("%.200s", text);
	free(text);
	rt_check_rows(_metadata, self->exp, false);
}

TEST_HARNESS_MAIN
