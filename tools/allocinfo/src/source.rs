// SPDX-License-Identifier: GPL-2.0
//! Reading a profile from /proc/allocinfo, a file, or standard input.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::cli::SourceMode;
use crate::error::{Error, Result};
use crate::ioctl::{self, IoctlError, KernelFilter};
use crate::nodes::NodeProfile;
use crate::parse::{LineParser, ParseError, Parsed, MAX_LINE};
use crate::profile::{Header, Profile, RowRef};

/// The kernel's file, read when no `--input` is given.
pub const PROC_ALLOCINFO: &str = "/proc/allocinfo";

/// Where a profile comes from; `-` means standard input.
#[derive(Clone, Debug)]
pub struct Source {
    path: PathBuf,
    lenient: bool,
    mode: SourceMode,
    kernel_filter: KernelFilter,
    /// Whether the last read went through the ioctls.
    used_ioctl: Cell<bool>,
    /// Whether the last read of the nodes (live) was of [`DEBUGFS_NODES`].
    used_debugfs: Cell<bool>,
}

impl Source {
    /// `--input` if given, else /proc/allocinfo.
    pub fn new(input: Option<&Path>) -> Self {
        Source {
            path: input.map_or_else(|| PathBuf::from(PROC_ALLOCINFO), Path::to_path_buf),
            lenient: false,
            mode: SourceMode::Text,
            kernel_filter: KernelFilter::default(),
            used_ioctl: Cell::new(false),
            used_debugfs: Cell::new(false),
        }
    }

    /// How live data is read (`--source`); the ioctls apply to /proc/allocinfo only.
    pub fn mode(mut self, mode: SourceMode) -> Result<Self> {
        if mode == SourceMode::Ioctl && !self.is_proc() {
            return Err(Error::Usage(format!(
                "--source ioctl reads {PROC_ALLOCINFO} itself, not {}",
                self.display()
            )));
        }
        self.mode = mode;
        Ok(self)
    }

    /// Filters the kernel may apply when the ioctls are used.
    pub fn kernel_filter(mut self, filter: KernelFilter) -> Self {
        self.kernel_filter = filter;
        self
    }

    fn is_proc(&self) -> bool {
        self.path == Path::new(PROC_ALLOCINFO)
    }

    /// The path, with ` (ioctl)` when the last read used the ioctls; the debugfs file when the
    /// nodes were read from it.
    pub fn described(&self) -> String {
        if self.used_debugfs.get() {
            DEBUGFS_NODES.to_string()
        } else if self.used_ioctl.get() {
            format!("{} (ioctl)", self.display())
        } else {
            self.display()
        }
    }

    /// Reads damaged copies too (see [`LineParser::new`]).
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.lenient = lenient;
        self
    }

    /// The path as the user would recognise it in messages.
    pub fn display(&self) -> String {
        if self.is_stdin() {
            "<stdin>".to_string()
        } else {
            self.path.display().to_string()
        }
    }

    /// Whether this is standard input, which can be read only once.
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }

    /// Reads the per-node attribution (`--by-node`). A file (`-i`) must be allocinfo_nodes
    /// text. Live: through GET_BATCH with ALLOCINFO_BATCH_NODES, else (or with --source text)
    /// from [`DEBUGFS_NODES`]; [`NO_NODES`] with both reasons when neither has the nodes.
    pub fn read_nodes(&self) -> Result<NodeProfile> {
        self.used_ioctl.set(false);
        self.used_debugfs.set(false);
        if !self.is_proc() {
            return match self.read_text()? {
                Parsed::Nodes(p) => Ok(p),
                Parsed::Sites(_) => Err(Error::Refused(format!(
                    "{}: /proc/allocinfo text has no nodes: --by-node reads a copy of \
                     {DEBUGFS_NODES}",
                    self.display()
                ))),
            };
        }
        let mut why = Vec::new();
        let mut cut = None;
        if self.mode != SourceMode::Text {
            let read = File::open(&self.path)
                .map_err(IoctlError::Io)
                .and_then(|f| ioctl::read_nodes(&f, &self.kernel_filter));
            match read {
                // auto: a name that may be cut is read in full from the text, if it is there.
                Ok((p, true)) if self.mode == SourceMode::Auto => cut = Some(p),
                Ok((p, _)) => {
                    self.used_ioctl.set(true);
                    return Ok(p);
                }
                // Not root: say so, rather than that the kernel lacks the nodes.
                Err(IoctlError::Io(e)) if e.kind() == io::ErrorKind::PermissionDenied => {
                    return Err(self.io_error(e))
                }
                Err(e) if self.mode == SourceMode::Ioctl => {
                    return Err(Error::Refused(format!(
                        "{NO_NODES} ({PROC_ALLOCINFO}: {})",
                        nodes_ioctl_failure(&e)
                    )))
                }
                Err(e) => why.push(format!("{PROC_ALLOCINFO}: {}", nodes_ioctl_failure(&e))),
            }
        }
        let text = Source::new(Some(Path::new(DEBUGFS_NODES))).lenient(self.lenient);
        match text.read_text() {
            Ok(Parsed::Nodes(p)) => {
                self.used_debugfs.set(true);
                Ok(p)
            }
            Ok(Parsed::Sites(_)) => Err(Error::Refused(format!(
                "{DEBUGFS_NODES}: /proc/allocinfo text, not per-node rows"
            ))),
            Err(Error::Io { source, .. }) => match cut {
                Some(p) => {
                    self.used_ioctl.set(true);
                    Ok(p)
                }
                None => {
                    let reason = match source.raw_os_error() {
                        Some(libc::ENODEV) => "ENODEV: per-node attribution off".to_string(),
                        _ => source.to_string(),
                    };
                    why.push(format!("{DEBUGFS_NODES}: {reason}"));
                    Err(Error::Refused(format!("{NO_NODES} ({})", why.join("; "))))
                }
            },
            Err(e) => Err(e),
        }
    }

    /// Reads and parses the text of the source (a file, standard input, or the live file),
    /// whichever kind it is.
    fn read_text(&self) -> Result<Parsed> {
        let limit = input_limit(PROFILE_BYTES_PER_INPUT_BYTE);
        self.read_with(|r| read_any(r, limit, self.lenient))
    }

    /// Opens the source (standard input or the file) and reads it with `read`.
    fn read_with<T>(
        &self,
        read: impl FnOnce(&mut dyn Read) -> std::result::Result<T, ReadError>,
    ) -> Result<T> {
        let result = if self.is_stdin() {
            read(&mut io::stdin().lock())
        } else {
            File::open(&self.path)
                .map_err(ReadError::Io)
                .and_then(|mut f| read(&mut f))
        };
        result.map_err(|e| self.read_error(e))
    }

    fn read_error(&self, e: ReadError) -> Error {
        match e {
            ReadError::Io(e) => self.io_error(e),
            ReadError::Parse(source) => Error::Parse {
                path: self.display(),
                source,
            },
            ReadError::TooLarge(limit) => Error::Refused(format!(
                "{}: more than {} MiB of input, more than the memory available to allocinfo \
                 holds (MemAvailable in /proc/meminfo, ulimit -d and -v)",
                self.display(),
                limit >> 20
            )),
        }
    }

    /// The profile through the ioctls, where the mode and the source call for them; `None`
    /// when the text is to be read instead. Starts a read: resets what the last one used.
    fn read_ioctl(&self) -> Result<Option<Profile>> {
        self.used_ioctl.set(false);
        self.used_debugfs.set(false);
        if self.mode == SourceMode::Text || !self.is_proc() {
            return Ok(None);
        }
        let file = File::open(&self.path).map_err(|e| self.io_error(e))?;
        match ioctl::read(&file, &self.kernel_filter) {
            // auto: a name that may be cut is read in full from the text instead.
            Ok((_, true)) if self.mode == SourceMode::Auto => Ok(None),
            Ok((p, _)) => {
                self.used_ioctl.set(true);
                Ok(Some(p))
            }
            Err(e) if self.mode == SourceMode::Ioctl => Err(refused(e)),
            // auto: the text always works and has every name in full.
            Err(_) => Ok(None),
        }
    }

    /// Reads and parses the whole source once, checking each line as it arrives.
    pub fn read(&self) -> Result<Profile> {
        if let Some(p) = self.read_ioctl()? {
            return Ok(p);
        }
        let limit = input_limit(PROFILE_BYTES_PER_INPUT_BYTE);
        self.read_with(|r| read_profile(r, limit, self.lenient))
    }

    /// Reads the source once, handing each row to `row` as it is parsed, so that memory does
    /// not grow with the input; a profile read through the ioctls (or allocinfo_nodes text,
    /// summed per tag at its end) is handed on row by row too. `limit` bounds the input in
    /// bytes ([`input_limit`] for a caller that keeps something per row, `u64::MAX` for one
    /// that does not).
    pub fn read_rows(&self, limit: u64, row: &mut dyn FnMut(RowRef<'_>)) -> Result<Header> {
        if let Some(p) = self.read_ioctl()? {
            return Ok(hand_on(p, row));
        }
        self.read_with(|r| stream_profile(r, limit, self.lenient, row))
    }
}

/// Hands the rows of `profile` to `row`, one by one; its header is what remains.
fn hand_on(profile: Profile, row: &mut dyn FnMut(RowRef<'_>)) -> Header {
    for r in &profile.rows {
        r.view(&mut *row);
    }
    Header {
        version: profile.version,
        snapshot: profile.snapshot,
    }
}

/// Why `--source ioctl` could not read.
fn refused(e: IoctlError) -> Error {
    Error::Refused(match e {
        IoctlError::Unsupported => format!(
            "{PROC_ALLOCINFO}: this kernel has no allocinfo ioctls (they came with Linux 7.3); \
             --source text reads the text"
        ),
        IoctlError::Unstable => {
            format!("{PROC_ALLOCINFO}: modules were loaded or unloaded during each of 5 walks")
        }
        IoctlError::NoSampling => format!("{PROC_ALLOCINFO}: no batch record flags"),
        IoctlError::TooManyNodes(n) => format!("{PROC_ALLOCINFO}: {}", too_many_nodes(n)),
        IoctlError::Io(e) => format!("{PROC_ALLOCINFO}: ioctl: {e}"),
    })
}

fn too_many_nodes(n: usize) -> String {
    format!(
        "{n} node ids ({}) are more than a record of {} bytes holds",
        ioctl::NODE_POSSIBLE,
        ioctl::RECORD_SIZE_MAX
    )
}

/// The kernel's per-node text, read by `--by-node` when the ioctl cannot give the nodes.
pub const DEBUGFS_NODES: &str = "/sys/kernel/debug/allocinfo_nodes";

/// What `--by-node` says when neither the ioctl nor the text has the nodes.
pub const NO_NODES: &str = "per-node attribution is not available: boot with alloc_tag_node=1 \
                            on a CONFIG_MEM_ALLOC_PROFILING_NUMA kernel";

/// Why ALLOCINFO_BATCH_NODES could not be used, in words.
fn nodes_ioctl_failure(e: &IoctlError) -> String {
    match e {
        IoctlError::Unsupported => "no allocinfo ioctls (Linux before 7.3)".to_string(),
        IoctlError::Unstable => {
            "modules were loaded or unloaded during each of 5 walks".to_string()
        }
        IoctlError::NoSampling => "no batch record flags".to_string(),
        IoctlError::TooManyNodes(n) => too_many_nodes(*n),
        IoctlError::Io(e) => match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) => {
                "EOPNOTSUPP: several nodes and per-node attribution off".to_string()
            }
            Some(libc::EINVAL) => "EINVAL: this kernel has no ALLOCINFO_BATCH_NODES".to_string(),
            Some(libc::ENOTTY) => "ENOTTY: this kernel has no ALLOCINFO_IOC_GET_BATCH".to_string(),
            _ => e.to_string(),
        },
    }
}

/// Reads one source again and again (`watch`): through the ioctls, with an open file that keeps
/// the names of the tags between samples ([`ioctl::Sampler`]); as [`Source::read`] where the
/// kernel has no record flags, and for the text.
pub struct Sampler<'a> {
    source: &'a Source,
    ioctl: Option<ioctl::Sampler>,
    tried: bool,
}

impl Sampler<'_> {
    /// Reads one sample.
    pub fn read(&mut self) -> Result<Profile> {
        let s = self.source;
        if s.mode != SourceMode::Text && s.is_proc() {
            if !self.tried {
                self.tried = true;
                self.ioctl = ioctl::Sampler::open(&s.path, &s.kernel_filter).ok();
            }
            if let Some(sampler) = self.ioctl.as_mut() {
                s.used_ioctl.set(false);
                match sampler.sample() {
                    // auto: a name that may be cut is read in full from the text instead.
                    Ok((_, true)) if s.mode == SourceMode::Auto => {}
                    Ok((p, _)) => {
                        s.used_ioctl.set(true);
                        return Ok(p);
                    }
                    // A kernel whose GET_BATCH has no record flags: read as read() does.
                    Err(IoctlError::NoSampling) => self.ioctl = None,
                    Err(e) if s.mode == SourceMode::Ioctl => return Err(refused(e)),
                    Err(_) => {}
                }
            }
        }
        s.read()
    }
}

impl Source {
    /// A reader of samples of this source.
    pub fn sampler(&self) -> Sampler<'_> {
        Sampler {
            source: self,
            ioctl: None,
            tried: false,
        }
    }

    fn io_error(&self, e: io::Error) -> Error {
        let proc = self.is_proc();
        let hint = match e.kind() {
            io::ErrorKind::PermissionDenied if proc => " (it is readable by root only)",
            io::ErrorKind::NotFound if proc => " (is CONFIG_MEM_ALLOC_PROFILING enabled?)",
            _ => "",
        };
        Error::io(format!("cannot read {}{hint}", self.display()), e)
    }
}

/// Most input read from one capture report (`capture show`): a report is a few KiB, so this
/// only stops input that is not one from filling memory.
pub const MAX_INPUT: u64 = 64 << 20;

/// Memory a parsed [`Profile`] may take per byte of its text, rounded up: a row of 60 bytes of
/// text is a [`Row`] of 112 bytes, its names on the heap and the spare room of a growing
/// vector.
///
/// [`Row`]: crate::profile::Row
pub const PROFILE_BYTES_PER_INPUT_BYTE: u64 = 6;

/// The most input a read may take when it keeps `per_byte` bytes of memory per byte of input:
/// what the memory this process may still use holds (the smallest of MemAvailable and the
/// soft limits of `ulimit -d` and `ulimit -v`); no limit when none of them is known. Without
/// it, input larger than memory would end in an allocation failure that aborts the process, or
/// in the OOM killer, instead of in an error that says why.
pub fn input_limit(per_byte: u64) -> u64 {
    memory_allowance().map_or(u64::MAX, |m| m / per_byte.max(1))
}

/// Bytes of memory this process may still allocate, where known.
fn memory_allowance() -> Option<u64> {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| mem_available(&m));
    let rlimit = |resource| {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given, which lives across the call.
        let ok = unsafe { libc::getrlimit(resource, &mut lim) } == 0;
        (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
    };
    [
        available,
        rlimit(libc::RLIMIT_DATA),
        rlimit(libc::RLIMIT_AS),
    ]
    .into_iter()
    .flatten()
    .min()
}

/// `MemAvailable:` of /proc/meminfo text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib = line.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

/// Why a profile could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(io::Error),
    Parse(ParseError),
    /// More than this many bytes.
    TooLarge(u64),
}

/// Reads and parses line by line, refusing more than `limit` bytes. Reads are large: before
/// Linux 6.17 every read() of /proc/allocinfo restarted the walk over all tags, so small reads
/// made a full read quadratic.
pub fn read_profile(r: impl Read, limit: u64, lenient: bool) -> Result<Profile, ReadError> {
    let mut parser = LineParser::new(lenient);
    read_lines(r, limit, |line| parser.feed_bytes(line))?;
    parser.finish().map_err(ReadError::Parse)
}

/// As [`read_profile`], handing each row to `row` instead of keeping it (the rows of
/// allocinfo_nodes text, summed per tag, once the whole input is read).
pub fn stream_profile(
    r: impl Read,
    limit: u64,
    lenient: bool,
    row: &mut dyn FnMut(RowRef<'_>),
) -> Result<Header, ReadError> {
    let mut parser = LineParser::new(lenient);
    read_lines(r, limit, |line| parser.feed_bytes_with(line, row))?;
    let profile = parser.finish().map_err(ReadError::Parse)?;
    Ok(hand_on(profile, row))
}

/// As [`read_profile`], keeping allocinfo_nodes text per node.
pub fn read_any(r: impl Read, limit: u64, lenient: bool) -> Result<Parsed, ReadError> {
    let mut parser = LineParser::new(lenient);
    read_lines(r, limit, |line| parser.feed_bytes(line))?;
    parser.finish_any().map_err(ReadError::Parse)
}

/// Feeds `r` to `feed` one line at a time (without its `\n`), refusing more than `limit` bytes
/// and lines longer than [`MAX_LINE`] (which `feed` sees, to refuse with its line number).
pub fn read_lines(
    r: impl Read,
    limit: u64,
    mut feed: impl FnMut(&[u8]) -> Result<(), ParseError>,
) -> Result<(), ReadError> {
    const CHUNK: usize = 1 << 20;
    let mut reader = BufReader::with_capacity(CHUNK, r);
    let mut line = Vec::new();
    let mut total: u64 = 0;
    loop {
        line.clear();
        // One byte past the longest line, so that an overlong one is seen as such.
        let max = (MAX_LINE + 2) as u64;
        let n = match (&mut reader).take(max).read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > limit {
            return Err(ReadError::TooLarge(limit));
        }
        let ends = line.last() == Some(&b'\n');
        if ends {
            line.pop();
        }
        feed(&line).map_err(ReadError::Parse)?;
        if !ends && line.len() <= MAX_LINE {
            // The last line, without a final newline.
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_line_by_line_up_to_the_limit() {
        let head = "allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n";
        let row = "        4096        1 mm/slub.c:2450 func:alloc_slab_page \n";
        // Over two read chunks, and a last line without its newline.
        let mut text = head.to_string() + &row.repeat(40_000);
        text.pop();
        let p = read_profile(text.as_bytes(), MAX_INPUT, false).unwrap();
        assert_eq!(p.rows.len(), 40_000);
        let limit = text.len() as u64 - 1;
        assert!(matches!(
            read_profile(text.as_bytes(), limit, false),
            Err(ReadError::TooLarge(l)) if l == limit
        ));
        let long = format!("{head}{}\n", "1".repeat(MAX_LINE + 1));
        match read_profile(long.as_bytes(), MAX_INPUT, false) {
            Err(ReadError::Parse(e)) => {
                assert_eq!(
                    e.to_string(),
                    "line 3: longer than 65536 bytes, not an allocinfo row"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = Source::new(Some(Path::new("/nonexistent/allocinfo")))
            .read()
            .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("cannot read /nonexistent/allocinfo: "));
        assert_eq!(e.exit_code(), crate::error::EXIT_RUNTIME);
    }
}
