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

#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

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

/* One GET_BATCH with @flags of at most @max records of @stride bytes into @out. */
static int batch_flags(int fd, void *out, __u32 stride, __u32 max, __u32 flags, __u32 *count,
		       __u64 *id)
{
	struct allocinfo_batch b = {
		.records = (uintptr_t)out,
		.record_size = stride,
		.max = max,
		.flags = flags,
		.count = 0xdeadbeef,
	};

	if (count)
		*count = 0;
	if (id)
		*id = 0;
	if (ioctl(fd, ALLOCINFO_IOC_GET_BATCH, &b))
		return -errno;
	if (count)
		*count = b.count;
	if (id)
		*id = b.content_id;
	return 0;
}

static int batch(int fd, void *out, __u32 stride, __u32 max, __u32 *count, __u64 *id)
{
	return batch_flags(fd, out, stride, max, 0, count, id);
}

/*
 * The rest of the walk by batches of @max records of @stride bytes with
 * @flags: the number of records, all under one content id (in *@id).
 */
static int batch_walk_flags(int fd, void *out, __u32 stride, int room, __u32 max, __u32 flags,
			    __u64 *id)
{
	int n = 0, ret;
	__u32 count;
	__u64 first = 0, cid;

	do {
		if (n + (int)max > room)
			return -E2BIG;
		ret = batch_flags(fd, (char *)out + (size_t)n * stride, stride, max, flags, &count,
				  &cid);
		if (ret)
			return ret;
		if (count > max)
			return -ERANGE;
		if (!n)
			first = cid;
		else if (cid != first)
			return -ESTALE;
		n += count;
	} while (count == max);
	if (id)
		*id = first;
	return n;
}

/* The rest of the walk by batches of @max: the number of records. */
static int batch_walk(int fd, struct allocinfo_tag_data *out, int room, __u32 max, __u64 *id)
{
	return batch_walk_flags(fd, out, sizeof(*out), room, max, 0, id);
}

/* The ABI of the batch command, this kernel's own. */
TEST_F(ioc, batch_abi)
{
	EXPECT_EQ(ALLOCINFO_BATCH_SIZE_VER0, sizeof(struct allocinfo_batch));
	EXPECT_EQ(32, sizeof(struct allocinfo_batch));
	EXPECT_EQ(0xc020a620u, (unsigned int)ALLOCINFO_IOC_GET_BATCH);
	EXPECT_EQ(232, sizeof(struct allocinfo_tag_record));
	EXPECT_EQ(224, offsetof(struct allocinfo_tag_record, tag_id));
	EXPECT_EQ(32, sizeof(struct allocinfo_counter_record));
	EXPECT_EQ(8, offsetof(struct allocinfo_counter_record, counter));
	EXPECT_EQ(1, ALLOCINFO_BATCH_TAG_ID);
	EXPECT_EQ(2, ALLOCINFO_BATCH_COUNTERS);
	EXPECT_EQ(4, ALLOCINFO_BATCH_RESTART);
	EXPECT_EQ(8, ALLOCINFO_BATCH_NODES);
	EXPECT_EQ(15, ALLOCINFO_BATCH_FLAGS);
	EXPECT_EQ(8, sizeof(struct allocinfo_nodes));
	EXPECT_EQ(16, sizeof(struct allocinfo_node_counter));
}

/*
 * ALLOCINFO_BATCH_RESTART: wherever the walk is, the batch starts it again
 * from its first tag, under the filter of the last GET_AT, and the walk goes
 * on after the batch's records.
 */
TEST_F(ioc, batch_restart)
{
	struct allocinfo_filter f = { .mask = ALLOCINFO_FILTER_MASK_MODNAME };
	struct allocinfo_tag_data b[2], next;
	struct allocinfo_get_at g;
	__u32 count;
	int n, i;

	n = walk(self->fd, &f, self->d, MAX_ROWS);
	ASSERT_LT(4, n);
	for (int round = 0; round < 2; round++) {
		/* Somewhere in the middle: a GET_AT at 3, then one more. */
		memset(&g, 0, sizeof(g));
		g.filter = f;
		g.pos = 3;
		ASSERT_EQ(0, get_at(self->fd, &g));
		ASSERT_EQ(0, get_next(self->fd, &next));
		ASSERT_EQ(0, batch_flags(self->fd, b, sizeof(b[0]), 2, ALLOCINFO_BATCH_RESTART,
					 &count, NULL));
		ASSERT_EQ(2, count);
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, memcmp(&b[i].tag, &self->d[i].tag, sizeof(b[i].tag)));
			ASSERT_STREQ("", b[i].tag.modname);
		}
		ASSERT_EQ(0, get_next(self->fd, &next));
		ASSERT_EQ(0, memcmp(&next.tag, &self->d[2].tag, sizeof(next.tag)));
	}
	/* At the end of the walk too, and from a fresh open (no filter). */
	ASSERT_EQ(n - 3, batch_walk(self->fd, self->d + 3, MAX_ROWS - 3, 16, NULL));
	ASSERT_EQ(0, batch_flags(self->fd, b, sizeof(b[0]), 1, ALLOCINFO_BATCH_RESTART, &count,
				 NULL));
	ASSERT_EQ(0, memcmp(&b[0].tag, &self->d[0].tag, sizeof(b[0].tag)));
	close(self->fd);
	self->fd = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, get_next(self->fd, &g.data));
	ASSERT_EQ(0, get_next(self->fd, &next));
	ASSERT_EQ(0, batch_flags(self->fd, b, sizeof(b[0]), 1, ALLOCINFO_BATCH_RESTART, &count,
				 NULL));
	ASSERT_EQ(1, count);
	ASSERT_EQ(0, memcmp(&b[0].tag, &g.data.tag, sizeof(b[0].tag)));
	ASSERT_EQ(0, get_next(self->fd, &g.data));
	ASSERT_EQ(0, memcmp(&next.tag, &g.data.tag, sizeof(next.tag)));
}

/* True if the counter's padding after @accurate is zero and accurate is 0 or 1. */
static bool counter_clean(const struct allocinfo_counter *c)
{
	const unsigned char *p = (const void *)c;

	for (size_t i = offsetof(struct allocinfo_counter, accurate) + 1; i < sizeof(*c); i++)
		if (p[i])
			return false;
	return c->accurate <= 1;
}

/*
 * Tag ids: a walk with ALLOCINFO_BATCH_TAG_ID returns the records of a
 * plain walk, each followed by an id that rises along the walk; a walk of
 * counters only (a stride above its size too) returns the same ids in the
 * same order, under the same content id, with clean counters and the rest
 * of each stride zero.
 */
TEST_F(ioc, batch_tag_ids)
{
	enum { CSTRIDE = sizeof(struct allocinfo_counter_record) + 8 };
	struct allocinfo_tag_record *r = calloc(MAX_ROWS, sizeof(*r));
	unsigned char *c = calloc(MAX_ROWS, CSTRIDE);
	__u64 id0, id1, id2;
	size_t j;
	int n, m, i;

	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, c);
	n = batch_walk(self->fd, self->d, MAX_ROWS, 256, &id0);
	ASSERT_LT(0, n);
	memset(r, 0xa5, MAX_ROWS * sizeof(*r));
	ASSERT_EQ(n, batch_walk_flags(self->fd, r, sizeof(*r), MAX_ROWS, 100,
				      ALLOCINFO_BATCH_TAG_ID, &id1));
	memset(c, 0xa5, MAX_ROWS * CSTRIDE);
	m = batch_walk_flags(self->fd, c, CSTRIDE, MAX_ROWS, 64, ALLOCINFO_BATCH_COUNTERS, &id2);
	ASSERT_EQ(n, m);
	ASSERT_EQ(id0, id1);
	ASSERT_EQ(id0, id2);
	ASSERT_EQ(id0, content_id(self->fd));
	for (i = 0; i < n; i++) {
		const struct allocinfo_counter_record *k = (const void *)(c + (size_t)i * CSTRIDE);

		ASSERT_EQ(0, memcmp(&r[i].data.tag, &self->d[i].tag, sizeof(r[i].data.tag)))
			TH_LOG("record %d", i);
		ASSERT_TRUE(counter_clean(&r[i].data.counter));
		if (i)
			ASSERT_LT(r[i - 1].tag_id, r[i].tag_id) TH_LOG("record %d", i);
		ASSERT_EQ(r[i].tag_id, k->tag_id) TH_LOG("record %d", i);
		ASSERT_TRUE(counter_clean(&k->counter)) TH_LOG("record %d", i);
		for (j = sizeof(*k); j < CSTRIDE; j++)
			ASSERT_EQ(0, c[(size_t)i * CSTRIDE + j]) TH_LOG("record %d byte %zu", i, j);
	}
	free(r);
	free(c);
}

/*
 * A reader that keeps names: the test module's kmalloc site found once by
 * name and tag id, its exact counters then read from records of counters
 * only, through allocations and frees; a filter holds for counter records
 * as for named ones.
 */
TEST_F(ioc, batch_counters_exact)
{
	struct allocinfo_filter f = { .mask = ALLOCINFO_FILTER_MASK_MODNAME };
	struct allocinfo_counter_record *k = calloc(MAX_ROWS, sizeof(*k));
	struct allocinfo_tag_record *r = calloc(MAX_ROWS, sizeof(*r));
	__u64 *mod_ids = calloc(MAX_ROWS, sizeof(*mod_ids));
	struct allocinfo_get_at g;
	struct att_site site;
	__u64 id = ~0ULL, cid1, cid2;
	int n, m, i, nmod = 0, found;

	ASSERT_NE(NULL, k);
	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, mod_ids);
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, att_site("kmalloc", &site));
	/* Names once: every tag with its id; the module's noted. */
	n = batch_walk_flags(self->fd, r, sizeof(*r), MAX_ROWS, 128, ALLOCINFO_BATCH_TAG_ID, &cid1);
	ASSERT_LT(0, n);
	for (i = 0; i < n; i++) {
		if (strcmp(r[i].data.tag.modname, TEST_MOD))
			continue;
		mod_ids[nmod++] = r[i].tag_id;
		if (r[i].data.tag.lineno == site.line &&
		    !strcmp(r[i].data.tag.filename, tail(site.file)))
			id = r[i].tag_id;
	}
	ASSERT_LT(1, nmod);
	ASSERT_NE(~0ULL, id);

	for (int round = 0; round < 2; round++) {
		long long bytes = round ? 0 : 3 * ai_kmalloc_bytes(128);
		long long calls = round ? 0 : 3;

		ASSERT_EQ(0, att_ctl(round ? "free kmalloc" : "kmalloc 100 3"));
		/* The walk is at its start again: counters only, every tag. */
		m = batch_walk_flags(self->fd, k, sizeof(*k), MAX_ROWS, 128,
				     ALLOCINFO_BATCH_COUNTERS, &cid2);
		ASSERT_EQ(n, m);
		ASSERT_EQ(cid1, cid2);
		found = 0;
		for (i = 0; i < m; i++) {
			ASSERT_EQ(r[i].tag_id, k[i].tag_id) TH_LOG("record %d", i);
			if (k[i].tag_id != id)
				continue;
			found++;
			EXPECT_EQ(bytes, (long long)k[i].counter.bytes) TH_LOG("round %d", round);
			EXPECT_EQ(calls, (long long)k[i].counter.calls) TH_LOG("round %d", round);
			EXPECT_EQ(1, k[i].counter.accurate);
		}
		EXPECT_EQ(1, found);
	}

	/*
	 * Filtered counters: GET_AT returns the module's first tag, the
	 * counter records the ids of the others, no other tag's.
	 */
	memset(&g, 0, sizeof(g));
	snprintf(f.fields.modname, sizeof(f.fields.modname), "%s", TEST_MOD);
	g.filter = f;
	ASSERT_EQ(0, get_at(self->fd, &g));
	ASSERT_STREQ(TEST_MOD, g.data.tag.modname);
	m = batch_walk_flags(self->fd, k, sizeof(*k), MAX_ROWS, 7, ALLOCINFO_BATCH_COUNTERS, NULL);
	ASSERT_EQ(nmod - 1, m);
	for (i = 0; i < m; i++)
		ASSERT_EQ(mod_ids[i + 1], k[i].tag_id) TH_LOG("record %d", i);
	free(mod_ids);
	free(k);
	free(r);
}

/*
 * Batches of any size read the same walk as GET_NEXT: every tag, in text
 * order, the last batch short, under the content id CONTENT_ID gives; then
 * the walk starts over.
 */
TEST_F(ioc, batch_equals_walk)
{
	static const __u32 sizes[] = { 1, 2, 7, 64, 1000, MAX_ROWS };
	struct allocinfo_tag_data *b = calloc(MAX_ROWS, sizeof(*b));
	__u64 id, id0;
	int n, i, k;

	ASSERT_NE(NULL, b);
	id0 = content_id(self->fd);
	n = 0;
	while (n < MAX_ROWS && !get_next(self->fd, &self->d[n]))
		n++;
	ASSERT_LT(0, n);
	ASSERT_EQ(0, text_rows(&self->text));
	ASSERT_EQ(self->text.n, n);
	for (k = 0; k < (int)ARRAY_SIZE(sizes); k++) {
		memset(b, 0xa5, MAX_ROWS * sizeof(*b));
		ASSERT_EQ(n, batch_walk(self->fd, b, MAX_ROWS, sizes[k], &id))
			TH_LOG("batches of %u", sizes[k]);
		EXPECT_EQ(id0, id);
		/* Whole records, byte for byte as GET_NEXT wrote them. */
		for (i = 0; i < n; i++) {
			ASSERT_EQ(0, memcmp(&b[i].tag, &self->d[i].tag, sizeof(b[i].tag)))
				TH_LOG("batches of %u, record %d", sizes[k], i);
			ASSERT_TRUE(same_site(&b[i], &self->text.r[i]));
			ASSERT_LE(b[i].counter.accurate, 1);
		}
	}
	EXPECT_EQ(id0, content_id(self->fd));
}

/* Batches go on from GET_AT and GET_NEXT, with GET_AT's filter. */
TEST_F(ioc, batch_continues_walk)
{
	struct allocinfo_filter f = { .mask = ALLOCINFO_FILTER_MASK_MODNAME };
	struct allocinfo_tag_data b[4], next;
	struct allocinfo_get_at g;
	__u32 count;
	int n, k;

	/* Built-in tags, by GET_AT + GET_NEXT. */
	n = walk(self->fd, &f, self->d, MAX_ROWS);
	ASSERT_LT(8, n);
	memset(&g, 0, sizeof(g));
	g.filter = f;
	g.pos = 2;
	ASSERT_EQ(0, get_at(self->fd, &g));
	ASSERT_EQ(0, batch(self->fd, b, sizeof(b[0]), 4, &count, NULL));
	ASSERT_EQ(4, count);
	for (k = 0; k < 4; k++) {
		ASSERT_EQ(0, memcmp(&b[k].tag, &self->d[3 + k].tag, sizeof(b[k].tag)));
		ASSERT_STREQ("", b[k].tag.modname);
	}
	ASSERT_EQ(0, get_next(self->fd, &next));
	ASSERT_EQ(0, memcmp(&next.tag, &self->d[7].tag, sizeof(next.tag)));
	ASSERT_EQ(0, batch(self->fd, b, sizeof(b[0]), 1, &count, NULL));
	ASSERT_EQ(1, count);
	ASSERT_EQ(0, memcmp(&b[0].tag, &self->d[8].tag, sizeof(b[0].tag)));

	/* The filter holds to its end; then the walk starts over, filtered. */
	ASSERT_EQ(n - 9, batch_walk(self->fd, self->d + 9, MAX_ROWS - 9, 4, NULL));
	ASSERT_EQ(0, batch(self->fd, b, sizeof(b[0]), 1, &count, NULL));
	ASSERT_EQ(1, count);
	ASSERT_EQ(0, memcmp(&b[0].tag, &self->d[0].tag, sizeof(b[0].tag)));
}

/* A stride above the structure's size: records there, the rest zeroed. */
TEST_F(ioc, batch_record_size)
{
	enum { STRIDE = sizeof(struct allocinfo_tag_data) + 40, N = 5 };
	unsigned char buf[STRIDE * (N + 1)];
	struct allocinfo_tag_data d;
	__u32 count;
	int i, j, fd2;

	memset(buf, 0xa5, sizeof(buf));
	ASSERT_EQ(0, batch(self->fd, buf, STRIDE, N, &count, NULL));
	ASSERT_EQ(N, count);
	ASSERT_EQ(0, get_next(self->fd, &d));
	for (i = 0; i < N; i++) {
		const struct allocinfo_tag_data *r = (const void *)(buf + i * STRIDE);

		ASSERT_TRUE(padded(r->tag.filename));
		ASSERT_LE(r->counter.accurate, 1);
		for (j = sizeof(d); j < STRIDE; j++)
			ASSERT_EQ(0, buf[i * STRIDE + j]) TH_LOG("record %d byte %d", i, j);
	}
	/* Nothing past the last record. */
	for (j = 0; j < STRIDE; j++)
		ASSERT_EQ(0xa5, buf[N * STRIDE + j]);
	/* The same tags as the first six of a GET_NEXT walk. */
	fd2 = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, fd2);
	for (i = 0; i <= N; i++) {
		ASSERT_EQ(0, get_next(fd2, &self->d[i]));
		ASSERT_EQ(0, memcmp(i < N ? buf + i * STRIDE : (void *)&d, &self->d[i].tag,
				    sizeof(d.tag)));
	}
	close(fd2);
}

/*
 * Bad requests: the documented errno, nothing written to the records, and
 * the walk where it was.
 */
TEST_F(ioc, batch_bad_input)
{
	struct allocinfo_tag_data first, second, one;
	struct allocinfo_batch b;
	unsigned char big[sizeof(b) + 8];
	long page = sysconf(_SC_PAGESIZE);
	char *map;
	__u32 count;
	int fd2;

	ASSERT_EQ(0, get_next(self->fd, &first));
	memset(&one, 0xa5, sizeof(one));
	EXPECT_EQ(-EINVAL, batch(self->fd, &one, sizeof(one), 0, NULL, NULL));
	EXPECT_EQ(-EINVAL, batch(self->fd, &one, sizeof(one), ALLOCINFO_BATCH_MAX + 1, NULL, NULL));
	EXPECT_EQ(-EINVAL, batch(self->fd, &one, sizeof(one) - 1, 1, NULL, NULL));
	EXPECT_EQ(-EINVAL, batch(self->fd, &one, 0, 1, NULL, NULL));
	EXPECT_EQ(-EINVAL, batch(self->fd, &one, ALLOCINFO_RECORD_SIZE_MAX + 8, 1, NULL, NULL));
	/* Each kind of record checks its own size. */
	EXPECT_EQ(-EINVAL, batch_flags(self->fd, &one, sizeof(one), 1, ALLOCINFO_BATCH_TAG_ID,
				       NULL, NULL));
	EXPECT_EQ(-EINVAL, batch_flags(self->fd, &one, sizeof(struct allocinfo_counter_record) - 1,
				       1, ALLOCINFO_BATCH_COUNTERS, NULL, NULL));
	EXPECT_EQ(-EINVAL, batch_flags(self->fd, &one, ALLOCINFO_RECORD_SIZE_MAX + 1, 1,
				       ALLOCINFO_BATCH_COUNTERS, NULL, NULL));
	EXPECT_EQ(-EINVAL, batch_flags(self->fd, &one, sizeof(one), 0, ALLOCINFO_BATCH_COUNTERS,
				       NULL, NULL));
	memset(&b, 0, sizeof(b));
	b.records = (uintptr_t)&one;
	b.record_size = sizeof(one);
	b.max = 1;
	b.flags = ALLOCINFO_BATCH_FLAGS + 1;
	EXPECT_EQ(-1, ioctl(self->fd, ALLOCINFO_IOC_GET_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
	b.flags = 1U << 31;
	EXPECT_EQ(-1, ioctl(self->fd, ALLOCINFO_IOC_GET_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
	b.flags = 0;
	/* Smaller than the first version: EINVAL; another direction: ENOTTY. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(ALLOCINFO_IOC_BASE, 32, char[24]), &b));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(ALLOCINFO_IOC_BASE, 32, char[0]), &b));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOR(ALLOCINFO_IOC_BASE, 32, struct allocinfo_batch), &b));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOW(ALLOCINFO_IOC_BASE, 32, struct allocinfo_batch), &b));
	EXPECT_EQ(ENOTTY, errno);
	/* A later version's field this kernel does not know, set: E2BIG. */
	memset(big, 0, sizeof(big));
	memcpy(big, &b, sizeof(b));
	big[sizeof(b) + 3] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(ALLOCINFO_IOC_BASE, 32, char[sizeof(big)]), big));
	EXPECT_EQ(E2BIG, errno);
	/* Bad pointers: the request, the records, records that end in a hole. */
	EXPECT_EQ(-1, ioctl(self->fd, ALLOCINFO_IOC_GET_BATCH, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-EFAULT, batch(self->fd, NULL, sizeof(one), 1, NULL, NULL));
	EXPECT_EQ(-EFAULT, batch(self->fd, (void *)8, sizeof(one), 4, NULL, NULL));
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page, page));
	EXPECT_EQ(-EFAULT, batch(self->fd, map, sizeof(one), page / sizeof(one) + 1, NULL, NULL));
	/* Nothing written to the records of the EINVAL calls. */
	for (size_t i = 0; i < sizeof(one); i++)
		ASSERT_EQ(0xa5, ((unsigned char *)&one)[i]);

	/*
	 * None of it moved the walk: a zero tail is the first version, and it
	 * goes on with the second tag.
	 */
	memset(big, 0, sizeof(big));
	memcpy(big, &b, sizeof(b));
	ASSERT_EQ(0, ioctl(self->fd, _IOWR(ALLOCINFO_IOC_BASE, 32, char[sizeof(big)]), big));
	memcpy(&b, big, sizeof(b));
	EXPECT_EQ(1, b.count);
	EXPECT_EQ(content_id(self->fd), b.content_id);
	fd2 = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, get_next(fd2, &second));
	EXPECT_EQ(0, memcmp(&second.tag, &first.tag, sizeof(first.tag)));
	ASSERT_EQ(0, get_next(fd2, &second));
	EXPECT_EQ(0, memcmp(&second.tag, &one.tag, sizeof(one.tag)));
	close(fd2);

	/* Records that end just before the hole. */
	EXPECT_EQ(0, batch(self->fd, map, sizeof(one), page / sizeof(one), &count, NULL));
	EXPECT_EQ(page / sizeof(one), count);
	ASSERT_EQ(0, munmap(map, page));
}

/*
 * A module unloads between two batches: the next batch reports another
 * content id, and still returns whole, well-formed records; a walk started
 * again returns the text's rows (alloc_tag_test_leak's among them: it
 * leaks on purpose, so its rows stay after the unload).
 */
TEST_F(ioc, batch_module_unload_mid_walk)
{
	struct allocinfo_tag_data *b = self->d;
	__u64 id1, id2;
	__u32 count;
	int n, i;

	if (ai_load_module("alloc_tag_test_leak"))
		SKIP(return, "alloc_tag_test_leak.ko not loadable");
	ASSERT_EQ(0, batch(self->fd, b, sizeof(*b), 5, &count, &id1));
	ASSERT_EQ(5, count);
	ASSERT_EQ(0, ai_unload_module("alloc_tag_test_leak"));
	ASSERT_EQ(0, batch(self->fd, b, sizeof(*b), MAX_ROWS, &count, &id2));
	EXPECT_NE(id1, id2);
	EXPECT_EQ(id2, content_id(self->fd));
	ASSERT_LT(0, count);
	ASSERT_GT(MAX_ROWS, count);
	for (i = 0; i < (int)count; i++) {
		ASSERT_TRUE(padded(b[i].tag.filename));
		ASSERT_TRUE(padded(b[i].tag.function));
		ASSERT_TRUE(padded(b[i].tag.modname));
		ASSERT_LE(b[i].counter.accurate, 1);
	}
	/* Started again: the rows of the text, none of the module's. */
	n = batch_walk(self->fd, b, MAX_ROWS, 100, NULL);
	ASSERT_EQ(0, text_rows(&self->text));
	ASSERT_EQ(self->text.n, n);
	for (i = 0; i < n; i++)
		ASSERT_TRUE(same_site(&b[i], &self->text.r[i]));
}

#else /* !HAVE_UAPI */

TEST(no_uapi)
{
	SKIP(return, "no include/uapi/linux/alloc_tag.h in this tree (upstream 6.12)");
}

#endif /* HAVE_UAPI */

TEST_HARNESS_MAIN
