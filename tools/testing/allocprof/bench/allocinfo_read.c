// SPDX-License-Identifier: GPL-2.0
/*
 * Times full reads of /proc/allocinfo.  With no argument it makes READS
 * reads of the whole file in 128 KiB read() calls, as cat does, and prints
 *   allocinfo_read: rows=<n> bytes=<n> median_ns=<n> min_ns=<n> max_ns=<n>
 * then, where the kernel has the ioctls, READS walks of every tag by
 * ALLOCINFO_IOC_GET_NEXT, READS by ALLOCINFO_IOC_GET_BATCH of BATCH records
 * (where the kernel has it), READS of counter records only by GET_BATCH with
 * ALLOCINFO_BATCH_COUNTERS (where it has that), and READS filtered reads (GET_AT + GET_NEXT
 * with a filename filter, the ioctl form of `grep mm/slub.c /proc/allocinfo`):
 *   allocinfo_ioctl: what=<all|batch|counters|file:NAME> tags=<n> median_ns=<n> min_ns=<n> max_ns=<n>
 * Under QEMU -icount shift=0 nanoseconds are guest instructions.
 *
 * `allocinfo_read batch [N]` makes one untimed walk by batches of N (BATCH
 * if not given) and prints the records it got: the loop tools/testing/allocprof/bench/itrace.sh
 * traces, with nothing else on the path; `counters [N]` the same with
 * counter records.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"

#include <linux/alloc_tag.h>

#define READS 21
#define BATCH 256

/*
 * One walk of an open /proc/allocinfo: how many rows (text) or records
 * (ioctls) it read, or -1 if the kernel cannot do it.  *@bytes gets the
 * text's size.
 */
typedef long (*walk_fn)(int fd, const void *arg, long *bytes);

/*
 * Times READS walks, each on a file of its own, and returns the median's
 * count (-1 if a walk failed); @t gets the times, sorted.
 */
static long time_walks(walk_fn walk, const void *arg, long long *t, long *bytes)
{
	long n = 0;

	for (int r = 0; r < READS; r++) {
		int fd = open("/proc/allocinfo", O_RDONLY);
		long long t0;

		if (fd < 0) {
			perror("/proc/allocinfo");
			return -1;
		}
		t0 = now_ns();
		n = walk(fd, arg, bytes);
		t[r] = now_ns() - t0;
		close(fd);
		if (n < 0)
			return -1;
	}
	qsort(t, READS, sizeof(t[0]), cmp);
	return n;
}

static char text[4 << 20];

/* The whole text, as cat reads it; rows are counted after the clock. */
static long text_walk(int fd, const void *arg, long *bytes)
{
	ssize_t n;

	*bytes = 0;
	while (*bytes + (128 << 10) <= (long)sizeof(text) &&
	       (n = read(fd, text + *bytes, 128 << 10)) > 0)
		*bytes += n;
	return 0;
}

/* Every tag by GET_NEXT, or (@arg a file name) one file's by GET_AT first. */
static long next_walk(int fd, const void *arg, long *bytes)
{
	const char *file = arg;
	struct allocinfo_get_at g;
	struct allocinfo_tag_data d;
	long tags = 0;

	if (file) {
		memset(&g, 0, sizeof(g));
		g.filter.mask = ALLOCINFO_FILTER_MASK_FILENAME;
		snprintf(g.filter.fields.filename, sizeof(g.filter.fields.filename),
			 "%s", file);
		if (ioctl(fd, ALLOCINFO_IOC_GET_AT, &g))
			return errno == ENOTTY ? -1 : 0;
		tags++;
	}
	while (!ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d))
		tags++;
	return errno == ENOTTY ? -1 : tags;
}

static struct allocinfo_tag_data *records;

/* A walk by GET_BATCH: records per call, their size, the batch flags. */
struct batch_req {
	unsigned int max, size, flags;
};

/*
 * Every tag by GET_BATCH as *@arg asks (@records holds the records): named
 * records, or (ALLOCINFO_BATCH_COUNTERS) counter records only, the walk of
 * a reader that has the names of this content id, as allocinfo watch
 * between its named walks.
 */
static long batch_walk(int fd, const void *arg, long *bytes)
{
	const struct batch_req *q = arg;
	struct allocinfo_batch b;
	long tags = 0;

	do {
		memset(&b, 0, sizeof(b));
		b.records = (unsigned long)records;
		b.record_size = q->size;
		b.max = q->max;
		b.flags = q->flags;
		if (ioctl(fd, ALLOCINFO_IOC_GET_BATCH, &b))
			return -1;
		tags += b.count;
	} while (b.count == q->max);
	return tags;
}

static void report(const char *what, long tags, const long long *t)
{
	printf("allocinfo_ioctl: what=%s tags=%ld median_ns=%lld min_ns=%lld max_ns=%lld\n",
	       what, tags, t[READS / 2], t[0], t[READS - 1]);
}

int main(int argc, char **argv)
{
	static const char slub[] = "mm/slub.c";
	unsigned int batch = BATCH;
	long long t[READS];
	long bytes = 0, rows = 0, n;

	if (argc > 2)
		batch = strtoul(argv[2], NULL, 0);
	records = calloc(batch, sizeof(records[0]));
	if (!records || batch < 1 || batch > 65536) {
		fprintf(stderr, "allocinfo_read: N is 1 to 65536\n");
		return 2;
	}
	if (argc > 1) {
		int fd;

		struct batch_req q = { batch, sizeof(records[0]), 0 };

#ifdef ALLOCINFO_BATCH_COUNTERS
		if (!strcmp(argv[1], "counters")) {
			q.size = sizeof(struct allocinfo_counter_record);
			q.flags = ALLOCINFO_BATCH_COUNTERS;
		} else
#endif
		if (strcmp(argv[1], "batch")) {
			fprintf(stderr, "usage: allocinfo_read [batch|counters [N]]\n");
			return 2;
		}
		fd = open("/proc/allocinfo", O_RDONLY);
		if (fd < 0) {
			perror("/proc/allocinfo");
			return 1;
		}
		n = batch_walk(fd, &q, &bytes);
		printf("allocinfo_read: %s=%u records=%ld%s\n", argv[1], batch, n,
		       n < 0 ? " (no GET_BATCH)" : "");
		return n < 0;
	}
	if (time_walks(text_walk, NULL, t, &bytes) < 0)
		return 1;
	for (long i = 0; i < bytes; i++)
		rows += text[i] == '\n';
	printf("allocinfo_read: rows=%ld bytes=%ld median_ns=%lld min_ns=%lld max_ns=%lld\n",
	       rows - 2, bytes, t[READS / 2], t[0], t[READS - 1]);
	n = time_walks(next_walk, NULL, t, &bytes);
	if (n < 0)
		return 0;	/* no ioctls */
	report("all", n, t);
	n = time_walks(batch_walk, &(struct batch_req){ batch, sizeof(records[0]), 0 }, t, &bytes);
	if (n >= 0)
		report("batch", n, t);
#ifdef ALLOCINFO_BATCH_COUNTERS
	n = time_walks(batch_walk,
		       &(struct batch_req){ batch, sizeof(struct allocinfo_counter_record),
					    ALLOCINFO_BATCH_COUNTERS },
		       t, &bytes);
	if (n >= 0)
		report("counters", n, t);
#endif
	n = time_walks(next_walk, slub, t, &bytes);
	if (n >= 0)
		report("file:mm/slub.c", n, t);
	return 0;
}
