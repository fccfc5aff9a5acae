// SPDX-License-Identifier: GPL-2.0
/*
 * C macros and static inlines the Rust allocation profiling core calls
 * (rust/kernel/alloc_tag/), and capture's static calls.  Each helper wraps
 * exactly one macro or inline; nothing here decides anything.  Built only
 * with CONFIG_MEM_ALLOC_PROFILING: the helpers name structures and
 * constants that exist only with it.
 */

#include <linux/alloc_tag.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/sysctl.h>
#include <linux/page_ext.h>
#include <linux/pgalloc_tag.h>
#include <linux/build_bug.h>
#include <linux/init.h>
#include <linux/kallsyms.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/stacktrace.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#ifdef CONFIG_MEM_ALLOC_PROFILING

void rust_helper_static_key_set(struct static_key *key, bool on)
{
	if (on)
		static_key_enable(key);
	else
		static_key_disable(key);
}

bool rust_helper_static_key_is_enabled(struct static_key *key)
{
	return static_key_enabled(key);
}

#ifdef CONFIG_PAGE_EXTENSION
/* An inline with SPARSEMEM; bindgen sees only the FLATMEM prototype. */
struct page_ext *rust_helper_alloc_tag_page_ext_owned(const struct page *page)
{
	return page_ext_get_owned(page);
}
#endif

struct page *rust_helper_folio_page(struct folio *folio, unsigned long n)
{
	return folio_page(folio, n);
}

void rust_helper_alloc_tag_warn(const char *msg)
{
	WARN(1, "%s", msg);
}

void rust_helper_alloc_tag_kvfree_rcu_barrier(void)
{
	kvfree_rcu_barrier();
}

/*
 * Zeroed per-CPU counters for a module's tags: a tagged call site (the
 * macro), so that this memory is counted on a row of its own.
 */
void __percpu *rust_helper_alloc_tag_alloc_counters(size_t size)
{
	return __alloc_percpu_gfp(size, sizeof(u64), GFP_KERNEL);
}

/* A macro for synchronize_rcu() unless CONFIG_TASKS_RCU. */
void rust_helper_alloc_tag_synchronize_rcu_tasks(void)
{
	synchronize_rcu_tasks();
}

/*
 * The three reallocators of rust/kernel/alloc/allocator.rs, charging what
 * they allocate to @tag, the tag of the Rust call site that asked
 * (rust/kernel/alloc_tag/rust_sites.rs).  They are _noprof calls with the
 * tag set around them, as alloc_hooks() does for a C call site: nothing
 * here is a call site of its own.
 */
#define ALLOC_TAG_RUST_REALLOC(name)					\
void *rust_helper_alloc_tag_##name(const void *p, size_t size,		\
				   gfp_t flags, struct alloc_tag *tag)	\
{									\
	return alloc_hooks_tag(tag, name##_noprof(p, size, flags));	\
}

ALLOC_TAG_RUST_REALLOC(krealloc)
ALLOC_TAG_RUST_REALLOC(vrealloc)
ALLOC_TAG_RUST_REALLOC(kvrealloc)

/* Page::alloc_page() of rust/kernel/page.rs, charged to @tag likewise. */
struct page *rust_helper_alloc_tag_alloc_pages(gfp_t gfp, unsigned int order,
					       struct alloc_tag *tag)
{
	return alloc_hooks_tag(tag, alloc_pages_noprof(gfp, order));
}

/* Serialises the registration of Rust call sites, from any context. */
static DEFINE_RAW_SPINLOCK(alloc_tag_sites_lock);

unsigned long rust_helper_alloc_tag_sites_lock(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&alloc_tag_sites_lock, flags);
	return flags;
}

void rust_helper_alloc_tag_sites_unlock(unsigned long flags)
{
	raw_spin_unlock_irqrestore(&alloc_tag_sites_lock, flags);
}

/* Serialises the addition of site blocks (the work item, tests). */
static DEFINE_MUTEX(alloc_tag_sites_grow_mutex);

void rust_helper_alloc_tag_sites_grow_lock(void)
{
	mutex_lock(&alloc_tag_sites_grow_mutex);
}

void rust_helper_alloc_tag_sites_grow_unlock(void)
{
	mutex_unlock(&alloc_tag_sites_grow_mutex);
}

void alloc_tag_rust_sites_grow(void);

static void alloc_tag_sites_grow_fn(struct work_struct *work)
{
	alloc_tag_rust_sites_grow();
}

static DECLARE_WORK(alloc_tag_sites_grow_work, alloc_tag_sites_grow_fn);

/* Adds site slots from process context; callable from any context. */
void rust_helper_alloc_tag_sites_schedule_grow(void)
{
	schedule_work(&alloc_tag_sites_grow_work);
}

/* A zeroed block of site slots: a tagged call site, on a row of its own. */
void *rust_helper_alloc_tag_sites_alloc_block(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

/*
 * The return addresses on the stack, innermost first, if the unwinder is
 * reliable enough to name the caller (not the guessing one).
 */
unsigned int rust_helper_alloc_tag_stack(unsigned long *store,
					 unsigned int size)
{
#if defined(CONFIG_STACKTRACE) && !defined(CONFIG_UNWINDER_GUESS)
	return stack_trace_save(store, size, 1);
#else
	return 0;
#endif
}

/* The symbol holding @addr, in @buf of KSYM_NAME_LEN bytes, or NULL. */
const char *rust_helper_alloc_tag_symbol(unsigned long addr, char *buf)
{
	unsigned long size, offset;
	char *modname;

	return kallsyms_lookup(addr, &size, &offset, &modname, buf);
}

/* The module whose memory holds @addr; called with preemption disabled. */
struct module *rust_helper_alloc_tag_module_of(unsigned long addr)
{
	return __module_address(addr);
}

#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
#include <linux/debugfs.h>
#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/static_call.h>
#include <linux/timekeeping.h>

DEFINE_STATIC_CALL(alloc_tag_add, __alloc_tag_add);
DEFINE_STATIC_CALL(alloc_tag_sub, __alloc_tag_sub);

/* Capture state, taken from the allocator hooks in any context but NMI. */
static DEFINE_RAW_SPINLOCK(alloc_tag_capture_lock);
/* Arm, disarm, report and module unload; static call updates. */
static DEFINE_MUTEX(alloc_tag_capture_mutex);

unsigned long rust_helper_alloc_tag_capture_lock(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&alloc_tag_capture_lock, flags);
	return flags;
}

void rust_helper_alloc_tag_capture_unlock(unsigned long flags)
{
	raw_spin_unlock_irqrestore(&alloc_tag_capture_lock, flags);
}

void rust_helper_alloc_tag_capture_mutex_lock(void)
{
	mutex_lock(&alloc_tag_capture_mutex);
}

void rust_helper_alloc_tag_capture_mutex_unlock(void)
{
	mutex_unlock(&alloc_tag_capture_mutex);
}

/* Points the slab and percpu hooks' calls at the capturing versions or back. */
void rust_helper_alloc_tag_capture_calls(bool on)
{
	if (on) {
		static_call_update(alloc_tag_add, __alloc_tag_add_capture);
		static_call_update(alloc_tag_sub, __alloc_tag_sub_capture);
	} else {
		static_call_update(alloc_tag_add, __alloc_tag_add);
		static_call_update(alloc_tag_sub, __alloc_tag_sub);
	}
}

/*
 * A chunk of capture's record pool, from process context: a tagged call
 * site, so the records' memory has a row of its own.
 */
void *rust_helper_alloc_tag_capture_alloc_chunk(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

void alloc_tag_capture_refill(void);

static void alloc_tag_capture_refill_fn(struct work_struct *work)
{
	alloc_tag_capture_refill();
}

static DECLARE_WORK(alloc_tag_capture_refill_work, alloc_tag_capture_refill_fn);

static void alloc_tag_capture_refill_irq_fn(struct irq_work *work)
{
	schedule_work(&alloc_tag_capture_refill_work);
}

/*
 * Hard irq_work: queuing it takes no lock, so the record path can ask for
 * a refill from inside any allocator hook (with the allocator's or the
 * scheduler's locks held); the work is queued from the interrupt.
 */
static struct irq_work alloc_tag_capture_refill_irq =
	IRQ_WORK_INIT_HARD(alloc_tag_capture_refill_irq_fn);

void rust_helper_alloc_tag_capture_queue_refill(void)
{
	irq_work_queue(&alloc_tag_capture_refill_irq);
}

/*
 * The allocating context: the stack without the @skip innermost frames, the
 * task and the time.
 */
void rust_helper_alloc_tag_capture_context(struct alloc_tag_capture_ctx *ctx,
					   unsigned int skip)
{
	ctx->nr_entries = stack_trace_save(ctx->entries, ARRAY_SIZE(ctx->entries),
					   skip);
	ctx->time_ns = ktime_get_boottime_ns();
	ctx->pid = task_pid_nr(current);
	strscpy(ctx->comm, current->comm, sizeof(ctx->comm));
}

/* Prints @n return addresses, one per line, symbolised. */
void rust_helper_alloc_tag_capture_show_stack(struct seq_file *m,
					      const unsigned long *entries,
					      unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		seq_printf(m, "    %pS\n", (void *)entries[i]);
}

/* The control and report file, root only. */
void rust_helper_alloc_tag_capture_debugfs(const struct file_operations *fops)
{
	debugfs_create_file("allocinfo_capture", 0600, NULL, NULL, fops);
}
#endif /* CONFIG_MEM_ALLOC_PROFILING_CAPTURE */

/*
 * Facts the Rust core spells out, checked at build time.  (The layouts it
 * reads or builds are checked in Rust, against bindings_helper.h's
 * sizeof/offsetof constants.)  BUILD_BUG_ON(), not static_assert(), as
 * LRU_REFS_PGOFF is built with min(); it needs a function the compiler
 * emits, as it does any non-static one (and the helpers are exported).
 * Nothing calls it: the body is empty at run time.
 */
void rust_helper_alloc_tag_build_checks(void)
{
#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
	BUILD_BUG_ON(CODETAG_FLAG_CAPTURE != 2);
#endif
	/* The compressed index field ends where the LRU refs field starts. */
	BUILD_BUG_ON(ALLOC_TAG_PGFLAG_TOP != LRU_REFS_PGOFF);
	BUILD_BUG_ON(ALLOC_TAG_PGFLAG_FREE < 0);
	/*
	 * control.rs emits its early_param() entries in assembly: two
	 * pointers and an int, padded to 8.  (bindgen reads this file as for
	 * a module, where struct obs_kernel_param is hidden.)
	 */
#if defined(CONFIG_64BIT) && !defined(MODULE)
	BUILD_BUG_ON(sizeof(struct obs_kernel_param) != 24);
#endif
}

#endif /* CONFIG_MEM_ALLOC_PROFILING */
