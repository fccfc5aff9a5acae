// SPDX-License-Identifier: GPL-2.0

//! The `vm` sysctls as the sysctl core sees them: the table of
//! `/proc/sys/vm/mem_profiling` and `/proc/sys/vm/mem_profiling_compressed`
//! and the handler of the first, a shim that asks [`super::control`] what a
//! write may do and parses the value with the kernel's
//! `proc_dointvec_minmax()`.

use super::control;
use crate::ffi::{c_char, c_int, c_void};
use crate::{bindings, c_str, pr_err, types::Opaque};
use core::sync::atomic::{AtomicI32, Ordering};

/// `0` and `1`, the bounds of a `vm.mem_profiling` write.
static ZERO_ONE: [c_int; 2] = [0, 1];

/// The `vm.mem_profiling` handler: `proc_do_static_key()`'s checks and
/// parsing, the checks being [`control::sysctl_may_write`]'s.
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
        let has_mm = !unsafe { (*bindings::get_current()).mm }.is_null();
        // SAFETY: `capable()` may be called from any process context.
        let capable = || unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) };
        match control::sysctl_may_write(has_mm, capable) {
            Ok(true) => {}
            Ok(false) => return 0,
            Err(e) => return e.to_errno(),
        }
    }
    let mut val = c_int::from(control::sysctl_value());
    // SAFETY: `table` is the valid entry the sysctl core passed.
    let (procname, mode) = unsafe { ((*table).procname, (*table).mode) };
    let tmp = bindings::ctl_table {
        procname,
        data: core::ptr::addr_of_mut!(val).cast::<c_void>(),
        maxlen: core::mem::size_of::<c_int>() as c_int,
        mode,
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
        control::sysctl_written(val != 0);
    }
    ret
}

/// The value `/proc/sys/vm/mem_profiling_compressed` shows, set at init
/// before the table is registered and never changed after.
static COMPRESSED_SYSCTL: AtomicI32 = AtomicI32::new(0);

/// The `vm` sysctl table: `mem_profiling` and `mem_profiling_compressed`.
#[repr(transparent)]
struct SysctlTable(Opaque<[bindings::ctl_table; 2]>);

// SAFETY: written only by `init()` (the data pointer), before the table is
// registered and so before anything else reads it.
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
        // Set to `COMPRESSED_SYSCTL` by `init()`.
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
pub(crate) fn init(compressed: bool) {
    let shown = control::compressed_sysctl_value(compressed);
    COMPRESSED_SYSCTL.store(c_int::from(shown), Ordering::Relaxed);
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
