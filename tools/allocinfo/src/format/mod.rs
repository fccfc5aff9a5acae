// SPDX-License-Identifier: GPL-2.0
//! Output formats read by other tools: CSV, folded stacks and pprof's profile.proto.

pub mod csv;
pub mod folded;
pub mod pprof;
