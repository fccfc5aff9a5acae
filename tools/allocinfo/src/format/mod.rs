// SPDX-License-Identifier: GPL-2.0
//! Output formats read by other tools: Prometheus and OpenMetrics text, CSV, folded stacks and
//! pprof's profile.proto, and the selection of sites they write.

pub mod csv;
pub mod exposition;
pub mod folded;
pub mod pprof;
pub mod select;
