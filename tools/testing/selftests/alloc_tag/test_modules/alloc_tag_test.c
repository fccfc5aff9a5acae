// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation sites at known lines for the alloc_tag selftests, driven from
 * user space through debugfs.
 *
 * /sys/kernel/debug/alloc_tag_test/sites lists every site as
 * "<kind> <file>:<line> <function>", the key of its /proc/allocinfo row.
 * /sys/kernel/debug/alloc_tag_test/ctl takes one command per write:
 *
 *   kmalloc SIZE N     N x kmalloc(SIZE)
 *   large SIZE N       N x kmalloc(SIZE), SIZE above the largest kmalloc size
 *   cache N [NOWARN]   N x kmem_cache_alloc() from the module's own slab cache,
 *                      with __GFP_NOWARN if NOWARN is 1
 *   pages ORDER N      N x alloc_pages(ORDER)
 *   vmalloc SIZE N     N x vmalloc(SIZE)
 *   percpu SIZE N      N x __alloc_percpu(SIZE, 8)
 *   percpu_acct SIZE N N x __alloc_percpu_gfp(SIZE, 8, GFP_KERNEL_ACCOUNT),
 *                      charged to the writer's memcg
 *   order2 N           N x non-compound alloc_pages(2), kept whole
 *   node NID N         N x alloc_pages_node(NID, __GFP_THISNODE, 0); -EXDEV
 *                      if a page is not from NID
 *   knode NID N        N x kmalloc_node(256, __GFP_THISNODE, NID); -EXDEV if
 *                      an object is not from NID
 *   split              split_page() every order-2 block held
 *   free_tails         __free_pages(2) of every whole order-2 block held while
 *                      holding a second reference to its head page: the
 *                      tail pages go now, the head page stays held
 *   free KIND          free everything held of KIND (order2 frees the pieces)
 *   stress SITE ITERS  on every online CPU at once, ITERS kmalloc/kfree and
 *                      page alloc/free pairs at site stress_SITE (on, toggle)
 *   capture CALLER N   N x kmalloc() at the "capture" site, a wrapper called
 *                      from caller CALLER (0, 1 or 2: 64, 128, 256 bytes)
 *   capture_free CALLER  free the objects caller CALLER allocated
 *   capture_pages CALLER N  N x alloc_pages() at the "capture_pages" site, a
 *                      wrapper called from caller CALLER (0, 1 or 2: order
 *                      0, 1, 2)
 *   capture_pages_split CALLER  split_page() CALLER's whole blocks held
 *   capture_pages_tails CALLER  __free_pages() of CALLER's whole blocks held
 *                      while holding a second reference to the head page
 *   capture_pages_free CALLER  free the pages caller CALLER allocated
 *   kfence SIZE N      kmalloc(SIZE) at the "kfence" site, one per 2 ms, until
 *                      N of the objects held there are KFENCE objects (or
 *                      1024 are held); info's kfence_held and kfence_objects
 *                      count them
 *   flip SIZE 1        kmalloc(SIZE) at the "flip" site, whose alloc_hooks()
 *                      waits for flip_go before it allocates (-ETIMEDOUT
 *                      after 30 s or a fatal signal); held as "flip"
 *   flip_entered       wait until a "flip" allocation waits (-ETIMEDOUT
 *                      likewise); taken outside the lock "flip" holds
 *   flip_go            let the waiting "flip" allocation go on
 *   release            free what other modules handed over (att_adopt())
 *   rust alloc|free|adopt|grow  the Rust test module's command
 *                      (att_rust_register()); grow adds every block of
 *                      Rust site tags Kconfig allows
 *
 * Objects are held until freed; what is still held at unload is freed then.
 * att_adopt() takes objects that another module allocated (at its own sites)
 * and keeps them after that module is gone, until "release".
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/kfence.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "alloc_tag_test.h"

#define ATT_MAX_HELD	1024
#define ATT_CACHE_SIZE	200

enum att_kind {
	ATT_KMALLOC,
	ATT_LARGE,
	ATT_CACHE,
	ATT_PAGES,
	ATT_VMALLOC,
	ATT_PERCPU,
	ATT_ORDER2,
	ATT_STRESS_ON,
	ATT_STRESS_TOGGLE,
	ATT_NODE,
	ATT_PERCPU_ACCT,
	ATT_CAPTURE,
	ATT_CAPTURE_PAGES,
	ATT_KFENCE,
	ATT_KNODE,
	ATT_FLIP,
	ATT_NR_KINDS,
};

static const char *const att_kind_name[ATT_NR_KINDS] = {
	[ATT_KMALLOC]		= "kmalloc",
	[ATT_LARGE]		= "large",
	[ATT_CACHE]		= "cache",
	[ATT_PAGES]		= "pages",
	[ATT_VMALLOC]		= "vmalloc",
	[ATT_PERCPU]		= "percpu",
	[ATT_ORDER2]		= "order2",
	[ATT_STRESS_ON]		= "stress_on",
	[ATT_STRESS_TOGGLE]	= "stress_toggle",
	[ATT_NODE]		= "node",
	[ATT_PERCPU_ACCT]	= "percpu_acct",
	[ATT_CAPTURE]		= "capture",
	[ATT_CAPTURE_PAGES]	= "capture_pages",
	[ATT_KFENCE]		= "kfence",
	[ATT_KNODE]		= "knode",
	[ATT_FLIP]		= "flip",
};

struct att_site {
	unsigned int line;
	const char *func;
};

struct att_held {
	void *ptr;
	unsigned int order;	/* pages: allocation order */
	bool split;		/* order2: split into single pages */
	bool head_only;		/* order2: tail pages freed, head page held */
	unsigned int caller;	/* capture: which caller allocated it */
};

static struct att_site att_sites[ATT_NR_KINDS];
static struct att_held att_held[ATT_NR_KINDS][ATT_MAX_HELD];
static unsigned int att_nr_held[ATT_NR_KINDS];
static DEFINE_MUTEX(att_lock);

/* Objects other modules allocated: a slab object (order < 0) or pages. */
struct att_adopted {
	void *ptr;
	int order;
};

static struct att_adopted att_adopted[ATT_MAX_HELD];
static unsigned int att_nr_adopted;

/*
 * Keeps @ptr, a kmalloc() object if @order < 0 and else the page_address()
 * of an alloc_pages(@order) block, until "release" or this module's unload.
 */
int att_adopt(void *ptr, int order)
{
	int ret = -ENOSPC;

	mutex_lock(&att_lock);
	if (att_nr_adopted < ATT_MAX_HELD) {
		att_adopted[att_nr_adopted].ptr = ptr;
		att_adopted[att_nr_adopted].order = order;
		att_nr_adopted++;
		ret = 0;
	}
	mutex_unlock(&att_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(att_adopt);

static DEFINE_MUTEX(att_rust_lock);
static att_rust_cmd_fn att_rust_cmd;
static att_rust_sites_fn att_rust_sites;

int att_rust_register(att_rust_cmd_fn cmd, att_rust_sites_fn sites)
{
	mutex_lock(&att_rust_lock);
	att_rust_cmd = cmd;
	att_rust_sites = sites;
	mutex_unlock(&att_rust_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(att_rust_register);

/* Runs a Rust test module command, outside att_lock (it may call att_adopt()). */
static int att_rust_command(const char *word)
{
	static const char *const ops[] = { "alloc", "free", "adopt", "grow" };
	int op, ret = -ENODEV;

	for (op = 0; op < ARRAY_SIZE(ops); op++)
		if (sysfs_streq(word, ops[op]))
			break;
	if (op == ARRAY_SIZE(ops))
		return -EINVAL;
	mutex_lock(&att_rust_lock);
	if (att_rust_cmd)
		ret = att_rust_cmd(op + 1);
	mutex_unlock(&att_rust_lock);
	return ret;
}

static void att_release(void)
{
	while (att_nr_adopted) {
		struct att_adopted *a = &att_adopted[--att_nr_adopted];

		if (a->order < 0)
			kfree(a->ptr);
		else
			free_pages((unsigned long)a->ptr, a->order);
	}
}

static struct kmem_cache *att_cache;
static struct dentry *att_dir;
static bool att_probing;

/*
 * Record the line and function of the allocation on the same source line.
 * While probing (at module init) the allocation itself is skipped, so the
 * sites file knows every line before anything is allocated.
 */
static bool att_mark(enum att_kind kind, unsigned int line, const char *func)
{
	att_sites[kind].line = line;
	att_sites[kind].func = func;
	return att_probing;
}

#define ATT_SITE(kind, alloc) \
	(att_mark(kind, __LINE__, __func__) ? NULL : (alloc))

static void *att_do_kmalloc(size_t size)
{
	return ATT_SITE(ATT_KMALLOC, kmalloc(size, GFP_KERNEL));
}

static void *att_do_large(size_t size)
{
	return ATT_SITE(ATT_LARGE, kmalloc(size, GFP_KERNEL));
}

/* The flags of the "cache" site: GFP_KERNEL, with __GFP_NOWARN on request. */
static gfp_t att_cache_gfp = GFP_KERNEL;

static void *att_do_cache(void)
{
	return ATT_SITE(ATT_CACHE, kmem_cache_alloc(att_cache, att_cache_gfp));
}

static struct page *att_do_pages(unsigned int order)
{
	return ATT_SITE(ATT_PAGES, alloc_pages(GFP_KERNEL, order));
}

static void *att_do_vmalloc(size_t size)
{
	return ATT_SITE(ATT_VMALLOC, vmalloc(size));
}

static void __percpu *att_do_percpu(size_t size)
{
	return ATT_SITE(ATT_PERCPU, __alloc_percpu(size, 8));
}

static void __percpu *att_do_percpu_acct(size_t size)
{
	return ATT_SITE(ATT_PERCPU_ACCT, __alloc_percpu_gfp(size, 8, GFP_KERNEL_ACCOUNT));
}

/*
 * Whether @p is in the first (boot) percpu chunk: with the embedding first
 * chunk allocator (x86's default) it is in the linear map, where every
 * later chunk is in vmalloc space.
 */
static bool att_percpu_in_first_chunk(void __percpu *p)
{
	return !is_vmalloc_addr(per_cpu_ptr(p, cpumask_first(cpu_possible_mask)));
}

static struct page *att_do_order2(void)
{
	return ATT_SITE(ATT_ORDER2, alloc_pages(GFP_KERNEL, 2));
}

/* One page from node @nid only (__GFP_THISNODE: no fallback to another). */
static struct page *att_do_node(int nid)
{
	return ATT_SITE(ATT_NODE, alloc_pages_node(nid, GFP_KERNEL | __GFP_THISNODE, 0));
}

/* The object size of the "knode" site: a kmalloc-256 object. */
#define ATT_KNODE_SIZE	256

/* One object from node @nid's slabs only. */
static void *att_do_knode(int nid)
{
	return ATT_SITE(ATT_KNODE, kmalloc_node(ATT_KNODE_SIZE,
						GFP_KERNEL | __GFP_THISNODE, nid));
}

/*
 * The capture selftest's helper: one allocation site that three callers
 * reach, so that only the stack tells them apart.  noinline: the callers
 * must be frames of their own.
 */
static noinline void *att_capture_wrapper(size_t size)
{
	return ATT_SITE(ATT_CAPTURE, kmalloc(size, GFP_KERNEL));
}

/*
 * The empty asm after the call keeps each caller's frame on the stack: a
 * plain "return att_capture_wrapper(n)" becomes a tail call (a jump).
 */
static noinline void *att_capture_caller0(void)
{
	void *p = att_capture_wrapper(64);

	asm volatile("" : : "r" (p) : "memory");
	return p;
}

static noinline void *att_capture_caller1(void)
{
	void *p = att_capture_wrapper(128);

	asm volatile("" : : "r" (p) : "memory");
	return p;
}

static noinline void *att_capture_caller2(void)
{
	void *p = att_capture_wrapper(256);

	asm volatile("" : : "r" (p) : "memory");
	return p;
}

/* The same for pages: caller N allocates order N. */
static noinline struct page *att_capture_pages_wrapper(unsigned int order)
{
	return ATT_SITE(ATT_CAPTURE_PAGES, alloc_pages(GFP_KERNEL, order));
}

static noinline void *att_capture_pages_caller0(void)
{
	void *p = att_capture_pages_wrapper(0);

	asm volatile("" : : "r" (p) : "memory");
	return p;
}

static noinline void *att_capture_pages_caller1(void)
{
	void *p = att_capture_pages_wrapper(1);

	asm volatile("" : : "r" (p) : "memory");
	return p;
}

static noinline void *att_capture_pages_caller2(void)
{
	void *p = att_capture_pages_wrapper(2);

	asm volatile("" : : "r" (p) : "memory");
	return p;
}

#define ATT_CAPTURE_CALLERS	3

static void *(*const att_capture_callers[][ATT_CAPTURE_CALLERS])(void) = {
	{ att_capture_caller0, att_capture_caller1, att_capture_caller2 },
	{ att_capture_pages_caller0, att_capture_pages_caller1,
	  att_capture_pages_caller2 },
};

/* @kind: ATT_CAPTURE or ATT_CAPTURE_PAGES. */
static int att_capture(enum att_kind kind, unsigned int caller, unsigned int n)
{
	unsigned int i;

	if (caller >= ATT_CAPTURE_CALLERS)
		return -EINVAL;
	if (n > ATT_MAX_HELD - att_nr_held[kind])
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		struct att_held *h = &att_held[kind][att_nr_held[kind]];

		memset(h, 0, sizeof(*h));
		h->ptr = att_capture_callers[kind - ATT_CAPTURE][caller]();
		if (!h->ptr)
			return -ENOMEM;
		h->caller = caller;
		h->order = caller;
		att_nr_held[kind]++;
	}
	return 0;
}

static void att_free_one(enum att_kind kind, struct att_held *h);

/* Frees what @caller allocated, keeping the others' objects. */
static void att_capture_free(enum att_kind kind, unsigned int caller)
{
	unsigned int i = 0;

	while (i < att_nr_held[kind]) {
		struct att_held *h = &att_held[kind][i];

		if (h->caller != caller) {
			i++;
			continue;
		}
		att_free_one(kind, h);
		*h = att_held[kind][--att_nr_held[kind]];
	}
}

/* split_page() of @caller's whole blocks (order > 0) held. */
static void att_capture_pages_split(unsigned int caller)
{
	unsigned int i;

	for (i = 0; i < att_nr_held[ATT_CAPTURE_PAGES]; i++) {
		struct att_held *h = &att_held[ATT_CAPTURE_PAGES][i];

		if (h->caller == caller && h->order && !h->split && !h->head_only) {
			split_page(h->ptr, h->order);
			h->split = true;
		}
	}
}

/*
 * __free_pages() of @caller's whole blocks (order > 0) held, while holding a
 * second reference to the head: the tail pages go, the head stays held.
 */
static void att_capture_pages_tails(unsigned int caller)
{
	unsigned int i;

	for (i = 0; i < att_nr_held[ATT_CAPTURE_PAGES]; i++) {
		struct att_held *h = &att_held[ATT_CAPTURE_PAGES][i];

		if (h->caller == caller && h->order && !h->split && !h->head_only) {
			get_page(h->ptr);
			__free_pages(h->ptr, h->order);
			h->head_only = true;
		}
	}
}

static void *att_stress_on(size_t size)
{
	return ATT_SITE(ATT_STRESS_ON, kmalloc(size, GFP_KERNEL));
}

static void *att_stress_toggle(size_t size)
{
	return ATT_SITE(ATT_STRESS_TOGGLE, kmalloc(size, GFP_KERNEL));
}

static void *att_do_kfence(size_t size)
{
	return ATT_SITE(ATT_KFENCE, kmalloc(size, GFP_KERNEL));
}

/*
 * The "flip" site: alloc_hooks() around a function that waits for the
 * selftest's flip_go before it allocates, so that profiling can be switched
 * on between the call site's alloc_hooks() and the allocator's hook.
 * Whatever the switch, the object must be charged to this site.
 */
static DECLARE_COMPLETION(att_flip_entered);
static DECLARE_COMPLETION(att_flip_go);
static bool att_flip_timed_out;

static void *att_flip_wait_noprof(size_t size)
{
	reinit_completion(&att_flip_go);
	reinit_completion(&att_flip_entered);
	complete(&att_flip_entered);
	if (wait_for_completion_killable_timeout(&att_flip_go, 30 * HZ) <= 0) {
		att_flip_timed_out = true;
		return NULL;
	}
	return kmalloc_noprof(size, GFP_KERNEL);
}

#define att_flip_wait(...)	alloc_hooks(att_flip_wait_noprof(__VA_ARGS__))

static void *att_do_flip(size_t size)
{
	return ATT_SITE(ATT_FLIP, att_flip_wait(size));
}

/* flip_entered, flip_go: outside att_lock, which a waiting "flip" holds. */
static int att_flip_command(const char *cmd)
{
	if (sysfs_streq(cmd, "entered"))
		return wait_for_completion_killable_timeout(&att_flip_entered,
							    30 * HZ) > 0 ?
		       0 : -ETIMEDOUT;
	if (sysfs_streq(cmd, "go")) {
		complete(&att_flip_go);
		return 0;
	}
	return -EINVAL;
}

/* KFENCE objects among those held of kind "kfence". */
static unsigned int att_kfence_objects(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < att_nr_held[ATT_KFENCE]; i++)
		n += is_kfence_address(att_held[ATT_KFENCE][i].ptr);
	return n;
}

/*
 * kmalloc(@size) at the "kfence" site until @want of the objects held are
 * KFENCE's (each try after a sleep longer than a 1 ms sample interval, so
 * that the next allocation is sampled), or ATT_MAX_HELD are held.  Without
 * KFENCE sampling none ever is: the command then only fills the site.
 */
static int att_kfence(size_t size, unsigned int want)
{
	while (att_kfence_objects() < want && att_nr_held[ATT_KFENCE] < ATT_MAX_HELD) {
		struct att_held *h = &att_held[ATT_KFENCE][att_nr_held[ATT_KFENCE]];

		usleep_range(2000, 3000);
		memset(h, 0, sizeof(*h));
		h->ptr = att_do_kfence(size);
		if (!h->ptr)
			return -ENOMEM;
		att_nr_held[ATT_KFENCE]++;
	}
	return 0;
}

static void att_probe_sites(void)
{
	att_probing = true;
	att_do_kmalloc(0);
	att_do_large(0);
	att_do_cache();
	att_do_pages(0);
	att_do_vmalloc(0);
	att_do_percpu(0);
	att_do_percpu_acct(0);
	att_do_order2();
	att_stress_on(0);
	att_stress_toggle(0);
	att_do_node(0);
	att_do_knode(0);
	att_capture_wrapper(0);
	att_capture_pages_wrapper(0);
	att_do_kfence(0);
	att_do_flip(0);
	att_probing = false;
}

static void att_free_one(enum att_kind kind, struct att_held *h)
{
	unsigned int i;

	switch (kind) {
	case ATT_KMALLOC:
	case ATT_LARGE:
	case ATT_CAPTURE:
	case ATT_KFENCE:
	case ATT_KNODE:
	case ATT_FLIP:
		kfree(h->ptr);
		break;
	case ATT_CACHE:
		kmem_cache_free(att_cache, h->ptr);
		break;
	case ATT_PAGES:
	case ATT_NODE:
		__free_pages(h->ptr, h->order);
		break;
	case ATT_VMALLOC:
		vfree(h->ptr);
		break;
	case ATT_PERCPU:
	case ATT_PERCPU_ACCT:
		free_percpu((void __percpu *)h->ptr);
		break;
	case ATT_CAPTURE_PAGES:
		if (h->split) {
			for (i = 0; i < 1U << h->order; i++)
				__free_page((struct page *)h->ptr + i);
		} else if (h->head_only) {
			put_page(h->ptr);
		} else {
			__free_pages(h->ptr, h->order);
		}
		break;
	case ATT_ORDER2:
		if (h->split) {
			for (i = 0; i < 4; i++)
				__free_page((struct page *)h->ptr + i);
		} else if (h->head_only) {
			put_page(h->ptr);
		} else {
			__free_pages(h->ptr, 2);
		}
		break;
	default:
		break;
	}
	h->ptr = NULL;
}

static void att_free_kind(enum att_kind kind)
{
	while (att_nr_held[kind])
		att_free_one(kind, &att_held[kind][--att_nr_held[kind]]);
}

static int att_alloc(enum att_kind kind, unsigned long arg, unsigned int n)
{
	unsigned int i;
	void *p;

	if (n > ATT_MAX_HELD - att_nr_held[kind])
		return -ENOSPC;

	for (i = 0; i < n; i++) {
		struct att_held *h = &att_held[kind][att_nr_held[kind]];

		switch (kind) {
		case ATT_KMALLOC:
			p = att_do_kmalloc(arg);
			break;
		case ATT_LARGE:
			p = att_do_large(arg);
			break;
		case ATT_CACHE:
			p = att_do_cache();
			break;
		case ATT_PAGES:
			if (arg > 5)
				return -EINVAL;
			p = att_do_pages(arg);
			break;
		case ATT_VMALLOC:
			p = att_do_vmalloc(arg);
			break;
		case ATT_PERCPU:
			p = (void __force *)att_do_percpu(arg);
			break;
		case ATT_PERCPU_ACCT:
			p = (void __force *)att_do_percpu_acct(arg);
			break;
		case ATT_ORDER2:
			p = att_do_order2();
			break;
		case ATT_NODE:
			if (arg >= MAX_NUMNODES || !node_online(arg))
				return -EINVAL;
			p = att_do_node(arg);
			if (p && page_to_nid(p) != arg) {
				__free_pages(p, 0);
				return -EXDEV;
			}
			break;
		case ATT_KNODE:
			if (arg >= MAX_NUMNODES || !node_online(arg))
				return -EINVAL;
			p = att_do_knode(arg);
			if (p && page_to_nid(virt_to_page(p)) != arg) {
				kfree(p);
				return -EXDEV;
			}
			break;
		case ATT_FLIP:
			att_flip_timed_out = false;
			p = att_do_flip(arg);
			if (!p && att_flip_timed_out)
				return -ETIMEDOUT;
			break;
		default:
			return -EINVAL;
		}
		if (!p)
			return -ENOMEM;
		h->ptr = p;
		h->order = kind == ATT_NODE || kind == ATT_KNODE ? 0 : arg;
		h->split = false;
		h->head_only = false;
		att_nr_held[kind]++;
	}
	return 0;
}

static void att_split(void)
{
	unsigned int i;

	for (i = 0; i < att_nr_held[ATT_ORDER2]; i++) {
		struct att_held *h = &att_held[ATT_ORDER2][i];

		if (!h->split && !h->head_only) {
			split_page(h->ptr, 2);
			h->split = true;
		}
	}
}

static void att_free_tails(void)
{
	unsigned int i;

	for (i = 0; i < att_nr_held[ATT_ORDER2]; i++) {
		struct att_held *h = &att_held[ATT_ORDER2][i];

		if (!h->split && !h->head_only) {
			get_page(h->ptr);
			__free_pages(h->ptr, 2);
			h->head_only = true;
		}
	}
}

struct att_stress {
	void *(*alloc)(size_t size);
	unsigned long iters;
	atomic_t running;
	atomic_t failures;
	struct completion done;
};

#define ATT_STRESS_LIVE	16

static int att_stress_fn(void *data)
{
	struct att_stress *st = data;
	void *live[ATT_STRESS_LIVE] = { };
	unsigned long i;
	unsigned int j;

	for (i = 0; i < st->iters; i++) {
		j = i % ATT_STRESS_LIVE;
		kfree(live[j]);
		live[j] = st->alloc(8 + (i % 32) * 8);
		if (!live[j])
			atomic_inc(&st->failures);
		if (!(i % 64))
			cond_resched();
	}
	for (j = 0; j < ATT_STRESS_LIVE; j++)
		kfree(live[j]);

	if (atomic_dec_and_test(&st->running))
		complete(&st->done);
	return 0;
}

static int att_stress_run(enum att_kind kind, unsigned long iters)
{
	struct att_stress st = {
		.alloc = kind == ATT_STRESS_ON ? att_stress_on : att_stress_toggle,
		.iters = iters,
	};
	struct task_struct *t;
	unsigned int cpu;
	int ret = 0;

	init_completion(&st.done);
	atomic_set(&st.running, 1);
	atomic_set(&st.failures, 0);

	cpus_read_lock();
	for_each_online_cpu(cpu) {
		t = kthread_create(att_stress_fn, &st, "att_stress/%u", cpu);
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			break;
		}
		kthread_bind(t, cpu);
		atomic_inc(&st.running);
		wake_up_process(t);
	}
	cpus_read_unlock();

	if (!atomic_dec_and_test(&st.running))
		wait_for_completion(&st.done);
	if (!ret && atomic_read(&st.failures))
		ret = -ENOMEM;
	return ret;
}

static int att_kind_parse(const char *s, enum att_kind *kind)
{
	int k;

	for (k = 0; k < ATT_NR_KINDS; k++) {
		if (!strcmp(s, att_kind_name[k])) {
			*kind = k;
			return 0;
		}
	}
	return -EINVAL;
}

static int att_command(char *buf)
{
	char *argv[3] = { };
	unsigned long a = 0, b = 0;
	enum att_kind kind;
	int argc = 0;
	char *tok;

	while ((tok = strsep(&buf, " \t\n")) != NULL) {
		if (!*tok)
			continue;
		if (argc == ARRAY_SIZE(argv))
			return -EINVAL;
		argv[argc++] = tok;
	}
	if (!argc)
		return -EINVAL;
	if (argc > 1 && kstrtoul(argv[1], 0, &a) && strcmp(argv[0], "free") &&
	    strcmp(argv[0], "stress"))
		return -EINVAL;
	if (argc > 2 && kstrtoul(argv[2], 0, &b))
		return -EINVAL;

	if (!strcmp(argv[0], "free") && argc == 2) {
		if (att_kind_parse(argv[1], &kind))
			return -EINVAL;
		att_free_kind(kind);
		return 0;
	}
	if (!strcmp(argv[0], "release") && argc == 1) {
		att_release();
		return 0;
	}
	if (!strcmp(argv[0], "split") && argc == 1) {
		att_split();
		return 0;
	}
	if (!strcmp(argv[0], "capture") && argc == 3)
		return att_capture(ATT_CAPTURE, a, b);
	if (!strcmp(argv[0], "capture_pages") && argc == 3)
		return att_capture(ATT_CAPTURE_PAGES, a, b);
	if (!strncmp(argv[0], "capture_", 8) && argc == 2) {
		if (a >= ATT_CAPTURE_CALLERS)
			return -EINVAL;
		if (!strcmp(argv[0], "capture_free"))
			att_capture_free(ATT_CAPTURE, a);
		else if (!strcmp(argv[0], "capture_pages_free"))
			att_capture_free(ATT_CAPTURE_PAGES, a);
		else if (!strcmp(argv[0], "capture_pages_split"))
			att_capture_pages_split(a);
		else if (!strcmp(argv[0], "capture_pages_tails"))
			att_capture_pages_tails(a);
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(argv[0], "free_tails") && argc == 1) {
		att_free_tails();
		return 0;
	}
	if (!strcmp(argv[0], "stress") && argc == 3) {
		if (!strcmp(argv[1], "on"))
			return att_stress_run(ATT_STRESS_ON, b);
		if (!strcmp(argv[1], "toggle"))
			return att_stress_run(ATT_STRESS_TOGGLE, b);
		return -EINVAL;
	}
	if (!strcmp(argv[0], "cache") && (argc == 2 || (argc == 3 && b <= 1))) {
		int ret;

		att_cache_gfp = GFP_KERNEL | (b ? __GFP_NOWARN : 0);
		ret = att_alloc(ATT_CACHE, 0, a);
		att_cache_gfp = GFP_KERNEL;
		return ret;
	}
	if (!strcmp(argv[0], "order2") && argc == 2)
		return att_alloc(ATT_ORDER2, 0, a);
	if (!strcmp(argv[0], "kfence") && argc == 3)
		return att_kfence(a, b);
	if (argc != 3 || att_kind_parse(argv[0], &kind))
		return -EINVAL;
	switch (kind) {
	case ATT_KMALLOC:
	case ATT_LARGE:
	case ATT_PAGES:
	case ATT_VMALLOC:
	case ATT_PERCPU:
	case ATT_PERCPU_ACCT:
	case ATT_NODE:
	case ATT_KNODE:
		return att_alloc(kind, a, b);
	case ATT_FLIP:
		return b == 1 ? att_alloc(kind, a, b) : -EINVAL;
	default:
		return -EINVAL;
	}
}

static ssize_t att_ctl_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	char buf[64];
	int ret;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';

	if (!strncmp(buf, "rust ", 5))
		return att_rust_command(buf + 5) ?: count;
	if (!strncmp(buf, "flip_", 5))
		return att_flip_command(buf + 5) ?: count;

	mutex_lock(&att_lock);
	ret = att_command(buf);
	mutex_unlock(&att_lock);

	return ret ? ret : count;
}

static const struct file_operations att_ctl_fops = {
	.owner	= THIS_MODULE,
	.write	= att_ctl_write,
};

static int att_sites_show(struct seq_file *m, void *v)
{
	int k;

	for (k = 0; k < ATT_NR_KINDS; k++)
		seq_printf(m, "%s %s:%u %s\n", att_kind_name[k], __FILE__,
			   att_sites[k].line, att_sites[k].func);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(att_sites);

static int att_rust_sites_show(struct seq_file *m, void *v)
{
	static char buf[512];
	ssize_t n = -ENODEV;

	mutex_lock(&att_rust_lock);
	if (att_rust_sites)
		n = att_rust_sites(buf, sizeof(buf));
	if (n >= 0)
		seq_write(m, buf, n);
	mutex_unlock(&att_rust_lock);
	return n < 0 ? n : 0;
}
DEFINE_SHOW_ATTRIBUTE(att_rust_sites);

static int att_info_show(struct seq_file *m, void *v)
{
	unsigned int i, first = 0;

	seq_printf(m, "cache_size %u\n", kmem_cache_size(att_cache));
	seq_printf(m, "page_size %lu\n", PAGE_SIZE);
	seq_printf(m, "possible_cpus %u\n", num_possible_cpus());
	seq_printf(m, "online_cpus %u\n", num_online_cpus());
	seq_printf(m, "online_nodes %u\n", num_online_nodes());
	seq_printf(m, "memcg %d\n", IS_ENABLED(CONFIG_MEMCG));
	mutex_lock(&att_lock);
	seq_printf(m, "kfence_held %u\n", att_nr_held[ATT_KFENCE]);
	seq_printf(m, "kfence_objects %u\n", att_kfence_objects());
	mutex_unlock(&att_lock);
	mutex_lock(&att_lock);
	for (i = 0; i < att_nr_held[ATT_PERCPU_ACCT]; i++)
		first += att_percpu_in_first_chunk((void __percpu __force *)
						   att_held[ATT_PERCPU_ACCT][i].ptr);
	mutex_unlock(&att_lock);
	seq_printf(m, "percpu_acct_first_chunk %u\n", first);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(att_info);

static int __init att_init(void)
{
	att_cache = kmem_cache_create("alloc_tag_test", ATT_CACHE_SIZE, 0,
				      SLAB_NO_MERGE, NULL);
	if (!att_cache)
		return -ENOMEM;

	att_probe_sites();

	att_dir = debugfs_create_dir("alloc_tag_test", NULL);
	debugfs_create_file("ctl", 0200, att_dir, NULL, &att_ctl_fops);
	debugfs_create_file("sites", 0444, att_dir, NULL, &att_sites_fops);
	debugfs_create_file("info", 0444, att_dir, NULL, &att_info_fops);
	debugfs_create_file("rust_sites", 0444, att_dir, NULL,
			    &att_rust_sites_fops);
	return 0;
}

static void __exit att_exit(void)
{
	int k;

	debugfs_remove_recursive(att_dir);
	for (k = 0; k < ATT_NR_KINDS; k++)
		att_free_kind(k);
	att_release();
	kmem_cache_destroy(att_cache);
}

module_init(att_init);
module_exit(att_exit);
MODULE_DESCRIPTION("Allocation sites at known lines for the alloc_tag selftests");
MODULE_LICENSE("GPL");
