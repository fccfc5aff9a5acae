// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrency: the test module allocates and frees on every CPU at once while
 * readers loop over /proc/allocinfo (and, in one phase, the sysctl toggles).
 * Nothing may crash or warn (the harness checks the log), no row may go
 * negative, and with profiling on throughout the module's row reads 0/0
 * once everything is freed.
 */
#include "alloc_tag_util.h"

#include <signal.h>
#include <sys/wait.h>

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
	ASSERT_GE(att_info("online_cpus"), 2) TH_LOG("needs at least 2 CPUs");
}

FIXTURE_TEARDOWN(stress)
{
	ai_sysctl_write("1", 1);
}

TEST_F(stress, readers_and_toggling)
{
	pid_t r1, r2, t;
	char *text;

	if (access(AI_SYSCTL, W_OK))
		SKIP(return, AI_SYSCTL " is read-only in this kernel (debug or never)");
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

	/* Counts may drift while toggling, but only upwards. */
	text = ai_slurp(AI_PATH, 1 << 16, NULL);
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, ai_walk_rows(text, no_negative, NULL, NULL)) {
		TH_LOG("a row went negative");
	}
	free(text);
}

TEST_F(stress, readers_profiling_on)
{
	struct ai_row end;
	pid_t r1, r2;

	ASSERT_EQ(0, att_site("stress_on", &self->s));
	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &self->start));
	r1 = spawn(reader);
	r2 = spawn(reader);
	ASSERT_GT(r1, 0);
	ASSERT_GT(r2, 0);
	EXPECT_EQ(0, att_ctl("stress on %d", ITERS));
	EXPECT_EQ(0, reap(r1)) TH_LOG("a reader saw a malformed /proc/allocinfo");
	EXPECT_EQ(0, reap(r2)) TH_LOG("a reader saw a malformed /proc/allocinfo");

	ASSERT_EQ(0, ai_get(self->s.file, self->s.line, &end));
	EXPECT_EQ(0, end.bytes) TH_LOG("stress_on row after all frees");
	EXPECT_EQ(0, end.calls) TH_LOG("stress_on row after all frees");
}

TEST_HARNESS_MAIN
