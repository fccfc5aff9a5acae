// SPDX-License-Identifier: GPL-2.0
/*
 * allocprof_fleet_leak: a memory leak at a known rate, for make test-fleet.
 *
 * From a delayed work, kmalloc()s buffers of @size bytes, one every
 * @period_ms milliseconds, counted from the module's load so that a
 * late work catches up and the rate stays exact over the run.  The buffers
 * are kept on a list, never freed while loaded, and all freed at unload,
 * so /proc/allocinfo shows one site growing by @size bytes per @period_ms
 * ms under [allocprof_fleet_leak], and draining to zero at rmmod.
 *
 * The default size, 16 KiB, is above the largest kmalloc cache
 * (KMALLOC_MAX_CACHE_SIZE, two pages): kmalloc() then takes whole pages
 * from the page allocator, charged to this call site alone, where a
 * slab-sized leak would also grow the slab's own page site
 * (alloc_slab_page) by the same amount.
 */
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

static unsigned int size = 16384;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "bytes per leaked buffer (default 16384)");

static unsigned int period_ms = 250;
module_param(period_ms, uint, 0444);
MODULE_PARM_DESC(period_ms, "one buffer every period_ms milliseconds (default 250)");

static unsigned long leaked;
module_param(leaked, ulong, 0444);
MODULE_PARM_DESC(leaked, "buffers leaked so far (read only)");

/* Catch up at most this many buffers per run of the work. */
#define LEAK_BATCH_MAX 64

struct leak_buf {
	struct list_head node;
};

static LIST_HEAD(leak_list);
static DEFINE_MUTEX(leak_lock);
static unsigned long leak_start;
static struct delayed_work leak_work;

/* The call site that leaks: its row in /proc/allocinfo is func:fleet_leak_alloc. */
static struct leak_buf *fleet_leak_alloc(void)
{
	return kmalloc(size, GFP_KERNEL);
}

static void leak_fn(struct work_struct *work)
{
	unsigned long due, n = 0;
	struct leak_buf *buf;

	due = jiffies_to_msecs(jiffies - leak_start) / period_ms;
	mutex_lock(&leak_lock);
	while (leaked < due && n < LEAK_BATCH_MAX) {
		buf = fleet_leak_alloc();
		if (!buf)
			break;
		list_add_tail(&buf->node, &leak_list);
		leaked++;
		n++;
	}
	mutex_unlock(&leak_lock);
	schedule_delayed_work(&leak_work, msecs_to_jiffies(period_ms));
}

static int __init leak_init(void)
{
	if (size < sizeof(struct leak_buf) || !period_ms)
		return -EINVAL;
	leak_start = jiffies;
	INIT_DELAYED_WORK(&leak_work, leak_fn);
	schedule_delayed_work(&leak_work, 0);
	pr_info("allocprof_fleet_leak: %u bytes every %u ms\n", size, period_ms);
	return 0;
}

static void __exit leak_exit(void)
{
	struct leak_buf *buf, *tmp;

	cancel_delayed_work_sync(&leak_work);
	mutex_lock(&leak_lock);
	list_for_each_entry_safe(buf, tmp, &leak_list, node) {
		list_del(&buf->node);
		kfree(buf);
	}
	mutex_unlock(&leak_lock);
	pr_info("allocprof_fleet_leak: freed %lu buffers\n", leaked);
}

module_init(leak_init);
module_exit(leak_exit);
MODULE_DESCRIPTION("A memory leak at a known rate, for the allocprof fleet test");
MODULE_LICENSE("GPL");
