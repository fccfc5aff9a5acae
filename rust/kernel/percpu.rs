// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data: `__percpu` pointers, this-CPU updates and the possible CPUs.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)
//!
//! A `__percpu` pointer is not an address: each CPU reaches its own copy of the
//! object at the pointer plus that CPU's offset. On x86_64 SMP the running
//! CPU's offset is the `gs` segment base, so a this-CPU update is one
//! segment-relative instruction that cannot be split by preemption or an
//! interrupt, and needs neither. On a uniprocessor kernel there is one copy
//! and the pointer is its address: the same instruction without the segment
//! prefix, as C's `__percpu_prefix`. Elsewhere the update goes through the C
//! `this_cpu_add()`.

use crate::bindings;
use core::marker::PhantomData;

/// The segment prefix of a this-CPU memory operand on x86_64: `gs:` on SMP,
/// where the running CPU's per-CPU base is the `gs` base.
#[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
macro_rules! percpu_seg {
    () => {
        "gs:"
    };
}

/// The segment prefix of a this-CPU memory operand on x86_64: none on a
/// uniprocessor kernel, where a `__percpu` pointer is the object's address.
#[cfg(all(CONFIG_X86_64, not(CONFIG_SMP)))]
macro_rules! percpu_seg {
    () => {
        ""
    };
}

/// The segment prefix of a this-CPU memory operand, for code of the crate
/// that writes its own this-CPU instructions.
// Unused until such code is built (memory allocation profiling's counters).
#[cfg(CONFIG_X86_64)]
#[allow(unused_imports)]
pub(crate) use percpu_seg;

/// A `__percpu` pointer to a `T`.
///
/// # Invariants
///
/// The pointer came from a per-CPU allocation or a `DEFINE_PER_CPU` variable,
/// and the per-CPU object stays allocated while this value is used.
#[repr(transparent)]
pub struct PerCpuPtr<T> {
    ptr: *mut T,
    _t: PhantomData<T>,
}

impl<T> Clone for PerCpuPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for PerCpuPtr<T> {}

impl<T> PerCpuPtr<T> {
    /// Wraps a raw `__percpu` pointer.
    ///
    /// # Safety
    ///
    /// `ptr` must be a `__percpu` pointer to a `T` that stays allocated for as
    /// long as the returned value (and its copies) are used.
    #[inline]
    pub const unsafe fn from_raw(ptr: *mut T) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self {
            ptr,
            _t: PhantomData,
        }
    }

    /// The raw `__percpu` pointer.
    #[inline]
    pub fn as_raw(self) -> *mut T {
        self.ptr
    }

    /// The `__percpu` pointer of a field `byte_offset` bytes into `T`.
    ///
    /// # Safety
    ///
    /// `byte_offset` must be the offset of a field of type `U` in `T`.
    #[inline]
    pub unsafe fn field<U>(self, byte_offset: usize) -> PerCpuPtr<U> {
        // INVARIANT: the field lies inside the same per-CPU object, which
        // outlives `self`. `wrapping_add` because a `__percpu` pointer is an
        // offset, not an address inside an allocation.
        PerCpuPtr {
            ptr: self.ptr.cast::<u8>().wrapping_add(byte_offset).cast::<U>(),
            _t: PhantomData,
        }
    }

    /// The address of `cpu`'s copy.
    #[inline]
    pub fn cpu_ptr(self, cpu: Cpu) -> *mut T {
        #[cfg(CONFIG_SMP)]
        {
            // SAFETY: `cpu < nr_cpu_ids <= NR_CPUS` (invariant of `Cpu`), the
            // length of `__per_cpu_offset`, which is set up during early boot
            // and only read after. This is `per_cpu_ptr()` without a call.
            let off = unsafe {
                *core::ptr::addr_of!(bindings::__per_cpu_offset)
                    .cast::<core::ffi::c_ulong>()
                    .add(cpu.0 as usize)
            };
            // `wrapping_add`: a `__percpu` pointer is an offset, not an
            // address inside an allocation.
            self.ptr.cast::<u8>().wrapping_add(off as usize).cast()
        }
        #[cfg(not(CONFIG_SMP))]
        {
            let _ = cpu;
            self.ptr
        }
    }
}

impl PerCpuPtr<u64> {
    /// Adds `val` (modulo 2^64) to the running CPU's copy.
    ///
    /// Safe to call with preemption and interrupts enabled: the update is
    /// a single instruction relative to the CPU's per-CPU base.
    #[inline(always)]
    pub fn this_cpu_add(self, val: u64) {
        #[cfg(CONFIG_X86_64)]
        // SAFETY: by the type invariant `self.ptr` is a `__percpu` pointer to
        // a live `u64`, so `[ptr]` (relative to the per-CPU segment on SMP)
        // is the running CPU's copy; the `add` is
        // one read-modify-write of it that preemption or an interrupt cannot
        // split. It touches only that `u64` and the flags.
        unsafe {
            core::arch::asm!(
                concat!("add qword ptr ", percpu_seg!(), "[{ptr}], {val}"),
                ptr = in(reg) self.ptr,
                val = in(reg) val,
                options(nostack),
            );
        }
        #[cfg(not(CONFIG_X86_64))]
        // SAFETY: `self.ptr` is a `__percpu` pointer to a live `u64` by the
        // type invariant, which is what `this_cpu_add()` needs.
        unsafe {
            bindings::this_cpu_add_u64(self.ptr, val)
        }
    }

    /// Subtracts `val` (modulo 2^64) from the running CPU's copy.
    #[inline(always)]
    pub fn this_cpu_sub(self, val: u64) {
        self.this_cpu_add(val.wrapping_neg());
    }
}

/// The number of CPU ids (`nr_cpu_ids`): every possible CPU's number is below.
#[inline]
pub fn nr_cpu_ids() -> u32 {
    // With one CPU, or the count fixed at build time, `nr_cpu_ids` is the
    // constant `NR_CPUS` in C, not a variable.
    #[cfg(any(not(CONFIG_SMP), CONFIG_FORCE_NR_CPUS))]
    {
        bindings::NR_CPUS
    }
    #[cfg(not(any(not(CONFIG_SMP), CONFIG_FORCE_NR_CPUS)))]
    // SAFETY: `nr_cpu_ids` is set once during early boot and only read after.
    unsafe {
        bindings::nr_cpu_ids
    }
}

/// A possible CPU's number.
///
/// # Invariants
///
/// The number is set in `cpu_possible_mask`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpu(u32);

impl Cpu {
    /// The CPU number.
    #[inline]
    pub fn id(self) -> u32 {
        self.0
    }
}

/// Iterator over the possible CPUs, in ascending order: a walk of the bits
/// of `cpu_possible_mask`, with no call per CPU.
pub struct PossibleCpus {
    /// The index of the mask word `bits` came from.
    word: usize,
    /// The bits of that word not yet returned.
    bits: core::ffi::c_ulong,
}

/// The words of `cpu_possible_mask`.
const MASK_WORDS: usize =
    core::mem::size_of::<bindings::cpumask>() / core::mem::size_of::<core::ffi::c_ulong>();

/// Word `i` (below [`MASK_WORDS`]) of `cpu_possible_mask`.
#[inline(always)]
fn possible_word(i: usize) -> core::ffi::c_ulong {
    // SAFETY: `i < MASK_WORDS` (callers), inside the mask; the mask is set
    // during early boot and only read after.
    unsafe {
        *core::ptr::addr_of!(bindings::__cpu_possible_mask.bits)
            .cast::<core::ffi::c_ulong>()
            .add(i)
    }
}

/// The possible CPUs.
///
/// # Examples
///
/// ```
/// use kernel::percpu::possible_cpus;
///
/// let n = possible_cpus().count();
/// assert!(n >= 1);
/// assert_eq!(possible_cpus().next().map(|c| c.id()), Some(0));
/// ```
#[inline]
pub fn possible_cpus() -> PossibleCpus {
    PossibleCpus {
        word: 0,
        bits: possible_word(0),
    }
}

impl Iterator for PossibleCpus {
    type Item = Cpu;

    #[inline]
    fn next(&mut self) -> Option<Cpu> {
        while self.bits == 0 {
            if self.word + 1 >= MASK_WORDS {
                return None;
            }
            self.word += 1;
            self.bits = possible_word(self.word);
        }
        let bit = self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        let cpu = self.word * core::ffi::c_ulong::BITS as usize + bit;
        if cpu >= nr_cpu_ids() as usize {
            self.bits = 0;
            self.word = MASK_WORDS;
            return None;
        }
        // INVARIANT: a set bit of `cpu_possible_mask` below `nr_cpu_ids`.
        Some(Cpu(cpu as u32))
    }
}
