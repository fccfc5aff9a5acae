// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrency: the test module allocates and frees on every CPU at once (the
 * one CPU of a uniprocessor kernel) while readers loop over /proc/allocinfo,
 * as text and through the ioctl interface (and, in one phase, the sysctl
 * toggles).  Nothing may crash or warn (the
 * harness checks the log), no row may go negative, and every row of the
 * module reads 0/0 once everything is freed, the toggling phase's too.
 * Then user space churns anonymous memory while the sysctl toggles: after
 * it, /proc/allocinfo holds no more than after the same churn without
 * toggling.
 */
#include "alloc_tag_util.h"

#include <signal.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#if __has_include("../../../../include/uapi/linux/alloc_tag.h")
#include "../../../../include/uapi/linux/alloc_tag.h"
#define HAVE_UAPI 1
#else
#define HAVE_UAPI 0
#endif

#include "../kselftest_harness.h"

#define ITERS 50000

static sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

static int no_negative(const struct ai_row *r, void *arg)
{
	return r->bytes < 0 || r->calls > (1ULL << 62);
}

/* Reader: every full read must parse; exit 0 if all did. */
static int reader(void)
{
	signal(SIGTERM, on_term);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		char *text = ai_slurp(AI_PATH, 4096, NULL);

		if (!text || ai_walk_rows(text, NULL, NULL, NULL))
			return 1;
		free(text);
	}
	return 0;
}

/*
 * Reader: whole GET_NEXT walks; every reply must be well-formed and no
 * counter negative.  Exit 0 if all were (or the kernel has no ioctls).
 */
static int ioctl_reader(void)
{
#if HAVE_UAPI
	signal(SIGTERM, on_term);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct allocinfo_tag_data d;
		int fd = open(AI_PATH, O_RDONLY);

		if (fd < 0)
			return 1;
		for (;;) {
			if (ioctl(fd, ALLOCINFO_IOC_GET_NEXT, &d)) {
				int err = errno;

				close(fd);
				if (err == ENOTTY)
					return 0;
				if (err != ENOENT)
					return 1;
				break;
			}
			if (!memchr(d.tag.filename, 0, sizeof(d.tag.filename)) ||
			    !memchr(d.tag.function, 0, sizeof(d.tag.function)) ||
			    (long long)d.counter.bytes < 0 || d.counter.calls > (1ULL << 62)) {
				close(fd);
				return 1;
			}
		}
	}
#endif
	return 0;
}

static int toggler(void)
{
	signal(SIGTERM, on_term);
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		if (ai_sysctl_write(i & 1 ? "1" : "0", 1))
			return 1;
		usleep(500);
	}
	return ai_sysctl_write("1", 1) ? 1 : 0;
}

static pid_t spawn(int (*fn)(void))
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	return pid;
}

/* Counts the rows of the test module that are not 0/0. */
static int module_nonzero(const struct ai_row *r, void *arg)
{
	if (!strcmp(r->module, "alloc_tag_test") && (r->bytes || r->calls))
		++*(int *)arg;
	return 0;
}

static int reap(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

FIXTURE(stress) {
	struct att_site s;
	struct ai_row start;
};

FIXTURE_SETUP(stress)
{
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(1, ai_sysctl_read());
	/*
	 * Two CPUs at least, but on a uniprocessor kernel (one possible CPU),
	 * where the allocator, the readers and the toggler still interleave
	 * by preemption and interrupts.
	 */
	if (att_info("possible_cpus") > 1)
		ASSERT_GE(att_info("online_cpus"), 2) TH_LOG("needs at least 2 CPUs");
}

FIXTURE_TEARDOWN(stress)
{
	ai_sysctl_write("1", 1);
}

TEST_F(stress, readers_and_toggling)
{
	pid_t r1, r2, t;

	if (!ai_sysctl_switchable())
		SKIP(return, AI_SYSCTL " does not switch in this kernel (debug or never)");
	ASSERT_EQ(0, att_site("stress_toggle", &self->s));
	r1 = spawn(reader);
	r2 = spawn(reader);
	t = spawn(toggler);
	ASSERT_GT(r1, 0);
	ASSERT_GT(r2, 0);
	ASSERT_GT(t, 0);
	EXPECT_EQ(0, att_ctl("stress toggle %d", ITERS));
	EXPECT_EQ(0, reap(t)) TH_LOG("sysctl toggler failed");
	EXPECT_EQ(0, reap(r1)) TH_LOG("a reader saw a malformed /proc/allocinfo");
	EXPECT_EQ(0, reap(r2)) TH_LOG("a reader saw a malformed /proc/allocinfo");
	ASSERT_EQ(1, ai_sysctl_read());

	EXPECT_EQ(0, ai_walk(no_negative, NULL)) {
		TH_LOG("a row went negative");
	}
	/*
	 * Every pair was freed: charged or not, the row is back at 0/0 (on
	 * upstream 6.12 it keeps what was charged while on and freed while
	 * off, so it can only have drifted upwards).
	 */
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &self->start));
	if (!ai_is_upstream()) {
		EXPECT_EQ(0, self->start.bytes) TH_LOG("stress_toggle row after all frees");
		EXPECT_EQ(0, self->start.calls) TH_LOG("stress_toggle row after all frees");
	}
}

TEST_F(stress, readers_profiling_on)
{
	static const char *const kinds[] = {
		"kmalloc", "large", "cache", "pages", "vmalloc", "percpu", "order2",
	};
	struct ai_row end;
	pid_t r1, r2, r3;
	int z0 = 0, z = 0;
	char *text;
	size_t k;

	/*
	 * Upstream 6.12 keeps charges freed while off: rows earlier tests
	 * switched under may not be 0/0.  None more after this test.
	 */
	if (ai_is_upstream())
		ASSERT_EQ(0, ai_walk(module_nonzero, &z0));
	ASSERT_EQ(0, att_site("stress_on", &self->s));
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &self->start));
	r1 = spawn(reader);
	r2 = spawn(reader);
	r3 = spawn(ioctl_reader);
	ASSERT_GT(r1, 0);
	ASSERT_GT(r2, 0);
	ASSERT_GT(r3, 0);
	EXPECT_EQ(0, att_ctl("stress on %d", ITERS));
	EXPECT_EQ(0, reap(r1)) TH_LOG("a reader saw a malformed /proc/allocinfo");
	EXPECT_EQ(0, reap(r2)) TH_LOG("a reader saw a malformed /proc/allocinfo");
	EXPECT_EQ(0, reap(r3)) TH_LOG("an ioctl reader saw a malformed or negative reply");

	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &end));
	EXPECT_EQ(0, end.bytes) TH_LOG("stress_on row after all frees");
	EXPECT_EQ(0, end.calls) TH_LOG("stress_on row after all frees");

	/* Everything the module holds freed: every row of it is 0/0. */
	for (k = 0; k < ARRAY_SIZE(kinds); k++)
		ASSERT_EQ(0, att_ctl("free %s", kinds[k]));
	ASSERT_EQ(0, att_ctl("release"));
	text = ai_slurp(AI_PATH, 1 << 16, NULL);
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, ai_walk_rows(text, module_nonzero, &z, NULL));
	EXPECT_LE(z, z0) TH_LOG("rows of alloc_tag_test not 0/0 after all frees");
	EXPECT_EQ(0, ai_walk_rows(text, no_negative, NULL, NULL));
	free(text);
}

/*
 * User-space load: @n processes each map, touch and unmap 8 MiB of
 * anonymous memory, and fork a child that does the same, for @ms
 * milliseconds.  0 if all of them ran.
 */
#define CHURN_BYTES	(8 << 20)

static int churn_one(int ms)
{
	struct timespec t0, t;
	long elapsed;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		char *p = mmap(NULL, CHURN_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		pid_t pid;

		if (p == MAP_FAILED)
			return 1;
		for (long i = 0; i < CHURN_BYTES; i += 4096)
			p[i] = 1;
		pid = fork();
		if (pid == 0) {
			for (long i = 0; i < CHURN_BYTES; i += 4096)
				p[i] = 2;
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 1;
		munmap(p, CHURN_BYTES);
		clock_gettime(CLOCK_MONOTONIC, &t);
		elapsed = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
	} while (elapsed < ms);
	return 0;
}

static int churn(int n, int ms)
{
	pid_t pids[4];
	int i, bad = 0, status;

	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(churn_one(ms));
	}
	for (i = 0; i < n; i++)
		if (pids[i] < 0 || waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	return bad;
}

/* The bytes of the rows not marked accurate:no. */
static int sum_unmarked(const struct ai_row *r, void *arg)
{
	if (!r->inaccurate)
		*(long long *)arg += r->bytes;
	return 0;
}

static long long settled_sum(struct __test_metadata *_metadata)
{
	long long sum = 0;

	sync();
	EXPECT_EQ(0, ai_write("/proc/sys/vm/drop_caches", "3", 1));
	EXPECT_EQ(0, ai_walk(sum_unmarked, &sum));
	return sum;
}

#define CHURN_MS	3000
#define CHURN_SLACK	(2LL << 20)

TEST_F(stress, user_load_toggling)
{
	long long before, quiet, toggled;
	pid_t t;

	if (!ai_sysctl_switchable())
		SKIP(return, AI_SYSCTL " does not switch in this kernel (debug or never)");
	/* The same churn without toggling: what it leaves behind anyway. */
	before = settled_sum(_metadata);
	ASSERT_EQ(0, churn(2, CHURN_MS));
	quiet = settled_sum(_metadata) - before;

	before = settled_sum(_metadata);
	t = spawn(toggler);
	ASSERT_GT(t, 0);
	EXPECT_EQ(0, churn(2, CHURN_MS));
	EXPECT_EQ(0, reap(t)) TH_LOG("sysctl toggler failed");
	ASSERT_EQ(1, ai_sysctl_read());
	toggled = settled_sum(_metadata) - before;
	TH_LOG("unmarked rows gained %lld bytes without toggling, %lld with", quiet, toggled);
	if (ai_is_upstream())
		SKIP(return, "upstream 6.12 keeps what was freed while off: %lld bytes more",
		     toggled - quiet);
	EXPECT_LE(toggled, quiet + CHURN_SLACK) TH_LOG("phantom bytes after toggling");
}

TEST_HARNESS_MAIN
