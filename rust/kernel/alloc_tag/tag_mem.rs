// SPDX-License-Identifier: GPL-2.0

//! The memory of tags that come and go: a module's tag area, and the
//! per-CPU counters (with per-node attribution, the correction pairs) of a
//! run of tags that goes live. vmlinux's tags and their counters are
//! static; the registry decides when these are made and freed.

use super::node;
use super::tag::AllocTag;
use crate::{
    bindings,
    error::{code::ENOMEM, Result},
    ffi::c_void,
};
use core::{mem::size_of, ptr::NonNull};

/// A module's tag area: zeroed, page-aligned memory for `len` tags from
/// the module data range, where the loader copies the module's
/// `alloc_tags` section and relocates the module against it. Freed when
/// dropped.
///
/// # Invariants
///
/// `start` is an `execmem_alloc()` allocation of `len` `alloc_tag`s that
/// this value owns.
pub(super) struct TagArea {
    start: NonNull<bindings::alloc_tag>,
    len: usize,
}

// SAFETY: the area is plain memory owned by the value; its tags are
// `AllocTag`s, shared between CPUs by design.
unsafe impl Send for TagArea {}

// SAFETY: as for `Send`: a shared area only gives out its address.
unsafe impl Sync for TagArea {}

impl TagArea {
    /// A zeroed area for `len` tags (may sleep); `ENOMEM` without memory.
    pub(super) fn new(len: usize) -> Result<TagArea> {
        let size = len
            .checked_mul(size_of::<bindings::alloc_tag>())
            .ok_or(ENOMEM)?;
        // SAFETY: `execmem_alloc()` needs a context that may sleep, which
        // module loading is; it returns NULL or `size` bytes, page aligned.
        let area =
            unsafe { bindings::execmem_alloc(bindings::execmem_type_EXECMEM_MODULE_DATA, size) };
        let start = NonNull::new(area.cast::<bindings::alloc_tag>()).ok_or(ENOMEM)?;
        // SAFETY: `start` has `size` bytes, not handed out yet.
        unsafe { core::ptr::write_bytes(start.as_ptr().cast::<u8>(), 0, size) };
        // INVARIANT: allocated above, owned by nobody else.
        Ok(TagArea { start, len })
    }

    /// The first tag.
    pub(super) fn start(&self) -> NonNull<bindings::alloc_tag> {
        self.start
    }

    /// The number of tags.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The area's address, for the loader.
    pub(super) fn as_ptr(&self) -> NonNull<c_void> {
        self.start.cast()
    }
}

impl Drop for TagArea {
    fn drop(&mut self) {
        // SAFETY: from `execmem_alloc()` and owned (invariant); freed once.
        unsafe { bindings::execmem_free(self.start.as_ptr().cast()) };
    }
}

/// Counters are allocated for this many tags at a time; each chunk is one
/// per-CPU allocation, freed through its first tag's counters.
const COUNTER_CHUNK: usize = 256;

/// Gives every tag of `tags` zeroed per-CPU counters (and, with per-node
/// attribution on, correction pairs); `ENOMEM`, and none, without memory.
/// May sleep.
///
/// # Safety
///
/// `tags` are valid and reachable by nobody else yet (not live), and have
/// no counters.
pub(super) unsafe fn give_counters(tags: &[AllocTag]) -> Result {
    let mut i = 0;
    while i < tags.len() {
        let n = COUNTER_CHUNK.min(tags.len() - i);
        // SAFETY: the helper's only requirement is a context that may
        // sleep, which every caller is (module load, a work item, the
        // initcall). The area is zeroed, and charged to the helper's own
        // row like any other allocation.
        let chunk = unsafe {
            bindings::alloc_tag_alloc_counters(n * size_of::<bindings::alloc_tag_counters>())
        }
        .cast::<bindings::alloc_tag_counters>();
        if chunk.is_null() {
            // SAFETY: the first `i` tags got counters above; nobody else
            // reaches them (caller), so no free can be in flight on them.
            unsafe { take_counters(&tags[..i], &FreesPast(())) };
            return Err(ENOMEM);
        }
        // Per-node correction pairs, with per-node attribution on.
        let pairs = match node::alloc_pairs(n) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: the chunk was just allocated and never used; the
                // first `i` tags got counters above.
                unsafe {
                    bindings::free_percpu(chunk.cast());
                    take_counters(&tags[..i], &FreesPast(()));
                }
                return Err(e);
            }
        };
        for (j, tag) in tags[i..i + n].iter().enumerate() {
            // SAFETY: the tag is valid and unreachable by others (caller),
            // so nothing reads the field being written; a per-CPU pointer to
            // element `j` of the chunk is the chunk's plus `j`.
            unsafe { (*tag.as_raw()).counters = chunk.wrapping_add(j) };
            if let Some(p) = pairs {
                // SAFETY: as above; the pairs are for `n` tags.
                unsafe { node::set_pairs(tag.as_raw(), p, j) };
            }
        }
        i += n;
    }
    Ok(())
}

/// Frees the counters [`give_counters`] gave `tags`, once the frees that
/// were in flight on them are `_past`.
///
/// # Safety
///
/// `tags` got their counters from one [`give_counters`] call, and nothing
/// can charge or uncharge them any more but the frees `_past` waited for.
pub(super) unsafe fn take_counters(tags: &[AllocTag], _past: &FreesPast) {
    for tag in tags.iter().step_by(COUNTER_CHUNK) {
        let tag = tag.as_raw();
        // SAFETY: `tag` is the first of a chunk, whose counters and pairs
        // nothing uses any more (caller).
        unsafe {
            bindings::free_percpu((*tag).counters.cast());
            (*tag).counters = core::ptr::null_mut();
            node::free_pairs(tag);
        }
    }
}

/// Proof that every free that was in flight when it was made is over
/// ([`wait_for_frees_in_flight`]).
pub(super) struct FreesPast(());

/// Waits until every CPU that might still be between the two counter
/// updates of a free (even if preempted there) is past them.
pub(super) fn wait_for_frees_in_flight() -> FreesPast {
    // SAFETY: the grace-period wait only needs a context that may sleep
    // with no lock held that a freeing task could wait for: callers hold
    // none of the core's locks here (module load and unload, open()).
    unsafe { bindings::alloc_tag_synchronize_rcu_tasks() };
    FreesPast(())
}
