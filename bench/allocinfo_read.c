// SPDX-License-Identifier: GPL-2.0
/*
 * Times full reads of /proc/allocinfo (and counts its rows): READS reads of
 * the whole file in 128 KiB read() calls, as cat does (rows are counted
 * after the timed reads), and prints
 *   allocinfo_read: rows=<n> bytes=<n> median_ns=<n> min_ns=<n> max_ns=<n>
 * Then, where the kernel has the ioctls, READS walks of every tag by
 * ALLOCINFO_IOC_GET_NEXT, READS by ALLOCINFO_IOC_GET_BATCH of BATCH records
 * (where the kernel has it), and READS filtered reads (GET_AT + GET_NEXT
 * with a filename filter, the ioctl form of `grep mm/slub.c /proc/allocinfo`):
 *   allocinfo_ioctl: what=<all|batch|file:NAME> tags=<n> median_ns=<n> min_ns=<n> max_ns=<n>
 * Under QEMU -icount shift=0 nanoseconds are guest instructions.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/alloc_tag.h>

#define READS 21
#define BATCH 256

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static void report(const char *what, long tags, long long *t)
{
	qsort(t, READS, sizeof(t[0]), cmp);
	printf("allocinfo_ioctl: what=%s tags=%ld median_ns=%lld min_ns=%lld max_ns=%lld\n",
	       what, tags, t[READS / 2], t[0], t[READS - 1]);
}

/* Times READS ioctl walks; @file NULL: every tag, else one file's tags. */
static int ioctl_walks(const char *file)
{
	struct allocinfo_get_at g;
	struct allocinfo_tag_data d;
	long long t[READS];
	long tags = 0;
	char what[80];

	for (int r = 0; r < READS; r++) {
		int fd = open("/proc/allocinfo", O_RDONLY);
		long long t0;

		if (fd < 0)
			return -1;
		memset(&g, 0, sizeof(g));
		if (file) {
			g.filter.mask = ALLOCINFO_FILTER_MASK_FILENAME;
			snprintf(g.filter.fields.filename, sizeof(g.filter.fields.filename),
				 "%s", file);
		}
		tags = 0;
		t0 = now_ns();
		if (file) {
			if (!ioctl(fd, ALLOCINFO_IOC_GET_AT, &g))
				tags++;
		}
		if (!file || tags) {
			while (!ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d))
				tags++;
		}
		t[r] = now_ns() - t0;
		if (errno == ENOTTY) {
			close(fd);
			return -1;
		}
		close(fd);
	}
	snprintf(what, sizeof(what), file ? "file:%s" : "all", file);
	report(what, tags, t);
	return 0;
}

/* Times READS walks of every tag by GET_BATCH; -1 if the kernel has none. */
static int batch_walks(void)
{
	static struct allocinfo_tag_data d[BATCH];
	struct allocinfo_batch b;
	long long t[READS];
	long tags = 0;

	for (int r = 0; r < READS; r++) {
		int fd = open("/proc/allocinfo", O_RDONLY);
		long long t0;
		int ret;

		if (fd < 0)
			return -1;
		tags = 0;
		t0 = now_ns();
		do {
			memset(&b, 0, sizeof(b));
			b.records = (unsigned long)d;
			b.record_size = sizeof(d[0]);
			b.max = BATCH;
			ret = ioctl(fd, ALLOCINFO_IOC_GET_BATCH, &b);
			if (!ret)
				tags += b.count;
		} while (!ret && b.count == BATCH);
		t[r] = now_ns() - t0;
		close(fd);
		if (ret)
			return -1;
	}
	report("batch", tags, t);
	return 0;
}

int main(void)
{
	static char buf[4 << 20];
	long long t[READS];
	long rows = 0, bytes = 0;

	for (int r = 0; r < READS; r++) {
		int fd = open("/proc/allocinfo", O_RDONLY);
		long long t0;
		ssize_t n;

		if (fd < 0) {
			perror("/proc/allocinfo");
			return 1;
		}
		bytes = 0;
		t0 = now_ns();
		while (bytes + (128 << 10) <= (long)sizeof(buf) &&
		       (n = read(fd, buf + bytes, 128 << 10)) > 0)
			bytes += n;
		t[r] = now_ns() - t0;
		close(fd);
	}
	rows = 0;
	for (long i = 0; i < bytes; i++)
		rows += buf[i] == '\n';
	qsort(t, READS, sizeof(t[0]), cmp);
	printf("allocinfo_read: rows=%ld bytes=%ld median_ns=%lld min_ns=%lld max_ns=%lld\n",
	       rows - 2, bytes, t[READS / 2], t[0], t[READS - 1]);
	if (ioctl_walks(NULL) == 0) {
		batch_walks();
		ioctl_walks("mm/slub.c");
	}
	return 0;
}
