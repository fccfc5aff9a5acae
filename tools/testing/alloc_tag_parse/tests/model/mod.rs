// SPDX-License-Identifier: GPL-2.0

//! A reference model of the parsers, written from their documentation
//! (`Documentation/mm/allocation-profiling-design.rst`, "Controls in detail";
//! `sysctl/vm.rst`), not from `parse.rs`.
//!
//! Where the accepted language is finite the model lists it and looks the
//! input up; elsewhere it states the rule in the simplest way, with no care
//! for speed, so that it shares no code shape with the kernel's parsers.

use kernel::alloc_tag::parse::{BootError, BootMode, BootValue};

/// The three modes of `sysctl.vm.mem_profiling=`.
const BOOT_MODES: [(&str, BootMode); 3] = [
    ("0", BootMode::Off),
    ("1", BootMode::On),
    ("never", BootMode::Never),
];

/// `sysctl.vm.mem_profiling=`: one of six strings, `MODE` or
/// `MODE,compressed`. A refusal names the first part that is wrong: the mode
/// (everything before the first comma) or, after a good mode, the rest.
pub fn boot_value(input: &[u8]) -> Result<BootValue, BootError> {
    for (word, mode) in BOOT_MODES {
        if input == word.as_bytes() {
            return Ok(BootValue {
                mode,
                compressed: false,
            });
        }
        if input == format!("{word},compressed").as_bytes() {
            return Ok(BootValue {
                mode,
                compressed: true,
            });
        }
    }
    if input.is_empty() {
        return Err(BootError::Empty);
    }
    let before_comma = input.split(|&b| b == b',').next().unwrap_or_default();
    if BOOT_MODES.iter().any(|(w, _)| w.as_bytes() == before_comma) {
        Err(BootError::BadOption)
    } else {
        Err(BootError::BadMode)
    }
}

/// `alloc_tag_page_bits=`: a decimal number from 0 to 64, digits only
/// (leading zeros allowed), nothing else.
pub fn page_bits(input: &[u8]) -> Option<u32> {
    if input.is_empty() || !input.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let first_nonzero = input.iter().position(|&b| b != b'0');
    let significant = first_nonzero.map_or(&b"0"[..], |i| &input[i..]);
    (0..=64u32).find(|n| n.to_string().as_bytes() == significant)
}
