/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page allocation tagging: static-key-guarded shims into the Rust core
 * (rust/kernel/alloc_tag/page.rs), which keeps each page's tag reference.
 */
#ifndef _LINUX_PGALLOC_TAG_H
#define _LINUX_PGALLOC_TAG_H

#include <linux/alloc_tag.h>

#ifdef CONFIG_MEM_ALLOC_PROFILING

#include <linux/minmax.h>
#include <linux/page_ext.h>
#include <linux/page-flags-layout.h>

#ifdef CONFIG_PAGE_EXTENSION
/*
 * Defined in Rust: the page_ext client holding one union codetag_ref per
 * page; it asks for no space unless page tags are kept in page_ext.
 */
extern struct page_ext_operations page_alloc_tagging_ops;
#endif

/*
 * Compressed page tags: a tag index in the page->flags bits this config
 * leaves unused.  From the top of page->flags down sit the section, node,
 * zone, last_cpupid, KASAN tag, LRU generation and LRU refs fields (each as
 * wide as this config makes it, 0 when absent or stored elsewhere); the page
 * flags proper take the lowest NR_PAGEFLAGS bits.  The index takes the free
 * bits just below the LRU refs field:
 *
 *   free = BITS_PER_LONG - (sections + nodes + zones + last_cpupid +
 *                           kasan_tag + lru_gen + lru_refs) - NR_PAGEFLAGS
 *
 * ALLOC_TAG_PGFLAG_TOP equals LRU_REFS_PGOFF (checked at build time in
 * rust/helpers/alloc_tag.c); it is spelt out here because LRU_REFS_WIDTH
 * uses min(), which is not a constant expression.
 */
#define ALLOC_TAG_PGFLAG_TOP_USED						\
	(SECTIONS_WIDTH + NODES_WIDTH + ZONES_WIDTH + LAST_CPUPID_WIDTH +	\
	 KASAN_TAG_WIDTH + LRU_GEN_WIDTH)
#define ALLOC_TAG_PGFLAG_REFS							\
	MIN(__LRU_REFS_WIDTH, BITS_PER_LONG - NR_PAGEFLAGS - ALLOC_TAG_PGFLAG_TOP_USED)
#define ALLOC_TAG_PGFLAG_TOP							\
	(BITS_PER_LONG - ALLOC_TAG_PGFLAG_TOP_USED - ALLOC_TAG_PGFLAG_REFS)
#define ALLOC_TAG_PGFLAG_FREE	(ALLOC_TAG_PGFLAG_TOP - NR_PAGEFLAGS)

/* Compressed mode entries (the page's tag index in page->flags). */
void __pgalloc_tag_add_compressed(struct page *page, struct alloc_tag *tag,
				  unsigned int nr);
void __pgalloc_tag_sub_compressed(struct page *page, unsigned int nr);
struct alloc_tag *__pgalloc_tag_get_compressed(struct page *page);
/* No page_ext reference: store not decided yet, or a page without page_ext. */
void __pgalloc_tag_add_no_ref(struct page *page, struct alloc_tag *tag,
			      unsigned int nr);
void __pgalloc_tag_sub_no_ref(struct page *page, unsigned int nr);
struct alloc_tag *__pgalloc_tag_get(struct page *page);
void __pgalloc_tag_sub_pages(struct alloc_tag *tag, unsigned int nr);
void __clear_page_tag_ref(struct page *page);

#ifdef CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT
/*
 * Defined by the Rust core, enabled once in boot if page tags are indexes in
 * page->flags, never changed after.  The store is decided before any page_ext
 * exists, and until then the page_ext path finds no reference and asks the
 * core (__pgalloc_tag_add_no_ref()), which decides.
 */
DECLARE_STATIC_KEY_FALSE(mem_alloc_profiling_compressed_key);

static __always_inline bool pgalloc_tag_compressed(void)
{
	return static_branch_unlikely(&mem_alloc_profiling_compressed_key);
}

/* The tag reference in the page_ext of @page (at @pfn), which the caller owns. */
static __always_inline union codetag_ref *pgalloc_tag_ref(struct page *page,
							  unsigned long pfn)
{
	struct page_ext *ext = __page_ext_get_owned(page, pfn);

	return ext ? page_ext_data(ext, &page_alloc_tagging_ops) : NULL;
}
#else
/* A compressed-only build: page tags are always indexes in page->flags. */
static __always_inline bool pgalloc_tag_compressed(void)
{
	return true;
}

static __always_inline union codetag_ref *pgalloc_tag_ref(struct page *page,
							  unsigned long pfn)
{
	return NULL;
}
#endif

/*
 * The page_ext path calls the core through the same static calls as the slab
 * hooks (alloc_tag_add/alloc_tag_sub): context capture records pages too.
 */
static __always_inline void __pgalloc_tag_add(struct page *page,
					      unsigned long pfn,
					      struct alloc_tag *tag,
					      unsigned int nr)
{
	union codetag_ref *ref;

	if (pgalloc_tag_compressed()) {
		__pgalloc_tag_add_compressed(page, tag, nr);
		return;
	}
	ref = pgalloc_tag_ref(page, pfn);
	if (likely(ref))
		alloc_tag_add(ref, tag, (size_t)nr << PAGE_SHIFT);
	else
		__pgalloc_tag_add_no_ref(page, tag, nr);
}

static __always_inline void __pgalloc_tag_sub(struct page *page,
					      unsigned long pfn,
					      unsigned int nr)
{
	union codetag_ref *ref;

	if (pgalloc_tag_compressed()) {
		__pgalloc_tag_sub_compressed(page, nr);
		return;
	}
	ref = pgalloc_tag_ref(page, pfn);
	if (likely(ref))
		alloc_tag_sub(ref, (size_t)nr << PAGE_SHIFT);
	else
		__pgalloc_tag_sub_no_ref(page, nr);
}

/* Flag bits a page_ext reference may carry besides a code tag's address. */
#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
#define PGALLOC_TAG_REF_FLAGS	ALLOC_TAG_REF_RECORD
#else
#define PGALLOC_TAG_REF_FLAGS	0UL
#endif

/*
 * The tag @page (at @pfn, owned by the caller) is charged to, or NULL.  No
 * reference (the store is not decided yet or the page has no page_ext), or
 * one holding a capture record: the core's general lookup answers.
 */
static __always_inline struct alloc_tag *__pgalloc_tag_get_pfn(struct page *page,
							       unsigned long pfn)
{
	union codetag_ref *ref;
	struct codetag *ct;

	if (pgalloc_tag_compressed())
		return __pgalloc_tag_get_compressed(page);
	ref = pgalloc_tag_ref(page, pfn);
	if (unlikely(!ref))
		return __pgalloc_tag_get(page);
	ct = ref->ct;
	if (unlikely((unsigned long)ct & PGALLOC_TAG_REF_FLAGS))
		return __pgalloc_tag_get(page);
	if (!ct || is_codetag_empty(ref))
		return NULL;
	return ct_to_alloc_tag(ct);
}

/*
 * The tag of @pg, which the caller holds a reference to; the caller tests
 * mem_alloc_profiling_free_enabled().  A macro for page_to_pfn(), as above.
 */
#define pgalloc_tag_get_owned(pg)					\
({									\
	struct page *__pt_page = (pg);					\
									\
	__pgalloc_tag_get_pfn(__pt_page, page_to_pfn(__pt_page));	\
})

/* Mark @page as intentionally not counted (memblock, hwpoison). */
static inline void clear_page_tag_ref(struct page *page)
{
	if (mem_alloc_profiling_free_enabled())
		__clear_page_tag_ref(page);
}

/*
 * Charge @nr pages at @pg to @task's current tag.  Macros, not inlines,
 * so that the arguments (current, 1 << order) are only computed behind the
 * key test: the compiler computed them before the patched no-op, and
 * post_alloc_hook() paid for them with profiling off.  They also compute
 * the pfn, as page_to_pfn() needs headers that linux/mm.h includes after
 * this one.
 */
#define pgalloc_tag_add(pg, task, nr)					\
do {									\
	if (mem_alloc_profiling_enabled()) {				\
		struct page *__pt_page = (pg);				\
									\
		__pgalloc_tag_add(__pt_page, page_to_pfn(__pt_page),	\
				  (task)->alloc_tag, nr);		\
	}								\
} while (0)

#define pgalloc_tag_sub(pg, nr)					\
do {									\
	if (mem_alloc_profiling_free_enabled()) {			\
		struct page *__pt_page = (pg);				\
									\
		__pgalloc_tag_sub(__pt_page, page_to_pfn(__pt_page), nr); \
	}								\
} while (0)

static inline struct alloc_tag *pgalloc_tag_get(struct page *page)
{
	return mem_alloc_profiling_free_enabled() ? __pgalloc_tag_get(page) : NULL;
}

/* Uncharge the bytes of @nr pages freed apart from their head page. */
static inline void pgalloc_tag_sub_pages(struct alloc_tag *tag, unsigned int nr)
{
	if (mem_alloc_profiling_free_enabled() && tag)
		__pgalloc_tag_sub_pages(tag, nr);
}

#else /* CONFIG_MEM_ALLOC_PROFILING */

static inline void clear_page_tag_ref(struct page *page) {}
static inline void pgalloc_tag_add(struct page *page, struct task_struct *task,
				   unsigned int nr) {}
static inline void pgalloc_tag_sub(struct page *page, unsigned int nr) {}
static inline struct alloc_tag *pgalloc_tag_get(struct page *page) { return NULL; }
static inline struct alloc_tag *__pgalloc_tag_get(struct page *page) { return NULL; }
static inline struct alloc_tag *pgalloc_tag_get_owned(struct page *page) { return NULL; }
static inline void pgalloc_tag_sub_pages(struct alloc_tag *tag, unsigned int nr) {}

#endif /* CONFIG_MEM_ALLOC_PROFILING */

#endif /* _LINUX_PGALLOC_TAG_H */
