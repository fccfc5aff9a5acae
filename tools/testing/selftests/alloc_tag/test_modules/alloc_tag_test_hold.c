// SPDX-License-Identifier: GPL-2.0
/*
 * A module that allocates at load and hands its objects to alloc_tag_test
 * (att_adopt()), which frees them on "release", after this module is gone.
 * The selftests watch its rows outlive it, then its tag area go.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/alloc_tag.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>

#define ATH_NR_OBJS	3
#define ATH_OBJ_SIZE	512
#define ATH_BIG_ORDER	4

#include "alloc_tag_test.h"

static bool arm;
module_param(arm, bool, 0444);
MODULE_PARM_DESC(arm, "Arm context capture on the kmalloc site before allocating");

static unsigned int big;
module_param(big, uint, 0444);
MODULE_PARM_DESC(big, "Order-4 blocks to allocate at a site of their own (and hand over)");

/* @nr order-4 blocks, handed over as the rest. */
static int ath_big(unsigned int nr)
{
	while (nr--) {
		void *p = (void *)__get_free_pages(GFP_KERNEL, ATH_BIG_ORDER);
		int ret;

		if (!p)
			return -ENOMEM;
		ret = att_adopt(p, ATH_BIG_ORDER);
		if (ret) {
			free_pages((unsigned long)p, ATH_BIG_ORDER);
			return ret;
		}
	}
	return 0;
}

/* The objects' site, a function of its own so that capture can name it. */
static noinline void *ath_obj(void)
{
	return kmalloc(ATH_OBJ_SIZE, GFP_KERNEL);
}

static int __init ath_init(void)
{
	void *page;
	int i, ret;

	if (arm) {
#ifdef CONFIG_MEM_ALLOC_PROFILING_CAPTURE
		ret = alloc_tag_capture_command("arm function:ath_obj module:" KBUILD_MODNAME);
#else
		ret = -ENODEV;
#endif
		if (ret)
			return ret;
	}
	for (i = 0; i < ATH_NR_OBJS; i++) {
		void *p = ath_obj();

		if (!p)
			return -ENOMEM;
		ret = att_adopt(p, -1);
		if (ret) {
			kfree(p);
			return ret;
		}
	}
	page = (void *)__get_free_pages(GFP_KERNEL, 1);
	if (!page)
		return -ENOMEM;
	ret = att_adopt(page, 1);
	if (ret) {
		free_pages((unsigned long)page, 1);
		return ret;
	}
	return ath_big(big);
}

static void __exit ath_exit(void)
{
	/* alloc_tag_test holds and frees what this module allocated. */
}

module_init(ath_init);
module_exit(ath_exit);
MODULE_DESCRIPTION("Hands its allocations to alloc_tag_test to outlive it (selftest)");
MODULE_LICENSE("GPL");
