/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page allocation tagging: static-key-guarded shims into the Rust core
 * (rust/kernel/alloc_tag/page.rs), which keeps each page's tag reference.
 */
#ifndef _LINUX_PGALLOC_TAG_H
#define _LINUX_PGALLOC_TAG_H

#include <linux/alloc_tag.h>

#ifdef CONFIG_MEM_ALLOC_PROFILING

#include <linux/page_ext.h>

/* Defined in Rust: the page_ext client holding one union codetag_ref per page. */
extern struct page_ext_operations page_alloc_tagging_ops;

void __pgalloc_tag_add(struct page *page, struct alloc_tag *tag, unsigned int nr);
void __pgalloc_tag_sub(struct page *page, unsigned int nr);
struct alloc_tag *__pgalloc_tag_get(struct page *page);
void __pgalloc_tag_sub_pages(struct alloc_tag *tag, unsigned int nr);
void __clear_page_tag_ref(struct page *page);

/* Mark @page as intentionally not counted (memblock, hwpoison). */
static inline void clear_page_tag_ref(struct page *page)
{
	if (mem_alloc_profiling_enabled())
		__clear_page_tag_ref(page);
}

/* Charge @nr pages at @page to @task's current tag. */
static inline void pgalloc_tag_add(struct page *page, struct task_struct *task,
				   unsigned int nr)
{
	if (mem_alloc_profiling_enabled())
		__pgalloc_tag_add(page, task->alloc_tag, nr);
}

static inline void pgalloc_tag_sub(struct page *page, unsigned int nr)
{
	if (mem_alloc_profiling_enabled())
		__pgalloc_tag_sub(page, nr);
}

static inline struct alloc_tag *pgalloc_tag_get(struct page *page)
{
	return mem_alloc_profiling_enabled() ? __pgalloc_tag_get(page) : NULL;
}

/* Uncharge the bytes of @nr pages freed apart from their head page. */
static inline void pgalloc_tag_sub_pages(struct alloc_tag *tag, unsigned int nr)
{
	if (mem_alloc_profiling_enabled() && tag)
		__pgalloc_tag_sub_pages(tag, nr);
}

#else /* CONFIG_MEM_ALLOC_PROFILING */

static inline void clear_page_tag_ref(struct page *page) {}
static inline void pgalloc_tag_add(struct page *page, struct task_struct *task,
				   unsigned int nr) {}
static inline void pgalloc_tag_sub(struct page *page, unsigned int nr) {}
static inline struct alloc_tag *pgalloc_tag_get(struct page *page) { return NULL; }
static inline void pgalloc_tag_sub_pages(struct alloc_tag *tag, unsigned int nr) {}

#endif /* CONFIG_MEM_ALLOC_PROFILING */

#endif /* _LINUX_PGALLOC_TAG_H */
