// SPDX-License-Identifier: GPL-2.0
//! One module per subcommand, plus the output helpers they share.

pub mod capture;
pub mod diff;
pub mod export;
pub mod snapshot;
pub mod top;
pub mod tree;
pub mod watch;

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::size::{iec, iec_delta, signed};

/// Writes `value` as pretty JSON followed by a newline.
pub fn write_json(out: &mut dyn Write, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)
        .map_err(|e| Error::io("writing JSON", io::Error::from(e)))?;
    writeln!(out).map_err(output_error)
}

/// Context for a failed write to standard output.
pub fn output_error(e: io::Error) -> Error {
    Error::io("writing output", e)
}

/// `1 site`, `2 sites`: a count with its noun in the right number.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A byte count as the user asked to see it: IEC by default, plain with `--bytes`.
pub fn show_size(bytes: i128, plain: bool) -> String {
    if plain {
        bytes.to_string()
    } else {
        iec(bytes)
    }
}

/// A signed byte delta as the user asked to see it.
pub fn show_delta(bytes: i128, plain: bool) -> String {
    if plain {
        signed(bytes)
    } else {
        iec_delta(bytes)
    }
}

/// Writes `data` to `--output` as [`write_output`] does, or without one to standard output.
pub fn write_data(output: Option<&Path>, data: &[u8], out: &mut dyn Write) -> Result<()> {
    write_stream(output, out, |w| w.write_all(data))
}

/// Writes what `write` produces to `--output` as [`write_output`] does, or without one to `out`,
/// through a buffer: the output is never held whole in memory.
pub fn write_stream(
    output: Option<&Path>,
    out: &mut dyn Write,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    match output {
        Some(path) => write_output_with(path, write),
        None => {
            let mut buffered = io::BufWriter::with_capacity(1 << 16, out);
            write(&mut buffered)
                .and_then(|()| buffered.flush())
                .map_err(output_error)
        }
    }
}

/// Writes `data` to `--output`. A regular file (or a missing path) is replaced atomically so that
/// readers (a textfile collector, a later diff) never see a half-written file: a temporary file
/// beside it, synced, then renamed over. Anything else (a symlink, a fifo, a device such as
/// /dev/stdout) is written through, since renaming over it would replace it, and the tool runs as
/// root. A directory is refused.
pub fn write_output(path: &Path, data: &[u8]) -> Result<()> {
    write_output_with(path, |w| w.write_all(data))
}

/// As [`write_output`], the data written by `write`.
fn write_output_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let cannot = |e: io::Error| Error::io(format!("cannot write {}", path.display()), e);
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Err(Error::Refused(format!(
            "cannot write {}: it is a directory",
            path.display()
        ))),
        Ok(m) if !m.file_type().is_file() => fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .and_then(|f| {
                let mut w = io::BufWriter::with_capacity(1 << 16, f);
                write(&mut w)?;
                w.flush()
            })
            .map_err(cannot),
        Ok(_) => write_atomically(path, write),
        Err(e) if e.kind() == io::ErrorKind::NotFound => write_atomically(path, write),
        Err(e) => Err(cannot(e)),
    }
}

fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::Usage(format!("output path {} names no file", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    // create_new: never follow or reuse whatever already sits at the temporary name.
    let created = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp);
    let result = created.and_then(|f| {
        let mut w = io::BufWriter::with_capacity(1 << 16, f);
        write(&mut w)?;
        let f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    });
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Error::io(format!("cannot write {}", path.display()), e)
    })
}

#[cfg(test)]
pub mod testdata {
    //! Small profiles for the command tests.

    use crate::parse::parse;
    use crate::profile::Profile;

    pub const SAMPLE: &str = "allocinfo - version: 1.0
#     <size>  <calls> <tag info>
     4194304     1024 mm/slub.c:2450 func:alloc_slab_page 
      262144       64 mm/page_alloc.c:4800 func:__alloc_pages 
     1048576        8 fs/ext4/super.c:100 [ext4] func:ext4_fill_super 
       16384        4 fs/ext4/inode.c:55 [ext4] func:ext4_iget 
           0        0 lib/idr.c:12 func:idr_alloc 
       -8192        0 mm/migrate.c:300 func:migrate_pages 
        4096      900 kernel/fork.c:77 func:dup_task_struct 
";

    /// [`SAMPLE`] parsed.
    pub fn sample() -> Profile {
        match parse(SAMPLE) {
            Ok(p) => p,
            Err(e) => panic!("bad test data: {e}"),
        }
    }

    /// Defines `fn args(argv: &[&str]) -> $ty`, what the real command line
    /// makes of `allocinfo $words... argv...` for the subcommand `$variant`.
    macro_rules! subcommand_args {
        ($variant:ident, $ty:ty, $($word:literal),+) => {
            fn args(argv: &[&str]) -> $ty {
                let full = ["allocinfo", $($word),+].into_iter().chain(argv.iter().copied());
                match <crate::cli::Cli as clap::Parser>::parse_from(full).command {
                    crate::cli::Command::$variant(a) => a,
                    other => panic!("parsed as {other:?}"),
                }
            }
        };
    }
    pub(crate) use subcommand_args;

    /// Output captured from a closure writing to a buffer.
    pub fn capture(f: impl FnOnce(&mut Vec<u8>) -> crate::error::Result<()>) -> String {
        let mut buf = Vec::new();
        if let Err(e) = f(&mut buf) {
            panic!("command failed: {e}");
        }
        match String::from_utf8(buf) {
            Ok(s) => s,
            Err(e) => panic!("output is not UTF-8: {e}"),
        }
    }
}
