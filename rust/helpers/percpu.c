// SPDX-License-Identifier: GPL-2.0

#include <linux/percpu.h>

/* this_cpu_add() on a u64: one instruction on x86_64, no preemption toggle. */
void rust_helper_this_cpu_add_u64(u64 __percpu *ptr, u64 val)
{
	this_cpu_add(*ptr, val);
}
