// SPDX-License-Identifier: GPL-2.0
/*
 * C macros and static inlines the Rust allocation profiling core calls
 * (rust/kernel/alloc_tag/).  Each helper wraps exactly one macro or inline
 * (or, for the allocating ones, is a tagged call site of its own); state and
 * logic are elsewhere (lib/alloc_tag_*.c).  Built only
 * with CONFIG_MEM_ALLOC_PROFILING: the helpers name structures and
 * constants that exist only with it.
 */

#include <linux/alloc_tag.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/mm.h>
#include <linux/module.h>
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

/* Zeroed per-node correction pairs for module and Rust call-site tags. */
void *rust_helper_alloc_tag_alloc_nodes(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

/* A macro without CONFIG_NUMA. */
unsigned int rust_helper_alloc_tag_nr_node_ids(void)
{
	return nr_node_ids;
}

int rust_helper_alloc_tag_cpu_to_node(int cpu)
{
	return cpu_to_node(cpu);
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

/* A zeroed block of site slots: a tagged call site, on a row of its own. */
void *rust_helper_alloc_tag_sites_alloc_block(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

/* The module whose memory holds @addr; called with preemption disabled. */
struct module *rust_helper_alloc_tag_module_of(unsigned long addr)
{
	return __module_address(addr);
}

#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
/*
 * A chunk of capture's record pool, from process context: a tagged call
 * site, so the records' memory has a row of its own.
 */
void *rust_helper_alloc_tag_capture_alloc_chunk(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}
#endif /* CONFIG_MEM_ALLOC_PROFILING_CAPTURE */

#endif /* CONFIG_MEM_ALLOC_PROFILING */
