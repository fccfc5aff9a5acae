// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the allocation profiler's context capture
 * (rust/kernel/alloc_tag/capture.rs): the static calls the slab and percpu
 * hooks go through, the work that refills the record pool, and the
 * allocating stack and its printing.
 */

#include <linux/alloc_tag.h>
#include <linux/irq_work.h>
#include <linux/seq_file.h>
#include <linux/stacktrace.h>
#include <linux/static_call.h>
#include <linux/workqueue.h>

DEFINE_STATIC_CALL(alloc_tag_add, __alloc_tag_add);
DEFINE_STATIC_CALL(alloc_tag_sub, __alloc_tag_sub);

/* Points the slab and percpu hooks' calls at the capturing versions or back. */
void alloc_tag_capture_calls(bool on)
{
	if (on) {
		static_call_update(alloc_tag_add, __alloc_tag_add_capture);
		static_call_update(alloc_tag_sub, __alloc_tag_sub_capture);
	} else {
		static_call_update(alloc_tag_add, __alloc_tag_add);
		static_call_update(alloc_tag_sub, __alloc_tag_sub);
	}
}

static void alloc_tag_capture_refill_fn(struct work_struct *work)
{
	alloc_tag_capture_refill();
}

static DECLARE_WORK(alloc_tag_capture_refill_work, alloc_tag_capture_refill_fn);

static void alloc_tag_capture_refill_irq_fn(struct irq_work *work)
{
	schedule_work(&alloc_tag_capture_refill_work);
}

/*
 * Hard irq_work: queuing it takes no lock, so the record path can ask for
 * a refill from inside any allocator hook (with the allocator's or the
 * scheduler's locks held); the work is queued from the interrupt.
 */
static struct irq_work alloc_tag_capture_refill_irq =
	IRQ_WORK_INIT_HARD(alloc_tag_capture_refill_irq_fn);

void alloc_tag_capture_queue_refill(void)
{
	irq_work_queue(&alloc_tag_capture_refill_irq);
}

/*
 * The allocating stack without the @skip innermost frames, this function's
 * among them: its first *@nr of ALLOC_TAG_CAPTURE_FRAMES @entries.  The
 * store after the call keeps it from being a tail call, which would take
 * this function's frame away and with it one frame too many.
 */
void alloc_tag_capture_stack(unsigned long *entries, unsigned int *nr,
			     unsigned int skip)
{
	*nr = stack_trace_save(entries, ALLOC_TAG_CAPTURE_FRAMES, skip);
}

/* Prints @n return addresses, one per line, symbolised. */
void alloc_tag_capture_show_stack(struct seq_file *m,
				  const unsigned long *entries, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		seq_printf(m, "    %pS\n", (void *)entries[i]);
}
