// SPDX-License-Identifier: GPL-2.0
/*
 * Boot percpu chunks and memcg.  Upstream 6.12 gives the boot-time percpu
 * chunks no extension vector, so a __GFP_ACCOUNT percpu allocation served
 * from them is not charged to its memcg.  Our core gives them one (to
 * count profiling rows there), and memcg keeps its cgroup pointers in the
 * same vector: such allocations are then charged, a deliberate change,
 * except with sysctl.vm.mem_profiling=never, which gives them no vector
 * and keeps upstream's behaviour.
 *
 * In a memcg of its own, the test has the test module allocate accounted
 * percpu objects and checks the memcg's "percpu" statistic against the
 * exact charge of each object (pcpu_obj_full_size()): charged if it is in
 * a dynamic chunk, and in the first chunk only as said above.  Freeing
 * takes the whole charge back.
 */
#include "alloc_tag_util.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include "../kselftest_harness.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CG_DIR		CG_ROOT "/alloc_tag_percpu"
#define OBJ_SIZE	8
#define NR_OBJS		64

static int write_file(const char *path, const char *s)
{
	return ai_write(path, s, strlen(s));
}

/* The "percpu" line of the memcg's memory.stat, or -1. */
static long long memcg_percpu(void)
{
	char *text = ai_slurp(CG_DIR "/memory.stat", 4096, NULL);
	long long v = -1;
	char *p;

	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, "percpu ", 7)) {
			v = atoll(p + 7);
			break;
		}
	}
	free(text);
	return v;
}

/*
 * memcg folds its per-CPU statistics into memory.stat at least every two
 * seconds (small changes wait for that); read after it.
 */
static long long memcg_percpu_settled(void)
{
	sleep(3);
	return memcg_percpu();
}

static int possible_cpus(void)
{
	return (int)att_info("possible_cpus");
}

FIXTURE(pcpu) {
	bool in_cg;
};

FIXTURE_SETUP(pcpu)
{
	char pid[32];

	self->in_cg = false;
	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	if (att_info("memcg") != 1)
		SKIP(return, "kernel without CONFIG_MEMCG");
	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", CG_ROOT, "cgroup2", 0, NULL))
		SKIP(return, "no cgroup2 at " CG_ROOT ": %s", strerror(errno));
	if (write_file(CG_ROOT "/cgroup.subtree_control", "+memory"))
		SKIP(return, "memory controller not available");
	if (mkdir(CG_DIR, 0755) && errno != EEXIST)
		SKIP(return, "mkdir " CG_DIR ": %s", strerror(errno));
	snprintf(pid, sizeof(pid), "%d", getpid());
	ASSERT_EQ(0, write_file(CG_DIR "/cgroup.procs", pid));
	self->in_cg = true;
}

FIXTURE_TEARDOWN(pcpu)
{
	char pid[32];

	att_ctl("free percpu_acct");
	if (!self->in_cg)
		return;
	snprintf(pid, sizeof(pid), "%d", getpid());
	write_file(CG_ROOT "/cgroup.procs", pid);
	rmdir(CG_DIR);
}

TEST_F(pcpu, boot_chunk_charge_matches_the_mode)
{
	/* pcpu_obj_full_size(): every CPU's copy, and the cgroup pointers. */
	long long full = (long long)OBJ_SIZE * possible_cpus() +
			 OBJ_SIZE / 4 * (long long)sizeof(void *);
	bool never = ai_cmdline_has("sysctl.vm.mem_profiling=never");
	bool first_charged = !ai_is_upstream() && !never;
	long long before, held, after, want;
	long first;

	ASSERT_LT(0, possible_cpus());
	before = memcg_percpu_settled();
	ASSERT_LE(0, before) TH_LOG("no percpu line in memory.stat");
	ASSERT_EQ(0, att_ctl("percpu_acct %d %d", OBJ_SIZE, NR_OBJS));
	first = att_info("percpu_acct_first_chunk");
	ASSERT_LE(0, first);
	held = memcg_percpu_settled();
	ksft_print_msg("%ld of %d objects in the first chunk, %s there; charge %lld\n",
		       first, NR_OBJS, first_charged ? "charged" : "not charged",
		       held - before);
	want = (NR_OBJS - first + (first_charged ? first : 0)) * full;
	EXPECT_EQ(want, held - before) {
		TH_LOG("%ld objects in the first chunk, %d in all, %lld bytes each",
		       first, NR_OBJS, full);
	}
	ASSERT_EQ(0, att_ctl("free percpu_acct"));
	after = memcg_percpu_settled();
	EXPECT_EQ(before, after) TH_LOG("the free left %lld bytes charged", after - before);
	if (!first)
		SKIP(return, "no object in the first chunk: its charge is not observed");
}

TEST_HARNESS_MAIN
