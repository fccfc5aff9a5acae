// SPDX-License-Identifier: GPL-2.0

//! Tag references: where an allocated object remembers the tag it was
//! charged to, and the C entry points that charge and uncharge through them.
//!
//! A reference (`union codetag_ref`) lives in the object's metadata: a slab
//! object's extension slot, a percpu chunk's extension slot, or the page's
//! `page_ext`. It is NULL when the object is not counted, points at the tag's
//! code tag while it is, and in debug builds may hold `CODETAG_EMPTY` for
//! objects deliberately left uncounted (allocated before the metadata
//! existed).
//!
//! These are allocator hot paths: no locks, no allocation, bounded work.

use super::tag::AllocTag;
use crate::{bindings, types::Opaque};
use core::ptr::null_mut;

/// Bit 1 of a reference: it holds the address of a context capture record
/// (`capture.rs`), not a code tag. Records and code tags are 8-byte aligned;
/// bit 0 is `CODETAG_EMPTY`'s.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
pub(crate) const REF_RECORD: usize = bindings::ALLOC_TAG_REF_RECORD as usize;

/// Whether a reference's value is a capture record's address.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
#[inline(always)]
fn is_record(ct: *mut bindings::codetag) -> bool {
    ct as usize & REF_RECORD != 0
}

/// Without capture no reference holds a record.
#[cfg(not(CONFIG_MEM_ALLOC_PROFILING_CAPTURE))]
#[inline(always)]
fn is_record(_ct: *mut bindings::codetag) -> bool {
    false
}

/// One `union codetag_ref`.
///
/// # Invariants
///
/// The wrapped reference is valid memory owned by an allocated object, and
/// the allocator serialises the object's allocation and free, so the
/// reference is not written concurrently. A non-NULL, non-empty value points
/// at the code tag of an [`AllocTag`], or has `REF_RECORD` set and points
/// at a capture record (then only capture reads or writes it: callers test
/// [`TagRef::holds_record`] before [`TagRef::tag`] or [`TagRef::uncharge`]).
#[repr(transparent)]
pub(super) struct TagRef(Opaque<bindings::codetag_ref>);

impl TagRef {
    /// Borrows a reference.
    ///
    /// # Safety
    ///
    /// `ptr` must satisfy the type invariants for `'a`.
    #[inline(always)]
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::codetag_ref) -> &'a TagRef {
        // SAFETY: transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// Borrows a reference, `None` for NULL.
    ///
    /// # Safety
    ///
    /// `ptr` is NULL or as for [`TagRef::from_raw`].
    #[inline(always)]
    pub(super) unsafe fn from_nullable<'a>(ptr: *mut bindings::codetag_ref) -> Option<&'a TagRef> {
        // SAFETY: transparent wrapper; validity of a non-NULL `ptr` is the
        // caller's promise.
        unsafe { ptr.cast::<TagRef>().as_ref() }
    }

    #[inline(always)]
    fn get(&self) -> *mut bindings::codetag {
        // SAFETY: valid and not written concurrently (invariant).
        unsafe { (*self.0.get()).ct }
    }

    #[inline(always)]
    fn set(&self, ct: *mut bindings::codetag) {
        // SAFETY: valid and not written concurrently (invariant).
        unsafe { (*self.0.get()).ct = ct };
    }

    /// Whether the reference holds a capture record rather than a tag.
    #[inline(always)]
    pub(super) fn holds_record(&self) -> bool {
        is_record(self.get())
    }

    /// The tag this reference holds, if it holds one (not a record).
    #[inline(always)]
    pub(super) fn tag(&self) -> Option<&'static AllocTag> {
        let ct = self.get();
        if ct.is_null() || debug::is_empty(ct) {
            return None;
        }
        // SAFETY: a non-NULL, non-empty value is an `AllocTag`'s code tag
        // (invariant), and tags outlive the references to them.
        Some(unsafe { AllocTag::from_codetag(ct) })
    }

    /// Charges `bytes` and one call to `tag` and records it; an allocation
    /// that reached its hook without a tag (a missing `alloc_hooks()`) is
    /// only reported, in debug builds.
    #[inline(always)]
    pub(super) fn charge_or_warn(&self, tag: Option<&AllocTag>, bytes: usize) {
        match tag {
            Some(tag) => self.charge(tag, bytes),
            None => debug::warn_missing_tag(),
        }
    }

    /// Charges `bytes` and one call to `tag` and records it.
    #[inline(always)]
    pub(super) fn charge(&self, tag: &AllocTag, bytes: usize) {
        debug::check_add(self.get());
        self.set(tag.codetag());
        tag.charge(bytes);
    }

    /// Uncharges `bytes` and one call from the recorded tag and clears it.
    #[inline(always)]
    pub(super) fn uncharge(&self, bytes: usize) {
        let ct = self.get();
        if ct.is_null() {
            debug::warn_free_without_ref();
            return;
        }
        self.set(null_mut());
        if debug::is_empty(ct) {
            return;
        }
        // SAFETY: non-NULL, non-empty: an `AllocTag`'s code tag (invariant).
        unsafe { AllocTag::from_codetag(ct) }.uncharge(bytes);
    }

    /// The raw value, for moving a reference as it is (migration) or reading
    /// the record it holds.
    #[cfg(any(
        CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT,
        CONFIG_MEM_ALLOC_PROFILING_CAPTURE
    ))]
    #[inline(always)]
    pub(super) fn raw(&self) -> *mut bindings::codetag {
        self.get()
    }

    /// Stores a raw value taken from another reference with [`TagRef::raw`],
    /// or (capture) a record's address or the code tag that replaces it.
    #[cfg(any(
        CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT,
        CONFIG_MEM_ALLOC_PROFILING_CAPTURE
    ))]
    #[inline(always)]
    pub(super) fn set_raw(&self, ct: *mut bindings::codetag) {
        self.set(ct);
    }
}

/// What only page tags in `page_ext` do with a reference.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
impl TagRef {
    /// Records `tag` for one more piece of a split allocation (one more call).
    #[inline(always)]
    pub(super) fn charge_piece(&self, tag: &AllocTag) {
        debug::check_add(self.get());
        self.set(tag.codetag());
        tag.add_call();
    }

    /// Marks the object as deliberately not counted.
    #[inline(always)]
    pub(super) fn set_empty(&self) {
        self.set(debug::EMPTY);
    }
}

/// `MEM_ALLOC_PROFILING_DEBUG` checks, each reported once.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_DEBUG)]
pub(super) mod debug {
    use crate::{bindings, c_str, str::CStr};
    use core::sync::atomic::{AtomicBool, Ordering};

    /// `CODETAG_EMPTY`: an object deliberately left uncounted.
    pub(super) const EMPTY: *mut bindings::codetag = 1 as *mut bindings::codetag;

    static NOT_CLEARED: AtomicBool = AtomicBool::new(false);
    static NO_TAG: AtomicBool = AtomicBool::new(false);
    static NOT_SET: AtomicBool = AtomicBool::new(false);

    fn warn_once(flag: &AtomicBool, msg: &'static CStr) {
        if !flag.swap(true, Ordering::Relaxed) {
            // SAFETY: `msg` is a NUL-terminated static string.
            unsafe { bindings::alloc_tag_warn(msg.as_char_ptr()) };
        }
    }

    /// Whether `ct` is [`EMPTY`].
    #[inline(always)]
    pub(super) fn is_empty(ct: *mut bindings::codetag) -> bool {
        ct == EMPTY
    }

    /// Setting a reference that still holds a tag loses a charge.
    #[inline(always)]
    pub(in crate::alloc_tag) fn check_add(old: *mut bindings::codetag) {
        if !old.is_null() && !is_empty(old) {
            warn_overwritten();
        }
    }

    /// A tag is set over one not cleared (a reference, or a page's tag
    /// index in compressed mode).
    #[cold]
    pub(in crate::alloc_tag) fn warn_overwritten() {
        warn_once(
            &NOT_CLEARED,
            c_str!("alloc_tag was not cleared before being set"),
        );
    }

    /// An allocation reached a hook with no tag: a missing `alloc_hooks()`.
    #[cold]
    pub(in crate::alloc_tag) fn warn_missing_tag() {
        warn_once(&NO_TAG, c_str!("current->alloc_tag not set"));
    }

    /// A free found no reference: the allocation was never charged.
    #[cold]
    pub(in crate::alloc_tag) fn warn_free_without_ref() {
        warn_once(&NOT_SET, c_str!("alloc_tag was not set"));
    }
}

/// Without `MEM_ALLOC_PROFILING_DEBUG`: no empty marker, no checks.
#[cfg(not(CONFIG_MEM_ALLOC_PROFILING_DEBUG))]
pub(super) mod debug {
    use crate::bindings;

    /// An object left uncounted holds NULL, as one never counted.
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
    pub(super) const EMPTY: *mut bindings::codetag = core::ptr::null_mut();

    #[inline(always)]
    pub(super) fn is_empty(_ct: *mut bindings::codetag) -> bool {
        false
    }

    #[inline(always)]
    pub(in crate::alloc_tag) fn check_add(_old: *mut bindings::codetag) {}

    #[inline(always)]
    pub(in crate::alloc_tag) fn warn_overwritten() {}

    #[inline(always)]
    pub(in crate::alloc_tag) fn warn_missing_tag() {}

    #[inline(always)]
    pub(in crate::alloc_tag) fn warn_free_without_ref() {}
}
