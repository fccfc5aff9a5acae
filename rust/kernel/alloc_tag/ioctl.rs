// SPDX-License-Identifier: GPL-2.0

//! The binary interface of `/proc/allocinfo`: the `ALLOCINFO_IOC_*` ioctls.
//!
//! C header: [`include/uapi/linux/alloc_tag.h`](srctree/include/uapi/linux/alloc_tag.h)
//!
//! The layout and the semantics are upstream's (Linux 7.3), so programs
//! written for it work unchanged:
//!
//! - `CONTENT_ID`: a number that changes whenever a module with tags is
//!   loaded or unloaded ([`registry::content_id`]).
//! - `GET_AT`: validates a filter, then returns the `pos`-th tag (from 0)
//!   that passes it and keeps the filter and that position on the open file;
//!   `ENOENT` if `pos` is not below the number of tags or no such tag exists,
//!   and then the file's filter and position stay as they were.
//! - `GET_NEXT`: the next tag after the last one returned that passes the
//!   stored filter; `ENOENT` at the end, after which the walk starts again
//!   from the first tag.
//! - `GET_BATCH` (this kernel's own, not upstream's): up to `max` records of
//!   the same walk in one call, gathered a chunk at a time under the
//!   registry's read lock and copied out after it is dropped; a batch ends
//!   early rather than span a module load or unload, and reports the
//!   content id its records were read under. With `ALLOCINFO_BATCH_TAG_ID`
//!   each record also carries the tag's id, its walk position (which stays
//!   while the content id does); with `ALLOCINFO_BATCH_COUNTERS` a record is
//!   that id and the counters alone, for a reader that keeps the names per
//!   content id and so copies no name in its later walks;
//!   `ALLOCINFO_BATCH_RESTART` starts the walk again from its first tag.
//!
//! Each open file keeps its own position (a tag slot of the registry, which a
//! Rust call site registering meanwhile does not move:
//! [`registry::ReadGuard::next_from`]), filter and lock, so `GET_NEXT`
//! resumes in O(number of modules) and never walks the tags
//! already returned; `read()` of the same file is not disturbed. Each call
//! holds the registry for reading only while it runs, so module loads wait
//! at most for one call, and allocators never wait at all.
//!
//! Bad input fails cleanly and changes nothing: unknown mask bits, a
//! `min_size` above `max_size`, and a name the filter uses that has no NUL
//! within its 64 bytes give `EINVAL`; a command of another size, number or
//! magic gives `ENOTTY`; a bad user pointer gives `EFAULT`. The input is
//! read whole into a kernel copy of the command's struct
//! (`UserSliceReader::read()`) before it is looked at; replies are written
//! from a zeroed buffer, as `allocinfo_counter` has padding that a struct
//! built in Rust would leave undefined.

use super::{node, registry, tag::HeldTag};
use crate::{
    alloc::{flags::GFP_KERNEL, KVec},
    bindings,
    error::{code::*, Error},
    init::PinInit,
    ioctl, new_mutex, pin_init,
    str::CStr,
    sync::Mutex,
    types::FromBytes,
    uaccess::UserSlice,
};
use core::{
    cell::UnsafeCell,
    mem::{offset_of, size_of},
};
use macros::pin_data;

type GetAt = bindings::allocinfo_get_at;
type Filter = bindings::allocinfo_filter;
type TagData = bindings::allocinfo_tag_data;
type Tag = bindings::allocinfo_tag;
type Counter = bindings::allocinfo_counter;
type Batch = bindings::allocinfo_batch;
type TagRecord = bindings::allocinfo_tag_record;
type CounterRecord = bindings::allocinfo_counter_record;
type NodesHead = bindings::allocinfo_nodes;
type NodeCounter = bindings::allocinfo_node_counter;

/// `ALLOCINFO_IOC_CONTENT_ID`.
pub(super) const IOC_CONTENT_ID: u32 = ioctl::_IOR::<bindings::allocinfo_content_id>(
    bindings::ALLOCINFO_IOC_BASE,
    bindings::_ALLOCINFO_IOC_CONTENT_ID,
);
/// `ALLOCINFO_IOC_GET_AT`.
pub(super) const IOC_GET_AT: u32 = ioctl::_IOWR::<GetAt>(
    bindings::ALLOCINFO_IOC_BASE,
    bindings::_ALLOCINFO_IOC_GET_AT,
);
/// `ALLOCINFO_IOC_GET_NEXT`.
pub(super) const IOC_GET_NEXT: u32 = ioctl::_IOR::<TagData>(
    bindings::ALLOCINFO_IOC_BASE,
    bindings::_ALLOCINFO_IOC_GET_NEXT,
);
/// `ALLOCINFO_IOC_GET_BATCH` with the structure this kernel knows; the
/// command is also taken with another size ([`batch_size`]).
pub(super) const IOC_GET_BATCH: u32 = ioctl::_IOWR::<Batch>(
    bindings::ALLOCINFO_IOC_BASE,
    bindings::_ALLOCINFO_IOC_GET_BATCH,
);

const STR_SIZE: usize = bindings::ALLOCINFO_STR_SIZE as usize;
const MASKS: u64 = (1 << (bindings::__ALLOCINFO_FILTER_LAST + 1)) - 1;
const F_MODNAME: u64 = 1 << bindings::ALLOCINFO_FILTER_MODNAME;
const F_FUNCTION: u64 = 1 << bindings::ALLOCINFO_FILTER_FUNCTION;
const F_FILENAME: u64 = 1 << bindings::ALLOCINFO_FILTER_FILENAME;
const F_LINENO: u64 = 1 << bindings::ALLOCINFO_FILTER_LINENO;
const F_INACCURATE: u64 = 1 << bindings::ALLOCINFO_FILTER_INACCURATE;
const F_MIN_SIZE: u64 = 1 << bindings::ALLOCINFO_FILTER_MIN_SIZE;
const F_MAX_SIZE: u64 = 1 << bindings::ALLOCINFO_FILTER_MAX_SIZE;
const BATCH_FLAGS: u32 = bindings::ALLOCINFO_BATCH_FLAGS;
const BATCH_TAG_ID: u32 = bindings::ALLOCINFO_BATCH_TAG_ID;
const BATCH_COUNTERS: u32 = bindings::ALLOCINFO_BATCH_COUNTERS;
const BATCH_NODES: u32 = bindings::ALLOCINFO_BATCH_NODES;
const BATCH_RESTART: u32 = bindings::ALLOCINFO_BATCH_RESTART;
const BATCH_MAX: usize = bindings::ALLOCINFO_BATCH_MAX as usize;
const RECORD_SIZE_MAX: usize = bindings::ALLOCINFO_RECORD_SIZE_MAX as usize;

// The wire layout the byte offsets below rely on: upstream's, checked here
// against the header bindgen read.
const _: () = {
    assert!(size_of::<Tag>() == 200);
    assert!(size_of::<Counter>() == 24);
    assert!(size_of::<TagData>() == 224);
    assert!(size_of::<Filter>() == 232);
    assert!(size_of::<GetAt>() == 464);
    assert!(size_of::<Batch>() == bindings::ALLOCINFO_BATCH_SIZE_VER0 as usize);
    assert!(size_of::<TagRecord>() == 232);
    assert!(offset_of!(TagRecord, tag_id) == size_of::<TagData>());
    assert!(size_of::<CounterRecord>() == 32);
    assert!(offset_of!(CounterRecord, counter) == 8);
    assert!(offset_of!(Batch, content_id) == offset_of!(Batch, count) + 4);
    assert!(IOC_CONTENT_ID == 0x8008_a600);
    assert!(IOC_GET_AT == 0xc1d0_a601);
    assert!(IOC_GET_NEXT == 0x80e0_a602);
    assert!(IOC_GET_BATCH == 0xc020_a620);
    assert!(MASKS == 0x7f);
};

// SAFETY: `struct allocinfo_get_at` is integers and `char` arrays (a
// filter and a tag data within), for which every bit pattern is valid.
unsafe impl FromBytes for GetAt {}

// SAFETY: `struct allocinfo_batch` is integers only, with no padding (its
// size is the sum of its fields', checked above).
unsafe impl FromBytes for Batch {}

/// Stores `v` at byte `off` of `buf` (nothing if it does not fit): one store
/// of an array, where a slice copy is a `memcpy()` call at `-Os`, per field
/// of every record.
#[inline(always)]
fn put_u64(buf: &mut [u8], off: usize, v: u64) {
    if let Some(Ok(d)) = buf
        .get_mut(off..off.saturating_add(8))
        .map(<&mut [u8; 8]>::try_from)
    {
        *d = v.to_ne_bytes();
    }
}

/// How a name appears in the interface: its last `STR_SIZE - 1` bytes.
fn trimmed(name: &[u8]) -> &[u8] {
    &name[name.len().saturating_sub(STR_SIZE - 1)..]
}

/// A validated filter.
#[derive(Clone, Copy)]
struct Criteria {
    mask: u64,
    modname: [u8; STR_SIZE],
    function: [u8; STR_SIZE],
    filename: [u8; STR_SIZE],
    lineno: u64,
    inaccurate: bool,
    min_size: u64,
    max_size: u64,
}

/// A name field of a filter, kept NUL-terminated: `EINVAL` if the filter
/// uses it and it has no NUL, all zeroes if the filter does not use it.
/// (`char` is `u8` in the kernel.)
fn name_field(field: &[u8; STR_SIZE], used: bool) -> Result<[u8; STR_SIZE], Error> {
    if !used {
        return Ok([0; STR_SIZE]);
    }
    let len = field.iter().position(|&c| c == 0).ok_or(EINVAL)?;
    let mut out = [0u8; STR_SIZE];
    out[..len].copy_from_slice(&field[..len]);
    Ok(out)
}

fn field_eq(field: &[u8; STR_SIZE], name: &[u8]) -> bool {
    let len = field.iter().position(|&c| c == 0).unwrap_or(STR_SIZE);
    &field[..len] == trimmed(name)
}

impl Criteria {
    const ALL: Criteria = Criteria {
        mask: 0,
        modname: [0; STR_SIZE],
        function: [0; STR_SIZE],
        filename: [0; STR_SIZE],
        lineno: 0,
        inaccurate: false,
        min_size: 0,
        max_size: 0,
    };

    /// Checks a filter and keeps what it asks for.
    fn parse(f: &Filter) -> Result<Criteria, Error> {
        let mask = f.mask;
        if mask & !MASKS != 0 {
            return Err(EINVAL);
        }
        let c = Criteria {
            mask,
            modname: name_field(&f.fields.modname, mask & F_MODNAME != 0)?,
            function: name_field(&f.fields.function, mask & F_FUNCTION != 0)?,
            filename: name_field(&f.fields.filename, mask & F_FILENAME != 0)?,
            lineno: f.fields.lineno,
            inaccurate: f.inaccurate != 0,
            min_size: f.min_size,
            max_size: f.max_size,
        };
        if mask & F_MIN_SIZE != 0 && mask & F_MAX_SIZE != 0 && c.min_size > c.max_size {
            return Err(EINVAL);
        }
        Ok(c)
    }

    /// Whether `tag` passes: every tag for the empty filter, inline, else
    /// [`Criteria::matches`].
    #[inline(always)]
    fn passes(&self, tag: &HeldTag) -> bool {
        self.mask == 0 || self.matches(tag)
    }

    /// Whether `tag` passes; reads its counters only for a size criterion.
    fn matches(&self, tag: &HeldTag) -> bool {
        let m = self.mask;
        if m == 0 {
            return true;
        }
        if m & F_MODNAME != 0 {
            let ok = match tag.module_name() {
                None => self.modname[0] == 0,
                Some(name) => field_eq(&self.modname, name.as_bytes()),
            };
            if !ok {
                return false;
            }
        }
        if m & F_FUNCTION != 0 && !field_eq(&self.function, tag.function().as_bytes()) {
            return false;
        }
        if m & F_FILENAME != 0 && !field_eq(&self.filename, tag.file().as_bytes()) {
            return false;
        }
        if m & F_LINENO != 0 && u64::from(tag.line()) != self.lineno {
            return false;
        }
        if m & F_INACCURATE != 0 && tag.is_accurate() == self.inaccurate {
            return false;
        }
        if m & (F_MIN_SIZE | F_MAX_SIZE) != 0 {
            let bytes = tag.read().bytes as u64;
            if m & F_MIN_SIZE != 0 && bytes < self.min_size {
                return false;
            }
            if m & F_MAX_SIZE != 0 && bytes > self.max_size {
                return false;
            }
        }
        true
    }
}

/// Writes `name` (NUL-terminated, NULL for none) into the name field `dst`
/// as the interface shows it: whole if it fits in `STR_SIZE - 1` bytes,
/// else its last `STR_SIZE - 1`; every byte after the name is zero.
///
/// # Safety
///
/// A non-NULL `name` is a NUL-terminated string, valid for the call.
///
/// # Examples
///
/// Names of every length up to past the field's, the last one ending at
/// the last byte of a `vmalloc()` area (a guard page follows: a read past
/// the string's page would fault):
///
/// ```
/// use kernel::alloc::{flags::GFP_KERNEL, VVec};
/// use kernel::alloc_tag::testing::put_name;
///
/// let mut area = VVec::<u8>::with_capacity(4096, GFP_KERNEL)?;
/// area.extend_with(4096, 0, GFP_KERNEL)?;
/// let end = area.len() - 1;
/// for len in 0..100 {
///     for at in [0, 5, 4096 - 64, 4096 - 63, end - len] {
///         if at + len > end {
///             continue;
///         }
///         area.fill(0);
///         for (i, b) in area[at..at + len].iter_mut().enumerate() {
///             *b = b'a' + (i % 26) as u8;
///         }
///         let mut field = [0xa5u8; 64];
///         // SAFETY: `area[at..]` holds a string: `len` letters, then a NUL.
///         unsafe { put_name(&mut field, area[at..].as_ptr()) };
///         let shown = len.min(63);
///         assert_eq!(&field[..shown], &area[at + len - shown..at + len]);
///         assert!(field[shown..].iter().all(|&b| b == 0));
///     }
/// }
/// let mut field = [0xa5u8; 64];
/// // SAFETY: NULL is no name.
/// unsafe { put_name(&mut field, core::ptr::null()) };
/// assert_eq!(field, [0u8; 64]);
/// # Ok::<(), kernel::error::Error>(())
/// ```
#[inline(always)]
pub unsafe fn put_name(dst: &mut [u8; STR_SIZE], name: *const u8) {
    // Eight stores; the copy below then writes only up to the NUL.
    *dst = [0; STR_SIZE];
    if name.is_null() {
        return;
    }
    // SAFETY: `name` is a string (the caller).
    if unsafe { put_name_words(dst, name) } {
        return;
    }
    *dst = [0; STR_SIZE];
    // SAFETY: `dst` is `STR_SIZE` writable bytes; `name` is a string (the
    // caller).
    let n = unsafe { bindings::sized_strscpy(dst.as_mut_ptr().cast(), name.cast(), STR_SIZE) };
    if n < 0 {
        // Longer (-E2BIG): its tail, over the head strscpy left; the NUL
        // at the end stays.
        // SAFETY: as above.
        let s = trimmed(unsafe { CStr::from_char_ptr(name.cast()) }.as_bytes());
        dst[..s.len()].copy_from_slice(s);
    }
}

/// The `u64` at `p`, loaded as `read_word_at_a_time()` does: one load that
/// may reach past the end of the object `p` is in, which no sanitizer
/// instruments.
///
/// # Safety
///
/// The eight bytes from `p` are in one mapped page.
#[cfg(CONFIG_X86_64)]
#[inline(always)]
unsafe fn load_word(p: *const u8) -> u64 {
    let w: u64;
    // SAFETY: a load from mapped memory (the caller); it writes nothing.
    unsafe {
        core::arch::asm!(
            "mov {w}, qword ptr [{p}]",
            p = in(reg) p,
            w = lateout(reg) w,
            options(nostack, readonly, pure, preserves_flags),
        );
    }
    w
}

/// [`put_name`] for a non-NULL `name` shorter than the field that starts at
/// least `STR_SIZE` bytes before the end of its page, into the zeroed `dst`,
/// eight bytes a step up to the NUL (the bytes past the NUL that a step
/// loads are in that page, so mapped); `false`, with `dst` partly written,
/// for any other.
///
/// # Safety
///
/// `name` is a string, valid for the call.
#[inline(always)]
unsafe fn put_name_words(dst: &mut [u8; STR_SIZE], name: *const u8) -> bool {
    #[cfg(CONFIG_X86_64)]
    {
        const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
        const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
        if (name as usize) % crate::page::PAGE_SIZE > crate::page::PAGE_SIZE - STR_SIZE {
            return false;
        }
        for i in 0..STR_SIZE / 8 {
            // SAFETY: `name + 8 * i` to `name + 8 * i + 7` are below
            // `name + STR_SIZE`, in `name`'s page (checked above), which is
            // mapped as `name`'s first byte is.
            let w = unsafe { load_word(name.add(8 * i)) };
            // Little-endian: the lowest high bit set is the first zero
            // byte's (those above it may be false).
            let zero = w.wrapping_sub(ONES) & !w & HIGHS;
            if zero != 0 {
                // The bytes below the NUL; the rest of `dst` is zero.
                put_u64(dst, 8 * i, w & ((zero.wrapping_sub(1) & !zero) >> 7));
                return true;
            }
            put_u64(dst, 8 * i, w);
        }
    }
    #[cfg(not(CONFIG_X86_64))]
    let _ = (dst, name);
    false
}

/// The name field of `out` at byte `off`.
fn record_name(out: &mut [u8; size_of::<TagData>()], off: usize) -> Option<&mut [u8; STR_SIZE]> {
    out.get_mut(off..off + STR_SIZE)?.try_into().ok()
}

/// Writes `tag`'s `allocinfo_counter` at byte `k` of `out`, every byte of
/// it (the padding zero).
fn fill_counter(out: &mut [u8], k: usize, tag: &HeldTag) {
    let c = tag.read();
    put_u64(out, k + offset_of!(Counter, bytes), c.bytes as u64);
    put_u64(out, k + offset_of!(Counter, calls), c.calls);
    // `accurate` and the padding after it: one word, little-endian.
    put_u64(
        out,
        k + offset_of!(Counter, accurate),
        u64::from(tag.is_accurate()).to_le(),
    );
}

/// Writes `tag`'s `allocinfo_tag_data` into `out`, every byte of it (the
/// padding zero): field by field, so that no byte is written twice and
/// each store is inline.
fn fill(out: &mut [u8; size_of::<TagData>()], tag: &HeldTag) {
    let t = offset_of!(TagData, tag);
    let [modname, function, filename] = tag.names_raw();
    // Field by field, not a loop over them: at `-Os` the loop stays a loop
    // with an iterator's bookkeeping per name.
    if let Some(dst) = record_name(out, t + offset_of!(Tag, modname)) {
        // SAFETY: NULL or strings that stay while `tag` is borrowed
        // (`HeldTag`), which is longer than this call.
        unsafe { put_name(dst, modname) };
    }
    if let Some(dst) = record_name(out, t + offset_of!(Tag, function)) {
        // SAFETY: as above.
        unsafe { put_name(dst, function) };
    }
    if let Some(dst) = record_name(out, t + offset_of!(Tag, filename)) {
        // SAFETY: as above.
        unsafe { put_name(dst, filename) };
    }
    put_u64(out, t + offset_of!(Tag, lineno), u64::from(tag.line()));
    fill_counter(out, offset_of!(TagData, counter), tag);
}

/// What a `GET_BATCH` record holds, from the request's flags.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RecordKind {
    /// `allocinfo_tag_data`.
    Data,
    /// `allocinfo_tag_record`: the data and the tag's id.
    DataId,
    /// `allocinfo_counter_record`: the tag's id and its counters.
    Counters,
}

impl RecordKind {
    /// The kind `flags` asks for: `EINVAL` for a flag this kernel does not
    /// know.
    fn from_flags(flags: u32) -> Result<RecordKind, Error> {
        if flags & !BATCH_FLAGS != 0 {
            return Err(EINVAL);
        }
        Ok(if flags & BATCH_COUNTERS != 0 {
            RecordKind::Counters
        } else if flags & BATCH_TAG_ID != 0 {
            RecordKind::DataId
        } else {
            RecordKind::Data
        })
    }

    /// Where the record's `allocinfo_counter` is.
    fn counter_offset(self) -> usize {
        match self {
            RecordKind::Counters => offset_of!(CounterRecord, counter),
            RecordKind::Data | RecordKind::DataId => offset_of!(TagData, counter),
        }
    }

    /// The bytes of a record the kernel writes; a stride may be longer.
    fn size(self) -> usize {
        match self {
            RecordKind::Data => size_of::<TagData>(),
            RecordKind::DataId => size_of::<TagRecord>(),
            RecordKind::Counters => size_of::<CounterRecord>(),
        }
    }

    /// Writes the record of `tag`, whose id is `id`, into `out` (at least
    /// `size()` bytes: `put_u64()` writes nothing past its end), every
    /// byte of its `size()`.
    fn fill(self, out: &mut [u8], tag: &HeldTag, id: usize) {
        match self {
            RecordKind::Counters => {
                put_u64(out, offset_of!(CounterRecord, tag_id), id as u64);
                fill_counter(out, offset_of!(CounterRecord, counter), tag);
            }
            RecordKind::Data | RecordKind::DataId => {
                if let Some(r) = out.get_mut(..size_of::<TagData>()) {
                    if let Ok(r) = r.try_into() {
                        fill(r, tag);
                    }
                }
                if self == RecordKind::DataId {
                    put_u64(out, offset_of!(TagRecord, tag_id), id as u64);
                }
            }
        }
    }
}

/// Where one open file's walk is.
struct Walk {
    next: usize,
    positioned: bool,
    criteria: Criteria,
}

/// Bytes of `GET_BATCH` records gathered per hold of the registry, in each
/// open file's own buffer: no allocation per call, and a module load waits
/// for at most this many bytes of records. What the walk leaves of 4 KiB,
/// the `kmalloc()` size class the file's private area (the [`State`]) is
/// taken from anyway.
const BATCH_BUF: usize = (4096 - size_of::<Mutex<Walk>>()) & !63;

// At least two records per hold, whatever the stride.
const _: () = assert!(BATCH_BUF >= 2 * RECORD_SIZE_MAX);
const _: () = assert!(size_of::<State>() <= 4096);

/// One open file's state: its walk, under its own mutex (ioctls on one file
/// descriptor may come from several threads), and `GET_BATCH`'s buffer.
///
/// # Invariants
///
/// `batch_buf` is used only by the holder of `walk`'s lock.
#[pin_data]
pub(super) struct State {
    #[pin]
    walk: Mutex<Walk>,
    batch_buf: UnsafeCell<[u8; BATCH_BUF]>,
}

// SAFETY: `walk` is a mutex, and `batch_buf` is used only under it (type
// invariant), so `&State` may be shared between threads.
unsafe impl Sync for State {}

/// Sets up the state of a new open file.
///
/// # Safety
///
/// `state` points to memory of a `State`'s size and alignment (the
/// seq_file's private area), not yet used by anyone, that does not move
/// while the file is open.
pub(super) unsafe fn state_init(state: *mut State) {
    let init = pin_init!(State {
        walk <- new_mutex!(
            Walk {
                next: 0,
                positioned: false,
                criteria: Criteria::ALL,
            },
            "allocinfo_ioctl"
        ),
        // Zeroed in place: no 2 KiB value on the stack.
        batch_buf <- crate::init::zeroed(),
    });
    // SAFETY: valid for writes, unused and never moved (the caller).
    match unsafe { init.__pinned_init(state) } {
        Ok(()) => {}
        Err(e) => match e {},
    }
}

/// The first tag from index `from` on that passes `c`, with its index.
fn find<'g>(
    guard: &'g registry::ReadGuard,
    mut from: usize,
    c: &Criteria,
    mut skip: u64,
) -> Option<(usize, &'g HeldTag)> {
    while let Some((idx, tag)) = guard.next_from(from) {
        if c.passes(tag) {
            if skip == 0 {
                return Some((idx, tag));
            }
            skip -= 1;
        }
        from = idx + 1;
    }
    None
}

fn get_at(state: &State, arg: usize) -> Result<(), Error> {
    let req: GetAt = UserSlice::new(arg, size_of::<GetAt>()).reader().read()?;
    let criteria = Criteria::parse(&req.filter)?;
    let pos = req.pos;
    let mut walk = state.walk.lock();
    let guard = registry::read().ok_or(ENOENT)?;
    if pos >= guard.len() as u64 {
        return Err(ENOENT);
    }
    let (idx, tag) = find(&guard, 0, &criteria, pos).ok_or(ENOENT)?;
    // Found: only now does the walk take the new filter and position.
    walk.criteria = criteria;
    walk.next = idx + 1;
    walk.positioned = true;
    let mut buf = [0u8; size_of::<TagData>()];
    fill(&mut buf, tag);
    drop(guard);
    drop(walk);
    // Only the reply part: the request's part is what the caller wrote.
    let reply = arg.checked_add(offset_of!(GetAt, data)).ok_or(EFAULT)?;
    UserSlice::new(reply, buf.len()).writer().write_slice(&buf)
}

fn get_next(state: &State, arg: usize) -> Result<(), Error> {
    let mut buf = [0u8; size_of::<TagData>()];
    let mut walk = state.walk.lock();
    let from = if walk.positioned { walk.next } else { 0 };
    let guard = registry::read().ok_or(ENOENT)?;
    let Some((idx, tag)) = find(&guard, from, &walk.criteria, 0) else {
        walk.positioned = false;
        return Err(ENOENT);
    };
    walk.next = idx + 1;
    walk.positioned = true;
    fill(&mut buf, tag);
    drop(guard);
    drop(walk);
    UserSlice::new(arg, buf.len()).writer().write_slice(&buf)
}

/// The size a `GET_BATCH` command carries, if `cmd` is one: the structure
/// is versioned by its size, so every size is the same command.
fn batch_size(cmd: u32) -> Option<usize> {
    let same = ioctl::_IOC_DIR(cmd) == ioctl::_IOC_DIR(IOC_GET_BATCH)
        && ioctl::_IOC_TYPE(cmd) == ioctl::_IOC_TYPE(IOC_GET_BATCH)
        && ioctl::_IOC_NR(cmd) == ioctl::_IOC_NR(IOC_GET_BATCH);
    same.then(|| ioctl::_IOC_SIZE(cmd))
}

/// Reads a `GET_BATCH` request of `size` bytes: `EINVAL` below the first
/// version's size; `E2BIG` if a byte past what this kernel knows is set (a
/// later version's field it would ignore).
fn read_batch(arg: usize, size: usize) -> Result<Batch, Error> {
    if size < size_of::<Batch>() {
        return Err(EINVAL);
    }
    let mut r = UserSlice::new(arg, size).reader();
    let req: Batch = r.read()?;
    let mut rest = [0u8; 64];
    while !r.is_empty() {
        let n = r.len().min(rest.len());
        r.read_slice(&mut rest[..n])?;
        if rest[..n].iter().any(|&b| b != 0) {
            return Err(E2BIG);
        }
    }
    Ok(req)
}

/// `ALLOCINFO_BATCH_NODES`' part of a record: after the record proper,
/// `struct allocinfo_nodes` and its `nr_nodes` pairs.
struct NodePart {
    /// Where the part starts in a record.
    at: usize,
    /// One entry per node, filled per record.
    scratch: KVec<node::NodeCounters>,
}

impl NodePart {
    /// The part `flags` asks for after records of `kind`: `None` without
    /// `ALLOCINFO_BATCH_NODES`, `EOPNOTSUPP` when this boot has no per-node
    /// view (several nodes, attribution off).
    fn new(flags: u32, kind: RecordKind) -> Result<Option<NodePart>, Error> {
        if flags & BATCH_NODES == 0 {
            return Ok(None);
        }
        let n = node::nodes().ok_or_else(|| Error::from_errno(-(bindings::EOPNOTSUPP as i32)))?;
        let mut scratch = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            scratch.push(node::NodeCounters::default(), GFP_KERNEL)?;
        }
        Ok(Some(NodePart {
            at: kind.size(),
            scratch,
        }))
    }

    /// The bytes of the part.
    fn size(&self) -> usize {
        size_of::<NodesHead>() + self.scratch.len() * size_of::<NodeCounter>()
    }

    /// Writes `tag`'s nodes into record `out` of `kind`, and the row read in
    /// the same pass over its counter, so that the nodes add up to it.
    fn fill(&mut self, out: &mut [u8], kind: RecordKind, tag: &HeldTag) {
        let row = node::read(tag, &mut self.scratch);
        let c = kind.counter_offset();
        put_u64(out, c + offset_of!(Counter, bytes), row.bytes as u64);
        put_u64(out, c + offset_of!(Counter, calls), row.calls);
        put_u64(
            out,
            self.at + offset_of!(NodesHead, nr_nodes),
            self.scratch.len() as u64,
        );
        let mut at = self.at + size_of::<NodesHead>();
        for n in self.scratch.iter() {
            put_u64(out, at + offset_of!(NodeCounter, bytes), n.bytes as u64);
            put_u64(out, at + offset_of!(NodeCounter, calls), n.calls as u64);
            at += size_of::<NodeCounter>();
        }
    }
}

fn get_batch(state: &State, arg: usize, size: usize) -> Result<(), Error> {
    let req = read_batch(arg, size)?;
    let kind = RecordKind::from_flags(req.flags)?;
    let mut nodes = NodePart::new(req.flags, kind)?;
    let stride = req.record_size as usize;
    let max = req.max as usize;
    let need = kind.size() + nodes.as_ref().map_or(0, NodePart::size);
    if stride < need || stride > RECORD_SIZE_MAX || max == 0 || max > BATCH_MAX {
        return Err(EINVAL);
    }
    let per_chunk = (BATCH_BUF / stride).clamp(1, max);
    let mut out = UserSlice::new(req.records as usize, max * stride).writer();

    let mut walk = state.walk.lock();
    // SAFETY: `walk`'s lock is held until the end of the call, so nobody
    // else uses the buffer (type invariant).
    let buf = unsafe { &mut *state.batch_buf.get() };
    if stride > need {
        // `fill()` writes a record's known part; the rest of each stride
        // is zero, once for the call.
        buf[..per_chunk * stride].fill(0);
    }
    // The walk moves only once everything is written.
    let (mut next, mut positioned) = if req.flags & BATCH_RESTART != 0 {
        (0, false)
    } else {
        (walk.next, walk.positioned)
    };
    let mut count = 0;
    let mut id = None;
    let mut ended = false;
    while count < max && !ended {
        let want = per_chunk.min(max - count);
        let mut n = 0;
        {
            let Some(guard) = registry::read() else {
                break;
            };
            // Stable while the guard is held: loads and unloads change it
            // under the write lock.
            let now = registry::content_id();
            if *id.get_or_insert(now) != now {
                break;
            }
            let mut from = if positioned { next } else { 0 };
            let Some(area) = buf.get_mut(..want * stride) else {
                break;
            };
            let mut slots = area.chunks_exact_mut(stride);
            // A run of tags at a time: one registry lookup per segment.
            // Positions stay below the number of tag slots, so adding to
            // them does not wrap.
            'chunk: loop {
                let Some((at, run)) = guard.run_from(from) else {
                    (next, positioned, ended) = (0, false, true);
                    break;
                };
                let mut pos = at;
                for tag in run {
                    pos = pos.wrapping_add(1);
                    if !walk.criteria.passes(tag) {
                        continue;
                    }
                    let Some(r) = slots.next() else {
                        break 'chunk;
                    };
                    kind.fill(r, tag, pos.wrapping_sub(1));
                    if let Some(p) = nodes.as_mut() {
                        p.fill(r, kind, tag);
                    }
                    (next, positioned) = (pos, true);
                    n += 1;
                    // Full: stop before looking further, so that a batch
                    // that ends with the last tag does not end the walk
                    // (the next call returns none, as GET_NEXT's ENOENT).
                    if n == want {
                        break 'chunk;
                    }
                }
                from = at.wrapping_add(run.len());
            }
        }
        // Outside the registry's lock: a fault here waits for no module.
        out.write_slice(&buf[..n * stride])?;
        count += n;
    }
    let mut reply = [0u8; 12];
    reply[..4].copy_from_slice(&(count as u32).to_ne_bytes());
    let id = id.unwrap_or_else(registry::content_id);
    reply[4..].copy_from_slice(&id.to_ne_bytes());
    let at = arg.checked_add(offset_of!(Batch, count)).ok_or(EFAULT)?;
    UserSlice::new(at, reply.len())
        .writer()
        .write_slice(&reply)?;
    walk.next = next;
    walk.positioned = positioned;
    Ok(())
}

fn content_id(arg: usize) -> Result<(), Error> {
    let id = registry::content_id().to_ne_bytes();
    UserSlice::new(arg, id.len()).writer().write_slice(&id)
}

/// One ioctl on an open `/proc/allocinfo` (the compat ioctl too: the
/// layout is the same for 32-bit callers).
pub(super) fn dispatch(state: &State, cmd: u32, arg: usize) -> Result<(), Error> {
    match cmd {
        IOC_CONTENT_ID => content_id(arg),
        IOC_GET_AT => get_at(state, arg),
        IOC_GET_NEXT => get_next(state, arg),
        _ => match batch_size(cmd) {
            Some(size) => get_batch(state, arg, size),
            None => Err(ENOTTY),
        },
    }
}
