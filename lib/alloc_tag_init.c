// SPDX-License-Identifier: GPL-2.0
/*
 * Start-up of the allocation profiler, whose work is done in Rust
 * (rust/kernel/alloc_tag/): its boot parameters and its initcall are
 * registered here, and call into the core.
 */

#include <linux/alloc_tag.h>
#include <linux/build_bug.h>
#include <linux/codetag.h>
#include <linux/init.h>
#include <linux/mm.h>
#include <linux/pgalloc_tag.h>

early_param("sysctl.vm.mem_profiling", alloc_tag_early_param);
early_param("alloc_tag_page_bits", alloc_tag_page_bits_param);

/*
 * At subsys level: before rootfs_initcall, from which user-mode helpers run
 * and the first module can be requested, so that every module load finds
 * the registry set up (upstream's is at device level).  Slab, vmalloc,
 * per-CPU memory, workqueues, sysctl, procfs and debugfs are all up by then.
 */
static int __init alloc_tag_initcall(void)
{
	/* Facts the Rust core spells out. */
#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
	BUILD_BUG_ON(CODETAG_FLAG_CAPTURE != 2);
#endif
	/* The compressed index field ends where the LRU refs field starts. */
	BUILD_BUG_ON(ALLOC_TAG_PGFLAG_TOP != LRU_REFS_PGOFF);
	BUILD_BUG_ON(ALLOC_TAG_PGFLAG_FREE < 0);
	return alloc_tag_init();
}
subsys_initcall(alloc_tag_initcall);
