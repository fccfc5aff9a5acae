// SPDX-License-Identifier: GPL-2.0

//! The code-tag registry: the `alloc_tags` sections of vmlinux and of every
//! loaded module, and the blocks of Rust call-site tags, in one order that
//! readers walk.
//!
//! Each is a segment of consecutive tags; vmlinux's section is always first.
//! A module's tags do not live in the module: the loader asks for a tag area
//! of their own ([`place_module`]), gives the tags their per-CPU counters
//! once relocated ([`module_live`]), and at unload ([`drop_module`]) the
//! tags are detached from the module, which is then freed whole. Detached
//! tags, with copies of their strings, stay reported until nothing is
//! charged to them any more; then the tag area and the counters are freed
//! ([`reclaim`]). A block ([`add_block`]) is reported only for the tags
//! that name a file. A read-write semaphore keeps the list stable for
//! readers; the allocation hot paths never touch the registry.
//!
//! Below it, the compressed page-tag store gives new tags their page-tag
//! indexes and takes them back ([`super::compressed`], called directly).
//! Above it, the registry names none of its users: what they need to hear
//! of (a module going, tags of their own to reclaim) reaches them through
//! the [`Hooks`] given to [`init`].

use super::node;
use super::tag::{vmlinux_tags, AllocTag};
use crate::{
    alloc::flags::GFP_KERNEL,
    alloc::KVVec,
    alloc::KVec,
    bindings, c_str,
    error::{
        code::{EEXIST, EINVAL, ENODEV, ENOMEM},
        Result,
    },
    ffi::c_void,
    pr_err, pr_info, pr_warn,
    str::CStr,
    sync::lock::{
        rwsem::{self, RwSemBackend},
        Guard,
    },
    sync::RwSemaphore,
};
use core::mem::size_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// What the registry tells its users above it, as `struct
/// codetag_type_desc`'s callbacks tell the users of C code tags: only the
/// calls that must go upward. The init file fills it in and gives it to
/// [`init`].
pub(super) struct Hooks {
    /// A module is going (its code no longer runs): its tags elsewhere
    /// (Rust call sites) leave or are detached; returns whether it had any.
    /// Called with the registry held for writing.
    pub module_gone: fn(*mut bindings::module) -> bool,
    /// How many detached tags the users keep outside the segments (read
    /// without any lock; 0 makes [`reclaim`] skip them).
    pub detached: fn() -> usize,
    /// Stops reporting the detached tags with nothing charged; returns how
    /// many. Called with the registry held for writing.
    pub unlist_drained: fn() -> usize,
    /// Makes the tags `unlist_drained` unlisted reusable, once the frees in
    /// flight are past them. No lock held.
    pub free_unlisted: fn(),
}

/// The hooks, from [`init`] on (set before `READY`).
static HOOKS: AtomicPtr<Hooks> = AtomicPtr::new(core::ptr::null_mut());

/// The hooks, once [`init`] gave them.
fn hooks() -> Option<&'static Hooks> {
    let h = HOOKS.load(Ordering::Acquire);
    // SAFETY: `HOOKS` only ever holds NULL or a `&'static Hooks` (`init`).
    (!h.is_null()).then(|| unsafe { &*h })
}

/// Where a module's tags are in their life.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SegmentState {
    /// The tag area is the loader's: no counters yet, not reported.
    Placed,
    /// Counted and reported (vmlinux is always live).
    Live,
    /// The module is gone and allocations are still charged to its tags;
    /// the strings the tags point to are copies in `strings`.
    Detached,
}

/// A hold that keeps the registry's segments in place: the read lock
/// ([`ReadGuard`]), the write lock ([`WriteGuard`]), or a segment taken out
/// and not yet freed ([`Removed`]). Tags borrowed from a [`Segment`] are
/// borrowed from the hold.
trait Held {}

/// One module's tags: `len` consecutive `alloc_tag`s from `start` (for a
/// module, the start of its tag area), and the first of their compressed
/// page-tag indexes if they got any.
///
/// # Invariants
///
/// `start` points to `len` initialised `alloc_tag`s that stay valid while
/// the segment is in the registry and, once taken out, until its
/// [`Removed`] frees them: vmlinux's for good, a module's tag area or a
/// block of Rust call-site tags otherwise. Segments are made only by this
/// file (vmlinux's, [`place_module`], [`add_block`]), so every [`Held`]
/// hold that reaches a segment keeps its tags valid.
#[derive(Clone, Copy)]
struct Segment {
    /// The module while it is loaded; NULL for vmlinux and once detached.
    module: *mut bindings::module,
    start: *mut bindings::alloc_tag,
    len: usize,
    page_ids: Option<u32>,
    state: SegmentState,
    /// The `KVVec<u8>` buffer (pointer, capacity) holding the copied
    /// strings of a detached module, null if none.
    strings: (*mut u8, usize),
    /// A block added by [`add_block`] (Rust call-site tags): always live,
    /// never freed, and only the tags that name a file are reported.
    sparse: bool,
}

impl Segment {
    /// The segment's tags, borrowed from the hold that keeps them.
    fn tags<'h>(&self, _held: &'h impl Held) -> &'h [AllocTag] {
        // SAFETY: `len` valid tags from `start` while `_held` lives
        // (invariant); `AllocTag` is a transparent wrapper of `alloc_tag`.
        unsafe { core::slice::from_raw_parts(self.start.cast::<AllocTag>(), self.len) }
    }

    /// The tags to report: all of them, but for a block only those that
    /// name a file.
    fn reported<'h>(self, held: &'h impl Held) -> impl Iterator<Item = &'h AllocTag> + 'h {
        self.tags(held)
            .iter()
            .filter(move |t| !self.sparse || t.has_file())
    }

    /// How many tags [`Segment::reported`] gives.
    fn reported_len(&self, held: &impl Held) -> usize {
        if self.sparse {
            self.reported(held).count()
        } else {
            self.len
        }
    }

    /// Whether no tag is in use: nothing charged and none armed for
    /// context capture (whose sites point at their tags until disarmed,
    /// which happens under the registry's read lock or without it, never
    /// setting the flag without the read lock). Once a module's code is
    /// gone, only frees (and splits of what is charged) touch its tags, so
    /// the bytes of every CPU can only go down: a sum of zero bytes, read
    /// CPU by CPU, means nothing was charged when the read ended.
    fn drained(&self, held: &impl Held) -> bool {
        self.tags(held).iter().all(|t| {
            let c = t.read();
            c.bytes == 0 && c.calls == 0 && !t.capture_armed()
        })
    }
}

// SAFETY: a segment is addresses and lengths; the tags it points to are
// `AllocTag`s (shared between CPUs by design) and the rest (the tag area,
// the string copies) is only freed by the registry's writer, once the
// segment is out of the registry.
unsafe impl Send for Segment {}

// SAFETY: as for `Send`: a shared segment only gives out its tags.
unsafe impl Sync for Segment {}

// SAFETY: `init` sets the semaphore up before it sets `READY`, and every
// user checks `READY` first.
static REGISTRY: RwSemaphore<KVec<Segment>> = unsafe { RwSemaphore::new_static(KVec::new()) };

/// Set once [`REGISTRY`] is set up.
static READY: AtomicBool = AtomicBool::new(false);

/// Bumped whenever the set of tags changes: a module with tags loaded or
/// unloaded. Changed under the write lock, read without it.
static CONTENT_ID: AtomicU64 = AtomicU64::new(0);

/// The content id of the tag set (`ALLOCINFO_IOC_CONTENT_ID`): it differs
/// between any two reads with a module load or unload between them.
pub(super) fn content_id() -> u64 {
    CONTENT_ID.load(Ordering::Acquire)
}

/// The number of detached modules, so that [`reclaim`] is free without any.
static DETACHED_SEGMENTS: AtomicUsize = AtomicUsize::new(0);

fn vmlinux() -> Segment {
    let (start, len) = vmlinux_tags();
    Segment {
        module: core::ptr::null_mut(),
        start,
        len,
        page_ids: None,
        state: SegmentState::Live,
        strings: (core::ptr::null_mut(), 0),
        sparse: false,
    }
}

/// Sets the registry up, with the hooks that tell its users what happens;
/// called once from the profiler's initcall.
pub(crate) fn init(hooks: &'static Hooks) {
    HOOKS.store(core::ptr::from_ref(hooks).cast_mut(), Ordering::Release);
    // SAFETY: called once, before any reader or module hook can take the
    // semaphore (`READY` is still false).
    unsafe { REGISTRY.init_static(c_str!("alloc_tag_registry"), crate::static_lock_class!()) };
    READY.store(true, Ordering::Release);
}

/// The registry, held for reading.
pub(super) struct ReadGuard(rwsem::ReadGuard<'static, KVec<Segment>>);

/// Takes the registry for reading (may sleep). `None` before init.
pub(super) fn read() -> Option<ReadGuard> {
    READY
        .load(Ordering::Acquire)
        .then(|| ReadGuard(REGISTRY.read()))
}

/// Takes the registry for reading if that needs no waiting (never sleeps).
pub(super) fn try_read() -> Option<ReadGuard> {
    if !READY.load(Ordering::Acquire) {
        return None;
    }
    REGISTRY.try_read().map(ReadGuard)
}

impl Held for ReadGuard {}

impl ReadGuard {
    /// A guard for a read hold taken earlier by [`read`] whose guard was
    /// forgotten (a hold that spans C callbacks, such as seq_file's
    /// `start`..`stop`).
    ///
    /// # Safety
    ///
    /// The caller holds the registry for reading and hands that hold to the
    /// returned guard, which releases it when dropped (unless forgotten).
    pub(super) unsafe fn assume_held() -> ReadGuard {
        // SAFETY: the caller holds the registry for reading and hands the
        // hold over.
        ReadGuard(unsafe { rwsem::ReadGuard::assume_held(&REGISTRY) })
    }

    /// The reported module segments (live and detached), in load order.
    fn modules(&self) -> impl Iterator<Item = &Segment> + '_ {
        self.0.iter().filter(|s| s.state != SegmentState::Placed)
    }

    /// The first reported tag at walk position `pos` or after it, with its
    /// position, found in O(number of modules + tags of one Rust block).
    ///
    /// Positions count every tag slot, reported or not (vmlinux first, then
    /// the segments in load order), so a Rust call site that starts or
    /// stops being reported never moves another tag: a walk that resumes at
    /// a position sees no tag twice and skips none that stays. Only loading
    /// and unloading modules moves positions, and that changes
    /// [`content_id`]. The tag is borrowed for as long as the registry is
    /// held.
    pub(super) fn next_from(&self, pos: usize) -> Option<(usize, &AllocTag)> {
        let (at, run) = self.run_from(pos)?;
        Some((at, run.first()?))
    }

    /// The reported tags from walk position `pos` on, as one run of
    /// consecutive positions: the position of the first and the tags, up
    /// to the end of the segment that holds it (of a Rust block, whose
    /// tags are not all reported, the first alone). `None` past the last
    /// tag. A walk that takes a run and goes on at the position after it
    /// sees the tags [`ReadGuard::next_from`] gives one at a time, with one
    /// lookup per segment instead of one per tag. Borrowed for as long as
    /// the registry is held.
    pub(super) fn run_from(&self, pos: usize) -> Option<(usize, &[AllocTag])> {
        let v = vmlinux();
        if pos < v.len {
            return Some((pos, v.tags(self).get(pos..)?));
        }
        let (mut base, mut skip) = (v.len, pos - v.len);
        for seg in self.modules() {
            if skip < seg.len {
                let tags = seg.tags(self);
                if !seg.sparse {
                    return Some((base + skip, tags.get(skip..)?));
                }
                if let Some(i) = (skip..seg.len).find(|&i| tags[i].has_file()) {
                    return Some((base + i, tags.get(i..=i)?));
                }
                skip = 0;
            } else {
                skip -= seg.len;
            }
            base += seg.len;
        }
        None
    }

    /// Every tag, in walk order, borrowed for as long as the registry is
    /// held.
    pub(super) fn tags(&self) -> impl Iterator<Item = &AllocTag> + '_ {
        core::iter::once(vmlinux())
            .chain(self.modules().copied())
            .flat_map(move |seg| seg.reported(self))
    }

    /// The number of tags.
    pub(super) fn len(&self) -> usize {
        vmlinux().len + self.modules().map(|s| s.reported_len(self)).sum::<usize>()
    }
}

/// Exclusive access for module load and unload.
struct WriteGuard(Guard<'static, KVec<Segment>, RwSemBackend>);

impl Held for WriteGuard {}

impl WriteGuard {
    fn new() -> Option<WriteGuard> {
        READY
            .load(Ordering::Acquire)
            .then(|| WriteGuard(REGISTRY.write()))
    }

    fn modules(&mut self) -> &mut KVec<Segment> {
        &mut self.0
    }

    /// Takes the segment at `idx` out, keeping the order of the others; it
    /// is the caller's to free, by dropping it once the lock is released.
    ///
    /// # Safety
    ///
    /// `idx` is a module segment (not vmlinux's, not a block of Rust
    /// sites, whose memory is never freed) that was never live or is
    /// drained.
    unsafe fn remove(&mut self, idx: usize) -> Option<Removed> {
        let mods = self.modules();
        let len = mods.len();
        if idx >= len {
            return None;
        }
        let seg = mods[idx];
        mods.as_mut_slice().copy_within(idx + 1.., idx);
        // SAFETY: `idx < len`; the slots from `idx` on were shifted down by
        // one, so the first `len - 1` are initialised, and `Segment` is
        // `Copy`.
        unsafe { mods.set_len(len - 1) };
        // INVARIANT: out of the registry just now; a module's, never live or
        // drained (caller).
        Some(Removed(seg))
    }
}

/// Counters are allocated for this many tags at a time; each chunk is one
/// per-CPU allocation, freed through its first tag's counters.
const COUNTER_CHUNK: usize = 256;

/// Gives every tag of `seg` zeroed per-CPU counters; `ENOMEM` (and none)
/// without memory.
///
/// # Safety
///
/// `seg`'s tags are valid and used by nobody else (not yet live).
unsafe fn alloc_counters(seg: &Segment) -> Result {
    let mut i = 0;
    while i < seg.len {
        let n = COUNTER_CHUNK.min(seg.len - i);
        // SAFETY: the helper's only requirement is a context that may
        // sleep, which every caller is (module load, a work item, the
        // initcall). The area is zeroed, and charged to the helper's own
        // row like any other allocation.
        let chunk = unsafe {
            bindings::alloc_tag_alloc_counters(n * size_of::<bindings::alloc_tag_counters>())
        }
        .cast::<bindings::alloc_tag_counters>();
        if chunk.is_null() {
            // SAFETY: the first `i` tags got counters above.
            unsafe { free_counters(seg, i) };
            return Err(ENOMEM);
        }
        // Per-node correction pairs, with per-node attribution on.
        let pairs = match node::alloc_pairs(n) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: the chunk was just allocated and never used; the
                // first `i` tags got counters above.
                unsafe {
                    bindings::free_percpu(chunk.cast());
                    free_counters(seg, i);
                }
                return Err(e);
            }
        };
        for j in 0..n {
            // SAFETY: tag `i + j` is valid and unused (caller); a per-CPU
            // pointer to element `j` of the chunk is the chunk's plus `j`.
            unsafe { (*seg.start.add(i + j)).counters = chunk.wrapping_add(j) };
            if let Some(p) = pairs {
                // SAFETY: as above; the pairs are for `n` tags.
                unsafe { node::set_pairs(seg.start.add(i + j), p, j) };
            }
        }
        i += n;
    }
    Ok(())
}

/// Frees the counters of the first `count` tags of `seg`.
///
/// # Safety
///
/// Those tags got their counters from [`alloc_counters`], and nothing uses
/// them any more.
unsafe fn free_counters(seg: &Segment, count: usize) {
    for i in (0..count).step_by(COUNTER_CHUNK) {
        // SAFETY: tag `i` is the first of a chunk (caller).
        unsafe {
            let tag = seg.start.add(i);
            bindings::free_percpu((*tag).counters.cast());
            (*tag).counters = core::ptr::null_mut();
            node::free_pairs(tag);
        }
    }
}

/// A module segment taken out of the registry, which owns what the segment
/// holds (counters, page-tag indexes, copied strings and the tag area) and
/// frees it when dropped. Dropping may sleep: never under a registry lock.
///
/// # Invariants
///
/// The segment is a module's and out of the registry, so no reader finds
/// its tags any more; if it was ever live, it is drained (only frees in
/// flight may still touch its counters).
struct Removed(Segment);

impl Held for Removed {}

impl Removed {
    /// Frees `segs` with one wait for the frees in flight, calling `each`
    /// on every segment after the wait, just before it is freed.
    fn free_all<const N: usize>(segs: [Option<Removed>; N], mut each: impl FnMut(&Removed)) {
        wait_for_frees_in_flight();
        for r in segs.into_iter().flatten() {
            each(&r);
            let seg = r.0;
            core::mem::forget(r);
            // SAFETY: out of the registry and drained (invariant), and the
            // frees in flight are over (the wait above).
            unsafe { release(seg) };
        }
    }
}

impl Drop for Removed {
    fn drop(&mut self) {
        // Placed tags were never live: nothing can be touching them.
        if self.0.state != SegmentState::Placed {
            wait_for_frees_in_flight();
        }
        // SAFETY: out of the registry and drained (invariant), and no free
        // is in flight on it any more (never live, or the wait above).
        unsafe { release(self.0) };
    }
}

/// Frees everything a module segment holds: counters, page-tag indexes,
/// copied strings and the tag area.
///
/// # Safety
///
/// `seg` is out of the registry, and nothing uses its tags: none was ever
/// live, or it was drained and a tasks-RCU grace period passed since.
unsafe fn release(seg: Segment) {
    if seg.state != SegmentState::Placed {
        // SAFETY: live and detached segments got all their counters.
        unsafe { free_counters(&seg, seg.len) };
        if let Some(base) = seg.page_ids {
            super::compressed::release_module_ids(base, seg.len);
        }
    }
    let (buf, cap) = seg.strings;
    if !buf.is_null() {
        // SAFETY: the parts of a `KVVec<u8>` taken apart in `copy_strings`.
        drop(unsafe { KVVec::<u8>::from_raw_parts(buf, 0, cap) });
    }
    // SAFETY: the tag area came from `execmem_alloc()`.
    unsafe { bindings::execmem_free(seg.start.cast()) };
}

/// Waits until every CPU that might still be between the two counter
/// updates of a free (even if preempted there) is past them.
fn wait_for_frees_in_flight() {
    // SAFETY: the grace-period wait only needs a context that may sleep
    // with no lock held that a freeing task could wait for: callers hold
    // none of the core's locks here (module load and unload, open()).
    unsafe { bindings::alloc_tag_synchronize_rcu_tasks() };
}

/// The module's name.
///
/// # Safety
///
/// `module` is a live module.
unsafe fn module_name<'a>(module: *mut bindings::module) -> &'a CStr {
    // SAFETY: `name` is a NUL-terminated array of a live module (caller).
    unsafe { CStr::from_char_ptr((*module).name.as_ptr()) }
}

/// Points the strings of `seg`'s tags at copies owned by the segment, so
/// that they outlive the module. Without memory for them, at placeholders.
///
/// # Safety
///
/// `seg` is in the registry, which `w` holds for writing, and its module is
/// still in memory.
unsafe fn copy_strings(w: &WriteGuard, seg: &mut Segment) {
    let tags = seg.tags(w);
    let fields = |i: usize| {
        let ct = tags[i].codetag();
        // SAFETY: `ct` is a valid tag of the segment.
        unsafe {
            [
                core::ptr::addr_of_mut!((*ct).modname),
                core::ptr::addr_of_mut!((*ct).function),
                core::ptr::addr_of_mut!((*ct).filename),
            ]
        }
    };
    // Consecutive tags mostly share module and file: copy a string again
    // only when it is not the same one as the previous tag's.
    let mut total = 0;
    let mut last = [core::ptr::null(); 3];
    for i in 0..seg.len {
        for (k, f) in fields(i).into_iter().enumerate() {
            // SAFETY: `f` is a field of a valid tag.
            let p = unsafe { *f };
            if !p.is_null() && p != last[k] {
                // SAFETY: a tag's strings are NUL-terminated strings of the
                // module, which is still in memory (caller).
                total += unsafe { CStr::from_char_ptr(p) }.len() + 1;
                last[k] = p;
            }
        }
    }
    let Ok(buf) = KVVec::<u8>::with_capacity(total, GFP_KERNEL) else {
        pr_warn!(
            "alloc_tag: no memory to keep the names of {} tags of an unloaded module\n",
            seg.len
        );
        for i in 0..seg.len {
            let [m, f, file] = fields(i);
            // SAFETY: fields of valid tags, written under the write lock
            // (caller), which every reader of the strings holds for reading.
            unsafe {
                *m = c_str!("(unloaded)").as_char_ptr();
                *f = c_str!("?").as_char_ptr();
                *file = c_str!("?").as_char_ptr();
            }
        }
        return;
    };
    let (base, _, cap) = buf.into_raw_parts();
    let mut off = 0;
    let mut last = [core::ptr::null(); 3];
    let mut copy = [core::ptr::null(); 3];
    for i in 0..seg.len {
        for (k, f) in fields(i).into_iter().enumerate() {
            // SAFETY: `f` is a field of a valid tag.
            let p = unsafe { *f };
            if p.is_null() {
                continue;
            }
            if p != last[k] {
                // SAFETY: as in the first pass; the same strings are met in
                // the same order, so they fit in the `total` bytes.
                let bytes = unsafe { CStr::from_char_ptr(p) }.as_bytes_with_nul();
                // SAFETY: `off + bytes.len() <= total <= cap` (first pass).
                unsafe {
                    core::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(off), bytes.len())
                };
                last[k] = p;
                // SAFETY: within the buffer.
                copy[k] = unsafe { base.add(off) }.cast_const().cast();
                off += bytes.len();
            }
            // SAFETY: as for the placeholders above.
            unsafe { *f = copy[k] };
        }
    }
    seg.strings = (base, cap);
}

/// Detaches the module segment at `idx` from its module, which is going
/// away. A drained segment leaves the registry and is returned for the
/// caller to drop (which frees it) once the lock is released; otherwise it
/// stays, reported, with copied strings.
fn detach(w: &mut WriteGuard, idx: usize) -> Option<Removed> {
    let mut seg = w.modules()[idx];
    CONTENT_ID.fetch_add(1, Ordering::Release);
    if seg.drained(w) {
        // SAFETY: a module's segment (callers), drained.
        return unsafe { w.remove(idx) };
    }
    for tag in seg.tags(w) {
        let c = tag.read();
        if c.bytes == 0 && c.calls == 0 {
            continue;
        }
        pr_warn!(
            "alloc_tag: {}:{} [{}] func:{} has {} bytes in {} allocations alive at module unload\n",
            tag.file(),
            tag.line(),
            tag.module_name().unwrap_or(c_str!("?")),
            tag.function(),
            c.bytes,
            c.calls
        );
    }
    // SAFETY: the lock is held for writing and the module is still in
    // memory (callers run before the loader frees it).
    unsafe { copy_strings(w, &mut seg) };
    seg.module = core::ptr::null_mut();
    seg.state = SegmentState::Detached;
    w.modules()[idx] = seg;
    DETACHED_SEGMENTS.fetch_add(1, Ordering::Relaxed);
    None
}

/// Frees the tag areas of detached modules whose allocations are all gone.
/// Called at module load and unload and when `/proc/allocinfo` is opened;
/// may sleep. Costs one atomic read when no module is detached.
pub(super) fn reclaim() {
    const BATCH: usize = 8;
    let Some(h) = hooks() else {
        return;
    };
    if (h.detached)() != 0 {
        if let Some(w) = WriteGuard::new() {
            let freed = (h.unlist_drained)();
            if freed != 0 {
                CONTENT_ID.fetch_add(1, Ordering::Release);
            }
            drop(w);
            if freed != 0 {
                wait_for_frees_in_flight();
                (h.free_unlisted)();
            }
        }
    }
    while DETACHED_SEGMENTS.load(Ordering::Relaxed) != 0 {
        let mut batch: [Option<Removed>; BATCH] = [const { None }; BATCH];
        let mut n = 0;
        {
            let Some(mut w) = WriteGuard::new() else {
                return;
            };
            let mut idx = 0;
            while idx < w.modules().len() && n < BATCH {
                let seg = w.modules()[idx];
                if seg.state == SegmentState::Detached && seg.drained(&w) {
                    // SAFETY: a detached segment is a module's; drained.
                    batch[n] = unsafe { w.remove(idx) };
                    CONTENT_ID.fetch_add(1, Ordering::Release);
                    n += 1;
                } else {
                    idx += 1;
                }
            }
        }
        if n == 0 {
            return;
        }
        Removed::free_all(batch, |r| {
            let tags = r.0.tags(r);
            pr_info!(
                "alloc_tag: freed the tag area of unloaded module {} ({} tags)\n",
                tags.first()
                    .and_then(AllocTag::module_name)
                    .unwrap_or(c_str!("?")),
                tags.len()
            );
            DETACHED_SEGMENTS.fetch_sub(1, Ordering::Relaxed);
        });
        if n < BATCH {
            return;
        }
    }
}

/// The compressed page-tag indexes of the `len` tags from `start`, which
/// are going live (a module loaded, or with `block` a block added), if they
/// get any.
///
/// # Safety
///
/// `start..start + len` are valid tags that stay so until their indexes are
/// given back, nothing charged to them yet; `_w` shows the registry held
/// for writing, which serialises the index table's writers.
unsafe fn assign_ids(
    _w: &WriteGuard,
    start: *mut bindings::alloc_tag,
    len: usize,
    block: bool,
) -> Option<u32> {
    // SAFETY: the caller's contract, which is `assign_module_ids()`'s.
    unsafe { super::compressed::assign_module_ids(start, len, block) }
}

/// Adds a block of `len` tags from `start` to the walk, with zeroed
/// counters and, in compressed mode, page-tag indexes. Only the tags that
/// name a file are reported ([`AllocTag::has_file`]): the Rust call-site
/// tags ([`super::rust_sites`]) that have a site. May sleep. `ENODEV`
/// before [`init`], `ENOMEM` without memory.
///
/// # Safety
///
/// `start..start + len` are zeroed tags that stay allocated for good and
/// that nothing else uses yet.
pub(crate) unsafe fn add_block(start: *mut bindings::alloc_tag, len: usize) -> Result {
    let mut seg = Segment {
        module: core::ptr::null_mut(),
        start,
        len,
        page_ids: None,
        state: SegmentState::Live,
        strings: (core::ptr::null_mut(), 0),
        sparse: true,
    };
    // SAFETY: the tags are unused (caller).
    unsafe { alloc_counters(&seg) }?;
    let Some(mut w) = WriteGuard::new() else {
        // SAFETY: the counters were just allocated and never used.
        unsafe { free_counters(&seg, len) };
        return Err(ENODEV);
    };
    if w.modules().reserve(1, GFP_KERNEL).is_err() {
        drop(w);
        // SAFETY: as above.
        unsafe { free_counters(&seg, len) };
        return Err(ENOMEM);
    }
    // SAFETY: the tags are unused (caller) and stay for good.
    seg.page_ids = unsafe { assign_ids(&w, start, len, true) };
    // Cannot fail: room was reserved above.
    let _ = w.modules().push(seg, GFP_KERNEL);
    CONTENT_ID.fetch_add(1, Ordering::Release);
    Ok(())
}

/// Gives compressed page-tag indexes to the blocks added before the page
/// tag store was set up (the first block of Rust call-site tags, at the
/// initcall). Pages charged to their tags before then were counted on the
/// overflow row.
pub(crate) fn assign_missing_ids() {
    let Some(mut w) = WriteGuard::new() else {
        return;
    };
    for i in 0..w.modules().len() {
        let seg = w.modules()[i];
        if seg.sparse && seg.page_ids.is_none() {
            // SAFETY: the block's tags are valid for good; indexes are
            // only set in their flags, atomically.
            let ids = unsafe { assign_ids(&w, seg.start, seg.len, true) };
            w.modules()[i].page_ids = ids;
        }
    }
}

/// The tag area for a module's `alloc_tags` section of `size` bytes and
/// alignment `align`: the loader copies the section there and relocates
/// the module against it. `EINVAL` for a section that is no whole number of
/// tags or wants more than page alignment, `ENODEV` before the profiler is
/// set up, `EEXIST` for a second section, `ENOMEM` without memory.
///
/// # Safety
///
/// `module` is a module being loaded.
pub(crate) unsafe fn place_module(
    module: *mut bindings::module,
    size: usize,
    align: usize,
) -> Result<NonNull<c_void>> {
    // SAFETY: a module being loaded (caller).
    let name = unsafe { module_name(module) };
    if size % size_of::<bindings::alloc_tag>() != 0 || align > crate::page::PAGE_SIZE {
        pr_err!(
            "alloc_tag: module {}: bad alloc_tags section ({} bytes, alignment {})\n",
            name,
            size,
            align
        );
        return Err(EINVAL);
    }
    let Some(mut w) = WriteGuard::new() else {
        pr_err!(
            "alloc_tag: module {} loaded before the profiler is set up\n",
            name
        );
        return Err(ENODEV);
    };
    if w.modules().iter().any(|s| s.module == module) {
        pr_err!(
            "alloc_tag: module {} has more than one alloc_tags section\n",
            name
        );
        return Err(EEXIST);
    }
    // SAFETY: `execmem_alloc()` needs a context that may sleep, which
    // module loading is; it returns NULL or `size` bytes, page aligned.
    let area = unsafe { bindings::execmem_alloc(bindings::execmem_type_EXECMEM_MODULE_DATA, size) };
    let area = NonNull::new(area).ok_or(ENOMEM)?;
    // SAFETY: `area` has `size` bytes.
    unsafe { core::ptr::write_bytes(area.as_ptr().cast::<u8>(), 0, size) };
    let seg = Segment {
        module,
        start: area.as_ptr().cast(),
        len: size / size_of::<bindings::alloc_tag>(),
        page_ids: None,
        state: SegmentState::Placed,
        strings: (core::ptr::null_mut(), 0),
        sparse: false,
    };
    if w.modules().push(seg, GFP_KERNEL).is_err() {
        // SAFETY: just allocated, not handed out.
        unsafe { bindings::execmem_free(area.as_ptr()) };
        return Err(ENOMEM);
    }
    Ok(area)
}

/// Gives the placed tags of a relocated `module` their counters and
/// reports them; `ENOMEM` without memory, which fails the load (and the
/// failed load's [`drop_module`] frees the tag area). Nothing to do before
/// [`init`] or for a module without tags.
///
/// # Safety
///
/// `module` is a module being loaded whose code has not run.
pub(crate) unsafe fn module_live(module: *mut bindings::module) -> Result {
    let Some(mut w) = WriteGuard::new() else {
        return Ok(());
    };
    let Some(idx) = w
        .modules()
        .iter()
        .position(|s| s.module == module && s.state == SegmentState::Placed)
    else {
        return Ok(());
    };
    let mut seg = w.modules()[idx];
    // SAFETY: placed tags are seen by nobody but this hook.
    if let Err(e) = unsafe { alloc_counters(&seg) } {
        pr_err!(
            "alloc_tag: module {}: no memory for the counters of its {} tags\n",
            // SAFETY: a module being loaded (caller).
            unsafe { module_name(module) },
            seg.len
        );
        return Err(e);
    }
    // SAFETY: the module's tags, not yet used (its code has not run), in
    // its tag area until the segment is released.
    seg.page_ids = unsafe { assign_ids(&w, seg.start, seg.len, false) };
    seg.state = SegmentState::Live;
    w.modules()[idx] = seg;
    CONTENT_ID.fetch_add(1, Ordering::Release);
    Ok(())
}

/// Detaches what `module` has in the registry: the tags of a module being
/// unloaded, or whatever a failed load left. Tags with allocations still
/// charged stay reported, with copies of their strings; the rest is freed.
/// May sleep.
pub(crate) fn drop_module(module: *mut bindings::module) {
    let Some(mut w) = WriteGuard::new() else {
        return;
    };
    if hooks().is_some_and(|h| (h.module_gone)(module)) {
        CONTENT_ID.fetch_add(1, Ordering::Release);
    }
    let Some(idx) = w.modules().iter().position(|s| s.module == module) else {
        return;
    };
    let gone = if w.modules()[idx].state == SegmentState::Placed {
        // SAFETY: a module's segment, placed: never live.
        unsafe { w.remove(idx) }
    } else {
        detach(&mut w, idx)
    };
    drop(w);
    // Freed here, the lock released.
    drop(gone);
}
