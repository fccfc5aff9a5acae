// SPDX-License-Identifier: GPL-2.0
//! The tool's error type: what went wrong, on which file, and which exit code it maps to.

use std::fmt;
use std::io;

use crate::parse::ParseError;

/// Exit code for runtime failures (unreadable input, malformed data, failed writes).
pub const EXIT_RUNTIME: u8 = 1;
/// Exit code for a command line that cannot be acted on.
pub const EXIT_USAGE: u8 = 2;

/// Any failure of a command.
#[derive(Debug)]
pub enum Error {
    /// An I/O operation failed; `context` says which one, on what.
    Io { context: String, source: io::Error },
    /// An input file did not parse.
    Parse { path: String, source: ParseError },
    /// Arguments that parsed but make no sense together.
    Usage(String),
    /// An input or output refused for a reason the message states in full.
    Refused(String),
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => EXIT_USAGE,
            Error::Io { .. } | Error::Parse { .. } | Error::Refused(_) => EXIT_RUNTIME,
        }
    }

    /// True when stdout was closed by the reader (`allocinfo top | head`), which is not a failure.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Parse { path, source } => write!(f, "{path}: {source}"),
            Error::Usage(msg) | Error::Refused(msg) => write!(f, "{msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Parse { source, .. } => Some(source),
            Error::Usage(_) | Error::Refused(_) => None,
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
