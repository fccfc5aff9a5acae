// SPDX-License-Identifier: GPL-2.0

//! Page tags: each page's tag reference, and the C entry points of the page
//! allocator's hooks.
//!
//! The reference of a page lives in its `page_ext`, in the slot this core
//! registers as the `page_alloc_tagging_ops` client. A high-order allocation
//! is recorded on its head page and charged `PAGE_SIZE << order`. Splitting
//! gives every new piece the same tag and one call each (bytes unchanged);
//! migration swaps the old and the new folio's references, so that each later
//! free uncharges exactly what its allocation charged.

use super::{tag_ref::TagRef, AllocTag};
use crate::{bindings, page::PAGE_SIZE, types::Opaque};
use core::mem::size_of;

/// The `page_ext` client: one `union codetag_ref` per page.
#[repr(transparent)]
pub struct PageExtOps(Opaque<bindings::page_ext_operations>);

// SAFETY: written only by `page_ext` init (`offset`) before any page hook runs.
unsafe impl Sync for PageExtOps {}

/// Named as the C side expects it (`include/linux/pgalloc_tag.h`); `page_ext`
/// fills in `offset` during boot.
#[no_mangle]
pub static page_alloc_tagging_ops: PageExtOps =
    PageExtOps(Opaque::new(bindings::page_ext_operations {
        offset: 0,
        size: size_of::<bindings::codetag_ref>(),
        need: Some(need_page_alloc_tagging),
        init: None,
        need_shared_flags: false,
    }));

extern "C" fn need_page_alloc_tagging() -> bool {
    super::control::profiling_supported()
}

/// A page's reference, with its `page_ext` held.
///
/// # Invariants
///
/// `ext` is a `page_ext` returned by `page_ext_get()` and not yet put.
struct PageRef {
    ext: *mut bindings::page_ext,
}

impl PageRef {
    /// The reference of `page`, or `None` if the page has no `page_ext`
    /// (early pages, or profiling built in but `never`).
    #[inline(always)]
    fn get(page: *const bindings::page) -> Option<PageRef> {
        if page.is_null() {
            return None;
        }
        // SAFETY: `page` is a valid page (the C hooks' contract); the lookup
        // takes the RCU read lock that `page_ext_put()` drops.
        let ext = unsafe { bindings::page_ext_get(page) };
        if ext.is_null() {
            None
        } else {
            // INVARIANT: just got.
            Some(PageRef { ext })
        }
    }

    #[inline(always)]
    fn tag_ref(&self) -> &TagRef {
        // SAFETY: `offset` was set at boot before any page was allocated and
        // never changes after.
        let offset = unsafe { (*page_alloc_tagging_ops.0.get()).offset };
        // SAFETY: our slot lies `offset` bytes into the held `page_ext`, and
        // the page allocator serialises the hooks of one page.
        unsafe { TagRef::from_raw(self.ext.cast::<u8>().add(offset).cast()) }
    }
}

impl Drop for PageRef {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: got and not yet put (invariant).
        unsafe { bindings::page_ext_put(self.ext) };
    }
}

#[inline(always)]
fn pages_bytes(nr: u32) -> usize {
    PAGE_SIZE.wrapping_mul(nr as usize)
}

/// Charges `nr` pages from `page` to `tag`.
///
/// # Safety
///
/// `page` is the head of `nr` pages being allocated; `tag` is NULL or a tag.
#[no_mangle]
pub unsafe extern "C" fn __pgalloc_tag_add(
    page: *mut bindings::page,
    tag: *mut bindings::alloc_tag,
    nr: u32,
) {
    if let Some(r) = PageRef::get(page) {
        // SAFETY: the reference belongs to the page being allocated; `tag` is
        // NULL or a tag (caller).
        unsafe {
            super::tag_ref::alloc_tag_add(
                core::ptr::from_ref(r.tag_ref()).cast_mut().cast(),
                tag,
                pages_bytes(nr),
            )
        };
    }
}

/// Uncharges `nr` pages at `page`.
///
/// # Safety
///
/// `page` is the head of `nr` pages being freed.
#[no_mangle]
pub unsafe extern "C" fn __pgalloc_tag_sub(page: *mut bindings::page, nr: u32) {
    if let Some(r) = PageRef::get(page) {
        r.tag_ref().uncharge(pages_bytes(nr));
    }
}

/// The tag `page` is charged to, or NULL.
///
/// # Safety
///
/// `page` is a valid page.
#[no_mangle]
pub unsafe extern "C" fn __pgalloc_tag_get(page: *mut bindings::page) -> *mut bindings::alloc_tag {
    PageRef::get(page)
        .and_then(|r| r.tag_ref().tag())
        .map_or(core::ptr::null_mut(), AllocTag::as_raw)
}

/// Uncharges the bytes of `nr` pages freed apart from their head page.
///
/// # Safety
///
/// `tag` is a tag.
#[no_mangle]
pub unsafe extern "C" fn __pgalloc_tag_sub_pages(tag: *mut bindings::alloc_tag, nr: u32) {
    // SAFETY: `tag` is a tag (caller).
    unsafe { AllocTag::from_raw(tag) }.sub_bytes(pages_bytes(nr));
}

/// Marks `page` as deliberately not counted.
///
/// # Safety
///
/// `page` is a valid page that is not being allocated or freed concurrently.
#[no_mangle]
pub unsafe extern "C" fn __clear_page_tag_ref(page: *mut bindings::page) {
    if let Some(r) = PageRef::get(page) {
        r.tag_ref().set_empty();
    }
}

/// Gives every piece of a split allocation the head's tag, one call each.
///
/// # Safety
///
/// `folio` is an allocated folio of order `old_order` being split into pieces
/// of order `new_order`.
#[no_mangle]
pub unsafe extern "C" fn __pgalloc_tag_split(
    folio: *mut bindings::folio,
    old_order: i32,
    new_order: i32,
) {
    if !(0..32).contains(&new_order) || !(new_order..32).contains(&old_order) {
        return;
    }
    // SAFETY: `folio` is valid (caller), so is its head page.
    let head = unsafe { bindings::folio_page(folio, 0) };
    let Some(tag) = PageRef::get(head).and_then(|r| r.tag_ref().tag()) else {
        return;
    };
    let step = 1usize << new_order;
    for i in (step..(1usize << old_order)).step_by(step) {
        // SAFETY: `i` is inside the folio (caller), so this is one of its pages.
        let page = unsafe { bindings::folio_page(folio, i as _) };
        if let Some(r) = PageRef::get(page) {
            r.tag_ref().charge_piece(tag);
        }
    }
}

/// Migration: `new` takes over `old`'s data. Swap their references, so the
/// charge of `old`'s allocation moves to `new` and the charge `new` was
/// allocated with is uncharged when `old` is freed.
///
/// # Safety
///
/// `new` and `old` are valid folios of the same size, both locked for
/// migration.
#[no_mangle]
pub unsafe extern "C" fn __pgalloc_tag_swap(new: *mut bindings::folio, old: *mut bindings::folio) {
    // SAFETY: both folios are valid (caller), so are their head pages.
    let (new_head, old_head) =
        unsafe { (bindings::folio_page(new, 0), bindings::folio_page(old, 0)) };
    let (Some(rn), Some(ro)) = (PageRef::get(new_head), PageRef::get(old_head)) else {
        return;
    };
    let (a, b) = (rn.tag_ref().raw(), ro.tag_ref().raw());
    rn.tag_ref().set_raw(b);
    ro.tag_ref().set_raw(a);
}
