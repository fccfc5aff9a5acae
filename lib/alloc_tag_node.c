// SPDX-License-Identifier: GPL-2.0
/*
 * Per-node attribution of allocation profiling (CONFIG_MEM_ALLOC_PROFILING_NUMA,
 * on with alloc_tag_node=1): which call sites hold memory on which node.
 *
 * A tag's per-CPU counters stay as they are; a charge counts on the node of
 * the CPU that made it.  When the memory is on another node, the charge's
 * bytes and call move from the CPU's node to the memory's in the tag's
 * correction pairs (struct alloc_tag_node_counters, one per node), so a node
 * holds the sum of its CPUs' counters plus its correction.  Node-local
 * allocations, the common case, touch no correction.  The hooks here run
 * the usual charge and its correction with preemption off, so that both see
 * the same CPU.  Percpu memory is on every CPU's node: its tags are marked
 * and their rows split over the nodes by possible CPUs when read.
 *
 * The counting is the Rust core's (rust/kernel/alloc_tag/node.rs); this file
 * has the boot parameter, the corrections of vmlinux's tags (from memblock,
 * before the page allocator hands out its first page) and the hooks' glue.
 */

#define pr_fmt(fmt) "alloc_tag: " fmt

#include <linux/alloc_tag.h>
#include <linux/init.h>
#include <linux/kstrtox.h>
#include <linux/memblock.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/pgalloc_tag.h>
#include <linux/preempt.h>
#include <linux/topology.h>

DEFINE_STATIC_KEY_FALSE(mem_alloc_profiling_node_key);

static bool alloc_tag_node_param __initdata;

static int __init alloc_tag_node_setup(char *s)
{
	if (!s || kstrtobool(s, &alloc_tag_node_param))
		pr_err("alloc_tag_node=%s: expected 0 or 1; per-node attribution stays off\n",
		       s ? s : "");
	return 0;
}
early_param("alloc_tag_node", alloc_tag_node_setup);

/*
 * From mm_core_init(), before mem_init() gives memblock's memory to the page
 * allocator: no page or object has been charged yet, so every charge of
 * this boot is corrected.  Module tags and Rust call-site tags get theirs
 * with their counters (rust/kernel/alloc_tag/registry.rs).
 */
void __init alloc_tag_node_init(void)
{
	size_t ntags = __stop_alloc_tags - __start_alloc_tags;
	struct alloc_tag_node_counters *area;
	size_t i, size;

	if (!alloc_tag_node_param)
		return;
	if (mem_alloc_profiling_permanently_disabled()) {
		pr_info("alloc_tag_node=1 ignored: profiling is off for good (never)\n");
		return;
	}
	size = array3_size(ntags, nr_node_ids, sizeof(*area));
	area = memblock_alloc(size, SMP_CACHE_BYTES);
	if (!area) {
		pr_err("per-node attribution off: no memory for %zu bytes of node counters\n",
		       size);
		return;
	}
	for (i = 0; i < ntags; i++)
		__start_alloc_tags[i].nodes = area + i * nr_node_ids;
	static_branch_enable(&mem_alloc_profiling_node_key);
	pr_info("per-node attribution on: %u nodes, %zu bytes for vmlinux's %zu tags\n",
		nr_node_ids, size, ntags);
}

/*
 * A charge (or an uncharge) on this CPU of memory of node @nid: move it
 * from this CPU's node to @nid (@tag is the tag charged: the Rust core may
 * have charged none, and an uncounted allocation has nothing to move).
 * Callers test the node first, so that node-local memory, the common case,
 * costs no lookup of the tag.
 */
static __always_inline void alloc_tag_node_fix(struct alloc_tag *tag,
					       s64 bytes, s64 calls, int nid,
					       int here)
{
	if (!tag)
		return;
	if (nid == NUMA_NO_NODE)
		__alloc_tag_node_percpu(tag);
	else
		__alloc_tag_node_move(tag, here, nid, bytes, calls);
}

void __alloc_tag_add_node(union codetag_ref *ref, struct alloc_tag *tag,
			  size_t bytes, int nid)
{
	int here;

	preempt_disable();
	alloc_tag_add(ref, tag, bytes);
	here = numa_node_id();
	if (unlikely(nid != here))
		alloc_tag_node_fix(__alloc_tag_ref_tag(ref), bytes, 1, nid, here);
	preempt_enable();
}

void __alloc_tag_sub_node(union codetag_ref *ref, size_t bytes, int nid)
{
	int here;

	preempt_disable();
	here = numa_node_id();
	if (unlikely(nid != here))
		alloc_tag_node_fix(__alloc_tag_ref_tag(ref), -(s64)bytes, -1, nid, here);
	alloc_tag_sub(ref, bytes);
	preempt_enable();
}

void __pgalloc_tag_add_node(struct page *page, struct alloc_tag *tag,
			    unsigned int nr)
{
	int nid = page_to_nid(page), here;

	preempt_disable();
	__pgalloc_tag_add(page, page_to_pfn(page), tag, nr);
	here = numa_node_id();
	if (unlikely(nid != here))
		alloc_tag_node_fix(__pgalloc_tag_get(page), (s64)nr << PAGE_SHIFT, 1,
				   nid, here);
	preempt_enable();
}

void __pgalloc_tag_sub_node(struct page *page, unsigned int nr)
{
	int nid = page_to_nid(page), here;

	preempt_disable();
	here = numa_node_id();
	if (unlikely(nid != here))
		alloc_tag_node_fix(__pgalloc_tag_get(page), -((s64)nr << PAGE_SHIFT),
				   -1, nid, here);
	__pgalloc_tag_sub(page, page_to_pfn(page), nr);
	preempt_enable();
}

void __pgalloc_tag_sub_pages_node(struct page *page, struct alloc_tag *tag,
				  unsigned int nr)
{
	int nid = page_to_nid(page), here;

	preempt_disable();
	__pgalloc_tag_sub_pages(tag, nr);
	here = numa_node_id();
	if (unlikely(nid != here))
		alloc_tag_node_fix(tag, -((s64)nr << PAGE_SHIFT), 0, nid, here);
	preempt_enable();
}

/* The pieces of a split each count a call, on this CPU. */
void __pgalloc_tag_split_node(struct folio *folio, int old_order, int new_order)
{
	unsigned int pieces;
	int nid = folio_nid(folio), here;

	preempt_disable();
	pieces = __pgalloc_tag_split(folio, old_order, new_order);
	here = numa_node_id();
	if (pieces && nid != here)
		alloc_tag_node_fix(__pgalloc_tag_get(folio_page(folio, 0)), 0,
				   pieces, nid, here);
	preempt_enable();
}

/*
 * Migration swaps the two folios' tags: the charge of @old's allocation
 * moves to @new's node, and the charge @new was allocated with to @old's.
 * No per-CPU counter changes, so preemption does not matter.
 */
void __pgalloc_tag_swap_node(struct folio *new, struct folio *old)
{
	int from = folio_nid(old), to = folio_nid(new);
	s64 bytes = folio_size(old);

	if (!__pgalloc_tag_swap(new, old) || from == to)
		return;
	/* Now @new holds @old's tag and the other way round. */
	__alloc_tag_node_move(__pgalloc_tag_get(folio_page(new, 0)), from, to,
			      bytes, 1);
	__alloc_tag_node_move(__pgalloc_tag_get(folio_page(old, 0)), to, from,
			      bytes, 1);
}
