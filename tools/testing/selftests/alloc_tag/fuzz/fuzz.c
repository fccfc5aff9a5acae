// SPDX-License-Identifier: GPL-2.0
/*
 * make fuzz's in-VM driver: several processes issue random operations over
 * every control surface of memory allocation profiling at once, for a
 * bounded time, from one seed:
 *
 * - context capture: arm/disarm of specs taken from the live
 *   /proc/allocinfo (any site, allocator internals, detached module tags,
 *   Rust sites), malformed commands, reads of the report;
 * - /proc/allocinfo reads at random sizes and offsets, and its ioctls with
 *   random and boundary structures (fuzz32, a 32-bit build, for compat);
 * - vm.mem_profiling writes;
 * - loads (some made to fail by fail-nth) and unloads of the test modules,
 *   their allocation commands, Rust site growth;
 * - failslab and fail_page_alloc switched on (for the fuzzing processes
 *   only: task-filter) and off at random;
 * - on a NUMA kernel: the per-node records of GET_BATCH and reads of
 *   /sys/kernel/debug/allocinfo_nodes, the driver's own pages moved
 *   between nodes (move_pages) and compaction.
 *
 * Each operation is logged to the kernel log (/dev/kmsg, so it lands on
 * the serial console in order with any report it provokes, and survives a
 * panic) as "fuzz: w<worker> #<seq> <operation>", just before it runs.
 * At the end every module is emptied and unloaded and every row of the
 * test modules must read 0/0 (alloc_tag_test_leak's: what its loads
 * leaked), and a kmemleak scan must find nothing else.  Results are KTAP.
 *
 * usage: fuzz [-c] [-s SEED] [-t SECONDS] [-w WORKERS] [-x CLASS,...]
 *   -c: CPUs other than 0 go on and off line too (a boot with CPUs to
 *   bring up: make fuzz FUZZ_HOTPLUG=1 boots with maxcpus=1).
 *   CLASS: internal (no arming of mm/ sites or alloc_slab_page), faults,
 *   modules, capture, compat, migrate: operation classes left out (for
 *   triage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../../../../include/uapi/linux/alloc_tag.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define AI_PATH		"/proc/allocinfo"
#define CAP_PATH	"/sys/kernel/debug/allocinfo_capture"
#define NODES_PATH	"/sys/kernel/debug/allocinfo_nodes"
#define ATT_DIR		"/sys/kernel/debug/alloc_tag_test"
#define SYSCTL_PATH	"/proc/sys/vm/mem_profiling"
#define FAIL_NTH	"/proc/thread-self/fail-nth"
#define DBG		"/sys/kernel/debug"
#define KMEMLEAK	DBG "/kmemleak"
#define MODDIR		"/modules"

#define MAX_WORKERS	16
#define MAX_ROWS	4096
#define OP_LEN		200
#define GRACE_S		180	/* past the deadline: longer than hung-task's 120 s */
#define CLEANUP_S	900
#define STALL_S		20	/* a worker without a new operation: see stalled_in_fault() */

static const char *const modules[] = {
	"alloc_tag_test", "alloc_tag_test_hold", "alloc_tag_test_leak",
	"alloc_tag_rust_test",
};

#define MOD_TEST	0
#define MOD_HOLD	1
#define MOD_LEAK	2
#define MOD_RUST	3

/* alloc_tag_test_leak leaks this per load (test_modules/alloc_tag_test_leak.c). */
#define LEAK_OBJS	3
#define LEAK_OBJ_SIZE	512
#define LEAK_PAGE	4096

struct shared {
	int stop;		/* __atomic accesses */
	int leak_loads;
	int profiling_switched_off;
	int unmap_failed;	/* op_migrate's, with the faults off */
	uint64_t ops[MAX_WORKERS];
	long rss_anon_kb[MAX_WORKERS];	/* at a worker's end; -1: none */
	char cur[MAX_WORKERS][OP_LEN];
};

struct row {
	long long bytes;
	unsigned long long calls;
	char file[160];
	unsigned int line;
	char mod[64];
	char func[256];
	bool inaccurate;
};

static struct shared *sh;
static int me = -1;		/* worker index, -1 in the parent */
static uint64_t seq;
static uint64_t rng;
static int kmsg_fd = -1;
static int shared_ai_fd = -1, shared_cap_fd = -1;
static struct row *pool;
static int npool;
static unsigned int excluded;
static char *guard;		/* a page followed by a PROT_NONE page */
static char *records;		/* BATCH_AREA bytes followed by a PROT_NONE page */
#define BATCH_AREA	(16 * 4096)
static char *rdonly;		/* a read-only page */
static char selfdir[256];
static double cpu_after;	/* no CPU hotplug before (-c) */
static unsigned int nr_nodes = 1;	/* the kernel's nr_node_ids */
static int make_it_fail_fd = -1;	/* a worker's /proc/self/make-it-fail */

enum {
	X_INTERNAL = 1, X_FAULTS = 2, X_MODULES = 4, X_CAPTURE = 8, X_COMPAT = 16,
	X_CPU = 32,	/* left out unless -c */
	X_MIGRATE = 64,
};

/* splitmix64: small, and any seed is a good one. */
static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned int pct)
{
	return below(100) < pct;
}

/* Sizes biased to the small end and to powers of two and their neighbours. */
static uint64_t some_size(uint64_t max)
{
	uint64_t v;

	switch (below(4)) {
	case 0:
		v = below(64);
		break;
	case 1:
		v = (1ULL << below(20)) + below(3) - 1;
		break;
	default:
		v = below(max + 1);
		break;
	}
	return v > max ? max : v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Logs the operation about to run, to the kernel log and the shared slot. */
static void op(const char *fmt, ...)
{
	char text[OP_LEN], line[OP_LEN + 64];
	va_list ap;
	int n, i;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	for (i = 0; text[i]; i++)
		if (text[i] == '\n' || (unsigned char)text[i] < 0x20 ||
		    (unsigned char)text[i] >= 0x7f)
			text[i] = '.';
	seq++;
	if (me >= 0) {
		sh->ops[me] = seq;
		snprintf(sh->cur[me], OP_LEN, "#%llu %.180s", (unsigned long long)seq, text);
	}
	n = snprintf(line, sizeof(line), "<5>fuzz: w%d #%llu %s\n", me,
		     (unsigned long long)seq, text);
	/* The write allocates, and may be made to fail: try again. */
	for (i = 0; i < 16; i++)
		if (kmsg_fd < 0 || write(kmsg_fd, line, n) == n)
			break;
	if (kmsg_fd < 0)
		fputs(line + 3, stdout);
}

/* Quiet helpers: the errors are the point, not worth a line each. */
static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? n : 0;
}

static int write_str(const char *path, const char *s)
{
	return write_file(path, s, strlen(s));
}

/*
 * This worker's own fault injection on or off (never on with the faults
 * left out), through the file it opened at its start: an open allocates
 * (the path, a struct file), so under the worker's failslab a fresh open
 * fails as often as the faults are on, at high probabilities almost every
 * time, and the faults would stay on where they must be off.  The write
 * itself allocates nothing.
 */
static bool self_faults(bool on)
{
	if (on && (excluded & X_FAULTS))
		return true;
	return pwrite(make_it_fail_fd, on ? "1" : "0", 1, 0) == 1;
}

/* A whole file, NUL-terminated, in a malloc'd buffer; NULL on error. */
static char *slurp(const char *path, size_t chunk)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		if (cap - len < chunk) {
			char *b = realloc(buf, cap * 2 + 1);

			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		n = read(fd, buf + len, chunk);
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* One /proc/allocinfo row; 0 if it parsed. */
static int parse_row(const char *l, struct row *r)
{
	char site[160], w[2][128];
	char *colon;
	int n;

	memset(r, 0, sizeof(*r));
	n = sscanf(l, "%lld %llu %159s %127s %127s", &r->bytes, &r->calls, site, w[0], w[1]);
	if (n < 4)
		return -1;
	colon = strrchr(site, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	snprintf(r->file, sizeof(r->file), "%s", site);
	r->line = strtoul(colon + 1, NULL, 10);
	if (w[0][0] == '[') {
		snprintf(r->mod, sizeof(r->mod), "%.*s", (int)strlen(w[0]) - 2, w[0] + 1);
		if (n < 5)
			return -1;
		memmove(w[0], w[1], sizeof(w[0]));
	}
	if (strncmp(w[0], "func:", 5))
		return -1;
	snprintf(r->func, sizeof(r->func), "%s", w[0] + 5);
	r->inaccurate = !!strstr(l, "accurate:no");
	return 0;
}

/* Every row of @text into @rows (at most @max); the number of rows. */
static int parse_rows(char *text, struct row *rows, int max)
{
	char *l, *save = NULL;
	int n = 0;

	for (l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#' || !strncmp(l, "allocinfo", 9))
			continue;
		if (!parse_row(l, &rows[n]))
			n++;
	}
	return n;
}

static void refresh_pool(char *text)
{
	int n = parse_rows(text, pool, MAX_ROWS);

	if (n > 0)
		npool = n;
}

/* ---- capture ---------------------------------------------------------- */

/* Sites of the test modules worth arming by name. */
static const char *const named_specs[] = {
	"function:att_capture_wrapper module:alloc_tag_test",
	"function:att_capture_pages_wrapper module:alloc_tag_test",
	"function:att_do_kmalloc",
	"function:att_do_pages module:alloc_tag_test",
	"function:att_do_vmalloc",
	"function:att_do_percpu module:alloc_tag_test",
	"function:att_do_order2",
	"function:att_stress_on",
	"function:ath_obj module:alloc_tag_test_hold",
	"function:ath_obj",
	"function:ath_big module:alloc_tag_test_hold",
	"function:ath_init module:alloc_tag_test_hold",
	"function:atl_init module:alloc_tag_test_leak",
	"function:alloc_kbox module:alloc_tag_rust_test",
	"function:grow_kvec module:alloc_tag_rust_test",
	"function:alloc_vbox",
	"function:alloc_kvbox module:alloc_tag_rust_test",
	"function:alloc_one_page module:alloc_tag_rust_test",
	"function:alloc_atomic module:alloc_tag_rust_test",
	"function:adopt_kbox module:alloc_tag_rust_test",
};

/* Allocator internals: reachable from capture's own record path. */
static const char *const internal_specs[] = {
	"function:alloc_slab_page",
	"function:allocate_slab",
	"function:__kmalloc_large_node_noprof",
	"function:pcpu_create_chunk",
	"function:pcpu_mem_zalloc",
	"function:__vmalloc_area_node",
	"function:alloc_vmap_area",
	"function:stack_depot_save_flags",
};

static bool internal_row(const struct row *r)
{
	return !strncmp(r->file, "mm/", 3) || !strncmp(r->file, "lib/stackdepot", 14);
}

/* A spec: FILE:LINE or function:NAME, maybe with module:NAME. */
static void some_spec(char *buf, size_t len)
{
	const struct row *r = NULL;
	int tries;

	switch (below(10)) {
	case 0: case 1: case 2:
		snprintf(buf, len, "%s", named_specs[below(ARRAY_SIZE(named_specs))]);
		return;
	case 3:
		if (!(excluded & X_INTERNAL)) {
			snprintf(buf, len, "%s", internal_specs[below(ARRAY_SIZE(internal_specs))]);
			return;
		}
		break;
	default:
		break;
	}
	for (tries = 0; tries < 32 && npool; tries++) {
		r = &pool[below(npool)];
		if (!(excluded & X_INTERNAL) || !internal_row(r))
			break;
		r = NULL;
	}
	if (!r) {
		snprintf(buf, len, "%s", named_specs[below(ARRAY_SIZE(named_specs))]);
		return;
	}
	if (chance(50))
		snprintf(buf, len, "%s:%u", r->file, r->line);
	else
		snprintf(buf, len, "function:%s", r->func);
	if (chance(50)) {
		size_t l = strlen(buf);

		if (r->mod[0] && chance(80))
			snprintf(buf + l, len - l, " module:%s", r->mod);
		else
			snprintf(buf + l, len - l, " module:%s",
				 modules[below(ARRAY_SIZE(modules))]);
	}
}

static int cap_write(const void *buf, size_t len)
{
	return write_file(CAP_PATH, buf, len);
}

static void op_arm(void)
{
	char spec[300], cmd[320];

	some_spec(spec, sizeof(spec));
	snprintf(cmd, sizeof(cmd), "arm %s", spec);
	op("capture: %s", cmd);
	/* With the newline echo would add, or without. */
	if (chance(50))
		strcat(cmd, "\n");
	cap_write(cmd, strlen(cmd));
}

static void op_disarm(void)
{
	char spec[300], cmd[320];

	if (chance(30)) {
		op("capture: disarm all");
		cap_write("disarm all", 10);
		return;
	}
	some_spec(spec, sizeof(spec));
	snprintf(cmd, sizeof(cmd), "disarm %s", spec);
	op("capture: %s", cmd);
	cap_write(cmd, strlen(cmd));
}

static void op_capture_bad(void)
{
	static const char *const bad[] = {
		"", "\n", "arm", "arm ", "disarm", "arm function:", "arm :", "arm :1",
		"arm foo", "arm foo:bar", "arm foo:-1", "arm foo:4294967296",
		"arm mm/slub.c:99999999999999999999", "disarm all all",
		"disarm all extra", "arm function:x module:", "arm function:x module",
		"arm function:x module:y z", "ARM function:kmalloc", "arm\tfunction:x",
		"arm  function:att_do_kmalloc  ", "disarm function:nosuchfunction",
		"arm function:\xff\xfe", "arm \x01:1", "disarm module:alloc_tag_test",
	};
	static const char alphabet[] = "armdisa fuctionmodule:0123456789 ";
	char buf[600];
	size_t len, i;

	switch (below(3)) {
	case 0:
		len = strlen(bad[i = below(ARRAY_SIZE(bad))]);
		op("capture: bad command %zu (len %zu)", i, len);
		cap_write(bad[i], len);
		return;
	case 1:
		/* Around the 256-byte command limit. */
		len = 250 + below(12);
		memset(buf, 'a', len);
		memcpy(buf, "arm function:", 13);
		op("capture: long command, %zu bytes", len);
		cap_write(buf, len);
		return;
	default:
		len = below(sizeof(buf));
		for (i = 0; i < len; i++)
			buf[i] = chance(80) ? alphabet[below(sizeof(alphabet) - 1)] : rnd();
		op("capture: random command, %zu bytes", len);
		cap_write(buf, len);
		return;
	}
}

/* Reads @fd to its end in chunks of random sizes. */
static void read_chunks(int fd, size_t max_chunk)
{
	static char buf[1 << 17];
	size_t chunk = 1 + below(max_chunk);
	int i;

	for (i = 0; i < 100000; i++) {
		if (chance(5))
			chunk = 1 + below(max_chunk);
		if (read(fd, buf, chunk) <= 0)
			break;
	}
}

static void op_capture_read(void)
{
	int fd;

	if (shared_cap_fd >= 0 && chance(30)) {
		off_t off = chance(50) ? 0 : (off_t)some_size(1 << 20);

		op("capture: read shared fd at %lld", (long long)off);
		lseek(shared_cap_fd, off, SEEK_SET);
		read_chunks(shared_cap_fd, 8192);
		return;
	}
	op("capture: read report");
	fd = open(CAP_PATH, chance(80) ? O_RDONLY : O_RDWR);
	if (fd < 0)
		return;
	if (chance(20))
		lseek(fd, some_size(1 << 16), SEEK_SET);
	read_chunks(fd, chance(50) ? 64 : 1 << 16);
	close(fd);
}

/* ---- /proc/allocinfo -------------------------------------------------- */

static void op_allocinfo_read(void)
{
	static char buf[1 << 17];
	int fd, i, n;

	switch (below(4)) {
	case 0: {
		char *text;
		size_t chunk = 1 + some_size(1 << 16);

		op("allocinfo: read all, %zu-byte reads", chunk);
		text = slurp(AI_PATH, chunk);
		if (text)
			refresh_pool(text);
		free(text);
		return;
	}
	case 1:
		n = 1 + below(8);
		op("allocinfo: %d preads", n);
		fd = chance(50) && shared_ai_fd >= 0 ? dup(shared_ai_fd) : open(AI_PATH, O_RDONLY);
		if (fd < 0)
			return;
		for (i = 0; i < n; i++) {
			off_t off = chance(10) ? (off_t)rnd() : (off_t)some_size(1 << 18);

			pread(fd, buf, some_size(sizeof(buf) - 1), off);
		}
		close(fd);
		return;
	default:
		n = 1 + below(8);
		op("allocinfo: %d seek+read", n);
		fd = chance(50) && shared_ai_fd >= 0 ? dup(shared_ai_fd) : open(AI_PATH, O_RDONLY);
		if (fd < 0)
			return;
		for (i = 0; i < n; i++) {
			off_t off = chance(10) ? (off_t)(rnd() >> 1) : (off_t)some_size(1 << 18);

			if (chance(70))
				lseek(fd, off, chance(80) ? SEEK_SET :
					       chance(50) ? SEEK_CUR : SEEK_END);
			read(fd, buf, some_size(sizeof(buf) - 1));
		}
		close(fd);
		return;
	}
}

static void fill_name(char *dst, const char *from)
{
	size_t i;

	switch (below(4)) {
	case 0:		/* no NUL at all */
		for (i = 0; i < ALLOCINFO_STR_SIZE; i++)
			dst[i] = chance(90) ? 'a' + below(26) : rnd();
		break;
	case 1:
		memset(dst, 0, ALLOCINFO_STR_SIZE);
		break;
	default:
		memset(dst, 0, ALLOCINFO_STR_SIZE);
		if (from)
			snprintf(dst, ALLOCINFO_STR_SIZE, "%s", from);
		break;
	}
}

static void some_filter(struct allocinfo_filter *f)
{
	const struct row *r = npool ? &pool[below(npool)] : NULL;

	memset(f, 0, sizeof(*f));
	switch (below(6)) {
	case 0:
		f->mask = rnd();
		break;
	case 1:
		f->mask = 0;
		break;
	default:
		f->mask = below(ALLOCINFO_FILTER_MASKS + 1);
		break;
	}
	fill_name(f->fields.modname, r ? r->mod : NULL);
	fill_name(f->fields.function, r ? r->func : NULL);
	fill_name(f->fields.filename, r ? r->file : NULL);
	f->fields.lineno = chance(70) && r ? r->line : rnd();
	f->min_size = chance(30) ? rnd() : some_size(1 << 24);
	f->max_size = chance(30) ? ~0ULL : some_size(1 << 24);
	f->inaccurate = chance(80) ? below(2) : rnd();
}

/* A pointer for an ioctl argument: good, or bad in one of several ways. */
static void *some_arg(void *good, size_t size)
{
	switch (below(20)) {
	case 0:
		return NULL;
	case 1:
		return (void *)1;
	case 2:
		return (void *)0xffffffff81000000UL;	/* kernel text */
	case 3:
		/* Straddles into an inaccessible page. */
		return guard + 4096 - 1 - below(size);
	case 4:
		return rdonly;
	case 5:
		return (char *)good + 1;		/* misaligned, still valid */
	default:
		return good;
	}
}

static unsigned long some_cmd(void)
{
	static const unsigned long good[] = {
		ALLOCINFO_IOC_CONTENT_ID, ALLOCINFO_IOC_GET_AT, ALLOCINFO_IOC_GET_NEXT,
		ALLOCINFO_IOC_GET_BATCH,
	};
	unsigned int dir;

	if (chance(85))
		return good[below(4)];
	switch (below(5)) {
	case 4:	/* the batch at another version's size, or below the first */
		return _IOC(_IOC_READ | _IOC_WRITE, ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_GET_BATCH,
			    below(2) ? sizeof(struct allocinfo_batch) + 8 * below(8) : below(64));
	case 0:	/* right number, wrong size */
		return _IOC(_IOC_READ | _IOC_WRITE, ALLOCINFO_IOC_BASE, below(3),
			    below(2) ? sizeof(struct allocinfo_get_at) - 8 : below(1024));
	case 1:	/* another number of the range */
		return _IOC(below(4), ALLOCINFO_IOC_BASE, below(16), below(512));
	case 2:	/* wrong direction */
		dir = below(4);
		return _IOC(dir, ALLOCINFO_IOC_BASE, 1, sizeof(struct allocinfo_get_at));
	default:
		return (unsigned int)rnd();
	}
}

/*
 * A batch request: records in the guarded area (a large max runs into its
 * guard page), or a bad address; strides, counts and flags good and bad;
 * and, for a larger version's size, a tail sometimes not zero.
 */
static void some_batch(struct allocinfo_batch *b)
{
	static const __u32 strides[] = { 224, 232, 32, 223, 231, 31, 0, 1024, 1025 };
	/* A record, the nodes' header and nr_nodes counters (or one byte less). */
	__u32 nodes = sizeof(struct allocinfo_nodes) +
		      nr_nodes * sizeof(struct allocinfo_node_counter) - chance(20);

	b->records = chance(85) ? (uintptr_t)records : (uintptr_t)some_arg(records, 4096);
	/* Every combination of the record flags, and bits no kernel knows. */
	b->flags = chance(50) ? 0 : chance(80) ? below(ALLOCINFO_BATCH_FLAGS + 2) : (__u32)rnd();
	b->record_size = chance(80) ? strides[below(3)] :
			 chance(50) ? strides[below(9)] : (__u32)rnd();
	if ((b->flags & ALLOCINFO_BATCH_NODES) && chance(80))
		b->record_size = strides[below(3)] + nodes;
	b->max = chance(70) ? 1 + below(BATCH_AREA / 224) :
		 chance(50) ? below(ALLOCINFO_BATCH_MAX + 2) : (__u32)rnd();
	if (chance(10))
		((char *)b)[sizeof(*b) + below(64)] = (char)rnd();
}

static void op_ioctl(void)
{
	static alignas(16) char buf[8192];
	struct allocinfo_get_at *g = (void *)buf;
	int fd, i, n = 1 + below(chance(30) ? 64 : 4);
	bool shared = chance(40) && shared_ai_fd >= 0;

	op("ioctl: %d calls on %s fd", n, shared ? "the shared" : "a new");
	fd = shared ? shared_ai_fd : open(AI_PATH, O_RDONLY);
	if (fd < 0)
		return;
	for (i = 0; i < n; i++) {
		unsigned long cmd = some_cmd();

		memset(buf, 0, sizeof(struct allocinfo_get_at) + 16);
		if (cmd == ALLOCINFO_IOC_GET_AT || chance(30)) {
			switch (below(5)) {
			case 0:
				g->pos = rnd();
				break;
			case 1:
				g->pos = npool + below(3) - 1;
				break;
			default:
				g->pos = below(npool + 2);
				break;
			}
			some_filter(&g->filter);
		}
		if (_IOC_NR(cmd) == _ALLOCINFO_IOC_GET_BATCH)
			some_batch((void *)buf);
		ioctl(fd, cmd, some_arg(buf, sizeof(*g)));
	}
	if (!shared)
		close(fd);
}

/* The 32-bit driver, for the compat ioctl: its own seed from ours. */
static void op_compat(void)
{
	char path[300], s[32], n[16];
	pid_t pid;
	int st;

	snprintf(path, sizeof(path), "%s/fuzz32", selfdir);
	if (access(path, X_OK))
		return;
	snprintf(s, sizeof(s), "%u", (unsigned int)rnd());
	snprintf(n, sizeof(n), "%u", 1 + (unsigned int)below(200));
	op("compat: fuzz32 %s %s", s, n);
	pid = fork();
	if (pid == 0) {
		execl(path, "fuzz32", s, n, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
}

/* ---- sysctl ----------------------------------------------------------- */

static void op_sysctl(void)
{
	static const char *const vals[] = {
		"1", "1\n", "0", "2", "-1", "abc", "", "1,compressed", "never",
		"0,compressed", " 1", "1 ", "01", "0x1", "4294967297",
	};
	char longval[300];
	const char *v;
	size_t len;

	if (chance(10)) {
		memset(longval, '1', sizeof(longval));
		v = longval;
		len = sizeof(longval);
	} else {
		v = vals[below(ARRAY_SIZE(vals))];
		len = strlen(v);
	}
	op("sysctl: vm.mem_profiling <- '%.*s' (%zu bytes)", (int)(len > 40 ? 40 : len), v, len);
	if (write_file(SYSCTL_PATH, v, len) == 0 && v[0] == '0')
		__atomic_store_n(&sh->profiling_switched_off, 1, __ATOMIC_SEQ_CST);
	if (chance(30)) {
		char *t = slurp(SYSCTL_PATH, 64);

		free(t);
	}
}

/* ---- modules ---------------------------------------------------------- */

static int fail_nth(unsigned int nth)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", nth);
	return write_str(FAIL_NTH, v);
}

/*
 * Loads module @m by finit_module() or init_module(), with the @nth fault
 * site of the load failing (0: none).  Concurrent finit_module() calls of
 * one file share one load and its result, so alloc_tag_test_leak, whose
 * loads are counted, always goes through init_module().
 */
static int load_module(int m, const char *params, unsigned int nth, bool by_fd)
{
	char path[256], *image = NULL;
	struct stat st;
	int fd, ret;

	snprintf(path, sizeof(path), MODDIR "/%s.ko", modules[m]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (m == MOD_LEAK || !by_fd) {
		image = fstat(fd, &st) ? NULL : malloc(st.st_size);
		if (!image || read(fd, image, st.st_size) != st.st_size) {
			free(image);
			close(fd);
			return -EIO;
		}
	}
	if (nth)
		fail_nth(nth);
	if (image)
		ret = syscall(SYS_init_module, image, st.st_size, params) ? -errno : 0;
	else
		ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	if (nth)
		fail_nth(0);
	free(image);
	close(fd);
	if (!ret && m == MOD_LEAK)
		__atomic_add_fetch(&sh->leak_loads, 1, __ATOMIC_SEQ_CST);
	return ret;
}

static int unload_module(int m)
{
	return syscall(SYS_delete_module, modules[m], O_NONBLOCK) ? -errno : 0;
}

static void op_load(void)
{
	int m = below(ARRAY_SIZE(modules));
	unsigned int nth = chance(35) ? 1 + some_size(chance(50) ? 40 : 400) : 0;
	char params[64] = "";
	bool by_fd = chance(50);
	int ret;

	if (m == MOD_HOLD && chance(70))
		snprintf(params, sizeof(params), "%sbig=%u", chance(40) ? "arm=1 " : "",
			 (unsigned int)below(4));
	else if (chance(3))
		snprintf(params, sizeof(params), "nosuchparam=%u", (unsigned int)below(9));
	op("module: %s %s '%s' fail-nth %u", by_fd ? "finit" : "init", modules[m], params, nth);
	ret = load_module(m, params, nth, by_fd);
	/* Worth knowing in the log: whether it is in. */
	op("module: load %s: %d", modules[m], ret);
}

static void op_unload(void)
{
	int m = below(ARRAY_SIZE(modules));

	if (m == MOD_TEST && chance(50))
		m = MOD_RUST;
	op("module: unload %s", modules[m]);
	/*
	 * Its result in a line of its own, as a load's: the judge
	 * (tools/testing/allocprof/ktap.py) needs to know which unloads were in flight,
	 * and whether they went through, when a report came.
	 */
	op("module: unload %s: %d", modules[m], unload_module(m));
}

static int test_ctl(const char *cmd)
{
	return write_str(ATT_DIR "/ctl", cmd);
}

static void op_ctl(void)
{
	static const char *const kinds[] = {
		"kmalloc", "large", "cache", "pages", "vmalloc", "percpu", "order2",
		"node", "percpu_acct", "capture", "capture_pages", "kfence",
	};
	static const char *const capture_cmds[] = {
		"capture_free", "capture_pages_free", "capture_pages_split",
		"capture_pages_tails", "capture_nonsense",
	};
	static const char *const rust_cmds[] = {
		"alloc", "free", "adopt", "alloc", "nonsense", "alloc", "free", "grow",
	};
	char cmd[128];
	unsigned int n = 1 + below(chance(80) ? 4 : 32);

	switch (below(25)) {
	case 0: case 1:
		snprintf(cmd, sizeof(cmd), "kmalloc %llu %u",
			 (unsigned long long)some_size(16384), n);
		break;
	case 2:
		snprintf(cmd, sizeof(cmd), "large %llu %u",
			 (unsigned long long)(8193 + some_size(65536)), 1 + n / 8);
		break;
	case 3:
		snprintf(cmd, sizeof(cmd), "cache %u %u", n, (unsigned int)below(2));
		break;
	case 4:
		snprintf(cmd, sizeof(cmd), "pages %u %u", (unsigned int)below(chance(90) ? 4 : 7),
			 1 + n / 4);
		break;
	case 5:
		/* Sizes the allocators take without a WARN: vmalloc(0) WARNs. */
		snprintf(cmd, sizeof(cmd), "vmalloc %llu %u",
			 1 + (unsigned long long)some_size(65535), 1 + n / 4);
		break;
	case 6:
		/* percpu WARNs on 0 and above 32 KiB (PCPU_MIN_UNIT_SIZE). */
		snprintf(cmd, sizeof(cmd), "percpu %llu %u",
			 1 + (unsigned long long)some_size(chance(90) ? 511 : 32767), n);
		break;
	case 7:
		snprintf(cmd, sizeof(cmd), "order2 %u", 1 + n / 4);
		break;
	case 8:
		snprintf(cmd, sizeof(cmd), "node %u %u", (unsigned int)below(3), n);
		break;
	case 9:
		snprintf(cmd, sizeof(cmd), chance(50) ? "split" : "free_tails");
		break;
	case 10: case 11: case 12:
		snprintf(cmd, sizeof(cmd), "free %s", kinds[below(ARRAY_SIZE(kinds))]);
		break;
	case 13:
		snprintf(cmd, sizeof(cmd), "stress %s %u", chance(50) ? "on" : "toggle",
			 (unsigned int)some_size(2000));
		break;
	case 14: case 15:
		snprintf(cmd, sizeof(cmd), "%s %u %u",
			 chance(50) ? "capture" : "capture_pages", (unsigned int)below(4), n);
		break;
	case 16:
		snprintf(cmd, sizeof(cmd), "%s %u", capture_cmds[below(ARRAY_SIZE(capture_cmds))],
			 (unsigned int)below(4));
		break;
	case 17: case 18:
		snprintf(cmd, sizeof(cmd), "release");
		break;
	case 19: case 20: case 21:
		/* Rust site growth: each load's sites register on first use. */
		snprintf(cmd, sizeof(cmd), "rust %s", rust_cmds[below(ARRAY_SIZE(rust_cmds))]);
		break;
	case 23:
		/* Without KFENCE sampling, N > 0 fills the site (2 ms a try). */
		snprintf(cmd, sizeof(cmd), "kfence %llu %u",
			 (unsigned long long)some_size(4096), chance(80) ? 0 : 1);
		break;
	case 22:
		snprintf(cmd, sizeof(cmd), "percpu_acct %llu %u",
			 1 + (unsigned long long)some_size(255), n);
		break;
	default: {
		size_t i, len = below(70);

		for (i = 0; i < len; i++)
			cmd[i] = chance(90) ? "kmalocfre 0123456789xp"[below(22)] : rnd();
		cmd[len] = '\0';
		op("ctl: random bytes (%zu)", len);
		write_file(ATT_DIR "/ctl", cmd, len);
		return;
	}
	}
	op("ctl: %s", cmd);
	test_ctl(cmd);
}

static void op_files(void)
{
	static const char *const files[] = {
		ATT_DIR "/sites", ATT_DIR "/info", ATT_DIR "/rust_sites",
		"/proc/sys/vm/mem_profiling", "/proc/modules", NODES_PATH, KMEMLEAK,
	};
	const char *f = files[below(ARRAY_SIZE(files) - 1)];
	char *t;

	op("read %s", f);
	t = slurp(f, 1 + some_size(4096));
	free(t);
}

/* ---- fault injection -------------------------------------------------- */

static void fi_set(const char *attr, const char *file, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), DBG "/%s/%s", attr, file);
	write_str(path, val);
}

/* Fault sites count every GFP_KERNEL allocation of every order, quietly. */
static void fi_setup(void)
{
	static const char *const attrs[] = { "failslab", "fail_page_alloc" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(attrs); i++) {
		fi_set(attrs[i], "probability", "0");
		fi_set(attrs[i], "interval", "1");
		fi_set(attrs[i], "times", "-1");
		fi_set(attrs[i], "verbose", "0");
		fi_set(attrs[i], "task-filter", "Y");
		fi_set(attrs[i], "ignore-gfp-wait", "N");
	}
	fi_set("fail_page_alloc", "min-order", "0");
}

static void op_faults(void)
{
	const char *attr = chance(50) ? "failslab" : "fail_page_alloc";
	char v[16];

	if (chance(50)) {
		op("faults: %s off", attr);
		fi_set(attr, "probability", "0");
		return;
	}
	snprintf(v, sizeof(v), "%u", 1 + (unsigned int)below(chance(80) ? 10 : 100));
	op("faults: %s probability %s", attr, v);
	fi_set(attr, "interval", chance(70) ? "1" : "7");
	fi_set(attr, "probability", v);
}

/* ---- page migration ---------------------------------------------------- */

/*
 * Some of the driver's own anonymous pages moved to other nodes (and some to
 * nodes that do not exist), then sometimes all of them compacted: migration
 * hands each page's tag to its new page, and the per-node counters move with
 * it.  On a one-node kernel the moves fail with ENOENT or EINVAL.
 */
static void op_migrate(void)
{
	enum { MAX_PAGES = 64 };
	void *addrs[MAX_PAGES];
	int nodes[MAX_PAGES], status[MAX_PAGES];
	unsigned int i, n = 1 + below(MAX_PAGES);
	size_t len;
	char *p;
	int tries;

	if (chance(10)) {
		op("migrate: compact_memory");
		write_str("/proc/sys/vm/compact_memory", "1");
		return;
	}
	len = n * 4096UL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	/*
	 * Faulted in without this worker's faults: a page fault whose page
	 * cannot be allocated is retried for ever (see stalled_in_fault()).
	 * The move's own allocations may fail.
	 */
	self_faults(false);
	for (i = 0; i < n; i++) {
		p[i * 4096UL] = (char)i;
		addrs[i] = p + i * 4096UL;
		nodes[i] = chance(95) ? (int)below(nr_nodes) : (int)below(nr_nodes + 3) - 1;
	}
	self_faults(true);
	op("migrate: %u pages", n);
	syscall(SYS_move_pages, 0, (unsigned long)n, addrs, nodes, status, 0);
	if (chance(30)) {
		for (i = 0; i < n; i++)
			nodes[i] = (int)below(nr_nodes);
		syscall(SYS_move_pages, 0, (unsigned long)n, addrs, nodes, status, 0);
	}
	/*
	 * Unmapped with the faults off: munmap() allocates (maple tree nodes,
	 * a VMA when it splits one) and fails with ENOMEM under them.  The
	 * pages would stay mapped and forgotten, the next mapping would merge
	 * with them (so its unmap must split), and the worker would grow by
	 * hundreds of MiB until the OOM killer took it.  A pending fail-nth
	 * may still fail one try.
	 */
	self_faults(false);
	for (tries = 0; tries < 8 && munmap(p, len); tries++)
		;
	if (tries == 8)
		__atomic_add_fetch(&sh->unmap_failed, 1, __ATOMIC_SEQ_CST);
	self_faults(true);
}

/* nr_node_ids: one more than the last possible node. */
static unsigned int read_nr_nodes(void)
{
	char *t = slurp("/sys/devices/system/node/possible", 64);
	const char *last;
	unsigned int n = 1;

	if (t) {
		last = strrchr(t, '-');
		last = last ? last + 1 : strrchr(t, ',') ? strrchr(t, ',') + 1 : t;
		n = (unsigned int)strtoul(last, NULL, 10) + 1;
		free(t);
	}
	return n;
}

/* ---- CPU hotplug (-c) -------------------------------------------------- */

/*
 * A CPU other than 0 on or off line.  Booted with maxcpus=1 (one CPU up
 * of two), the kernel runs uniprocessor alternatives and records every
 * module's SMP alternatives; bringing the second CPU up patches them all,
 * so a module whose record was left behind by a failed load is found then.
 * The first bring-up ends uniprocessor mode: none before half the run.
 */
static void op_cpu(void)
{
	char path[64];
	int cpu = 1 + below(3);
	bool on = chance(70);

	if (now() < cpu_after)
		return;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	if (access(path, W_OK))
		return;
	op("cpu: cpu%d %s", cpu, on ? "online" : "offline");
	/* Not failed by this worker's faults: a CPU that never comes up tests nothing. */
	self_faults(false);
	write_str(path, on ? "1" : "0");
	self_faults(true);
}

/* ---- stalls under the faults ------------------------------------------ */

static const char stall_result[] =
	"a worker stalled in a page fault by its faults goes on";

/*
 * The workers' fault injection can stall one for good without any kernel
 * defect: a page fault of its own memory whose page (or page table) cannot
 * be allocated ends in VM_FAULT_OOM without an OOM kill, and 6.12 retries
 * the fault for ever ("Huh VM_FAULT_OOM leaked out to the #PF handler");
 * at or near 100 % fail_page_alloc the worker never gets back to switch
 * the faults off, and the others follow at their next fresh page.  So when
 * a worker has not started an operation for STALL_S seconds and sits in a
 * page fault (its kernel stack, or the kernel log's retry line), the
 * parent (never failed) switches both fault attributes off, and says so.
 * A stall anywhere else is left to the hang checks.
 */
static void faults_off(void)
{
	fi_set("failslab", "probability", "0");
	fi_set("fail_page_alloc", "probability", "0");
}

static int kmsg_rd = -1;		/* the parent's reader of the kernel log */
static double last_retry;		/* when the log last said a fault was retried */

/*
 * A stalled worker that keeps its CPU has no stack to show (/proc/PID/stack
 * is empty for a running task), so the kernel's own line counts as well:
 * pagefault_out_of_memory() says "VM_FAULT_OOM leaked out" (rate-limited,
 * some every 5 s) each time it lets a fault be retried.
 */
static bool stalled_in_fault(pid_t pid)
{
	char path[64], rec[1024], *t;
	bool yes;
	ssize_t n;

	while (kmsg_rd >= 0) {
		n = read(kmsg_rd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)	/* records overwritten: go on */
			continue;
		if (n <= 0)
			break;
		rec[n] = '\0';
		if (strstr(rec, "VM_FAULT_OOM leaked out"))
			last_retry = now();
	}
	if (last_retry && now() - last_retry < 10)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	t = slurp(path, 4096);
	yes = t && strstr(t, "exc_page_fault");
	free(t);
	return yes;
}

/*
 * Shown working before every run (result 7), while no worker runs that could
 * switch the faults off instead: a child with the workers' fault injection
 * sets every slab and page allocation to fail and touches a 2 MiB-aligned
 * page of a fresh 4 MiB mapping, whose page table does not exist yet
 * (fail_page_alloc leaves the data page itself alone: ignore-gfp-highmem).
 * It must stall in that fault, be found by stalled_in_fault() after
 * STALL_S seconds, and finish once the faults are off.
 */
static bool stall_check(void)
{
	size_t len = 4UL << 20;
	double t0 = now();
	bool undone = false;
	int st = 0;
	pid_t p;

	op("stall check: a child fails every allocation, then faults in a page table");
	p = fork();
	if (p == 0) {
		char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *q;

		if (m == MAP_FAILED)
			_exit(1);
		q = (char *)(((uintptr_t)m + (2UL << 20) - 1) & ~((2UL << 20) - 1));
		write_str("/proc/self/make-it-fail", "1");
		/* The page allocator's first: failing slab would fail the next open. */
		fi_set("fail_page_alloc", "interval", "1");
		fi_set("fail_page_alloc", "probability", "100");
		fi_set("failslab", "interval", "1");
		fi_set("failslab", "probability", "100");
		*q = 1;
		_exit(0);
	}
	if (p < 0)
		return false;
	while (waitpid(p, &st, WNOHANG) == 0) {
		if (now() - t0 > STALL_S + 120) {
			printf("# stall check: the child did not finish\n");
			kill(p, SIGKILL);
			waitpid(p, &st, 0);
			break;
		}
		if (!undone && now() - t0 > STALL_S && stalled_in_fault(p)) {
			printf("# stall check: the child stalled in a page fault; faults off\n");
			faults_off();
			undone = true;
		}
		usleep(200000);
	}
	/* Off whatever happened. */
	faults_off();
	if (!undone)
		printf("# stall check: no stall found in %.0f s\n", now() - t0);
	return undone && WIFEXITED(st) && !WEXITSTATUS(st);
}

/* The value of @field in /proc/self/status, in KiB; -1 if none. */
static long status_kb(const char *field)
{
	char *t = slurp("/proc/self/status", 4096);
	char *f = t ? strstr(t, field) : NULL;
	long v = f ? strtol(f + strlen(field), NULL, 10) : -1;

	free(t);
	return v;
}

/* ---- workers ---------------------------------------------------------- */

struct op_kind {
	void (*fn)(void);
	unsigned int weight;
	unsigned int class;
};

static const struct op_kind kinds[] = {
	{ op_arm, 10, X_CAPTURE },
	{ op_disarm, 6, X_CAPTURE },
	{ op_capture_bad, 3, X_CAPTURE },
	{ op_capture_read, 6, X_CAPTURE },
	{ op_allocinfo_read, 6, 0 },
	{ op_ioctl, 8, 0 },
	{ op_compat, 1, X_COMPAT },
	{ op_sysctl, 2, 0 },
	{ op_load, 6, X_MODULES },
	{ op_unload, 5, X_MODULES },
	{ op_ctl, 14, 0 },
	{ op_files, 2, 0 },
	{ op_faults, 2, X_FAULTS },
	{ op_cpu, 1, X_CPU },
	{ op_migrate, 2, X_MIGRATE },
};

static void worker(int i, uint64_t seed, double deadline)
{
	unsigned int total = 0, k, pick;

	me = i;
	seq = 0;
	/* Each worker its own stream, derived from (seed, i). */
	rng = seed * 0x100000001b3ULL + i;
	rnd();
	/* Opened before this worker's faults are on (none fail the parent). */
	make_it_fail_fd = open("/proc/self/make-it-fail", O_WRONLY | O_CLOEXEC);
	self_faults(true);
	for (k = 0; k < ARRAY_SIZE(kinds); k++)
		if (!(kinds[k].class & excluded))
			total += kinds[k].weight;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED) && now() < deadline) {
		pick = below(total);
		for (k = 0; k < ARRAY_SIZE(kinds); k++) {
			if (kinds[k].class & excluded)
				continue;
			if (pick < kinds[k].weight)
				break;
			pick -= kinds[k].weight;
		}
		kinds[k].fn();
	}
	self_faults(false);
	sh->rss_anon_kb[i] = status_kb("RssAnon:");
	_exit(0);
}

/* ---- the end ---------------------------------------------------------- */

static int nfail;
static int ntest;

static void ktap(bool ok, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	ntest++;
	if (!ok)
		nfail++;
	printf("%s %d %s\n", ok ? "ok" : "not ok", ntest, name);
	fflush(stdout);
}

static bool loaded(int m)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/%s", modules[m]);
	return !access(path, F_OK);
}

/*
 * Everything off and out: faults, capture, the modules' objects, the
 * modules.  Runs in a child of its own, so that a hang is seen.
 */
static int tear_down(void)
{
	static const char *const frees[] = {
		"rust free", "free kmalloc", "free large", "free cache", "free pages",
		"free vmalloc", "free percpu", "free order2", "free node",
		"free percpu_acct", "free kfence",
		"capture_free 0", "capture_free 1", "capture_free 2",
		"capture_pages_free 0", "capture_pages_free 1", "capture_pages_free 2",
		"release",
	};
	static const int order[] = { MOD_RUST, MOD_HOLD, MOD_LEAK, MOD_TEST };
	size_t i, k;
	int bad = 0, tries;
	char *t;

	me = MAX_WORKERS - 1;
	write_str("/proc/self/make-it-fail", "0");
	fail_nth(0);
	faults_off();
	op("end: disarm all");
	if (access(CAP_PATH, F_OK) == 0 && cap_write("disarm all", 10))
		bad = printf("# cleanup: disarm all failed\n");
	op("end: sysctl 1");
	write_str(SYSCTL_PATH, "1");
	if (loaded(MOD_TEST))
		for (i = 0; i < ARRAY_SIZE(frees); i++) {
			op("end: ctl %s", frees[i]);
			test_ctl(frees[i]);
		}
	for (k = 0; k < ARRAY_SIZE(order); k++) {
		for (tries = 0; loaded(order[k]) && tries < 50; tries++) {
			op("end: unload %s", modules[order[k]]);
			if (!unload_module(order[k]))
				break;
			usleep(200000);
		}
		if (loaded(order[k]))
			bad = printf("# cleanup: %s does not unload: %s\n", modules[order[k]],
				     strerror(errno));
		if (order[k] == MOD_LEAK && loaded(MOD_TEST)) {
			op("end: ctl release");
			test_ctl("release");
		}
	}
	/* Reading the file frees the tag areas whose rows went to zero. */
	for (i = 0; i < 2; i++) {
		op("end: read " AI_PATH);
		t = slurp(AI_PATH, 4096);
		free(t);
	}
	return bad ? 1 : 0;
}

static bool test_module_name(const char *mod);

static bool test_module_row(const struct row *r)
{
	return test_module_name(r->mod);
}

/*
 * The bytes a kmalloc(@size) object is charged: its slab's slot, which
 * KASAN makes larger than @size (slab_size of the full SLUB).
 */
static long slot_bytes(long size)
{
	char path[96], *t;
	long v = size;

	snprintf(path, sizeof(path), "/sys/kernel/slab/kmalloc-%ld/slab_size", size);
	t = slurp(path, 64);
	if (t && atol(t) > 0)
		v = atol(t);
	free(t);
	return v;
}

/*
 * Whether @bytes and @calls are whole objects and pages of alloc_tag_test_leak's
 * @loads loads, of @obj bytes an object: with profiling switched off at times,
 * what a load allocated while it was off is not counted (and, never freed,
 * never subtracted), so the rows hold some of what the loads leaked, each
 * object or page whole, and nothing else.
 */
static bool leak_rows_fit(long long bytes, long long calls, int loads, long long obj)
{
	long long objs, pages, diff = calls * LEAK_PAGE - bytes;

	/* calls = objs + pages and bytes = objs * obj + pages * LEAK_PAGE. */
	if (obj >= LEAK_PAGE || diff % (LEAK_PAGE - obj))
		return false;
	objs = diff / (LEAK_PAGE - obj);
	pages = calls - objs;
	return objs >= 0 && objs <= (long long)loads * LEAK_OBJS && pages >= 0 && pages <= loads;
}

/* Rows of released modules at 0/0; the leak module's at what its loads leaked. */
static void check_rows(void)
{
	static struct row rows[MAX_ROWS];
	long long leak_bytes = 0, leak_calls = 0, want_bytes, want_calls;
	bool leak_inaccurate = false, ok = true;
	int n, i, nleft = 0, nplaceholder = 0;
	char *text = slurp(AI_PATH, 65536);

	if (!text) {
		ktap(false, "released module rows read 0/0 (no %s: %s)", AI_PATH, strerror(errno));
		return;
	}
	n = parse_rows(text, rows, MAX_ROWS);
	free(text);
	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		if (!test_module_row(r))
			continue;
		nleft++;
		/*
		 * An unloaded module whose names could not be copied (no
		 * memory at its unload) has placeholder names: only
		 * alloc_tag_test_leak's can still hold anything here.
		 */
		if (!strcmp(r->mod, "(unloaded)"))
			nplaceholder++;
		if (!strcmp(r->mod, modules[MOD_LEAK]) || !strcmp(r->mod, "(unloaded)")) {
			leak_bytes += r->bytes;
			leak_calls += r->calls;
			leak_inaccurate |= r->inaccurate;
			continue;
		}
		if (r->bytes || r->calls) {
			printf("# released module row not 0/0: %lld %llu %s:%u [%s] func:%s%s\n",
			       r->bytes, r->calls, r->file, r->line, r->mod, r->func,
			       r->inaccurate ? " accurate:no" : "");
			ok = false;
		}
	}
	printf("# %d rows of the test modules left after unload (%d with placeholder names)\n",
	       nleft, nplaceholder);
	ktap(ok, "rows of released modules read 0/0");
	want_calls = (long long)sh->leak_loads * (LEAK_OBJS + 1);
	want_bytes = (long long)sh->leak_loads *
		     (LEAK_OBJS * slot_bytes(LEAK_OBJ_SIZE) + LEAK_PAGE);
	printf("# alloc_tag_test_leak: %d loads, rows %lld bytes %lld calls%s\n",
	       sh->leak_loads, leak_bytes, leak_calls, leak_inaccurate ? " (accurate:no)" : "");
	if (leak_inaccurate)
		ok = leak_bytes >= 0 && leak_bytes <= want_bytes &&
		     leak_calls >= 0 && leak_calls <= want_calls;
	else if (__atomic_load_n(&sh->profiling_switched_off, __ATOMIC_SEQ_CST))
		ok = leak_rows_fit(leak_bytes, leak_calls, sh->leak_loads,
				   slot_bytes(LEAK_OBJ_SIZE));
	else
		ok = leak_bytes == want_bytes && leak_calls == want_calls;
	ktap(ok, "alloc_tag_test_leak rows hold what its loads leaked%s",
	     sh->profiling_switched_off && !leak_inaccurate ?
	     " (whole objects and pages of them: profiling was switched off)" : "");
}

static bool test_module_name(const char *mod)
{
	size_t m;

	for (m = 0; m < ARRAY_SIZE(modules); m++)
		if (!strcmp(mod, modules[m]))
			return true;
	return !strcmp(mod, "(unloaded)");
}

/*
 * Every tag's per-node values after the run (GET_BATCH with
 * ALLOCINFO_BATCH_NODES, one walk): they add up to the tag's counter, and
 * the test modules' rows, which nothing touches any more, have no node
 * below zero and, at 0/0, every node at 0/0 (no correction left behind by
 * a migration, a failed charge or a module unload).  Not applicable when
 * the kernel cannot say (several nodes, attribution off).
 */
static void check_nodes(void)
{
	size_t stride = sizeof(struct allocinfo_tag_data) + sizeof(struct allocinfo_nodes) +
			nr_nodes * sizeof(struct allocinfo_node_counter);
	struct allocinfo_batch b = {
		.records = (uintptr_t)records,
		.record_size = (__u32)stride,
		.max = (__u32)(BATCH_AREA / stride),
		.flags = ALLOCINFO_BATCH_NODES | ALLOCINFO_BATCH_RESTART,
	};
	unsigned long long nrows = 0, nbad = 0;
	int fd = open(AI_PATH, O_RDONLY);
	bool more = true;
	__u32 i, n;

	if (fd < 0 || stride > ALLOCINFO_RECORD_SIZE_MAX) {
		ktap(false, "per-node values add up (%s: %s, %zu-byte records)", AI_PATH,
		     strerror(errno), stride);
		if (fd >= 0)
			close(fd);
		return;
	}
	while (more) {
		if (ioctl(fd, ALLOCINFO_IOC_GET_BATCH, &b)) {
			if (errno == EOPNOTSUPP && b.flags & ALLOCINFO_BATCH_RESTART) {
				printf("# per-node attribution off: no per-node values\n");
				ktap(true, "per-node values add up # SKIP off");
				close(fd);
				return;
			}
			printf("# GET_BATCH with the node records: %s\n", strerror(errno));
			nbad++;
			break;
		}
		more = b.count == b.max;
		b.flags &= ~ALLOCINFO_BATCH_RESTART;
		for (i = 0; i < b.count; i++) {
			const char *rec = records + i * stride;
			const struct allocinfo_tag_data *d = (const void *)rec;
			const struct allocinfo_nodes *nd = (const void *)(d + 1);
			unsigned long long bytes = 0, calls = 0;
			bool ours = test_module_name(d->tag.modname), neg = false, left = false;

			nrows++;
			for (n = 0; n < nd->nr_nodes && n < nr_nodes; n++) {
				bytes += (unsigned long long)nd->node[n].bytes;
				calls += (unsigned long long)nd->node[n].calls;
				neg |= nd->node[n].bytes < 0 || nd->node[n].calls < 0;
				left |= nd->node[n].bytes || nd->node[n].calls;
			}
			if (nd->nr_nodes != nr_nodes || bytes != d->counter.bytes ||
			    calls != d->counter.calls ||
			    (ours && (neg || (left && !d->counter.bytes && !d->counter.calls)))) {
				if (nbad++ < 10) {
					printf("# %.64s:%llu [%.64s]: %llu/%llu, %llu nodes:",
					       d->tag.filename, (unsigned long long)d->tag.lineno,
					       d->tag.modname, (unsigned long long)d->counter.bytes,
					       (unsigned long long)d->counter.calls,
					       (unsigned long long)nd->nr_nodes);
					for (n = 0; n < nd->nr_nodes && n < nr_nodes; n++)
						printf(" %lld/%lld", (long long)nd->node[n].bytes,
						       (long long)nd->node[n].calls);
					printf("\n");
				}
			}
		}
	}
	close(fd);
	printf("# %llu rows read with their %u nodes, %llu wrong\n", nrows, nr_nodes, nbad);
	ktap(!nbad && nrows, "per-node values add up, the test modules' drained");
}

/*
 * Leaks of upstream 6.12 that fault injection provokes, outside the
 * profiler, each matched by the frames of its backtrace:
 * sysfs_slab_add() does not kobject_put() after kobject_init_and_add()
 * fails (a test module's kmem_cache_create() with a failing allocation),
 * so the kobject's name stays allocated.
 */
static const char *const upstream_leaks[][2] = {
	{ "kobject_set_name_vargs", "sysfs_slab_add" },
};

/* @text as KTAP diagnostic lines, the first after @prefix. */
static void print_comment(const char *prefix, const char *text)
{
	const char *nl;

	while (*text) {
		nl = strchr(text, '\n');
		if (!nl)
			nl = text + strlen(text);
		printf("# %s%.*s\n", prefix, (int)(nl - text), text);
		prefix = "";
		text = *nl ? nl + 1 : nl;
	}
}

static bool upstream_leak(const char *report)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(upstream_leaks); i++)
		if (strstr(report, upstream_leaks[i][0]) && strstr(report, upstream_leaks[i][1]))
			return true;
	return false;
}

/*
 * Two kmemleak scans; every leak but alloc_tag_test_leak's (3 x 512 bytes
 * per load, allocated from its init) and the known upstream ones fails.
 */
static void check_kmemleak(void)
{
	char *text, *p, *next;
	int expected = 0, upstream = 0, other = 0;

	if (access(KMEMLEAK, W_OK)) {
		ktap(true, "kmemleak # SKIP no " KMEMLEAK);
		return;
	}
	/* A leak is reported by the second scan that finds it unreferenced. */
	op("end: kmemleak scan");
	write_str(KMEMLEAK, "scan");
	op("end: kmemleak scan again");
	write_str(KMEMLEAK, "scan");
	text = slurp(KMEMLEAK, 65536);
	if (!text) {
		ktap(false, "kmemleak: cannot read " KMEMLEAK);
		return;
	}
	for (p = strstr(text, "unreferenced object"); p; p = next) {
		unsigned long size = 0;
		char *q = strstr(p, "(size ");

		next = strstr(p + 1, "unreferenced object");
		if (next)
			next[-1] = '\0';
		if (q)
			size = strtoul(q + 6, NULL, 10);
		if (size == LEAK_OBJ_SIZE && strstr(p, "do_init_module") &&
		    (strstr(p, "atl_init") || strstr(p, "\n    0x")) &&
		    expected < sh->leak_loads * LEAK_OBJS) {
			expected++;
			continue;
		}
		if (upstream_leak(p)) {
			upstream++;
			print_comment("kmemleak, a known upstream leak: ", p);
			continue;
		}
		other++;
		print_comment("kmemleak: ", p);
	}
	free(text);
	printf("# kmemleak: %d leaks of alloc_tag_test_leak (expected), %d upstream's, %d others\n",
	       expected, upstream, other);
	ktap(!other, "kmemleak finds no leak");
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	int seconds = 60, nworkers = 4, i, c, st, alive;
	pid_t pids[MAX_WORKERS], p;
	bool died = false, hung = false;
	double t0, deadline, give_up, last_op[MAX_WORKERS];
	uint64_t seen_ops[MAX_WORKERS] = { 0 };
	unsigned long long total = 0;
	int unstalled = 0;
	bool stalled_ok;
	char *text, *s;

	excluded = X_CPU;
	while ((c = getopt(argc, argv, "cs:t:w:x:")) != -1) {
		switch (c) {
		case 'c':
			excluded &= ~X_CPU;
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			seconds = atoi(optarg);
			break;
		case 'w':
			nworkers = atoi(optarg);
			break;
		case 'x':
			for (s = strtok(optarg, ","); s; s = strtok(NULL, ","))
				excluded |= !strcmp(s, "internal") ? X_INTERNAL :
					    !strcmp(s, "faults") ? X_FAULTS :
					    !strcmp(s, "modules") ? X_MODULES :
					    !strcmp(s, "capture") ? X_CAPTURE :
					    !strcmp(s, "compat") ? X_COMPAT :
					    !strcmp(s, "migrate") ? X_MIGRATE : 0;
			break;
		default:
			fprintf(stderr, "usage: %s [-c] [-s SEED] [-t SECS] [-w N] [-x CLASS,..]\n",
				argv[0]);
			return 2;
		}
	}
	if (nworkers < 1 || nworkers > MAX_WORKERS - 1)
		nworkers = 4;
	snprintf(selfdir, sizeof(selfdir), "%s", argv[0]);
	s = strrchr(selfdir, '/');
	if (s)
		*s = '\0';
	else
		snprintf(selfdir, sizeof(selfdir), ".");
	setvbuf(stdout, NULL, _IOLBF, 0);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	guard = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	records = mmap(NULL, BATCH_AREA + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rdonly = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pool = calloc(MAX_ROWS, sizeof(*pool));
	if (sh == MAP_FAILED || guard == MAP_FAILED || records == MAP_FAILED ||
	    rdonly == MAP_FAILED || !pool) {
		perror("fuzz: setup");
		return 1;
	}
	mprotect(guard + 4096, 4096, PROT_NONE);
	mprotect(records + BATCH_AREA, 4096, PROT_NONE);

	/* Every operation line reaches the console, none rate-limited. */
	if (write_str("/proc/sys/kernel/printk_devkmsg", "on\n"))
		printf("# kernel.printk_devkmsg=on failed: the operation log is rate-limited\n");
	kmsg_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	kmsg_rd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_rd >= 0)
		lseek(kmsg_rd, 0, SEEK_END);
	if (access(KMEMLEAK, W_OK) == 0)
		write_str(KMEMLEAK, "scan=off");
	fi_setup();
	rng = seed;
	nr_nodes = read_nr_nodes();
	text = slurp(AI_PATH, 65536);
	if (!text) {
		printf("fuzz: no %s\n", AI_PATH);
		return 1;
	}
	refresh_pool(text);
	free(text);
	shared_ai_fd = open(AI_PATH, O_RDONLY);
	shared_cap_fd = open(CAP_PATH, O_RDONLY);

	printf("fuzz: seed %llu, %d s, %d workers, %d rows in %s, %u nodes\n",
	       (unsigned long long)seed, seconds, nworkers, npool, AI_PATH, nr_nodes);
	op("start: seed %llu, %d s, %d workers", (unsigned long long)seed, seconds, nworkers);
	stalled_ok = (excluded & X_FAULTS) || stall_check();
	t0 = now();
	deadline = t0 + seconds;
	cpu_after = t0 + seconds / 2;
	for (i = 0; i < nworkers; i++) {
		sh->rss_anon_kb[i] = -1;
		pids[i] = fork();
		if (pids[i] == 0)
			worker(i, seed, deadline);
	}

	/* Wait; a worker killed by a signal (an Oops kills it) ends the run. */
	alive = nworkers;
	give_up = deadline + GRACE_S;
	for (i = 0; i < nworkers; i++)
		last_op[i] = now();
	while (alive) {
		for (i = 0; i < nworkers; i++) {
			if (!pids[i] || sh->ops[i] != seen_ops[i]) {
				seen_ops[i] = sh->ops[i];
				last_op[i] = now();
				continue;
			}
			if (now() - last_op[i] < STALL_S || (excluded & X_FAULTS) ||
			    !stalled_in_fault(pids[i]))
				continue;
			printf("# worker %d stalled in a page fault in op %s: faults off\n", i,
			       sh->cur[i]);
			faults_off();
			unstalled++;
			last_op[i] = now();
		}
		p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			for (i = 0; i < nworkers && pids[i] != p; i++)
				;
			if (i == nworkers)
				continue;
			alive--;
			pids[i] = 0;
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				printf("# worker %d died (%s %d) in op %s\n", i,
				       WIFSIGNALED(st) ? "signal" : "exit",
				       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
				       sh->cur[i]);
				died = true;
				__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
				/* The others stop at their next operation, or hang. */
				if (give_up > now() + GRACE_S)
					give_up = now() + GRACE_S;
			}
			continue;
		}
		if (now() > give_up) {
			hung = true;
			write_str("/proc/sysrq-trigger", "w");
			for (i = 0; i < nworkers; i++) {
				char path[64];

				if (!pids[i])
					continue;
				printf("# worker %d hangs in op %s\n", i, sh->cur[i]);
				snprintf(path, sizeof(path), "/proc/%d/stack", pids[i]);
				text = slurp(path, 4096);
				if (text)
					printf("# its kernel stack:\n%s", text);
				free(text);
				kill(pids[i], SIGKILL);
			}
			break;
		}
		usleep(200000);
	}
	for (i = 0; i < nworkers; i++)
		total += sh->ops[i];
	printf("fuzz: seed %llu: %llu operations in %.0f s (", (unsigned long long)seed, total,
	       now() - t0);
	for (i = 0; i < nworkers; i++)
		printf("%sw%d %llu", i ? ", " : "", i, (unsigned long long)sh->ops[i]);
	printf(")\n");
	/* A worker's own memory: its mappings must not pile up. */
	printf("fuzz: anonymous memory (RssAnon) at the end:");
	for (i = 0; i < nworkers; i++)
		if (sh->rss_anon_kb[i] < 0)
			printf("%s w%d ?", i ? "," : "", i);
		else
			printf("%s w%d %ld KiB", i ? "," : "", i, sh->rss_anon_kb[i]);
	printf("; %d unmaps failed with the faults off\n", sh->unmap_failed);
	if (unstalled)
		printf("fuzz: faults switched off %d times for a worker stalled in a page fault\n",
		       unstalled);

	printf("TAP version 13\n1..7\n");
	ktap(!died && !hung, "workers finished in time");
	if (hung) {
		/* Whatever hangs may hold what cleanup needs. */
		printf("# skipping the cleanup after a hang\n");
		ktap(false, "cleanup # hang");
		ktap(false, "rows of released modules read 0/0 # hang");
		ktap(false, "alloc_tag_test_leak rows # hang");
		ktap(false, "kmemleak # hang");
		ktap(false, "per-node values add up # hang");
		ktap(stalled_ok, "%s", stall_result);
	} else {
		bool cleaned = false;

		p = fork();
		if (p == 0)
			_exit(tear_down());
		for (i = 0; i < CLEANUP_S * 5; i++) {
			if (waitpid(p, &st, WNOHANG) == p) {
				cleaned = WIFEXITED(st) && !WEXITSTATUS(st);
				break;
			}
			usleep(200000);
		}
		if (i == CLEANUP_S * 5) {
			printf("# cleanup hangs in op %s\n", sh->cur[MAX_WORKERS - 1]);
			write_str("/proc/sysrq-trigger", "w");
		}
		ktap(cleaned, "cleanup: capture disarmed, modules emptied and unloaded");
		/* Exact whether profiling was switched off on the way or not. */
		if (sh->profiling_switched_off)
			printf("# profiling was switched off during the run\n");
		check_rows();
		check_kmemleak();
		check_nodes();
		if (excluded & X_FAULTS)
			ktap(true, "%s # SKIP faults left out", stall_result);
		else
			ktap(stalled_ok, "%s", stall_result);
	}
	printf("fuzz: seed %llu: %s\n", (unsigned long long)seed, nfail ? "FAIL" : "PASS");
	return nfail ? 1 : 0;
}
