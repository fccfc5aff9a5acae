// SPDX-License-Identifier: GPL-2.0

//! The tag of one allocation call site: [`AllocTag`], its per-CPU counters
//! and its code tag's fields.
//!
//! C header: [`include/linux/alloc_tag.h`](srctree/include/linux/alloc_tag.h)
//!
//! Counters are per-CPU `{bytes, calls}` pairs updated without locks, with one
//! segment-relative instruction each on x86_64 ([`crate::percpu`]). Readers sum
//! them over the possible CPUs.

#[cfg(CONFIG_X86_64)]
use crate::percpu::percpu_seg;
use crate::{bindings, percpu::PerCpuPtr, str::CStr, types::Opaque};
use core::mem::{offset_of, size_of};
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// `CODETAG_FLAG_CAPTURE` of include/linux/codetag.h (`BIT(1)`, which
/// bindgen does not evaluate; rust/helpers/alloc_tag.c checks the value).
pub(crate) const CODETAG_FLAG_CAPTURE: u32 = 1 << 1;

/// Where the two counters sit in `struct alloc_tag_counters`.
const BYTES_OFF: usize = offset_of!(bindings::alloc_tag_counters, bytes);
const CALLS_OFF: usize = offset_of!(bindings::alloc_tag_counters, calls);

/// Where a tag keeps its compressed page-tag index in its code tag's
/// `flags` (bits 8 to 31; the flags proper are below).
pub(crate) const STORED_INDEX_SHIFT: u32 = 8;

extern "C" {
    static __start_alloc_tags: [bindings::alloc_tag; 0];
    static __stop_alloc_tags: [bindings::alloc_tag; 0];
}

/// vmlinux's tags (its `alloc_tags` section): the first and their number.
/// Usable from early boot.
#[inline(always)]
pub(crate) fn vmlinux_tags() -> (*mut bindings::alloc_tag, usize) {
    // The linker defines both symbols around the section; only their
    // addresses are taken.
    let (start, stop) = (
        core::ptr::addr_of!(__start_alloc_tags).cast::<bindings::alloc_tag>(),
        core::ptr::addr_of!(__stop_alloc_tags).cast::<bindings::alloc_tag>(),
    );
    (
        start.cast_mut(),
        (stop as usize - start as usize) / size_of::<bindings::alloc_tag>(),
    )
}

/// The counters of one tag, summed over all CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Bytes currently allocated from the call site.
    pub bytes: i64,
    /// Allocations from the call site that are still alive.
    pub calls: u64,
}

/// The per-CPU counters of a tag defined in Rust, a `DEFINE_PER_CPU()` of
/// Rust: a `static` of this type placed in `.data..percpu` on SMP and in
/// plain `.data` on UP (as C's `PER_CPU_BASE_SECTION`), whose address is the
/// `__percpu` pointer.
#[repr(transparent)]
pub(crate) struct PerCpuCounters(Opaque<bindings::alloc_tag_counters>);

// SAFETY: only ever reached through its per-CPU address, with per-CPU
// operations, as any tag's counters.
unsafe impl Sync for PerCpuCounters {}

impl PerCpuCounters {
    /// Zeroed counters.
    pub(crate) const fn new() -> Self {
        PerCpuCounters(Opaque::new(bindings::alloc_tag_counters {
            bytes: 0,
            calls: 0,
        }))
    }
}

/// The tag of one allocation call site (`struct alloc_tag`).
///
/// Users outside the profiler read a tag's line ([`AllocTag::line`]) and
/// counters ([`AllocTag::read`], [`AllocTag::is_accurate`]). Only the
/// profiler charges and marks it, and reads its names, through a hold of
/// the registry that keeps them ([`HeldTag`]).
///
/// # Invariants
///
/// The wrapped tag lives in vmlinux's `alloc_tags` section, in a module tag
/// area or in a block of Rust call-site tags, which outlive every reference
/// to the tag (see [`super::registry`]), and `counters` is a live `__percpu`
/// pointer whenever the tag can be reached. Its code tag fields other than
/// `flags` never change, but for the strings of a module's tags, which the
/// registry points, under its write lock, at copies of the same text when
/// the module goes (so readers of the strings hold the registry: they read
/// them through a [`HeldTag`]), and for
/// the `filename` of a Rust call-site tag, which is set and cleared
/// atomically as the tag gets and loses its site. `flags` is only changed
/// atomically.
#[repr(transparent)]
pub struct AllocTag(Opaque<bindings::alloc_tag>);

// SAFETY: the code tag is immutable and the counters are only updated through
// per-CPU operations, which are safe from any CPU.
unsafe impl Sync for AllocTag {}

impl AllocTag {
    /// A tag of the Rust core's own, for a `static` in the `alloc_tags`
    /// section: `file` (NUL-terminated, from the source tree's top) and
    /// `line` name its row, `function` its function; `counters` must be in
    /// `.data..percpu` on SMP, plain `.data` on UP ([`PerCpuCounters`]).
    pub(crate) const fn new_static(
        file: &'static str,
        line: u32,
        function: &'static core::ffi::CStr,
        flags: u32,
        counters: &'static PerCpuCounters,
    ) -> AllocTag {
        AllocTag(Opaque::new(bindings::alloc_tag {
            ct: bindings::codetag {
                flags,
                lineno: line,
                modname: core::ptr::null(),
                function: function.as_ptr().cast(),
                filename: file.as_ptr().cast(),
            },
            counters: counters.0.get(),
            #[cfg(CONFIG_MEM_ALLOC_PROFILING_NUMA)]
            nodes: core::ptr::null_mut(),
        }))
    }

    /// Borrows a tag.
    ///
    /// # Safety
    ///
    /// `ptr` must point to an `alloc_tag` that satisfies the type invariants
    /// for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::alloc_tag) -> &'a AllocTag {
        // SAFETY: transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// Borrows a tag, `None` for NULL (a hook's `current->alloc_tag`).
    ///
    /// # Safety
    ///
    /// `ptr` is NULL or as for [`AllocTag::from_raw`].
    #[inline(always)]
    pub(crate) unsafe fn from_nullable<'a>(ptr: *mut bindings::alloc_tag) -> Option<&'a AllocTag> {
        // SAFETY: transparent wrapper; validity of a non-NULL `ptr` is the
        // caller's promise.
        unsafe { ptr.cast::<AllocTag>().as_ref() }
    }

    /// Borrows the tag whose code tag is `ct`.
    ///
    /// # Safety
    ///
    /// `ct` must be the `ct` field of an `alloc_tag` satisfying the type
    /// invariants for `'a`.
    #[inline]
    pub(crate) unsafe fn from_codetag<'a>(ct: *mut bindings::codetag) -> &'a AllocTag {
        // SAFETY: `ct` is the `ct` field of an `alloc_tag` (caller), so
        // stepping back by the field's offset stays inside that tag.
        let tag = unsafe { crate::container_of!(ct, bindings::alloc_tag, ct) };
        // SAFETY: `tag` is the `alloc_tag` around `ct`, valid for `'a` (caller).
        unsafe { Self::from_raw(tag.cast_mut()) }
    }

    /// The raw tag.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::alloc_tag {
        self.0.get()
    }

    /// The code tag, as stored in tag references.
    #[inline]
    pub(crate) fn codetag(&self) -> *mut bindings::codetag {
        // SAFETY: projecting a field of a valid tag.
        unsafe { core::ptr::addr_of_mut!((*self.as_raw()).ct) }
    }

    #[inline(always)]
    fn counters(&self) -> PerCpuPtr<bindings::alloc_tag_counters> {
        // SAFETY: the tag is valid (invariant); `counters` does not change
        // while anything can be charged to the tag.
        let ptr = unsafe { (*self.as_raw()).counters };
        // SAFETY: `counters` is a live `__percpu` pointer (invariant).
        unsafe { PerCpuPtr::from_raw(ptr) }
    }

    #[inline(always)]
    fn bytes_ptr(&self) -> PerCpuPtr<u64> {
        // SAFETY: `bytes` is a `u64` field of `alloc_tag_counters`.
        unsafe {
            self.counters()
                .field(offset_of!(bindings::alloc_tag_counters, bytes))
        }
    }

    #[inline(always)]
    fn calls_ptr(&self) -> PerCpuPtr<u64> {
        // SAFETY: `calls` is a `u64` field of `alloc_tag_counters`.
        unsafe {
            self.counters()
                .field(offset_of!(bindings::alloc_tag_counters, calls))
        }
    }

    /// Counts one allocation of `bytes`: `bytes` added to the running CPU's
    /// `bytes`, one to its `calls` (modulo 2^64).
    ///
    /// On x86_64 the counters' pointer is read once and each update is one
    /// segment-relative `add` that preemption or an interrupt cannot split,
    /// so both reach the same CPU's copy with neither toggled.
    #[inline(always)]
    pub(crate) fn charge(&self, bytes: usize) {
        let c = self.counters().as_raw();
        #[cfg(CONFIG_X86_64)]
        // SAFETY: `c` is a live `__percpu` pointer to this tag's counters
        // (`counters`), whose `u64` fields `bytes` and `calls` are at
        // `BYTES_OFF` and `CALLS_OFF`; relative to the per-CPU segment on
        // SMP, `[c + off]` is the running CPU's copy. Only those two `u64`s
        // and the flags change.
        unsafe {
            core::arch::asm!(
                concat!("add qword ptr ", percpu_seg!(), "[{c} + {bytes_off}], {bytes}"),
                concat!("add qword ptr ", percpu_seg!(), "[{c} + {calls_off}], 1"),
                c = in(reg) c,
                bytes = in(reg) bytes as u64,
                bytes_off = const BYTES_OFF,
                calls_off = const CALLS_OFF,
                options(nostack),
            );
        }
        #[cfg(not(CONFIG_X86_64))]
        {
            let _ = c;
            self.bytes_ptr().this_cpu_add(bytes as u64);
            self.calls_ptr().this_cpu_add(1);
        }
    }

    /// Uncounts one allocation of `bytes`; the counterpart of
    /// [`AllocTag::charge`].
    #[inline(always)]
    pub(crate) fn uncharge(&self, bytes: usize) {
        let c = self.counters().as_raw();
        #[cfg(CONFIG_X86_64)]
        // SAFETY: as in `charge`, with `sub` for `add`.
        unsafe {
            core::arch::asm!(
                concat!("sub qword ptr ", percpu_seg!(), "[{c} + {bytes_off}], {bytes}"),
                concat!("sub qword ptr ", percpu_seg!(), "[{c} + {calls_off}], 1"),
                c = in(reg) c,
                bytes = in(reg) bytes as u64,
                bytes_off = const BYTES_OFF,
                calls_off = const CALLS_OFF,
                options(nostack),
            );
        }
        #[cfg(not(CONFIG_X86_64))]
        {
            let _ = c;
            self.bytes_ptr().this_cpu_sub(bytes as u64);
            self.calls_ptr().this_cpu_sub(1);
        }
    }

    /// Counts one more live piece (a split allocation), bytes unchanged.
    #[inline(always)]
    pub(crate) fn add_call(&self) {
        self.calls_ptr().this_cpu_add(1);
    }

    /// Uncounts `bytes` without a call (tail pages freed apart from the head).
    #[inline(always)]
    pub(crate) fn sub_bytes(&self, bytes: usize) {
        self.bytes_ptr().this_cpu_sub(bytes as u64);
    }

    /// The counters summed over all possible CPUs.
    ///
    /// One pass over the possible CPUs reads both counters of each: a tag
    /// with nothing allocated costs two loads and two adds per CPU, and no
    /// call.
    pub fn read(&self) -> Counters {
        let counters = self.counters();
        let (mut bytes, mut calls) = (0u64, 0u64);
        for cpu in crate::percpu::possible_cpus() {
            let c = counters.cpu_ptr(cpu);
            // SAFETY: `c` is `cpu`'s copy of the live counters (invariant);
            // volatile reads of aligned machine words are not torn, and
            // racing updates only make the sum some interleaving of them.
            unsafe {
                bytes = bytes.wrapping_add(core::ptr::read_volatile(
                    core::ptr::addr_of!((*c).bytes).cast::<u64>(),
                ));
                calls = calls.wrapping_add(core::ptr::read_volatile(
                    core::ptr::addr_of!((*c).calls).cast::<u64>(),
                ));
            }
        }
        Counters {
            bytes: bytes as i64,
            calls,
        }
    }

    /// Calls `f` with each possible CPU's number and its two counters
    /// (`bytes`, `calls`), read as [`AllocTag::read`] reads them.
    pub(crate) fn for_each_cpu(&self, mut f: impl FnMut(u32, u64, u64)) {
        let counters = self.counters();
        for cpu in crate::percpu::possible_cpus() {
            let c = counters.cpu_ptr(cpu);
            // SAFETY: as in `read`.
            let (b, n) = unsafe {
                (
                    core::ptr::read_volatile(core::ptr::addr_of!((*c).bytes).cast::<u64>()),
                    core::ptr::read_volatile(core::ptr::addr_of!((*c).calls).cast::<u64>()),
                )
            };
            f(cpu.id(), b, n);
        }
    }

    /// Whether flag `flag` (one of `CODETAG_FLAG_*`) is set.
    #[inline]
    pub(crate) fn has_flag(&self, flag: u32) -> bool {
        self.flags().load(Ordering::Relaxed) & flag != 0
    }

    /// Sets flag `flag` (one of `CODETAG_FLAG_*`) unless it is set.
    #[inline]
    pub(crate) fn set_flag(&self, flag: u32) {
        if !self.has_flag(flag) {
            self.flags().fetch_or(flag, Ordering::Relaxed);
        }
    }

    #[inline(always)]
    fn flags(&self) -> &AtomicU32 {
        // SAFETY: `flags` is an aligned `u32` of a valid tag that is only
        // changed atomically (invariant).
        unsafe { AtomicU32::from_ptr(core::ptr::addr_of_mut!((*self.codetag()).flags)) }
    }

    /// False once some allocation from this site could not be counted.
    #[inline]
    pub fn is_accurate(&self) -> bool {
        self.flags().load(Ordering::Relaxed) & bindings::CODETAG_FLAG_INACCURATE == 0
    }

    /// Records that some allocation from this site is not in its counts.
    #[inline]
    pub(crate) fn mark_inaccurate(&self) {
        let f = self.flags();
        if f.load(Ordering::Relaxed) & bindings::CODETAG_FLAG_INACCURATE == 0 {
            f.fetch_or(bindings::CODETAG_FLAG_INACCURATE, Ordering::Relaxed);
        }
    }

    /// Context capture is armed for this site (`CODETAG_FLAG_CAPTURE`).
    #[inline(always)]
    pub(crate) fn capture_armed(&self) -> bool {
        self.flags().load(Ordering::Relaxed) & CODETAG_FLAG_CAPTURE != 0
    }

    /// Arms or disarms context capture for this site.
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
    pub(crate) fn set_capture_armed(&self, on: bool) {
        if on {
            self.flags()
                .fetch_or(CODETAG_FLAG_CAPTURE, Ordering::Relaxed);
        } else {
            self.flags()
                .fetch_and(!CODETAG_FLAG_CAPTURE, Ordering::Relaxed);
        }
    }

    /// The compressed page-tag index recorded in the tag (module tags), 0
    /// if none.
    #[inline(always)]
    pub(crate) fn stored_index(&self) -> u32 {
        self.flags().load(Ordering::Relaxed) >> STORED_INDEX_SHIFT
    }

    /// Records the compressed page-tag index `index` (below 2^24) in the
    /// tag, keeping its flags.
    pub(crate) fn set_stored_index(&self, index: u32) {
        let f = self.flags();
        let mut old = f.load(Ordering::Relaxed);
        loop {
            let new = (old & bindings::CODETAG_FLAG_MASK) | (index << STORED_INDEX_SHIFT);
            match f.compare_exchange_weak(old, new, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(cur) => old = cur,
            }
        }
    }

    /// The source line.
    pub fn line(&self) -> u32 {
        // SAFETY: `lineno` of a valid tag never changes (invariant).
        unsafe { (*self.codetag()).lineno }
    }

    /// Whether the tag names a file: C tags always do, a Rust call-site tag
    /// only while it has a site (its `filename`, set last with release).
    #[inline]
    pub fn has_file(&self) -> bool {
        // SAFETY: `filename` is an aligned pointer-sized field of a valid tag,
        // only changed atomically while the tag can be reached (invariant).
        let file = unsafe {
            AtomicPtr::from_ptr(
                core::ptr::addr_of_mut!((*self.codetag()).filename).cast::<*mut u8>(),
            )
        };
        !file.load(Ordering::Acquire).is_null()
    }

    /// Points the tag's names (module, function, file) at `names`.
    ///
    /// # Safety
    ///
    /// The caller holds the registry for writing (every reader of the names
    /// holds it for reading), and each non-NULL name is a NUL-terminated
    /// string that outlives every reader of the tag.
    pub(crate) unsafe fn set_names(&self, names: [*const u8; 3]) {
        let ct = self.codetag();
        // SAFETY: fields of a valid tag (invariant), written with no reader
        // (caller).
        unsafe {
            (*ct).modname = names[0].cast();
            (*ct).function = names[1].cast();
            (*ct).filename = names[2].cast();
        }
    }
}

/// A tag seen through a hold of the registry ([`super::registry`]), which
/// keeps the tag's names in place: the strings of a module's tags are
/// pointed at copies, and the module's freed, only under the registry's
/// write lock, and a Rust call-site tag's file is set or cleared only under
/// it too. Only the registry hands these out, borrowed from its hold; every
/// [`AllocTag`] method is reached through it.
///
/// # Invariants
///
/// A `&'h HeldTag` is a valid [`AllocTag`] whose name fields stay as they
/// are, and point to valid strings (or are NULL), for `'h`.
#[repr(transparent)]
pub(crate) struct HeldTag(AllocTag);

impl core::ops::Deref for HeldTag {
    type Target = AllocTag;

    #[inline(always)]
    fn deref(&self) -> &AllocTag {
        &self.0
    }
}

impl HeldTag {
    /// Sees `tags` through a hold of the registry.
    ///
    /// # Safety
    ///
    /// The registry is held (for reading or writing) for `'h`, or the tags
    /// are out of it and their names owned for `'h` by the caller.
    #[inline(always)]
    pub(crate) unsafe fn from_tags<'h>(tags: &'h [AllocTag]) -> &'h [HeldTag] {
        // INVARIANT: the names stay for `'h` (caller).
        // SAFETY: `HeldTag` is a transparent wrapper of `AllocTag`.
        unsafe { core::slice::from_raw_parts(tags.as_ptr().cast::<HeldTag>(), tags.len()) }
    }

    /// The source file path (empty for a Rust call-site tag without a
    /// site, which is never reported).
    pub(crate) fn file(&self) -> &CStr {
        self.names()[2].unwrap_or(crate::c_str!(""))
    }

    /// The function name.
    pub(crate) fn function(&self) -> &CStr {
        self.names()[1].unwrap_or(crate::c_str!(""))
    }

    /// The module name, `None` for code built into vmlinux.
    pub(crate) fn module_name(&self) -> Option<&CStr> {
        self.names()[0]
    }

    /// The names as C keeps them, for a reader that copies them without
    /// measuring them first: the module (NULL for vmlinux), the function
    /// and the file. Each non-NULL pointer is a NUL-terminated string valid
    /// for the borrow.
    #[inline]
    pub(crate) fn names_raw(&self) -> [*const u8; 3] {
        let ct = self.codetag();
        // SAFETY: reading pointer fields of a valid tag, which stay for the
        // borrow (invariant).
        unsafe {
            [
                (*ct).modname.cast(),
                (*ct).function.cast(),
                (*ct).filename.cast(),
            ]
        }
    }

    /// The names as [`HeldTag::names_raw`] orders them (module, function,
    /// file), each `None` where C has NULL.
    pub(crate) fn names(&self) -> [Option<&CStr>; 3] {
        self.names_raw().map(|p| {
            // SAFETY: a non-NULL name is a NUL-terminated string that stays
            // for the borrow (invariant).
            (!p.is_null()).then(|| unsafe { CStr::from_char_ptr(p.cast()) })
        })
    }
}
