// SPDX-License-Identifier: GPL-2.0
/*
 * A boot-time test of module loading before the allocation profiler's
 * initcall: with test_alloc_tag_early.modprobe=NAME on the command line,
 * request module NAME at rootfs_initcall, as soon as user-mode helpers
 * run, the way a crypto template or a self-test may from an early
 * initcall, and log the result.  The alloc_tag selftest "early_module"
 * checks that the module loaded and that its tags count.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/kmod.h>
#include <linux/moduleparam.h>
#include <linux/printk.h>

static char *early_modprobe __initdata;
module_param_named(modprobe, early_modprobe, charp, 0);
MODULE_PARM_DESC(modprobe, "Module to request at rootfs_initcall");

static int __init test_alloc_tag_early_init(void)
{
	int ret;

	if (!early_modprobe || !*early_modprobe)
		return 0;
	ret = request_module("%s", early_modprobe);
	pr_info("request_module(%s) at rootfs_initcall: %d\n", early_modprobe, ret);
	return 0;
}
rootfs_initcall(test_alloc_tag_early_init);
