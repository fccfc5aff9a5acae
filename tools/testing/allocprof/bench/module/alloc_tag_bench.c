// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation fast-path benchmark for memory allocation profiling, after the
 * profiling authors' method: loops of allocate+free pairs on one pinned CPU,
 * timed with ktime_get_ns().  Under QEMU with -icount shift=0,sleep=off the
 * guest clock advances one nanosecond per instruction, so the figures are
 * guest instructions per pair.
 *
 * Prints one line per loop and round:
 *   alloc_tag_bench: loop=<name> round=<r> pairs=<n> ns_per_pair=<x.y>
 * All of it runs at load; unload it afterwards.
 *
 * The batch loops allocate many objects or pages, then free them all: their
 * working set (6 to 16 MiB) exceeds the caches, so that the lines the
 * profiler touches per allocation (page_ext, per-CPU counters, slab
 * extension vectors) miss as they would on a loaded machine.
 *
 * The remote loops allocate on another node than the loop's CPU (bound to
 * CPU 0): the path on which per-node attribution moves a charge between
 * nodes.  They run only where another node has memory.
 *
 * With cachesim=N (tools/testing/allocprof/bench/cacheplug), every loop runs N times (1 to 9), each
 * after a grace period and a warm-up run, between the markers of
 * tools/testing/allocprof/bench/cacheplug/cacheplug.c, which prints the instructions and cache
 * misses of each window in order; the module prints
 *   alloc_tag_bench: cachesim window=<k> loop=<name> pairs=<n>
 * for each.  The grace period first: a loop reports no RCU quiescent state,
 * so a grace period pending when it starts makes RCU's force-quiescent-state
 * scans and the wake-ups they cause run inside the window, and their misses
 * are counted as the loop's (seen in ours' order2 and order3 windows on one
 * boot and in upstream's on the next, with over ten times the L1I misses of
 * a quiet run: Documentation/allocprof/batch-and-cache.md); tools/testing/allocprof/bench/report.py takes each loop's
 * median window.
 *
 * Before each slab loop, two objects of every size it uses are allocated
 * and the first is freed: the second is held, so the loop always finds a
 * partial slab with another live object in it, no slab empties and is
 * given back, and the loop measures the allocation paths and their hooks
 * rather than slab turnover (which depends on the state boot left the
 * caches in).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/alloc_tag.h>
#include <linux/completion.h>
#include <linux/gfp.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

static unsigned int pairs = 200000;
module_param(pairs, uint, 0444);
MODULE_PARM_DESC(pairs, "allocate+free pairs per round");
static unsigned int rounds = 3;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "rounds per loop");
static unsigned int cachesim;
module_param(cachesim, uint, 0444);
MODULE_PARM_DESC(cachesim, "runs per loop between cacheplug's markers (0: none, up to 9)");
static char *only;
module_param(only, charp, 0444);
MODULE_PARM_DESC(only, "run only the loop of this name (tools/testing/allocprof/bench/itrace.sh)");

static struct kmem_cache *atb_cache;
/* A node with memory other than CPU 0's, or NUMA_NO_NODE. */
static int atb_remote_nid = NUMA_NO_NODE;

static u64 atb_kmalloc(unsigned int n)
{
	void *held[30];
	unsigned int i;
	u64 t0, t;

	for (i = 0; i < ARRAY_SIZE(held); i++) {
		void *first = kmalloc(8 + i * 8, GFP_KERNEL);

		held[i] = kmalloc(8 + i * 8, GFP_KERNEL);
		kfree(first);
	}
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++)
		kfree(kmalloc(8 + (i % 30) * 8, GFP_KERNEL));
	t = ktime_get_ns() - t0;
	for (i = 0; i < ARRAY_SIZE(held); i++)
		kfree(held[i]);
	return t;
}

/*
 * kmalloc with context capture armed on this site (kernels with
 * CONFIG_MEM_ALLOC_PROFILING_CAPTURE only): every allocation gets a record
 * with its stack, every free releases it.  noinline: the site is armed by
 * its function's name.
 */
static noinline void *atb_armed_alloc(size_t size)
{
	return kmalloc(size, GFP_KERNEL);
}

static u64 atb_kmalloc_armed(unsigned int n)
{
	void *held[30];
	unsigned int i;
	u64 t0, t;

	for (i = 0; i < ARRAY_SIZE(held); i++) {
		void *first = atb_armed_alloc(8 + i * 8);

		held[i] = atb_armed_alloc(8 + i * 8);
		kfree(first);
	}
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++)
		kfree(atb_armed_alloc(8 + (i % 30) * 8));
	t = ktime_get_ns() - t0;
	for (i = 0; i < ARRAY_SIZE(held); i++)
		kfree(held[i]);
	return t;
}

/* One context-capture command; -ENODEV without capture. */
static int atb_capture(const char *cmd)
{
#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
	return alloc_tag_capture_command(cmd);
#else
	return -ENODEV;
#endif
}

static u64 atb_page(unsigned int n)
{
	u64 t0 = ktime_get_ns();
	unsigned int i;

	for (i = 0; i < n; i++)
		free_page(__get_free_page(GFP_KERNEL));
	return ktime_get_ns() - t0;
}

static u64 atb_order(unsigned int n, unsigned int order)
{
	u64 t0 = ktime_get_ns();
	unsigned int i;
	struct page *p;

	for (i = 0; i < n; i++) {
		p = alloc_pages(GFP_KERNEL, order);
		if (p)
			__free_pages(p, order);
	}
	return ktime_get_ns() - t0;
}

static u64 atb_order0(unsigned int n) { return atb_order(n, 0); }
static u64 atb_order1(unsigned int n) { return atb_order(n, 1); }
static u64 atb_order2(unsigned int n) { return atb_order(n, 2); }
static u64 atb_order3(unsigned int n) { return atb_order(n, 3); }

static u64 atb_cache_loop(unsigned int n)
{
	void *first = kmem_cache_alloc(atb_cache, GFP_KERNEL);
	void *held = kmem_cache_alloc(atb_cache, GFP_KERNEL);
	unsigned int i;
	u64 t0, t;

	kmem_cache_free(atb_cache, first);
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++)
		kmem_cache_free(atb_cache, kmem_cache_alloc(atb_cache, GFP_KERNEL));
	t = ktime_get_ns() - t0;
	kmem_cache_free(atb_cache, held);
	return t;
}

static u64 atb_kmalloc_remote(unsigned int n)
{
	void *first = kmalloc_node(256, GFP_KERNEL, atb_remote_nid);
	void *held = kmalloc_node(256, GFP_KERNEL, atb_remote_nid);
	unsigned int i;
	u64 t0, t;

	kfree(first);
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++)
		kfree(kmalloc_node(256, GFP_KERNEL, atb_remote_nid));
	t = ktime_get_ns() - t0;
	kfree(held);
	return t;
}

static u64 atb_page_remote(unsigned int n)
{
	u64 t0 = ktime_get_ns();
	unsigned int i;
	struct page *p;

	for (i = 0; i < n; i++) {
		p = alloc_pages_node(atb_remote_nid, GFP_KERNEL | __GFP_THISNODE, 0);
		if (p)
			__free_page(p);
	}
	return ktime_get_ns() - t0;
}

/*
 * The batch loops: @n allocations, then @n frees, in allocation order.  The
 * pointer array is allocated before the clock starts.
 */
static u64 atb_batch(unsigned int n, void *(*alloc)(void), void (*free)(void *))
{
	void **objs = kvmalloc_array(n, sizeof(*objs), GFP_KERNEL);
	unsigned int i;
	u64 t0, t;

	if (!objs)
		return 0;
	t0 = ktime_get_ns();
	for (i = 0; i < n; i++)
		objs[i] = alloc();
	for (i = 0; i < n; i++)
		free(objs[i]);
	t = ktime_get_ns() - t0;
	kvfree(objs);
	return t;
}

static void *atb_kmalloc256(void) { return kmalloc(256, GFP_KERNEL); }
static void atb_kfree(void *p) { kfree(p); }
static void *atb_cache_obj(void) { return kmem_cache_alloc(atb_cache, GFP_KERNEL); }
static void atb_cache_free(void *p) { kmem_cache_free(atb_cache, p); }
static void *atb_page_obj(void) { return (void *)__get_free_page(GFP_KERNEL); }
static void atb_page_free(void *p) { free_page((unsigned long)p); }

/* 25,000 of 256 bytes: 6.4 MiB. */
static u64 atb_kmalloc_batch(unsigned int n) { return atb_batch(n, atb_kmalloc256, atb_kfree); }
/* 50,000 of 128 bytes: 6.4 MiB. */
static u64 atb_cache_batch(unsigned int n) { return atb_batch(n, atb_cache_obj, atb_cache_free); }
/* 4,000 pages: 16 MiB. */
static u64 atb_page_batch(unsigned int n) { return atb_batch(n, atb_page_obj, atb_page_free); }

static const struct {
	const char *name;
	u64 (*run)(unsigned int n);
	unsigned int div;	/* fewer pairs for the costlier loops */
	bool armed;		/* with capture armed on its site, if there is capture */
	bool remote;		/* only with another node (atb_remote_nid) */
} atb_loops[] = {
	{ "kmalloc",	atb_kmalloc,	1 },
	{ "page",	atb_page,	1 },
	{ "order0",	atb_order0,	1 },
	{ "order1",	atb_order1,	2 },
	{ "order2",	atb_order2,	4 },
	{ "order3",	atb_order3,	8 },
	{ "cache",	atb_cache_loop,	1 },
	{ "kmalloc_armed", atb_kmalloc_armed, 8, true },
	{ "kmalloc_batch", atb_kmalloc_batch, 8 },
	{ "cache_batch", atb_cache_batch, 4 },
	{ "page_batch",	atb_page_batch,	50 },
	{ "kmalloc_remote", atb_kmalloc_remote, 1, false, true },
	{ "page_remote", atb_page_remote, 1, false, true },
};

/* cacheplug's markers (window id 0): no-ops the plugin recognises. */
static __always_inline void atb_window_open(void)
{
	asm volatile("nopw 0x0a110000(%%rax,%%rax,1)" : : : "memory");
}

static __always_inline void atb_window_close(void)
{
	asm volatile("nopw 0x0a118000(%%rax,%%rax,1)" : : : "memory");
}

static DECLARE_COMPLETION(atb_done);

static int atb_thread(void *unused)
{
	unsigned int l, r, n, window = 0;
	u64 ns, x10;

	for (l = 0; l < ARRAY_SIZE(atb_loops); l++) {
		if (only && strcmp(only, atb_loops[l].name))
			continue;
		if (atb_loops[l].remote && atb_remote_nid == NUMA_NO_NODE)
			continue;
		if (atb_loops[l].armed &&
		    atb_capture("arm function:atb_armed_alloc module:alloc_tag_bench"))
			continue;
		n = max(pairs / atb_loops[l].div, 1U);
		if (!cachesim)
			atb_loops[l].run(n / 10 + 1);	/* warm caches and pcp lists */
		for (r = 1; r <= cachesim; r++) {
			synchronize_rcu();
			atb_loops[l].run(n / 10 + 1);
			atb_window_open();
			atb_loops[l].run(n);
			atb_window_close();
			pr_info("cachesim window=%u loop=%s pairs=%u\n", window++,
				atb_loops[l].name, n);
		}
		for (r = 1; r <= rounds && !cachesim; r++) {
			ns = atb_loops[l].run(n);
			x10 = div_u64(ns * 10, n);
			pr_info("loop=%s round=%u pairs=%u ns_per_pair=%llu.%llu\n",
				atb_loops[l].name, r, n, x10 / 10, x10 % 10);
		}
		if (atb_loops[l].armed)
			atb_capture("disarm all");
	}
	complete(&atb_done);
	return 0;
}

static int __init atb_init(void)
{
	struct task_struct *t;
	int nid;

	if (cachesim > 9) {
		pr_err("cachesim=%u: at most 9 runs per loop\n", cachesim);
		return -EINVAL;
	}
	for_each_node_state(nid, N_MEMORY) {
		if (nid != cpu_to_node(0)) {
			atb_remote_nid = nid;
			break;
		}
	}
	atb_cache = kmem_cache_create("alloc_tag_bench", 128, 0, SLAB_NO_MERGE, NULL);
	if (!atb_cache)
		return -ENOMEM;
	t = kthread_create(atb_thread, NULL, "alloc_tag_bench");
	if (IS_ERR(t)) {
		kmem_cache_destroy(atb_cache);
		return PTR_ERR(t);
	}
	kthread_bind(t, 0);
	wake_up_process(t);
	wait_for_completion(&atb_done);
	pr_info("done\n");
	return 0;
}

static void __exit atb_exit(void)
{
	kmem_cache_destroy(atb_cache);
}

module_init(atb_init);
module_exit(atb_exit);
MODULE_DESCRIPTION("Allocation fast-path benchmark for memory allocation profiling");
MODULE_LICENSE("GPL");
