// SPDX-License-Identifier: GPL-2.0
/*
 * make fuzz's 32-bit driver: random and boundary ioctls on /proc/allocinfo
 * through the compat path.  Built -m32 without a C library (raw int 0x80
 * system calls), so that no 32-bit libc is needed on the build host.
 *
 * usage: fuzz32 SEED N   (N ioctls from SEED; exit status 0)
 */
#include <stdalign.h>
#include <stdnoreturn.h>

#include "../../../../../include/uapi/linux/alloc_tag.h"

#define NR_exit		1
#define NR_open		5
#define NR_close	6
#define NR_ioctl	54
#define NR_old_mmap	90
#define NR_mprotect	125

static long sys3(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("int $0x80" : "=a" (ret) : "a" (nr), "b" (a), "c" (b), "d" (c) : "memory");
	return ret;
}

void *memset(void *s, int c, unsigned int n)
{
	unsigned char *p = s;

	while (n--)
		*p++ = c;
	return s;
}

void *memcpy(void *d, const void *s, unsigned int n)
{
	unsigned char *p = d;
	const unsigned char *q = s;

	while (n--)
		*p++ = *q++;
	return d;
}

static unsigned int rng;

/* xorshift32: no 64-bit division, so no libgcc. */
static unsigned int rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static unsigned int below(unsigned int n)
{
	return n ? rnd() % n : 0;
}

static unsigned int atou(const char *s)
{
	unsigned int v = 0;

	while (*s >= '0' && *s <= '9')
		v = v * 10 + *s++ - '0';
	return v;
}

static unsigned long long r64(void)
{
	return (unsigned long long)rnd() << 32 | rnd();
}

static void fill(char *p, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		p[i] = below(4) ? 'a' + below(26) : (char)rnd();
	if (below(2))
		p[below(n)] = '\0';
}

static alignas(8) struct allocinfo_get_at g;

static unsigned long cmd(void)
{
	switch (below(10)) {
	case 0:
		return ALLOCINFO_IOC_CONTENT_ID;
	case 1: case 2: case 3: case 4:
		return ALLOCINFO_IOC_GET_AT;
	case 5: case 6:
		return ALLOCINFO_IOC_GET_NEXT;
	case 7:
		return ALLOCINFO_IOC_GET_BATCH;
	case 8:
		return _IOC(below(4), ALLOCINFO_IOC_BASE, below(16), below(1024));
	default:
		return rnd();
	}
}

static long arg(char *guard)
{
	switch (below(12)) {
	case 0:
		return 0;
	case 1:
		return -4096;	/* 0xfffff000, the top of the 32-bit space */
	case 2:
		return (long)(guard + 4096 - 1 - below(sizeof(g)));
	case 3:
		return (long)((char *)&g + 1);
	default:
		return (long)&g;
	}
}

noreturn void start_c(int argc, char **argv)
{
	unsigned int i, n;
	unsigned long c;
	char *guard;
	long fd;

	rng = argc > 1 ? atou(argv[1]) | 1 : 1;
	n = argc > 2 ? atou(argv[2]) : 100;
	/* old_mmap: its six arguments in memory. */
	static long margs[6] = { 0, 8192, 3 /* RW */, 0x22 /* PRIVATE|ANON */, -1, 0 };

	guard = (char *)sys3(NR_old_mmap, (long)margs, 0, 0);
	if ((unsigned long)guard > 0xfffff000UL)
		sys3(NR_exit, 1, 0, 0);
	sys3(NR_mprotect, (long)(guard + 4096), 4096, 0);
	fd = sys3(NR_open, (long)"/proc/allocinfo", 0, 0);
	if (fd < 0)
		sys3(NR_exit, 2, 0, 0);
	for (i = 0; i < n; i++) {
		memset(&g, 0, sizeof(g));
		switch (below(4)) {
		case 0:
			g.pos = r64();
			break;
		default:
			g.pos = below(1500);
			break;
		}
		g.filter.mask = below(5) ? below(ALLOCINFO_FILTER_MASKS + 1) : r64();
		if (below(2))
			fill(g.filter.fields.modname, ALLOCINFO_STR_SIZE);
		if (below(2))
			fill(g.filter.fields.function, ALLOCINFO_STR_SIZE);
		if (below(2))
			fill(g.filter.fields.filename, ALLOCINFO_STR_SIZE);
		g.filter.fields.lineno = below(2) ? below(2000) : r64();
		g.filter.min_size = below(2) ? below(1 << 20) : r64();
		g.filter.max_size = below(2) ? ~0ULL : r64();
		g.filter.inaccurate = below(2);
		c = cmd();
		if (_IOC_NR(c) == _ALLOCINFO_IOC_GET_BATCH) {
			struct allocinfo_batch *b = (void *)&g;

			/* Records in the page before the guard, or anywhere. */
			b->records = below(4) ? (unsigned long)guard : r64();
			b->record_size = below(4) ? (below(2) ? 224 : 32) : (unsigned int)r64();
			b->max = below(2) ? 1 + below(24) : (unsigned int)r64();
			b->flags = below(2) ? 0 : below(4) ? below(9) : (unsigned int)r64();
		}
		sys3(NR_ioctl, fd, c, arg(guard));
	}
	sys3(NR_close, fd, 0, 0);
	sys3(NR_exit, 0, 0, 0);
	for (;;)
		;
}

/* The kernel's entry stack: argc, then argv[]. */
asm(".globl _start\n"
	"_start:\n"
	"	xor %ebp, %ebp\n"
	"	mov (%esp), %eax\n"
	"	lea 4(%esp), %edx\n"
	"	and $-16, %esp\n"
	"	sub $8, %esp\n"
	"	push %edx\n"
	"	push %eax\n"
	"	call start_c\n"
	"	hlt\n");
