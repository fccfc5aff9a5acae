// SPDX-License-Identifier: GPL-2.0
/*
 * C macros and static inlines the Rust allocation profiling core calls
 * (rust/kernel/alloc_tag/, rust/kernel/percpu.rs).  Each wraps exactly one
 * macro or inline; nothing here decides anything.
 */

#include <linux/alloc_tag.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/sysctl.h>
#include <linux/page_ext.h>
#include <linux/pgalloc_tag.h>
#include <linux/build_bug.h>
#include <linux/init.h>

void rust_helper_this_cpu_add_u64(u64 __percpu *ptr, u64 val)
{
	this_cpu_add(*ptr, val);
}

void rust_helper_preempt_disable(void)
{
	preempt_disable();
}

void rust_helper_preempt_enable(void)
{
	preempt_enable();
}

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
 * The C view of the structures the Rust core reads or builds, for its layout
 * check (rust/kernel/alloc_tag/layout.rs); the item numbers are shared.
 */
size_t rust_helper_alloc_tag_c_layout(unsigned int item)
{
	static const size_t layout[] = {
		sizeof(struct codetag),
		offsetof(struct codetag, lineno),
		offsetof(struct codetag, modname),
		offsetof(struct codetag, function),
		offsetof(struct codetag, filename),
		sizeof(struct alloc_tag),
		offsetof(struct alloc_tag, counters),
		sizeof(struct alloc_tag_counters),
		offsetof(struct alloc_tag_counters, calls),
		sizeof(union codetag_ref),
		sizeof(struct codetag_bytes),
#ifdef CONFIG_PAGE_EXTENSION
		sizeof(struct page_ext_operations),
		offsetof(struct page_ext_operations, need),
		offsetof(struct page_ext_operations, need_shared_flags),
#else
		0, 0, 0,
#endif
		offsetof(struct seq_file, index),
		offsetof(struct seq_file, private),
		sizeof(const struct seq_operations),
		sizeof(struct ctl_table),
		offsetof(struct ctl_table, mode),
		offsetof(struct ctl_table, proc_handler),
		sizeof(struct static_key),
#ifndef MODULE	/* bindgen reads this file as for a module, which hides it */
		sizeof(struct obs_kernel_param),
#else
		0,
#endif
	};

	/* The compressed index field ends where the LRU refs field starts. */
	BUILD_BUG_ON(ALLOC_TAG_PGFLAG_TOP != LRU_REFS_PGOFF);
	BUILD_BUG_ON(ALLOC_TAG_PGFLAG_FREE < 0);

	return item < ARRAY_SIZE(layout) ? layout[item] : (size_t)-1;
}
