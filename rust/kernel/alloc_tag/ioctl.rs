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

use super::{registry, tag::AllocTag};
use crate::{
    bindings,
    error::{code::*, Error},
    ioctl,
    types::{FromBytes, Opaque},
    uaccess::UserSlice,
};
use core::cell::UnsafeCell;
use core::mem::{offset_of, size_of};

type GetAt = bindings::allocinfo_get_at;
type Filter = bindings::allocinfo_filter;
type TagData = bindings::allocinfo_tag_data;
type Tag = bindings::allocinfo_tag;
type Counter = bindings::allocinfo_counter;

/// `ALLOCINFO_IOC_CONTENT_ID`.
pub const IOC_CONTENT_ID: u32 = ioctl::_IOR::<bindings::allocinfo_content_id>(
    bindings::ALLOCINFO_IOC_BASE,
    bindings::_ALLOCINFO_IOC_CONTENT_ID,
);
/// `ALLOCINFO_IOC_GET_AT`.
pub const IOC_GET_AT: u32 = ioctl::_IOWR::<GetAt>(
    bindings::ALLOCINFO_IOC_BASE,
    bindings::_ALLOCINFO_IOC_GET_AT,
);
/// `ALLOCINFO_IOC_GET_NEXT`.
pub const IOC_GET_NEXT: u32 = ioctl::_IOR::<TagData>(
    bindings::ALLOCINFO_IOC_BASE,
    bindings::_ALLOCINFO_IOC_GET_NEXT,
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

// The wire layout the byte offsets below rely on: upstream's, checked here
// against the header bindgen read.
const _: () = {
    assert!(size_of::<Tag>() == 200);
    assert!(size_of::<Counter>() == 24);
    assert!(size_of::<TagData>() == 224);
    assert!(size_of::<Filter>() == 232);
    assert!(size_of::<GetAt>() == 464);
    assert!(IOC_CONTENT_ID == 0x8008_a600);
    assert!(IOC_GET_AT == 0xc1d0_a601);
    assert!(IOC_GET_NEXT == 0x80e0_a602);
    assert!(MASKS == 0x7f);
};

// SAFETY: `struct allocinfo_get_at` is integers and `char` arrays (a
// filter and a tag data within), for which every bit pattern is valid.
unsafe impl FromBytes for GetAt {}

fn put_u64(buf: &mut [u8], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_ne_bytes());
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

    /// Whether `tag` passes; reads its counters only for a size criterion.
    fn matches(&self, tag: &AllocTag) -> bool {
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

/// Writes `tag`'s `allocinfo_tag_data` into `out` (all of it: unused bytes
/// are zero).
fn fill(out: &mut [u8], tag: &AllocTag) {
    out.fill(0);
    let t = offset_of!(TagData, tag);
    let mut name = |off: usize, s: &[u8]| {
        let s = trimmed(s);
        out[t + off..t + off + s.len()].copy_from_slice(s);
    };
    name(
        offset_of!(Tag, modname),
        tag.module_name().map_or(&b""[..], |m| m.as_bytes()),
    );
    name(offset_of!(Tag, function), tag.function().as_bytes());
    name(offset_of!(Tag, filename), tag.file().as_bytes());
    put_u64(out, t + offset_of!(Tag, lineno), u64::from(tag.line()));
    let c = tag.read();
    let k = offset_of!(TagData, counter);
    put_u64(out, k + offset_of!(Counter, bytes), c.bytes as u64);
    put_u64(out, k + offset_of!(Counter, calls), c.calls);
    out[k + offset_of!(Counter, accurate)] = u8::from(tag.is_accurate());
}

/// Where one open file's walk is.
struct Walk {
    next: usize,
    positioned: bool,
    criteria: Criteria,
}

/// One open file's state: its walk, under its own lock.
///
/// # Invariants
///
/// Only [`state_init`] makes one (from zeroed memory), so `lock` is an
/// initialised mutex; `walk` is only used with `lock` held.
#[repr(C)]
pub(super) struct State {
    lock: Opaque<bindings::mutex>,
    walk: UnsafeCell<Walk>,
}

// SAFETY: `walk` is only used with `lock` held (invariant).
unsafe impl Sync for State {}

/// Sets up the state of a new open file.
///
/// # Safety
///
/// `state` points to zeroed memory of a `State`'s size and alignment (the
/// seq_file's private area), not yet used by anyone.
pub(super) unsafe fn state_init(state: *mut State) {
    // SAFETY: valid, exclusive (caller); all-zero is a valid `usize`, `bool`
    // and `Criteria`. The mutex is initialised before any use; its class key
    // is static.
    unsafe {
        core::ptr::addr_of_mut!((*state).walk).write(UnsafeCell::new(Walk {
            next: 0,
            positioned: false,
            criteria: Criteria::ALL,
        }));
        bindings::__mutex_init(
            (*state).lock.get(),
            c"allocinfo_ioctl".as_ptr().cast(),
            crate::static_lock_class!().as_ptr(),
        );
    }
}

/// A file's walk, its lock held.
struct Locked<'a> {
    state: &'a State,
    walk: &'a mut Walk,
}

impl<'a> Locked<'a> {
    fn new(state: &'a State) -> Locked<'a> {
        // SAFETY: an initialised mutex (type invariant).
        unsafe { bindings::mutex_lock(state.lock.get()) };
        // SAFETY: the lock is held from here until drop, so no other call of
        // this file touches the walk meanwhile.
        let walk = unsafe { &mut *state.walk.get() };
        Locked { state, walk }
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: locked since `new`.
        unsafe { bindings::mutex_unlock(self.state.lock.get()) };
    }
}

/// The first tag from index `from` on that passes `c`, with its index.
fn find<'g>(
    guard: &'g registry::ReadGuard,
    mut from: usize,
    c: &Criteria,
    mut skip: u64,
) -> Option<(usize, &'g AllocTag)> {
    while let Some((idx, tag)) = guard.next_from(from) {
        if c.matches(tag) {
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
    let st = Locked::new(state);
    let guard = registry::read().ok_or(ENOENT)?;
    if pos >= guard.len() as u64 {
        return Err(ENOENT);
    }
    let (idx, tag) = find(&guard, 0, &criteria, pos).ok_or(ENOENT)?;
    // Found: only now does the walk take the new filter and position.
    st.walk.criteria = criteria;
    st.walk.next = idx + 1;
    st.walk.positioned = true;
    let mut buf = [0u8; size_of::<TagData>()];
    fill(&mut buf, tag);
    drop(guard);
    drop(st);
    // Only the reply part: the request's part is what the caller wrote.
    let reply = arg.checked_add(offset_of!(GetAt, data)).ok_or(EFAULT)?;
    UserSlice::new(reply, buf.len()).writer().write_slice(&buf)
}

fn get_next(state: &State, arg: usize) -> Result<(), Error> {
    let mut buf = [0u8; size_of::<TagData>()];
    let st = Locked::new(state);
    let from = if st.walk.positioned { st.walk.next } else { 0 };
    let guard = registry::read().ok_or(ENOENT)?;
    let Some((idx, tag)) = find(&guard, from, &st.walk.criteria, 0) else {
        st.walk.positioned = false;
        return Err(ENOENT);
    };
    st.walk.next = idx + 1;
    st.walk.positioned = true;
    fill(&mut buf, tag);
    drop(guard);
    drop(st);
    UserSlice::new(arg, buf.len()).writer().write_slice(&buf)
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
        _ => Err(ENOTTY),
    }
}
