// SPDX-License-Identifier: GPL-2.0
/*
 * cacheplug's calibration, run in the guest under the plugin: three windows
 * whose misses the model must get right (tools/testing/allocprof/bench/cacheplug/check.py judges
 * them against the sizes printed here).
 *   1: 64 passes over 16 KiB (fits L1D): next to no L1D miss;
 *   2: 8 passes over 1 MiB (fits L2, not L1D): every line an L1D miss,
 *      next to no L2 miss (the buffer was just written, so it is in L2);
 *   3: 2 passes over 32 MiB (fits nothing): every line an L2 miss.
 * Each buffer is written before its window, so no page fault falls inside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A window's markers: the displacement is the literal 0x0a11 << 16 | id. */
#define MARK(disp) asm volatile("nopw " #disp "(%%rax,%%rax,1)" : : : "memory")
#define LINE 64

static unsigned long passes(const volatile unsigned char *buf, size_t size, int n)
{
	unsigned long sum = 0;

	for (int p = 0; p < n; p++)
		for (size_t i = 0; i < size; i += LINE)
			sum += buf[i];
	return sum;
}

static unsigned char *filled(int id, size_t size)
{
	unsigned char *buf = malloc(size);

	if (buf)
		memset(buf, id, size);
	return buf;
}

static void done(int id, unsigned char *buf, size_t size, int n, unsigned long sum)
{
	printf("calib: id=%d lines=%zu passes=%d sum=%lu\n", id, size / LINE, n, sum);
	free(buf);
}

#define WINDOW(id, start, stop, size, n) ({					\
	unsigned char *buf = filled(id, size);					\
	unsigned long sum;							\
										\
	if (buf) {								\
		MARK(start);							\
		sum = passes(buf, size, n);					\
		MARK(stop);							\
		done(id, buf, size, n, sum);					\
	}									\
	buf ? 0 : -1;								\
})

int main(void)
{
	if (WINDOW(1, 0x0a110001, 0x0a118001, 16 << 10, 64) ||
	    WINDOW(2, 0x0a110002, 0x0a118002, 1 << 20, 8) ||
	    WINDOW(3, 0x0a110003, 0x0a118003, 32 << 20, 2)) {
		perror("calib");
		return 1;
	}
	return 0;
}
