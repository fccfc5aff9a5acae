// SPDX-License-Identifier: GPL-2.0

//! A kernel reader-writer semaphore.
//!
//! This module allows Rust code to use the kernel's `struct rw_semaphore`: [`Lock::lock`] (or
//! [`RwSemaphore::write`]) takes it for writing, with exclusive access to the data;
//! [`RwSemaphore::read`] and [`RwSemaphore::try_read`] take it for reading, shared with other
//! readers. It may sleep: process context only.

use super::{Backend, Lock};
use core::marker::PhantomData;

/// A reader-writer semaphore protecting a `T`.
///
/// # Examples
///
/// ```
/// use kernel::sync::RwSemaphore;
///
/// // SAFETY: `init_static` runs before the first use.
/// static NAMES: RwSemaphore<[u32; 4]> = unsafe { RwSemaphore::new_static([0; 4]) };
///
/// // SAFETY: once, before any other use.
/// unsafe { NAMES.init_static(kernel::c_str!("names"), kernel::static_lock_class!()) };
/// NAMES.write()[1] = 7;
/// let r1 = NAMES.read();
/// let r2 = NAMES.try_read().ok_or(ENOENT)?;
/// assert_eq!(r1[1] + r2[1], 14);
/// # Ok::<(), Error>(())
/// ```
pub type RwSemaphore<T> = Lock<T, RwSemBackend>;

/// The backend of [`RwSemaphore`]; as a [`Backend`], the write side.
pub struct RwSemBackend;

// SAFETY: `down_write()` excludes every other writer and reader until `up_write()`; `relock` is
// the default, `down_write()` again.
unsafe impl Backend for RwSemBackend {
    type State = bindings::rw_semaphore;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const crate::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: `ptr` is valid for writes, `name` and `key` for reads indefinitely (the
        // function's safety requirements).
        unsafe { bindings::__init_rwsem(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: `ptr` is valid and initialised (the function's safety requirements).
        unsafe { bindings::down_write(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: the caller holds the semaphore for writing.
        unsafe { bindings::up_write(ptr) }
    }
}

impl<T: ?Sized> Lock<T, RwSemBackend> {
    /// Takes the semaphore for writing (another name for [`Lock::lock`]).
    #[inline]
    pub fn write(&self) -> super::Guard<'_, T, RwSemBackend> {
        self.lock()
    }
}

impl<T: ?Sized + Sync> Lock<T, RwSemBackend> {
    /// Takes the semaphore for reading, waiting for a writer to finish.
    #[inline]
    pub fn read(&self) -> ReadGuard<'_, T> {
        // SAFETY: the lock's existence (pin-initialised, or `new_static` followed by
        // `init_static`) proves it was initialised.
        unsafe { bindings::down_read(self.state.get()) };
        // INVARIANT: just taken for reading.
        ReadGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    /// Takes the semaphore for reading if that needs no waiting; never sleeps.
    #[inline]
    pub fn try_read(&self) -> Option<ReadGuard<'_, T>> {
        // SAFETY: initialised, as in `read`.
        if unsafe { bindings::down_read_trylock(self.state.get()) } == 0 {
            return None;
        }
        // INVARIANT: just taken for reading.
        Some(ReadGuard {
            lock: self,
            _not_send: PhantomData,
        })
    }
}

/// A hold of an [`RwSemaphore`] for reading, released when dropped.
///
/// `T: Sync` because readers on several CPUs share the data.
///
/// # Invariants
///
/// `lock` is held for reading while this exists.
#[must_use = "the semaphore is released immediately when the guard is unused"]
pub struct ReadGuard<'a, T: ?Sized + Sync> {
    lock: &'a Lock<T, RwSemBackend>,
    _not_send: PhantomData<*mut ()>,
}

// SAFETY: the guard only gives out `&T`, and `T: Sync`.
unsafe impl<T: ?Sized + Sync> Sync for ReadGuard<'_, T> {}

impl<'a, T: ?Sized + Sync> ReadGuard<'a, T> {
    /// A guard for a read hold whose guard was forgotten (`core::mem::forget`): a hold that spans
    /// calls from C, such as a `seq_file`'s `start` to its `stop`.
    ///
    /// # Safety
    ///
    /// The caller holds `lock` for reading and hands that hold over to the guard, which
    /// releases it when dropped.
    pub unsafe fn assume_held(lock: &'a Lock<T, RwSemBackend>) -> Self {
        // INVARIANT: held for reading (the caller).
        ReadGuard {
            lock,
            _not_send: PhantomData,
        }
    }
}

impl<T: ?Sized + Sync> core::ops::Deref for ReadGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: held for reading (invariant): writers are excluded, readers share `&T`, which
        // is sound since `T: Sync`.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized + Sync> Drop for ReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: held for reading (invariant), released once, here.
        unsafe { bindings::up_read(self.lock.state.get()) }
    }
}
