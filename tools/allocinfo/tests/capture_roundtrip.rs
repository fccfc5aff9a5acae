// SPDX-License-Identifier: GPL-2.0
//! Property tests of the context-capture report parser: random reports printed the way the
//! kernel prints them parse back unchanged, and damaged ones fail on a line, never panic.

use allocinfo::capture::{parse_report, CaptureSite, Frame, Report, ReportParser, Stack};
use allocinfo::profile::Site;
use proptest::prelude::*;

fn frame() -> impl Strategy<Value = Frame> {
    let symbol = (
        "[A-Za-z_][A-Za-z0-9_.]{0,20}",
        any::<u32>(),
        any::<u32>(),
        proptest::option::of("[a-z0-9_]{1,12}"),
    )
        .prop_map(|(function, off, size, module)| {
            let text = match &module {
                Some(m) => format!("{function}+{off:#x}/{size:#x} [{m}]"),
                None => format!("{function}+{off:#x}/{size:#x}"),
            };
            Frame {
                text,
                function,
                offset: Some(u64::from(off)),
                size: Some(u64::from(size)),
                module,
            }
        });
    let bare = any::<u64>().prop_map(|a| {
        let text = format!("{a:#x}");
        Frame {
            text: text.clone(),
            function: text,
            offset: None,
            size: None,
            module: None,
        }
    });
    prop_oneof![4 => symbol, 1 => bare]
}

fn stack() -> impl Strategy<Value = Stack> {
    (
        0..1i64 << 40,
        0..1i64 << 20,
        proptest::collection::vec(frame(), 1..17),
    )
        .prop_map(|(bytes, calls, frames)| Stack {
            bytes,
            calls,
            frames,
        })
}

fn site() -> impl Strategy<Value = CaptureSite> {
    (
        "[a-zA-Z0-9_.:-]{1,12}(/[a-zA-Z0-9_.-]{1,10}){0,3}",
        any::<u32>(),
        proptest::option::of("[a-z0-9_]{1,16}"),
        "[A-Za-z_][A-Za-z0-9_.]{0,24}",
        (any::<i64>(), any::<u64>(), any::<u64>()),
        proptest::collection::vec(stack(), 0..5),
        proptest::option::of((0..1i64 << 30, 0..1i64 << 10)),
    )
        .prop_map(
            |(file, line, module, function, (bytes, calls, uncaptured), stacks, other)| {
                let other = other.map(|(bytes, calls)| Stack {
                    bytes,
                    calls,
                    frames: Vec::new(),
                });
                let captured = stacks.iter().chain(other.as_ref()).map(|s| s.calls).sum();
                CaptureSite {
                    site: Site {
                        file,
                        line,
                        module,
                        function,
                    },
                    bytes,
                    calls,
                    captured,
                    uncaptured,
                    stacks,
                    other,
                    line_no: 0,
                }
            },
        )
}

fn report() -> impl Strategy<Value = Report> {
    (
        proptest::collection::vec(site(), 0..4),
        any::<u16>(),
        any::<u32>(),
    )
        .prop_map(|(sites, records, max_records)| Report {
            armed: sites.len(),
            max_sites: 8,
            records: usize::from(records),
            max_records: max_records as usize,
            sites,
        })
}

/// The report as the kernel prints it; sets each site's line number.
fn text(r: &mut Report) -> String {
    let mut out = format!(
        "# allocinfo capture 1.0: {} of {} sites armed, {} of {} records live\n",
        r.armed, r.max_sites, r.records, r.max_records
    );
    let mut line = 1;
    for s in &mut r.sites {
        line += 1;
        s.line_no = line;
        out.push_str(&format!(
            "site {}:{} func:{}",
            s.site.file, s.site.line, s.site.function
        ));
        if let Some(m) = &s.site.module {
            out.push_str(&format!(" module:{m}"));
        }
        out.push_str(&format!(
            " bytes:{} calls:{} captured:{} uncaptured:{} stacks:{}\n",
            s.bytes,
            s.calls,
            s.captured,
            s.uncaptured,
            s.stacks.len()
        ));
        for st in &s.stacks {
            out.push_str(&format!("  stack bytes:{} calls:{}\n", st.bytes, st.calls));
            line += 1;
            for f in &st.frames {
                out.push_str(&format!("    {}\n", f.text));
                line += 1;
            }
        }
        if let Some(o) = &s.other {
            out.push_str(&format!("  other bytes:{} calls:{}\n", o.bytes, o.calls));
            line += 1;
        }
    }
    out
}

proptest! {
    #[test]
    fn printed_reports_parse_back(mut r in report()) {
        let t = text(&mut r);
        prop_assert_eq!(parse_report(&t), Ok(r));
    }

    /// One line dropped or cut short: refused on a line of the input (or just past it), or, when
    /// what is left is still a consistent report, read; never a panic.
    #[test]
    fn damaged_reports_fail_on_a_line(mut r in report(), pick in any::<usize>(), cut in any::<usize>()) {
        let t = text(&mut r);
        let lines: Vec<&str> = t.lines().collect();
        let i = pick % lines.len();
        for damaged in [
            lines.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, l)| *l).collect::<Vec<_>>(),
            lines.iter().enumerate().map(|(j, l)| if j == i { &l[..cut % (l.len() + 1)] } else { l }).collect(),
        ] {
            let input = damaged.join("\n");
            if let Err(e) = parse_report(&input) {
                prop_assert!(e.line >= 1 && e.line <= damaged.len() + 1, "{e}");
            }
        }
    }

    #[test]
    fn junk_after_the_header_never_panics(junk in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut p = ReportParser::new(false);
        let _ = p.feed("# allocinfo capture 1.0: 1 of 8 sites armed, 0 of 16384 records live");
        for line in junk.split(|&b| b == b'\n') {
            if p.feed_bytes(line).is_err() {
                return Ok(());
            }
        }
        let _ = p.finish();
    }
}
