// SPDX-License-Identifier: GPL-2.0

//! Context capture: which callers hold the memory of one call site.
//!
//! Root arms a call site through `/sys/kernel/debug/allocinfo_capture`.
//! While it is armed, each new slab, percpu or page allocation charged to it
//! gets a [`Record`] (stack, size, task, time); the object's tag
//! reference then holds the record's address with [`FLAG_RECORD`] set
//! instead of the tag's code tag, and its free finds the record, uncharges
//! the site as usual and the record's stack, and frees the record. Reading
//! the file reports, per armed site, its distinct stacks with live bytes and
//! calls, largest first.
//!
//! Nothing is paid while nothing is armed: the slab, percpu and page hooks
//! call the core through two static calls (`alloc_tag_add`,
//! `alloc_tag_sub`), which point at the plain entry points and are switched
//! to [`__alloc_tag_add_capture`] and [`__alloc_tag_sub_capture`] only from
//! the first arm to the last disarm.
//!
//! Pages are captured when their tags live in `page_ext`; compressed page
//! tags are indexes in `page->flags`, which cannot hold a record, so pages
//! in compressed mode are not captured (counted on the site as usual, in
//! neither `captured` nor `uncaptured`). A page reference is also read
//! outside its allocation and free: the tail-page lookup of
//! `__free_pages()` asks [`record_tag`], and a split or a migration first
//! drops the block's record with [`release`] (its bytes stay on the site,
//! counted as uncaptured from then on).
//!
//! Limits, all visible in the report: [`MAX_SITES`] armed sites,
//! [`MAX_RECORDS`] live records, [`MAX_STACKS`] distinct stacks per site
//! (further stacks, and allocations without a stack, go to one "other
//! stacks" bucket). Stacks are kept in the records and buckets, at most
//! `ALLOC_TAG_CAPTURE_FRAMES` return addresses each, not in the stack depot
//! (which an option depending on RUST cannot select). An allocation that
//! gets no record (record cap, or the pool empty) is counted on the site as
//! usual and as `uncaptured` in the report.
//!
//! The record path never allocates: records come from a pool of chunks
//! ([`CHUNK_RECORDS`] records each) filled before the first site is armed
//! and refilled from process context by a work item when it runs low (the
//! hook only queues an `irq_work`, which queues the work). So any site may
//! be armed, the allocator's own (`alloc_slab_page`, the pool's chunk
//! allocation, vmalloc, percpu...) included: a record never needs an
//! allocation that could reach an armed site again. The pool is freed at
//! the last disarm.
//!
//! Disarming rewrites the reference of every live record's object to the
//! site's code tag and gives the records back to the pool: the site's
//! totals are unchanged, the objects are freed later as any other.
//! Unloading a module disarms its sites first.
//!
//! An armed tag is in use: the registry frees no tag area and the Rust
//! call sites reuse no tag while one of its tags is armed
//! ([`AllocTag::capture_armed`]), so a site's tag outlives the site. A
//! detached tag of an unloaded module can be armed (and shows its live
//! records); its tag area is freed only once it is disarmed and drained.
//!
//! Locking, outermost first: the registry (read, for tag strings and to
//! keep tags from going) -> the control mutex (arm, disarm, report, module
//! unload, pool refill; serialises the static call updates) -> the capture
//! spinlock (raw, irqsave; taken from the allocator hooks in any context
//! but NMI).

use super::{registry, tag_ref::REF_RECORD, AllocTag};
use crate::{
    bindings,
    error::{code::*, Result},
    prelude::*,
    seq_file::{SeqFile, SingleFile, SingleFileOps, SingleShow},
    uaccess::UserSliceReader,
};
use core::{cell::UnsafeCell, ffi::c_int, fmt::Write, mem::size_of, ptr::null_mut};
use ffi::{c_char, c_ulong};

/// Armed sites at most.
pub const MAX_SITES: usize = 8;
/// Live records at most, all sites together (the pool grows to this many
/// records, about 200 bytes each: 3.3 MiB at most).
pub const MAX_RECORDS: usize = 16384;
/// Records per chunk of the pool (one allocation each).
pub const CHUNK_RECORDS: usize = 32;
/// Free records the pool has when the first site is armed.
const POOL_MIN: usize = 2 * CHUNK_RECORDS;
/// A refill is queued when fewer records than this are free.
const LOW_WATER: usize = CHUNK_RECORDS;
/// A refill stops once this many records are free.
const REFILL_TARGET: usize = 4 * CHUNK_RECORDS;

const _: () = assert!(MAX_RECORDS % CHUNK_RECORDS == 0 && POOL_MIN <= MAX_RECORDS);
/// Distinct stacks kept per site; more go to the site's "other" bucket.
pub const MAX_STACKS: usize = 32;

/// The innermost frames of a captured stack that are capture's own: the
/// helper that saves it, [`record_add`] and [`__alloc_tag_add_capture`].
const CAPTURE_FRAMES: u32 = 3;

/// Set in a tag reference holding a [`Record`]'s address.
const FLAG_RECORD: usize = REF_RECORD;

const FRAMES: usize = bindings::ALLOC_TAG_CAPTURE_FRAMES as usize;

/// Live bytes and calls of one stack of an armed site.
#[derive(Clone, Copy)]
struct Bucket {
    /// A hash of the stack, to compare stacks quickly.
    hash: u64,
    /// The stack's return addresses; none for the "other stacks" bucket.
    nr: u32,
    entries: [usize; FRAMES],
    bytes: i64,
    calls: i64,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        hash: 0,
        nr: 0,
        entries: [0; FRAMES],
        bytes: 0,
        calls: 0,
    };

    fn stack(&self) -> &[usize] {
        &self.entries[..(self.nr as usize).min(FRAMES)]
    }
}

/// FNV-1a over the return addresses.
fn stack_hash(stack: &[usize]) -> u64 {
    stack.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &a| {
        (h ^ a as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One armed call site.
struct Site {
    tag: *mut bindings::alloc_tag,
    /// The live records, a doubly linked list.
    records: *mut Record,
    stacks: [Bucket; MAX_STACKS],
    nstacks: usize,
    /// Stacks beyond [`MAX_STACKS`], and allocations without a stack.
    other: Bucket,
    /// Allocations since arming counted in no stack: they got no record,
    /// or (pages) their record was dropped by a split or a migration.
    uncaptured: u64,
}

impl Site {
    /// The bucket of `stack`, a new one if there is room.
    fn bucket(&mut self, stack: &[usize]) -> *mut Bucket {
        if !stack.is_empty() {
            let hash = stack_hash(stack);
            for b in &mut self.stacks[..self.nstacks] {
                if b.hash == hash && b.stack() == stack {
                    return b;
                }
            }
            if self.nstacks < MAX_STACKS {
                let b = &mut self.stacks[self.nstacks];
                *b = Bucket::EMPTY;
                b.hash = hash;
                b.nr = stack.len() as u32;
                b.entries[..stack.len()].copy_from_slice(stack);
                self.nstacks += 1;
                return b;
            }
        }
        &mut self.other
    }
}

/// What capture keeps of one live allocation of an armed site.
#[repr(C)]
struct Record {
    prev: *mut Record,
    next: *mut Record,
    site: *mut Site,
    bucket: *mut Bucket,
    /// The object's tag reference, which holds this record's address.
    ref_: *mut bindings::codetag_ref,
    bytes: usize,
    ctx: bindings::alloc_tag_capture_ctx,
}

/// A chunk of the record pool, zeroed when allocated.
#[repr(C)]
struct Chunk {
    next: *mut Chunk,
    records: [Record; CHUNK_RECORDS],
}

/// The armed sites and the record pool.
struct State {
    sites: [*mut Site; MAX_SITES],
    armed: usize,
    /// The pool's chunks, linked through `next`.
    chunks: *mut Chunk,
    /// The free records, linked through `next`.
    free: *mut Record,
    nfree: usize,
    /// Records in the chunks, free or live.
    total: usize,
    /// A refill is queued and has not run yet.
    refill_queued: bool,
}

impl State {
    /// Records taken from the pool and not given back.
    fn live(&self) -> usize {
        self.total - self.nfree
    }

    /// Takes a free record.
    fn pop_record(&mut self) -> Option<*mut Record> {
        let rec = self.free;
        if rec.is_null() {
            return None;
        }
        // SAFETY: free records are in the pool's chunks, which stay while
        // they are listed.
        self.free = unsafe { (*rec).next };
        self.nfree -= 1;
        Some(rec)
    }

    /// Gives a record back to the pool.
    ///
    /// # Safety
    ///
    /// `rec` was taken with [`State::pop_record`] and nothing reaches it
    /// any more.
    unsafe fn push_record(&mut self, rec: *mut Record) {
        // SAFETY: a record of the pool, ours alone (caller).
        unsafe { (*rec).next = self.free };
        self.free = rec;
        self.nfree += 1;
    }

    /// Adds the records of `chunk` to the pool.
    ///
    /// # Safety
    ///
    /// `chunk` is a zeroed chunk from `alloc_tag_capture_alloc_chunk()`,
    /// now the pool's.
    unsafe fn add_chunk(&mut self, chunk: *mut Chunk) {
        // SAFETY: ours (caller); its records are free.
        unsafe {
            (*chunk).next = self.chunks;
            self.chunks = chunk;
            self.total += CHUNK_RECORDS;
            for i in 0..CHUNK_RECORDS {
                self.push_record(core::ptr::addr_of_mut!((*chunk).records[i]));
            }
        }
    }

    /// Whether the record path should queue a refill now (and notes that
    /// one is queued).
    fn wants_refill(&mut self) -> bool {
        if self.refill_queued
            || self.armed == 0
            || self.nfree >= LOW_WATER
            || self.total >= MAX_RECORDS
        {
            return false;
        }
        self.refill_queued = true;
        true
    }
}

/// [`State`] behind the capture spinlock.
///
/// # Invariants
///
/// The state, the sites it points to and their records are only read or
/// written with the capture spinlock held; a site's memory is owned by the
/// state from arming to disarming.
struct Locked(UnsafeCell<State>);

// SAFETY: every access holds the capture spinlock (invariant).
unsafe impl Sync for Locked {}

static STATE: Locked = Locked(UnsafeCell::new(State {
    sites: [null_mut(); MAX_SITES],
    armed: 0,
    chunks: null_mut(),
    free: null_mut(),
    nfree: 0,
    total: 0,
    refill_queued: false,
}));

/// The capture spinlock, held.
struct Guard(c_ulong);

impl Guard {
    #[inline]
    fn lock() -> Guard {
        // SAFETY: no preconditions; released by `drop`.
        Guard(unsafe { bindings::alloc_tag_capture_lock() })
    }

    #[inline]
    fn state(&mut self) -> &mut State {
        // SAFETY: the spinlock is held for as long as `self` lives, and the
        // borrow of `self` keeps this the only reference.
        unsafe { &mut *STATE.0.get() }
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: taken by `lock()` with these flags.
        unsafe { bindings::alloc_tag_capture_unlock(self.0) };
    }
}

/// The control mutex, held.
struct Control;

impl Control {
    fn lock() -> Control {
        // SAFETY: process context (the callers: debugfs, module unload).
        unsafe { bindings::alloc_tag_capture_mutex_lock() };
        Control
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        // SAFETY: taken by `lock()`.
        unsafe { bindings::alloc_tag_capture_mutex_unlock() };
    }
}

/// The armed site of `tag`, if it is armed.
fn find(state: &State, tag: *mut bindings::alloc_tag) -> Option<*mut Site> {
    state
        .sites
        .iter()
        .copied()
        // SAFETY: non-NULL slots point at live sites (invariant of `Locked`,
        // whose lock the caller holds through `state`).
        .find(|&s| !s.is_null() && unsafe { (*s).tag } == tag)
}

/// `alloc_tag_add` while something is armed: a record for an armed site,
/// else the plain charge.
///
/// # Safety
///
/// As `__alloc_tag_add()`.
#[no_mangle]
pub unsafe extern "C" fn __alloc_tag_add_capture(
    ref_: *mut bindings::codetag_ref,
    tag: *mut bindings::alloc_tag,
    bytes: usize,
) {
    // SAFETY: a non-NULL `tag` is a tag (caller).
    if !ref_.is_null() && !tag.is_null() && unsafe { AllocTag::from_raw(tag) }.capture_armed() {
        // SAFETY: the caller's contract is this function's.
        if unsafe { record_add(ref_, tag, bytes) } {
            return;
        }
    }
    // SAFETY: the caller's contract is this function's.
    unsafe { super::tag_ref::__alloc_tag_add(ref_, tag, bytes) }
}

/// Charges `bytes` to `tag` through a record from the pool; false if it
/// made none (the caller then charges as usual). Never allocates.
///
/// # Safety
///
/// `ref_` is the non-NULL reference of an object being allocated, `tag` a
/// tag.
#[inline(never)]
unsafe fn record_add(
    ref_: *mut bindings::codetag_ref,
    tag: *mut bindings::alloc_tag,
    bytes: usize,
) -> bool {
    // SAFETY: an all-zero context is valid; the helper fills it.
    let mut ctx: bindings::alloc_tag_capture_ctx = unsafe { core::mem::zeroed() };
    // SAFETY: `ctx` is valid for writes. The stack starts at the hook:
    // this function, the entry point and the helper are left out.
    unsafe { bindings::alloc_tag_capture_context(&mut ctx, CAPTURE_FRAMES) };

    let n = (ctx.nr_entries as usize).min(FRAMES);
    let mut g = Guard::lock();
    let st = g.state();
    // Disarmed meanwhile: charged as usual.
    let site = find(st, tag);
    let rec = site.and_then(|_| st.pop_record());
    let refill = st.wants_refill();
    let recorded = match (site, rec) {
        (None, _) => false,
        (Some(site), None) => {
            // SAFETY: a live site, under the lock.
            unsafe { (*site).uncaptured += 1 };
            false
        }
        (Some(site), Some(rec)) => {
            // SAFETY: a live site, under the lock; `rec` is a pool record,
            // ours until published.
            unsafe {
                let s = &mut *site;
                let bucket = s.bucket(&ctx.entries[..n]);
                (*bucket).bytes += bytes as i64;
                (*bucket).calls += 1;
                rec.write(Record {
                    prev: null_mut(),
                    next: s.records,
                    site,
                    bucket,
                    ref_,
                    bytes,
                    ctx,
                });
                if !s.records.is_null() {
                    (*s.records).prev = rec;
                }
                s.records = rec;
                // The plain charge (debug checks included), then the
                // reference points at the record.
                super::tag_ref::__alloc_tag_add(ref_, tag, bytes);
                (*ref_).ct = (rec as usize | FLAG_RECORD) as *mut bindings::codetag;
            }
            true
        }
    };
    drop(g);
    if refill {
        // SAFETY: no preconditions; callable from any context but NMI.
        unsafe { bindings::alloc_tag_capture_queue_refill() };
    }
    recorded
}

/// `alloc_tag_sub` while something is armed: frees the object's record if
/// it has one, and uncharges as usual.
///
/// # Safety
///
/// As `__alloc_tag_sub()`.
#[no_mangle]
pub unsafe extern "C" fn __alloc_tag_sub_capture(ref_: *mut bindings::codetag_ref, bytes: usize) {
    if !ref_.is_null() {
        // SAFETY: the reference of the object being freed (caller).
        let ct = unsafe { (*ref_).ct } as usize;
        if ct & FLAG_RECORD != 0 {
            // SAFETY: the caller's contract is this function's.
            unsafe { record_sub(ref_, ct, bytes) };
            return;
        }
    }
    // SAFETY: the caller's contract is this function's.
    unsafe { super::tag_ref::__alloc_tag_sub(ref_, bytes) }
}

/// Gives the record `ct` points at back to the pool, if the reference
/// still holds it.
///
/// # Safety
///
/// `ref_` is the non-NULL reference of an object being freed, which held
/// `ct` when read.
#[inline(never)]
unsafe fn record_sub(ref_: *mut bindings::codetag_ref, ct: usize, bytes: usize) {
    let mut g = Guard::lock();
    // SAFETY: the object's reference (caller); disarm only rewrites it
    // under the lock.
    if unsafe { (*ref_).ct } as usize != ct {
        // Disarmed meanwhile: the reference holds the site's tag again.
        drop(g);
        // SAFETY: the caller's contract.
        unsafe { super::tag_ref::__alloc_tag_sub(ref_, bytes) };
        return;
    }
    let rec = (ct & !FLAG_RECORD) as *mut Record;
    // SAFETY: the reference still holds the record, so it is live and
    // linked in its site, which is armed; the lock is held (`g`).
    unsafe {
        (*ref_).ct = take_record(&mut g, rec);
        super::tag_ref::__alloc_tag_sub(ref_, bytes);
    }
}

/// Takes the live record `rec` off its site and its stack's bucket, gives
/// it back to the pool and returns the site's code tag, for the object's
/// reference to hold again.
///
/// # Safety
///
/// `rec` is live and linked in its armed site, and nothing else will
/// reach it; `g` holds the capture spinlock, under which records are
/// linked and unlinked.
unsafe fn take_record(g: &mut Guard, rec: *mut Record) -> *mut bindings::codetag {
    // SAFETY: a live record of a live site, its bucket in the site's
    // table; exclusive under the lock (caller).
    unsafe {
        let r = &mut *rec;
        let s = &mut *r.site;
        (*r.bucket).bytes -= r.bytes as i64;
        (*r.bucket).calls -= 1;
        unlink(s, rec);
        let ct = core::ptr::addr_of_mut!((*s.tag).ct);
        g.state().push_record(rec);
        ct
    }
}

/// The tag of a page reference that holds a record (`__free_pages()`' tail
/// lookup, by a caller that holds the page): the record's site's tag, or,
/// if a disarm rewrote the reference meanwhile, the tag it holds now.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
pub(crate) fn record_tag(r: &super::tag_ref::TagRef) -> Option<&'static AllocTag> {
    let _g = Guard::lock();
    if !r.holds_record() {
        return r.tag();
    }
    let rec = (r.raw() as usize & !FLAG_RECORD) as *mut Record;
    // SAFETY: the reference still holds the record under the lock, so the
    // record is live, its site armed and the site's tag valid: an armed
    // tag is never freed.
    Some(unsafe { AllocTag::from_raw((*(*rec).site).tag) })
}

/// A page block is split or migrated: if its reference holds a record, the
/// record goes and the reference holds the site's tag again. The site's
/// totals do not change; the block's bytes leave their stack and count as
/// uncaptured.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
pub(crate) fn release(r: &super::tag_ref::TagRef) {
    if !r.holds_record() {
        return;
    }
    let mut g = Guard::lock();
    if !r.holds_record() {
        // Disarmed meanwhile.
        return;
    }
    let rec = (r.raw() as usize & !FLAG_RECORD) as *mut Record;
    // SAFETY: as in `record_tag()`: the record is live and linked in its
    // armed site; the lock is held (`g`), and the reference, which is
    // rewritten here, was the only way to it.
    unsafe {
        (*(*rec).site).uncaptured += 1;
        r.set_raw(take_record(&mut g, rec));
    }
}

/// Takes `rec` off its site's list.
///
/// # Safety
///
/// `rec` is linked in `s`; the capture spinlock is held.
unsafe fn unlink(s: &mut Site, rec: *mut Record) {
    // SAFETY: linked records and their neighbours are live (caller).
    unsafe {
        let r = &mut *rec;
        if r.prev.is_null() {
            s.records = r.next;
        } else {
            (*r.prev).next = r.next;
        }
        if !r.next.is_null() {
            (*r.next).prev = r.prev;
        }
    }
}

/// Which tags a control command names.
struct Spec<'a> {
    file: Option<&'a [u8]>,
    line: u32,
    function: Option<&'a [u8]>,
    module: Option<&'a [u8]>,
}

impl<'a> Spec<'a> {
    /// `FILE:LINE` or `function:NAME`, then optionally `module:NAME`.
    fn parse(words: &mut impl Iterator<Item = &'a [u8]>) -> Result<Spec<'a>> {
        let first = words.next().ok_or(EINVAL)?;
        let mut spec = Spec {
            file: None,
            line: 0,
            function: None,
            module: None,
        };
        if let Some(f) = first.strip_prefix(b"function:") {
            spec.function = Some(f);
        } else {
            let colon = first.iter().rposition(|&c| c == b':').ok_or(EINVAL)?;
            let line = core::str::from_utf8(&first[colon + 1..]).map_err(|_| EINVAL)?;
            spec.line = line.parse::<u32>().map_err(|_| EINVAL)?;
            spec.file = Some(&first[..colon]);
        }
        if let Some(w) = words.next() {
            spec.module = Some(w.strip_prefix(b"module:").ok_or(EINVAL)?);
        }
        if words.next().is_some()
            || spec.file == Some(b"")
            || spec.function == Some(b"")
            || spec.module == Some(b"")
        {
            return Err(EINVAL);
        }
        Ok(spec)
    }

    fn matches(&self, t: &AllocTag) -> bool {
        if let Some(f) = self.file {
            if t.file().as_bytes() != f || t.line() != self.line {
                return false;
            }
        }
        if let Some(f) = self.function {
            if t.function().as_bytes() != f {
                return false;
            }
        }
        match (self.module, t.module_name()) {
            (None, _) => true,
            (Some(m), Some(tm)) => tm.as_bytes() == m,
            (Some(_), None) => false,
        }
    }
}

/// A zeroed [`Site`] (no tag, no records, empty buckets), built in place:
/// it is a few KiB.
fn new_site() -> Result<KBox<Site>> {
    let site = KBox::<Site>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
    // SAFETY: all-zero is a valid `Site`: NULL pointers, zero counts, and
    // buckets with no stack.
    Ok(unsafe { site.assume_init() })
}

/// Adds chunks to the pool until `want` records are free (or the pool is
/// at [`MAX_RECORDS`]); `ENOMEM` if a chunk cannot be allocated. May sleep.
fn fill_pool(_c: &Control, want: usize) -> Result {
    loop {
        {
            let mut g = Guard::lock();
            let st = g.state();
            if st.nfree >= want || st.total >= MAX_RECORDS {
                return Ok(());
            }
        }
        // SAFETY: process context (the control mutex is held). The chunk's
        // allocation is a call site of its own, which may be armed: its
        // record comes from the pool, never from here.
        let chunk =
            unsafe { bindings::alloc_tag_capture_alloc_chunk(size_of::<Chunk>()) }.cast::<Chunk>();
        if chunk.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: a zeroed chunk, now the pool's.
        unsafe { Guard::lock().state().add_chunk(chunk) };
    }
}

/// Frees the pool once nothing is armed and every record is back (as the
/// last disarm leaves it).
fn free_pool(_c: &Control) {
    let mut chunks = {
        let mut g = Guard::lock();
        let st = g.state();
        if st.armed != 0 || st.live() != 0 {
            return;
        }
        st.free = null_mut();
        st.nfree = 0;
        st.total = 0;
        core::mem::take(&mut st.chunks)
    };
    while !chunks.is_null() {
        // SAFETY: the pool's chunks, unlisted above; with nothing armed the
        // record path takes no record, so nothing reaches them.
        unsafe {
            let next = (*chunks).next;
            bindings::kvfree(chunks.cast());
            chunks = next;
        }
    }
}

/// The pool's refill, from a work item queued by the record path when the
/// pool runs low.
#[no_mangle]
pub extern "C" fn alloc_tag_capture_refill() {
    let c = Control::lock();
    let armed = Guard::lock().state().armed;
    // Without memory the record path counts uncaptured allocations and
    // queues the next refill when it next runs low.
    static WARNED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if armed != 0
        && fill_pool(&c, REFILL_TARGET).is_err()
        && !WARNED.swap(true, core::sync::atomic::Ordering::Relaxed)
    {
        pr_warn!("alloc_tag: capture: no memory to refill the record pool\n");
    }
    Guard::lock().state().refill_queued = false;
}

/// Arms every tag `spec` names.
///
/// All or nothing: more sites than there are free slots, or no memory for
/// the sites or the record pool, arms none. Any site can be armed (see the
/// module documentation).
fn arm(spec: &Spec<'_>) -> Result {
    let reg = registry::read().ok_or(ENODEV)?;
    let c = Control::lock();
    // First pass: count, and refuse before arming anything. A walk by
    // position: an iterator chain over the registry here would be a
    // generic instance whose mangled name overflows modpost's buffer.
    let (mut found, mut new) = (0, 0);
    let mut pos = 0;
    while let Some((p, t)) = reg.next_from(pos) {
        pos = p + 1;
        if !spec.matches(t) {
            continue;
        }
        found += 1;
        if !t.capture_armed() {
            new += 1;
        }
    }
    if found == 0 {
        return Err(ENOENT);
    }
    let armed = Guard::lock().state().armed;
    if armed + new > MAX_SITES {
        pr_err!(
            "alloc_tag: capture: {} sites armed, {} more asked for, {} at most\n",
            armed,
            new,
            MAX_SITES
        );
        return Err(ENOSPC);
    }
    if new == 0 {
        return Ok(());
    }
    // Then every allocation arming needs, before anything is armed.
    let mut sites: [Option<KBox<Site>>; MAX_SITES] = [const { None }; MAX_SITES];
    for slot in sites.iter_mut().take(new) {
        *slot = Some(new_site()?);
    }
    if armed == 0 {
        if let Err(e) = fill_pool(&c, POOL_MIN) {
            free_pool(&c);
            return Err(e);
        }
    }
    // Second pass: arm them. The registry and the control mutex have been
    // held since the first, so the same `new` tags match and their slots
    // are free.
    let mut next = sites.iter_mut().filter_map(Option::take);
    let mut pos = 0;
    while let Some((p, t)) = reg.next_from(pos) {
        pos = p + 1;
        if !spec.matches(t) || t.capture_armed() {
            continue;
        }
        let Some(site) = next.next() else {
            break;
        };
        let site = KBox::into_raw(site);
        // SAFETY: ours, not yet published.
        unsafe { (*site).tag = t.as_raw() };
        let first = {
            let mut g = Guard::lock();
            let st = g.state();
            let Some(i) = st.sites.iter().position(|s| s.is_null()) else {
                drop(g);
                // SAFETY: from `KBox::into_raw()` above, never published.
                drop(unsafe { KBox::from_raw(site) });
                break;
            };
            st.sites[i] = site;
            st.armed += 1;
            st.armed == 1
        };
        if first {
            // SAFETY: process context, the control mutex held.
            unsafe { bindings::alloc_tag_capture_calls(true) };
        }
        // Only now: the calls reach the capturing versions.
        t.set_capture_armed(true);
    }
    Ok(())
}

/// Disarms the armed sites `pick` selects; returns how many. The last
/// disarm frees the record pool.
///
/// The control mutex must be held.
fn disarm_where(c: &Control, mut pick: impl FnMut(&AllocTag) -> bool) -> usize {
    let mut n = 0;
    loop {
        let mut g = Guard::lock();
        let st = g.state();
        let Some(i) = st.sites.iter().position(|&s| {
            // SAFETY: live sites under the lock; an armed tag is valid.
            !s.is_null() && pick(unsafe { AllocTag::from_raw((*s).tag) })
        }) else {
            break;
        };
        let site = st.sites[i];
        st.sites[i] = null_mut();
        st.armed -= 1;
        let last = st.armed == 0;
        // SAFETY: the site was armed until now and is ours; its records are
        // linked in it and their objects live (a free takes the lock and
        // finds its reference rewritten). Each record goes back to the
        // pool once its object's reference holds the tag again.
        unsafe {
            let s = &mut *site;
            let t = AllocTag::from_raw(s.tag);
            t.set_capture_armed(false);
            let mut r = core::mem::take(&mut s.records);
            while !r.is_null() {
                let next = (*r).next;
                (*(*r).ref_).ct = t.codetag();
                st.push_record(r);
                r = next;
            }
        }
        drop(g);
        // SAFETY: from `KBox::into_raw()` in `arm()`, unpublished above.
        drop(unsafe { KBox::from_raw(site) });
        if last {
            // SAFETY: process context, the control mutex held.
            unsafe { bindings::alloc_tag_capture_calls(false) };
            free_pool(c);
        }
        n += 1;
    }
    n
}

/// Module unload: disarms the sites of `module`, whose tags may go once
/// their allocations are freed.
///
/// # Safety
///
/// `module` is a module being unloaded, its tags still valid.
pub(crate) unsafe fn module_unload(module: *mut bindings::module) {
    // SAFETY: the module's name is a NUL-terminated array (caller).
    let name = unsafe { CStr::from_char_ptr((*module).name.as_ptr()) };
    // The registry keeps the armed tags' strings still while they are read.
    let Some(_reg) = registry::read() else {
        return;
    };
    let c = Control::lock();
    let n = disarm_where(&c, |t| {
        t.module_name()
            .is_some_and(|m| m.as_bytes() == name.as_bytes())
    });
    if n > 0 {
        pr_info!(
            "alloc_tag: capture: {} sites of {} disarmed at unload\n",
            n,
            name
        );
    }
}

/// The report, written by `single_open()`'s one `show`.
struct Report;

impl SingleShow for Report {
    fn show(seq: &SeqFile) -> Result {
        show(seq)
    }
}

fn show(seq: &SeqFile) -> Result {
    let reg = registry::read().ok_or(ENODEV)?;
    let _c = Control::lock();
    // Copies of the armed sites, taken under the lock and printed after.
    let mut snaps = KVec::<KBox<Site>>::with_capacity(MAX_SITES, GFP_KERNEL)?;
    for _ in 0..MAX_SITES {
        snaps.push(new_site()?, GFP_KERNEL)?;
    }
    let mut nsnaps = 0;
    let live = {
        let mut g = Guard::lock();
        let st = g.state();
        for &s in st.sites.iter().filter(|s| !s.is_null()) {
            // SAFETY: a live site under the lock, copied as plain data into
            // a site of ours (whose records pointer is never followed).
            unsafe { core::ptr::copy_nonoverlapping(s, &mut *snaps[nsnaps], 1) };
            nsnaps += 1;
        }
        st.live()
    };
    let snaps = &mut snaps[..nsnaps];
    let mut l = Line::new();
    let _ = writeln!(
        l,
        "# allocinfo capture 1.0: {} of {} sites armed, {} of {} records live",
        snaps.len(),
        MAX_SITES,
        live,
        MAX_RECORDS
    );
    l.emit(seq);
    for s in snaps.iter_mut() {
        // SAFETY: armed while the control mutex is held, so live; its
        // strings are valid while the registry is held.
        let t = unsafe { AllocTag::from_raw(s.tag) };
        let c = t.read();
        let _ = write!(l, "site {}:{} func:{}", t.file(), t.line(), t.function());
        if let Some(m) = t.module_name() {
            let _ = write!(l, " module:{}", m);
        }
        let live = s.stacks[..s.nstacks].iter().map(|b| b.calls).sum::<i64>() + s.other.calls;
        let _ = writeln!(
            l,
            " bytes:{} calls:{} captured:{} uncaptured:{} stacks:{}",
            c.bytes, c.calls, live, s.uncaptured, s.nstacks
        );
        l.emit(seq);
        let n = s.nstacks;
        let stacks = &mut s.stacks[..n];
        stacks.sort_unstable_by(|a, b| b.bytes.cmp(&a.bytes).then(a.hash.cmp(&b.hash)));
        for b in stacks.iter() {
            let _ = writeln!(l, "  stack bytes:{} calls:{}", b.bytes, b.calls);
            l.emit(seq);
            let st = b.stack();
            // SAFETY: `seq` is being shown; `st` holds `st.len()` addresses.
            unsafe {
                bindings::alloc_tag_capture_show_stack(
                    seq.as_raw(),
                    st.as_ptr().cast(),
                    st.len() as u32,
                )
            };
        }
        if s.other.calls != 0 || s.other.bytes != 0 {
            let _ = writeln!(l, "  other bytes:{} calls:{}", s.other.bytes, s.other.calls);
            l.emit(seq);
        }
    }
    drop(reg);
    Ok(())
}

/// One line of the report, built on the stack (longer text is cut).
struct Line {
    buf: [u8; 512],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            buf: [0; 512],
            len: 0,
        }
    }

    /// Appends the line to `seq` and starts the next. A line cut at the
    /// buffer's end still ends the line.
    fn emit(&mut self, seq: &SeqFile) {
        if self.len == self.buf.len() {
            self.buf[self.len - 1] = b'\n';
        }
        seq.write_bytes(&self.buf[..self.len]);
        self.len = 0;
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

impl SingleFile for Report {
    /// One command per write.
    fn write(data: UserSliceReader, len: usize) -> Result {
        command(data, len)
    }
}

/// Runs one command: `arm SPEC`, `disarm SPEC` or `disarm all`.
fn command(mut data: UserSliceReader, len: usize) -> Result {
    let mut text = [0u8; 256];
    if len == 0 || len >= text.len() {
        return Err(EINVAL);
    }
    data.read_slice(&mut text[..len])?;
    run(&text[..len])
}

/// Runs one command, from the file or from kernel code.
fn run(text: &[u8]) -> Result {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let mut words = text.split(|&c| c == b' ').filter(|w| !w.is_empty());
    match words.next() {
        Some(b"arm") => arm(&Spec::parse(&mut words)?),
        Some(b"disarm") => {
            let mut rest = words.clone();
            if rest.next() == Some(b"all") && rest.next().is_none() {
                let c = Control::lock();
                disarm_where(&c, |_| true);
                return Ok(());
            }
            let spec = Spec::parse(&mut words)?;
            let _reg = registry::read().ok_or(ENODEV)?;
            let c = Control::lock();
            if disarm_where(&c, |t| spec.matches(t)) == 0 {
                return Err(ENOENT);
            }
            Ok(())
        }
        _ => {
            pr_err!("alloc_tag: capture: commands are arm SPEC, disarm SPEC, disarm all\n");
            Err(EINVAL)
        }
    }
}

/// One command of the control file from kernel code (the bench module
/// arms its own site): 0 or a negative errno. Exported to GPL modules with
/// the rest of the kernel crate.
///
/// # Safety
///
/// `cmd` is a NUL-terminated string; process context.
#[no_mangle]
pub unsafe extern "C" fn alloc_tag_capture_command(cmd: *const c_char) -> c_int {
    // SAFETY: NUL-terminated (caller).
    let text = unsafe { CStr::from_char_ptr(cmd) }.as_bytes();
    if text.is_empty() || text.len() >= 256 {
        return EINVAL.to_errno();
    }
    match run(text) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

static CAPTURE_FOPS: SingleFileOps<Report> = SingleFileOps::new();

/// Creates the control and report file (the profiler's initcall).
pub(crate) fn init() {
    // SAFETY: static operations; debugfs is up at subsys initcalls.
    unsafe { bindings::alloc_tag_capture_debugfs(CAPTURE_FOPS.as_ptr()) };
}
