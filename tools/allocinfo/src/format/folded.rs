// SPDX-License-Identifier: GPL-2.0
//! Folded stacks (`frame;frame;frame value` lines) for flame graph tools such as flamegraph.pl,
//! inferno or speedscope: each site is the stack module;directory;file;function, valued in bytes.

use std::fmt::Write as _;

use crate::capture::{Frame, Report};
use crate::format::pprof::OTHER_STACKS;
use crate::profile::{Site, SiteTotals};

/// A frame name: `;` separates frames and a space separates the value, so both are replaced.
fn frame(name: &str) -> String {
    name.replace([';', ' '], "_")
}

/// The stack of one site, outermost frame first: `vmlinux;mm;slub.c;alloc_slab_page`.
pub fn stack(site: &Site) -> String {
    let (dir, file) = site.file.rsplit_once('/').unwrap_or((".", &site.file));
    format!(
        "{};{};{};{}",
        frame(site.module_or_vmlinux()),
        frame(dir),
        frame(file),
        frame(&site.function)
    )
}

/// One line per site holding more than 0 bytes (flame graphs cannot draw negative widths).
/// Sites with the same stack (one function allocating on several lines) are summed.
pub fn render(sites: &[(&Site, SiteTotals)]) -> String {
    let mut stacks: std::collections::BTreeMap<String, i128> = Default::default();
    for (site, t) in sites.iter().filter(|(_, t)| t.bytes > 0) {
        *stacks.entry(stack(site)).or_default() += t.bytes;
    }
    let mut out = String::with_capacity(64 * stacks.len());
    for (stack, bytes) in stacks {
        let _ = writeln!(out, "{stack} {bytes}");
    }
    out
}

/// A captured frame: its function, with ` [module]` for module code as the kernel prints it.
fn capture_frame(f: &Frame) -> String {
    match &f.module {
        Some(m) => format!("{} [{}]", frame(&f.function), frame(m)),
        None => frame(&f.function),
    }
}

/// A context-capture report: one line per captured stack holding more than 0 bytes, its
/// functions outermost first (`entry_SYSCALL_64;...;slab_alloc_node 4096`); a site's `other`
/// bucket is `[other stacks];<site function>`. Lines with the same functions are summed.
pub fn render_capture(report: &Report) -> String {
    let mut stacks: std::collections::BTreeMap<String, i128> = Default::default();
    for site in &report.sites {
        for stack in site.stacks.iter().filter(|s| s.bytes > 0) {
            let names: Vec<String> = stack.frames.iter().rev().map(capture_frame).collect();
            *stacks.entry(names.join(";")).or_default() += i128::from(stack.bytes);
        }
        if let Some(o) = site.other.as_ref().filter(|o| o.bytes > 0) {
            let s = &site.site;
            let own = match &s.module {
                Some(m) => format!("{} [{}]", frame(&s.function), frame(m)),
                None => frame(&s.function),
            };
            *stacks.entry(format!("{OTHER_STACKS};{own}")).or_default() += i128::from(o.bytes);
        }
    }
    let mut out = String::with_capacity(256 * stacks.len());
    for (stack, bytes) in stacks {
        let _ = writeln!(out, "{stack} {bytes}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(file: &str, line: u32, module: Option<&str>, function: &str) -> Site {
        Site {
            file: file.into(),
            line,
            module: module.map(Into::into),
            function: function.into(),
        }
    }

    #[test]
    fn capture_stacks_outermost_first() {
        let r = crate::cmd::capture::testdata::report();
        assert_eq!(
            render_capture(&r),
            "[other stacks];wrap [tmod] 64\n\
             caller0 [tmod];wrap [tmod];slab_alloc_node 192\n\
             vfs_write;caller1 [tmod];wrap [tmod];slab_alloc_node 256\n"
        );
    }

    #[test]
    fn stacks_and_sums() {
        let t = |bytes| SiteTotals {
            bytes,
            ..SiteTotals::default()
        };
        let (a, b) = (
            site("fs/ext4/super.c", 1, Some("ext4"), "fill"),
            site("fs/ext4/super.c", 9, Some("ext4"), "fill"),
        );
        let (c, d) = (
            site("top.c", 1, None, "f;g"),
            site("mm/x.c", 1, None, "neg"),
        );
        assert_eq!(
            render(&[(&a, t(4096)), (&b, t(1)), (&c, t(2)), (&d, t(-8))]),
            "ext4;fs/ext4;super.c;fill 4097\nvmlinux;.;top.c;f_g 2\n"
        );
    }
}
