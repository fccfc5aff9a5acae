// SPDX-License-Identifier: GPL-2.0
/*
 * A module that allocates at load and does not free at unload, so the
 * selftests can watch what the profiler does with a module whose allocations
 * outlive it.  The objects are leaked on purpose.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/module.h>
#include <linux/slab.h>

#define ATL_NR_OBJS	3
#define ATL_OBJ_SIZE	512

static void *atl_objs[ATL_NR_OBJS];
static struct page *atl_page;

static int __init atl_init(void)
{
	int i;

	for (i = 0; i < ATL_NR_OBJS; i++) {
		atl_objs[i] = kmalloc(ATL_OBJ_SIZE, GFP_KERNEL);
		if (!atl_objs[i])
			goto fail;
	}
	atl_page = alloc_page(GFP_KERNEL);
	if (!atl_page)
		goto fail;
	return 0;

fail:
	while (i--)
		kfree(atl_objs[i]);
	return -ENOMEM;
}

static void __exit atl_exit(void)
{
	/* Leave atl_objs[] and atl_page allocated on purpose. */
}

module_init(atl_init);
module_exit(atl_exit);
MODULE_DESCRIPTION("Leaves allocations alive across its own unload (selftest)");
MODULE_LICENSE("GPL");
