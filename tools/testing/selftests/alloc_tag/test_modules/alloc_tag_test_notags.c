// SPDX-License-Identifier: GPL-2.0
/*
 * A module with no allocation tags whose alloc_tags output section is not
 * empty: the section laid out before it ends 4 bytes past an 8-byte
 * boundary, and the module linker script's alignment of the tag section
 * becomes 4 bytes of padding in it (upstream's percpu_test.ko is such a
 * module: 31 bug table entries of 12 bytes, then alloc_tags).  It must
 * load and unload like any module.  Here the bug table has one entry (12
 * bytes with the test configs' DEBUG_BUGVERBOSE).  With the tag section
 * aligned as a whole by the linker script, there is no padding and the
 * section is empty; tools/testing/allocprof/test.sh checks that every module's tag
 * section holds only tags.
 */
#include <linux/module.h>
#include <linux/bug.h>

static int warn;
module_param(warn, int, 0444);

static int __init att_notags_init(void)
{
	WARN_ON(warn == 42);
	return 0;
}

static void __exit att_notags_exit(void)
{
}

module_init(att_notags_init);
module_exit(att_notags_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("alloc_tag selftest: a module without tags, its tag section padded");
