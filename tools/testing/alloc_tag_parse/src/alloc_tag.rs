// SPDX-License-Identifier: GPL-2.0

//! The kernel crate's `alloc_tag` module, reduced to the parsers.

#[path = "../../../../rust/kernel/alloc_tag/parse.rs"]
pub mod parse;

#[path = "../../../../rust/kernel/alloc_tag/demangle.rs"]
pub mod demangle;
