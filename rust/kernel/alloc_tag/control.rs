// SPDX-License-Identifier: GPL-2.0

//! Controls: the `mem_alloc_profiling_key` and `mem_alloc_profiling_free_key`
//! static keys, the `sysctl.vm.mem_profiling=` and `alloc_tag_page_bits=`
//! boot parameters, and `/proc/sys/vm/mem_profiling`.
//!
//! Rules:
//! - Default: on with `MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT`, else `never`.
//! - Boot `0`/`1` sets the state and keeps run-time switching; `never` turns
//!   profiling off for good (no `page_ext`, sysctl read-only). Any other value
//!   is refused with one log line naming it, and the default stays.
//! - `,compressed` after `0` or `1` asks for compressed page tags
//!   ([`super::compressed`], which reads it here); any other text after the
//!   comma refuses the value.
//! - `alloc_tag_page_bits=N` caps the page-flag bits compressed tags use.
//! - The sysctl (0644) reads and writes as upstream's `proc_do_static_key()`:
//!   `0` or `1` (whitespace around allowed) from `CAP_SYS_ADMIN`; anything
//!   else is `-EINVAL` and changes nothing. After `never` every write is
//!   `-EINVAL`, and in `MEM_ALLOC_PROFILING_DEBUG` builds `-EACCES` (as
//!   upstream 7.0, which made the file 0644 for the next rule).
//! - The boot-time write of the generic `sysctl.` parameter handler (which
//!   hands the whole `sysctl.vm.mem_profiling=` value to the sysctl, from a
//!   kernel thread without `mm`, after the early parameter took it) does
//!   nothing and succeeds, so that no boot logs `Failed to set sysctl
//!   parameter` for a value the early parameter accepted or refused.
//! - The allocation hooks test the profiling key; the hooks that uncharge
//!   or move a charge test the free key. Switching profiling on switches
//!   the free key on first, and nothing but the boot value switches it off
//!   (before anything is charged): frees uncharge what was charged while
//!   on even after profiling is switched off, so no flip leaves a row
//!   charged with memory that is free.
//! - `/proc/sys/vm/mem_profiling_compressed` (0444, as upstream 7.3) reads 1
//!   when page tags are indexes in `page->flags`, 0 when they are in
//!   `page_ext` (a fallback included) or profiling is `never`.

use super::keys::StaticKey;
use super::parse::{parse_boot_value, parse_page_bits, BootMode};
use crate::error::{
    code::{EACCES, EINVAL, EPERM},
    Result,
};
use crate::pr_err;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

const ENABLED_BY_DEFAULT: bool = cfg!(CONFIG_MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT);

/// Profiling can be switched on (not `never`).
static SUPPORTED: AtomicBool = AtomicBool::new(ENABLED_BY_DEFAULT);

/// `,compressed` in the boot value.
static COMPRESSED_REQUESTED: AtomicBool = AtomicBool::new(false);

/// `alloc_tag_page_bits=`, `u32::MAX` without it.
static PAGE_BITS_LIMIT: AtomicU32 = AtomicU32::new(u32::MAX);

/// Whether the boot value asked for compressed page tags (`,compressed`).
/// Final once early parameters are parsed, before any page is charged.
pub(crate) fn compressed_requested() -> bool {
    COMPRESSED_REQUESTED.load(Ordering::Relaxed)
}

/// The most page-flag bits compressed page tags may use
/// (`alloc_tag_page_bits=`), `u32::MAX` if not limited. Final once early
/// parameters are parsed.
pub(crate) fn page_bits_limit() -> u32 {
    PAGE_BITS_LIMIT.load(Ordering::Relaxed)
}

/// Whether profiling can ever count in this boot.
pub(super) fn profiling_supported() -> bool {
    SUPPORTED.load(Ordering::Relaxed)
}

/// Whether profiling is counting now.
pub(super) fn profiling_enabled() -> bool {
    StaticKey::profiling().is_enabled()
}

/// Switches counting on or off at run time. On, the free key first: once
/// an allocation can be charged, its free uncharges it. Off leaves the
/// free key on, so that what was charged is still uncharged when freed.
fn switch(on: bool) {
    if on {
        StaticKey::free().set(true);
    }
    StaticKey::profiling().set(on);
}

/// True after `sysctl.vm.mem_profiling=never` (or without it when profiling
/// is not enabled by default).
pub(super) fn permanently_disabled() -> bool {
    !profiling_supported()
}

/// `early_param()` handler of `sysctl.vm.mem_profiling=` (registered in
/// `lib/alloc_tag_init.c`): the value's bytes, empty without `=`. A bad
/// value is reported and leaves the default; handled either way (no second
/// "Malformed early option" line).
pub(super) fn early_param(bytes: &[u8]) {
    match parse_boot_value(bytes) {
        Ok(v) => {
            COMPRESSED_REQUESTED.store(v.compressed, Ordering::Relaxed);
            let (support, on) = match v.mode {
                BootMode::Off => (true, false),
                BootMode::On => (true, true),
                BootMode::Never => (false, false),
            };
            SUPPORTED.store(support, Ordering::Relaxed);
            // Early parameters come before the page allocator is up, so
            // nothing is charged yet: the free key may follow the value.
            StaticKey::free().set(on);
            StaticKey::profiling().set(on);
        }
        Err(e) => {
            pr_err!(
                "alloc_tag: sysctl.vm.mem_profiling={}: {}; keeping the default ({})\n",
                crate::str::BStr::from_bytes(bytes),
                e.describe(),
                if ENABLED_BY_DEFAULT { "1" } else { "never" }
            );
        }
    }
}

/// `early_param()` handler of `alloc_tag_page_bits=` (registered in
/// `lib/alloc_tag_init.c`): the most page-flag
/// bits compressed page tags may use (to test the fallback on a config that
/// has plenty): the value's bytes, empty without `=`. A bad value is
/// reported and ignored.
pub(super) fn page_bits_param(bytes: &[u8]) {
    match parse_page_bits(bytes) {
        Some(bits) => PAGE_BITS_LIMIT.store(bits, Ordering::Relaxed),
        None => pr_err!(
            "alloc_tag: alloc_tag_page_bits={}: expected a number from 0 to 64; ignored\n",
            crate::str::BStr::from_bytes(bytes)
        ),
    }
}

/// What a write to `vm.mem_profiling` may do, asked before its value is
/// parsed: `Ok(true)` parse it and [`sysctl_written`], `Ok(false)` succeed
/// doing nothing (the boot-time write, from a task without `mm`), or the
/// error. `capable` says whether the writer has `CAP_SYS_ADMIN`; it is
/// asked last, as `proc_do_static_key()` asks it, so that a refusal for
/// the mode logs no capability check.
pub(super) fn sysctl_may_write(has_mm: bool, capable: impl FnOnce() -> bool) -> Result<bool> {
    if !has_mm {
        return Ok(false);
    }
    if !profiling_supported() {
        return Err(EINVAL);
    }
    if cfg!(CONFIG_MEM_ALLOC_PROFILING_DEBUG) {
        return Err(EACCES);
    }
    if !capable() {
        return Err(EPERM);
    }
    Ok(true)
}

/// The value `vm.mem_profiling` reads: whether profiling counts now.
pub(super) fn sysctl_value() -> bool {
    profiling_enabled()
}

/// A write of `vm.mem_profiling` that [`sysctl_may_write`] allowed parsed
/// as `on`.
pub(super) fn sysctl_written(on: bool) {
    switch(on);
}

/// Whether `vm.mem_profiling_compressed` reads 1: page tags are indexes in
/// `page->flags` (`compressed`) and profiling is not `never`.
pub(super) fn compressed_sysctl_value(compressed: bool) -> bool {
    profiling_supported() && compressed
}
