// SPDX-License-Identifier: GPL-2.0

//! Without `CONFIG_MEM_ALLOC_PROFILING_CAPTURE`: what the core asks of
//! capture, answered for a kernel in which no site is ever armed and no
//! reference holds a record ([`TagRef::holds_record`] is false, so the calls
//! below fold away).
//!
//! [`TagRef::holds_record`]: super::tag_ref::TagRef::holds_record

/// Arming, disarming and the report: nothing to set up or to drop.
pub(super) mod capture {
    use crate::alloc_tag::hook_module::HookModule;

    #[inline(always)]
    pub(crate) fn init() {}

    #[inline(always)]
    pub(crate) fn module_unload(_module: HookModule<'_>) {}
}

/// The record path: no locks, no records.
pub(super) mod record {
    use crate::alloc_tag::{tag::AllocTag, tag_ref::TagRef};

    #[inline(always)]
    pub(crate) fn init_locks() {}

    /// Never called: no reference holds a record.
    #[inline(always)]
    pub(crate) fn record_tag(r: &TagRef) -> Option<&'static AllocTag> {
        r.tag()
    }

    /// Never called: no reference holds a record.
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_PAGE_EXT)]
    #[inline(always)]
    pub(crate) fn release(_r: &TagRef) {}
}
