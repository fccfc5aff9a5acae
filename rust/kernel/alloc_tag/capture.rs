// SPDX-License-Identifier: GPL-2.0

//! Context capture: which callers hold the memory of one call site.
//!
//! Root arms a call site through `/sys/kernel/debug/allocinfo_capture`. While
//! it is armed, each new slab, percpu or page allocation charged to it gets a
//! [`Record`] (stack, size, task, time); the object's tag reference then holds
//! the record's address with [`FLAG_RECORD`] set instead of the tag's code tag,
//! and its free finds the record, uncharges the site as usual and the record's
//! stack, and frees the record. Reading the file reports, per armed site, its
//! distinct stacks with live bytes and calls, largest first.
//!
//! Nothing is paid while nothing is armed: the slab, percpu and page hooks call
//! the core through two static calls (`alloc_tag_add`, `alloc_tag_sub`), which
//! point at the plain entry points and are switched to
//! `__alloc_tag_add_capture()` and `__alloc_tag_sub_capture()` only from the
//! first arm to the last disarm.
//!
//! Pages are captured when their tags live in `page_ext`; compressed page tags
//! are indexes in `page->flags`, which cannot hold a record, so pages in
//! compressed mode are not captured (counted on the site as usual, in neither
//! `captured` nor `uncaptured`). A page reference is also read outside its
//! allocation and free: the tail-page lookup of `__free_pages()` asks
//! [`record_tag`], and a split or a migration first drops the block's record
//! with [`release`] (its bytes stay on the site, counted as uncaptured from
//! then on).
//!
//! Limits, all visible in the report: [`MAX_SITES`] armed sites,
//! [`MAX_RECORDS`] live records, [`MAX_STACKS`] distinct stacks per site
//! (further stacks, and allocations without a stack, go to one "other stacks"
//! bucket). Stacks are kept in the buckets, at most
//! `ALLOC_TAG_CAPTURE_FRAMES` return addresses each, not in the stack depot
//! (which an option depending on RUST cannot select). An allocation that gets
//! no record (record cap, or the pool empty) is counted on the site as usual
//! and as `uncaptured` in the report.
//!
//! The record path never allocates: records come from a pool of chunks
//! ([`CHUNK_RECORDS`] records each) filled before the first site is armed and
//! refilled from process context by a work item when it runs low (the hook only
//! queues an `irq_work`, which queues the work). So any site may be armed, the
//! allocator's own (`alloc_slab_page`, the pool's chunk allocation, vmalloc,
//! percpu...) included: a record never needs an allocation that could reach an
//! armed site again. The pool is freed at the last disarm.
//!
//! Disarming rewrites the reference of every live record's object to the site's
//! code tag and gives the records back to the pool: the site's totals are
//! unchanged, the objects are freed later as any other. Unloading a module
//! disarms its sites first.
//!
//! An armed tag is in use: the registry frees no tag area and the Rust call
//! sites reuse no tag while one of its tags is armed
//! ([`AllocTag::capture_armed`]), so a site's tag outlives the site. A detached
//! tag of an unloaded module can be armed (and shows its live records); its tag
//! area is freed only once it is disarmed and drained.
//!
//! Locking, outermost first: the registry (read, for tag strings and to keep
//! tags from going) -> the control mutex (arm, disarm, report, module unload,
//! pool refill; serialises the static call updates) -> the capture spinlock
//! (raw, irqsave; taken from the allocator hooks in any context but NMI).
//!
//! [`Record`]: super::record_pool
//! [`FLAG_RECORD`]: super::tag_ref::REF_RECORD
//! [`record_tag`]: super::record::record_tag
//! [`release`]: super::record::release
//! [`MAX_RECORDS`]: super::record::MAX_RECORDS
//! [`MAX_STACKS`]: super::record::MAX_STACKS
//! [`CHUNK_RECORDS`]: super::record_pool::CHUNK_RECORDS

use super::hook_module::HookModule;
use super::record::{
    fill_pool, free_pool, Control, Guard, Site, Stacks, LOCKS_READY, MAX_RECORDS, MAX_SITES,
    POOL_MIN,
};
use super::{capture_c, registry, tag::HeldTag, AllocTag};
use crate::{
    error::{code::*, Result},
    prelude::*,
    seq_file::{SeqFile, SingleFile, SingleFileOps, SingleShow},
    uaccess::UserSliceReader,
};
use core::fmt::Write;
use core::sync::atomic::Ordering;

/// Which tags a control command names.
struct Spec<'a> {
    file: Option<&'a [u8]>,
    line: u32,
    function: Option<&'a [u8]>,
    module: Option<&'a [u8]>,
}

impl<'a> Spec<'a> {
    /// `FILE:LINE` or `function:NAME`, then optionally `module:NAME`.
    fn parse(words: &mut impl Iterator<Item = &'a [u8]>) -> Result<Spec<'a>> {
        let first = words.next().ok_or(EINVAL)?;
        let mut spec = Spec {
            file: None,
            line: 0,
            function: None,
            module: None,
        };
        if let Some(f) = first.strip_prefix(b"function:") {
            spec.function = Some(f);
        } else {
            let colon = first.iter().rposition(|&c| c == b':').ok_or(EINVAL)?;
            let line = core::str::from_utf8(&first[colon + 1..]).map_err(|_| EINVAL)?;
            spec.line = line.parse::<u32>().map_err(|_| EINVAL)?;
            spec.file = Some(&first[..colon]);
        }
        if let Some(w) = words.next() {
            spec.module = Some(w.strip_prefix(b"module:").ok_or(EINVAL)?);
        }
        if words.next().is_some()
            || spec.file == Some(b"")
            || spec.function == Some(b"")
            || spec.module == Some(b"")
        {
            return Err(EINVAL);
        }
        Ok(spec)
    }

    fn matches(&self, t: &HeldTag) -> bool {
        if let Some(f) = self.file {
            if t.file().as_bytes() != f || t.line() != self.line {
                return false;
            }
        }
        if let Some(f) = self.function {
            if t.function().as_bytes() != f {
                return false;
            }
        }
        match (self.module, t.module_name()) {
            (None, _) => true,
            (Some(m), Some(tm)) => tm.as_bytes() == m,
            (Some(_), None) => false,
        }
    }
}

/// Arms every tag `spec` names.
///
/// All or nothing: more sites than there are free slots, or no memory for
/// the sites or the record pool, arms none. Any site can be armed (see the
/// module documentation).
fn arm(spec: &Spec<'_>) -> Result {
    let reg = registry::read().ok_or(ENODEV)?;
    let c = Control::lock();
    // First pass: count, and refuse before arming anything. A walk by
    // position: an iterator chain over the registry here would be a
    // generic instance whose mangled name overflows modpost's buffer.
    let (mut found, mut new) = (0, 0);
    let mut pos = 0;
    while let Some((p, t)) = reg.next_from(pos) {
        pos = p + 1;
        if !spec.matches(t) {
            continue;
        }
        found += 1;
        if !t.capture_armed() {
            new += 1;
        }
    }
    if found == 0 {
        return Err(ENOENT);
    }
    let armed = Guard::lock().state().armed;
    if armed + new > MAX_SITES {
        pr_err!(
            "alloc_tag: capture: {} sites armed, {} more asked for, {} at most\n",
            armed,
            new,
            MAX_SITES
        );
        return Err(ENOSPC);
    }
    if new == 0 {
        return Ok(());
    }
    // Then every allocation arming needs, before anything is armed.
    let mut stacks: [Option<KBox<Stacks>>; MAX_SITES] = [const { None }; MAX_SITES];
    for slot in stacks.iter_mut().take(new) {
        *slot = Some(Stacks::new()?);
    }
    if armed == 0 {
        if let Err(e) = fill_pool(&c, POOL_MIN) {
            free_pool(&c);
            return Err(e);
        }
    }
    // Second pass: arm them. The registry and the control mutex have been
    // held since the first, so the same `new` tags match and their slots
    // are free.
    let mut next = stacks.iter_mut().filter_map(Option::take);
    let mut pos = 0;
    while let Some((p, t)) = reg.next_from(pos) {
        pos = p + 1;
        if !spec.matches(t) || t.capture_armed() {
            continue;
        }
        let Some(stacks) = next.next() else {
            break;
        };
        // SAFETY: `t` is armed below, before the record path can find the
        // site (it looks only at armed tags; the registry and the control
        // mutex are held until then), and stays armed until a disarm takes
        // the site out.
        let site = unsafe { Site::new(t, stacks) };
        let first = {
            let mut g = Guard::lock();
            let st = g.state();
            let Some(slot) = st.sites.iter_mut().find(|s| s.is_none()) else {
                drop(g);
                break;
            };
            *slot = Some(site);
            st.armed += 1;
            st.armed == 1
        };
        if first {
            capture_c::set_capturing_calls(true);
        }
        // Only now: the calls reach the capturing versions.
        t.set_capture_armed(true);
    }
    Ok(())
}

/// Disarms the armed sites `pick` selects; returns how many. The last
/// disarm frees the record pool.
///
/// The control mutex must be held; `reg`, the registry held for reading,
/// keeps the names `pick` reads.
fn disarm_where(
    reg: &registry::ReadGuard,
    c: &Control,
    mut pick: impl FnMut(&HeldTag) -> bool,
) -> usize {
    let mut n = 0;
    loop {
        let mut g = Guard::lock();
        let st = g.state();
        let Some(i) = st
            .sites
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| pick(reg.held(s.tag()))))
        else {
            break;
        };
        let Some(site) = st.sites.get_mut(i).and_then(Option::take) else {
            break;
        };
        st.armed -= 1;
        let last = st.armed == 0;
        let tag = site.tag();
        tag.set_capture_armed(false);
        // Each record goes back to the pool once its object's reference
        // holds the tag again: the objects are freed later as any other (a
        // free takes the lock and finds its reference rewritten). The tag
        // is not freed meanwhile: its live objects, whose records are
        // given back here under the lock, keep its area.
        st.pool.release_site(i, tag.codetag());
        drop(g);
        // The site's stacks are freed outside the spinlock.
        drop(site);
        if last {
            capture_c::set_capturing_calls(false);
            free_pool(c);
        }
        n += 1;
    }
    n
}

/// Module unload: disarms the sites of `module`, whose tags may go once
/// their allocations are freed. The loader holds the module, its tags still
/// in place.
pub(crate) fn module_unload(module: HookModule<'_>) {
    let name = module.name();
    // The registry keeps the armed tags' strings still while they are read.
    let Some(reg) = registry::read() else {
        return;
    };
    let c = Control::lock();
    let n = disarm_where(&reg, &c, |t| {
        t.module_name()
            .is_some_and(|m| m.as_bytes() == name.as_bytes())
    });
    if n > 0 {
        pr_info!(
            "alloc_tag: capture: {} sites of {} disarmed at unload\n",
            n,
            name
        );
    }
}

/// The report, written by `single_open()`'s one `show`.
struct Report;

impl SingleShow for Report {
    fn show(seq: &SeqFile) -> Result {
        show(seq)
    }
}

fn show(seq: &SeqFile) -> Result {
    let reg = registry::read().ok_or(ENODEV)?;
    let _c = Control::lock();
    // Copies of the armed sites, taken under the lock and printed after
    // (the control mutex keeps their tags armed).
    let mut copies = KVec::<KBox<Stacks>>::with_capacity(MAX_SITES, GFP_KERNEL)?;
    for _ in 0..MAX_SITES {
        copies.push(Stacks::new()?, GFP_KERNEL)?;
    }
    let mut tags: [Option<&'static AllocTag>; MAX_SITES] = [None; MAX_SITES];
    let live = {
        let mut g = Guard::lock();
        let st = g.state();
        let slots = tags.iter_mut().zip(copies.iter_mut());
        for (s, (tag, copy)) in st.sites.iter().flatten().zip(slots) {
            *tag = Some(s.tag());
            **copy = *s.stacks;
        }
        st.live()
    };
    let nsnaps = tags.iter().flatten().count();
    let mut l = Line::new();
    let _ = writeln!(
        l,
        "# allocinfo capture 1.0: {} of {} sites armed, {} of {} records live",
        nsnaps, MAX_SITES, live, MAX_RECORDS
    );
    l.emit(seq);
    for (&t, s) in tags.iter().flatten().zip(copies.iter_mut()) {
        // Its names stay while the registry is held.
        let t = reg.held(t);
        let c = t.read();
        let _ = write!(l, "site {}:{} func:{}", t.file(), t.line(), t.function());
        if let Some(m) = t.module_name() {
            let _ = write!(l, " module:{}", m);
        }
        let live = s.stacks[..s.nstacks].iter().map(|b| b.calls).sum::<i64>() + s.other.calls;
        let _ = writeln!(
            l,
            " bytes:{} calls:{} captured:{} uncaptured:{} stacks:{}",
            c.bytes, c.calls, live, s.uncaptured, s.nstacks
        );
        l.emit(seq);
        let n = s.nstacks;
        let stacks = &mut s.stacks[..n];
        stacks.sort_unstable_by(|a, b| b.bytes.cmp(&a.bytes).then(a.hash.cmp(&b.hash)));
        for b in stacks.iter() {
            let _ = writeln!(l, "  stack bytes:{} calls:{}", b.bytes, b.calls);
            l.emit(seq);
            capture_c::show_stack(seq, b.stack());
        }
        if s.other.calls != 0 || s.other.bytes != 0 {
            let _ = writeln!(l, "  other bytes:{} calls:{}", s.other.bytes, s.other.calls);
            l.emit(seq);
        }
    }
    drop(reg);
    Ok(())
}

/// One line of the report, built on the stack (longer text is cut).
struct Line {
    buf: [u8; 512],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            buf: [0; 512],
            len: 0,
        }
    }

    /// Appends the line to `seq` and starts the next. A line cut at the
    /// buffer's end still ends the line.
    fn emit(&mut self, seq: &SeqFile) {
        if self.len == self.buf.len() {
            self.buf[self.len - 1] = b'\n';
        }
        seq.write_bytes(&self.buf[..self.len]);
        self.len = 0;
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

impl SingleFile for Report {
    /// One command per write.
    fn write(data: UserSliceReader, len: usize) -> Result {
        command(data, len)
    }
}

/// Runs one command: `arm SPEC`, `disarm SPEC` or `disarm all`.
fn command(mut data: UserSliceReader, len: usize) -> Result {
    let mut text = [0u8; 256];
    if len == 0 || len >= text.len() {
        return Err(EINVAL);
    }
    data.read_slice(&mut text[..len])?;
    run(&text[..len])
}

/// Runs one command, from the file or from kernel code.
fn run(text: &[u8]) -> Result {
    // A command from a module's init before the profiler's initcall.
    if !LOCKS_READY.load(Ordering::Acquire) {
        return Err(ENODEV);
    }
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let mut words = text.split(|&c| c == b' ').filter(|w| !w.is_empty());
    match words.next() {
        Some(b"arm") => arm(&Spec::parse(&mut words)?),
        Some(b"disarm") => {
            let mut rest = words.clone();
            if rest.next() == Some(b"all") && rest.next().is_none() {
                let reg = registry::read().ok_or(ENODEV)?;
                let c = Control::lock();
                disarm_where(&reg, &c, |_| true);
                return Ok(());
            }
            let spec = Spec::parse(&mut words)?;
            let reg = registry::read().ok_or(ENODEV)?;
            let c = Control::lock();
            if disarm_where(&reg, &c, |t| spec.matches(t)) == 0 {
                return Err(ENOENT);
            }
            Ok(())
        }
        _ => {
            pr_err!("alloc_tag: capture: commands are arm SPEC, disarm SPEC, disarm all\n");
            Err(EINVAL)
        }
    }
}

/// One command of the control file from kernel code (the bench module
/// arms its own site). Process context.
pub(super) fn command_str(text: &[u8]) -> Result {
    if text.is_empty() || text.len() >= 256 {
        return Err(EINVAL);
    }
    run(text)
}

static CAPTURE_FOPS: SingleFileOps<Report> = SingleFileOps::new();

/// Creates the control and report file (the profiler's initcall).
pub(crate) fn init() {
    // Without the file capture is never armed.
    capture_c::create_debugfs_file(crate::c_str!("allocinfo_capture"), 0o600, &CAPTURE_FOPS);
}
