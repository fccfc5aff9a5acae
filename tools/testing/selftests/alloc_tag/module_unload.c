// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading a module whose allocations are still alive: the unload goes
 * through without an Oops, the kernel log names every live site of the
 * module, and /proc/allocinfo stays readable and well-formed.
 *
 * On the Rust core the module's memory is freed whole at unload: its tags
 * live in a tag area of their own, which stays (with the module's rows)
 * until the last allocation is freed and then goes too.
 */
#include "alloc_tag_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"

#define LEAK_MOD "alloc_tag_test_leak"
#define HOLD_MOD "alloc_tag_test_hold"
#define TEST_MOD "alloc_tag_test"
#define NOTAGS_MOD "alloc_tag_test_notags"
#define HOLD_CYCLES 8

struct live_rows {
	struct ai_row rows[8];
	int nr;
};

static int collect_live(const struct ai_row *r, void *arg)
{
	struct live_rows *l = arg;

	if (!strcmp(r->module, LEAK_MOD) && r->calls && l->nr < 8)
		l->rows[l->nr++] = *r;
	return 0;
}

static int no_negative(const struct ai_row *r, void *arg)
{
	return r->bytes < 0 || r->calls > (1ULL << 62);
}

TEST(live_allocations_reported)
{
	struct live_rows live = { .nr = 0 }, earlier = { .nr = 0 };
	int ret, i;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (ai_sysctl_read() != 1)
		SKIP(return, "profiling is off");
	/* Copies unloaded earlier keep their rows (on the Rust core). */
	ASSERT_EQ(0, ai_walk(collect_live, &earlier));
	ASSERT_LE(earlier.nr, 6);
	ret = ai_load_module(LEAK_MOD);
	if (ret == -ENOENT)
		SKIP(return, LEAK_MOD ".ko not found");
	ASSERT_EQ(0, ret);

	ASSERT_EQ(0, ai_walk(collect_live, &live));
	/* 3 x kmalloc(512) at one site and one page at another. */
	ASSERT_EQ(earlier.nr + 2, live.nr);
	for (i = 0; i < live.nr; i++) {
		struct ai_row *r = &live.rows[i];

		if (r->calls == 3) {
			EXPECT_EQ(3 * ai_kmalloc_bytes(512), r->bytes);
		} else {
			EXPECT_EQ(1, r->calls);
			EXPECT_EQ(4096, r->bytes);
		}
	}

	ASSERT_EQ(0, ai_unload_module(LEAK_MOD));
	ASSERT_NE(0, access("/sys/module/" LEAK_MOD, F_OK));

	for (i = 0; i < live.nr; i++) {
		char site[300];

		snprintf(site, sizeof(site), "%s:%u", live.rows[i].file, live.rows[i].line);
		EXPECT_TRUE(ai_kmsg_has(site, LEAK_MOD, NULL)) {
			TH_LOG("no kernel log line reports live site %s of %s", site, LEAK_MOD);
		}
	}

	EXPECT_EQ(0, ai_walk(no_negative, NULL));
}

/* What the rows of one module, and of the module loader's memory, add up to. */
struct sums {
	const char *module;
	int rows;		/* rows of @module */
	int live_rows;		/* of those, rows with live allocations */
	long long bytes;	/* of @module's rows */
	unsigned long long calls;
	int bad;		/* live rows not as HOLD_MOD allocates */
	long long execmem_bytes;	/* rows of mm/execmem.c: module memory */
	unsigned long long execmem_calls;
};

static int sum_rows(const struct ai_row *r, void *arg)
{
	struct sums *s = arg;

	if (!strcmp(r->file, "mm/execmem.c")) {
		s->execmem_bytes += r->bytes;
		s->execmem_calls += r->calls;
	}
	if (strcmp(r->module, s->module))
		return 0;
	s->rows++;
	s->bytes += r->bytes;
	s->calls += r->calls;
	if (!r->calls)
		return 0;
	s->live_rows++;
	/* 3 x kmalloc(512) at one site, one order-1 block at another. */
	if (!(r->calls == 3 && r->bytes == 3 * ai_kmalloc_bytes(512)) &&
	    !(r->calls == 1 && r->bytes == 2 * 4096))
		s->bad++;
	return 0;
}

static int read_sums_once(struct sums *s, const char *module)
{
	memset(s, 0, sizeof(*s));
	s->module = module;
	return ai_walk(sum_rows, s);
}

/*
 * The sums once the module loader's memory is still: a module's init
 * sections are freed by a work item after an RCU grace period, some time
 * after its load returned.  Reads until two, 100 ms apart, agree (5 s at
 * most).
 */
static int read_sums(struct sums *s, const char *module)
{
	struct sums prev;
	int i;

	if (read_sums_once(&prev, module))
		return -1;
	for (i = 0; i < 50; i++) {
		usleep(100 * 1000);
		if (read_sums_once(s, module))
			return -1;
		if (s->execmem_bytes == prev.execmem_bytes &&
		    s->execmem_calls == prev.execmem_calls)
			return 0;
		prev = *s;
	}
	return -1;
}

/* The tag area cases: the Rust core, profiling on, alloc_tag_test loaded. */
FIXTURE(tag_area) {
	int unused;
};

FIXTURE_SETUP(tag_area)
{
	int ret;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (ai_is_upstream())
		SKIP(return, "6.12's C core keeps the module's data instead");
	if (ai_sysctl_read() != 1)
		SKIP(return, "profiling is off");
	ret = ai_load_module(TEST_MOD);
	if (ret == -ENOENT)
		SKIP(return, TEST_MOD ".ko not found");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(tag_area)
{
}

TEST_F(tag_area, outlives_module_then_goes)
{
	struct sums before, s;
	int i, ret;

	ASSERT_EQ(0, att_ctl("release"));
	/* Rows of copies still held by earlier tests stay as they are. */
	ASSERT_EQ(0, read_sums(&before, HOLD_MOD));

	for (i = 1; i <= HOLD_CYCLES; i++) {
		ret = ai_load_module(HOLD_MOD);
		if (ret == -ENOENT)
			SKIP(return, HOLD_MOD ".ko not found");
		ASSERT_EQ(0, ret);
		ASSERT_EQ(0, ai_unload_module(HOLD_MOD));
		ASSERT_NE(0, access("/sys/module/" HOLD_MOD, F_OK));

		/* Every unloaded copy keeps its two live rows, exact. */
		ASSERT_EQ(0, read_sums(&s, HOLD_MOD));
		EXPECT_EQ(before.live_rows + 2 * i, s.live_rows);
		EXPECT_EQ(0, s.bad);
		EXPECT_EQ(before.bytes + (long long)i * (3 * ai_kmalloc_bytes(512) + 2 * 4096),
			  s.bytes);
		EXPECT_EQ(before.calls + i * 4ULL, s.calls);
	}
	/*
	 * The module's memory went back at each unload: all that stayed of
	 * the module loader's memory is one tag area per copy (the module's
	 * two tags are 80 bytes): one vmalloc'd page and the 8-byte array
	 * that vmalloc keeps of its pages, two calls.  A kept module would
	 * leave its text, data and read-only data: three pages or more each.
	 */
	EXPECT_EQ(before.execmem_bytes + HOLD_CYCLES * (4096LL + ai_kmalloc_bytes(8)),
		  s.execmem_bytes);
	EXPECT_EQ(before.execmem_calls + HOLD_CYCLES * 2, s.execmem_calls);
	EXPECT_TRUE(ai_kmsg_has("alive at module unload", HOLD_MOD, NULL));

	/* Freed: the rows go at the next open, and so do the tag areas. */
	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, read_sums(&s, HOLD_MOD));
	EXPECT_EQ(before.rows, s.rows);
	EXPECT_EQ(before.execmem_bytes, s.execmem_bytes);
	EXPECT_EQ(before.execmem_calls, s.execmem_calls);
	EXPECT_TRUE(ai_kmsg_has("freed the tag area of unloaded module", HOLD_MOD, NULL));

	/* A module with nothing left at unload takes its tag area along. */
	ASSERT_EQ(0, ai_load_module(HOLD_MOD));
	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, ai_unload_module(HOLD_MOD));
	ASSERT_EQ(0, read_sums(&s, HOLD_MOD));
	EXPECT_EQ(before.rows, s.rows);
	EXPECT_EQ(before.execmem_bytes, s.execmem_bytes);
	EXPECT_EQ(before.execmem_calls, s.execmem_calls);
}

/* MemAvailable from /proc/meminfo, in KiB; -1 if not found. */
static long mem_available_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * Gives back what the slab caches hold empty: every cache's shrink (full
 * SLUB only), which also drains KASAN's quarantine of freed objects.
 */
static void shrink_slabs(void)
{
	DIR *d = opendir("/sys/kernel/slab");
	struct dirent *e;
	char path[300];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		int fd;

		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink", e->d_name);
		fd = open(path, O_WRONLY);
		if (fd >= 0) {
			/* A cache that cannot shrink keeps its slabs. */
			(void)!write(fd, "1", 1);
			close(fd);
		}
	}
	closedir(d);
}

#define CHURN_WARMUP 8
#define CHURN_CYCLES 64
/*
 * What the page and slab allocators keep cached between two readings on
 * this 2-CPU VM (per-CPU page lists, partial slabs), after a warm-up that
 * lets one-time growth (slab caches, KASAN's stack depot) happen first:
 * MemAvailable is only a coarse guard; the exact check is the module
 * loader's rows.
 */
#define CHURN_SLACK_KB 1024

/*
 * Module churn: many load/unload cycles of a module whose allocations are
 * still alive at unload and freed later.  Every copy's rows stay exact; once
 * freed, the rows, the tag areas and the module memory are all back.
 */
TEST_F(tag_area, churn)
{
	struct sums before, s;
	long avail_before, avail_after;
	int i;

	for (i = 0; i < CHURN_WARMUP; i++) {
		ASSERT_EQ(0, ai_load_module(HOLD_MOD));
		ASSERT_EQ(0, ai_unload_module(HOLD_MOD));
	}
	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, read_sums(&before, HOLD_MOD));
	shrink_slabs();
	avail_before = mem_available_kb();
	ASSERT_LT(0, avail_before);

	for (i = 0; i < CHURN_CYCLES; i++) {
		ASSERT_EQ(0, ai_load_module(HOLD_MOD));
		ASSERT_EQ(0, ai_unload_module(HOLD_MOD));
	}
	ASSERT_EQ(0, read_sums(&s, HOLD_MOD));
	EXPECT_EQ(before.live_rows + 2 * CHURN_CYCLES, s.live_rows);
	EXPECT_EQ(0, s.bad);
	EXPECT_EQ(before.calls + 4ULL * CHURN_CYCLES, s.calls);
	EXPECT_EQ(before.execmem_bytes + CHURN_CYCLES * (4096LL + ai_kmalloc_bytes(8)),
		  s.execmem_bytes);

	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, read_sums(&s, HOLD_MOD));
	EXPECT_EQ(before.rows, s.rows);
	EXPECT_EQ(before.execmem_bytes, s.execmem_bytes);
	EXPECT_EQ(before.execmem_calls, s.execmem_calls);
	shrink_slabs();
	avail_after = mem_available_kb();
	EXPECT_LE(avail_before - CHURN_SLACK_KB, avail_after) {
		TH_LOG("MemAvailable %ld kB before %d cycles, %ld kB after", avail_before,
		       CHURN_CYCLES, avail_after);
	}
	TH_LOG("%d cycles: MemAvailable %ld kB before, %ld kB after", CHURN_CYCLES,
	       avail_before, avail_after);
}

static int write_sysrq(char c)
{
	int fd = open("/proc/sysrq-trigger", O_WRONLY);
	int ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, &c, 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

#define SHOW_MEM_CYCLES	12
#define SHOW_MEM_BIG	"big=128"	/* 128 order-4 blocks: 8 MiB, a top row */

/*
 * show_mem() (SysRq m) every 10 ms while a module whose allocations
 * outlive it, at the top of the report, is loaded and unloaded and its
 * allocations freed: the report reads each tag's strings and counters
 * while the module's strings are freed at unload and its tag area once
 * drained.  The kernel must stay up and KASAN quiet (make test-debug), and
 * the module's row must show up in the reports (the test also asks for one
 * right after each load, so that it does whatever the child's timing).
 */
TEST(show_mem_during_unload)
{
	int status, i;
	pid_t pid;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (ai_sysctl_read() != 1)
		SKIP(return, "profiling is off: show_mem() lists no tags");
	if (access("/proc/sysrq-trigger", W_OK))
		SKIP(return, "no /proc/sysrq-trigger (CONFIG_MAGIC_SYSRQ)");
	if (access(AI_MODDIR "/" HOLD_MOD ".ko", F_OK))
		SKIP(return, HOLD_MOD ".ko not found");
	ASSERT_EQ(0, ai_load_module(TEST_MOD));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/*
		 * Until killed, one report every 10 ms, at most 40: each is
		 * some 8 KiB of kernel log, which must not crowd out the rest.
		 */
		for (i = 0; i < 40; i++) {
			if (write_sysrq('m'))
				_exit(1);
			usleep(10000);
		}
		_exit(0);
	}
	for (i = 0; i < SHOW_MEM_CYCLES; i++) {
		ASSERT_EQ(0, ai_load_module_params(HOLD_MOD, SHOW_MEM_BIG));
		/* One report surely while the module is there, besides the child's. */
		ASSERT_EQ(0, write_sysrq('m'));
		ASSERT_EQ(0, ai_unload_module(HOLD_MOD));
		ASSERT_EQ(0, att_ctl("release"));
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && !WEXITSTATUS(status)));
	EXPECT_TRUE(ai_kmsg_has("[" HOLD_MOD "] func:ath_big", NULL))
		TH_LOG("no show_mem() report named the module's row");
	EXPECT_FALSE(ai_kmsg_has("BUG: KASAN", NULL));
	EXPECT_FALSE(ai_kmsg_has("Oops", NULL));
}

/*
 * A module with no allocation tags whose tag section holds only the
 * linker's alignment padding (test_modules/alloc_tag_test_notags.c, as
 * upstream's percpu_test.ko): it loads and unloads like any module,
 * whatever the profiler's state.
 */
TEST(module_without_tags_loads)
{
	int ret = ai_load_module(NOTAGS_MOD);

	if (ret == -ENOENT)
		SKIP(return, NOTAGS_MOD ".ko not found");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, access("/sys/module/" NOTAGS_MOD, F_OK));
	ASSERT_EQ(0, ai_unload_module(NOTAGS_MOD));
	ASSERT_NE(0, access("/sys/module/" NOTAGS_MOD, F_OK));
}

TEST_HARNESS_MAIN
