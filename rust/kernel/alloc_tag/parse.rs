// SPDX-License-Identifier: GPL-2.0

//! Parsers of the profiler's boot parameters (`sysctl.vm.mem_profiling=`,
//! `alloc_tag_page_bits=`); sysctl writes are parsed by `proc_dointvec_minmax()`.
//!
//! Pure functions of bytes with no kernel dependency, so that the same file
//! is also built and fuzzed on the host.

/// What `sysctl.vm.mem_profiling=` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootMode {
    /// `0`: compiled in and able to start later, off now.
    Off,
    /// `1`: counting from boot.
    On,
    /// `never`: off for good, no page_ext, sysctl read-only.
    Never,
}

/// A whole `sysctl.vm.mem_profiling=` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootValue {
    /// The state asked for.
    pub mode: BootMode,
    /// `,compressed`: page tags as indexes in page->flags.
    pub compressed: bool,
}

/// Why a boot value was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootError {
    /// Nothing after the `=`.
    Empty,
    /// Not `0`, `1` or `never`.
    BadMode,
    /// Something after a comma.
    BadOption,
}

impl BootError {
    /// One line for the kernel log.
    pub fn describe(self) -> &'static str {
        match self {
            BootError::Empty => "empty value",
            BootError::BadMode => "expected 0, 1 or never",
            BootError::BadOption => "the only option after the comma is 'compressed'",
        }
    }
}

/// Parses the value of `sysctl.vm.mem_profiling=`: exactly `0`, `1` or
/// `never`, optionally followed by exactly `,compressed`.
///
/// # Examples
///
/// ```
/// use kernel::alloc_tag::testing::{parse_boot_value, BootError, BootMode, BootValue};
///
/// let on = |compressed| Ok(BootValue { mode: BootMode::On, compressed });
/// assert_eq!(parse_boot_value(b"1"), on(false));
/// assert_eq!(parse_boot_value(b"1,compressed"), on(true));
/// assert_eq!(parse_boot_value(b"never").map(|v| v.mode), Ok(BootMode::Never));
/// assert_eq!(parse_boot_value(b"nevermore"), Err(BootError::BadMode));
/// assert_eq!(parse_boot_value(b"1,compress"), Err(BootError::BadOption));
/// assert_eq!(parse_boot_value(b"1,compressed,"), Err(BootError::BadOption));
/// assert_eq!(parse_boot_value(b"1,"), Err(BootError::BadOption));
/// assert_eq!(parse_boot_value(b",compressed"), Err(BootError::BadMode));
/// assert_eq!(parse_boot_value(b""), Err(BootError::Empty));
/// ```
pub fn parse_boot_value(value: &[u8]) -> Result<BootValue, BootError> {
    if value.is_empty() {
        return Err(BootError::Empty);
    }
    let (mode, options) = match value.iter().position(|&b| b == b',') {
        Some(i) => (&value[..i], Some(&value[i + 1..])),
        None => (value, None),
    };
    let mode = match mode {
        b"0" => BootMode::Off,
        b"1" => BootMode::On,
        b"never" => BootMode::Never,
        _ => return Err(BootError::BadMode),
    };
    let compressed = match options {
        None => false,
        Some(b"compressed") => true,
        Some(_) => return Err(BootError::BadOption),
    };
    Ok(BootValue { mode, compressed })
}

/// Parses `alloc_tag_page_bits=`: the most page-flag bits compressed page
/// tags may use, a decimal number from 0 to 64 (digits only, leading zeros
/// allowed: no sign, no whitespace).
///
/// # Examples
///
/// ```
/// use kernel::alloc_tag::testing::parse_page_bits;
///
/// assert_eq!(parse_page_bits(b"8"), Some(8));
/// assert_eq!(parse_page_bits(b"064"), Some(64));
/// assert_eq!(parse_page_bits(b"000000064"), Some(64));
/// assert_eq!(parse_page_bits(b"65"), None);
/// assert_eq!(parse_page_bits(b"99999999999999999999"), None);
/// assert_eq!(parse_page_bits(b"-1"), None);
/// assert_eq!(parse_page_bits(b""), None);
/// assert_eq!(parse_page_bits(b"8 "), None);
/// ```
pub fn parse_page_bits(value: &[u8]) -> Option<u32> {
    if value.is_empty() {
        return None;
    }
    let mut n: u32 = 0;
    for &b in value {
        if !b.is_ascii_digit() {
            return None;
        }
        // Past 64 the value is refused anyway: stopping at 65 keeps any
        // length of input from overflowing, leading zeros included.
        n = (n * 10 + u32::from(b - b'0')).min(65);
    }
    (n <= 64).then_some(n)
}
