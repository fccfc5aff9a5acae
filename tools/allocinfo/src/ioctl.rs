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

use crate::nodes::{NodeProfile, NodeRow};
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
const BATCH_NODES: u32 = 1 << 3;

/// The largest record_size GET_BATCH takes (ALLOCINFO_RECORD_SIZE_MAX).
pub const RECORD_SIZE_MAX: usize = 1024;
/// `struct allocinfo_nodes` without its pairs: `nr_nodes`.
const NODES_HEAD: usize = 8;
/// `struct allocinfo_node_counter`: bytes and calls, both signed.
const NODE_COUNTER: usize = 16;

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
    /// More node ids than a record of ALLOCINFO_RECORD_SIZE_MAX bytes has room for.
    TooManyNodes(usize),
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

/// The kinds of GET_BATCH records: what precedes a record's `struct allocinfo_nodes` with
/// ALLOCINFO_BATCH_NODES.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// `struct allocinfo_tag_data` (no record flag).
    Data,
    /// `struct allocinfo_tag_record`: the data and the tag id (ALLOCINFO_BATCH_TAG_ID).
    TagRecord,
    /// `struct allocinfo_counter_record`: the tag id and counters (ALLOCINFO_BATCH_COUNTERS).
    Counter,
}

impl RecordKind {
    /// The size of the record proper, where its nodes start.
    pub fn size(self) -> usize {
        match self {
            RecordKind::Data => std::mem::size_of::<RawTagData>(),
            RecordKind::TagRecord => std::mem::size_of::<RawTagRecord>(),
            RecordKind::Counter => std::mem::size_of::<RawCounterRecord>(),
        }
    }

    /// The GET_BATCH flags that ask for records of this kind, with their nodes.
    pub fn node_flags(self) -> u32 {
        BATCH_NODES
            | match self {
                RecordKind::Data => 0,
                RecordKind::TagRecord => BATCH_TAG_ID,
                RecordKind::Counter => BATCH_COUNTERS,
            }
    }

    /// The smallest record_size the kernel takes for `nodes` node ids (it refuses less with
    /// EINVAL): the record, `nr_nodes` and a pair per node.
    pub fn node_record_size(self, nodes: usize) -> usize {
        self.size() + NODES_HEAD + NODE_COUNTER * nodes
    }
}

/// One node's share of a tag: `struct allocinfo_node_counter`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCounter {
    pub bytes: i64,
    pub calls: i64,
}

/// One GET_BATCH record with ALLOCINFO_BATCH_NODES, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    /// The tag's row with the record's counter (named kinds); None for counter records.
    pub row: Option<Row>,
    /// The tag id (tag and counter records).
    pub tag_id: Option<u64>,
    /// The record's counter: bytes and calls summed over the nodes by the kernel.
    pub bytes: i64,
    pub calls: i64,
    pub accurate: bool,
    /// Node i's share, for every node id of the machine.
    pub nodes: Vec<NodeCounter>,
    /// Whether a name filled its whole buffer, so may be the tail of a longer one.
    pub maybe_cut: bool,
}

impl NodeRecord {
    /// The rows of the nodes holding something (bytes or calls not 0), in node order, each with
    /// `named`'s site and fields (the row of this record, or for a counter record the row its
    /// tag id names). The nodes are trusted as they are: they are what the per-node views show,
    /// also when they do not add up to the record's counter.
    pub fn node_rows(&self, named: &Row) -> Vec<NodeRow> {
        let fields = if self.accurate {
            Vec::new()
        } else {
            vec![("accurate".to_string(), "no".to_string())]
        };
        (0u32..)
            .zip(&self.nodes)
            .filter(|(_, c)| c.bytes != 0 || c.calls != 0)
            .map(|(node, c)| NodeRow {
                node,
                row: Row {
                    bytes: c.bytes,
                    calls: u64::from_ne_bytes(c.calls.to_ne_bytes()),
                    site: named.site.clone(),
                    fields: fields.clone(),
                },
            })
            .collect()
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_ne_bytes(u64_at(b, at).to_ne_bytes())
}

fn name_at(b: &[u8], at: usize) -> [u8; STR_SIZE] {
    let mut n = [0u8; STR_SIZE];
    n.copy_from_slice(&b[at..at + STR_SIZE]);
    n
}

/// `struct allocinfo_counter` at `at`.
fn counter_at(b: &[u8], at: usize) -> RawCounter {
    RawCounter {
        bytes: u64_at(b, at),
        calls: u64_at(b, at + 8),
        accurate: b[at + 16],
        _pad: [0; 7],
    }
}

/// `struct allocinfo_tag_data` at the start of `b`.
fn tag_data_at(b: &[u8]) -> RawTagData {
    RawTagData {
        tag: RawTag {
            modname: name_at(b, 0),
            function: name_at(b, STR_SIZE),
            filename: name_at(b, 2 * STR_SIZE),
            lineno: u64_at(b, 3 * STR_SIZE),
        },
        counter: counter_at(b, std::mem::size_of::<RawTag>()),
    }
}

/// Decodes the first `count` records of `buf`, `record_size` bytes apart, each a record of
/// `kind` followed by its `struct allocinfo_nodes` (GET_BATCH with ALLOCINFO_BATCH_NODES, in
/// the byte order of this machine). Refused: a record_size below the kind's with the nodes
/// header, a buffer shorter than `count` records, an nr_nodes of 0 or more than the record holds.
pub fn decode_node_records(
    buf: &[u8],
    record_size: usize,
    count: usize,
    kind: RecordKind,
) -> Result<Vec<NodeRecord>, String> {
    let at = kind.size();
    if record_size < kind.node_record_size(0) {
        return Err(format!(
            "record size {record_size} is below {} ({kind:?} record and nr_nodes)",
            kind.node_record_size(0)
        ));
    }
    let room = (record_size - kind.node_record_size(0)) / NODE_COUNTER;
    let needed = count.checked_mul(record_size);
    if needed.is_none_or(|n| n > buf.len()) {
        return Err(format!(
            "{count} records of {record_size} bytes do not fit in {} bytes",
            buf.len()
        ));
    }
    let mut out = Vec::with_capacity(count);
    for (i, rec) in buf.chunks_exact(record_size).take(count).enumerate() {
        let nr_nodes = u64_at(rec, at);
        if nr_nodes == 0 || nr_nodes > room as u64 {
            return Err(format!(
                "record {i}: nr_nodes {nr_nodes}, where 1 to {room} fit in its {record_size} bytes"
            ));
        }
        let nodes = (0..nr_nodes as usize)
            .map(|n| {
                let p = at + NODES_HEAD + n * NODE_COUNTER;
                NodeCounter {
                    bytes: i64_at(rec, p),
                    calls: i64_at(rec, p + 8),
                }
            })
            .collect();
        let (named, tag_id, counter) = match kind {
            RecordKind::Data => {
                let d = tag_data_at(rec);
                (Some(row(&d)), None, d.counter)
            }
            RecordKind::TagRecord => {
                let d = tag_data_at(rec);
                let id = u64_at(rec, std::mem::size_of::<RawTagData>());
                (Some(row(&d)), Some(id), d.counter)
            }
            RecordKind::Counter => (None, Some(u64_at(rec, 0)), counter_at(rec, 8)),
        };
        let maybe_cut = named.as_ref().is_some_and(|(_, cut)| *cut);
        out.push(NodeRecord {
            row: named.map(|(r, _)| r),
            tag_id,
            bytes: i64::from_ne_bytes(counter.bytes.to_ne_bytes()),
            calls: i64::from_ne_bytes(counter.calls.to_ne_bytes()),
            accurate: counter.accurate != 0,
            nodes,
            maybe_cut,
        });
    }
    Ok(out)
}

/// Where the kernel lists the node ids it may ever use.
pub const NODE_POSSIBLE: &str = "/sys/devices/system/node/possible";

/// The kernel's nr_node_ids from the text of [`NODE_POSSIBLE`] (`0`, `0-1`, `0,2-3`): the
/// highest id plus one. None if the text is not such a list.
pub fn node_ids_from(text: &str) -> Option<usize> {
    let mut highest = None;
    for range in text.trim_end_matches('\n').split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let (lo, hi) = (lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?);
        if lo > hi {
            return None;
        }
        highest = highest.max(Some(hi));
    }
    highest.and_then(|h| h.checked_add(1))
}

/// This machine's nr_node_ids from `possible` ([`NODE_POSSIBLE`]); 1 where it is missing (a
/// kernel without NUMA).
fn node_ids(possible: &std::path::Path) -> Result<usize, IoctlError> {
    match std::fs::read_to_string(possible) {
        Ok(text) => node_ids_from(&text).ok_or_else(|| {
            IoctlError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a list of node ids: {text:?}", possible.display()),
            ))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(1),
        Err(e) => Err(IoctlError::Io(e)),
    }
}

/// One GET_BATCH into `buf`, records of `record_size` bytes (a multiple of 8): the records
/// written and the content id they were read under.
fn get_batch_sized(
    file: &File,
    buf: &mut [u64],
    record_size: usize,
    flags: u32,
) -> io::Result<(usize, u64)> {
    let max = max_records(buf.len(), record_size);
    let mut b = RawBatch {
        records: buf.as_mut_ptr() as u64,
        record_size: record_size as u32,
        max: max as u32,
        flags,
        count: 0,
        content_id: 0,
    };
    call(file, GET_BATCH, &mut b)?;
    Ok(((b.count as usize).min(max), b.content_id))
}

/// Every tag of `file` (an open /proc/allocinfo) that passes `filter`, per node: GET_BATCH with
/// ALLOCINFO_BATCH_NODES from the first tag, retried when a module came or went. The bool is
/// true when a name may have been cut (see [`read`]). Errors as the kernel gives them:
/// EOPNOTSUPP (several nodes, attribution off), EINVAL (no such flag, or a record too small).
pub fn read_nodes(file: &File, filter: &KernelFilter) -> Result<(NodeProfile, bool), IoctlError> {
    let ids = node_ids(std::path::Path::new(NODE_POSSIBLE))?;
    let kind = RecordKind::Data;
    let record_size = kind.node_record_size(ids);
    if record_size > RECORD_SIZE_MAX {
        return Err(IoctlError::TooManyNodes(ids));
    }
    let mut buf = vec![0u64; record_size / 8 * BATCH];
    for _ in 0..5 {
        let before = content_id(file)?;
        // SAFETY: all-zero bytes are a valid value of this plain-data structure.
        let mut get_at: RawGetAt = unsafe { std::mem::zeroed() };
        get_at.filter = filter.raw();
        let mut nodes = ids;
        let mut rows = Vec::new();
        let mut any_cut = false;
        // A batch read under another content id: walk again.
        let mut stale = false;
        match call(file, GET_AT, &mut get_at) {
            Ok(()) => {
                let mut flags = kind.node_flags() | BATCH_RESTART;
                loop {
                    let (n, cid) = get_batch_sized(file, &mut buf, record_size, flags)
                        .map_err(IoctlError::Io)?;
                    if cid != before {
                        stale = true;
                        break;
                    }
                    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
                    let records =
                        decode_node_records(&bytes, record_size, n, kind).map_err(|e| {
                            IoctlError::Io(io::Error::new(io::ErrorKind::InvalidData, e))
                        })?;
                    for r in &records {
                        if let Some(named) = &r.row {
                            any_cut |= r.maybe_cut;
                            nodes = r.nodes.len();
                            rows.extend(r.node_rows(named));
                        }
                    }
                    if n < max_records(buf.len(), record_size) {
                        break;
                    }
                    flags = kind.node_flags();
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(IoctlError::Io(e)),
        }
        if !stale && content_id(file)? == before {
            let profile = NodeProfile {
                nodes: u32::try_from(nodes).unwrap_or(u32::MAX),
                snapshot: None,
                rows,
            };
            return Ok((profile, any_cut));
        }
    }
    Err(IoctlError::Unstable)
}

fn max_records(words: usize, record_size: usize) -> usize {
    words * 8 / record_size
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

    fn put(b: &mut [u8], at: usize, v: u64) {
        b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    }

    fn signed(v: i64) -> u64 {
        u64::from_ne_bytes(v.to_ne_bytes())
    }

    /// One record laid out by hand from the header's offsets: the kind's record (module "m",
    /// function "fn", file "a.c", line 7, tag id 77), then nr_nodes and the pairs.
    fn record(
        kind: RecordKind,
        size: usize,
        counter: (i64, i64, u8),
        nodes: &[(i64, i64)],
    ) -> Vec<u8> {
        let mut b = vec![0u8; size];
        let c = match kind {
            RecordKind::Data | RecordKind::TagRecord => {
                b[0] = b'm';
                b[64..66].copy_from_slice(b"fn");
                b[128..131].copy_from_slice(b"a.c");
                put(&mut b, 192, 7);
                if kind == RecordKind::TagRecord {
                    put(&mut b, 224, 77);
                }
                200
            }
            RecordKind::Counter => {
                put(&mut b, 0, 77);
                8
            }
        };
        put(&mut b, c, signed(counter.0));
        put(&mut b, c + 8, signed(counter.1));
        b[c + 16] = counter.2;
        let at = kind.size();
        put(&mut b, at, nodes.len() as u64);
        for (i, &(bytes, calls)) in nodes.iter().enumerate() {
            put(&mut b, at + 8 + 16 * i, signed(bytes));
            put(&mut b, at + 16 + 16 * i, signed(calls));
        }
        b
    }

    #[test]
    fn node_record_sizes_and_flags() {
        assert_eq!(RecordKind::Data.node_record_size(2), 224 + 8 + 32);
        assert_eq!(RecordKind::TagRecord.node_record_size(1), 232 + 8 + 16);
        assert_eq!(RecordKind::Counter.node_record_size(2), 32 + 8 + 32);
        assert_eq!(RecordKind::Data.node_flags(), 8);
        assert_eq!(RecordKind::TagRecord.node_flags(), 8 | 1);
        assert_eq!(RecordKind::Counter.node_flags(), 8 | 2);
        // 49 nodes fit the largest record of tag data, 50 do not.
        assert!(RecordKind::Data.node_record_size(49) <= RECORD_SIZE_MAX);
        assert!(RecordKind::Data.node_record_size(50) > RECORD_SIZE_MAX);
    }

    #[test]
    fn node_records_of_each_kind_decode() {
        for kind in [RecordKind::Data, RecordKind::TagRecord, RecordKind::Counter] {
            for nodes in [&[(4096, 3)][..], &[(4096, 1), (8192, 2)][..]] {
                // Records exactly as large as the nodes need, and larger (zeroed tails).
                for size in [
                    kind.node_record_size(nodes.len()),
                    kind.node_record_size(nodes.len()) + 40,
                ] {
                    let total = nodes.iter().fold((0, 0), |(b, c), n| (b + n.0, c + n.1));
                    let mut buf = record(kind, size, (total.0, total.1, 0), nodes);
                    buf.extend(record(kind, size, (-64, 0, 1), &[(-64, 0); 1]));
                    let got = decode_node_records(&buf, size, 2, kind).unwrap();
                    let what = format!("{kind:?} {} nodes, {size} bytes", nodes.len());
                    assert_eq!(got.len(), 2, "{what}");
                    let r = &got[0];
                    let want: Vec<_> = nodes
                        .iter()
                        .map(|&(bytes, calls)| NodeCounter { bytes, calls })
                        .collect();
                    assert_eq!(r.nodes, want, "{what}");
                    assert_eq!((r.bytes, r.calls, r.accurate), (total.0, total.1, false));
                    assert_eq!(r.tag_id, (kind != RecordKind::Data).then_some(77), "{what}");
                    assert_eq!((got[1].bytes, got[1].accurate), (-64, true), "{what}");
                    let named = match &r.row {
                        Some(row) => {
                            assert_eq!(row.tag_text(), "a.c:7 [m] func:fn accurate:no");
                            assert_eq!((row.bytes, row.live_calls()), total);
                            row.clone()
                        }
                        None => {
                            assert_eq!(kind, RecordKind::Counter);
                            let (named, _) = super::row(&data("m", "a.c", 7, 0, 0));
                            named
                        }
                    };
                    let rows = r.node_rows(&named);
                    let got: Vec<_> = rows
                        .iter()
                        .map(|n| (n.node, n.row.bytes, n.row.live_calls(), n.row.accurate()))
                        .collect();
                    let want: Vec<_> = (0u32..)
                        .zip(nodes)
                        .map(|(i, &(b, c))| (i, b, c, false))
                        .collect();
                    assert_eq!(got, want, "{what}");
                }
            }
        }
    }

    #[test]
    fn node_rows_trust_the_nodes() {
        // The counter says 100 bytes in 5 calls; the nodes 30 + 50 bytes, 0 + 2 calls, and a
        // node holding nothing. The rows are the nodes' (the zero node left out), not the
        // counter's: the per-node views show 80 bytes, where the record says 100.
        let kind = RecordKind::Data;
        let size = kind.node_record_size(3);
        let buf = record(kind, size, (100, 5, 1), &[(30, 0), (0, 0), (50, 2)]);
        let got = decode_node_records(&buf, size, 1, kind).unwrap();
        let (named, r) = (got[0].row.clone().unwrap(), &got[0]);
        assert_eq!((r.bytes, r.calls), (100, 5));
        let rows = r.node_rows(&named);
        let summary: Vec<_> = rows
            .iter()
            .map(|n| (n.node, n.row.bytes, n.row.live_calls()))
            .collect();
        assert_eq!(summary, [(0, 30, 0), (2, 50, 2)]);
        let p = NodeProfile {
            nodes: 3,
            snapshot: None,
            rows,
        };
        assert_eq!(p.to_profile().total_bytes(), 80);
        // A negative node count stays negative (it reads as wrapped, as in /proc/allocinfo).
        let buf = record(kind, size, (0, 0, 1), &[(4096, -1)]);
        let got = decode_node_records(&buf, size, 1, kind).unwrap();
        let rows = got[0].node_rows(&named);
        assert_eq!(
            (rows[0].row.live_calls(), rows[0].row.calls_wrapped()),
            (-1, true)
        );
    }

    #[test]
    fn malformed_node_records_are_refused() {
        let kind = RecordKind::TagRecord;
        let size = kind.node_record_size(2);
        let two = record(kind, size, (1, 1, 1), &[(1, 1), (0, 0)]);
        let check = |buf: &[u8], size, count, needle: &str| match decode_node_records(
            buf, size, count, kind,
        ) {
            Ok(r) => panic!("accepted {r:?}"),
            Err(e) => assert!(e.contains(needle), "{e} lacks {needle:?}"),
        };
        check(
            &two,
            size,
            2,
            "2 records of 272 bytes do not fit in 272 bytes",
        );
        check(&two, 239, 1, "record size 239 is below 240");
        let mut none = two.clone();
        put(&mut none, 232, 0);
        check(&none, size, 1, "record 0: nr_nodes 0, where 1 to 2 fit");
        let mut three = two.clone();
        put(&mut three, 232, 3);
        check(
            &three,
            size,
            1,
            "record 0: nr_nodes 3, where 1 to 2 fit in its 272 bytes",
        );
        assert_eq!(decode_node_records(&two, size, 0, kind), Ok(Vec::new()));
    }

    #[test]
    fn node_ids_from_possible() {
        assert_eq!(node_ids_from("0\n"), Some(1));
        assert_eq!(node_ids_from("0-1\n"), Some(2));
        assert_eq!(node_ids_from("0,2-3"), Some(4));
        assert_eq!(node_ids_from("0-7,16"), Some(17));
        for bad in ["", "\n", "x", "3-1", "0-", "-1", "0,,1"] {
            assert_eq!(node_ids_from(bad), None, "{bad:?}");
        }
        let missing = std::path::Path::new("/nonexistent/node/possible");
        assert!(matches!(node_ids(missing), Ok(1)), "no NUMA: one node");
        let dir = std::env::temp_dir().join(format!("allocinfo-possible-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("possible");
        std::fs::write(&file, "0-3\n").unwrap();
        assert!(matches!(node_ids(&file), Ok(4)));
        std::fs::write(&file, "zero\n").unwrap();
        assert!(matches!(node_ids(&file), Err(IoctlError::Io(_))));
        let _ = std::fs::remove_dir_all(&dir);
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
