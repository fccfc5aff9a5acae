// SPDX-License-Identifier: GPL-2.0
/*
 * The /proc/allocinfo ioctls, cross-checked against the text of the same
 * file: every tag the ioctls return is a row of the text with the same
 * file, line, function and module, every row is returned, filters select
 * exactly the rows they describe, counters of quiet sites agree exactly,
 * and bad structures fail with the documented errno and change nothing.
 *
 * Skipped on kernels without the interface (ENOTTY from a valid command, as
 * upstream 6.12 answers).
 */
#include "alloc_tag_util.h"

#include <sys/ioctl.h>

#if __has_include("../../../../include/uapi/linux/alloc_tag.h")
#include "../../../../include/uapi/linux/alloc_tag.h"
#define HAVE_UAPI 1
#else
#define HAVE_UAPI 0
#endif

#include "../kselftest_harness.h"

#if HAVE_UAPI

#define MAX_ROWS 8192
#define TEST_MOD "alloc_tag_test"

struct rows {
	struct ai_row *r;
	int n;
};

static int collect_fn(const struct ai_row *row, void *arg)
{
	struct rows *rs = arg;

	if (rs->n >= MAX_ROWS)
		return -E2BIG;
	rs->r[rs->n++] = *row;
	return 0;
}

static int text_rows(struct rows *rs)
{
	rs->n = 0;
	return ai_walk(collect_fn, rs);
}

/* The interface shows a name by its last ALLOCINFO_STR_SIZE - 1 bytes. */
static const char *tail(const char *s)
{
	size_t n = strlen(s);

	return n > ALLOCINFO_STR_SIZE - 1 ? s + n - (ALLOCINFO_STR_SIZE - 1) : s;
}

/* Whether reply @d names the same site as text row @r. */
static bool same_site(const struct allocinfo_tag_data *d, const struct ai_row *r)
{
	return d->tag.lineno == r->line &&
	       !strcmp(d->tag.filename, tail(r->file)) &&
	       !strcmp(d->tag.function, tail(r->func)) &&
	       !strcmp(d->tag.modname, tail(r->module)) &&
	       d->counter.accurate == !r->inaccurate;
}

/* Every name is NUL-terminated within its buffer and NUL-padded after. */
static bool padded(const char *s)
{
	size_t n = strnlen(s, ALLOCINFO_STR_SIZE);

	if (n == ALLOCINFO_STR_SIZE)
		return false;
	for (size_t i = n; i < ALLOCINFO_STR_SIZE; i++)
		if (s[i])
			return false;
	return true;
}

static int get_next(int fd, struct allocinfo_tag_data *d)
{
	memset(d, 0xa5, sizeof(*d));
	return ioctl(fd, ALLOCINFO_IOC_GET_NEXT, d) ? -errno : 0;
}

static int get_at(int fd, struct allocinfo_get_at *g)
{
	return ioctl(fd, ALLOCINFO_IOC_GET_AT, g) ? -errno : 0;
}

static __u64 content_id(int fd)
{
	struct allocinfo_content_id id = { 0 };

	if (ioctl(fd, ALLOCINFO_IOC_CONTENT_ID, &id))
		return ~0ULL;
	return id.id;
}

/* All replies of a GET_AT(pos 0, @f) + GET_NEXT walk. */
static int walk(int fd, const struct allocinfo_filter *f, struct allocinfo_tag_data *out, int max)
{
	struct allocinfo_get_at g = { .pos = 0 };
	int n = 0, ret;

	g.filter = *f;
	ret = get_at(fd, &g);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	out[n++] = g.data;
	while (n < max && !(ret = get_next(fd, &out[n])))
		n++;
	return ret == -ENOENT || n == max ? n : ret;
}

FIXTURE(ioc) {
	int fd;
	struct rows text;
	struct allocinfo_tag_data *d;
};

FIXTURE_SETUP(ioc)
{
	struct allocinfo_content_id id;

	self->d = calloc(MAX_ROWS, sizeof(*self->d));
	self->text.r = calloc(MAX_ROWS, sizeof(*self->text.r));
	ASSERT_NE(NULL, self->d);
	ASSERT_NE(NULL, self->text.r);
	self->fd = -1;
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	self->fd = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, self->fd);
	if (ioctl(self->fd, ALLOCINFO_IOC_CONTENT_ID, &id) && errno == ENOTTY)
		SKIP(return, "no /proc/allocinfo ioctls in this kernel");
}

FIXTURE_TEARDOWN(ioc)
{
	if (self->fd >= 0)
		close(self->fd);
	free(self->d);
	free(self->text.r);
}

/* The ABI: sizes and command numbers as upstream's. */
TEST_F(ioc, abi)
{
	EXPECT_EQ(200, sizeof(struct allocinfo_tag));
	EXPECT_EQ(24, sizeof(struct allocinfo_counter));
	EXPECT_EQ(224, sizeof(struct allocinfo_tag_data));
	EXPECT_EQ(232, sizeof(struct allocinfo_filter));
	EXPECT_EQ(464, sizeof(struct allocinfo_get_at));
	EXPECT_EQ(0x8008a600u, (unsigned int)ALLOCINFO_IOC_CONTENT_ID);
	EXPECT_EQ(0xc1d0a601u, (unsigned int)ALLOCINFO_IOC_GET_AT);
	EXPECT_EQ(0x80e0a602u, (unsigned int)ALLOCINFO_IOC_GET_NEXT);
}

/*
 * A GET_NEXT walk from a fresh open returns every tag, in text order, each
 * naming the same site as the text row at the same position; then ENOENT,
 * then it starts over from the first tag.
 */
TEST_F(ioc, walk_equals_text)
{
	struct allocinfo_tag_data again;
	__u64 id0, id1;
	int n = 0, ret, i;

	id0 = content_id(self->fd);
	while (n < MAX_ROWS && !(ret = get_next(self->fd, &self->d[n])))
		n++;
	EXPECT_EQ(-ENOENT, ret);
	id1 = content_id(self->fd);
	ASSERT_EQ(0, text_rows(&self->text));
	ASSERT_EQ(id0, id1);
	ASSERT_EQ(id1, content_id(self->fd));
	ASSERT_EQ(self->text.n, n);
	for (i = 0; i < n; i++) {
		const struct allocinfo_tag_data *d = &self->d[i];

		if (!same_site(d, &self->text.r[i])) {
			TH_LOG("tag %d: %s:%llu [%s] %s accurate %u, text %s:%u [%s] %s%s", i,
			       d->tag.filename, (unsigned long long)d->tag.lineno,
			       d->tag.modname, d->tag.function, d->counter.accurate,
			       self->text.r[i].file, self->text.r[i].line,
			       self->text.r[i].module, self->text.r[i].func,
			       self->text.r[i].inaccurate ? " accurate:no" : "");
			ASSERT_TRUE(false);
		}
		ASSERT_TRUE(padded(d->tag.filename));
		ASSERT_TRUE(padded(d->tag.function));
		ASSERT_TRUE(padded(d->tag.modname));
		ASSERT_LE(d->counter.accurate, 1);
	}
	/* After the end, the walk starts again. */
	ASSERT_EQ(0, get_next(self->fd, &again));
	EXPECT_EQ(0, memcmp(&again.tag, &self->d[0].tag, sizeof(again.tag)));
}

/* The test module's quiet sites: counters exactly those of the text. */
TEST_F(ioc, module_counters_exact)
{
	struct allocinfo_filter f = { .mask = ALLOCINFO_FILTER_MASK_MODNAME };
	struct att_site site;
	struct ai_row row = { 0 };
	int n, i, found = 0;

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, att_site("kmalloc", &site));
	ASSERT_EQ(0, att_ctl("kmalloc 100 3"));
	ASSERT_EQ(0, ai_get(site.file, site.line, &row));
	snprintf(f.fields.modname, sizeof(f.fields.modname), "%s", TEST_MOD);
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	ASSERT_LT(0, n);
	for (i = 0; i < n; i++) {
		ASSERT_STREQ(TEST_MOD, self->d[i].tag.modname);
		if (self->d[i].tag.lineno != site.line ||
		    strcmp(self->d[i].tag.filename, tail(site.file)))
			continue;
		found++;
		EXPECT_EQ(row.bytes, (long long)self->d[i].counter.bytes);
		EXPECT_EQ(row.calls, self->d[i].counter.calls);
		EXPECT_EQ(3 * ai_kmalloc_bytes(128), (long long)self->d[i].counter.bytes);
		EXPECT_EQ(3, (long long)self->d[i].counter.calls);
		EXPECT_EQ(1, self->d[i].counter.accurate);
	}
	EXPECT_EQ(1, found);
	ASSERT_EQ(0, att_ctl("free kmalloc"));
}

/* Count the text rows @pred selects. */
static int count_rows(const struct rows *rs, bool (*pred)(const struct ai_row *, const void *),
		      const void *arg)
{
	int n = 0;

	for (int i = 0; i < rs->n; i++)
		n += pred(&rs->r[i], arg);
	return n;
}

static bool in_module(const struct ai_row *r, const void *m)
{
	return !strcmp(r->module, m);
}

static bool is_inaccurate(const struct ai_row *r, const void *unused)
{
	return r->inaccurate;
}

static bool in_file(const struct ai_row *r, const void *file)
{
	return !strcmp(tail(r->file), file);
}

/* Each filter selects exactly the text rows it describes. */
TEST_F(ioc, filters_select_text_rows)
{
	struct allocinfo_filter f;
	const char *file;
	int n, i;

	ASSERT_EQ(0, text_rows(&self->text));

	/* modname "": built-in tags only. */
	memset(&f, 0, sizeof(f));
	f.mask = ALLOCINFO_FILTER_MASK_MODNAME;
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	EXPECT_EQ(count_rows(&self->text, in_module, ""), n);
	for (i = 0; i < n; i++)
		ASSERT_STREQ("", self->d[i].tag.modname);

	/* One file. */
	file = tail(self->text.r[0].file);
	memset(&f, 0, sizeof(f));
	f.mask = ALLOCINFO_FILTER_MASK_FILENAME;
	snprintf(f.fields.filename, sizeof(f.fields.filename), "%s", file);
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	EXPECT_EQ(count_rows(&self->text, in_file, file), n);
	for (i = 0; i < n; i++)
		ASSERT_STREQ(file, self->d[i].tag.filename);

	/* file + line + function: exactly the first row. */
	f.mask = ALLOCINFO_FILTER_MASK_FILENAME | ALLOCINFO_FILTER_MASK_LINENO |
		 ALLOCINFO_FILTER_MASK_FUNCTION;
	f.fields.lineno = self->text.r[0].line;
	snprintf(f.fields.function, sizeof(f.fields.function), "%.63s",
		 tail(self->text.r[0].func));
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	ASSERT_EQ(1, n);
	EXPECT_TRUE(same_site(&self->d[0], &self->text.r[0]));

	/* A line no tag has. */
	f.fields.lineno = 1ULL << 40;
	EXPECT_EQ(0, walk(self->fd, &f, self->d, MAX_ROWS));

	/* Accuracy, both ways. */
	memset(&f, 0, sizeof(f));
	f.mask = ALLOCINFO_FILTER_MASK_INACCURATE;
	f.inaccurate = 1;
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	EXPECT_EQ(count_rows(&self->text, is_inaccurate, NULL), n);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, self->d[i].counter.accurate);
	f.inaccurate = 0;
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	EXPECT_EQ(self->text.n - count_rows(&self->text, is_inaccurate, NULL), n);
}

/* Size bounds are inclusive; min == max selects that exact size. */
TEST_F(ioc, size_range)
{
	struct allocinfo_filter f = { 0 };
	struct att_site site;
	int n, i, found = 0;
	long long five = 5 * ai_kmalloc_bytes(128);

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, att_site("kmalloc", &site));
	ASSERT_EQ(0, att_ctl("kmalloc 100 5"));
	f.mask = ALLOCINFO_FILTER_MASK_MIN_SIZE | ALLOCINFO_FILTER_MASK_MAX_SIZE |
		 ALLOCINFO_FILTER_MASK_MODNAME;
	snprintf(f.fields.modname, sizeof(f.fields.modname), "%s", TEST_MOD);
	f.min_size = five;
	f.max_size = five;
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(five, (long long)self->d[i].counter.bytes);
		found += self->d[i].tag.lineno == site.line;
	}
	EXPECT_EQ(1, found);
	f.min_size = five + 1;
	f.max_size = ~0ULL;
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	for (i = 0; i < n; i++)
		EXPECT_NE(site.line, self->d[i].tag.lineno);
	f.mask = ALLOCINFO_FILTER_MASK_MAX_SIZE | ALLOCINFO_FILTER_MASK_MODNAME;
	f.max_size = five - 1;
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	for (i = 0; i < n; i++)
		EXPECT_NE(site.line, self->d[i].tag.lineno);
	ASSERT_EQ(0, att_ctl("free kmalloc"));
}

/* GET_AT(pos k) is the k-th tag of the same filtered walk. */
TEST_F(ioc, get_at_positions)
{
	struct allocinfo_filter f = { .mask = ALLOCINFO_FILTER_MASK_MODNAME };
	struct allocinfo_get_at g;
	int n, k;

	n = walk(self->fd, &f, self->d, MAX_ROWS);
	ASSERT_LT(2, n);
	for (k = 0; k < n; k += n / 7 + 1) {
		memset(&g, 0, sizeof(g));
		g.pos = k;
		g.filter = f;
		ASSERT_EQ(0, get_at(self->fd, &g));
		ASSERT_EQ(0, memcmp(&g.data.tag, &self->d[k].tag, sizeof(g.data.tag)));
		if (k + 1 < n) {
			struct allocinfo_tag_data next;

			ASSERT_EQ(0, get_next(self->fd, &next));
			ASSERT_EQ(0, memcmp(&next.tag, &self->d[k + 1].tag, sizeof(next.tag)));
		}
	}
	/* Past the last match, and past the number of tags. */
	g.pos = n;
	EXPECT_EQ(-ENOENT, get_at(self->fd, &g));
	g.pos = ~0ULL;
	EXPECT_EQ(-ENOENT, get_at(self->fd, &g));
}

/*
 * Bad structures: the documented errno, and the open file's walk goes on
 * as if the bad call had not been made.
 */
TEST_F(ioc, bad_input)
{
	struct allocinfo_get_at g, bad;
	struct allocinfo_tag_data next;
	char buf[sizeof(g) + 16];

	/* Position on the second tag of the unfiltered walk. */
	memset(&g, 0, sizeof(g));
	ASSERT_EQ(0, get_at(self->fd, &g));
	g.pos = 2;
	ASSERT_EQ(0, get_at(self->fd, &g));

	memset(&bad, 0, sizeof(bad));
	bad.filter.mask = ALLOCINFO_FILTER_MASKS + 1;
	EXPECT_EQ(-EINVAL, get_at(self->fd, &bad));
	bad.filter.mask = 1ULL << 63;
	EXPECT_EQ(-EINVAL, get_at(self->fd, &bad));
	bad.filter.mask = ALLOCINFO_FILTER_MASK_MIN_SIZE | ALLOCINFO_FILTER_MASK_MAX_SIZE;
	bad.filter.min_size = 2;
	bad.filter.max_size = 1;
	EXPECT_EQ(-EINVAL, get_at(self->fd, &bad));
	/* Unterminated names the filter uses. */
	memset(&bad, 0, sizeof(bad));
	bad.filter.mask = ALLOCINFO_FILTER_MASK_FILENAME;
	memset(bad.filter.fields.filename, 'x', sizeof(bad.filter.fields.filename));
	EXPECT_EQ(-EINVAL, get_at(self->fd, &bad));
	bad.filter.mask = ALLOCINFO_FILTER_MASK_FUNCTION;
	memset(bad.filter.fields.function, 'x', sizeof(bad.filter.fields.function));
	EXPECT_EQ(-EINVAL, get_at(self->fd, &bad));
	bad.filter.mask = ALLOCINFO_FILTER_MASK_MODNAME;
	memset(bad.filter.fields.modname, 'x', sizeof(bad.filter.fields.modname));
	EXPECT_EQ(-EINVAL, get_at(self->fd, &bad));
	/* Other sizes, numbers and magics are not this interface. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(ALLOCINFO_IOC_BASE, 1, char[460]), buf));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(ALLOCINFO_IOC_BASE, 2, char[232]), buf));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(ALLOCINFO_IOC_BASE, 3, struct allocinfo_tag_data), buf));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(0xA7, 1, struct allocinfo_get_at), buf));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOW(ALLOCINFO_IOC_BASE, 1, struct allocinfo_get_at), buf));
	EXPECT_EQ(ENOTTY, errno);
	/* Bad pointers. */
	EXPECT_EQ(-1, ioctl(self->fd, ALLOCINFO_IOC_GET_AT, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, ALLOCINFO_IOC_CONTENT_ID, (void *)8));
	EXPECT_EQ(EFAULT, errno);
	/* Valid filters with nothing at pos: ENOENT, and the filter not kept. */
	memset(&bad, 0, sizeof(bad));
	bad.filter.mask = ALLOCINFO_FILTER_MASK_FILENAME;
	snprintf(bad.filter.fields.filename, sizeof(bad.filter.fields.filename),
		 "no/such/file.c");
	EXPECT_EQ(-ENOENT, get_at(self->fd, &bad));
	memset(&bad, 0, sizeof(bad));
	bad.filter.mask = ALLOCINFO_FILTER_MASK_LINENO;
	bad.filter.fields.lineno = 1;
	bad.pos = ~0ULL;
	EXPECT_EQ(-ENOENT, get_at(self->fd, &bad));

	/* None of that moved the walk or changed its filter. */
	ASSERT_EQ(0, get_next(self->fd, &next));
	memset(&g, 0, sizeof(g));
	g.pos = 3;
	ASSERT_EQ(0, get_at(self->fd, &g));
	EXPECT_EQ(0, memcmp(&next.tag, &g.data.tag, sizeof(next.tag)));
}

/* Two open files walk independently, and read() is not disturbed. */
TEST_F(ioc, independent_files)
{
	struct allocinfo_tag_data a, b;
	char text[256];
	int fd2 = open(AI_PATH, O_RDONLY);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, get_next(self->fd, &a));
	ASSERT_EQ(0, get_next(self->fd, &a));
	ASSERT_EQ(0, get_next(fd2, &b));
	EXPECT_NE(0, memcmp(&a.tag, &b.tag, sizeof(a.tag)));
	ASSERT_LT(0, read(self->fd, text, sizeof(text)));
	EXPECT_EQ(0, strncmp(text, AI_HEADER1, strlen(AI_HEADER1)));
	close(fd2);
}

/* The content id changes on a module load and on its unload. */
TEST_F(ioc, content_id_changes)
{
	__u64 a, b, c;

	a = content_id(self->fd);
	ASSERT_NE(~0ULL, a);
	EXPECT_EQ(a, content_id(self->fd));
	if (ai_load_module("alloc_tag_test_leak"))
		SKIP(return, "alloc_tag_test_leak.ko not loadable");
	b = content_id(self->fd);
	EXPECT_NE(a, b);
	ASSERT_EQ(0, att_ctl("kmalloc 100 1"));
	ASSERT_EQ(0, att_ctl("free kmalloc"));
	EXPECT_EQ(b, content_id(self->fd));
	ASSERT_EQ(0, ai_unload_module("alloc_tag_test_leak"));
	c = content_id(self->fd);
	EXPECT_NE(b, c);
	EXPECT_NE(a, c);
}

#else /* !HAVE_UAPI */

TEST(no_uapi)
{
	SKIP(return, "no include/uapi/linux/alloc_tag.h in this tree (upstream 6.12)");
}

#endif /* HAVE_UAPI */

TEST_HARNESS_MAIN
