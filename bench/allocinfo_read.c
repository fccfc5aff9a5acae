// SPDX-License-Identifier: GPL-2.0
/*
 * Times full reads of /proc/allocinfo (and counts its rows): READS reads of
 * the whole file in 128 KiB read() calls, as cat does (rows are counted
 * after the timed reads), and prints
 *   allocinfo_read: rows=<n> bytes=<n> median_ns=<n> min_ns=<n> max_ns=<n>
 * Under QEMU -icount shift=0 nanoseconds are guest instructions.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define READS 21

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
	return 0;
}
