// SPDX-License-Identifier: GPL-2.0

//! The kernel crate's `alloc_tag` module, reduced to the parsers, which are
//! compiled from the patched kernel tree (see `build.rs`).

include!(concat!(env!("OUT_DIR"), "/alloc_tag_mods.rs"));
