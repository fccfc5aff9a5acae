// SPDX-License-Identifier: GPL-2.0
/*
 * Page migration keeps the books straight: fragment memory with user pages,
 * compact it (which migrates pages), and check that no row is negative and
 * that no row holds bytes without live allocations.
 *
 * Upstream 6.12 copies the tag on migration and uncharges the migration
 * target's tag by a page count instead of bytes, so after compaction rows
 * are left with bytes but no calls: a known upstream defect, fixed by the
 * Rust core's swap.  On upstream the test runs compaction and reports what
 * it found without failing.
 */
#include "alloc_tag_util.h"

#include <sys/mman.h>

#include "../kselftest_harness.h"

#define COMPACT		"/proc/sys/vm/compact_memory"
#define FRAG_BYTES	(192UL << 20)
#define CHUNK		(64UL << 10)

struct books {
	int negative, bytes_without_calls;
	char first[400];
};

static int audit(const struct ai_row *r, void *arg)
{
	struct books *b = arg;
	bool neg = r->bytes < 0 || r->calls > (1ULL << 62);
	bool orphan = r->calls == 0 && r->bytes != 0;

	b->negative += neg;
	b->bytes_without_calls += orphan;
	if ((neg || orphan) && !b->first[0])
		snprintf(b->first, sizeof(b->first), "%lld %llu %s:%u func:%s",
			 r->bytes, r->calls, r->file, r->line, r->func);
	return 0;
}

static int read_books(struct books *b)
{
	memset(b, 0, sizeof(*b));
	return ai_walk(audit, b);
}

TEST(compaction_no_negative_rows)
{
	struct books before, after;
	bool upstream = !strcmp(ai_base(), "upstream");
	char *p;
	int fd;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (access(COMPACT, W_OK))
		SKIP(return, COMPACT " missing: kernel without CONFIG_COMPACTION");
	if (ai_sysctl_read() != 1)
		SKIP(return, "profiling is off");
	ASSERT_EQ(0, read_books(&before));

	/* Fill, then free every other chunk: movable pages scattered all over. */
	p = mmap(NULL, FRAG_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (unsigned long off = 0; off < FRAG_BYTES; off += 4096)
		p[off] = 1;
	for (unsigned long off = 0; off < FRAG_BYTES; off += 2 * CHUNK)
		ASSERT_EQ(0, munmap(p + off, CHUNK));

	fd = open(COMPACT, O_WRONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, write(fd, "1", 1));
	close(fd);

	ASSERT_EQ(0, read_books(&after));
	for (unsigned long off = CHUNK; off < FRAG_BYTES; off += 2 * CHUNK)
		munmap(p + off, CHUNK);

	TH_LOG("before: %d negative, %d with bytes but no calls; after: %d, %d%s%s",
	       before.negative, before.bytes_without_calls, after.negative,
	       after.bytes_without_calls, after.first[0] ? "; first: " : "", after.first);
	if (upstream) {
		if (after.negative || after.bytes_without_calls)
			TH_LOG("upstream defect: tags copied on migration leave bad rows");
		return;
	}
	EXPECT_EQ(0, after.negative);
	EXPECT_EQ(0, after.bytes_without_calls);
}

TEST_HARNESS_MAIN
