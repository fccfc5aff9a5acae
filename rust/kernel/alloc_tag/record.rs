// SPDX-License-Identifier: GPL-2.0

//! Context capture's record path (see [`super::capture`] for what capture
//! is): the state of the armed sites, the record pool and its refill, and
//! the capturing entry points the slab, percpu and page hooks reach through
//! the `alloc_tag_add`/`alloc_tag_sub` static calls while a site is armed.
//!
//! It is below the registry: the page hooks ([`super::page`]) ask it about
//! references holding a record, and it uses only the tag and its
//! reference. Arming, disarming and the report ([`super::capture`]) change
//! its state through [`Guard`] under [`Control`]. The records themselves
//! and their lists are [`super::record_pool`]'s; the C calls are
//! [`super::capture_c`]'s: what is here is safe code.
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
    record_pool::{ChunkBox, Pool},
    tag_ref::TagRef,
    AllocTag,
};
use crate::{
    error::Result,
    init::Zeroable,
    prelude::*,
    sync::lock::{self, mutex::MutexBackend, raw_spinlock::RawSpinLockIrqBackend},
    sync::{Mutex, RawSpinLockIrq},
};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

pub(super) use super::record_pool::CHUNK_RECORDS;

/// Armed sites at most.
pub(super) const MAX_SITES: usize = 8;
/// Live records at most, all sites together (the pool grows to this many
/// records, 48 bytes each on 64-bit: 768 KiB at most).
pub(super) const MAX_RECORDS: usize = 16384;
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

// SAFETY: integers and an array of them: all-zero is a valid (empty) bucket.
unsafe impl Zeroable for Bucket {}

/// FNV-1a over the return addresses.
pub(super) fn stack_hash(stack: &[usize]) -> u64 {
    stack.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &a| {
        (h ^ a as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The stacks of one armed site and what they hold; plain data, a few KiB,
/// copied whole for the report.
#[derive(Clone, Copy)]
pub(super) struct Stacks {
    pub(super) stacks: [Bucket; MAX_STACKS],
    pub(super) nstacks: usize,
    /// Stacks beyond [`MAX_STACKS`], and allocations without a stack.
    pub(super) other: Bucket,
    /// Allocations since arming counted in no stack: they got no record,
    /// or (pages) their record was dropped by a split or a migration.
    pub(super) uncaptured: u64,
}

impl Stacks {
    /// Empty stacks, built in place (all-zero is empty).
    pub(super) fn new() -> Result<KBox<Stacks>> {
        KBox::init(crate::init::zeroed(), GFP_KERNEL)
    }

    /// The bucket of `stack`, a new one if there is room: its index in
    /// `stacks`, or [`MAX_STACKS`] for `other`.
    fn bucket(&mut self, stack: &[usize]) -> usize {
        if !stack.is_empty() {
            let hash = stack_hash(stack);
            let n = self.nstacks.min(MAX_STACKS);
            if let Some(i) = self.stacks[..n]
                .iter()
                .position(|b| b.hash == hash && b.stack() == stack)
            {
                return i;
            }
            if let Some(b) = self.stacks.get_mut(n) {
                *b = Bucket::EMPTY;
                b.hash = hash;
                b.nr = stack.len() as u32;
                b.entries[..stack.len()].copy_from_slice(stack);
                self.nstacks = n + 1;
                return n;
            }
        }
        MAX_STACKS
    }

    /// Bucket `i` ([`Stacks::bucket`]'s index).
    fn bucket_mut(&mut self, i: usize) -> &mut Bucket {
        self.stacks.get_mut(i).unwrap_or(&mut self.other)
    }
}

// SAFETY: buckets and integers, all `Zeroable`: all-zero is valid (no stacks).
unsafe impl Zeroable for Stacks {}

/// One armed call site.
///
/// # Invariants
///
/// `tag` is armed (`capture_armed()`) from before the site is in the state
/// until after it is taken out, and an armed tag's memory is not freed (see
/// [`super::capture`]), so the tag outlives the site.
pub(super) struct Site {
    tag: &'static AllocTag,
    pub(super) stacks: KBox<Stacks>,
}

impl Site {
    /// A site for `tag`, counting in `stacks`.
    ///
    /// # Safety
    ///
    /// `tag` stays valid as long as the site: it is armed before the site
    /// is put in the state and stays armed until the site is taken out (an
    /// armed tag's memory is not freed).
    pub(super) unsafe fn new(tag: &AllocTag, stacks: KBox<Stacks>) -> Site {
        // INVARIANT: armed from before the state has the site until after
        // it is taken out (caller).
        Site {
            // SAFETY: valid while the site is (caller), which is as long as
            // its users use the reference: they hold the site, or the
            // control mutex, which keeps it armed.
            tag: unsafe { AllocTag::from_raw(tag.as_raw()) },
            stacks,
        }
    }

    /// The site's tag, armed while the site is in the state.
    pub(super) fn tag(&self) -> &'static AllocTag {
        self.tag
    }
}

/// The armed sites and the record pool.
pub(super) struct State {
    /// The armed sites; a record names its site by its slot here.
    pub(super) sites: [Option<Site>; MAX_SITES],
    pub(super) armed: usize,
    pub(super) pool: Pool<MAX_SITES>,
    /// A refill is queued and has not run yet.
    pub(super) refill_queued: bool,
}

impl State {
    /// Records taken from the pool and not given back.
    pub(super) fn live(&self) -> usize {
        self.pool.live()
    }

    /// The slot of `tag`'s armed site, if it is armed.
    pub(super) fn find(&self, tag: &AllocTag) -> Option<usize> {
        self.sites
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| core::ptr::eq(s.tag, tag)))
    }

    /// Charges `bytes` to `tag`, armed in `slot`, through a record from the
    /// pool held by `r`; false if there is none (counted as uncaptured; the
    /// caller then charges as usual).
    fn record(
        &mut self,
        slot: usize,
        stack: &[usize],
        r: &TagRef,
        tag: &AllocTag,
        bytes: usize,
    ) -> bool {
        let Some(site) = self.sites.get_mut(slot).and_then(Option::as_mut) else {
            return false;
        };
        let Some(rec) = self.pool.pop() else {
            site.stacks.uncaptured += 1;
            return false;
        };
        let bucket = site.stacks.bucket(stack);
        let b = site.stacks.bucket_mut(bucket);
        b.bytes += bytes as i64;
        b.calls += 1;
        // The plain charge (debug checks included), then the reference
        // holds the record.
        r.charge_or_warn(Some(tag), bytes);
        self.pool.hold(rec, slot, bucket, bytes, r);
        true
    }

    /// Takes the record `r` holds, if it holds one, off its site and its
    /// stack's bucket, and gives it back to the pool; `r` holds the site's
    /// code tag again. Returns the site's slot.
    #[inline(always)]
    fn give_back(&mut self, r: &TagRef) -> Option<usize> {
        let held = self.pool.held_by(r)?;
        let now = match self.sites.get_mut(held.site).and_then(Option::as_mut) {
            Some(site) => {
                let b = site.stacks.bucket_mut(held.bucket);
                b.bytes -= held.bytes as i64;
                b.calls -= 1;
                site.tag.codetag()
            }
            // A live record's site is armed; were it not, the reference
            // holds no tag rather than a stale record.
            None => core::ptr::null_mut(),
        };
        self.pool.release(r, now);
        Some(held.site)
    }

    /// Whether the record path should queue a refill now (and notes that
    /// one is queued).
    fn wants_refill(&mut self) -> bool {
        if self.refill_queued
            || self.armed == 0
            || self.pool.nfree() >= LOW_WATER
            || self.pool.total() >= MAX_RECORDS
        {
            return false;
        }
        self.refill_queued = true;
        true
    }
}

/// The capture state, behind an interrupt-safe raw spinlock: the record
/// path takes it from the allocator hooks in any context but NMI, with the
/// allocator's or the scheduler's locks held.
///
/// The sites, their stacks and the record pool are only read or written
/// with the lock held.
// SAFETY: `init_locks` sets the lock up before the registry is ready, and
// nothing takes it before: arming needs the registry (or the control file,
// which init creates), and the record and release paths run only for armed
// sites and the references they made.
static STATE: RawSpinLockIrq<State> = unsafe {
    RawSpinLockIrq::new_static(State {
        sites: [const { None }; MAX_SITES],
        armed: 0,
        pool: Pool::new(),
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

/// `alloc_tag_add` while something is armed: a record for an armed site,
/// else the plain charge. `r` is the reference of an object being
/// allocated, `tag` the allocating site's, if any.
#[inline(always)]
pub(super) fn add(r: &TagRef, tag: Option<&AllocTag>, bytes: usize) {
    if let Some(t) = tag {
        if t.capture_armed() && record_add(r, t, bytes) {
            return;
        }
    }
    r.charge_or_warn(tag, bytes);
}

/// Charges `bytes` to `tag` through a record from the pool; false if it
/// made none (the caller then charges as usual). Never allocates.
#[inline(never)]
fn record_add(r: &TagRef, tag: &AllocTag, bytes: usize) -> bool {
    let mut entries = MaybeUninit::uninit();
    // The stack starts at the hook: this function, the entry point and the
    // helper are left out.
    let stack = capture_c::save_stack(&mut entries, CAPTURE_FRAMES);
    let mut g = Guard::lock();
    let st = g.state();
    // Disarmed meanwhile: charged as usual.
    let recorded = match st.find(tag) {
        Some(slot) => st.record(slot, stack, r, tag, bytes),
        None => false,
    };
    let refill = st.wants_refill();
    drop(g);
    if refill {
        capture_c::queue_refill();
    }
    recorded
}

/// `alloc_tag_sub` while something is armed: frees the object's record if
/// it has one, and uncharges as usual. `r` is the reference of an object
/// being freed.
#[inline(always)]
pub(super) fn sub(r: &TagRef, bytes: usize) {
    if r.holds_record() {
        record_sub(r, bytes);
        return;
    }
    r.uncharge(bytes);
}

/// Gives the record `r` holds back to the pool, if it still holds one (a
/// disarm meanwhile rewrote it to the site's tag), and uncharges as usual.
#[inline(never)]
fn record_sub(r: &TagRef, bytes: usize) {
    Guard::lock().state().give_back(r);
    r.uncharge(bytes);
}

/// The tag of a reference that holds a record (a page's, for
/// `__free_pages()`' tail lookup by a caller that holds the page; any
/// object's, for per-node attribution around a charge or an uncharge): the
/// record's site's tag, or, if a disarm rewrote the reference meanwhile, the
/// tag it holds now.
pub(crate) fn record_tag(r: &TagRef) -> Option<&'static AllocTag> {
    let mut g = Guard::lock();
    let st = g.state();
    if !r.holds_record() {
        return r.tag();
    }
    let held = st.pool.held_by(r)?;
    st.sites
        .get(held.site)
        .and_then(Option::as_ref)
        .map(|s| s.tag)
}

/// A page block is split or migrated: if its reference holds a record, the
/// record goes and the reference holds the site's tag again. The site's
/// totals do not change; the block's bytes leave their stack and count as
/// uncaptured.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
pub(crate) fn release(r: &TagRef) {
    if !r.holds_record() {
        return;
    }
    let mut g = Guard::lock();
    let st = g.state();
    // `None`: disarmed meanwhile.
    if let Some(slot) = st.give_back(r) {
        if let Some(site) = st.sites.get_mut(slot).and_then(Option::as_mut) {
            site.stacks.uncaptured += 1;
        }
    }
}

/// Adds chunks to the pool until `want` records are free (or the pool is
/// at [`MAX_RECORDS`]); `ENOMEM` if a chunk cannot be allocated. May sleep.
pub(super) fn fill_pool(_c: &Control, want: usize) -> Result {
    loop {
        {
            let mut g = Guard::lock();
            let pool = &g.state().pool;
            if pool.nfree() >= want || pool.total() >= MAX_RECORDS {
                return Ok(());
            }
        }
        // Process context (the control mutex is held).
        let chunk = ChunkBox::new()?;
        Guard::lock().state().pool.add_chunk(chunk);
    }
}

/// Frees the pool once nothing is armed and every record is back (as the
/// last disarm leaves it).
pub(super) fn free_pool(_c: &Control) {
    let chunks = {
        let mut g = Guard::lock();
        let st = g.state();
        if st.armed != 0 {
            return;
        }
        st.pool.take_chunks()
    };
    // Freed here, outside the spinlock.
    drop(chunks);
}

/// The pool's refill, from a work item queued by the record path when the
/// pool runs low.
pub(super) fn refill() {
    let c = Control::lock();
    let armed = Guard::lock().state().armed;
    // Without memory the record path counts uncaptured allocations and
    // queues the next refill when it next runs low.
    static WARNED: AtomicBool = AtomicBool::new(false);
    if armed != 0 && fill_pool(&c, REFILL_TARGET).is_err() && !WARNED.swap(true, Ordering::Relaxed)
    {
        pr_warn!("alloc_tag: capture: no memory to refill the record pool\n");
    }
    Guard::lock().state().refill_queued = false;
}
