// SPDX-License-Identifier: GPL-2.0
//! The /proc/allocinfo ioctls (include/uapi/linux/alloc_tag.h, upstream's ABI since Linux 7.3):
//! tags read as binary records, with module and minimum size filters applied by the kernel, so no
//! text is formatted or parsed. Records come many per call through ALLOCINFO_IOC_GET_BATCH where
//! the kernel has it (ours), one per call through GET_NEXT where it does not (upstream's).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use crate::profile::{Profile, Row, Site, Version};

/// Bytes of each name buffer, NUL included.
const STR_SIZE: usize = 64;

/// `struct allocinfo_tag`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawTag {
    modname: [u8; STR_SIZE],
    function: [u8; STR_SIZE],
    filename: [u8; STR_SIZE],
    lineno: u64,
}

/// `struct allocinfo_counter` (aligned to 8 bytes, so 7 bytes of tail padding).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawCounter {
    bytes: u64,
    calls: u64,
    accurate: u8,
    _pad: [u8; 7],
}

/// `struct allocinfo_tag_data`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawTagData {
    tag: RawTag,
    counter: RawCounter,
}

/// `struct allocinfo_filter`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawFilter {
    mask: u64,
    fields: RawTag,
    min_size: u64,
    max_size: u64,
    inaccurate: u64,
}

/// `struct allocinfo_get_at`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawGetAt {
    pos: u64,
    filter: RawFilter,
    data: RawTagData,
}

/// `struct allocinfo_batch` (this kernel's own; versioned by its size).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawBatch {
    records: u64,
    record_size: u32,
    max: u32,
    flags: u32,
    count: u32,
    content_id: u64,
}

// The sizes are part of the command numbers: check them against the header's.
const _: () = assert!(std::mem::size_of::<RawTag>() == 200);
const _: () = assert!(std::mem::size_of::<RawCounter>() == 24);
const _: () = assert!(std::mem::size_of::<RawTagData>() == 224);
const _: () = assert!(std::mem::size_of::<RawFilter>() == 232);
const _: () = assert!(std::mem::size_of::<RawGetAt>() == 464);
const _: () = assert!(std::mem::size_of::<RawBatch>() == 32);

const FILTER_MODNAME: u64 = 1 << 0;
const FILTER_MIN_SIZE: u64 = 1 << 5;

/// `_IOC(dir, 0xA6, nr, size)` as in asm-generic/ioctl.h.
const fn command(dir: u64, nr: u64, size: usize) -> u64 {
    dir << 30 | (size as u64) << 16 | 0xA6 << 8 | nr
}
const IOC_READ: u64 = 2;
const IOC_WRITE: u64 = 1;
const CONTENT_ID: u64 = command(IOC_READ, 0, 8);
const GET_AT: u64 = command(IOC_READ | IOC_WRITE, 1, std::mem::size_of::<RawGetAt>());
const GET_NEXT: u64 = command(IOC_READ, 2, std::mem::size_of::<RawTagData>());
const GET_BATCH: u64 = command(IOC_READ | IOC_WRITE, 32, std::mem::size_of::<RawBatch>());

/// Records asked for per GET_BATCH call.
const BATCH: usize = 256;

/// What the kernel can select for us; every filter is applied again in user space, so these only
/// make the walk shorter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelFilter {
    /// Exact module name; `vmlinux` for built-in code.
    pub module: Option<String>,
    /// Rows holding fewer bytes are not returned.
    pub min_size: Option<i64>,
}

impl KernelFilter {
    fn raw(&self) -> RawFilter {
        let mut f = RawFilter {
            mask: 0,
            fields: RawTag {
                modname: [0; STR_SIZE],
                function: [0; STR_SIZE],
                filename: [0; STR_SIZE],
                lineno: 0,
            },
            min_size: 0,
            max_size: 0,
            inaccurate: 0,
        };
        // A longer name is matched on its tail by the kernel; leave it to user space.
        if let Some(m) = self.module.as_deref().filter(|m| m.len() < STR_SIZE) {
            let name = if m == crate::profile::BUILTIN_MODULE {
                ""
            } else {
                m
            };
            f.mask |= FILTER_MODNAME;
            f.fields.modname[..name.len()].copy_from_slice(name.as_bytes());
        }
        // The kernel compares unsigned, so a negative row passes and user space drops it.
        if let Some(min) = self.min_size.and_then(|m| u64::try_from(m).ok()) {
            f.mask |= FILTER_MIN_SIZE;
            f.min_size = min;
        }
        f
    }
}

/// Why the ioctls could not be used.
#[derive(Debug)]
pub enum IoctlError {
    /// The kernel has no such ioctls (ENOTTY, as Linux before 7.3 and upstream 6.12 answer).
    Unsupported,
    /// Modules kept loading or unloading during every walk.
    Unstable,
    Io(io::Error),
}

fn name(buf: &[u8; STR_SIZE]) -> (String, bool) {
    let len = buf.iter().position(|&b| b == 0).unwrap_or(STR_SIZE);
    (
        String::from_utf8_lossy(&buf[..len]).into_owned(),
        len >= STR_SIZE - 1,
    )
}

/// A row from one record; the bool is true when a name may have been cut.
fn row(d: &RawTagData) -> (Row, bool) {
    let (module, cut_m) = name(&d.tag.modname);
    let (function, cut_f) = name(&d.tag.function);
    let (file, cut_file) = name(&d.tag.filename);
    let accurate = d.counter.accurate != 0;
    let row = Row {
        // Signed in the kernel, carried in a __u64.
        bytes: i64::from_ne_bytes(d.counter.bytes.to_ne_bytes()),
        calls: d.counter.calls,
        site: Site {
            file,
            line: u32::try_from(d.tag.lineno).unwrap_or(u32::MAX),
            module: (!module.is_empty()).then_some(module),
            function,
        },
        fields: if accurate {
            Vec::new()
        } else {
            vec![("accurate".to_string(), "no".to_string())]
        },
    };
    (row, cut_m || cut_f || cut_file)
}

/// Calls ioctl `cmd` on `file` with `arg`.
fn call<T>(file: &File, cmd: u64, arg: &mut T) -> io::Result<()> {
    // SAFETY: every command used here has its argument size encoded in it, and `T` is the
    // `#[repr(C)]` structure of exactly that size (checked at compile time above), valid for the
    // kernel to read and write for the duration of the call. GET_BATCH's structure points to
    // `max` records of `record_size` bytes, which `batches` keeps alive and writable throughout.
    let ret = unsafe { libc::ioctl(file.as_raw_fd(), cmd as libc::c_ulong, arg as *mut T) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn content_id(file: &File) -> Result<u64, IoctlError> {
    let mut id = 0u64;
    call(file, CONTENT_ID, &mut id).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOTTY) | Some(libc::EINVAL) => IoctlError::Unsupported,
        _ => IoctlError::Io(e),
    })?;
    Ok(id)
}

/// One walk over the tags that pass `filter`; the bool is true when some name may have been cut.
fn walk(file: &File, filter: &KernelFilter) -> Result<(Vec<Row>, bool), IoctlError> {
    // SAFETY: all-zero bytes are a valid value of this plain-data structure.
    let mut get_at: RawGetAt = unsafe { std::mem::zeroed() };
    get_at.filter = filter.raw();
    let mut rows = Vec::new();
    let mut any_cut = false;
    let mut record = |d: &RawTagData| {
        let (r, cut) = row(d);
        any_cut |= cut;
        rows.push(r);
    };
    match call(file, GET_AT, &mut get_at) {
        Ok(()) => record(&get_at.data),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok((rows, false)),
        Err(e) => return Err(IoctlError::Io(e)),
    }
    if !batches(file, &mut record)? {
        loop {
            let mut data = get_at.data;
            match call(file, GET_NEXT, &mut data) {
                Ok(()) => record(&data),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
                Err(e) => return Err(IoctlError::Io(e)),
            }
        }
    }
    Ok((rows, any_cut))
}

/// The rest of the walk by GET_BATCH; false, having read nothing, if the kernel has no such
/// command (upstream's answers ENOTTY).
fn batches(file: &File, record: &mut impl FnMut(&RawTagData)) -> Result<bool, IoctlError> {
    // SAFETY: all-zero bytes are a valid value of this plain-data structure.
    let mut buf: Vec<RawTagData> = vec![unsafe { std::mem::zeroed() }; BATCH];
    loop {
        let mut b = RawBatch {
            records: buf.as_mut_ptr() as u64,
            record_size: std::mem::size_of::<RawTagData>() as u32,
            max: BATCH as u32,
            flags: 0,
            count: 0,
            content_id: 0,
        };
        match call(file, GET_BATCH, &mut b) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTTY) => return Ok(false),
            Err(e) => return Err(IoctlError::Io(e)),
        }
        let n = (b.count as usize).min(BATCH);
        buf[..n].iter().for_each(&mut *record);
        if n < BATCH {
            return Ok(true);
        }
    }
}

/// Reads every tag of `file` (an open /proc/allocinfo) that passes `filter`, retrying when a
/// module came or went during the walk. The bool is true when a name filled its whole buffer:
/// the kernel keeps the last 63 bytes of a longer name, so such a name may be a tail.
pub fn read(file: &File, filter: &KernelFilter) -> Result<(Profile, bool), IoctlError> {
    for _ in 0..5 {
        let before = content_id(file)?;
        let (rows, maybe_cut) = walk(file, filter)?;
        if content_id(file)? == before {
            let profile = Profile {
                version: Version::V2_0,
                snapshot: None,
                rows,
            };
            return Ok((profile, maybe_cut));
        }
    }
    Err(IoctlError::Unstable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_numbers_match_the_header() {
        assert_eq!(CONTENT_ID, 0x8008_a600);
        assert_eq!(GET_AT, 0xc1d0_a601);
        assert_eq!(GET_NEXT, 0x80e0_a602);
        assert_eq!(GET_BATCH, 0xc020_a620);
    }

    fn data(module: &str, file: &str, line: u64, bytes: i64, accurate: u8) -> RawTagData {
        // SAFETY: all-zero bytes are a valid value of this plain-data structure.
        let mut d: RawTagData = unsafe { std::mem::zeroed() };
        d.tag.modname[..module.len()].copy_from_slice(module.as_bytes());
        d.tag.function[..1].copy_from_slice(b"f");
        d.tag.filename[..file.len()].copy_from_slice(file.as_bytes());
        d.tag.lineno = line;
        d.counter.bytes = u64::from_ne_bytes(bytes.to_ne_bytes());
        d.counter.calls = u64::MAX;
        d.counter.accurate = accurate;
        d
    }

    #[test]
    fn records_become_rows() {
        let (r, cut) = row(&data("", "mm/slub.c", 2450, -4096, 1));
        assert!(!cut);
        assert_eq!(r.site.tag_text(), "mm/slub.c:2450 func:f");
        assert_eq!((r.bytes, r.live_calls(), r.accurate()), (-4096, -1, true));
        let (r, _) = row(&data("ext4", "fs/ext4/super.c", 9, 64, 0));
        assert_eq!(r.tag_text(), "fs/ext4/super.c:9 [ext4] func:f accurate:no");
        let long = "d/".repeat(31) + "c";
        let (_, cut) = row(&data("", &long, 1, 0, 1));
        assert!(cut, "a 63-byte name may be the tail of a longer one");
    }

    #[test]
    fn filters_pushed_to_the_kernel() {
        let f = KernelFilter {
            module: Some("vmlinux".into()),
            min_size: Some(4096),
        }
        .raw();
        assert_eq!(f.mask, FILTER_MODNAME | FILTER_MIN_SIZE);
        assert_eq!((f.fields.modname[0], f.min_size), (0, 4096));
        let f = KernelFilter {
            module: Some("ext4".into()),
            min_size: None,
        }
        .raw();
        assert_eq!(
            (f.mask, &f.fields.modname[..5]),
            (FILTER_MODNAME, &b"ext4\0"[..])
        );
        assert_eq!(KernelFilter::default().raw().mask, 0);
    }
}
