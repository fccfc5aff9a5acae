// SPDX-License-Identifier: GPL-2.0

//! Page tags: each page's tag, and the C entry points of the page
//! allocator's hooks.
//!
//! A page's tag is kept either as a reference in its `page_ext`, in the slot
//! this core registers as the `page_alloc_tagging_ops` client, or as a tag
//! index in spare `page->flags` bits ([`super::compressed`]). The store is
//! chosen once, before the first page is charged, and the hooks below only
//! see [`PageTag`]. A high-order allocation is recorded on its head page and
//! charged `PAGE_SIZE << order`. Splitting gives every new piece the same tag
//! and one call each (bytes unchanged); migration swaps the old and the new
//! folio's tags when both carry one, so that each later free uncharges
//! exactly what its allocation charged.

use super::compressed::{self, PageIndex, Store};
use super::hook_page::{HookFolio, HookPage};
use super::AllocTag;
use crate::page::PAGE_SIZE;

#[cfg(CONFIG_PAGE_EXTENSION)]
mod ext_ops {
    use crate::{bindings, types::Opaque};
    use core::mem::size_of;

    /// The `page_ext` client: one `union codetag_ref` per page.
    #[repr(transparent)]
    pub(super) struct PageExtOps(pub(super) Opaque<bindings::page_ext_operations>);

    // SAFETY: written only by `page_ext` init (`offset`) before any page hook runs.
    unsafe impl Sync for PageExtOps {}

    /// Named as the C side expects it (`include/linux/pgalloc_tag.h`);
    /// `page_ext` fills in `offset` during boot. Defined whenever page_ext is
    /// built, since `mm/page_ext.c` lists it; it asks for space only when
    /// page tags are kept in page_ext.
    #[no_mangle]
    pub(super) static page_alloc_tagging_ops: PageExtOps =
        PageExtOps(Opaque::new(bindings::page_ext_operations {
            offset: 0,
            size: size_of::<bindings::codetag_ref>(),
            need: Some(need_page_alloc_tagging),
            init: None,
            need_shared_flags: false,
        }));

    extern "C" fn need_page_alloc_tagging() -> bool {
        cfg!(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)
            && super::super::control::profiling_supported()
            && super::compressed::store() == super::Store::PageExt
    }
}

/// Page tags as references in `page_ext`.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
mod ext {
    use super::super::{
        hook_page::HookPage, record, tag::AllocTag, tag_ref::debug, tag_ref::TagRef,
    };
    use super::ext_ops::page_alloc_tagging_ops;
    use crate::bindings;

    /// The reference in the `page_ext` of a page the hooks' caller owns.
    ///
    /// # Invariants
    ///
    /// `ext` is the `page_ext` of a page that the caller is allocating,
    /// freeing, splitting or migrating: memory holding it cannot go offline
    /// meanwhile, so `ext` stays valid (`page_ext_get_owned()`).
    pub(super) struct PageRef {
        ext: *mut bindings::page_ext,
    }

    impl PageRef {
        /// The reference of `page`, or `None` if the page has no `page_ext`
        /// (early pages, or profiling built in but `never`).
        #[inline(always)]
        pub(super) fn get(page: HookPage<'_>) -> Option<PageRef> {
            // SAFETY: a valid page that the hook's caller owns (`HookPage`),
            // which is what the lock-free lookup needs.
            let ext = unsafe { bindings::alloc_tag_page_ext_owned(page.as_ptr()) };
            if ext.is_null() {
                None
            } else {
                // INVARIANT: the page_ext of an owned page.
                Some(PageRef { ext })
            }
        }

        #[inline(always)]
        fn tag_ref(&self) -> &TagRef {
            // SAFETY: `offset` was set at boot before any page was allocated
            // and never changes after.
            let offset = unsafe { (*page_alloc_tagging_ops.0.get()).offset };
            // SAFETY: our slot lies `offset` bytes into the held `page_ext`
            // (invariant), and the page allocator serialises the hooks of
            // one page.
            unsafe { TagRef::from_raw(self.ext.cast::<u8>().add(offset).cast()) }
        }

        #[inline(always)]
        pub(super) fn charge(&self, tag: Option<&AllocTag>, bytes: usize) {
            match tag {
                Some(tag) => self.tag_ref().charge(tag, bytes),
                None => debug::warn_missing_tag(),
            }
        }

        #[inline(always)]
        pub(super) fn charge_piece(&self, tag: &AllocTag) {
            self.tag_ref().charge_piece(tag);
        }

        #[inline(always)]
        pub(super) fn uncharge(&self, bytes: usize) {
            self.tag_ref().uncharge(bytes);
        }

        #[inline(always)]
        pub(super) fn tag(&self) -> Option<&'static AllocTag> {
            let r = self.tag_ref();
            if r.holds_record() {
                return record::record_tag(r);
            }
            r.tag()
        }

        #[inline(always)]
        pub(super) fn drop_record(&self) {
            record::release(self.tag_ref());
        }

        #[inline(always)]
        pub(super) fn set_empty(&self) {
            self.tag_ref().set_empty();
        }

        /// Swaps the two references as they are.
        pub(super) fn swap(&self, other: &PageRef) {
            let (a, b) = (self.tag_ref(), other.tag_ref());
            let (x, y) = (a.raw(), b.raw());
            a.set_raw(y);
            b.set_raw(x);
        }
    }
}

/// Without page tags in `page_ext` (a compressed-only build) no page has a
/// reference: [`PageRef`] has no values, so [`PageTag::Ext`] never occurs.
///
/// [`PageRef`]: ext::PageRef
#[cfg(not(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT))]
mod ext {
    use super::super::{hook_page::HookPage, tag::AllocTag};

    pub(super) enum PageRef {}

    impl PageRef {
        #[inline(always)]
        pub(super) fn get(_page: HookPage<'_>) -> Option<PageRef> {
            None
        }

        #[inline(always)]
        pub(super) fn charge(&self, _tag: Option<&AllocTag>, _bytes: usize) {
            match *self {}
        }

        #[inline(always)]
        pub(super) fn charge_piece(&self, _tag: &AllocTag) {
            match *self {}
        }

        #[inline(always)]
        pub(super) fn uncharge(&self, _bytes: usize) {
            match *self {}
        }

        #[inline(always)]
        pub(super) fn tag(&self) -> Option<&'static AllocTag> {
            match *self {}
        }

        #[inline(always)]
        pub(super) fn drop_record(&self) {
            match *self {}
        }

        #[inline(always)]
        pub(super) fn set_empty(&self) {
            match *self {}
        }

        pub(super) fn swap(&self, _other: &PageRef) {
            match *self {}
        }
    }
}

/// A page's tag, wherever this boot keeps it.
enum PageTag<'a> {
    Ext(ext::PageRef),
    Index(PageIndex<'a>),
}

impl PageTag<'_> {
    /// The tag slot of `page`, or `None` if it has none (an early page
    /// without `page_ext`).
    #[inline(always)]
    fn get(page: HookPage<'_>) -> Option<PageTag<'_>> {
        match compressed::store() {
            // SAFETY: compressed mode is in effect.
            Store::Compressed => Some(PageTag::Index(unsafe { PageIndex::get(page) })),
            Store::PageExt => ext::PageRef::get(page).map(PageTag::Ext),
        }
    }

    #[inline(always)]
    fn charge(&self, tag: Option<&AllocTag>, bytes: usize) {
        match self {
            PageTag::Ext(r) => r.charge(tag, bytes),
            PageTag::Index(i) => i.charge(tag, bytes),
        }
    }

    #[inline(always)]
    fn charge_piece(&self, tag: &AllocTag) {
        match self {
            PageTag::Ext(r) => r.charge_piece(tag),
            PageTag::Index(i) => i.charge_piece(tag),
        }
    }

    #[inline(always)]
    fn uncharge(&self, bytes: usize) {
        match self {
            PageTag::Ext(r) => r.uncharge(bytes),
            PageTag::Index(i) => i.uncharge(bytes),
        }
    }

    #[inline(always)]
    fn tag(&self) -> Option<&'static AllocTag> {
        match self {
            PageTag::Ext(r) => r.tag(),
            PageTag::Index(i) => i.tag(),
        }
    }

    /// Before a split or a migration moves the reference: a capture record
    /// it holds goes, and it holds the site's tag again (indexes never hold
    /// records).
    #[inline(always)]
    fn drop_record(&self) {
        if let PageTag::Ext(r) = self {
            r.drop_record();
        }
    }

    #[inline(always)]
    fn set_empty(&self) {
        match self {
            PageTag::Ext(r) => r.set_empty(),
            PageTag::Index(i) => i.set_empty(),
        }
    }

    /// Swaps the tags of two pages (migration), as they are.
    fn swap(&self, other: &PageTag<'_>) {
        match (self, other) {
            (PageTag::Ext(a), PageTag::Ext(b)) => a.swap(b),
            (PageTag::Index(a), PageTag::Index(b)) => {
                let (x, y) = (a.raw(), b.raw());
                a.set_raw(y);
                b.set_raw(x);
            }
            // One boot uses one store.
            _ => {}
        }
    }
}

#[inline(always)]
fn pages_bytes(nr: u32) -> usize {
    PAGE_SIZE.wrapping_mul(nr as usize)
}

/// Charges `nr` pages from `page` to `tag` in compressed mode; the C hook
/// (`include/linux/pgalloc_tag.h`) calls it when
/// `mem_alloc_profiling_compressed_key` is on, or always in a
/// compressed-only build. In page_ext mode the C hook charges the page's
/// reference with `__alloc_tag_add()` itself.
///
/// # Safety
///
/// Compressed mode is in effect, or this is a compressed-only build.
#[inline(always)]
pub(super) unsafe fn add_compressed(page: HookPage<'_>, tag: Option<&AllocTag>, nr: u32) {
    // A compressed-only build decides its layout on first use (out of line,
    // so that this path needs no frame); otherwise the key is on only once
    // compressed mode is decided.
    if !cfg!(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT) && !compressed::in_effect() {
        return add_no_ref(Some(page), tag, nr);
    }
    // SAFETY: compressed mode (checked above, or the caller's key).
    unsafe { PageIndex::get(page) }.charge(tag, pages_bytes(nr));
}

/// Uncharges `nr` pages at `page` in compressed mode.
///
/// # Safety
///
/// As for [`add_compressed`].
#[inline(always)]
pub(super) unsafe fn sub_compressed(page: HookPage<'_>, nr: u32) {
    if !cfg!(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT) && !compressed::in_effect() {
        return sub_no_ref(Some(page), nr);
    }
    // SAFETY: as in `add_compressed()`.
    unsafe { PageIndex::get(page) }.uncharge(pages_bytes(nr));
}

/// The tag `page` is charged to in compressed mode, if any (the tail-page
/// lookup of `__free_pages()`).
///
/// # Safety
///
/// As for [`add_compressed`].
#[inline(always)]
pub(super) unsafe fn get_compressed(page: HookPage<'_>) -> Option<&'static AllocTag> {
    if !cfg!(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT) && !compressed::in_effect() {
        return tag_of(Some(page));
    }
    // SAFETY: as in `add_compressed()`.
    unsafe { PageIndex::get(page) }.tag()
}

/// The C hook's page_ext path found no reference: either the store is not
/// decided yet (the first page hooks of the boot run before any `page_ext`
/// exists, and deciding compressed mode turns the key on), or the page has
/// no `page_ext` (early boot): not counted, and its tag says so.
#[cold]
#[inline(always)]
pub(super) fn add_no_ref(page: Option<HookPage<'_>>, tag: Option<&AllocTag>, nr: u32) {
    let Some(page) = page else {
        return;
    };
    if let Some(t) = PageTag::get(page) {
        t.charge(tag, pages_bytes(nr));
    } else if let Some(tag) = tag {
        untracked(tag);
    }
}

/// A page with nowhere to record its tag (no `page_ext` yet, early in
/// boot): it is not counted, and its tag says so.
#[cold]
fn untracked(tag: &AllocTag) {
    tag.mark_inaccurate();
}

/// The free side of [`add_no_ref`].
#[cold]
#[inline(always)]
pub(super) fn sub_no_ref(page: Option<HookPage<'_>>, nr: u32) {
    if let Some(t) = page.and_then(PageTag::get) {
        t.uncharge(pages_bytes(nr));
    }
}

/// The tag `page` is charged to, if any.
#[inline(always)]
pub(super) fn tag_of(page: Option<HookPage<'_>>) -> Option<&'static AllocTag> {
    page.and_then(PageTag::get).and_then(|t| t.tag())
}

/// Uncharges the bytes of `nr` pages freed apart from their head page.
#[inline(always)]
pub(super) fn sub_pages(tag: &AllocTag, nr: u32) {
    tag.sub_bytes(pages_bytes(nr));
}

/// Marks `page` as deliberately not counted.
#[inline(always)]
pub(super) fn clear_ref(page: Option<HookPage<'_>>) {
    if let Some(t) = page.and_then(PageTag::get) {
        t.set_empty();
    }
}

/// Gives every piece of a split allocation the head's tag, one call each;
/// returns the number of pieces charged so (the head's not included).
/// `folio`, of order `old_order`, is being split into pieces of order
/// `new_order`.
#[inline(always)]
pub(super) fn split(folio: HookFolio<'_>, old_order: i32, new_order: i32) -> u32 {
    if !(0..32).contains(&new_order) || !(new_order..32).contains(&old_order) {
        return 0;
    }
    let Some(head) = PageTag::get(folio.head()) else {
        return 0;
    };
    // The pieces are freed one by one: a record for the whole block would
    // not be.
    head.drop_record();
    let Some(tag) = head.tag() else {
        return 0;
    };
    let step = 1usize << new_order;
    let mut pieces = 0;
    for i in (step..(1usize << old_order)).step_by(step) {
        if let Some(t) = folio.page(i).and_then(PageTag::get) {
            t.charge_piece(tag);
            pieces += 1;
        }
    }
    pieces
}

/// Migration: `new` takes over `old`'s data. If both folios carry a tag,
/// swap their references, so the charge of `old`'s allocation moves to `new`
/// and the charge `new` was allocated with is uncharged when `old` is freed.
///
/// Otherwise both keep theirs. Returns whether the tags were swapped.
///
/// A folio without a tag may be one whose free
/// never reaches the free hook: a `ZONE_DEVICE` page, made by
/// `memremap_pages()` (its `page->flags` index zeroed, no `page_ext`) and
/// given back to its driver, not to the page allocator. In compressed mode
/// such a page still has an index field, and a charge swapped into it would
/// never be uncharged.
#[inline(always)]
pub(super) fn swap(new: HookFolio<'_>, old: HookFolio<'_>) -> bool {
    let (Some(tn), Some(to)) = (PageTag::get(new.head()), PageTag::get(old.head())) else {
        return false;
    };
    if tn.tag().is_some() && to.tag().is_some() {
        // A record points back at its reference, which the swap moves.
        tn.drop_record();
        to.drop_record();
        tn.swap(&to);
        return true;
    }
    false
}
