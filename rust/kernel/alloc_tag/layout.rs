// SPDX-License-Identifier: GPL-2.0

//! Compile-time checks that Rust's view of the C structures the core uses
//! matches C's.
//!
//! bindgen can get a layout wrong without any build error (it has dropped
//! the alignment of an empty, cache-aligned struct before). The core reads
//! `struct alloc_tag` on every allocation and builds `seq_operations`,
//! `ctl_table` and `page_ext_operations` for C to use, so each size and
//! offset it relies on is compared with what the C compiler says: the
//! `ALLOC_TAG_C_*` constants, which `bindings_helper.h` takes from `sizeof`
//! and `offsetof`. A mismatch fails the build.

use crate::bindings::*;
use crate::static_assert;
use core::mem::{offset_of, size_of};

static_assert!(size_of::<codetag>() == ALLOC_TAG_C_SIZEOF_CODETAG);
static_assert!(offset_of!(codetag, lineno) == ALLOC_TAG_C_OFFSETOF_CODETAG_LINENO);
static_assert!(offset_of!(codetag, modname) == ALLOC_TAG_C_OFFSETOF_CODETAG_MODNAME);
static_assert!(offset_of!(codetag, function) == ALLOC_TAG_C_OFFSETOF_CODETAG_FUNCTION);
static_assert!(offset_of!(codetag, filename) == ALLOC_TAG_C_OFFSETOF_CODETAG_FILENAME);
static_assert!(size_of::<alloc_tag>() == ALLOC_TAG_C_SIZEOF_ALLOC_TAG);
static_assert!(offset_of!(alloc_tag, counters) == ALLOC_TAG_C_OFFSETOF_ALLOC_TAG_COUNTERS);
static_assert!(size_of::<alloc_tag_counters>() == ALLOC_TAG_C_SIZEOF_ALLOC_TAG_COUNTERS);
static_assert!(
    offset_of!(alloc_tag_counters, calls) == ALLOC_TAG_C_OFFSETOF_ALLOC_TAG_COUNTERS_CALLS
);
static_assert!(size_of::<codetag_ref>() == ALLOC_TAG_C_SIZEOF_CODETAG_REF);
static_assert!(size_of::<codetag_bytes>() == ALLOC_TAG_C_SIZEOF_CODETAG_BYTES);
static_assert!(offset_of!(seq_file, index) == ALLOC_TAG_C_OFFSETOF_SEQ_FILE_INDEX);
static_assert!(offset_of!(seq_file, private) == ALLOC_TAG_C_OFFSETOF_SEQ_FILE_PRIVATE);
static_assert!(size_of::<seq_operations>() == ALLOC_TAG_C_SIZEOF_SEQ_OPERATIONS);
static_assert!(size_of::<ctl_table>() == ALLOC_TAG_C_SIZEOF_CTL_TABLE);
static_assert!(offset_of!(ctl_table, mode) == ALLOC_TAG_C_OFFSETOF_CTL_TABLE_MODE);
static_assert!(offset_of!(ctl_table, proc_handler) == ALLOC_TAG_C_OFFSETOF_CTL_TABLE_PROC_HANDLER);
#[cfg(CONFIG_PAGE_EXTENSION)]
static_assert!(size_of::<page_ext_operations>() == ALLOC_TAG_C_SIZEOF_PAGE_EXT_OPERATIONS);
#[cfg(CONFIG_PAGE_EXTENSION)]
static_assert!(
    offset_of!(page_ext_operations, need) == ALLOC_TAG_C_OFFSETOF_PAGE_EXT_OPERATIONS_NEED
);
#[cfg(CONFIG_PAGE_EXTENSION)]
static_assert!(
    offset_of!(page_ext_operations, need_shared_flags)
        == ALLOC_TAG_C_OFFSETOF_PAGE_EXT_OPERATIONS_NEED_SHARED_FLAGS
);
