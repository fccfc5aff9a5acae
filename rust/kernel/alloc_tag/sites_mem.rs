// SPDX-License-Identifier: GPL-2.0

//! The memory of the Rust call-site tags: zeroed allocations that are given
//! back on failure or kept for good, and the pointers that publish them.
//!
//! C helpers: [`rust/helpers/alloc_tag.c`](srctree/rust/helpers/alloc_tag.c)
//! (`alloc_tag_sites_alloc_block()`, a call site of its own, so that the
//! sites' memory has a row of its own),
//! [`lib/alloc_tag_rust_sites.c`](srctree/lib/alloc_tag_rust_sites.c)
//! (the work item that adds blocks).

use crate::{bindings, init::Zeroable};
use core::mem::{align_of, size_of};
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};

/// A zeroed `T` from `alloc_tag_sites_alloc_block()` (`kvzalloc()`), freed
/// when dropped unless kept for good with [`ZeroedBox::leak`].
///
/// # Invariants
///
/// `self.0` points to a valid `T` in an allocation of `kvzalloc()` that this
/// box alone owns.
pub(super) struct ZeroedBox<T: Zeroable>(NonNull<T>);

impl<T: Zeroable> ZeroedBox<T> {
    /// `kvzalloc()` aligns its memory to at least 8 bytes (the size of an
    /// `unsigned long long`, `ARCH_KMALLOC_MINALIGN`'s least value).
    const ALIGNED: () = assert!(align_of::<T>() <= 8);

    /// A zeroed `T`, allocated with `GFP_KERNEL`; `None` without memory.
    /// Process context; may sleep.
    pub(super) fn new() -> Option<Self> {
        #[allow(clippy::let_unit_value)]
        let () = Self::ALIGNED;
        // SAFETY: the helper only calls `kvzalloc(size, GFP_KERNEL)`, which
        // this function's callers may (they may sleep).
        let ptr = unsafe { bindings::alloc_tag_sites_alloc_block(size_of::<T>()) };
        // INVARIANT: a zeroed allocation of `size_of::<T>()` bytes, aligned
        // for `T` (`ALIGNED`), is a valid `T` (`T: Zeroable`), and nothing
        // else has the pointer.
        NonNull::new(ptr.cast::<T>()).map(ZeroedBox)
    }

    /// Keeps the `T` for good: it is never freed.
    pub(super) fn leak(self) -> &'static T {
        let ptr = self.0;
        core::mem::forget(self);
        // SAFETY: a valid `T` (invariant), never freed now that its only
        // owner is forgotten, and no mutable reference to it is left (they
        // borrowed the box, which is gone).
        unsafe { ptr.as_ref() }
    }
}

impl<T: Zeroable> Deref for ZeroedBox<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a valid `T` the box owns (invariant), borrowed with it.
        unsafe { self.0.as_ref() }
    }
}

impl<T: Zeroable> DerefMut for ZeroedBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: a valid `T` the box alone owns (invariant), borrowed
        // mutably with it.
        unsafe { self.0.as_mut() }
    }
}

impl<T: Zeroable> Drop for ZeroedBox<T> {
    fn drop(&mut self) {
        // SAFETY: from `kvzalloc()` and owned by this box alone (invariant),
        // which is going: nothing uses the memory after this.
        unsafe { bindings::kvfree(self.0.as_ptr().cast()) };
    }
}

/// A pointer to a `T` kept for good, NULL until one is published; stored
/// with release and loaded with acquire, so that a reader who finds the `T`
/// sees it as it was published.
///
/// All zeroes is NULL.
///
/// # Invariants
///
/// `self.0` is NULL or comes from a `&'static T`, stored with release.
#[repr(transparent)]
pub(super) struct Published<T>(AtomicPtr<T>);

impl<T: Sync> Published<T> {
    /// Nothing published.
    pub(super) const fn null() -> Self {
        // INVARIANT: NULL.
        Published(AtomicPtr::new(core::ptr::null_mut()))
    }

    /// The `T` published, if any.
    #[inline(always)]
    pub(super) fn load(&self) -> Option<&'static T> {
        // SAFETY: NULL or from a `&'static T`, stored with release
        // (invariant), whose writes this acquire load sees; `T: Sync`, so
        // sharing it with this thread is sound.
        unsafe { self.0.load(Ordering::Acquire).as_ref() }
    }

    /// Publishes `value`, or nothing for `None`.
    #[inline(always)]
    pub(super) fn store(&self, value: Option<&'static T>) {
        let ptr = match value {
            Some(v) => core::ptr::from_ref(v).cast_mut(),
            None => core::ptr::null_mut(),
        };
        // INVARIANT: NULL or from a `&'static T`, with release.
        self.0.store(ptr, Ordering::Release);
    }
}

/// Schedules the work item that adds a block of site tags
/// (`alloc_tag_rust_sites_grow()`). From any context but NMI.
pub(super) fn schedule_grow() {
    // SAFETY: the helper only calls `schedule_work()` on its static work
    // item, which any context but NMI may.
    unsafe { bindings::alloc_tag_sites_schedule_grow() };
}
