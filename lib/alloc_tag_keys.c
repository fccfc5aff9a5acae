// SPDX-License-Identifier: GPL-2.0
/*
 * The static keys the allocation profiling hooks test; the Rust core
 * (rust/kernel/alloc_tag/) flips them: /proc/sys/vm/mem_profiling switches
 * the first, and switching it on switches the free side's on for good.
 *
 * mem_alloc_profiling_key is exported to modules of any license, so that a
 * module may call the inline mem_alloc_profiling_enabled().  (A definition
 * in rust/helpers/ or in Rust would be exported GPL-only.)
 */

#include <linux/alloc_tag.h>
#include <linux/export.h>
#include <linux/jump_label.h>
#include <linux/pgalloc_tag.h>

/* What DECLARE_STATIC_KEY_MAYBE() in alloc_tag.h declares. */
#ifdef CONFIG_MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT
DEFINE_STATIC_KEY_TRUE(mem_alloc_profiling_key);
DEFINE_STATIC_KEY_TRUE(mem_alloc_profiling_free_key);
#else
DEFINE_STATIC_KEY_FALSE(mem_alloc_profiling_key);
DEFINE_STATIC_KEY_FALSE(mem_alloc_profiling_free_key);
#endif
EXPORT_SYMBOL(mem_alloc_profiling_key);
/* The free side's key is tested only by hooks in mm/: not exported. */

#ifdef CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT
/* Only the page allocator's hooks test it. */
DEFINE_STATIC_KEY_FALSE(mem_alloc_profiling_compressed_key);
#endif
