// SPDX-License-Identifier: GPL-2.0

//! The static keys C defines for the profiler
//! ([`include/linux/alloc_tag.h`](srctree/include/linux/alloc_tag.h),
//! [`include/linux/pgalloc_tag.h`](srctree/include/linux/pgalloc_tag.h)):
//! the C hooks test them, Rust reads and switches them.

use crate::bindings;

/// A static key defined in C.
///
/// # Invariants
///
/// `0` points at a `struct static_key` in a C static, which lives for ever.
#[derive(Clone, Copy)]
pub(super) struct StaticKey(*mut bindings::static_key);

impl StaticKey {
    /// `mem_alloc_profiling_key`, which the hooks test
    /// (`mem_alloc_profiling_enabled()`): counting is on.
    #[inline]
    pub(super) fn profiling() -> Self {
        // SAFETY: only the address of the key inside the C static is taken
        // (no reference).
        // INVARIANT: a C static.
        StaticKey(unsafe { core::ptr::addr_of_mut!(bindings::mem_alloc_profiling_key.key) })
    }

    /// `mem_alloc_profiling_free_key`, which the hooks that uncharge or move
    /// a charge test (`mem_alloc_profiling_free_enabled()`).
    #[inline]
    pub(super) fn free() -> Self {
        // SAFETY: as in `profiling()`.
        // INVARIANT: a C static.
        StaticKey(unsafe { core::ptr::addr_of_mut!(bindings::mem_alloc_profiling_free_key.key) })
    }

    /// `mem_alloc_profiling_compressed_key`, which the page hooks test to
    /// choose the store (`pgalloc_tag_compressed()`). A compressed-only
    /// build has none: its hooks always use compressed mode.
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
    #[inline]
    pub(super) fn compressed() -> Self {
        // SAFETY: as in `profiling()`.
        // INVARIANT: a C static.
        StaticKey(unsafe {
            core::ptr::addr_of_mut!(bindings::mem_alloc_profiling_compressed_key.key)
        })
    }

    /// `mem_alloc_profiling_node_key`: per-node attribution counts
    /// (`alloc_tag_node=1`).
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_NUMA)]
    #[inline]
    pub(super) fn node() -> Self {
        // SAFETY: as in `profiling()`.
        // INVARIANT: a C static.
        StaticKey(unsafe { core::ptr::addr_of_mut!(bindings::mem_alloc_profiling_node_key.key) })
    }

    /// Whether the key is on.
    #[inline]
    pub(super) fn is_enabled(self) -> bool {
        // SAFETY: a valid static key (invariant).
        unsafe { bindings::static_key_is_enabled(self.0) }
    }

    /// Switches the key to `on` unless it is already. Takes the CPU hotplug
    /// and jump-label locks: process context, or early boot before other
    /// CPUs run.
    pub(super) fn set(self, on: bool) {
        if self.is_enabled() != on {
            // SAFETY: a valid static key (invariant); the helper takes the
            // locks it needs.
            unsafe { bindings::static_key_set(self.0, on) };
        }
    }
}
