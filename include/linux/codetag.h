/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Code tags: one static descriptor per tagged source location, placed in an
 * ELF section of its own (alloc_tags for allocation sites).  The registry that
 * finds and walks them, in vmlinux and in modules, is Rust:
 * rust/kernel/alloc_tag/registry.rs.
 */
#ifndef _LINUX_CODETAG_H
#define _LINUX_CODETAG_H

#include <linux/bits.h>
#include <linux/types.h>

struct module;

/*
 * Layout shared with the Rust registry.  Every field but @flags is fixed at
 * build time.  @flags: bits 0-7 are flags (CODETAG_FLAG_*), set atomically
 * by the core; bits 8-31 hold a module tag's compressed page-tag index,
 * assigned at module load (0: none).
 */
struct codetag {
	unsigned int flags;
	unsigned int lineno;
	const char *modname;	/* NULL when built in */
	const char *function;
	const char *filename;
} __aligned(8);

/* The counts of this tag miss allocations whose metadata could not be kept. */
#define CODETAG_FLAG_INACCURATE		BIT(0)
#define CODETAG_FLAG_MASK		0xffu

/* Where an allocated object records the tag it was charged to. */
union codetag_ref {
	struct codetag *ct;
};

#ifdef MODULE
#define CT_MODULE_NAME KBUILD_MODNAME
#else
#define CT_MODULE_NAME NULL
#endif

#define CODE_TAG_INIT {					\
	.modname	= CT_MODULE_NAME,		\
	.function	= __func__,			\
	.filename	= __FILE__,			\
	.lineno		= __LINE__,			\
	.flags		= 0,				\
}

#if defined(CONFIG_CODE_TAGGING) && defined(CONFIG_MODULES)
/* Rust: register a module's tags after it is loaded. */
void codetag_load_module(struct module *mod);
/* Rust: drop a module's tags; false if allocations from it are still alive. */
bool codetag_unload_module(struct module *mod);
#else
static inline void codetag_load_module(struct module *mod) {}
static inline bool codetag_unload_module(struct module *mod) { return true; }
#endif

#endif /* _LINUX_CODETAG_H */
