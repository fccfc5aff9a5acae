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

use super::hook_module::{HookModule, ModuleId};
use super::tag::{vmlinux_tags, AllocTag, HeldTag};
use super::tag_mem::{self, wait_for_frees_in_flight, FreesPast, TagArea};
use crate::{
    alloc::flags::GFP_KERNEL,
    alloc::KVVec,
    alloc::KVec,
    bindings, c_str,
    error::{
        code::{EEXIST, EINVAL, ENODEV},
        Result,
    },
    ffi::c_void,
    pr_err, pr_info, pr_warn,
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
    pub module_gone: fn(ModuleId) -> bool,
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
    /// the strings the tags point to are copies in `names`.
    Detached,
}

/// A hold that keeps the registry's segments in place: the read lock
/// ([`ReadGuard`]), the write lock ([`WriteGuard`]), or a segment taken out
/// and not yet freed ([`Removed`]). Tags borrowed from a [`Segment`] are
/// borrowed from the hold.
///
/// # Safety
///
/// While a value of an implementing type lives, the registry is held (for
/// reading or writing), or the value owns a segment taken out of it: the
/// tags it reaches and their names stay in place.
unsafe trait Held {}

/// A run of `len` consecutive tags from `start`, and whether all of them are
/// reported: vmlinux's section, a module's tag area, or a block of Rust
/// call-site tags (`sparse`: only the tags that name a file are reported).
///
/// # Invariants
///
/// `start` points to `len` initialised `alloc_tag`s that stay valid while
/// the segment that holds the span is in the registry and, once taken out,
/// until its [`Removed`] frees them: vmlinux's for good, a module's tag area
/// or a block of Rust call-site tags otherwise. Spans are made only by this
/// file (vmlinux's, [`place_module`], [`add_block`]), so every [`Held`]
/// hold that reaches a span keeps its tags valid.
#[derive(Clone, Copy)]
struct Span {
    start: NonNull<bindings::alloc_tag>,
    len: usize,
    sparse: bool,
}

impl Span {
    /// The span's tags, borrowed from the hold that keeps them, to count
    /// with.
    fn raw_tags<'h>(self, _held: &'h impl Held) -> &'h [AllocTag] {
        // SAFETY: `len` valid tags from `start` while `_held` lives
        // (invariant); `AllocTag` is a transparent wrapper of `alloc_tag`.
        unsafe { core::slice::from_raw_parts(self.start.as_ptr().cast::<AllocTag>(), self.len) }
    }

    /// The span's tags with their names, borrowed from the hold that keeps
    /// them.
    fn tags<'h>(self, held: &'h impl Held) -> &'h [HeldTag] {
        // SAFETY: `held` keeps the registry held, or owns the segment, for
        // `'h` (`Held`).
        unsafe { HeldTag::from_tags(self.raw_tags(held)) }
    }

    /// The tags to report: all of them, but for a block only those that
    /// name a file.
    fn reported<'h>(self, held: &'h impl Held) -> impl Iterator<Item = &'h HeldTag> + 'h {
        self.tags(held)
            .iter()
            .filter(move |t| !self.sparse || t.has_file())
    }

    /// How many tags [`Span::reported`] gives.
    fn reported_len(self, held: &impl Held) -> usize {
        if self.sparse {
            self.reported(held).count()
        } else {
            self.len
        }
    }
}

/// One segment of the registry: a module's tags (in its tag area), or a
/// block of Rust call-site tags, with the first of their compressed
/// page-tag indexes if they got any, and what the segment owns.
struct Segment {
    /// The module while it is loaded; none for a block and once detached.
    module: ModuleId,
    span: Span,
    page_ids: Option<u32>,
    state: SegmentState,
    /// A module's tag area, which `span` covers; `None` for a block, whose
    /// memory stays for good.
    area: Option<TagArea>,
    /// The copies of a detached module's strings, which its tags point to.
    names: Option<KVVec<u8>>,
}

impl Segment {
    /// The segment's tags, borrowed from the hold that keeps them.
    fn tags<'h>(&self, held: &'h impl Held) -> &'h [HeldTag] {
        self.span.tags(held)
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

// SAFETY: a span is an address and a length; the tags it points to are
// `AllocTag`s (shared between CPUs by design), freed only by the registry's
// writer once their segment is out of the registry.
unsafe impl Send for Span {}

// SAFETY: as for `Send`: a shared span only gives out its tags.
unsafe impl Sync for Span {}

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

/// vmlinux's tags, always first and always live.
fn vmlinux() -> Span {
    let (start, len) = vmlinux_tags();
    // INVARIANT: vmlinux's section, valid for good (an empty section is a
    // dangling, never read, start).
    Span {
        start: NonNull::new(start).unwrap_or(NonNull::dangling()),
        len,
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

// SAFETY: a read hold of the registry while the guard lives.
unsafe impl Held for ReadGuard {}

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
    pub(super) fn next_from(&self, pos: usize) -> Option<(usize, &HeldTag)> {
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
    pub(super) fn run_from(&self, pos: usize) -> Option<(usize, &[HeldTag])> {
        let v = vmlinux();
        if pos < v.len {
            return Some((pos, v.tags(self).get(pos..)?));
        }
        let (mut base, mut skip) = (v.len, pos - v.len);
        for span in self.modules().map(|s| s.span) {
            if skip < span.len {
                let tags = span.tags(self);
                if !span.sparse {
                    return Some((base + skip, tags.get(skip..)?));
                }
                if let Some(i) = (skip..span.len).find(|&i| tags[i].has_file()) {
                    return Some((base + i, tags.get(i..=i)?));
                }
                skip = 0;
            } else {
                skip -= span.len;
            }
            base += span.len;
        }
        None
    }

    /// Every tag, in walk order, borrowed for as long as the registry is
    /// held.
    pub(super) fn tags(&self) -> impl Iterator<Item = &HeldTag> + '_ {
        core::iter::once(vmlinux())
            .chain(self.modules().map(|s| s.span))
            .flat_map(move |span| span.reported(self))
    }

    /// `tag` with its names, which stay while the registry is held.
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
    pub(super) fn held<'a>(&'a self, tag: &'a AllocTag) -> &'a HeldTag {
        // SAFETY: `self` holds the registry for reading for `'a`.
        let tags = unsafe { HeldTag::from_tags(core::slice::from_ref(tag)) };
        &tags[0]
    }

    /// The number of tags.
    pub(super) fn len(&self) -> usize {
        vmlinux().len
            + self
                .modules()
                .map(|s| s.span.reported_len(self))
                .sum::<usize>()
    }
}

/// Exclusive access for module load and unload.
struct WriteGuard(Guard<'static, KVec<Segment>, RwSemBackend>);

// SAFETY: the write hold of the registry while the guard lives.
unsafe impl Held for WriteGuard {}

impl WriteGuard {
    fn new() -> Option<WriteGuard> {
        READY
            .load(Ordering::Acquire)
            .then(|| WriteGuard(REGISTRY.write()))
    }

    fn modules(&mut self) -> &mut KVec<Segment> {
        &mut self.0
    }

    /// Takes the module segment at `idx` out, keeping the order of the
    /// others, if nothing can use its tags any more: it was never live, or
    /// it is drained. It is the caller's to free, by dropping it once the
    /// lock is released. `None` for a block of Rust sites (whose memory is
    /// never freed), a segment in use, or no segment at `idx`.
    fn remove(&mut self, idx: usize) -> Option<Removed> {
        let seg = self.0.get(idx)?;
        if seg.area.is_none() || (seg.state != SegmentState::Placed && !seg.drained(self)) {
            return None;
        }
        let mods = self.modules();
        mods.as_mut_slice()[idx..].rotate_left(1);
        let last = mods.len() - 1;
        // SAFETY: `last` is initialised, and the length drops below it before
        // anything else reads the vector, so the segment is moved out once.
        let seg = unsafe {
            mods.set_len(last);
            core::ptr::read(mods.as_ptr().add(last))
        };
        // INVARIANT: out of the registry just now; a module's, never live or
        // drained (checked above, under the write lock: with the module's
        // code gone nothing charges its tags again, and arming needs the
        // read lock).
        Some(Removed(Some(seg)))
    }
}

/// A module segment taken out of the registry, which owns what the segment
/// holds (counters, page-tag indexes, copied strings and the tag area) and
/// frees it when dropped. Dropping may sleep: never under a registry lock.
///
/// # Invariants
///
/// The segment (`Some` until freed) is a module's and out of the registry,
/// so no reader finds its tags any more; if it was ever live, it is drained
/// (only frees in flight may still touch its counters).
struct Removed(Option<Segment>);

// SAFETY: owns its segment, out of the registry, until freed; freeing
// takes `&mut self`, so no borrow of its tags outlives it.
unsafe impl Held for Removed {}

impl Removed {
    /// Frees `segs` with one wait for the frees in flight, calling `each`
    /// on every segment after the wait, just before it is freed.
    fn free_all<const N: usize>(segs: [Option<Removed>; N], mut each: impl FnMut(&Removed)) {
        let past = wait_for_frees_in_flight();
        for mut r in segs.into_iter().flatten() {
            each(&r);
            r.free(&past);
        }
    }

    /// Frees what the segment holds, once the frees in flight are `_past`
    /// it.
    fn free(&mut self, _past: &FreesPast) {
        let Some(seg) = self.0.take() else {
            return;
        };
        if seg.state != SegmentState::Placed {
            // SAFETY: a live or detached segment got all its counters at
            // once; out of the registry and drained (invariant), and no
            // free is in flight on it any more (`_past`).
            unsafe { tag_mem::take_counters(seg.span.raw_tags(&*self), _past) };
            if let Some(base) = seg.page_ids {
                super::compressed::release_module_ids(base, seg.span.len);
            }
        }
        // The copied strings, then the tag area.
        drop(seg);
    }
}

impl Drop for Removed {
    fn drop(&mut self) {
        let Some(state) = self.0.as_ref().map(|seg| seg.state) else {
            return;
        };
        if state == SegmentState::Placed {
            // Never live: nothing can be touching the tags, and they have
            // nothing but their tag area.
            self.0 = None;
        } else {
            let past = wait_for_frees_in_flight();
            self.free(&past);
        }
    }
}

/// Points the strings of `span`'s tags at copies, returned for the segment
/// to own, so that they outlive the module; without memory for them, at
/// placeholders. `w` holds the registry for writing, and the module is
/// still in memory (the loader calls its hooks before freeing it).
fn copy_strings(w: &WriteGuard, span: Span) -> Option<KVVec<u8>> {
    let tags = span.tags(w);
    // Consecutive tags mostly share module and file: copy a string again
    // only when it is not the same one as the previous tag's.
    let mut total = 0;
    let mut last: [*const u8; 3] = [core::ptr::null(); 3];
    for tag in tags {
        for (k, name) in tag.names().into_iter().enumerate() {
            if let Some(name) = name.filter(|n| n.as_char_ptr().cast() != last[k]) {
                total += name.len() + 1;
                last[k] = name.as_char_ptr().cast();
            }
        }
    }
    let Ok(mut buf) = KVVec::<u8>::with_capacity(total, GFP_KERNEL) else {
        pr_warn!(
            "alloc_tag: no memory to keep the names of {} tags of an unloaded module\n",
            tags.len()
        );
        let placeholders =
            [c_str!("(unloaded)"), c_str!("?"), c_str!("?")].map(|s| s.as_char_ptr().cast());
        for tag in tags {
            // SAFETY: `w` holds the registry for writing; static strings.
            unsafe { tag.set_names(placeholders) };
        }
        return None;
    };
    // `buf` never grows past the capacity reserved above, so its bytes
    // never move and the copies' addresses stay valid while it lives.
    let base = buf.as_ptr();
    let mut last: [*const u8; 3] = [core::ptr::null(); 3];
    let mut copy: [*const u8; 3] = [core::ptr::null(); 3];
    for tag in tags {
        let mut names = [core::ptr::null(); 3];
        for (k, name) in tag.names().into_iter().enumerate() {
            let Some(name) = name else {
                continue;
            };
            if name.as_char_ptr().cast() != last[k] {
                last[k] = name.as_char_ptr().cast();
                let off = buf.len();
                copy[k] = match buf.extend_from_slice(name.as_bytes_with_nul(), GFP_KERNEL) {
                    // The same strings in the same order as the first pass:
                    // within the capacity, no reallocation.
                    Ok(()) if buf.as_ptr() == base => base.wrapping_add(off),
                    _ => c_str!("?").as_char_ptr().cast(),
                };
            }
            names[k] = copy[k];
        }
        // SAFETY: `w` holds the registry for writing; the copies live in
        // `buf`, which the segment owns from here until it is freed, after
        // its last reader.
        unsafe { tag.set_names(names) };
    }
    Some(buf)
}

/// Detaches the module segment at `idx` from its module, which is going
/// away. A drained segment leaves the registry and is returned for the
/// caller to drop (which frees it) once the lock is released; otherwise it
/// stays, reported, with copied strings.
fn detach(w: &mut WriteGuard, idx: usize) -> Option<Removed> {
    CONTENT_ID.fetch_add(1, Ordering::Release);
    if let Some(gone) = w.remove(idx) {
        return Some(gone);
    }
    let span = w.modules().get(idx)?.span;
    for tag in span.tags(w) {
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
    let names = copy_strings(w, span);
    let seg = &mut w.modules()[idx];
    seg.names = names;
    seg.module = ModuleId::NONE;
    seg.state = SegmentState::Detached;
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
                let _past = wait_for_frees_in_flight();
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
                let detached = w.modules()[idx].state == SegmentState::Detached;
                match detached.then(|| w.remove(idx)).flatten() {
                    Some(gone) => {
                        batch[n] = Some(gone);
                        CONTENT_ID.fetch_add(1, Ordering::Release);
                        n += 1;
                    }
                    None => idx += 1,
                }
            }
        }
        if n == 0 {
            return;
        }
        Removed::free_all(batch, |r| {
            let tags = r.0.as_ref().map_or(&[][..], |seg| seg.tags(r));
            pr_info!(
                "alloc_tag: freed the tag area of unloaded module {} ({} tags)\n",
                tags.first()
                    .and_then(HeldTag::module_name)
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

/// The compressed page-tag indexes of `span`'s tags, which are going live
/// (a module loaded, or a block added), given `ids`, the ones they have:
/// those, or new ones if they get any. `_w` shows the registry held for
/// writing, which serialises the index table's writers.
fn assign_ids(_w: &WriteGuard, span: Span, ids: Option<u32>) -> Option<u32> {
    if ids.is_some() {
        return ids;
    }
    // SAFETY: valid tags (`Span`'s invariant) that stay so until their
    // indexes are given back (`Removed::free()` does so before the tag area
    // goes; a block stays for good), with no index yet (`ids`):
    // `assign_module_ids()`'s contract.
    unsafe { super::compressed::assign_module_ids(span.start.as_ptr(), span.len, span.sparse) }
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
    let start = NonNull::new(start).ok_or(EINVAL)?;
    // INVARIANT: the tags stay allocated for good (caller).
    let span = Span {
        start,
        len,
        sparse: true,
    };
    let Some(mut w) = WriteGuard::new() else {
        return Err(ENODEV);
    };
    w.modules().reserve(1, GFP_KERNEL)?;
    // SAFETY: the tags are unused (caller); the write lock is held only to
    // keep them from readers until they have counters.
    unsafe { tag_mem::give_counters(span.raw_tags(&w)) }?;
    let page_ids = assign_ids(&w, span, None);
    // Cannot fail: room was reserved above.
    let _ = w.modules().push(
        Segment {
            module: ModuleId::NONE,
            span,
            page_ids,
            state: SegmentState::Live,
            area: None,
            names: None,
        },
        GFP_KERNEL,
    );
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
        let (span, ids) = (w.0[i].span, w.0[i].page_ids);
        if span.sparse {
            let ids = assign_ids(&w, span, ids);
            w.modules()[i].page_ids = ids;
        }
    }
}

/// The tag area for `module`'s `alloc_tags` section of `size` bytes and
/// alignment `align`: the loader copies the section there and relocates
/// the module against it. `EINVAL` for a section that is no whole number of
/// tags or wants more than page alignment, `ENODEV` before the profiler is
/// set up, `EEXIST` for a second section, `ENOMEM` without memory.
pub(crate) fn place_module(
    module: HookModule<'_>,
    size: usize,
    align: usize,
) -> Result<NonNull<c_void>> {
    let name = module.name();
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
    if w.modules().iter().any(|s| s.module == module.id()) {
        pr_err!(
            "alloc_tag: module {} has more than one alloc_tags section\n",
            name
        );
        return Err(EEXIST);
    }
    let area = TagArea::new(size / size_of::<bindings::alloc_tag>())?;
    let start = area.as_ptr();
    // INVARIANT: the area's tags, owned by the segment until it is freed.
    let span = Span {
        start: area.start(),
        len: area.len(),
        sparse: false,
    };
    // Without memory the area goes with the segment.
    w.modules().push(
        Segment {
            module: module.id(),
            span,
            page_ids: None,
            state: SegmentState::Placed,
            area: Some(area),
            names: None,
        },
        GFP_KERNEL,
    )?;
    Ok(start)
}

/// Gives the placed tags of a relocated `module` their counters and
/// reports them; `ENOMEM` without memory, which fails the load (and the
/// failed load's [`drop_module`] frees the tag area). Nothing to do before
/// [`init`] or for a module without tags. The module's code has not run.
pub(crate) fn module_live(module: HookModule<'_>) -> Result {
    let Some(mut w) = WriteGuard::new() else {
        return Ok(());
    };
    let Some(idx) = w
        .modules()
        .iter()
        .position(|s| s.module == module.id() && s.state == SegmentState::Placed)
    else {
        return Ok(());
    };
    let span = w.modules()[idx].span;
    // SAFETY: placed tags are seen by nobody but the loader, which is here
    // (the module's code has not run), and have no counters.
    if let Err(e) = unsafe { tag_mem::give_counters(span.raw_tags(&w)) } {
        pr_err!(
            "alloc_tag: module {}: no memory for the counters of its {} tags\n",
            module.name(),
            span.len
        );
        return Err(e);
    }
    let page_ids = assign_ids(&w, span, None);
    let seg = &mut w.modules()[idx];
    seg.page_ids = page_ids;
    seg.state = SegmentState::Live;
    CONTENT_ID.fetch_add(1, Ordering::Release);
    Ok(())
}

/// Detaches what `module` has in the registry: the tags of a module being
/// unloaded, or whatever a failed load left. Tags with allocations still
/// charged stay reported, with copies of their strings; the rest is freed.
/// May sleep. The module is still in memory.
pub(crate) fn drop_module(module: HookModule<'_>) {
    let Some(mut w) = WriteGuard::new() else {
        return;
    };
    if hooks().is_some_and(|h| (h.module_gone)(module.id())) {
        CONTENT_ID.fetch_add(1, Ordering::Release);
    }
    let Some(idx) = w.modules().iter().position(|s| s.module == module.id()) else {
        return;
    };
    let gone = if w.modules()[idx].state == SegmentState::Placed {
        w.remove(idx)
    } else {
        detach(&mut w, idx)
    };
    drop(w);
    // Freed here, the lock released.
    drop(gone);
}
