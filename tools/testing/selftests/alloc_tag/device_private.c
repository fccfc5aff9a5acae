// SPDX-License-Identifier: GPL-2.0
/*
 * Device-private pages never carry a charge.  lib/test_hmm.c
 * (CONFIG_TEST_HMM) simulates a device with ZONE_DEVICE private memory: it
 * migrates a process's anonymous pages to device pages, which
 * memremap_pages() made and which are freed to the driver, never to the page
 * allocator (so nothing would ever uncharge them), and back to system pages
 * it allocates itself.  Each round trip must leave these rows exact:
 *
 *   anonymous  the row the test's anonymous pages are charged to: it gives
 *              them back when they leave for the device
 *   backing    test_hmm's system pages behind its device pages: charged
 *              while the data is on the device
 *   returned   test_hmm's system pages the data comes back to: charged
 *              while the data is back in the process
 *
 * and once the process frees its memory both test_hmm rows are 0/0, and
 * unloading test_hmm leaves no row of it.
 *
 * The anonymous row is shared with every anonymous fault in the system, so
 * the test keeps its own faults out of it: it runs pinned to one CPU (the
 * pages it gets back sit in that CPU's LRU batch until its munmap drains
 * it), and every page it writes (the /proc/allocinfo image, the stack, the
 * report) is faulted in before the first count.  Mismatches are collected
 * into that report and printed at the end, since printing can fault.
 *
 * Skipped when test_hmm.ko is not in the initramfs (kernels without
 * CONFIG_TEST_HMM=m), except on boots that carry allocprof_hmm.
 */
#include "alloc_tag_util.h"

#include <linux/compiler.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "../../../../lib/test_hmm_uapi.h"

#include "../kselftest_harness.h"

#define HMM_MOD		"test_hmm"
#define HMM_DEV		"/dev/hmm_dmirror0"
#define PAGE		4096LL
/* Fewer than test_hmm's batch of 64, and a count no other row moves by. */
#define NPAGES		40
#define ROUNDS		2
#define MAX_ROWS	4096

enum { ANON, BACKING, RETURNED, NR_TRACKED };

static const char *const row_name[NR_TRACKED] = { "anonymous", "backing", "returned" };
/* test_hmm's functions whose page allocations make the backing and returned rows. */
static const char *const hmm_func[NR_TRACKED] = {
	NULL, "dmirror_devmem_alloc_page", "dmirror_devmem_fault_alloc_and_copy",
};

/* Everything written while counting lives here and is faulted in first. */
static char image[1 << 20];
static struct {
	int nr;
	struct ai_row row[MAX_ROWS];
} before;
static char report[8192];
static size_t report_len;
static int mismatches;
static char bounce[NPAGES * PAGE];
static struct hmm_dmirror_cmd cmd;

struct tracked {
	struct ai_row site[NR_TRACKED];
	struct ai_row now[NR_TRACKED];
	int found[NR_TRACKED];
	int hmm_rows;
};

/* Out of line, so that the calls after it run on the stack it faulted in. */
static noinline void prefault_stack(void)
{
	char pad[256 << 10];

	memset(pad, 0, sizeof(pad));
	/* The stores must happen although nothing reads them. */
	asm volatile("" : : "r" (pad) : "memory");
}

/* /proc/allocinfo into image[]; 0 or -errno. */
static int read_image(void)
{
	size_t len = 0;
	ssize_t n;
	int fd = open(AI_PATH, O_RDONLY);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, image + len, sizeof(image) - 1 - len)) > 0)
		len += n;
	close(fd);
	if (n < 0)
		return -EIO;
	if (len == sizeof(image) - 1)
		return -EFBIG;
	image[len] = '\0';
	return 0;
}

static bool same_site(const struct ai_row *a, const struct ai_row *b)
{
	return a->line == b->line && !strcmp(a->file, b->file) &&
	       !strcmp(a->module, b->module) && !strcmp(a->func, b->func);
}

static int snapshot_fn(const struct ai_row *r, void *arg)
{
	if (before.nr == MAX_ROWS)
		return -1;
	before.row[before.nr++] = *r;
	return 0;
}

/* Rows that gained exactly NPAGES pages and calls since the snapshot. */
struct grown {
	int index, nr;
	struct ai_row row;
};

static int grown_fn(const struct ai_row *r, void *arg)
{
	struct grown *g = arg;
	const struct ai_row *b = NULL;
	long long bytes = 0;
	unsigned long long calls = 0;

	/* Rows come in the same order; a new row started from 0/0. */
	if (g->index < before.nr && same_site(&before.row[g->index], r))
		b = &before.row[g->index];
	for (int i = 0; !b && i < before.nr; i++)
		if (same_site(&before.row[i], r))
			b = &before.row[i];
	g->index++;
	if (b) {
		bytes = b->bytes;
		calls = b->calls;
	}
	if (r->bytes - bytes == NPAGES * PAGE && r->calls - calls == NPAGES) {
		g->nr++;
		g->row = *r;
	}
	return 0;
}

static int tracked_fn(const struct ai_row *r, void *arg)
{
	struct tracked *t = arg;

	if (!strcmp(r->module, HMM_MOD))
		t->hmm_rows++;
	for (int i = 0; i < NR_TRACKED; i++) {
		if (!same_site(&t->site[i], r))
			continue;
		t->now[i] = *r;
		t->found[i]++;
	}
	return 0;
}

/* The tracked rows now; 0 if each is there exactly once. */
static int read_tracked(struct tracked *t)
{
	int ret = read_image();

	if (ret)
		return ret;
	memset(t->found, 0, sizeof(t->found));
	t->hmm_rows = 0;
	if (ai_walk_rows(image, tracked_fn, t, NULL))
		return -EBADMSG;
	for (int i = 0; i < NR_TRACKED; i++)
		if (t->found[i] != 1)
			return -ENOENT;
	return 0;
}

/* test_hmm's row of @func in the snapshot; 0 if there is exactly one. */
static int find_hmm_row(const char *func, struct ai_row *out)
{
	int n = 0;

	for (int i = 0; i < before.nr; i++) {
		if (strcmp(before.row[i].module, HMM_MOD) || strcmp(before.row[i].func, func))
			continue;
		*out = before.row[i];
		n++;
	}
	return n == 1 ? 0 : -ENOENT;
}

/* Records a mismatch of tracked row @i at @step (of @round, if not 0) in the report. */
static void check(const char *step, int round, const struct tracked *t, int i,
		  long long bytes, unsigned long long calls)
{
	const struct ai_row *r = &t->now[i];
	char where[32] = "";
	int n;

	if (r->bytes == bytes && r->calls == calls)
		return;
	mismatches++;
	if (round)
		snprintf(where, sizeof(where), "round %d, ", round);
	n = snprintf(report + report_len, sizeof(report) - report_len,
		     "%s%s: %s row %s:%u%s%s%s func:%s is %lld/%llu, want %lld/%llu\n",
		     where, step, row_name[i], r->file, r->line, r->module[0] ? " [" : "",
		     r->module, r->module[0] ? "]" : "", r->func, r->bytes, r->calls,
		     bytes, calls);
	if (n > 0 && (size_t)n < sizeof(report) - report_len)
		report_len += n;
}

/*
 * Each tracked row against its start (the anonymous row: before the test
 * wrote its pages): @anon, @backing and @returned pages more.
 */
static void check_all(const char *step, int round, const struct tracked *t,
		      const struct ai_row *start, long long anon, long long backing,
		      long long returned)
{
	const long long pages[NR_TRACKED] = { anon, backing, returned };

	for (int i = 0; i < NR_TRACKED; i++)
		check(step, round, t, i, start[i].bytes + pages[i] * PAGE,
		      start[i].calls + pages[i]);
}

static int hmm_cmd(int fd, unsigned long req, char *addr)
{
	memset(&cmd, 0, sizeof(cmd));
	cmd.addr = (unsigned long)addr;
	cmd.ptr = (unsigned long)bounce;
	cmd.npages = NPAGES;
	return ioctl(fd, req, &cmd) ? -errno : 0;
}

static bool data_intact(const char *p)
{
	for (long i = 0; i < NPAGES; i++)
		if (p[i * PAGE] != (char)(i + 1) || p[i * PAGE + PAGE - 1] != (char)~i)
			return false;
	return true;
}

TEST(round_trips)
{
	struct tracked t = { 0 };
	struct ai_row start[NR_TRACKED];
	struct grown g = { 0 };
	bool required = ai_cmdline_has("allocprof_hmm");
	cpu_set_t cpu;
	char *p;
	int fd, ret;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (ai_sysctl_read() != 1)
		SKIP(return, "profiling is off");
	ret = ai_load_module(HMM_MOD);
	if (ret == -ENOENT && !required)
		SKIP(return, HMM_MOD ".ko not found: kernel without CONFIG_TEST_HMM=m");
	ASSERT_EQ(0, ret) TH_LOG("loading " HMM_MOD);
	fd = open(HMM_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0) TH_LOG(HMM_DEV ": %s", strerror(errno));

	CPU_ZERO(&cpu);
	CPU_SET(sched_getcpu(), &cpu);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpu), &cpu));
	prefault_stack();
	memset(image, 1, sizeof(image));
	memset(&before, 1, sizeof(before));
	memset(report, 1, sizeof(report));
	memset(bounce, 1, sizeof(bounce));
	memset(&cmd, 1, sizeof(cmd));
	report[0] = '\0';
	p = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);

	/* Twice: the first read faults in whatever reading touches. */
	ASSERT_EQ(0, read_image());
	ASSERT_EQ(0, read_image());
	before.nr = 0;
	ASSERT_EQ(0, ai_walk_rows(image, snapshot_fn, NULL, NULL));
	for (int i = BACKING; i < NR_TRACKED; i++) {
		ASSERT_EQ(0, find_hmm_row(hmm_func[i], &t.site[i]))
			TH_LOG("no single " HMM_MOD " row of %s", hmm_func[i]);
		/* A fresh test_hmm has charged nothing there yet. */
		ASSERT_EQ(0, t.site[i].bytes);
		ASSERT_EQ(0ULL, t.site[i].calls);
	}

	for (long i = 0; i < NPAGES; i++) {
		p[i * PAGE] = i + 1;
		p[i * PAGE + PAGE - 1] = ~i;
	}
	ASSERT_EQ(0, read_image());
	ASSERT_EQ(0, ai_walk_rows(image, grown_fn, &g, NULL));
	ASSERT_EQ(1, g.nr) TH_LOG("rows that gained the %d pages written: %d", NPAGES, g.nr);
	t.site[ANON] = g.row;
	for (int i = 0; i < before.nr; i++)
		if (same_site(&before.row[i], &g.row))
			t.site[ANON] = before.row[i];
	memcpy(start, t.site, sizeof(start));
	ASSERT_EQ(0, read_tracked(&t));
	check_all("written", 0, &t, start, NPAGES, 0, 0);

	for (int round = 1; round <= ROUNDS; round++) {
		ASSERT_EQ(0, hmm_cmd(fd, HMM_DMIRROR_MIGRATE_TO_DEV, p));
		ASSERT_EQ((__u64)NPAGES, cmd.cpages);
		ASSERT_TRUE(data_intact(bounce));
		ASSERT_EQ(0, read_tracked(&t));
		check_all("on the device", round, &t, start, 0, NPAGES, 0);

		ASSERT_EQ(0, hmm_cmd(fd, HMM_DMIRROR_MIGRATE_TO_SYS, p));
		ASSERT_EQ((__u64)NPAGES, cmd.cpages);
		ASSERT_TRUE(data_intact(p));
		ASSERT_EQ(0, read_tracked(&t));
		check_all("back in memory", round, &t, start, 0, 0, NPAGES);
	}

	ASSERT_EQ(0, munmap(p, NPAGES * PAGE));
	ASSERT_EQ(0, read_tracked(&t));
	check_all("freed", 0, &t, start, 0, 0, 0);
	close(fd);

	ASSERT_EQ(0, ai_unload_module(HMM_MOD));
	/* Nothing of it is left charged, so none of its rows stays. */
	ASSERT_EQ(0, read_image());
	t.hmm_rows = 0;
	ASSERT_EQ(0, ai_walk_rows(image, tracked_fn, &t, NULL));

	for (char *line = report, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl) {
			TH_LOG("%s", line);
			break;
		}
		*nl = '\0';
		TH_LOG("%s", line);
	}
	EXPECT_EQ(0, mismatches);
	EXPECT_EQ(0, t.hmm_rows) TH_LOG("%d rows of " HMM_MOD " after its unload", t.hmm_rows);
}

TEST_HARNESS_MAIN
