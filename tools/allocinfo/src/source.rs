// SPDX-License-Identifier: GPL-2.0
//! Reading a profile from /proc/allocinfo, a file, or standard input.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::parse::parse_bytes;
use crate::profile::Profile;

/// The kernel's file, read when no `--input` is given.
pub const PROC_ALLOCINFO: &str = "/proc/allocinfo";

/// Where a profile comes from; `-` means standard input.
#[derive(Clone, Debug)]
pub struct Source {
    path: PathBuf,
}

impl Source {
    /// `--input` if given, else /proc/allocinfo.
    pub fn new(input: Option<&Path>) -> Self {
        Source {
            path: input.map_or_else(|| PathBuf::from(PROC_ALLOCINFO), Path::to_path_buf),
        }
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

    /// Reads and parses the whole source once.
    pub fn read(&self) -> Result<Profile> {
        let data = if self.is_stdin() {
            read_all(io::stdin().lock())
        } else {
            File::open(&self.path).and_then(read_all)
        }
        .map_err(|e| {
            let proc = self.path == Path::new(PROC_ALLOCINFO);
            let hint = match e.kind() {
                io::ErrorKind::PermissionDenied if proc => " (it is readable by root only)",
                io::ErrorKind::NotFound if proc => " (is CONFIG_MEM_ALLOC_PROFILING enabled?)",
                _ => "",
            };
            Error::io(format!("cannot read {}{hint}", self.display()), e)
        })?;
        parse_bytes(&data).map_err(|source| Error::Parse {
            path: self.display(),
            source,
        })
    }
}

/// Reads to the end in large chunks: before Linux 6.17 every read() of /proc/allocinfo restarted
/// the walk over all tags, so small reads made a full read quadratic.
fn read_all(mut r: impl Read) -> io::Result<Vec<u8>> {
    const CHUNK: usize = 1 << 20;
    let mut data = Vec::new();
    let mut len = 0;
    loop {
        if data.len() - len < CHUNK / 2 {
            data.resize(len + CHUNK, 0);
        }
        match r.read(&mut data[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    data.truncate(len);
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_one_chunk() {
        let big = vec![b'x'; (1 << 20) * 2 + 7];
        assert_eq!(read_all(&big[..]).unwrap(), big);
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
