/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The clock and the sort order the bench's user-space timers share
 * (allocinfo_read.c, macro_time.c): under -icount the guest's monotonic
 * clock counts executed instructions.
 */
#ifndef BENCH_TIME_H
#define BENCH_TIME_H

#include <time.h>

static inline long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* qsort() order of long longs, for medians. */
static inline int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

#endif
