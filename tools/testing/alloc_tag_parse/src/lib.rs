// SPDX-License-Identifier: GPL-2.0

//! The profiler's input parsers, `rust/kernel/alloc_tag/parse.rs`, built
//! unchanged on the host.
//!
//! The files are compiled from where they are in the repository, not
//! copied, and sit at `kernel::alloc_tag::parse` as in the kernel crate, so that its
//! doctests run here too. The tests are in `tests/`.

pub mod alloc_tag;
