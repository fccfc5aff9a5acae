// SPDX-License-Identifier: GPL-2.0
//! The /proc/allocinfo ioctls (include/uapi/linux/alloc_tag.h, upstream's ABI since Linux 7.3):
//! tags read as binary records, with module and minimum size filters applied by the kernel, so no
//! text is formatted or parsed. Records come many per call through ALLOCINFO_IOC_GET_BATCH where
//! the kernel has it (ours), one per call through GET_NEXT where it does not (upstream's).
//! [`Sampler`] reads the same tags again and again, as `watch` does: names once per content id,
//! then records of counters only, joined by tag id (ALLOCINFO_BATCH_COUNTERS).

use std::collections::HashMap;
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

/// `struct allocinfo_tag_record`: GET_BATCH's record with ALLOCINFO_BATCH_TAG_ID.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawTagRecord {
    data: RawTagData,
    tag_id: u64,
}

/// `struct allocinfo_counter_record`: GET_BATCH's record with ALLOCINFO_BATCH_COUNTERS.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawCounterRecord {
    tag_id: u64,
    counter: RawCounter,
}

const BATCH_TAG_ID: u32 = 1 << 0;
const BATCH_COUNTERS: u32 = 1 << 1;
const BATCH_RESTART: u32 = 1 << 2;

// The sizes are part of the command numbers: check them against the header's.
const _: () = assert!(std::mem::size_of::<RawTag>() == 200);
const _: () = assert!(std::mem::size_of::<RawCounter>() == 24);
const _: () = assert!(std::mem::size_of::<RawTagData>() == 224);
const _: () = assert!(std::mem::size_of::<RawFilter>() == 232);
const _: () = assert!(std::mem::size_of::<RawGetAt>() == 464);
const _: () = assert!(std::mem::size_of::<RawBatch>() == 32);
const _: () = assert!(std::mem::size_of::<RawTagRecord>() == 232);
const _: () = assert!(std::mem::size_of::<RawCounterRecord>() == 32);

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
    /// GET_BATCH without the record flags (a kernel before them): read by [`read`] instead.
    NoSampling,
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
        let n = match get_batch(file, &mut buf, 0) {
            Ok((n, _)) => n,
            Err(e) if e.raw_os_error() == Some(libc::ENOTTY) => return Ok(false),
            Err(e) => return Err(IoctlError::Io(e)),
        };
        buf[..n].iter().for_each(&mut *record);
        if n < BATCH {
            return Ok(true);
        }
    }
}

/// One GET_BATCH with `flags` into `buf`: the records written and the content id they were read
/// under.
fn get_batch<T: Copy>(file: &File, buf: &mut [T], flags: u32) -> io::Result<(usize, u64)> {
    let mut b = RawBatch {
        records: buf.as_mut_ptr() as u64,
        record_size: std::mem::size_of::<T>() as u32,
        max: buf.len() as u32,
        flags,
        count: 0,
        content_id: 0,
    };
    call(file, GET_BATCH, &mut b)?;
    Ok(((b.count as usize).min(buf.len()), b.content_id))
}

/// A row from a named record's row and a counter record.
fn with_counter(named: &Row, c: &RawCounter) -> Row {
    Row {
        bytes: i64::from_ne_bytes(c.bytes.to_ne_bytes()),
        calls: c.calls,
        site: named.site.clone(),
        fields: if c.accurate != 0 {
            Vec::new()
        } else {
            vec![("accurate".to_string(), "no".to_string())]
        },
    }
}

/// The names of the tags of one content id.
struct Names {
    content_id: u64,
    /// Each tag id's row as the named walk read it.
    rows: HashMap<u64, Row>,
    maybe_cut: bool,
}

/// Reads the tags of an open /proc/allocinfo that pass a filter, again and again: a walk of named
/// records once per content id, and between, walks of counter records whose tag ids name the rows
/// of the last named walk. A tag id it has no name for (a Rust call site that allocated for the
/// first time, which changes no content id) makes it read the names again.
pub struct Sampler {
    file: File,
    filter: KernelFilter,
    /// Whether the file holds the filter (a GET_AT that found a tag).
    filtered: bool,
    names: Option<Names>,
}

impl Sampler {
    /// Opens `path` (/proc/allocinfo) for sampling with `filter`.
    pub fn open(path: &std::path::Path, filter: &KernelFilter) -> Result<Sampler, IoctlError> {
        let file = File::open(path).map_err(IoctlError::Io)?;
        content_id(&file)?;
        Ok(Sampler {
            file,
            filter: filter.clone(),
            filtered: false,
            names: None,
        })
    }

    /// Gives the file its filter with a GET_AT; false if no tag passes it (then the file has
    /// none, and nothing is read).
    fn set_filter(&mut self) -> Result<bool, IoctlError> {
        if self.filtered {
            return Ok(true);
        }
        // SAFETY: all-zero bytes are a valid value of this plain-data structure.
        let mut get_at: RawGetAt = unsafe { std::mem::zeroed() };
        get_at.filter = self.filter.raw();
        match call(&self.file, GET_AT, &mut get_at) {
            Ok(()) => {
                self.filtered = true;
                Ok(true)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(IoctlError::Io(e)),
        }
    }

    /// A walk of named records with tag ids from the first tag; None if a module came or went.
    fn named_walk(&mut self, id: u64) -> Result<Option<(Vec<Row>, bool)>, IoctlError> {
        // SAFETY: all-zero bytes are a valid value of this plain-data structure.
        let mut buf: Vec<RawTagRecord> = vec![unsafe { std::mem::zeroed() }; BATCH];
        let mut names = Names {
            content_id: id,
            rows: HashMap::new(),
            maybe_cut: false,
        };
        let mut rows = Vec::new();
        let mut flags = BATCH_TAG_ID | BATCH_RESTART;
        loop {
            let (n, cid) = match get_batch(&self.file, &mut buf, flags) {
                Ok(r) => r,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTTY)) => {
                    return Err(IoctlError::NoSampling)
                }
                Err(e) => return Err(IoctlError::Io(e)),
            };
            if cid != id {
                return Ok(None);
            }
            for r in &buf[..n] {
                let (row, cut) = row(&r.data);
                names.maybe_cut |= cut;
                names.rows.insert(r.tag_id, row.clone());
                rows.push(row);
            }
            if n < BATCH {
                break;
            }
            flags = BATCH_TAG_ID;
        }
        let cut = names.maybe_cut;
        self.names = Some(names);
        Ok(Some((rows, cut)))
    }

    /// A walk of counter records from the first tag, named by the last named walk; None if a
    /// module came or went, or a tag has no name yet.
    fn counters_walk(&self, names: &Names) -> Result<Option<(Vec<Row>, bool)>, IoctlError> {
        // SAFETY: all-zero bytes are a valid value of this plain-data structure.
        let mut buf: Vec<RawCounterRecord> = vec![unsafe { std::mem::zeroed() }; BATCH];
        let mut rows = Vec::with_capacity(names.rows.len());
        let mut flags = BATCH_COUNTERS | BATCH_RESTART;
        loop {
            let (n, cid) = get_batch(&self.file, &mut buf, flags).map_err(IoctlError::Io)?;
            if cid != names.content_id {
                return Ok(None);
            }
            for r in &buf[..n] {
                let Some(named) = names.rows.get(&r.tag_id) else {
                    return Ok(None);
                };
                rows.push(with_counter(named, &r.counter));
            }
            if n < BATCH {
                break;
            }
            flags = BATCH_COUNTERS;
        }
        Ok(Some((rows, names.maybe_cut)))
    }

    /// One sample: every tag that passes the filter, with its counters now. The bool is true
    /// when some name may have been cut.
    pub fn sample(&mut self) -> Result<(Profile, bool), IoctlError> {
        let profile = |rows| Profile {
            version: Version::V2_0,
            snapshot: None,
            rows,
        };
        for _ in 0..5 {
            let before = content_id(&self.file)?;
            if !self.set_filter()? {
                if content_id(&self.file)? == before {
                    return Ok((profile(Vec::new()), false));
                }
                continue;
            }
            let mut got = match self.names.take() {
                Some(names) if names.content_id == before => {
                    let got = self.counters_walk(&names)?;
                    self.names = Some(names);
                    got
                }
                _ => None,
            };
            if got.is_none() {
                got = self.named_walk(before)?;
            }
            if let Some((rows, cut)) = got {
                if content_id(&self.file)? == before {
                    return Ok((profile(rows), cut));
                }
            }
            self.names = None;
        }
        Err(IoctlError::Unstable)
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
    fn counter_records_take_the_named_rows_site() {
        let (named, _) = row(&data("ext4", "fs/ext4/super.c", 9, 64, 1));
        let c = RawCounter {
            bytes: u64::from_ne_bytes((-128i64).to_ne_bytes()),
            calls: 3,
            accurate: 0,
            _pad: [0; 7],
        };
        let r = with_counter(&named, &c);
        assert_eq!(r.site, named.site);
        assert_eq!((r.bytes, r.calls, r.accurate()), (-128, 3, false));
        assert_eq!(r.tag_text(), "fs/ext4/super.c:9 [ext4] func:f accurate:no");
        let c = RawCounter { accurate: 1, ..c };
        assert_eq!(
            with_counter(&named, &c).tag_text(),
            "fs/ext4/super.c:9 [ext4] func:f"
        );
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
