// SPDX-License-Identifier: GPL-2.0

//! Context capture's C side as safe functions: the allocating stack and its
//! printing, the switch of the `alloc_tag_add`/`alloc_tag_sub` static calls,
//! the record pool's refill and the control file.
//!
//! C: [`lib/alloc_tag_capture.c`](srctree/lib/alloc_tag_capture.c)
//!
//! Every `bindings::` call of capture's record path and of its control file
//! is here, so [`super::record`] and [`super::capture`] stay safe code. The
//! record pool's chunks are allocated and freed by their owner,
//! [`super::record_pool`].

use crate::{
    bindings,
    seq_file::{SeqFile, SingleFile, SingleFileOps},
    str::CStr,
};
use core::mem::MaybeUninit;

/// The most return addresses a captured stack keeps.
pub(super) const FRAMES: usize = bindings::ALLOC_TAG_CAPTURE_FRAMES as usize;

/// Saves the allocating stack into `entries`, leaving out the `skip`
/// innermost frames, and returns it (at most [`FRAMES`] addresses).
///
/// The C helper's frame is among the `skip`; this function has none of its
/// own (it is always inlined), so its caller's frame is the next.
#[inline(always)]
pub(super) fn save_stack(entries: &mut MaybeUninit<[usize; FRAMES]>, skip: u32) -> &[usize] {
    let mut n = 0u32;
    // SAFETY: `entries` is valid for writes of `FRAMES` addresses and `n`
    // for one; the helper stores the first `n` (at most `FRAMES`) addresses
    // and `n`, so the slice covers only initialised entries, borrowed from
    // `entries` for as long as the result lives.
    unsafe {
        bindings::alloc_tag_capture_stack(entries.as_mut_ptr().cast(), &mut n, skip);
        core::slice::from_raw_parts(entries.as_ptr().cast::<usize>(), (n as usize).min(FRAMES))
    }
}

/// Prints `stack`'s return addresses to `seq`, one per line, symbolised.
pub(super) fn show_stack(seq: &SeqFile, stack: &[usize]) {
    // SAFETY: `seq` is a seq_file being shown (a `SeqFile` is only made by
    // its `show`); `stack` holds `stack.len()` addresses, at most `FRAMES`.
    unsafe {
        bindings::alloc_tag_capture_show_stack(
            seq.as_raw(),
            stack.as_ptr().cast(),
            stack.len().min(FRAMES) as u32,
        )
    };
}

/// Points the slab, percpu and page hooks' `alloc_tag_add`/`alloc_tag_sub`
/// static calls at the capturing entry points (`capturing`) or back at the
/// plain ones. May sleep; callers serialise it (capture's control mutex).
pub(super) fn set_capturing_calls(capturing: bool) {
    // SAFETY: no preconditions but process context, which sleeping callers
    // have; both targets are always valid entry points.
    unsafe { bindings::alloc_tag_capture_calls(capturing) };
}

/// Asks for the record pool's refill: queues the hard `irq_work` that
/// queues the refill work. Takes no lock; any context but NMI.
#[inline]
pub(super) fn queue_refill() {
    // SAFETY: no preconditions; `irq_work_queue()` of a static irq_work.
    unsafe { bindings::alloc_tag_capture_queue_refill() };
}

/// Creates `name` in debugfs' root with `fops`. Its result is not checked
/// (the debugfs convention): without the file its feature is not used.
pub(super) fn create_debugfs_file<T: SingleFile>(
    name: &'static CStr,
    mode: u16,
    fops: &'static SingleFileOps<T>,
) {
    // SAFETY: a static name and static operations, which debugfs may keep
    // forever; no parent (the root) and no private data. debugfs is up at
    // subsys initcalls, where the profiler's init runs.
    unsafe {
        bindings::debugfs_create_file(
            name.as_char_ptr(),
            mode,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            fops.as_ptr(),
        )
    };
}
