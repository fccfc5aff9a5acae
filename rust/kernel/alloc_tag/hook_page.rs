// SPDX-License-Identifier: GPL-2.0

//! Pages and folios as the page allocator's hooks see them: owned by the
//! hook's caller (being allocated, freed, split or migrated) for as long as
//! the hook runs. The C entry points make them from the pointers C passes;
//! everything above takes them by value, without `unsafe`.

use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};

/// A page a page hook's caller owns for `'a`.
///
/// # Invariants
///
/// `ptr` is a valid `struct page` that the hook's caller allocates, frees,
/// splits or migrates for `'a`: it is not freed, and its tag is not written
/// by anyone else, meanwhile.
#[derive(Clone, Copy)]
pub(super) struct HookPage<'a> {
    ptr: NonNull<bindings::page>,
    _owned: PhantomData<&'a bindings::page>,
}

impl<'a> HookPage<'a> {
    /// # Safety
    ///
    /// `ptr` is a page that satisfies the type invariants for `'a`.
    #[inline(always)]
    pub(super) unsafe fn from_raw(ptr: *mut bindings::page) -> Self {
        // SAFETY: a valid page is not NULL (caller).
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        // INVARIANT: the caller's promise.
        HookPage {
            ptr,
            _owned: PhantomData,
        }
    }

    /// As [`HookPage::from_raw`], for hooks that C may call with NULL.
    ///
    /// # Safety
    ///
    /// `ptr` is NULL or a page that satisfies the type invariants for `'a`.
    #[inline(always)]
    pub(super) unsafe fn from_nullable(ptr: *mut bindings::page) -> Option<Self> {
        // INVARIANT: the caller's promise.
        NonNull::new(ptr).map(|ptr| HookPage {
            ptr,
            _owned: PhantomData,
        })
    }

    /// The page, for the C helpers that take it.
    #[inline(always)]
    pub(super) fn as_ptr(self) -> *mut bindings::page {
        self.ptr.as_ptr()
    }
}

/// The pages of a folio a page hook's caller owns for `'a`: `1 << order`
/// of them, or only the head page ([`HookFolio::head_only`], or an order
/// out of range).
///
/// # Invariants
///
/// `ptr` is a valid folio of at least `pages` pages, each of which the
/// hook's caller owns for `'a` as [`HookPage`] says.
pub(super) struct HookFolio<'a> {
    ptr: NonNull<bindings::folio>,
    pages: usize,
    _owned: PhantomData<&'a bindings::folio>,
}

impl<'a> HookFolio<'a> {
    /// # Safety
    ///
    /// `ptr` is a folio that satisfies the type invariants for `'a`, of
    /// order `order` if that is in `0..32`.
    #[inline(always)]
    pub(super) unsafe fn from_raw(ptr: *mut bindings::folio, order: i32) -> Self {
        // SAFETY: a valid folio is not NULL (caller).
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        let pages = if (0..32).contains(&order) {
            1usize << order
        } else {
            1
        };
        // INVARIANT: the caller's promise: a folio of `1 << order` pages, or
        // at least its head page.
        HookFolio {
            ptr,
            pages,
            _owned: PhantomData,
        }
    }

    /// The head page of a folio the caller owns, for a hook that reads no
    /// other page (migration's swap).
    ///
    /// # Safety
    ///
    /// `ptr` is a folio that satisfies the type invariants for `'a`.
    #[inline(always)]
    pub(super) unsafe fn head_only(ptr: *mut bindings::folio) -> Self {
        // SAFETY: the caller's contract; no order: the head page alone.
        unsafe { Self::from_raw(ptr, -1) }
    }

    /// Page `i` of the folio, if it is one of its `pages` pages.
    #[inline(always)]
    pub(super) fn page(&self, i: usize) -> Option<HookPage<'a>> {
        if i >= self.pages {
            return None;
        }
        // SAFETY: `i` is within the folio (invariant, checked above).
        let page = unsafe { bindings::folio_page(self.ptr.as_ptr(), i as _) };
        // SAFETY: a page of an owned folio (invariant).
        Some(unsafe { HookPage::from_raw(page) })
    }

    /// The head page.
    #[inline(always)]
    pub(super) fn head(&self) -> HookPage<'a> {
        // SAFETY: every folio has its head page, owned with it (invariant).
        let page = unsafe { bindings::folio_page(self.ptr.as_ptr(), 0) };
        // SAFETY: as above.
        unsafe { HookPage::from_raw(page) }
    }
}
