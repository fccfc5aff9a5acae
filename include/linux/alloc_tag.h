/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory allocation profiling: the allocation tag of every call site and the
 * macros that put it in current->alloc_tag around an allocation.
 *
 * C keeps the layouts, the call-site macros and static-key tests; counting,
 * the tag registry, controls and reports are Rust (rust/kernel/alloc_tag/).
 */
#ifndef _LINUX_ALLOC_TAG_H
#define _LINUX_ALLOC_TAG_H

#include <linux/bug.h>
#include <linux/codetag.h>
#include <linux/container_of.h>
#include <linux/preempt.h>
#include <asm/percpu.h>
#include <linux/cpumask.h>
#include <linux/smp.h>
#include <linux/static_key.h>
#include <linux/irqflags.h>
#include <linux/static_call_types.h>

/* Per-CPU counters of one tag; a CPU's bytes may go negative, the sum not. */
struct alloc_tag_counters {
	u64 bytes;
	u64 calls;	/* live allocations, not a running total */
};

/* One per call site, in the alloc_tags section. */
struct alloc_tag {
	struct codetag			ct;
	struct alloc_tag_counters __percpu	*counters;
} __aligned(8);

#ifdef CONFIG_MEM_ALLOC_PROFILING_DEBUG
/* Marks a reference as "intentionally not counted" (e.g. early pages). */
#define CODETAG_EMPTY	((void *)1)

static inline bool is_codetag_empty(union codetag_ref *ref)
{
	return ref->ct == CODETAG_EMPTY;
}

static inline void set_codetag_empty(union codetag_ref *ref)
{
	if (ref)
		ref->ct = CODETAG_EMPTY;
}
#else
static inline bool is_codetag_empty(union codetag_ref *ref) { return false; }

static inline void set_codetag_empty(union codetag_ref *ref)
{
	if (ref)
		ref->ct = NULL;
}
#endif

#ifdef CONFIG_MEM_ALLOC_PROFILING

#ifdef ARCH_NEEDS_WEAK_PER_CPU
#error "memory allocation profiling needs function-local per-CPU variables"
#endif

struct codetag_bytes {
	struct codetag *ct;
	s64 bytes;
};

static inline struct alloc_tag *ct_to_alloc_tag(struct codetag *ct)
{
	return container_of(ct, struct alloc_tag, ct);
}

#ifdef MODULE
/*
 * A module's tags get their counters when the module loads, and live in a
 * tag area of their own outside the module (codetag_alloc_module_section()),
 * so that they can outlive the module while its allocations do.
 */
#define DEFINE_ALLOC_TAG(_alloc_tag)						\
	static struct alloc_tag _alloc_tag __used __aligned(8)			\
	__section(CODETAG_SECTION_ALLOC_TAGS) = {				\
		.ct = CODE_TAG_INIT,						\
		.counters = NULL };
#else
#define DEFINE_ALLOC_TAG(_alloc_tag)						\
	static DEFINE_PER_CPU(struct alloc_tag_counters, _alloc_tag_cntr);	\
	static struct alloc_tag _alloc_tag __used __aligned(8)			\
	__section(CODETAG_SECTION_ALLOC_TAGS) = {				\
		.ct = CODE_TAG_INIT,						\
		.counters = &_alloc_tag_cntr };
#endif

/* Defined by the Rust core; on unless sysctl.vm.mem_profiling says not. */
DECLARE_STATIC_KEY_MAYBE(CONFIG_MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT,
			mem_alloc_profiling_key);

/*
 * Unlikely whatever the default: with profiling off every hook is one
 * patched no-op, and with it on the hooks' code is a jump away.  (A likely
 * branch, as upstream tests it when on by default, costs a jump, and with
 * clang's IBT an endbr64 and another jump, per hook when booted off.)
 */
static __always_inline bool mem_alloc_profiling_enabled(void)
{
	return static_branch_unlikely(&mem_alloc_profiling_key);
}

/*
 * The free side's key: on from the first time profiling is on until reboot,
 * so that what was charged while on is uncharged when it is freed, whether
 * profiling is still on or not.  The allocation hooks test
 * mem_alloc_profiling_enabled(); the hooks that uncharge, or that move a
 * charge from one page to another (split, migration), test this one.
 * Switching profiling off thus stops charging, while the rows stay exact;
 * only a boot with profiling off has free hooks that cost nothing.
 */
DECLARE_STATIC_KEY_MAYBE(CONFIG_MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT,
			mem_alloc_profiling_free_key);

static __always_inline bool mem_alloc_profiling_free_enabled(void)
{
	return static_branch_unlikely(&mem_alloc_profiling_free_key);
}

/*
 * Rust entry points.  Callers test mem_alloc_profiling_enabled() first, so
 * with profiling off no call is made.
 */
/* Charge @bytes and one call to @tag and record @tag in @ref. */
void __alloc_tag_add(union codetag_ref *ref, struct alloc_tag *tag, size_t bytes);
/* Uncharge @bytes and one call from the tag recorded in @ref, and clear it. */
void __alloc_tag_sub(union codetag_ref *ref, size_t bytes);

#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
/*
 * Context capture (rust/kernel/alloc_tag/capture.rs): while some call site
 * is armed, the slab, percpu and page_ext page hooks' calls go to the
 * capturing versions, which give each new allocation of an armed site a
 * record and recognise records on free.  Static calls: with nothing armed
 * the call sites call __alloc_tag_add()/__alloc_tag_sub() directly, as
 * without capture.  A reference holding a record has ALLOC_TAG_REF_RECORD
 * set; compressed page tags (indexes) never do.
 */
#define ALLOC_TAG_REF_RECORD	2UL
void __alloc_tag_add_capture(union codetag_ref *ref, struct alloc_tag *tag,
			     size_t bytes);
void __alloc_tag_sub_capture(union codetag_ref *ref, size_t bytes);
DECLARE_STATIC_CALL(alloc_tag_add, __alloc_tag_add);
DECLARE_STATIC_CALL(alloc_tag_sub, __alloc_tag_sub);
/* A command of /sys/kernel/debug/allocinfo_capture from kernel code. */
int alloc_tag_capture_command(const char *cmd);

/*
 * What a capture record keeps of the allocating context.  The stack is kept
 * in the record, not in the stack depot: STACKDEPOT cannot be selected by an
 * option that depends on RUST (the x86 unwinder choice makes that a Kconfig
 * dependency loop).
 */
#define ALLOC_TAG_CAPTURE_FRAMES	16
struct alloc_tag_capture_ctx {
	u64 time_ns;		/* ktime_get_boottime_ns() */
	s32 pid;
	u32 nr_entries;		/* 0: no stack */
	char comm[16];		/* TASK_COMM_LEN */
	unsigned long entries[ALLOC_TAG_CAPTURE_FRAMES];
};

static __always_inline void alloc_tag_add(union codetag_ref *ref,
					  struct alloc_tag *tag, size_t bytes)
{
	static_call(alloc_tag_add)(ref, tag, bytes);
}

static __always_inline void alloc_tag_sub(union codetag_ref *ref, size_t bytes)
{
	static_call(alloc_tag_sub)(ref, bytes);
}
#else
static __always_inline void alloc_tag_add(union codetag_ref *ref,
					  struct alloc_tag *tag, size_t bytes)
{
	__alloc_tag_add(ref, tag, bytes);
}

static __always_inline void alloc_tag_sub(union codetag_ref *ref, size_t bytes)
{
	__alloc_tag_sub(ref, bytes);
}
#endif
/* The counters of @tag summed over all possible CPUs. */
struct alloc_tag_counters alloc_tag_read(struct alloc_tag *tag);
/* Record that an allocation of @tag (may be NULL) could not be counted. */
void alloc_tag_set_inaccurate(struct alloc_tag *tag);
/*
 * The @count tags with the most bytes, largest first; never sleeps.  If it
 * returns more than 0, the tags (strings and counters included) stay valid
 * until alloc_tag_top_users_end(), which the caller must then call.
 */
size_t alloc_tag_top_users_begin(struct codetag_bytes *tags, size_t count);
void alloc_tag_top_users_end(void);
/* True after sysctl.vm.mem_profiling=never. */
bool mem_alloc_profiling_permanently_disabled(void);
/* mm/percpu.c: extension vectors for the boot-time percpu chunks. */
void pcpu_alloc_tag_init_boot_chunks(void);

#define alloc_tag_record(p)	((p) = current->alloc_tag)

#else /* CONFIG_MEM_ALLOC_PROFILING */

#define DEFINE_ALLOC_TAG(_alloc_tag)
static inline bool mem_alloc_profiling_enabled(void) { return false; }
static inline bool mem_alloc_profiling_free_enabled(void) { return false; }
static inline bool mem_alloc_profiling_permanently_disabled(void) { return true; }
static inline void alloc_tag_add(union codetag_ref *ref, struct alloc_tag *tag,
				 size_t bytes) {}
static inline void alloc_tag_sub(union codetag_ref *ref, size_t bytes) {}
static inline void __alloc_tag_add(union codetag_ref *ref, struct alloc_tag *tag,
				   size_t bytes) {}
static inline void __alloc_tag_sub(union codetag_ref *ref, size_t bytes) {}
static inline void alloc_tag_set_inaccurate(struct alloc_tag *tag) {}
#define alloc_tag_record(p)	do {} while (0)

#endif /* CONFIG_MEM_ALLOC_PROFILING */

/*
 * With profiling off, current->alloc_tag is neither read nor written: the
 * allocation is made on the key's off branch.  An allocation made while the
 * key flips may then reach a hook with no tag; it goes uncounted (its free
 * finds no reference), as the sysctl's documentation says.
 */
#define alloc_hooks_tag(_tag, _do_alloc)				\
({									\
	typeof(_do_alloc) _res;						\
	if (mem_alloc_profiling_enabled()) {				\
		struct alloc_tag * __maybe_unused _old;			\
		_old = alloc_tag_save(_tag);				\
		_res = _do_alloc;					\
		alloc_tag_restore(_tag, _old);				\
	} else {							\
		_res = _do_alloc;					\
	}								\
	_res;								\
})

#define alloc_hooks(_do_alloc)						\
({									\
	DEFINE_ALLOC_TAG(_alloc_tag);					\
	alloc_hooks_tag(&_alloc_tag, _do_alloc);			\
})

#endif /* _LINUX_ALLOC_TAG_H */
