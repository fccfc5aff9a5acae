// SPDX-License-Identifier: GPL-2.0
/*
 * Per-node attribution (CONFIG_MEM_ALLOC_PROFILING_NUMA, alloc_tag_node=1):
 * GET_BATCH with ALLOCINFO_BATCH_NODES and /sys/kernel/debug/allocinfo_nodes.
 *
 * - The view: every node id with attribution on, one node holding the row
 *   on a one-node kernel, EOPNOTSUPP (and ENODEV from the debugfs file) on
 *   a multi-node kernel booted without alloc_tag_node=1.
 * - Exact per-node deltas for alloc_pages_node() and kmalloc_node() on each
 *   node from the test module; their frees return every node to its start.
 * - Pages moved between nodes with move_pages(2) move their bytes and calls
 *   between the node columns of their tag, the row unchanged, and back.
 * - The nodes of every quiet tag add up to its row, in the ioctl and in
 *   the debugfs file.
 */
#include "alloc_tag_util.h"

#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#if __has_include("../../../../include/uapi/linux/alloc_tag.h")
#include "../../../../include/uapi/linux/alloc_tag.h"
#endif

#include "../kselftest_harness.h"

#ifdef ALLOCINFO_BATCH_NODES

#define PAGE		4096LL
#define MAX_NODES	64
#define NODES_PATH	"/sys/kernel/debug/allocinfo_nodes"

struct node_row {
	long long bytes, calls;
	long long node_bytes[MAX_NODES], node_calls[MAX_NODES];
	int nr_nodes;
};

/* The stride of a record of @kind_size bytes with @nodes nodes after it. */
static size_t stride_for(size_t kind_size, int nodes)
{
	size_t s = kind_size + sizeof(struct allocinfo_nodes) +
		   nodes * sizeof(struct allocinfo_node_counter);

	return (s + 7) & ~(size_t)7;
}

/* Node ids of the machine (the highest possible node + 1). */
static int possible_nodes(void)
{
	char *s = ai_slurp("/sys/devices/system/node/possible", 64, NULL);
	char *p;
	int last = 0;

	if (!s)
		return 1;
	for (p = s; *p; p++)
		if (*p >= '0' && *p <= '9' && (p == s || p[-1] < '0' || p[-1] > '9'))
			last = atoi(p);
	free(s);
	return last + 1;
}

static const char *tail(const char *s)
{
	size_t n = strlen(s);

	return n > ALLOCINFO_STR_SIZE - 1 ? s + n - (ALLOCINFO_STR_SIZE - 1) : s;
}

/*
 * The row and nodes of the tag at @file:@line of module @mod (NULL: any)
 * through GET_AT's filter and one GET_BATCH of one record.  0, or -errno.
 */
static int read_node_row(int fd, const char *file, unsigned int line,
			 const char *mod, int nodes, struct node_row *out)
{
	struct allocinfo_get_at at = { 0 };
	struct allocinfo_batch b = { 0 };
	size_t stride = stride_for(sizeof(struct allocinfo_tag_data), nodes);
	unsigned char rec[1024] = { 0 };
	struct allocinfo_tag_data *d = (void *)rec;
	struct allocinfo_nodes *n = (void *)(rec + sizeof(*d));

	at.filter.mask = ALLOCINFO_FILTER_MASK_FILENAME | ALLOCINFO_FILTER_MASK_LINENO;
	snprintf(at.filter.fields.filename, ALLOCINFO_STR_SIZE, "%s", tail(file));
	at.filter.fields.lineno = line;
	if (mod) {
		at.filter.mask |= ALLOCINFO_FILTER_MASK_MODNAME;
		snprintf(at.filter.fields.modname, ALLOCINFO_STR_SIZE, "%s", mod);
	}
	if (ioctl(fd, ALLOCINFO_IOC_GET_AT, &at))
		return -errno;
	if (stride > sizeof(rec))
		return -E2BIG;
	b.records = (uintptr_t)rec;
	b.record_size = stride;
	b.max = 1;
	b.flags = ALLOCINFO_BATCH_NODES | ALLOCINFO_BATCH_RESTART;
	if (ioctl(fd, ALLOCINFO_IOC_GET_BATCH, &b))
		return -errno;
	if (b.count != 1)
		return -ENOENT;
	out->bytes = (long long)d->counter.bytes;
	out->calls = (long long)d->counter.calls;
	out->nr_nodes = n->nr_nodes;
	if (n->nr_nodes > MAX_NODES)
		return -E2BIG;
	for (unsigned int i = 0; i < n->nr_nodes; i++) {
		out->node_bytes[i] = n->node[i].bytes;
		out->node_calls[i] = n->node[i].calls;
	}
	return 0;
}

FIXTURE(nodes) {
	int fd;
	int nodes;		/* node ids, the view's length */
	int online;		/* online nodes */
	bool on;		/* alloc_tag_node=1 */
};

FIXTURE_SETUP(nodes)
{
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (ai_is_upstream())
		SKIP(return, "upstream 6.12 has no per-node attribution");
	self->fd = open(AI_PATH, O_RDONLY);
	ASSERT_LE(0, self->fd);
	self->nodes = possible_nodes();
	self->on = ai_cmdline_has("alloc_tag_node=1");
	self->online = access(ATT_DIR, F_OK) ? 0 : att_info("online_nodes");
	ASSERT_LE(self->nodes, MAX_NODES);
}

FIXTURE_TEARDOWN(nodes)
{
	if (self->fd >= 0)
		close(self->fd);
	att_ctl("free node");
	att_ctl("free knode");
}

/*
 * Which boots have a view: with attribution on, one entry per node id;
 * one node without it on a one-node machine; none (EOPNOTSUPP, ENODEV)
 * on a multi-node machine without it.
 */
TEST_F(nodes, view)
{
	unsigned char rec[1024] = { 0 };
	struct allocinfo_nodes *n = (void *)(rec + sizeof(struct allocinfo_counter_record));
	struct allocinfo_batch b = {
		.records = (uintptr_t)rec,
		.record_size = stride_for(sizeof(struct allocinfo_counter_record),
					  self->nodes),
		.max = 1,
		.flags = ALLOCINFO_BATCH_NODES | ALLOCINFO_BATCH_COUNTERS,
	};
	int ret;

	ret = ioctl(self->fd, ALLOCINFO_IOC_GET_BATCH, &b) ? -errno : 0;
	if (self->on || self->nodes == 1) {
		char *text = ai_slurp(NODES_PATH, 1 << 16, NULL);
		char head[64];

		EXPECT_EQ(0, ret);
		EXPECT_EQ(1, b.count);
		EXPECT_EQ(self->nodes, n->nr_nodes);
		ASSERT_NE(NULL, text) TH_LOG("%s: %s", NODES_PATH, strerror(errno));
		snprintf(head, sizeof(head), "allocinfo nodes - version: 1.0, nodes: %d\n",
			 self->nodes);
		EXPECT_EQ(0, strncmp(text, head, strlen(head))) TH_LOG("%.80s", text);
		free(text);
	} else {
		int fd = open(NODES_PATH, O_RDONLY);
		char c;

		EXPECT_EQ(-EOPNOTSUPP, ret);
		ASSERT_LE(0, fd);
		EXPECT_EQ(-1, read(fd, &c, 1));
		EXPECT_EQ(ENODEV, errno);
		close(fd);
	}
	if (ai_cmdline_has("allocprof_numa"))
		EXPECT_GE(self->nodes, 2);
}

static bool memory_line(unsigned long long seq, const char *msg, void *arg)
{
	long long *v = arg;
	const char *p = strstr(msg, "per-node attribution on: ");

	const char *fmt = "per-node attribution on: %lld nodes, %lld bytes for vmlinux's %lld tags";

	return p && sscanf(p, fmt, &v[0], &v[1], &v[2]) == 3;
}

/*
 * The memory the boot log reports for vmlinux's correction pairs is the
 * documented 16 bytes per node and tag.
 */
TEST_F(nodes, memory)
{
	long long v[3] = { 0 };
	int fd;

	if (!self->on)
		SKIP(return, "per-node attribution off in this boot");
	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_TRUE(ai_kmsg_each(fd, memory_line, v)) TH_LOG("no boot log line");
	close(fd);
	EXPECT_EQ(self->nodes, v[0]);
	EXPECT_GT(v[2], 100);
	EXPECT_EQ(v[2] * v[0] * 16, v[1]);
	TH_LOG("%lld tags x %lld nodes: %lld bytes", v[2], v[0], v[1]);
}

/*
 * A malformed alloc_tag_node= (the rust-numa boot node-bad gives "abc"):
 * one error line naming it, and attribution stays off (the view test
 * then wants the off answers).
 */
TEST_F(nodes, bad_param)
{
	if (!ai_cmdline_has("alloc_tag_node=abc"))
		SKIP(return, "not the node-bad boot (alloc_tag_node=abc)");
	EXPECT_FALSE(self->on);
	EXPECT_TRUE(ai_kmsg_has("alloc_tag_node=abc: expected 0 or 1", NULL));
	EXPECT_FALSE(ai_kmsg_has("per-node attribution on", NULL));
}

/* A record too small for the nodes: EINVAL, the walk unmoved. */
TEST_F(nodes, bad_stride)
{
	unsigned char rec[1024];
	struct allocinfo_batch b = {
		.records = (uintptr_t)rec,
		.max = 1,
		.flags = ALLOCINFO_BATCH_NODES | ALLOCINFO_BATCH_COUNTERS,
	};

	if (!self->on && self->nodes > 1)
		SKIP(return, "no per-node view in this boot");
	b.record_size = stride_for(sizeof(struct allocinfo_counter_record),
				   self->nodes) - 8;
	EXPECT_EQ(-1, ioctl(self->fd, ALLOCINFO_IOC_GET_BATCH, &b));
	EXPECT_EQ(EINVAL, errno);
	b.record_size += 8;
	EXPECT_EQ(0, ioctl(self->fd, ALLOCINFO_IOC_GET_BATCH, &b));
	EXPECT_EQ(1, b.count);
}

/* @kind's site of the test module: its row and nodes now. */
static int site_row(int fd, const char *kind, int nodes, struct node_row *r)
{
	struct att_site s;

	if (att_site(kind, &s))
		return -ENOENT;
	return read_node_row(fd, s.file, s.line, "alloc_tag_test", nodes, r);
}

/* The nodes add up to the row. */
#define EXPECT_SUMS(r) do {							\
	const struct node_row *r_ = &(r);					\
	long long b_ = 0, c_ = 0;						\
	for (int i_ = 0; i_ < r_->nr_nodes; i_++) {				\
		b_ += r_->node_bytes[i_];					\
		c_ += r_->node_calls[i_];					\
	}									\
	EXPECT_EQ(r_->bytes, b_);						\
	EXPECT_EQ(r_->calls, c_);						\
} while (0)

/*
 * @cmd NODE N on every online node n in turn, N = n + 1: node n's column
 * grows by N * @unit bytes and N calls, every other column stays, and
 * freeing returns every column to its start.
 */
struct view {
	int fd, nodes, online;
	bool on;
};

static void per_node_exact(struct __test_metadata *_metadata,
			   const struct view *v, const char *kind, long long unit)
{
	struct node_row start, now;

	if (!v->on && v->nodes > 1)
		SKIP(return, "no per-node view in this boot");
	if (!v->online)
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, site_row(v->fd, kind, v->nodes, &start));
	ASSERT_EQ(v->nodes, start.nr_nodes);
	for (int n = 0; n < v->online; n++) {
		ASSERT_EQ(0, att_ctl("%s %d %d", kind, n, n + 1)) TH_LOG("node %d", n);
		ASSERT_EQ(0, site_row(v->fd, kind, v->nodes, &now));
		EXPECT_SUMS(now);
		for (int m = 0; m < v->nodes; m++) {
			long long k = m <= n ? m + 1 : 0;

			EXPECT_EQ(start.node_bytes[m] + k * unit, now.node_bytes[m])
				TH_LOG("%s on node %d: node %d bytes", kind, n, m);
			EXPECT_EQ(start.node_calls[m] + k, now.node_calls[m])
				TH_LOG("%s on node %d: node %d calls", kind, n, m);
		}
	}
	ASSERT_EQ(0, att_ctl("free %s", kind));
	ASSERT_EQ(0, site_row(v->fd, kind, v->nodes, &now));
	for (int m = 0; m < v->nodes; m++) {
		EXPECT_EQ(start.node_bytes[m], now.node_bytes[m]) TH_LOG("node %d", m);
		EXPECT_EQ(start.node_calls[m], now.node_calls[m]) TH_LOG("node %d", m);
	}
	TH_LOG("%s: %d online nodes of %d", kind, v->online, v->nodes);
}

#define VIEW { self->fd, self->nodes, self->online, self->on }

TEST_F(nodes, alloc_pages_node)
{
	const struct view v = VIEW;

	per_node_exact(_metadata, &v, "node", PAGE);
}

TEST_F(nodes, kmalloc_node)
{
	const struct view v = VIEW;

	per_node_exact(_metadata, &v, "knode", ai_kmalloc_bytes(256));
}

/* A whole walk by GET_BATCH: records with tag ids and nodes. */
struct snap {
	unsigned char *buf;
	size_t stride;
	unsigned int count;
};

#define SNAP_MAX 16384

/* Room for a whole walk, its pages faulted in now, not while it is read. */
static int snap_alloc(int nodes, struct snap *s)
{
	s->stride = stride_for(sizeof(struct allocinfo_tag_record), nodes);
	s->buf = malloc(SNAP_MAX * s->stride);
	if (!s->buf)
		return -ENOMEM;
	/* Not zero: malloc() and a zeroing memset() may become calloc(). */
	memset(s->buf, 0xa5, SNAP_MAX * s->stride);
	return 0;
}

static int snapshot(int fd, int nodes, struct snap *s)
{
	unsigned int max = SNAP_MAX;
	struct allocinfo_batch b = { 0 };

	if (!s->buf && snap_alloc(nodes, s))
		return -ENOMEM;
	b.records = (uintptr_t)s->buf;
	b.record_size = s->stride;
	b.max = max;
	b.flags = ALLOCINFO_BATCH_NODES | ALLOCINFO_BATCH_TAG_ID | ALLOCINFO_BATCH_RESTART;
	if (ioctl(fd, ALLOCINFO_IOC_GET_BATCH, &b))
		return -errno;
	s->count = b.count;
	return 0;
}

static struct allocinfo_tag_record *rec_at(struct snap *s, unsigned int i)
{
	return (void *)(s->buf + i * s->stride);
}

static struct allocinfo_nodes *rec_nodes(struct snap *s, unsigned int i)
{
	return (void *)(s->buf + i * s->stride + sizeof(struct allocinfo_tag_record));
}

/*
 * 64 anonymous pages, moved with move_pages(2) to node 0, then to node 1,
 * then back: exactly one tag moves 64 pages and 64 calls from node 0's
 * column to node 1's with its row unchanged, and back again.  Then
 * compaction (/proc/sys/vm/compact_memory), whose migrations stay within
 * a node: that tag's columns do not move.
 */
TEST_F(nodes, move_pages)
{
	enum { NPAGES = 64 };
	struct snap a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	void *pages[NPAGES];
	int to[NPAGES], status[NPAGES];
	unsigned int moved = 0, back = 0, mi = 0;
	int bad = -1;
	char *area;

	if (!self->on)
		SKIP(return, "per-node attribution off in this boot");
	if (self->online < 2)
		SKIP(return, "one online node");
	ASSERT_EQ(0, snap_alloc(self->nodes, &a));
	ASSERT_EQ(0, snap_alloc(self->nodes, &b));
	ASSERT_EQ(0, snap_alloc(self->nodes, &c));
	ASSERT_EQ(0, snap_alloc(self->nodes, &d));
	area = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	madvise(area, NPAGES * PAGE, MADV_NOHUGEPAGE);
	for (int i = 0; i < NPAGES; i++) {
		area[i * PAGE] = 1;
		pages[i] = area + i * PAGE;
	}
	for (int dst = 0; dst < 3; dst++) {
		for (int i = 0; i < NPAGES; i++)
			to[i] = dst == 1;
		ASSERT_EQ(0, syscall(__NR_move_pages, 0, NPAGES, pages, to, status, 0))
			TH_LOG("move_pages: %s", strerror(errno));
		for (int i = 0; i < NPAGES; i++)
			if (status[i] != to[i])
				bad = i;
		ASSERT_EQ(-1, bad) TH_LOG("page %d on node %d", bad, status[bad]);
		ASSERT_EQ(0, snapshot(self->fd, self->nodes, dst == 0 ? &a : dst == 1 ? &b : &c));
	}
	ASSERT_EQ(0, ai_write("/proc/sys/vm/compact_memory", "1", 1));
	ASSERT_EQ(0, snapshot(self->fd, self->nodes, &d));
	ASSERT_EQ(a.count, b.count);
	ASSERT_EQ(a.count, c.count);
	ASSERT_EQ(a.count, d.count);
	for (unsigned int i = 0; i < a.count; i++) {
		struct allocinfo_tag_record *ra = rec_at(&a, i), *rb = rec_at(&b, i);
		struct allocinfo_tag_record *rc = rec_at(&c, i);
		struct allocinfo_nodes *na = rec_nodes(&a, i), *nb = rec_nodes(&b, i);
		struct allocinfo_nodes *nc = rec_nodes(&c, i);

		ASSERT_EQ(ra->tag_id, rb->tag_id);
		if (na->node[0].bytes != nb->node[0].bytes ||
		    na->node[1].bytes != nb->node[1].bytes)
			TH_LOG("changed: %s:%llu %s: bytes %lld>%lld N0 %lld>%lld N1 %lld>%lld",
			       rb->data.tag.filename, (unsigned long long)rb->data.tag.lineno,
			       rb->data.tag.function, (long long)ra->data.counter.bytes,
			       (long long)rb->data.counter.bytes, na->node[0].bytes,
			       nb->node[0].bytes, na->node[1].bytes, nb->node[1].bytes);
		if (ra->data.counter.bytes != rb->data.counter.bytes ||
		    ra->data.counter.calls != rb->data.counter.calls)
			continue;
		if (nb->node[1].bytes - na->node[1].bytes == NPAGES * PAGE &&
		    na->node[0].bytes - nb->node[0].bytes == NPAGES * PAGE &&
		    nb->node[1].calls - na->node[1].calls == NPAGES &&
		    na->node[0].calls - nb->node[0].calls == NPAGES) {
			moved++;
			mi = i;
			TH_LOG("moved: %s:%llu func:%s", rb->data.tag.filename,
			       (unsigned long long)rb->data.tag.lineno, rb->data.tag.function);
			if (nc->node[0].bytes == na->node[0].bytes &&
			    nc->node[1].bytes == na->node[1].bytes &&
			    nc->node[0].calls == na->node[0].calls &&
			    nc->node[1].calls == na->node[1].calls &&
			    rc->data.counter.bytes == ra->data.counter.bytes)
				back++;
		}
	}
	EXPECT_EQ(1, moved);
	EXPECT_EQ(1, back);
	if (moved == 1) {
		struct allocinfo_tag_record *rc = rec_at(&c, mi), *rd = rec_at(&d, mi);
		struct allocinfo_nodes *nc = rec_nodes(&c, mi), *nd = rec_nodes(&d, mi);

		ASSERT_EQ(rc->data.counter.bytes, rd->data.counter.bytes);
		for (int k = 0; k < self->nodes; k++) {
			EXPECT_EQ(nc->node[k].bytes, nd->node[k].bytes) TH_LOG("node %d", k);
			EXPECT_EQ(nc->node[k].calls, nd->node[k].calls) TH_LOG("node %d", k);
		}
	}
	free(d.buf);
	free(a.buf);
	free(b.buf);
	free(c.buf);
	munmap(area, NPAGES * PAGE);
}

/*
 * The nodes of every tag of the test module add up to its row (quiet
 * tags; a busy tag's may differ by a charge in flight), through the ioctl,
 * and the debugfs file has one row per node holding some of a tag.
 */
TEST_F(nodes, sums)
{
	struct snap s = { 0 };
	unsigned int checked = 0;

	if (!self->on && self->nodes > 1)
		SKIP(return, "no per-node view in this boot");
	if (self->online)
		ASSERT_EQ(0, att_ctl("node 0 3"));
	ASSERT_EQ(0, snapshot(self->fd, self->nodes, &s));
	for (unsigned int i = 0; i < s.count; i++) {
		struct allocinfo_tag_record *r = rec_at(&s, i);
		struct allocinfo_nodes *n = rec_nodes(&s, i);
		long long b = 0, c = 0;

		ASSERT_EQ(self->nodes, n->nr_nodes);
		if (strcmp(r->data.tag.modname, "alloc_tag_test"))
			continue;
		for (int k = 0; k < self->nodes; k++) {
			b += n->node[k].bytes;
			c += n->node[k].calls;
		}
		EXPECT_EQ((long long)r->data.counter.bytes, b) TH_LOG("%s", r->data.tag.function);
		EXPECT_EQ((long long)r->data.counter.calls, c) TH_LOG("%s", r->data.tag.function);
		checked++;
	}
	if (self->online) {
		struct att_site site;
		char *text = ai_slurp(NODES_PATH, 1 << 16, NULL), *p;
		char want[512];
		int rows = 0;

		EXPECT_GT(checked, 0);
		ASSERT_EQ(0, att_site("node", &site));
		ASSERT_NE(NULL, text);
		/* The row's tag info, then its trailing space and newline. */
		snprintf(want, sizeof(want), " N0 %s:%u [alloc_tag_test] func:%s",
			 site.file, site.line, site.func);
		for (p = text; (p = strstr(p, want)); p++)
			if (p[strlen(want)] == ' ' && p[strlen(want) + 1] == '\n')
				rows++;
		EXPECT_EQ(1, rows) TH_LOG("%s", want);
		free(text);
	}
	free(s.buf);
}

#else

TEST(nodes_unavailable)
{
	SKIP(return, "no ALLOCINFO_BATCH_NODES in the UAPI header");
}

#endif

TEST_HARNESS_MAIN
