// SPDX-License-Identifier: GPL-2.0

//! A raw spinlock taken with interrupts disabled.
//!
//! This module allows Rust code to use the kernel's `raw_spinlock_t` with
//! `raw_spin_lock_irqsave()`: a lock that never sleeps, even on `PREEMPT_RT`, and that may be
//! taken from any context but NMI, interrupt handlers included.

/// A raw spinlock held with local interrupts disabled, their previous state restored on unlock.
///
/// Its critical sections must be short and must not sleep: on `PREEMPT_RT` it stays a spinning
/// lock with interrupts off.
///
/// # Examples
///
/// ```
/// use kernel::sync::RawSpinLockIrq;
///
/// // SAFETY: `init_static` runs before the first `lock`.
/// static COUNT: RawSpinLockIrq<u64> = unsafe { RawSpinLockIrq::new_static(0) };
///
/// // SAFETY: once, before any other use.
/// unsafe { COUNT.init_static(kernel::c_str!("count"), kernel::static_lock_class!()) };
/// *COUNT.lock() += 1;
/// assert_eq!(*COUNT.lock(), 1);
/// ```
pub type RawSpinLockIrq<T> = super::Lock<T, RawSpinLockIrqBackend>;

/// The backend of [`RawSpinLockIrq`]: the guard keeps the saved interrupt flags.
pub struct RawSpinLockIrqBackend;

// SAFETY: `raw_spinlock_t` gives mutual exclusion between `lock` and `unlock`; `relock` is the
// default, which calls `lock` again and keeps the flags it returns.
unsafe impl super::Backend for RawSpinLockIrqBackend {
    type State = bindings::raw_spinlock_t;
    type GuardState = crate::ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const crate::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: `ptr` is valid for writes, `name` and `key` for reads indefinitely (the
        // function's safety requirements).
        unsafe { bindings::raw_spin_lock_init_key(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: `ptr` is valid and initialised (the function's safety requirements).
        unsafe { bindings::raw_spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: the caller owns the lock, taken by `lock` with these flags.
        unsafe { bindings::raw_spin_unlock_irqrestore(ptr, *flags) }
    }
}
