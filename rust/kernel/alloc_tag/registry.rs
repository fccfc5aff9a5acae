// SPDX-License-Identifier: GPL-2.0

//! The code-tag registry: the `alloc_tags` sections of vmlinux and of every
//! loaded module, in one order that readers walk.
//!
//! vmlinux's section is always first. A module's section is added when the
//! module is loaded (`codetag_load_module()`, called by `kernel/module`) and
//! dropped when it is unloaded (`codetag_unload_module()`). A read-write
//! semaphore keeps the list stable for readers; the allocation hot paths never
//! touch the registry.

use super::AllocTag;
use crate::{alloc::flags::GFP_KERNEL, alloc::KVec, bindings, c_str, pr_warn, types::Opaque};
use core::cell::UnsafeCell;
use core::mem::size_of;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

extern "C" {
    static __start_alloc_tags: [bindings::alloc_tag; 0];
    static __stop_alloc_tags: [bindings::alloc_tag; 0];
}

/// One module's tags: `len` consecutive `alloc_tag`s from `start`, and the
/// first of their compressed page-tag indexes if they got any.
#[derive(Clone, Copy)]
struct Segment {
    module: *mut bindings::module,
    start: *mut bindings::alloc_tag,
    len: usize,
    page_ids: Option<u32>,
}

impl Segment {
    fn tag(&self, i: usize) -> &'static AllocTag {
        // SAFETY: `i < len` (callers), and the segment's tags are valid while
        // it is registered, which the read lock the callers hold guarantees.
        unsafe { AllocTag::from_raw(self.start.add(i)) }
    }
}

/// The registry.
///
/// # Invariants
///
/// `modules` is only read under `lock` held for reading and only changed
/// under `lock` held for writing; `lock` is initialised before `READY` is set.
struct Registry {
    lock: Opaque<bindings::rw_semaphore>,
    modules: UnsafeCell<KVec<Segment>>,
}

// SAFETY: all shared access to `modules` is serialised by `lock` (invariant).
unsafe impl Sync for Registry {}

static REGISTRY: Registry = Registry {
    lock: Opaque::uninit(),
    modules: UnsafeCell::new(KVec::new()),
};
static READY: AtomicBool = AtomicBool::new(false);

/// Bumped whenever the set of tags changes: a module with tags loaded or
/// unloaded. Changed under the write lock, read without it.
static CONTENT_ID: AtomicU64 = AtomicU64::new(0);

/// The content id of the tag set (`ALLOCINFO_IOC_CONTENT_ID`): it differs
/// between any two reads with a module load or unload between them.
pub fn content_id() -> u64 {
    CONTENT_ID.load(Ordering::Acquire)
}

/// Counters that module tags are pointed at when their module goes away with
/// allocations still charged to them (a `__percpu` pointer, NULL until init).
static ORPHAN_COUNTERS: AtomicPtr<bindings::alloc_tag_counters> =
    AtomicPtr::new(core::ptr::null_mut());

fn vmlinux() -> Segment {
    // The linker defines both symbols around the section; only their
    // addresses are taken.
    let (start, stop) = (
        core::ptr::addr_of!(__start_alloc_tags).cast::<bindings::alloc_tag>(),
        core::ptr::addr_of!(__stop_alloc_tags).cast::<bindings::alloc_tag>(),
    );
    Segment {
        module: core::ptr::null_mut(),
        start: start.cast_mut(),
        len: (stop as usize - start as usize) / size_of::<bindings::alloc_tag>(),
        page_ids: None,
    }
}

/// vmlinux's tags: the first and their number. Usable from early boot.
#[inline(always)]
pub(crate) fn vmlinux_tags() -> (*mut bindings::alloc_tag, usize) {
    let v = vmlinux();
    (v.start, v.len)
}

/// Sets the registry up; called once from the profiler's initcall.
pub(crate) fn init() {
    // SAFETY: called once, before any reader or module hook can take the
    // lock (`READY` is still false); the class key is static.
    unsafe {
        bindings::__init_rwsem(
            REGISTRY.lock.get(),
            c_str!("alloc_tag_registry").as_char_ptr(),
            crate::static_lock_class!().as_ptr(),
        )
    };
    // SAFETY: `pcpu_alloc_noprof` may be called from an initcall.
    let orphan = unsafe {
        bindings::pcpu_alloc_noprof(
            size_of::<bindings::alloc_tag_counters>(),
            8,
            false,
            GFP_KERNEL.as_raw(),
        )
    };
    ORPHAN_COUNTERS.store(orphan.cast(), Ordering::Relaxed);
    // INVARIANT: the lock is initialised.
    READY.store(true, Ordering::Release);
}

/// The registry, held for reading.
///
/// # Invariants
///
/// The registry's lock is held for reading while this exists.
pub struct ReadGuard {
    _not_send: core::marker::PhantomData<*mut ()>,
}

/// Takes the registry for reading (may sleep). `None` before init.
pub fn read() -> Option<ReadGuard> {
    if !READY.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: the lock is initialised (`READY`).
    unsafe { bindings::down_read(REGISTRY.lock.get()) };
    // INVARIANT: just taken.
    Some(ReadGuard {
        _not_send: core::marker::PhantomData,
    })
}

/// Takes the registry for reading if that needs no waiting (never sleeps).
pub fn try_read() -> Option<ReadGuard> {
    if !READY.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: the lock is initialised (`READY`).
    if unsafe { bindings::down_read_trylock(REGISTRY.lock.get()) } == 0 {
        return None;
    }
    // INVARIANT: just taken.
    Some(ReadGuard {
        _not_send: core::marker::PhantomData,
    })
}

impl Drop for ReadGuard {
    fn drop(&mut self) {
        // SAFETY: held for reading (invariant).
        unsafe { bindings::up_read(REGISTRY.lock.get()) };
    }
}

impl ReadGuard {
    /// A guard for a read hold taken earlier by [`read`] whose guard was
    /// forgotten (a hold that spans C callbacks, such as seq_file's
    /// `start`..`stop`).
    ///
    /// # Safety
    ///
    /// The caller holds the registry for reading and hands that hold to the
    /// returned guard, which releases it when dropped (unless forgotten).
    pub unsafe fn assume_held() -> ReadGuard {
        // INVARIANT: the caller holds the lock for reading.
        ReadGuard {
            _not_send: core::marker::PhantomData,
        }
    }

    fn modules(&self) -> &[Segment] {
        // SAFETY: the lock is held for reading (invariant), so no writer
        // changes the vector while the borrow lives.
        unsafe { &*REGISTRY.modules.get() }
    }

    /// The tag at position `pos` of the walk (vmlinux first, then modules in
    /// load order), found in O(number of modules).
    pub fn tag_at(&self, mut pos: usize) -> Option<&'static AllocTag> {
        let v = vmlinux();
        if pos < v.len {
            return Some(v.tag(pos));
        }
        pos -= v.len;
        for seg in self.modules() {
            if pos < seg.len {
                return Some(seg.tag(pos));
            }
            pos -= seg.len;
        }
        None
    }

    /// Every tag, in walk order.
    pub fn tags(&self) -> impl Iterator<Item = &'static AllocTag> + '_ {
        core::iter::once(vmlinux())
            .chain(self.modules().iter().copied())
            .flat_map(|seg| (0..seg.len).map(move |i| seg.tag(i)))
    }

    /// The number of tags.
    pub fn len(&self) -> usize {
        vmlinux().len + self.modules().iter().map(|s| s.len).sum::<usize>()
    }

    /// Whether there are no tags at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Exclusive access for module load and unload.
struct WriteGuard;

impl WriteGuard {
    fn new() -> Option<WriteGuard> {
        if !READY.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the lock is initialised (`READY`).
        unsafe { bindings::down_write(REGISTRY.lock.get()) };
        Some(WriteGuard)
    }

    fn modules(&mut self) -> &mut KVec<Segment> {
        // SAFETY: the lock is held for writing, so this is the only access.
        unsafe { &mut *REGISTRY.modules.get() }
    }
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        // SAFETY: held for writing since `new`.
        unsafe { bindings::up_write(REGISTRY.lock.get()) };
    }
}

/// `mod`'s tag section, if it has tags.
///
/// # Safety
///
/// `module` must be a live module.
unsafe fn module_segment(module: *mut bindings::module) -> Option<Segment> {
    let find = |name: &crate::str::CStr| {
        // SAFETY: the module is live (caller); the lookup walks its symbol
        // table, which needs preemption off.
        unsafe {
            bindings::preempt_disable();
            let v = bindings::find_kallsyms_symbol_value(module, name.as_char_ptr());
            bindings::preempt_enable();
            v as usize
        }
    };
    let start = find(c_str!("__start_alloc_tags"));
    let stop = find(c_str!("__stop_alloc_tags"));
    if start == 0 || stop <= start {
        return None;
    }
    Some(Segment {
        module,
        start: start as *mut bindings::alloc_tag,
        len: (stop - start) / size_of::<bindings::alloc_tag>(),
        page_ids: None,
    })
}

/// Registers a newly loaded module's tags.
///
/// # Safety
///
/// `module` is NULL or a module that has finished loading and is not yet
/// being unloaded.
#[no_mangle]
pub unsafe extern "C" fn codetag_load_module(module: *mut bindings::module) {
    if module.is_null() {
        return;
    }
    // SAFETY: live module (caller).
    let Some(mut seg) = (unsafe { module_segment(module) }) else {
        return;
    };
    let Some(mut w) = WriteGuard::new() else {
        return;
    };
    // SAFETY: the module's tags, not yet used (the module's init has not
    // run); the registry is held for writing.
    seg.page_ids = unsafe { super::compressed::assign_module_ids(seg.start, seg.len) };
    CONTENT_ID.fetch_add(1, Ordering::Release);
    if w.modules().push(seg, GFP_KERNEL).is_err() {
        if let Some(base) = seg.page_ids {
            super::compressed::release_module_ids(base, seg.len);
            for i in 0..seg.len {
                seg.tag(i).set_stored_index(0);
            }
        }
        pr_warn!(
            "alloc_tag: no memory to register the {} tags of a module; they are not reported\n",
            seg.len
        );
    }
}

/// Drops an unloading module's tags. Reports every tag that still has
/// allocations charged and returns false then, so that the module loader
/// keeps the module's data (where the tags live) for the references to them.
///
/// # Safety
///
/// `module` is NULL or a module being unloaded whose code no longer runs.
#[no_mangle]
pub unsafe extern "C" fn codetag_unload_module(module: *mut bindings::module) -> bool {
    if module.is_null() {
        return true;
    }
    // Let the module's pending kfree_rcu() frees land first.
    // SAFETY: no preconditions; may sleep, as module unload may.
    unsafe { bindings::alloc_tag_kvfree_rcu_barrier() };

    let Some(mut w) = WriteGuard::new() else {
        return true;
    };
    let Some(idx) = w.modules().iter().position(|s| s.module == module) else {
        return true;
    };
    let seg = w.modules()[idx];
    let orphan = ORPHAN_COUNTERS.load(Ordering::Relaxed);
    let mut clean = true;
    for i in 0..seg.len {
        let tag = seg.tag(i);
        let c = tag.read();
        if c.bytes == 0 && c.calls == 0 {
            continue;
        }
        clean = false;
        pr_warn!(
            "alloc_tag: {}:{} [{}] func:{} has {} bytes in {} allocations alive at module unload\n",
            tag.file(),
            tag.line(),
            tag.module_name().unwrap_or(c_str!("?")),
            tag.function(),
            c.bytes,
            c.calls
        );
        if !orphan.is_null() {
            // SAFETY: the orphan counters are never freed. The module's own
            // per-CPU counters are freed with the module; pointing the tag
            // away from them keeps the later frees of these allocations off
            // freed memory.
            unsafe { tag.redirect_counters(orphan) };
        }
    }
    if clean {
        if let Some(base) = seg.page_ids {
            super::compressed::release_module_ids(base, seg.len);
        }
    }
    CONTENT_ID.fetch_add(1, Ordering::Release);
    let mods = w.modules();
    let len = mods.len();
    mods.as_mut_slice().copy_within(idx + 1.., idx);
    // SAFETY: `idx < len`; the slots from `idx` on were shifted down by one,
    // so the first `len - 1` are initialised, and `Segment` is `Copy`.
    unsafe { mods.set_len(len - 1) };
    clean
}
