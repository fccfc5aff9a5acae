// SPDX-License-Identifier: GPL-2.0

//! What C tells of the code that asks for an allocation: the module holding
//! an address, the return addresses on the stack and their symbols; what
//! names a Rust call site.
//!
//! C: [`lib/alloc_tag_rust_sites.c`](srctree/lib/alloc_tag_rust_sites.c)
//! (`alloc_tag_stack()`, `alloc_tag_symbol()`),
//! [`rust/helpers/alloc_tag.c`](srctree/rust/helpers/alloc_tag.c)
//! (`alloc_tag_module_of()`).

use super::hook_module::ModuleId;
use super::sites_lock::SitesLock;
use crate::{bindings, ffi::c_ulong, str::CStr};

/// A loaded module, which stays loaded (and its name valid) for `'a`.
///
/// # Invariants
///
/// `self.0` is a live module that is not freed during `'a`.
pub(super) struct LiveModule<'a>(
    *mut bindings::module,
    core::marker::PhantomData<&'a SitesLock>,
);

impl<'a> LiveModule<'a> {
    /// Its identity.
    pub(super) fn id(&self) -> ModuleId {
        ModuleId::of(self.0)
    }

    /// Its name (`KBUILD_MODNAME`).
    pub(super) fn name(&self) -> &'a CStr {
        // SAFETY: a live module, not freed during `'a` (invariant), whose
        // `name` is a NUL-terminated array.
        unsafe { CStr::from_char_ptr((*self.0).name.as_ptr()) }
    }
}

/// The module whose memory holds `addr`, `None` for vmlinux (or memory of
/// no module), for as long as the sites lock is held: a module is freed
/// only after an RCU grace period, which cannot end while the lock keeps
/// preemption off (`__module_address()`'s rule).
pub(super) fn module_of<'a>(addr: usize, _irqs_off: &'a SitesLock) -> Option<LiveModule<'a>> {
    // SAFETY: preemption is off while the sites lock is held.
    let module = unsafe { bindings::alloc_tag_module_of(addr as c_ulong) };
    if module.is_null() {
        return None;
    }
    // INVARIANT: `__module_address()` found it live, and it is not freed
    // before preemption comes back on, after `'a`.
    Some(LiveModule(module, core::marker::PhantomData))
}

/// The return addresses on the stack, innermost first, in `frames`, from
/// the caller's own frame on: none without a reliable unwinder (the
/// guessing one) or `CONFIG_STACKTRACE`.
///
/// Inlined always, so that no frame of this module's is among them: the
/// caller looks through the Rust site lookup's frames by their module.
#[inline(always)]
pub(super) fn stack(frames: &mut [c_ulong]) -> &[c_ulong] {
    let size = u32::try_from(frames.len()).unwrap_or(u32::MAX);
    // SAFETY: `frames` has room for `size` entries.
    let n = unsafe { bindings::alloc_tag_stack(frames.as_mut_ptr(), size) } as usize;
    &frames[..n.min(frames.len())]
}

/// The name of the symbol holding `addr`, written in `buf`; `None` if
/// kallsyms knows none.
pub(super) fn symbol(
    addr: c_ulong,
    buf: &mut [u8; bindings::KSYM_NAME_LEN as usize],
) -> Option<&CStr> {
    // SAFETY: `buf` has the `KSYM_NAME_LEN` bytes the helper may write.
    let sym = unsafe { bindings::alloc_tag_symbol(addr, buf.as_mut_ptr().cast()) };
    if sym.is_null() {
        return None;
    }
    // SAFETY: a non-NULL result is the NUL-terminated name in `buf`, which
    // stays borrowed with the result.
    Some(unsafe { CStr::from_char_ptr(sym) })
}
