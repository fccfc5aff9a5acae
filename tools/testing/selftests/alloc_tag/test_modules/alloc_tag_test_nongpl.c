// SPDX-License-Identifier: GPL-2.0
/*
 * A module whose license is not GPL-compatible: it may only use symbols
 * exported to every module.  Its kmalloc() calls, through alloc_hooks(),
 * must need nothing more, as with profiling compiled out; the selftest
 * nongpl_module loads it and checks its allocations are counted.
 * (Loading it taints the kernel, which turns lockdep off.)
 */

#include <linux/module.h>
#include <linux/slab.h>

#define ATN_NR_OBJS	3
#define ATN_OBJ_SIZE	256

static void *atn_objs[ATN_NR_OBJS];

static int __init atn_init(void)
{
	int i;

	for (i = 0; i < ATN_NR_OBJS; i++) {
		atn_objs[i] = kmalloc(ATN_OBJ_SIZE, GFP_KERNEL);
		if (!atn_objs[i])
			goto fail;
	}
	return 0;

fail:
	while (i--)
		kfree(atn_objs[i]);
	return -ENOMEM;
}

static void __exit atn_exit(void)
{
	int i;

	for (i = 0; i < ATN_NR_OBJS; i++)
		kfree(atn_objs[i]);
}

module_init(atn_init);
module_exit(atn_exit);
MODULE_DESCRIPTION("Allocates under a license that is not GPL-compatible (selftest)");
MODULE_LICENSE("Proprietary");
