// SPDX-License-Identifier: GPL-2.0

//! What the profiler's own tests check and no other user needs.
//!
//! Compiled with `CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS` only (always on with
//! `CONFIG_RUST_KERNEL_DOCTESTS`): the examples in this module's
//! documentation and in the private modules' run as KUnit tests in a crate of
//! their own, and the Rust module of the alloc_tag selftests
//! (`tools/testing/selftests/alloc_tag/test_modules/`) reads the figures
//! below. Nothing here is on an allocation path.

pub use super::compressed::{fits, MODULE_IDS, RESERVED_IDS, RUST_SITE_IDS};
pub use super::demangle::{fn_name, is_alloc_machinery, FnName};
pub use super::ioctl::put_name;
pub use super::parse::{parse_boot_value, parse_page_bits, BootError, BootMode, BootValue};
pub use super::rust_sites::{tag_for, LOCK_HOLD_BOUND};

/// Adds every block of Rust call-site tags the configuration allows, now,
/// and returns the number of sites then in place.
pub fn grow_all_rust_sites() -> usize {
    super::rust_sites::grow_all()
}

/// The most slot and site reads made under one hold of the Rust sites' lock
/// since boot; at most [`LOCK_HOLD_BOUND`] unless the identity index
/// overflowed.
pub fn max_lock_hold() -> usize {
    super::rust_sites::max_lock_hold()
}

/// The compressed page-tag indexes in use by module tags and by blocks of
/// Rust call-site tags (both 0 when page tags are not compressed).
pub fn page_ids_used() -> (usize, usize) {
    super::compressed::slots_used()
}
