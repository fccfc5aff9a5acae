// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the allocation profiler's Rust call-site tags
 * (rust/kernel/alloc_tag/rust_sites.rs): the work item that adds blocks of
 * site tags when few are free, and what names a call site (the stack and
 * kallsyms).
 */

#include <linux/alloc_tag.h>
#include <linux/kallsyms.h>
#include <linux/stacktrace.h>
#include <linux/workqueue.h>

static void alloc_tag_sites_grow_fn(struct work_struct *work)
{
	alloc_tag_rust_sites_grow();
}

static DECLARE_WORK(alloc_tag_sites_grow_work, alloc_tag_sites_grow_fn);

/* Adds site blocks from process context; callable from any context. */
void alloc_tag_sites_schedule_grow(void)
{
	schedule_work(&alloc_tag_sites_grow_work);
}

/*
 * The return addresses on the stack, innermost first (this function's own
 * frame skipped), if the unwinder is reliable enough to name the caller (not
 * the guessing one); 0 otherwise.
 */
unsigned int alloc_tag_stack(unsigned long *store, unsigned int size)
{
#if defined(CONFIG_STACKTRACE) && !defined(CONFIG_UNWINDER_GUESS)
	return stack_trace_save(store, size, 1);
#else
	return 0;
#endif
}

/* The symbol holding @addr, in @buf of KSYM_NAME_LEN bytes, or NULL. */
const char *alloc_tag_symbol(unsigned long addr, char *buf)
{
	unsigned long size, offset;
	char *modname;

	return kallsyms_lookup(addr, &size, &offset, &modname, buf);
}
