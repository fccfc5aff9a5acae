// SPDX-License-Identifier: GPL-2.0

//! Context capture's record path (see [`super::capture`] for what capture
//! is): the state of the armed sites, the record pool and its refill, and
//! the capturing entry points the slab, percpu and page hooks reach through
//! the `alloc_tag_add`/`alloc_tag_sub` static calls while a site is armed.
//!
//! It is below the registry: the page hooks ([`super::page`]) ask it about
//! references holding a record, and it uses only the tag and its
//! reference. Arming, disarming and the report ([`super::capture`]) change
//! its state through [`Guard`] under [`Control`].
//!
//! The record path never allocates: records come from a pool of chunks
//! ([`CHUNK_RECORDS`] records each) filled before the first site is armed
//! and refilled from process context by a work item when it runs low (the
//! hook only queues an `irq_work`, which queues the work).
//!
//! Locking, outermost first: the control mutex (arm, disarm, report, module
//! unload, pool refill; serialises the static call updates) -> the capture
//! spinlock (raw, irqsave; taken from the allocator hooks in any context
//! but NMI).

use super::{
    capture_c::{self, FRAMES},
    tag_ref::{TagRef, REF_RECORD},
    AllocTag,
};
use crate::{
    bindings,
    error::{code::*, Result},
    prelude::*,
    sync::lock::{self, mutex::MutexBackend, raw_spinlock::RawSpinLockIrqBackend},
    sync::{Mutex, RawSpinLockIrq},
};
use core::sync::atomic::{AtomicBool, Ordering};
use core::{
    mem::{size_of, MaybeUninit},
    ptr::null_mut,
};

/// Armed sites at most.
pub(super) const MAX_SITES: usize = 8;
/// Live records at most, all sites together (the pool grows to this many
/// records, 48 bytes each on 64-bit: 768 KiB at most).
pub(super) const MAX_RECORDS: usize = 16384;
/// Records per chunk of the pool (one allocation each).
pub(super) const CHUNK_RECORDS: usize = 32;
/// Free records the pool has when the first site is armed.
pub(super) const POOL_MIN: usize = 2 * CHUNK_RECORDS;
/// A refill is queued when fewer records than this are free.
const LOW_WATER: usize = CHUNK_RECORDS;
/// A refill stops once this many records are free.
const REFILL_TARGET: usize = 4 * CHUNK_RECORDS;

const _: () = assert!(MAX_RECORDS % CHUNK_RECORDS == 0 && POOL_MIN <= MAX_RECORDS);
/// Distinct stacks kept per site; more go to the site's "other" bucket.
pub(super) const MAX_STACKS: usize = 32;

/// The innermost frames of a captured stack that are capture's own: the
/// helper that saves it, [`record_add`] and `__alloc_tag_add_capture()`.
const CAPTURE_FRAMES: u32 = 3;

/// Set in a tag reference holding a [`Record`]'s address.
const FLAG_RECORD: usize = REF_RECORD;

/// Live bytes and calls of one stack of an armed site.
#[derive(Clone, Copy)]
pub(super) struct Bucket {
    /// A hash of the stack, to compare stacks quickly.
    pub(super) hash: u64,
    /// The stack's return addresses; none for the "other stacks" bucket.
    pub(super) nr: u32,
    pub(super) entries: [usize; FRAMES],
    pub(super) bytes: i64,
    pub(super) calls: i64,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        hash: 0,
        nr: 0,
        entries: [0; FRAMES],
        bytes: 0,
        calls: 0,
    };

    pub(super) fn stack(&self) -> &[usize] {
        &self.entries[..(self.nr as usize).min(FRAMES)]
    }
}

/// FNV-1a over the return addresses.
pub(super) fn stack_hash(stack: &[usize]) -> u64 {
    stack.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &a| {
        (h ^ a as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One armed call site.
pub(super) struct Site {
    pub(super) tag: *mut bindings::alloc_tag,
    /// The live records, a doubly linked list.
    pub(super) records: *mut Record,
    pub(super) stacks: [Bucket; MAX_STACKS],
    pub(super) nstacks: usize,
    /// Stacks beyond [`MAX_STACKS`], and allocations without a stack.
    pub(super) other: Bucket,
    /// Allocations since arming counted in no stack: they got no record,
    /// or (pages) their record was dropped by a split or a migration.
    pub(super) uncaptured: u64,
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

/// What capture keeps of one live allocation of an armed site: where its
/// bytes are counted. Its stack is its bucket's (or, in the "other"
/// bucket, not kept): the report shows stacks, not single allocations.
///
/// Records are linked by hand (a site's live list, the pool's free list),
/// not with `kernel::list`: that list's items are `ListArc`s, each its own
/// reference-counted allocation, while records are slots of preallocated
/// chunks, taken and linked inside the allocator hooks, where nothing may
/// be allocated, and a record's owner is the object's tag reference, not a
/// count.
#[repr(C)]
pub(super) struct Record {
    pub(super) prev: *mut Record,
    pub(super) next: *mut Record,
    pub(super) site: *mut Site,
    pub(super) bucket: *mut Bucket,
    /// The object's tag reference, which holds this record's address.
    pub(super) ref_: *mut bindings::codetag_ref,
    pub(super) bytes: usize,
}

const _: () = assert!(size_of::<Record>() == 6 * size_of::<usize>());

/// A chunk of the record pool, zeroed when allocated.
#[repr(C)]
pub(super) struct Chunk {
    pub(super) next: *mut Chunk,
    pub(super) records: [Record; CHUNK_RECORDS],
}

/// The armed sites and the record pool.
pub(super) struct State {
    pub(super) sites: [*mut Site; MAX_SITES],
    pub(super) armed: usize,
    /// The pool's chunks, linked through `next`.
    pub(super) chunks: *mut Chunk,
    /// The free records, linked through `next`.
    pub(super) free: *mut Record,
    pub(super) nfree: usize,
    /// Records in the chunks, free or live.
    pub(super) total: usize,
    /// A refill is queued and has not run yet.
    pub(super) refill_queued: bool,
}

impl State {
    /// Records taken from the pool and not given back.
    pub(super) fn live(&self) -> usize {
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
    pub(super) unsafe fn push_record(&mut self, rec: *mut Record) {
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

// SAFETY: the sites and records the state points to are its own (from
// arming to disarming), used only through the state, under its lock.
unsafe impl Send for State {}

/// The capture state, behind an interrupt-safe raw spinlock: the record
/// path takes it from the allocator hooks in any context but NMI, with the
/// allocator's or the scheduler's locks held.
///
/// A site's memory is owned by the state from arming to disarming; the
/// sites and their records are only read or written with the lock held.
// SAFETY: `init_locks` sets the lock up before the registry is ready, and
// nothing takes it before: arming needs the registry (or the control file,
// which init creates), and the record and release paths run only for armed
// sites and the references they made.
static STATE: RawSpinLockIrq<State> = unsafe {
    RawSpinLockIrq::new_static(State {
        sites: [null_mut(); MAX_SITES],
        armed: 0,
        chunks: null_mut(),
        free: null_mut(),
        nfree: 0,
        total: 0,
        refill_queued: false,
    })
};

/// Serialises arm, disarm, report and module unload, and the static call
/// updates; process context.
// SAFETY: `init_locks` sets it up before the registry is ready; its users
// hold the registry or check `LOCKS_READY` first.
static CONTROL: Mutex<()> = unsafe { Mutex::new_static(()) };

/// Set once [`init_locks`] has set [`STATE`] and [`CONTROL`] up.
pub(super) static LOCKS_READY: AtomicBool = AtomicBool::new(false);

/// Sets capture's locks up; the first thing the profiler's initcall does.
pub(crate) fn init_locks() {
    // SAFETY: called once (the initcall), before anything can take either
    // lock (see their safety comments).
    unsafe {
        STATE.init_static(
            crate::c_str!("alloc_tag_capture"),
            crate::static_lock_class!(),
        );
        CONTROL.init_static(
            crate::c_str!("alloc_tag_capture_control"),
            crate::static_lock_class!(),
        );
    }
    LOCKS_READY.store(true, Ordering::Release);
}

/// The capture spinlock, held (interrupts off).
pub(super) struct Guard(lock::Guard<'static, State, RawSpinLockIrqBackend>);

impl Guard {
    #[inline]
    pub(super) fn lock() -> Guard {
        Guard(STATE.lock())
    }

    #[inline]
    pub(super) fn state(&mut self) -> &mut State {
        &mut self.0
    }
}

/// The control mutex, held.
pub(super) struct Control {
    _held: lock::Guard<'static, (), MutexBackend>,
}

impl Control {
    pub(super) fn lock() -> Control {
        Control {
            _held: CONTROL.lock(),
        }
    }
}

/// The armed site of `tag`, if it is armed.
pub(super) fn find(state: &State, tag: *mut bindings::alloc_tag) -> Option<*mut Site> {
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
#[inline(always)]
pub(super) unsafe fn add(
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
    // SAFETY: the caller's contract is this function's: an object's
    // reference, NULL or a tag.
    let (r, tag) = unsafe { (TagRef::from_raw(ref_), AllocTag::from_nullable(tag)) };
    r.charge_or_warn(tag, bytes);
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
    let mut entries = MaybeUninit::uninit();
    // The stack starts at the hook: this function, the entry point and the
    // helper are left out.
    let stack = capture_c::save_stack(&mut entries, CAPTURE_FRAMES);
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
                let bucket = s.bucket(stack);
                (*bucket).bytes += bytes as i64;
                (*bucket).calls += 1;
                rec.write(Record {
                    prev: null_mut(),
                    next: s.records,
                    site,
                    bucket,
                    ref_,
                    bytes,
                });
                if !s.records.is_null() {
                    (*s.records).prev = rec;
                }
                s.records = rec;
                // The plain charge (debug checks included), then the
                // reference points at the record.
                TagRef::from_raw(ref_).charge_or_warn(AllocTag::from_nullable(tag), bytes);
                (*ref_).ct = (rec as usize | FLAG_RECORD) as *mut bindings::codetag;
            }
            true
        }
    };
    drop(g);
    if refill {
        capture_c::queue_refill();
    }
    recorded
}

/// `alloc_tag_sub` while something is armed: frees the object's record if
/// it has one, and uncharges as usual.
///
/// # Safety
///
/// As `__alloc_tag_sub()`.
#[inline(always)]
pub(super) unsafe fn sub(ref_: *mut bindings::codetag_ref, bytes: usize) {
    if !ref_.is_null() {
        // SAFETY: the reference of the object being freed (caller).
        let ct = unsafe { (*ref_).ct } as usize;
        if ct & FLAG_RECORD != 0 {
            // SAFETY: the caller's contract is this function's.
            unsafe { record_sub(ref_, ct, bytes) };
            return;
        }
    }
    // SAFETY: the caller's contract is this function's: an object's
    // reference.
    unsafe { TagRef::from_raw(ref_) }.uncharge(bytes);
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
        // SAFETY: the caller's contract: an object's reference.
        unsafe { TagRef::from_raw(ref_) }.uncharge(bytes);
        return;
    }
    let rec = (ct & !FLAG_RECORD) as *mut Record;
    // SAFETY: the reference still holds the record, so it is live and
    // linked in its site, which is armed; the lock is held (`g`).
    unsafe {
        (*ref_).ct = take_record(&mut g, rec);
        TagRef::from_raw(ref_).uncharge(bytes);
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

/// The tag of a reference that holds a record (a page's, for
/// `__free_pages()`' tail lookup by a caller that holds the page; any
/// object's, for per-node attribution around a charge or an uncharge): the
/// record's site's tag, or, if a disarm rewrote the reference meanwhile, the
/// tag it holds now.
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
pub(super) unsafe fn unlink(s: &mut Site, rec: *mut Record) {
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

/// Adds chunks to the pool until `want` records are free (or the pool is
/// at [`MAX_RECORDS`]); `ENOMEM` if a chunk cannot be allocated. May sleep.
pub(super) fn fill_pool(_c: &Control, want: usize) -> Result {
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
pub(super) fn free_pool(_c: &Control) {
    let mut chunks = {
        let mut g = Guard::lock();
        let st = g.state();
        if st.armed != 0 || st.live() != 0 {
            return;
        }
        st.free = null_mut();
        st.nfree = 0;
        st.total = 0;
        // Taken by copy and cleared (no `mem::take` for raw pointers
        // before Rust 1.88, Debian 13's rustc is 1.85).
        let chunks = st.chunks;
        st.chunks = null_mut();
        chunks
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
pub(super) fn refill() {
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
