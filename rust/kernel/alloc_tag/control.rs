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
use crate::ffi::{c_char, c_int, c_void};
use crate::{bindings, c_str, pr_err, types::Opaque};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

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

/// `0` and `1`, the bounds of a `vm.mem_profiling` write.
static ZERO_ONE: [c_int; 2] = [0, 1];

/// The `vm.mem_profiling` handler: `proc_do_static_key()`'s checks and
/// parsing, with [`switch`] for the keys, but for the boot-time write and
/// the writes the mode forbids (see the module documentation).
///
/// # Safety
///
/// Called by the sysctl core with its arguments: `table` is the entry,
/// `buffer`, `lenp` and `ppos` as the sysctl core passes them to
/// `proc_dointvec_minmax()`.
unsafe extern "C" fn proc_mem_profiling(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    if write != 0 {
        // SAFETY: `current` is always a valid task; its `mm` is only
        // compared with NULL.
        if unsafe { (*bindings::get_current()).mm }.is_null() {
            return 0;
        }
        if !profiling_supported() {
            return crate::error::code::EINVAL.to_errno();
        }
        if cfg!(CONFIG_MEM_ALLOC_PROFILING_DEBUG) {
            return crate::error::code::EACCES.to_errno();
        }
        // SAFETY: `capable()` may be called from any process context.
        if !unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) } {
            return crate::error::code::EPERM.to_errno();
        }
    }
    let mut val = c_int::from(profiling_enabled());
    let tmp = bindings::ctl_table {
        // SAFETY: `table` is the valid entry the sysctl core passed.
        procname: unsafe { (*table).procname },
        data: core::ptr::addr_of_mut!(val).cast::<c_void>(),
        maxlen: core::mem::size_of::<c_int>() as c_int,
        // SAFETY: as above.
        mode: unsafe { (*table).mode },
        proc_handler: None,
        poll: core::ptr::null_mut(),
        extra1: ZERO_ONE.as_ptr().cast_mut().cast::<c_void>(),
        extra2: ZERO_ONE[1..].as_ptr().cast_mut().cast::<c_void>(),
    };
    // SAFETY: `tmp` points at `val`, a `c_int` that outlives the call, with
    // the bounds `proc_dointvec_minmax()` only reads; the other arguments
    // are the caller's.
    let ret = unsafe { bindings::proc_dointvec_minmax(&tmp, write, buffer, lenp, ppos) };
    if write != 0 && ret == 0 {
        switch(val != 0);
    }
    ret
}

/// The value `/proc/sys/vm/mem_profiling_compressed` shows, set at init
/// before the table is registered and never changed after.
static COMPRESSED_SYSCTL: AtomicI32 = AtomicI32::new(0);

/// The `vm` sysctl table: `mem_profiling` and `mem_profiling_compressed`.
#[repr(transparent)]
struct SysctlTable(Opaque<[bindings::ctl_table; 2]>);

// SAFETY: written only by `sysctl_init()` (the mode and the data pointer),
// before the table is registered and so before anything else reads it.
unsafe impl Sync for SysctlTable {}

static SYSCTL: SysctlTable = SysctlTable(Opaque::new([
    bindings::ctl_table {
        procname: c"mem_profiling".as_ptr().cast::<c_char>(),
        // The handler keeps its state in the static keys.
        data: core::ptr::null_mut(),
        maxlen: 0,
        mode: 0o644,
        proc_handler: Some(proc_mem_profiling),
        poll: core::ptr::null_mut(),
        extra1: core::ptr::null_mut(),
        extra2: core::ptr::null_mut(),
    },
    bindings::ctl_table {
        procname: c"mem_profiling_compressed".as_ptr().cast::<c_char>(),
        // Set to `COMPRESSED_SYSCTL` by `sysctl_init()`.
        data: core::ptr::null_mut(),
        maxlen: core::mem::size_of::<c_int>() as c_int,
        mode: 0o444,
        proc_handler: Some(bindings::proc_dointvec),
        poll: core::ptr::null_mut(),
        extra1: core::ptr::null_mut(),
        extra2: core::ptr::null_mut(),
    },
]));

/// Registers the `vm` sysctls; `compressed` says whether page tags are
/// indexes in `page->flags` in this boot. Called once, from the initcall.
pub(crate) fn sysctl_init(compressed: bool) {
    let compressed = profiling_supported() && compressed;
    COMPRESSED_SYSCTL.store(c_int::from(compressed), Ordering::Relaxed);
    let table = SYSCTL.0.get().cast::<bindings::ctl_table>();
    // SAFETY: not yet registered, so nothing else reads the table; entry 1
    // is inside the two-entry array. `proc_dointvec` only reads the `c_int`
    // behind `data` through a 0444 entry; the static lives for ever.
    unsafe { (*table.add(1)).data = COMPRESSED_SYSCTL.as_ptr().cast::<c_void>() };
    // SAFETY: the table and its strings are static; two entries.
    let header = unsafe { bindings::register_sysctl_sz(c_str!("vm").as_char_ptr(), table, 2) };
    if header.is_null() {
        pr_err!("alloc_tag: cannot register vm.mem_profiling\n");
    }
}
