// SPDX-License-Identifier: GPL-2.0

//! Tags for Rust call sites.
//!
//! A C call site gets its tag from `alloc_hooks()`, a macro. Rust call sites
//! stay as they are (`KBox::new(x, GFP_KERNEL)?`): the allocation entry
//! points of `kernel::alloc` (and the types built on them) are
//! `#[track_caller]`, so the allocator sees the [`Location`] of the Rust
//! code that asked, and charges the allocation to that location's tag,
//! found here by [`tag_for`].
//!
//! - The hot path is a lookup in a fixed open-addressed table keyed by the
//!   address of the `Location` (a static the compiler emits per call site):
//!   a hash, at most [`MAX_PROBE`] loads, no lock, no allocation, in one
//!   out-of-line function (so that the allocators' `realloc()`, which calls
//!   it, stays small enough to inline, and frees pay nothing for it).
//! - The first allocation from a site registers it ([`register`], once, on a
//!   cold path under a raw spinlock, from any context but NMI): it takes a
//!   free tag from a pre-allocated block, fills it with the site's file
//!   (relative to the source tree), line, module and function, and enters
//!   it in the table. Copies of one site's `Location` (from different
//!   codegen units) share one tag. Blocks of tags are added from process
//!   context by a work item (`alloc_tag_rust_sites_grow()`) when the free
//!   tags run low; the registry reports their tags in use like any other.
//! - The function is named from the stack: the first frame outside the
//!   kernel crate's allocation machinery, its v0 symbol reduced to the
//!   function's name ([`super::demangle`]). With inlining, that is the
//!   function the call ended up in. Without a reliable unwinder (the
//!   guessing one) or kallsyms, it is `?`.
//! - When a Rust module goes, its sites leave the table; sites with nothing
//!   charged are freed for reuse, the others stay reported (detached, under
//!   the module's name) until their allocations are freed, as a module's C
//!   tags do.
//! - Before the profiler's initcall, with profiling `never`, or without a
//!   free tag, an allocation is charged to one fallback row,
//!   `rust_site_unregistered`. With profiling off, [`tag_for`] looks
//!   nothing up and registers nothing: it names the fallback row, which is
//!   not charged while off.

use super::caller;
use super::hook_module::ModuleId;
use super::sites_lock::{count, GrowLock, SitesLock, SitesLocked};
use super::sites_mem::{self, Published, ZeroedBox};
use super::tag::{AllocTag, PerCpuCounters};
use crate::{bindings, ffi::c_ulong, init::Zeroable};
use core::mem::size_of;
use core::panic::Location;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, AtomicUsize, Ordering};

/// Bytes of one block of tags and their sites, allocated each time the
/// pool runs low: an order-2 allocation, filled.
const BLOCK_BYTES: usize = 16384;

/// Tags per block (51 on 64-bit).
const BLOCK_TAGS: usize = BLOCK_BYTES / (size_of::<bindings::alloc_tag>() + size_of::<Site>());

/// At most this many blocks: `CONFIG_MEM_ALLOC_PROFILING_RUST_SITES` sites,
/// rounded down to whole blocks (1020 sites for 1024).
const MAX_BLOCKS: usize = {
    let n = bindings::CONFIG_MEM_ALLOC_PROFILING_RUST_SITES as usize / BLOCK_TAGS;
    if n == 0 {
        1
    } else {
        n
    }
};

/// Table slots: a power of two, at least twice the sites (2048 slots, 32 KiB
/// and 16 KiB of identity entries,
/// for 1020 sites).
const TABLE_BITS: u32 = (2 * MAX_BLOCKS * BLOCK_TAGS)
    .next_power_of_two()
    .trailing_zeros();
const TABLE_SIZE: usize = 1 << TABLE_BITS;

/// Slots a lookup or an insertion looks at, from the key's hash on.
pub(super) const MAX_PROBE: usize = 16;

/// Bytes kept of a site's file path, function name and module name, with the
/// terminating NUL.
const FILE_LEN: usize = 128;
const FUNC_LEN: usize = 64;
/// `MODULE_NAME_LEN`, a macro bindgen cannot see.
const MOD_LEN: usize = 64 - size_of::<c_ulong>();

/// A table key: the address of a `Location`; 0 is an empty slot, 1 one
/// whose site went away.
const KEY_EMPTY: usize = 0;
const KEY_GONE: usize = 1;

/// One table slot.
struct Slot {
    key: AtomicUsize,
    site: Published<Site>,
}

/// Where a site is in its life.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum SiteState {
    /// Unused, on the free list (a zeroed block's sites start here).
    Free = 0,
    /// Registered: the table finds it and its tag is reported.
    Live = 1,
    /// Its module is gone and allocations are still charged to its tag,
    /// which stays reported.
    Detached = 2,
    /// Drained and unlisted, waiting for frees in flight before reuse.
    Unlisted = 3,
}

/// A [`SiteState`] as an atomic byte; all zeroes is [`SiteState::Free`].
#[repr(transparent)]
struct AtomicSiteState(AtomicU8);

impl AtomicSiteState {
    fn load(&self) -> SiteState {
        match self.0.load(Ordering::Relaxed) {
            1 => SiteState::Live,
            2 => SiteState::Detached,
            3 => SiteState::Unlisted,
            // Only `store` writes it, and the blocks start zeroed.
            _ => SiteState::Free,
        }
    }

    fn store(&self, state: SiteState) {
        self.0.store(state as u8, Ordering::Relaxed);
    }
}

/// The strings and identity of one site.
struct SiteData {
    /// The module the call site is in, [`ModuleId::NONE`] for vmlinux
    /// (and once detached).
    owner: ModuleId,
    line: u32,
    column: u32,
    file: [u8; FILE_LEN],
    func: [u8; FUNC_LEN],
    modname: [u8; MOD_LEN],
    /// In the identity index ([`SiteTable::ident`]).
    indexed: bool,
    /// While the site is free: the next free site's index plus one, 0 for
    /// none ([`Sites::free_head`]).
    next_free: u32,
}

/// One site: its state and data, for the tag of the same index in its
/// block.
///
/// # Invariants
///
/// `tag` is the tag of the same index in the site's block, set before the
/// block is published and never changed again. `data` is only reached under
/// the sites lock ([`SitesLocked`]). Its strings, which the tag points to,
/// are read by the tag's readers without that lock, so `data` is borrowed
/// mutably only while none can be reading them: the site free (its tag's
/// `filename` never set, or cleared under the registry's write lock), or
/// the registry held for writing (a module going). The strings are written
/// only while `state` is [`SiteState::Free`], so that readers of a tag in
/// use see them complete.
struct Site {
    state: AtomicSiteState,
    tag: *mut bindings::alloc_tag,
    data: SitesLocked<SiteData>,
}

// SAFETY: `tag` is not changed once the site is shared (invariant) and the
// tag it points to is `Sync` ([`AllocTag`]); the rest is atomic or
// `SitesLocked`, whose `SiteData` is `Send`.
unsafe impl Sync for Site {}

/// A block of site tags and their sites, zeroed when allocated.
#[repr(C)]
struct Block {
    tags: [AllocTag; BLOCK_TAGS],
    sites: [Site; BLOCK_TAGS],
}

// SAFETY: all zeroes are unused tags (`Opaque`) and free sites: state
// `Free`, NULL `tag` (set before the block is used), the vmlinux owner,
// empty strings, no free-list link.
unsafe impl Zeroable for Block {}

/// The table of sites by `Location` address, and the identity index.
///
/// The identity index holds the live sites by (module, file, line,
/// column), so that a copy of a site's `Location` finds the site in at most
/// [`MAX_PROBE`] steps instead of a scan of every site. Each entry is NULL
/// or a live site whose `indexed` is set, at most `MAX_PROBE - 1` slots
/// after its identity's hash with no NULL entry between, read and written
/// only under the sites lock.
#[repr(C)]
struct SiteTable {
    slots: [Slot; TABLE_SIZE],
    ident: [Published<Site>; TABLE_SIZE],
}

// SAFETY: all zeroes are empty slots (`KEY_EMPTY`, no site) and empty index
// entries (NULL).
unsafe impl Zeroable for SiteTable {}

/// The sites' shared state.
///
/// # Invariants
///
/// `blocks[..nr_blocks]` are published blocks, each entry stored before
/// `nr_blocks` counts it; `nr_blocks` only grows, under the sites lock.
/// The keys and sites of `table` are changed only under the sites lock.
/// `unindexed` counts the live sites not in the identity index.
/// `free_head` (an index plus one, 0 for none) and the sites' `next_free`
/// list exactly the free sites of the blocks added, under the sites lock.
struct Sites {
    table: Published<SiteTable>,
    unindexed: AtomicUsize,
    free_head: AtomicUsize,
    blocks: [Published<Block>; MAX_BLOCKS],
    nr_blocks: AtomicUsize,
    free: AtomicUsize,
    detached: AtomicUsize,
    /// The source tree prefix of vmlinux's `Location` file names.
    prefix_len: AtomicUsize,
}

static SITES: Sites = Sites {
    table: Published::null(),
    unindexed: AtomicUsize::new(0),
    free_head: AtomicUsize::new(0),
    blocks: [const { Published::null() }; MAX_BLOCKS],
    nr_blocks: AtomicUsize::new(0),
    free: AtomicUsize::new(0),
    detached: AtomicUsize::new(0),
    prefix_len: AtomicUsize::new(0),
};

// Per-CPU data only on SMP: on UP it is plain `.data` (`PER_CPU_BASE_SECTION`),
// and `.data..percpu` would be init memory, freed after boot.
#[cfg_attr(CONFIG_SMP, link_section = ".data..percpu")]
static FALLBACK_COUNTERS: PerCpuCounters = PerCpuCounters::new();

/// The row of Rust allocations whose site has no tag of its own (before
/// the profiler is up, in `never` mode, or with every site tag taken).
#[used]
#[link_section = "alloc_tags"]
static FALLBACK: AllocTag = AllocTag::new_static(
    concat!("rust/kernel/alloc_tag/", "rust_sites.rs", "\0"),
    line!(),
    c"rust_site_unregistered",
    0,
    &FALLBACK_COUNTERS,
);

/// The most slot and site reads the core has made under one hold of the
/// sites lock (interrupts off) since boot. Loops over the table or over
/// every site take the lock per [`GONE_CHUNK`] slots or per block, so this
/// stays at most [`LOCK_HOLD_BOUND`] whatever
/// `CONFIG_MEM_ALLOC_PROFILING_RUST_SITES` is, unless the identity index
/// overflowed (see [`find_live`]). For tests.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
pub(super) fn max_lock_hold() -> usize {
    super::sites_lock::max_lock_hold()
}

/// The bound on [`max_lock_hold`]: a chunk of the table, or a block of
/// sites with their identity runs.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
pub const LOCK_HOLD_BOUND: usize = 2 * GONE_CHUNK;

#[inline(always)]
fn hash(key: usize) -> usize {
    (key as u64 >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize >> (usize::BITS - TABLE_BITS)
}

/// The table, once [`init`] has published it.
#[inline(always)]
fn table() -> Option<&'static SiteTable> {
    SITES.table.load()
}

/// The site the table holds for `key`, if any. Lock-free; at most
/// [`MAX_PROBE`] slots.
#[inline(always)]
fn lookup(table: &[Slot; TABLE_SIZE], key: usize) -> Option<&'static Site> {
    let h = hash(key);
    for i in 0..MAX_PROBE {
        let slot = &table[(h + i) & (TABLE_SIZE - 1)];
        let k = slot.key.load(Ordering::Acquire);
        if k == KEY_EMPTY {
            return None;
        }
        if k == key {
            let site = slot.site.load();
            // The slot may have been emptied and reused meanwhile: the
            // site read counts only if the key is still there.
            if slot.key.load(Ordering::Acquire) == key {
                return site;
            }
        }
    }
    None
}

/// The tag to charge an allocation from the Rust call site `loc` to.
///
/// Lock-free and bounded unless the site is new, which registers it once
/// (from any context, never sleeping or allocating). Not inlined: see the
/// module documentation.
///
/// # Examples
///
/// ```
/// use kernel::alloc_tag::{testing::tag_for, AllocTag};
///
/// #[track_caller]
/// fn site_tag() -> &'static AllocTag {
///     let tag = tag_for(core::panic::Location::caller());
///     // SAFETY: the tags `tag_for` returns stay valid for good.
///     unsafe { AllocTag::from_raw(tag) }
/// }
///
/// let (a, line) = (site_tag(), line!());
/// assert_eq!(a.line(), line);
/// // Its file and function show in `/proc/allocinfo` from now on.
/// assert!(a.has_file());
/// // Another site, another tag; the same site, the same tag.
/// let (b, line_b) = (site_tag(), line!());
/// assert!(b.line() == line_b && b.as_raw() != a.as_raw());
/// let mut first = None;
/// for _ in 0..2 {
///     let (c, line_c) = (site_tag(), line!());
///     assert_eq!(c.line(), line_c);
///     assert_eq!(*first.get_or_insert(c.as_raw()), c.as_raw());
/// }
/// ```
#[inline(never)]
pub fn tag_for(loc: &'static Location<'static>) -> *mut bindings::alloc_tag {
    // Off, nothing is charged: no lookup, and no site registers (a site
    // that only allocates while off takes no tag). Should profiling come on
    // before the allocation's hook runs, the fallback row gets it.
    if !super::control::profiling_enabled() {
        return FALLBACK.as_raw();
    }
    let Some(table) = table() else {
        return FALLBACK.as_raw();
    };
    match lookup(&table.slots, loc as *const Location<'static> as usize) {
        Some(site) => site.tag,
        None => register(table, loc),
    }
}

/// The number of sites in the blocks added so far.
fn nr_sites() -> usize {
    SITES.nr_blocks.load(Ordering::Acquire) * BLOCK_TAGS
}

/// Site `i`, `None` unless below [`nr_sites`]. (Plain loops over indexes:
/// the kernel crate exports its symbols, and iterator adapters over
/// closures here make names longer than modpost takes.)
fn site(i: usize) -> Option<&'static Site> {
    let block = SITES.blocks.get(i / BLOCK_TAGS)?.load()?;
    block.sites.get(i % BLOCK_TAGS)
}

/// The last `max` bytes of `src` (all of it if shorter).
fn tail(src: &[u8], max: usize) -> &[u8] {
    &src[src.len() - src.len().min(max)..]
}

/// Copies `src` into `dst` as a NUL-terminated string, keeping its end if
/// it is too long.
fn copy_str(dst: &mut [u8], src: &[u8]) {
    let t = tail(src, dst.len() - 1);
    dst[..t.len()].copy_from_slice(t);
    dst[t.len()] = 0;
}

fn c_bytes(buf: &[u8]) -> &[u8] {
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    &buf[..n]
}

/// The file of `loc` relative to the source tree.
fn rel_file(loc: &'static Location<'static>) -> &'static [u8] {
    let f = loc.file().as_bytes();
    let p = SITES.prefix_len.load(Ordering::Relaxed);
    match f.get(..p) {
        Some(prefix) if p != 0 && prefix == &own_file()[..p] => &f[p..],
        _ => f,
    }
}

/// This file's `Location` name, whose source-tree prefix is that of every
/// file of vmlinux.
fn own_file() -> &'static [u8] {
    Location::caller().file().as_bytes()
}

/// The name of the function that asked for an allocation: the first frame
/// on the stack outside the allocation machinery. Under the sites lock,
/// which keeps its buffers.
fn caller_name(lock: &mut SitesLock, out: &mut [u8]) {
    const FRAMES: usize = 24;
    /// The return addresses and a symbol's name: too large for the stack
    /// of every context a site registers from.
    struct NameBufs {
        frames: [c_ulong; FRAMES],
        name: [u8; bindings::KSYM_NAME_LEN as usize],
    }
    static BUFS: SitesLocked<NameBufs> = SitesLocked::new(NameBufs {
        frames: [0; FRAMES],
        name: [0; bindings::KSYM_NAME_LEN as usize],
    });
    let NameBufs { frames, name } = BUFS.get_mut(lock);
    copy_str(out, b"?");
    for &addr in caller::stack(frames) {
        let Some(sym) = caller::symbol(addr, name) else {
            continue;
        };
        let sym = sym.as_bytes();
        if super::demangle::is_alloc_machinery(sym) || sym.starts_with(b"rust_helper_") {
            continue;
        }
        match super::demangle::fn_name(sym) {
            Some(f) => {
                let mut len = f.ident.len().min(out.len() - 1);
                out[..len].copy_from_slice(&f.ident[..len]);
                for _ in 0..f.closures {
                    let c = b"::{closure}";
                    if len + c.len() >= out.len() {
                        break;
                    }
                    out[len..len + c.len()].copy_from_slice(c);
                    len += c.len();
                }
                out[len] = 0;
            }
            None => copy_str(out, sym),
        }
        return;
    }
}

/// Enters `key` for `site` in the table, reusing a slot whose site went
/// away. False if the key's slots are all taken. Under the sites lock.
fn insert(table: &[Slot; TABLE_SIZE], key: usize, site: &'static Site) -> bool {
    let h = hash(key);
    for i in 0..MAX_PROBE {
        let slot = &table[(h + i) & (TABLE_SIZE - 1)];
        let k = slot.key.load(Ordering::Relaxed);
        if k == KEY_EMPTY || k == KEY_GONE {
            slot.site.store(Some(site));
            slot.key.store(key, Ordering::Release);
            return true;
        }
    }
    false
}

/// The index slot an identity hashes to.
fn ident_hash(owner: ModuleId, line: u32, column: u32, file: &[u8]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in file {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h ^= owner.addr() as u64 ^ (u64::from(line) << 32) ^ u64::from(column);
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (u64::BITS - TABLE_BITS)) as usize
}

impl SiteData {
    /// Whether this is the site of `loc` (its `file` relative to the tree)
    /// in `owner`.
    fn same_site(&self, owner: ModuleId, loc: &Location<'_>, file: &[u8]) -> bool {
        self.owner == owner
            && self.line == loc.line()
            && self.column == loc.column()
            && c_bytes(&self.file) == tail(file, FILE_LEN - 1)
    }

    fn ident_hash(&self) -> usize {
        ident_hash(self.owner, self.line, self.column, c_bytes(&self.file))
    }
}

/// The live site of `loc` in `owner`, if any: from the identity index `ix`,
/// or with a scan while some live site is not in it.
fn find_live(
    lock: &SitesLock,
    ix: &[Published<Site>; TABLE_SIZE],
    owner: ModuleId,
    loc: &Location<'_>,
    file: &[u8],
) -> Option<&'static Site> {
    if SITES.unindexed.load(Ordering::Relaxed) == 0 {
        let h = ident_hash(owner, loc.line(), loc.column(), tail(file, FILE_LEN - 1));
        for i in 0..MAX_PROBE {
            count(1);
            let site = ix[(h + i) & (TABLE_SIZE - 1)].load()?;
            if site.data.get(lock).same_site(owner, loc, file) {
                return Some(site);
            }
        }
        return None;
    }
    // Only while the index overflowed (a run of `MAX_PROBE` entries): the
    // one unbounded hold, counted like the others.
    for i in 0..nr_sites() {
        count(1);
        let Some(site) = site(i) else {
            continue;
        };
        if site.state.load() != SiteState::Live {
            continue;
        }
        if site.data.get(lock).same_site(owner, loc, file) {
            return Some(site);
        }
    }
    None
}

/// Enters the newly live `site`, whose data is `d`, in the identity index
/// `ix`, or counts it unindexed. Under the sites lock (which `d` borrows).
fn ident_insert(ix: &[Published<Site>; TABLE_SIZE], site: &'static Site, d: &mut SiteData) {
    let h = d.ident_hash();
    for i in 0..MAX_PROBE {
        count(1);
        let e = &ix[(h + i) & (TABLE_SIZE - 1)];
        if e.load().is_none() {
            e.store(Some(site));
            d.indexed = true;
            return;
        }
    }
    d.indexed = false;
    SITES.unindexed.fetch_add(1, Ordering::Relaxed);
}

/// Takes `site`, which stops being live, out of the identity index `ix`
/// (closing the gap by moving later entries of the run back, so that every
/// entry stays reachable from its hash).
fn ident_remove(lock: &mut SitesLock, ix: &[Published<Site>; TABLE_SIZE], site: &'static Site) {
    let d = site.data.get_mut(lock);
    if !d.indexed {
        SITES.unindexed.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    d.indexed = false;
    let h = d.ident_hash();
    let lock = &*lock;
    let mask = TABLE_SIZE - 1;
    let mut at = None;
    for i in 0..MAX_PROBE {
        count(1);
        if let Some(e) = ix[(h + i) & mask].load() {
            if core::ptr::eq(e, site) {
                at = Some((h + i) & mask);
                break;
            }
        }
    }
    let Some(mut hole) = at else {
        return;
    };
    ix[hole].store(None);
    let mut j = hole;
    // At most a run of the table; with at most half of it used, short.
    for _ in 0..TABLE_SIZE {
        count(1);
        j = (j + 1) & mask;
        let Some(e) = ix[j].load() else {
            break;
        };
        let home = e.data.get(lock).ident_hash();
        // Move the entry back into the hole if the hole lies between its
        // hash and where it is.
        if hole.wrapping_sub(home) & mask < j.wrapping_sub(home) & mask {
            ix[hole].store(Some(e));
            ix[j].store(None);
            hole = j;
        }
    }
}

/// Registers the new site `loc` and returns its tag: the slow path of
/// [`tag_for`].
#[cold]
#[inline(never)]
fn register(
    table: &'static SiteTable,
    loc: &'static Location<'static>,
) -> *mut bindings::alloc_tag {
    let key = loc as *const Location<'static> as usize;
    let tag = {
        let mut lock = SitesLock::new();
        register_locked(&mut lock, table, loc, key)
    };
    if SITES.free.load(Ordering::Relaxed) < BLOCK_TAGS / 4
        && SITES.nr_blocks.load(Ordering::Relaxed) < MAX_BLOCKS
    {
        sites_mem::schedule_grow();
    }
    tag
}

fn register_locked(
    lock: &mut SitesLock,
    table: &'static SiteTable,
    loc: &'static Location<'static>,
    key: usize,
) -> *mut bindings::alloc_tag {
    count(MAX_PROBE);
    if let Some(site) = lookup(&table.slots, key) {
        return site.tag;
    }
    let mut modname = [0u8; MOD_LEN];
    let owner = match caller::module_of(key, lock) {
        Some(module) => {
            copy_str(&mut modname, module.name().as_bytes());
            module.id()
        }
        None => ModuleId::NONE,
    };
    let file = rel_file(loc);
    // Another copy of the same site's `Location` already has a tag.
    if let Some(site) = find_live(lock, &table.ident, owner, loc, file) {
        insert(&table.slots, key, site);
        return site.tag;
    }
    let Some(site) = pop_free(lock) else {
        return FALLBACK.as_raw();
    };
    let mut func = [0u8; FUNC_LEN];
    caller_name(lock, &mut func);
    // A free site: its tag is not in use.
    let d = site.data.get_mut(lock);
    d.owner = owner;
    d.line = loc.line();
    d.column = loc.column();
    copy_str(&mut d.file, file);
    d.func = func;
    let modname = if owner == ModuleId::NONE {
        core::ptr::null()
    } else {
        d.modname = modname;
        d.modname.as_ptr()
    };
    let ct = site.tag().codetag();
    // SAFETY: the site's tag is valid for good and, its site free, not in
    // use: nothing reads these fields until `filename` is set below, with
    // release; `flags` and `filename` are aligned fields only changed
    // atomically ([`AllocTag`]'s invariants).
    unsafe {
        (*ct).lineno = d.line;
        (*ct).modname = modname.cast();
        (*ct).function = d.func.as_ptr().cast();
        // A new site starts exact and disarmed, whatever the tag's last
        // site left (a drained site is never unlisted while armed).
        AtomicU32::from_ptr(core::ptr::addr_of_mut!((*ct).flags)).fetch_and(
            !(bindings::CODETAG_FLAG_INACCURATE
                | super::tag::CODETAG_FLAG_CAPTURE
                | super::node::CODETAG_FLAG_PERCPU),
            Ordering::Relaxed,
        );
        AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*ct).filename).cast::<*mut u8>())
            .store(d.file.as_mut_ptr(), Ordering::Release);
    }
    site.state.store(SiteState::Live);
    ident_insert(&table.ident, site, d);
    SITES.free.fetch_sub(1, Ordering::Relaxed);
    // Without a slot, the site is found again through the scan above.
    insert(&table.slots, key, site);
    site.tag
}

impl Site {
    fn tag(&self) -> &'static AllocTag {
        // SAFETY: `tag` is the tag of the same index in the site's block
        // (invariant; sites are only reached in published blocks), which is
        // never freed, with counters from `registry::add_block`.
        unsafe { AllocTag::from_raw(self.tag) }
    }
}

/// Slots of the table looked at per hold of the sites lock when a module
/// goes, so that interrupts are never off for long: 512 slot reads (and
/// as many site reads) per hold, whatever `CONFIG_MEM_ALLOC_PROFILING_RUST_SITES`.
const GONE_CHUNK: usize = 512;

/// Takes `module`'s sites out of the table: drained ones are unlisted at
/// the next reclaim, the others stay reported until drained. Returns
/// whether it had any. Called with the registry held for writing, once the
/// module's code can no longer run, so none of its sites registers
/// meanwhile; the lock is taken per [`GONE_CHUNK`] slots, then per block.
pub(crate) fn module_gone(module: ModuleId) -> bool {
    let Some(table) = table() else {
        return false;
    };
    // One pass over the table: the keys of the module's sites go.
    let mut from = 0;
    while from < TABLE_SIZE {
        let lock = SitesLock::new();
        for slot in &table.slots[from..(from + GONE_CHUNK).min(TABLE_SIZE)] {
            count(1);
            if slot.key.load(Ordering::Relaxed) <= KEY_GONE {
                continue;
            }
            let Some(site) = slot.site.load() else {
                continue;
            };
            if site.state.load() != SiteState::Live {
                continue;
            }
            if site.data.get(&lock).owner == module {
                slot.key.store(KEY_GONE, Ordering::Release);
            }
        }
        from += GONE_CHUNK;
    }
    // Then its sites are detached, one block per hold.
    let mut any = false;
    for b in 0..SITES.nr_blocks.load(Ordering::Acquire) {
        let mut lock = SitesLock::new();
        for i in b * BLOCK_TAGS..(b + 1) * BLOCK_TAGS {
            count(1);
            let Some(site) = site(i) else {
                continue;
            };
            if site.state.load() != SiteState::Live || site.data.get(&lock).owner != module {
                continue;
            }
            ident_remove(&mut lock, &table.ident, site);
            // Its strings are copies in the site: nothing to do for them.
            site.data.get_mut(&mut lock).owner = ModuleId::NONE;
            site.state.store(SiteState::Detached);
            SITES.detached.fetch_add(1, Ordering::Relaxed);
            any = true;
        }
    }
    any
}

/// The number of detached sites.
pub(crate) fn detached() -> usize {
    SITES.detached.load(Ordering::Relaxed)
}

/// Stops reporting the detached sites with nothing charged; returns how
/// many. Called with the registry held for writing, so that no reader is
/// reading their strings; [`free_unlisted`] frees them after the frees in
/// flight.
pub(crate) fn unlist_drained() -> usize {
    let mut n = 0;
    // One block per hold.
    for b in 0..SITES.nr_blocks.load(Ordering::Acquire) {
        let _lock = SitesLock::new();
        for i in b * BLOCK_TAGS..(b + 1) * BLOCK_TAGS {
            count(1);
            let Some(site) = site(i) else {
                continue;
            };
            if site.state.load() != SiteState::Detached {
                continue;
            }
            // An armed tag is in use (capture points at it until disarmed;
            // arming holds the registry for reading, so not meanwhile).
            let c = site.tag().read();
            if c.bytes != 0 || c.calls != 0 || site.tag().capture_armed() {
                continue;
            }
            let ct = site.tag().codetag();
            // SAFETY: `filename` is an aligned field of the site's tag,
            // valid for good, only changed atomically ([`AllocTag`]'s
            // invariants); the registry is held for writing (caller), so no
            // reader is between the tag's `has_file()` and its strings.
            unsafe {
                AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*ct).filename).cast::<*mut u8>())
            }
            .store(core::ptr::null_mut(), Ordering::Release);
            site.state.store(SiteState::Unlisted);
            SITES.detached.fetch_sub(1, Ordering::Relaxed);
            n += 1;
        }
    }
    n
}

/// Makes the unlisted sites free for reuse.
pub(crate) fn free_unlisted() {
    // One block per hold.
    for b in 0..SITES.nr_blocks.load(Ordering::Acquire) {
        let mut lock = SitesLock::new();
        // Pushed from the top, so that the lowest is taken first.
        for i in (b * BLOCK_TAGS..(b + 1) * BLOCK_TAGS).rev() {
            count(1);
            let Some(site) = site(i) else {
                continue;
            };
            if site.state.load() == SiteState::Unlisted {
                site.state.store(SiteState::Free);
                push_free(&mut lock, i);
                SITES.free.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Puts the free site `i` on the free list.
fn push_free(lock: &mut SitesLock, i: usize) {
    let Some(site) = site(i) else {
        return;
    };
    // Indexes are below `MAX_BLOCKS * BLOCK_TAGS`, at most 65536.
    site.data.get_mut(lock).next_free = SITES.free_head.load(Ordering::Relaxed) as u32;
    SITES.free_head.store(i + 1, Ordering::Relaxed);
}

/// Takes a free site off the free list, if there is one.
fn pop_free(lock: &SitesLock) -> Option<&'static Site> {
    let head = SITES.free_head.load(Ordering::Relaxed);
    if head == 0 {
        return None;
    }
    count(1);
    let site = site(head - 1)?;
    let next = site.data.get(lock).next_free;
    SITES.free_head.store(next as usize, Ordering::Relaxed);
    Some(site)
}

const _: () = assert!(size_of::<Block>() <= BLOCK_BYTES);
// Free-list links are `u32`.
const _: () = assert!(MAX_BLOCKS * BLOCK_TAGS < u32::MAX as usize);

/// Adds one block of free sites. Process context; may sleep.
fn grow() -> bool {
    let _grow = GrowLock::new();
    // Blocks are only added here, under the grow mutex.
    let n = SITES.nr_blocks.load(Ordering::Acquire);
    let Some(entry) = SITES.blocks.get(n) else {
        return false;
    };
    // Zeroed, and charged to the helper's own row: all-zero sites are
    // free, their tags unused.
    let Some(mut block) = ZeroedBox::<Block>::new() else {
        return false;
    };
    let b = &mut *block;
    for (site, tag) in b.sites.iter_mut().zip(b.tags.iter()) {
        site.tag = tag.as_raw();
    }
    let tags = block.tags.as_ptr().cast_mut().cast::<bindings::alloc_tag>();
    // SAFETY: zeroed tags that nothing uses yet, kept for good: the block
    // is leaked below, unless this fails and dropping it frees it.
    if unsafe { super::registry::add_block(tags, BLOCK_TAGS) }.is_err() {
        return false;
    }
    let block = block.leak();
    let mut lock = SitesLock::new();
    entry.store(Some(block));
    SITES.nr_blocks.store(n + 1, Ordering::Release);
    for i in (n * BLOCK_TAGS..(n + 1) * BLOCK_TAGS).rev() {
        count(1);
        push_free(&mut lock, i);
    }
    SITES.free.fetch_add(BLOCK_TAGS, Ordering::Relaxed);
    true
}

/// Adds blocks until there are as many as Kconfig allows (or memory runs
/// out), as the work item does one at a time when free sites run low;
/// returns the number of site tags then. Process context; may sleep. For
/// tests that need the whole pool in place (the compressed index budget).
#[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
pub(super) fn grow_all() -> usize {
    while grow() {}
    nr_sites()
}

/// The work item that adds a block of sites when they run low.
pub(super) fn grow_work() {
    static WARNED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if SITES.free.load(Ordering::Relaxed) < BLOCK_TAGS / 4
        && !grow()
        && !WARNED.swap(true, Ordering::Relaxed)
    {
        crate::pr_warn!(
            "alloc_tag: no more Rust site tags; new sites go to rust_site_unregistered\n"
        );
    }
}

/// Sets the Rust sites up: the table and the first block. Called from the
/// profiler's initcall, after the registry; nothing is set up if profiling
/// is `never` (every Rust allocation then names the fallback tag, which is
/// never charged).
pub(crate) fn init() {
    super::sites_lock::init();
    if !super::control::profiling_supported() {
        return;
    }
    let own = own_file();
    // This file from the source tree's top, as `FALLBACK` names it.
    let tail = concat!("rust/kernel/alloc_tag/", "rust_sites.rs").as_bytes();
    if own.ends_with(tail) {
        SITES
            .prefix_len
            .store(own.len() - tail.len(), Ordering::Relaxed);
    }
    // Zeroed: all slots and identity entries empty.
    let Some(table) = ZeroedBox::<SiteTable>::new() else {
        crate::pr_err!("alloc_tag: no memory for the Rust site table; Rust sites share one row\n");
        return;
    };
    if !grow() {
        drop(table);
        crate::pr_err!("alloc_tag: no memory for Rust site tags; Rust sites share one row\n");
        return;
    }
    SITES.table.store(Some(table.leak()));
}
