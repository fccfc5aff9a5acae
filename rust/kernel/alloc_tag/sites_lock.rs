// SPDX-License-Identifier: GPL-2.0

//! The locks of the Rust call-site tags, and the data the sites lock
//! serialises without holding it.
//!
//! The sites lock is a raw spinlock taken with interrupts off: sites
//! register from any context but NMI. What it serialises lives in the
//! sites' blocks, beside atomics that lock-free readers share, so it holds
//! no data of its own; [`SitesLocked`] is that data, reached with the
//! lock's guard ([`SitesLock`]) in hand, as [`crate::sync::LockedBy`] with
//! the one sites lock for owner.

use crate::{
    c_str,
    sync::lock::{mutex::MutexBackend, raw_spinlock::RawSpinLockIrqBackend, Guard},
    sync::{Mutex, RawSpinLockIrq},
};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// The sites lock.
// SAFETY: `init` sets it up first; nothing takes it before `init` has
// published the Rust sites' table or a block (every user needs one of
// them).
static SITES_LOCK: RawSpinLockIrq<()> = unsafe { RawSpinLockIrq::new_static(()) };

/// Adding blocks, one caller at a time (the work item, tests); process
/// context.
// SAFETY: `init` sets it up before anything can grow the pool: the Rust
// sites' `init` itself, then the work item and tests, which run after the
// initcalls.
static GROW_LOCK: Mutex<()> = unsafe { Mutex::new_static(()) };

/// Sets both locks up. Once, from the profiler's initcall, before any
/// other use of them.
pub(super) fn init() {
    // SAFETY: once (the initcall), before any user of either lock (their
    // safety comments).
    unsafe {
        SITES_LOCK.init_static(c_str!("alloc_tag_sites"), crate::static_lock_class!());
        GROW_LOCK.init_static(c_str!("alloc_tag_sites_grow"), crate::static_lock_class!());
    }
}

/// The sites lock, held (interrupts off) while this lives.
///
/// The slot and site reads made under each hold are counted (with
/// [`count`]) and the largest count kept: see [`max_lock_hold`].
///
/// # Invariants
///
/// The sites lock is held while this lives. The lock is not recursive, so
/// at most one `SitesLock` lives at a time, and a `&mut SitesLock` is the
/// only reference to it.
pub(super) struct SitesLock {
    _held: Guard<'static, (), RawSpinLockIrqBackend>,
}

impl SitesLock {
    /// Takes the sites lock, spinning with interrupts off.
    pub(super) fn new() -> SitesLock {
        // INVARIANT: the guard holds the lock until it is dropped with this.
        let lock = SitesLock {
            _held: SITES_LOCK.lock(),
        };
        HOLD.work.store(0, Ordering::Relaxed);
        lock
    }
}

impl Drop for SitesLock {
    fn drop(&mut self) {
        let work = HOLD.work.load(Ordering::Relaxed);
        HOLD.max.fetch_max(work, Ordering::Relaxed);
        // The lock is released when `_held` is dropped, after this.
    }
}

/// The grow mutex, held while this lives.
pub(super) struct GrowLock {
    _held: Guard<'static, (), MutexBackend>,
}

impl GrowLock {
    /// Takes the grow mutex. Process context; may sleep.
    pub(super) fn new() -> GrowLock {
        GrowLock {
            _held: GROW_LOCK.lock(),
        }
    }
}

/// A `T` only reached under the sites lock, whose guard borrowed shows it
/// held: shared for [`SitesLocked::get`], exclusively for
/// [`SitesLocked::get_mut`].
///
/// # Invariants
///
/// The `T` is only reached through `get` and `get_mut`, so only while a
/// [`SitesLock`] lives, for no longer than it is borrowed.
#[repr(transparent)]
pub(super) struct SitesLocked<T>(UnsafeCell<T>);

// SAFETY: the `T` is reached from one CPU at a time, the holder of the
// sites lock (invariant), which may be any: hence `T: Send`.
unsafe impl<T: Send> Sync for SitesLocked<T> {}

impl<T> SitesLocked<T> {
    /// Wraps `value`.
    pub(super) const fn new(value: T) -> Self {
        SitesLocked(UnsafeCell::new(value))
    }

    /// The `T`, for as long as the held lock is borrowed, shared.
    #[inline]
    pub(super) fn get<'a>(&'a self, _lock: &'a SitesLock) -> &'a T {
        // SAFETY: the lock is held while `_lock` lives and there is one
        // `SitesLock` (its invariants): while it is borrowed shared for
        // `'a`, no `get_mut` can borrow it exclusively, so no mutable
        // reference to any `SitesLocked` exists (invariant).
        unsafe { &*self.0.get() }
    }

    /// The `T`, for as long as the held lock is borrowed, exclusively.
    #[inline]
    pub(super) fn get_mut<'a>(&'a self, _lock: &'a mut SitesLock) -> &'a mut T {
        // SAFETY: the lock is held while `_lock` lives and a `&mut
        // SitesLock` is the only reference to the one `SitesLock` (its
        // invariants): for `'a`, no other reference to any `SitesLocked`'s
        // data can be made (invariant).
        unsafe { &mut *self.0.get() }
    }
}

/// How long the sites lock is held, in slot and site reads: what the tests
/// check the chunked loops against ([`max_lock_hold`]). Kept apart from the
/// sites' state, which it only observes.
struct LockHold {
    /// Reads under the current hold; only its holder touches it.
    work: AtomicUsize,
    /// The most reads made under one hold so far.
    max: AtomicUsize,
}

static HOLD: LockHold = LockHold {
    work: AtomicUsize::new(0),
    max: AtomicUsize::new(0),
};

/// Counts `n` slot or site reads under the sites lock, which is held.
#[inline(always)]
pub(super) fn count(n: usize) {
    // Only the lock's holder writes it: no read-modify-write needed.
    let w = HOLD.work.load(Ordering::Relaxed);
    HOLD.work.store(w + n, Ordering::Relaxed);
}

/// The most slot and site reads the core has made under one hold of the
/// sites lock (interrupts off) since boot. See
/// `rust_sites::LOCK_HOLD_BOUND`. For tests.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
pub(super) fn max_lock_hold() -> usize {
    HOLD.max.load(Ordering::Relaxed)
}
