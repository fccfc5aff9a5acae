// SPDX-License-Identifier: GPL-2.0
/*
 * Times whole runs of a workload: `macro_time RUNS NAME PROG [ARGS...]`
 * runs PROG RUNS times (after one untimed warm-up run), each to its end,
 * with its output thrown away, and prints
 *   macro: what=NAME runs=<n> median_ns=<n> min_ns=<n> max_ns=<n>
 * or, if a run fails,
 *   macro: what=NAME failed: <how>
 * and exits 1.  Under QEMU -icount shift=0,sleep=off the guest clock
 * advances one nanosecond per instruction executed (and jumps over the
 * time every vCPU idles to the next timer), so the figures are guest
 * instructions.
 *
 * With MACRO_CACHESIM=1 in the environment each timed run (not the warm-up)
 * is also a window of tools/testing/allocprof/bench/cacheplug's cache model, id 1: the plugin prints
 * one line per run, in order, counting every event of the vCPU that ran the
 * marker, so the boot must have one vCPU for the window to hold the whole
 * run (the workload's processes and the kernel's work for them).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"

#define MAX_RUNS 101

/* cacheplug's markers, window 1: no-ops the plugin recognises. */
static void mark_open(void)
{
	asm volatile("nopw 0x0a110001(%%rax,%%rax,1)" : : : "memory");
}

static void mark_close(void)
{
	asm volatile("nopw 0x0a118001(%%rax,%%rax,1)" : : : "memory");
}

/* One run of @argv, its output to /dev/null; 0, or -1 having said why. */
static int run(const char *name, char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		printf("macro: what=%s failed: fork\n", name);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid) {
		printf("macro: what=%s failed: waitpid\n", name);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("macro: what=%s failed: %s %d\n", name,
		       WIFEXITED(status) ? "exit status" : "signal",
		       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *sim = getenv("MACRO_CACHESIM");
	int windows = sim && !strcmp(sim, "1");
	long long t[MAX_RUNS];
	int runs;

	if (argc < 4 || (runs = atoi(argv[1])) < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: macro_time RUNS(1-%d) NAME PROG [ARGS...]\n", MAX_RUNS);
		return 2;
	}
	fflush(stdout);
	if (run(argv[2], argv + 3))
		return 1;
	for (int r = 0; r < runs; r++) {
		long long t0 = now_ns();
		int err;

		if (windows)
			mark_open();
		err = run(argv[2], argv + 3);
		if (windows)
			mark_close();
		if (err)
			return 1;
		t[r] = now_ns() - t0;
	}
	qsort(t, runs, sizeof(t[0]), cmp);
	printf("macro: what=%s runs=%d median_ns=%lld min_ns=%lld max_ns=%lld\n",
	       argv[2], runs, t[runs / 2], t[0], t[runs - 1]);
	return 0;
}
