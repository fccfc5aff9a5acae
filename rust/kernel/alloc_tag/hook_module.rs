// SPDX-License-Identifier: GPL-2.0

//! Modules as the module loader's hooks see them: held by the loader (being
//! loaded, unloaded or freed after a failed load) for as long as the hook
//! runs. The C entry points make them from the pointers C passes; the
//! registry and the Rust sites keep only their identity ([`ModuleId`]),
//! never the pointer.

use crate::{bindings, str::CStr};
use core::{marker::PhantomData, ptr::NonNull};

/// A module the loader holds for `'a`.
///
/// # Invariants
///
/// `ptr` is a valid `struct module` that the loader does not free for `'a`,
/// and its `name` is a NUL-terminated string.
#[derive(Clone, Copy)]
pub(super) struct HookModule<'a> {
    ptr: NonNull<bindings::module>,
    _held: PhantomData<&'a bindings::module>,
}

/// Which module a segment or a Rust call site belongs to: the address of
/// its `struct module`, compared and hashed but never followed. Two modules
/// loaded at different times may have the same id; the registry and the
/// Rust sites forget a module's id at its unload, before its memory can be
/// reused.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct ModuleId(usize);

impl ModuleId {
    /// The id of no module: vmlinux, a block of Rust sites, a detached
    /// module.
    pub(super) const NONE: ModuleId = ModuleId(0);

    /// The id of the module at `module`, [`ModuleId::NONE`] for NULL.
    pub(super) fn of(module: *const bindings::module) -> ModuleId {
        ModuleId(module as usize)
    }

    /// The address, for a hash.
    pub(super) fn addr(self) -> usize {
        self.0
    }
}

impl<'a> HookModule<'a> {
    /// # Safety
    ///
    /// `ptr` is NULL or a module that satisfies the type invariants for `'a`.
    pub(super) unsafe fn from_nullable(ptr: *mut bindings::module) -> Option<Self> {
        // INVARIANT: the caller's promise.
        NonNull::new(ptr).map(|ptr| HookModule {
            ptr,
            _held: PhantomData,
        })
    }

    /// The module's name.
    pub(super) fn name(&self) -> &'a CStr {
        // SAFETY: `name` is a NUL-terminated array of a module the loader
        // holds for `'a` (invariant).
        unsafe { CStr::from_char_ptr((*self.ptr.as_ptr()).name.as_ptr()) }
    }

    /// The module's identity.
    pub(super) fn id(&self) -> ModuleId {
        ModuleId::of(self.ptr.as_ptr())
    }
}
