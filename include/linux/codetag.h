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
#include <linux/string.h>
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
/* Context capture is armed for this call site. */
#define CODETAG_FLAG_CAPTURE		BIT(1)
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

/* The section of allocation tags, in vmlinux and in modules. */
#define CODETAG_SECTION_ALLOC_TAGS	"alloc_tags"

#if defined(CONFIG_CODE_TAGGING) && defined(CONFIG_MODULES)
/*
 * Module loader hooks, all in Rust (rust/kernel/alloc_tag/registry.rs).
 *
 * A module's tag section is not placed in the module's own memory but in a
 * tag area that codetag_alloc_module_section() returns, so that the tags and
 * their counters can stay after the module is gone, until the last
 * allocation charged to them is freed.
 */
static inline bool codetag_module_section(const char *name, unsigned long size)
{
	return size && !strcmp(name, CODETAG_SECTION_ALLOC_TAGS);
}

/* The tag area for @mod's tag section of @size bytes; NULL if none. */
void *codetag_alloc_module_section(struct module *mod, unsigned long size,
				   unsigned long align);
/* Drops whatever the hooks still hold for @mod (failed loads). */
void codetag_free_module_sections(struct module *mod);
/* Gives @mod's tags their counters; -ENOMEM fails the load. */
int codetag_load_module(struct module *mod);
/*
 * Detaches @mod's tags at unload; they stay reported until their
 * allocations are freed.  Always true: the module's memory can go.
 */
bool codetag_unload_module(struct module *mod);
#else
static inline bool codetag_module_section(const char *name, unsigned long size)
{
	return false;
}

static inline void *codetag_alloc_module_section(struct module *mod,
						 unsigned long size,
						 unsigned long align)
{
	return NULL;
}

static inline void codetag_free_module_sections(struct module *mod) {}
static inline int codetag_load_module(struct module *mod) { return 0; }
static inline bool codetag_unload_module(struct module *mod) { return true; }
#endif

#endif /* _LINUX_CODETAG_H */
