// SPDX-License-Identifier: GPL-2.0

//! Compressed page tags: a page's tag as an index in spare `page->flags`
//! bits instead of a pointer in `page_ext`.
//!
//! C header: [`include/linux/pgalloc_tag.h`](srctree/include/linux/pgalloc_tag.h)
//! (the bit layout and its formula).
//!
//! The index field is `min(free bits, 24)` bits wide and ends just below
//! the LRU refs field; the indexes in use are below `2^W`, with
//! `W = min(free bits, 24, alloc_tag_page_bits=)`. Indexes:
//!
//! - 0: no tag (not counted), 1: deliberately not counted (empty),
//! - 2: the overflow tag, which counts the pages of tags that got no index
//!   (its row and theirs say `accurate:no`),
//! - 3 and up: vmlinux's tags in section order, then module tags.
//!
//! So the capacity is `2^W - 3` tags. The storage is chosen once, before
//! the first page is charged ([`store`]): compressed if asked for (boot
//! `,compressed`, or the Kconfig default) and vmlinux's tags plus the module
//! reserve fit; otherwise `page_ext` if it is built in (one log line says
//! so, profiling stays on); in compressed-only builds, compressed anyway,
//! with the tags that get no index counted on the overflow row.
//!
//! Every tag keeps its index in its code tag's `flags` (bits 8 to 31), so
//! charging a page reads it with one load: vmlinux's tags get theirs when
//! the store is chosen, module tags at module load, from a table of
//! `MODULE_TAG_IDS` slots that maps them back. A vmlinux index maps back by
//! address. Page
//! updates are compare-and-swap loops on `page->flags`, whose other bits
//! other CPUs may change at any time.

use super::tag::{vmlinux_tags, AllocTag, PerCpuCounters, STORED_INDEX_SHIFT};
use super::{control, hook_page::HookPage, tag_ref::debug};
use crate::{alloc::flags::GFP_KERNEL, alloc::KVVec, bindings};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU8, AtomicUsize, Ordering};

/// Free page-flag bits of this config (`ALLOC_TAG_PGFLAG_FREE`).
pub(super) const FREE_BITS: u32 = if bindings::ALLOC_TAG_PGFLAG_FREE > 0 {
    bindings::ALLOC_TAG_PGFLAG_FREE as u32
} else {
    0
};

/// The bit just above the index field (`LRU_REFS_PGOFF`).
const TOP: u32 = bindings::ALLOC_TAG_PGFLAG_TOP as u32;

/// The widest index field: a tag keeps its index in the 24 bits of its code
/// tag's `flags` from [`STORED_INDEX_SHIFT`] up.
pub(super) const INDEX_BITS_MAX: u32 = 24;

const _: () = assert!(INDEX_BITS_MAX + STORED_INDEX_SHIFT == u32::BITS);

/// Indexes reserved for module tags (`CONFIG_MEM_ALLOC_PROFILING_MODULE_TAG_IDS`).
pub const MODULE_IDS: u32 = bindings::CONFIG_MEM_ALLOC_PROFILING_MODULE_TAG_IDS;

/// Indexes reserved for the tags of Rust call sites
/// (`CONFIG_MEM_ALLOC_PROFILING_RUST_SITES`, which the site blocks never
/// exceed): a reserve of their own, so that the blocks added as Rust code
/// allocates from new sites never take the module tags' indexes.
pub const RUST_SITE_IDS: u32 = bindings::CONFIG_MEM_ALLOC_PROFILING_RUST_SITES;

/// Every index reserved beyond vmlinux's tags.
pub const RESERVED_IDS: u32 = MODULE_IDS + RUST_SITE_IDS;

/// The index field in `page->flags`: as wide as the free bits allow, at most
/// `INDEX_BITS_MAX`, just below `TOP`. Constant, so that page updates shift
/// and mask by immediates; `alloc_tag_page_bits=` lowers the capacity, not
/// the field.
const FIELD_BITS: u32 = if FREE_BITS < INDEX_BITS_MAX {
    FREE_BITS
} else {
    INDEX_BITS_MAX
};
const FIELD_SHIFT: u32 = TOP - FIELD_BITS;
const FIELD_MASK: usize = (1usize << FIELD_BITS) - 1;

const ID_NONE: u32 = 0;
const ID_EMPTY: u32 = 1;
const ID_OVERFLOW: u32 = 2;
const FIRST_ID: u32 = 3;

// The numbers scripts/alloc_tag_check.sh reads from vmlinux after linking.
core::arch::global_asm!(
    ".globl __alloc_tag_size",
    ".set __alloc_tag_size, {size}",
    ".globl __alloc_tag_pgflag_bits",
    ".set __alloc_tag_pgflag_bits, {bits}",
    ".globl __alloc_tag_index_bits_max",
    ".set __alloc_tag_index_bits_max, {max}",
    ".globl __alloc_tag_module_ids",
    ".set __alloc_tag_module_ids, {mods}",
    ".globl __alloc_tag_rust_site_ids",
    ".set __alloc_tag_rust_site_ids, {rust}",
    size = const core::mem::size_of::<bindings::alloc_tag>(),
    bits = const FREE_BITS,
    max = const INDEX_BITS_MAX,
    mods = const MODULE_IDS,
    rust = const RUST_SITE_IDS,
);

// Per-CPU data only on SMP: on UP it is plain `.data` (`PER_CPU_BASE_SECTION`),
// and `.data..percpu` would be init memory, freed after boot.
#[cfg_attr(CONFIG_SMP, link_section = ".data..percpu")]
static OVERFLOW_COUNTERS: PerCpuCounters = PerCpuCounters::new();

/// The overflow row: pages charged by tags that have no index. Always
/// `accurate:no`, as are the tags whose pages it holds.
#[used]
#[link_section = "alloc_tags"]
static OVERFLOW_TAG: AllocTag = AllocTag::new_static(
    // This source file, as the row shows it (the path from srctree).
    concat!("rust/kernel/alloc_tag/", "compressed.rs", "\0"),
    line!(),
    c"page_tag_index_overflow",
    bindings::CODETAG_FLAG_INACCURATE,
    &OVERFLOW_COUNTERS,
);

/// Where page tags are kept in this boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Store {
    /// A `union codetag_ref` in the page's `page_ext`.
    PageExt = 1,
    /// A tag index in `page->flags`.
    Compressed = 2,
}

/// The store of this boot once decided: one byte, read on every page hook.
///
/// # Invariants
///
/// The byte is 0 (undecided) or the discriminant of a [`Store`].
struct StoreCell(AtomicU8);

impl StoreCell {
    const fn undecided() -> Self {
        Self(AtomicU8::new(0))
    }

    /// The decided store, `None` before the decision; acquire, so that what
    /// was written before [`StoreCell::set`] is seen.
    #[inline(always)]
    fn get(&self) -> Option<Store> {
        match self.0.load(Ordering::Acquire) {
            1 => Some(Store::PageExt),
            2 => Some(Store::Compressed),
            _ => None,
        }
    }

    fn set(&self, store: Store) {
        // INVARIANT: the discriminant of a `Store`.
        self.0.store(store as u8, Ordering::Release);
    }
}

/// The chosen store; the layout statics below are written before it is set
/// to `Compressed` (release) and read after it is seen (acquire).
static MODE: StoreCell = StoreCell::undecided();

static FELL_BACK: AtomicBool = AtomicBool::new(false);
/// The largest index this boot can store: `2^W - 1`.
static ID_LIMIT: AtomicU32 = AtomicU32::new(0);
/// The first index after vmlinux's, the number of module slots from it,
/// and the number of Rust site slots after those.
static MODULE_BASE: AtomicU32 = AtomicU32::new(0);
static MODULE_SLOTS: AtomicU32 = AtomicU32::new(0);
static RUST_SLOTS: AtomicU32 = AtomicU32::new(0);
/// `MODULE_SLOTS + RUST_SLOTS` tag pointers (as `usize`, 0 when free),
/// from init on: the module slots, then the Rust site slots.
static MODULE_TABLE: AtomicPtr<AtomicUsize> = AtomicPtr::new(core::ptr::null_mut());

/// The index field width and the number of tag indexes it holds.
pub(super) fn field() -> (u32, u32) {
    let w = FREE_BITS
        .min(INDEX_BITS_MAX)
        .min(control::page_bits_limit());
    let cap = if w < 2 { 0 } else { (1u32 << w) - FIRST_ID };
    (w, cap)
}

/// Whether `tags` vmlinux tags and the reserves for module tags and Rust
/// call-site tags fit in `capacity`.
///
/// # Examples
///
/// ```
/// use kernel::alloc_tag::testing::{fits, MODULE_IDS, RESERVED_IDS, RUST_SITE_IDS};
///
/// assert_eq!(RESERVED_IDS, MODULE_IDS + RUST_SITE_IDS);
/// assert!(fits(10, 10 + RESERVED_IDS as usize));
/// assert!(!fits(11, 10 + RESERVED_IDS as usize));
/// assert!(!fits(10, 10 + MODULE_IDS as usize));
/// assert!(!fits(usize::MAX, 0));
/// ```
pub fn fits(tags: usize, capacity: usize) -> bool {
    tags.checked_add(RESERVED_IDS as usize)
        .is_some_and(|n| n <= capacity)
}

/// Where page tags are kept; decides it on first use.
#[inline(always)]
pub(super) fn store() -> Store {
    match MODE.get() {
        Some(store) => store,
        None => decide(),
    }
}

/// Whether compressed mode is decided and in effect (no deciding here).
#[inline(always)]
pub(super) fn in_effect() -> bool {
    MODE.get() == Some(Store::Compressed)
}

/// Whether compressed mode was asked for but did not fit, so page_ext is
/// used instead.
pub(super) fn fell_back() -> bool {
    FELL_BACK.load(Ordering::Relaxed)
}

#[cold]
fn decide() -> Store {
    let page_ext = cfg!(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT);
    let want = control::compressed_requested()
        || !page_ext
        || cfg!(CONFIG_MEM_ALLOC_PROFILING_DEFAULT_COMPRESSED);
    if !want {
        MODE.set(Store::PageExt);
        return Store::PageExt;
    }
    let (w, cap) = field();
    let (_, tags) = vmlinux_tags();
    if !fits(tags, cap as usize) && page_ext {
        FELL_BACK.store(true, Ordering::Relaxed);
        MODE.set(Store::PageExt);
        return Store::PageExt;
    }
    let vmlinux_ids = (tags as u32).min(cap);
    ID_LIMIT.store(((1u64 << w) - 1) as u32, Ordering::Relaxed);
    // Every tag keeps its index in its flags, vmlinux's too, so that
    // charging a page reads it in one load.
    let (start, _) = vmlinux_tags();
    for i in 0..vmlinux_ids {
        // SAFETY: `i` is below the number of vmlinux tags.
        unsafe { AllocTag::from_raw(start.add(i as usize)) }.set_stored_index(FIRST_ID + i);
    }
    MODULE_BASE.store(FIRST_ID + vmlinux_ids, Ordering::Relaxed);
    // Short of room (a compressed-only build), modules first.
    let module_slots = MODULE_IDS.min(cap - vmlinux_ids);
    MODULE_SLOTS.store(module_slots, Ordering::Relaxed);
    RUST_SLOTS.store(
        RUST_SITE_IDS.min(cap - vmlinux_ids - module_slots),
        Ordering::Relaxed,
    );
    MODE.set(Store::Compressed);
    // Decided during boot: at the first page hook (`mm_core_init()`, before
    // any other CPU runs), at `page_ext` init or at the profiler's initcall,
    // whichever comes first; each may take the static-key locks.
    // The page hooks' key is enabled once, here, before the first page is
    // charged.
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
    super::keys::StaticKey::compressed().set(true);
    Store::Compressed
}

/// Sets up the module table; called once from the profiler's initcall.
pub(crate) fn init() {
    if store() != Store::Compressed {
        return;
    }
    let slots =
        (MODULE_SLOTS.load(Ordering::Relaxed) + RUST_SLOTS.load(Ordering::Relaxed)) as usize;
    if slots == 0 {
        return;
    }
    match KVVec::from_elem(0usize, slots, GFP_KERNEL) {
        Ok(v) => {
            let (ptr, _, _) = v.into_raw_parts();
            // The table is never freed.
            MODULE_TABLE.store(ptr.cast(), Ordering::Release);
        }
        Err(_) => {
            MODULE_SLOTS.store(0, Ordering::Relaxed);
            RUST_SLOTS.store(0, Ordering::Relaxed);
            crate::pr_err!(
                "alloc_tag: no memory for {} module and Rust site tag indexes; their page allocations go to the overflow row\n",
                slots
            );
        }
    }
}

/// One line for the boot log: where page tags are kept.
pub(crate) fn describe() -> (&'static str, u32, u32, usize) {
    let (w, cap) = field();
    let (_, tags) = vmlinux_tags();
    let what = match store() {
        Store::PageExt if fell_back() => "page_ext (compressed does not fit)",
        Store::PageExt => "page_ext",
        Store::Compressed => "compressed in page->flags",
    };
    (what, w, cap, tags)
}

fn module_table() -> Option<&'static [AtomicUsize]> {
    let ptr = MODULE_TABLE.load(Ordering::Acquire);
    if ptr.is_null() {
        return None;
    }
    let n = (MODULE_SLOTS.load(Ordering::Relaxed) + RUST_SLOTS.load(Ordering::Relaxed)) as usize;
    // SAFETY: a non-NULL table has `MODULE_SLOTS + RUST_SLOTS` initialised entries and is
    // never freed.
    Some(unsafe { core::slice::from_raw_parts(ptr, n) })
}

/// Gives the `len` tags from `start` (a module's section, or with
/// `rust_block` a block of Rust site tags) consecutive indexes, if their
/// part of the table (the module slots, or the Rust site slots) has that
/// many free slots in a row; returns the first. Called with the registry
/// held for writing, so slots are not taken concurrently.
///
/// # Safety
///
/// `start..start + len` are valid tags that stay so until their indexes
/// are released, with no index yet: the tags of a module being loaded, or
/// of a block of Rust sites (whose pages charged before this are on the
/// overflow row).
pub(crate) unsafe fn assign_module_ids(
    start: *mut bindings::alloc_tag,
    len: usize,
    rust_block: bool,
) -> Option<u32> {
    if MODE.get() != Some(Store::Compressed) || len == 0 {
        return None;
    }
    let table = module_table()?;
    let modules = (MODULE_SLOTS.load(Ordering::Relaxed) as usize).min(table.len());
    let from = if rust_block { modules } else { 0 };
    let part = if rust_block {
        &table[modules..]
    } else {
        &table[..modules]
    };
    let mut run = 0;
    let mut first = None;
    for (i, slot) in part.iter().enumerate() {
        if slot.load(Ordering::Relaxed) != 0 {
            run = 0;
            continue;
        }
        run += 1;
        if run == len {
            first = Some(from + i + 1 - len);
            break;
        }
    }
    let first = first?;
    let base = MODULE_BASE.load(Ordering::Relaxed) + first as u32;
    for j in 0..len {
        // SAFETY: `j < len` tags of the module (caller).
        let tag = unsafe { AllocTag::from_raw(start.add(j)) };
        tag.set_stored_index(base + j as u32);
        table[first + j].store(tag.as_raw() as usize, Ordering::Release);
    }
    Some(base)
}

/// Frees the indexes of an unloaded module whose tags have nothing charged.
pub(crate) fn release_module_ids(base: u32, len: usize) {
    let Some(table) = module_table() else {
        return;
    };
    let first = (base - MODULE_BASE.load(Ordering::Relaxed)) as usize;
    for slot in table.iter().skip(first).take(len) {
        slot.store(0, Ordering::Release);
    }
}

/// The index of `tag`, or `ID_OVERFLOW` (marking `tag` inaccurate) if it
/// has none.
#[inline(always)]
fn index_of(tag: &AllocTag) -> u32 {
    match tag.stored_index() {
        ID_NONE => overflow(tag),
        stored => stored,
    }
}

#[cold]
fn overflow(tag: &AllocTag) -> u32 {
    tag.mark_inaccurate();
    ID_OVERFLOW
}

/// The tag with index `id`, if any.
#[inline(always)]
fn tag_of(id: u32) -> Option<&'static AllocTag> {
    if id < FIRST_ID {
        return if id == ID_OVERFLOW {
            Some(&OVERFLOW_TAG)
        } else {
            None
        };
    }
    let base = MODULE_BASE.load(Ordering::Relaxed);
    if id < base {
        let (start, _) = vmlinux_tags();
        // SAFETY: `id - FIRST_ID < MODULE_BASE - FIRST_ID`, the number of vmlinux tags
        // with an index, so this is one of vmlinux's tags.
        return Some(unsafe { AllocTag::from_raw(start.add((id - FIRST_ID) as usize)) });
    }
    let slot = module_table()?.get((id - base) as usize)?;
    let ptr = slot.load(Ordering::Acquire) as *mut bindings::alloc_tag;
    if ptr.is_null() {
        None
    } else {
        // SAFETY: a slot holds a module tag from its load until its module
        // is unloaded with nothing charged to it.
        Some(unsafe { AllocTag::from_raw(ptr) })
    }
}

/// The index field of one page.
///
/// # Invariants
///
/// `flags` is the `flags` word of a valid `struct page`, and compressed
/// mode is in effect (the layout statics are set).
pub(crate) struct PageIndex<'a> {
    flags: &'a AtomicUsize,
}

impl PageIndex<'_> {
    /// The index field of `page`.
    ///
    /// # Safety
    ///
    /// Compressed mode is in effect.
    #[inline(always)]
    pub(crate) unsafe fn get<'a>(page: HookPage<'a>) -> PageIndex<'a> {
        // SAFETY: `flags` is the aligned first word of a valid page
        // (`HookPage`), changed by the kernel only with atomic operations or
        // while the page is not shared.
        let flags = unsafe {
            AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*page.as_ptr()).flags).cast())
        };
        // INVARIANT: a valid page; compressed mode (caller).
        PageIndex { flags }
    }

    #[inline(always)]
    fn id(&self) -> u32 {
        ((self.flags.load(Ordering::Relaxed) >> FIELD_SHIFT) & FIELD_MASK) as u32
    }

    /// Sets the index with a plain read-modify-write of `page->flags`, for
    /// a page being allocated or freed: the page allocator itself writes
    /// their flags non-atomically then (`__SetPageHead()` after the
    /// allocation hook, `page->flags &= ~PAGE_FLAGS_CHECK_AT_PREP` before the
    /// free hook), so no one else writes them meanwhile.
    #[inline(always)]
    fn set_id_owned(&self, id: u32) {
        let field = FIELD_MASK << FIELD_SHIFT;
        let bits = (id as usize & FIELD_MASK) << FIELD_SHIFT;
        let old = self.flags.load(Ordering::Relaxed);
        self.flags.store((old & !field) | bits, Ordering::Relaxed);
    }

    #[inline(always)]
    fn set_id(&self, id: u32) {
        let field = FIELD_MASK << FIELD_SHIFT;
        let bits = (id as usize & FIELD_MASK) << FIELD_SHIFT;
        let mut old = self.flags.load(Ordering::Relaxed);
        loop {
            let new = (old & !field) | bits;
            match self
                .flags
                .compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(cur) => old = cur,
            }
        }
    }

    /// Charges `bytes` and one call to `tag` (`None`: no tag set) and
    /// records it.
    #[inline(always)]
    pub(crate) fn charge(&self, tag: Option<&AllocTag>, bytes: usize) {
        let Some(tag) = tag else {
            debug::warn_missing_tag();
            return;
        };
        if let Some(t) = self.record(tag, Self::set_id_owned) {
            t.charge(bytes);
        }
    }

    /// Records `tag` (or the overflow tag) for one more piece of a split
    /// allocation, one more call.
    #[inline(always)]
    pub(crate) fn charge_piece(&self, tag: &AllocTag) {
        if let Some(t) = self.record(tag, Self::set_id) {
            t.add_call();
        }
    }

    /// Records `tag`'s index with `set` and returns the tag to count on:
    /// `tag`, the overflow tag, or none when not even the overflow index fits
    /// (fewer than 2 bits).
    #[inline(always)]
    fn record<'t>(&self, tag: &'t AllocTag, set: fn(&Self, u32)) -> Option<&'t AllocTag> {
        if cfg!(CONFIG_MEM_ALLOC_PROFILING_DEBUG) {
            let old = self.id();
            if old != ID_NONE && old != ID_EMPTY {
                debug::warn_overwritten();
            }
        }
        let id = index_of(tag);
        if id > ID_LIMIT.load(Ordering::Relaxed) {
            tag.mark_inaccurate();
            set(self, ID_NONE);
            return None;
        }
        set(self, id);
        Some(if id == ID_OVERFLOW {
            &OVERFLOW_TAG
        } else {
            tag
        })
    }

    /// The tag recorded, if any (the overflow tag for tags without index).
    #[inline(always)]
    pub(crate) fn tag(&self) -> Option<&'static AllocTag> {
        tag_of(self.id())
    }

    /// Uncharges `bytes` and one call from the recorded tag and clears it;
    /// for a page being freed.
    #[inline(always)]
    pub(crate) fn uncharge(&self, bytes: usize) {
        let id = self.id();
        if id == ID_NONE {
            debug::warn_free_without_ref();
            return;
        }
        self.set_id_owned(ID_NONE);
        if let Some(t) = tag_of(id) {
            t.uncharge(bytes);
        }
    }

    /// Marks the page as deliberately not counted.
    #[inline(always)]
    pub(crate) fn set_empty(&self) {
        self.set_id(if cfg!(CONFIG_MEM_ALLOC_PROFILING_DEBUG) {
            ID_EMPTY
        } else {
            ID_NONE
        });
    }

    /// The raw index, for moving a page's tag as it is (migration).
    #[inline(always)]
    pub(crate) fn raw(&self) -> u32 {
        self.id()
    }

    /// Stores an index taken from another page with [`PageIndex::raw`].
    #[inline(always)]
    pub(crate) fn set_raw(&self, id: u32) {
        self.set_id(id);
    }
}

/// The number of module tag indexes available in this boot.
pub(super) fn module_slots() -> u32 {
    if MODULE_TABLE.load(Ordering::Acquire).is_null() {
        0
    } else {
        MODULE_SLOTS.load(Ordering::Relaxed)
    }
}

/// The number of Rust call-site tag indexes available in this boot.
pub(super) fn rust_site_slots() -> u32 {
    if MODULE_TABLE.load(Ordering::Acquire).is_null() {
        0
    } else {
        RUST_SLOTS.load(Ordering::Relaxed)
    }
}

/// The module and Rust site indexes in use: (modules, Rust sites).
#[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
pub(super) fn slots_used() -> (usize, usize) {
    let Some(table) = module_table() else {
        return (0, 0);
    };
    let modules = (MODULE_SLOTS.load(Ordering::Relaxed) as usize).min(table.len());
    let used = |part: &[AtomicUsize]| {
        part.iter()
            .filter(|s| s.load(Ordering::Relaxed) != 0)
            .count()
    };
    (used(&table[..modules]), used(&table[modules..]))
}
