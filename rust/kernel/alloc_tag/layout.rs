// SPDX-License-Identifier: GPL-2.0

//! Checks that Rust's view of the C structures the core uses matches C's.
//!
//! bindgen can get a layout wrong without any build error (it has dropped
//! the alignment of an empty, cache-aligned struct before). The core reads
//! `struct alloc_tag` on every allocation and builds `seq_operations`,
//! `ctl_table`, `page_ext_operations` and a static key for C to use, so each
//! size and offset it relies on is compared with what the C compiler says.

use crate::bindings;
use core::mem::{offset_of, size_of};

/// Rust's value of each item of `rust_helper_alloc_tag_c_layout()`, in its
/// order.
fn rust_layout() -> [(&'static str, usize); 22] {
    use bindings::*;
    [
        ("sizeof(struct codetag)", size_of::<codetag>()),
        ("offsetof(codetag, lineno)", offset_of!(codetag, lineno)),
        ("offsetof(codetag, modname)", offset_of!(codetag, modname)),
        ("offsetof(codetag, function)", offset_of!(codetag, function)),
        ("offsetof(codetag, filename)", offset_of!(codetag, filename)),
        ("sizeof(struct alloc_tag)", size_of::<alloc_tag>()),
        (
            "offsetof(alloc_tag, counters)",
            offset_of!(alloc_tag, counters),
        ),
        (
            "sizeof(struct alloc_tag_counters)",
            size_of::<alloc_tag_counters>(),
        ),
        (
            "offsetof(alloc_tag_counters, calls)",
            offset_of!(alloc_tag_counters, calls),
        ),
        ("sizeof(union codetag_ref)", size_of::<codetag_ref>()),
        ("sizeof(struct codetag_bytes)", size_of::<codetag_bytes>()),
        #[cfg(CONFIG_PAGE_EXTENSION)]
        (
            "sizeof(struct page_ext_operations)",
            size_of::<page_ext_operations>(),
        ),
        #[cfg(CONFIG_PAGE_EXTENSION)]
        (
            "offsetof(page_ext_operations, need)",
            offset_of!(page_ext_operations, need),
        ),
        #[cfg(CONFIG_PAGE_EXTENSION)]
        (
            "offsetof(page_ext_operations, need_shared_flags)",
            offset_of!(page_ext_operations, need_shared_flags),
        ),
        // Not built: C reports 0 for the three page_ext items.
        #[cfg(not(CONFIG_PAGE_EXTENSION))]
        ("page_ext_operations (not built)", 0),
        #[cfg(not(CONFIG_PAGE_EXTENSION))]
        ("page_ext_operations (not built)", 0),
        #[cfg(not(CONFIG_PAGE_EXTENSION))]
        ("page_ext_operations (not built)", 0),
        ("offsetof(seq_file, index)", offset_of!(seq_file, index)),
        ("offsetof(seq_file, private)", offset_of!(seq_file, private)),
        ("sizeof(struct seq_operations)", size_of::<seq_operations>()),
        ("sizeof(struct ctl_table)", size_of::<ctl_table>()),
        ("offsetof(ctl_table, mode)", offset_of!(ctl_table, mode)),
        (
            "offsetof(ctl_table, proc_handler)",
            offset_of!(ctl_table, proc_handler),
        ),
        ("sizeof(struct static_key)", size_of::<static_key>()),
        // The early_param() entry is emitted in assembly (control.rs) as
        // two pointers and an int, padded to 8.
        ("sizeof(struct obs_kernel_param)", 24),
    ]
}

/// Compares every item with C, logs each mismatch and returns their number.
///
/// # Examples
///
/// ```
/// assert_eq!(kernel::alloc_tag::layout::mismatches(), 0);
/// ```
pub fn mismatches() -> usize {
    let mut bad = 0;
    for (i, (what, rust)) in rust_layout().iter().enumerate() {
        // SAFETY: the helper only reads a constant table.
        let c = unsafe { bindings::alloc_tag_c_layout(i as u32) };
        if c != *rust {
            crate::pr_err!(
                "alloc_tag: layout mismatch: {} is {} in C, {} in Rust\n",
                what,
                c,
                rust
            );
            bad += 1;
        }
    }
    bad
}
