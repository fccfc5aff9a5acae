// SPDX-License-Identifier: GPL-2.0
/*
 * Allocations that fail on purpose (failslab, fail_page_alloc through this
 * thread's fail-nth) leave every count exact:
 *
 * - an object whose slab extension vector cannot be allocated is handed
 *   out but not counted, and its site's row says accurate:no;
 * - page, slab and vmalloc allocations that fail part way give back exactly
 *   what they charged;
 * - a module load that fails at any allocation leaves no row and no tag
 *   area behind.
 *
 * Needs CONFIG_FAULT_INJECTION_DEBUG_FS, CONFIG_FAILSLAB and
 * CONFIG_FAIL_PAGE_ALLOC; skipped without them and on upstream 6.12 (no
 * accuracy flag there).
 */
#include <sys/times.h>

#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define FI_DIR		"/sys/kernel/debug"
#define FAIL_NTH	"/proc/thread-self/fail-nth"
#define TEST_MOD	"alloc_tag_test"
#define HOLD_MOD	"alloc_tag_test_hold"

static int write_str(const char *path, const char *val)
{
	return ai_write(path, val, strlen(val));
}

static int fi_set(const char *attr, const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), FI_DIR "/%s/%s", attr, file);
	return write_str(path, val);
}

/*
 * Count GFP_KERNEL allocations of every order as fault sites, quietly; the
 * probability stays 0, so only this thread's fail-nth makes anything fail.
 */
static int fi_arm(void)
{
	if (fi_set("failslab", "ignore-gfp-wait", "N") ||
	    fi_set("failslab", "verbose", "0") ||
	    fi_set("fail_page_alloc", "ignore-gfp-wait", "N") ||
	    fi_set("fail_page_alloc", "min-order", "0") ||
	    fi_set("fail_page_alloc", "verbose", "0"))
		return -1;
	return 0;
}

static void fi_restore(void)
{
	fi_set("failslab", "ignore-gfp-wait", "Y");
	fi_set("fail_page_alloc", "ignore-gfp-wait", "Y");
	fi_set("fail_page_alloc", "min-order", "1");
}

static bool fi_available(void)
{
	return !access(FI_DIR "/failslab/ignore-gfp-wait", W_OK) &&
	       !access(FI_DIR "/fail_page_alloc/min-order", W_OK) &&
	       !access(FAIL_NTH, W_OK);
}

/* Make the @nth fault site this thread reaches fail (0: none). */
static int fail_nth(unsigned int nth)
{
	char val[16];

	snprintf(val, sizeof(val), "%u", nth);
	return write_str(FAIL_NTH, val);
}

/* Fault sites left before the armed one: 0 once it has fired. */
static int fail_nth_left(void)
{
	char buf[16] = "";
	int fd = open(FAIL_NTH, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

/* One ctl command, with the @nth fault site of its write failing. */
static int ctl_failing(int ctl, const char *cmd, unsigned int nth, bool *fired)
{
	int ret = 0;

	if (fail_nth(nth))
		return -EIO;
	if (write(ctl, cmd, strlen(cmd)) < 0)
		ret = -errno;
	*fired = fail_nth_left() == 0;
	fail_nth(0);
	return ret;
}

static int get_site(const char *kind, struct ai_row *row)
{
	struct att_site s;

	if (att_site(kind, &s))
		return -1;
	return ai_get(s.file, s.line, row);
}

static int no_negative(const struct ai_row *r, void *arg)
{
	return r->bytes < 0 || r->calls > (1ULL << 62);
}

FIXTURE(fi)
{
	int ctl;
};

FIXTURE_SETUP(fi)
{
	int ret;

	self->ctl = -1;
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (ai_is_upstream())
		SKIP(return, "6.12's C core has no accuracy flag");
	if (ai_sysctl_read() != 1)
		SKIP(return, "profiling is off");
	if (!fi_available())
		SKIP(return, "no failslab/fail_page_alloc debugfs or fail-nth");
	ret = ai_load_module(TEST_MOD);
	if (ret == -ENOENT)
		SKIP(return, TEST_MOD ".ko not found");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, fi_arm());
	self->ctl = open(ATT_DIR "/ctl", O_WRONLY);
	ASSERT_LE(0, self->ctl);
}

FIXTURE_TEARDOWN(fi)
{
	fail_nth(0);
	fi_restore();
	if (self->ctl >= 0)
		close(self->ctl);
}

/* Reloads the test module, so that its cache has no slab yet. */
static int reload_test_module(int *ctl)
{
	if (*ctl >= 0)
		close(*ctl);	/* an open ctl holds the module */
	*ctl = -1;
	if (att_ctl("release") || ai_unload_module(TEST_MOD) || ai_load_module(TEST_MOD))
		return -1;
	*ctl = open(ATT_DIR "/ctl", O_WRONLY);
	return *ctl < 0 ? -1 : 0;
}

/* /dev/kmsg, positioned after the last record: what is logged from now on. */
static int kmsg_from_now(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

#define VECTOR_LINE "no slab extension vector for "

static bool kmsg_has_vector_line(unsigned long long seq, const char *msg,
				 void *arg)
{
	return strstr(msg, VECTOR_LINE);
}

struct vector_scan {
	unsigned long long seen;	/* records before this one are settled */
	unsigned long long next;
	bool fresh;
};

static bool vector_scan_one(unsigned long long seq, const char *msg, void *arg)
{
	struct vector_scan *v = arg;

	if (seq >= v->seen && strstr(msg, VECTOR_LINE))
		v->fresh = true;
	if (seq + 1 > v->next)
		v->next = seq + 1;
	return false;
}

/*
 * The vector's line is pr_warn_ratelimited(): at most 10 lines
 * (DEFAULT_RATELIMIT_BURST) in a window of 5 s of jiffies
 * (DEFAULT_RATELIMIT_INTERVAL) that opens at a line.  Tests before this one
 * fail vectors too (capture's all-or-nothing loop logs ten in a row), and
 * would silence the next.  If a vector line was logged since the last call,
 * its window opened before now: wait until 5 s of jiffies have passed, by
 * times(), which counts jiffies.  (Not by the log's timestamps: they are
 * local_clock(), which under TCG ran 7% faster than jiffies in one CI run.)
 */
static int vector_ratelimit_settle(void)
{
	static unsigned long long seen;
	struct vector_scan v = { .seen = seen, .next = seen };
	struct tms tms;
	clock_t end;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return -1;
	ai_kmsg_each(fd, vector_scan_one, &v);
	close(fd);
	seen = v.next;
	if (!v.fresh)
		return 0;
	/* Three clock ticks of margin. */
	end = times(&tms) + 5 * sysconf(_SC_CLK_TCK) + 3;
	while (times(&tms) < end)
		usleep(20000);
	return 0;
}

/*
 * A fresh cache's first object needs a new extension vector.  Fail each
 * fault site of that first allocation in turn, on a fresh cache each time:
 * at the vector's, the object comes back uncounted and its site's row says
 * accurate:no; at any other, the allocation fails or recovers, exactly.
 */
TEST_F(fi, slab_vector_failure_marks_inaccurate)
{
	struct ai_row before, after;
	long size = att_info("cache_size");
	unsigned int nth;
	bool fired = true, found = false;

	ASSERT_LT(0, size);
	size = ai_slab_bytes(TEST_MOD, size);
	/* Page allocations that may sleep are not fault sites here. */
	ASSERT_EQ(0, fi_set("fail_page_alloc", "ignore-gfp-wait", "Y"));
	for (nth = 1; fired && !found && nth < 50; nth++) {
		int ret;

		ASSERT_EQ(0, reload_test_module(&self->ctl));
		ASSERT_EQ(0, get_site("cache", &before));
		ASSERT_EQ(0, before.calls);
		ASSERT_FALSE(before.inaccurate);
		ASSERT_EQ(0, vector_ratelimit_settle());
		ret = ctl_failing(self->ctl, "cache 1", nth, &fired);
		ASSERT_EQ(0, get_site("cache", &after));
		if (!ret && fired && after.inaccurate) {
			/* The object came back, uncounted. */
			found = true;
			EXPECT_EQ(0, after.calls);
			EXPECT_EQ(0, after.bytes);
		} else if (ret) {
			EXPECT_EQ(0, after.calls);
			EXPECT_EQ(0, after.bytes);
			EXPECT_FALSE(after.inaccurate);
		} else {
			/* Through, or recovered from a failure elsewhere. */
			EXPECT_EQ(1, after.calls);
			EXPECT_EQ(size, after.bytes);
			EXPECT_FALSE(after.inaccurate);
		}
	}
	ASSERT_TRUE(found) TH_LOG("no fault site of the first allocation was the vector's");
	TH_LOG("fault site %u of the first allocation was the extension vector's", nth - 1);
	EXPECT_TRUE(ai_kmsg_has(VECTOR_LINE "alloc_tag_test", NULL));

	/* The next object gets the vector and is counted exactly. */
	ASSERT_EQ(0, att_ctl("cache 1"));
	ASSERT_EQ(0, get_site("cache", &after));
	EXPECT_EQ(1, after.calls);
	EXPECT_EQ(size, after.bytes);
	EXPECT_TRUE(after.inaccurate);

	/* Freeing both uncharges the counted one only. */
	ASSERT_EQ(0, att_ctl("free cache"));
	ASSERT_EQ(0, get_site("cache", &after));
	EXPECT_EQ(0, after.calls);
	EXPECT_EQ(0, after.bytes);
	EXPECT_TRUE(after.inaccurate);
}

/*
 * The same failure for an allocation with __GFP_NOWARN: the row says
 * accurate:no as before, but nothing is logged, as the caller asked.
 */
TEST_F(fi, slab_vector_failure_nowarn_is_quiet)
{
	struct ai_row after;
	unsigned int nth;
	bool fired = true, found = false;
	int kmsg;

	ASSERT_EQ(0, fi_set("fail_page_alloc", "ignore-gfp-wait", "Y"));
	kmsg = kmsg_from_now();
	ASSERT_LE(0, kmsg);
	for (nth = 1; fired && !found && nth < 50; nth++) {
		int ret;

		ASSERT_EQ(0, reload_test_module(&self->ctl));
		/* Or a line the ratelimit dropped would pass it. */
		ASSERT_EQ(0, vector_ratelimit_settle());
		ret = ctl_failing(self->ctl, "cache 1 1", nth, &fired);
		ASSERT_EQ(0, get_site("cache", &after));
		found = !ret && fired && after.inaccurate;
	}
	ASSERT_TRUE(found) TH_LOG("no fault site of the first allocation was the vector's");
	EXPECT_EQ(0, after.calls);
	EXPECT_EQ(0, after.bytes);
	EXPECT_FALSE(ai_kmsg_each(kmsg, kmsg_has_vector_line, NULL))
		TH_LOG("logged for a __GFP_NOWARN allocation");
	close(kmsg);
	ASSERT_EQ(0, att_ctl("free cache"));
}

/*
 * Fail each fault site of one allocation in turn, from the first until the
 * allocation gets through whole: every failure gives back what it charged.
 * A debug kernel has fault sites of its own on the way (KASAN's stack depot
 * taking a new pool, and other first-time allocations that recover), which
 * can take the failure meant for a later site and are gone the next time:
 * the sweep is made again, up to three times, until the allocation itself
 * has failed once.
 */
static void fail_each_site(struct __test_metadata *_metadata, int ctl,
			   const char *kind, const char *cmd)
{
	struct ai_row before, prev, row;
	unsigned int nth, ok = 0, failed = 0, sweep;
	char freecmd[32];
	bool fired = true;

	snprintf(freecmd, sizeof(freecmd), "free %s", kind);
	ASSERT_EQ(0, att_ctl(freecmd));
	ASSERT_EQ(0, get_site(kind, &before));
	prev = before;
	for (sweep = 0; !failed && sweep < 3; sweep++) {
		fired = true;
		for (nth = 1; fired && nth < 200; nth++) {
			int ret = ctl_failing(ctl, cmd, nth, &fired);

			ASSERT_EQ(0, get_site(kind, &row));
			if (!ret) {
				/* Through, maybe with a failure it recovered from. */
				ok++;
				EXPECT_LT(prev.calls, row.calls);
				EXPECT_LT(prev.bytes, row.bytes);
				prev = row;
				continue;
			}
			failed++;
			EXPECT_EQ(prev.calls, row.calls) {
				TH_LOG("%s with fault site %u failing: %s", cmd, nth,
				       strerror(-ret));
			}
			EXPECT_EQ(prev.bytes, row.bytes);
		}
	}
	EXPECT_FALSE(fired);
	EXPECT_LT(0, failed);
	ASSERT_EQ(0, att_ctl(freecmd));
	ASSERT_EQ(0, get_site(kind, &row));
	EXPECT_EQ(before.calls, row.calls);
	EXPECT_EQ(before.bytes, row.bytes);
	TH_LOG("%s: %u fault sites failed, %u allocations got through, %u sweeps", cmd,
	       failed, ok, sweep);
}

TEST_F(fi, failed_allocations_give_back_exactly)
{
	fail_each_site(_metadata, self->ctl, "kmalloc", "kmalloc 100 1");
	fail_each_site(_metadata, self->ctl, "pages", "pages 2 1");
	fail_each_site(_metadata, self->ctl, "vmalloc", "vmalloc 20000 1");

	EXPECT_EQ(0, ai_walk(no_negative, NULL));
}

struct mod_sums {
	int rows;
	long long execmem_bytes;
	unsigned long long execmem_calls;
};

static int sum_mod(const struct ai_row *r, void *arg)
{
	struct mod_sums *s = arg;

	if (!strcmp(r->file, "mm/execmem.c")) {
		s->execmem_bytes += r->bytes;
		s->execmem_calls += r->calls;
	}
	if (!strcmp(r->module, HOLD_MOD))
		s->rows++;
	return 0;
}

/* The sums once the module loader's memory is still (see module_unload.c). */
static int read_mod_sums(struct mod_sums *s)
{
	struct mod_sums prev = { 0 };
	int i;

	for (i = 0; i < 50; i++) {
		memset(s, 0, sizeof(*s));
		if (ai_walk(sum_mod, s))
			return -1;
		if (i && s->execmem_bytes == prev.execmem_bytes &&
		    s->execmem_calls == prev.execmem_calls)
			return 0;
		prev = *s;
		usleep(100 * 1000);
	}
	return -1;
}

/*
 * Fail each fault site of a module load in turn (the module's tag area and
 * the registry's bookkeeping among them): each failed load leaves no row,
 * no tag area and no module memory once what its init allocated is freed.
 */
TEST_F(fi, failed_module_loads_leave_nothing)
{
	struct mod_sums before, after;
	unsigned int nth, failed = 0;
	bool fired = true;
	int ret = -1;
	char path[256];

	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, read_mod_sums(&before));
	snprintf(path, sizeof(path), "%s/%s.ko", AI_MODDIR, HOLD_MOD);
	for (nth = 1; fired && nth < 400; nth++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			SKIP(return, HOLD_MOD ".ko not found");
		ASSERT_EQ(0, fail_nth(nth));
		ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
		fired = fail_nth_left() == 0;
		fail_nth(0);
		close(fd);
		if (ret) {
			failed++;
			continue;
		}
		/* Loaded, with or without a failure it recovered from. */
		ASSERT_EQ(0, ai_unload_module(HOLD_MOD));
	}
	EXPECT_FALSE(fired);
	ASSERT_EQ(0, ret);
	EXPECT_LT(10, failed);
	ASSERT_EQ(0, att_ctl("release"));
	ASSERT_EQ(0, read_mod_sums(&after));
	EXPECT_EQ(before.rows, after.rows);
	EXPECT_EQ(before.execmem_bytes, after.execmem_bytes);
	EXPECT_EQ(before.execmem_calls, after.execmem_calls);
	TH_LOG("%u module loads failed, one at each fault site, before one got through",
	       failed);
}

TEST_HARNESS_MAIN
