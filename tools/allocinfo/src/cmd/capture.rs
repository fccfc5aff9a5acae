// SPDX-License-Identifier: GPL-2.0
//! `allocinfo capture`: arm and disarm call sites for context capture, show the report, export
//! its stacks.
//!
//! The kernel takes one command per write() to /sys/kernel/debug/allocinfo_capture and answers
//! with the write's errno; reading the file gives the report that [`crate::capture`] parses.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use crate::capture::{self, CaptureSite, Frame, Report, ReportParser, Stack, CAPTURE_FILE};
use crate::cli::{
    CaptureArmArgs, CaptureDisarmArgs, CaptureExportArgs, CaptureFormat, CaptureShowArgs,
};
use crate::cmd::{count, output_error, show_size, write_data, write_json};
use crate::error::{Error, Result};
use crate::format::{folded, pprof};
use crate::parse::quote;
use crate::source::{read_lines, ReadError, MAX_INPUT};

/// Why the kernel refused `command`, from the write's errno, in words.
pub fn refusal(command: &str, arm: bool, errno: i32) -> String {
    let why = match errno {
        libc::EINVAL => "refused as malformed (an unknown verb, an empty FILE, function: or \
                         module:, a LINE that is not a number, extra words)"
            .to_string(),
        libc::ENOENT if arm => "no allocation site matches (FILE, LINE and NAME are spelt as in \
                                /proc/allocinfo; function:NAME is the func: of a row)"
            .to_string(),
        libc::ENOENT => "no armed site matches".to_string(),
        libc::ENOSPC => {
            "the kernel's cap of armed sites (8) would be passed: disarm some first".to_string()
        }
        libc::ENOMEM => "no memory for the sites' state or the first records".to_string(),
        libc::ENODEV => "allocation profiling is not running in this kernel".to_string(),
        libc::EPERM | libc::EACCES => "not permitted (root only)".to_string(),
        _ => io::Error::from_raw_os_error(errno).to_string(),
    };
    let name = errno_name(errno).map_or(String::new(), |n| format!(" ({n})"));
    // Arming is all or nothing: a refused arm armed none of the sites its spec matched.
    let none = if arm && matches!(errno, libc::ENOSPC | libc::ENOMEM) {
        "; none of its sites was armed"
    } else {
        ""
    };
    format!("{}: {why}{name}{none}", quote(command))
}

fn errno_name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EINVAL => "EINVAL",
        libc::ENOENT => "ENOENT",
        libc::ENOSPC => "ENOSPC",
        libc::ENOMEM => "ENOMEM",
        libc::ENODEV => "ENODEV",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        _ => return None,
    })
}

/// The hint for a capture file that cannot be opened.
fn open_hint(path: &Path, e: &io::Error) -> &'static str {
    if path != Path::new(CAPTURE_FILE) {
        return "";
    }
    if e.raw_os_error() == Some(libc::ENODEV) {
        return " (allocation profiling is not running in this kernel)";
    }
    match e.kind() {
        io::ErrorKind::NotFound => {
            " (is debugfs mounted on /sys/kernel/debug, and the kernel built with \
             CONFIG_MEM_ALLOC_PROFILING_CAPTURE?)"
        }
        io::ErrorKind::PermissionDenied => " (it is root only)",
        _ => "",
    }
}

#[derive(Serialize)]
struct ControlJson<'a> {
    file: String,
    /// The commands written, without their line ends.
    written: &'a [String],
}

/// Writes each command (`arm SPEC`) with its own write(), in order, stopping at the first the
/// kernel refuses. Each is followed by a line end, which the kernel drops.
pub fn control(
    path: &Path,
    commands: &[String],
    arm: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    for c in commands {
        if c.len() + 1 > capture::MAX_COMMAND {
            return Err(Error::Usage(format!(
                "command {} is longer than the {} bytes the kernel takes",
                quote(c),
                capture::MAX_COMMAND
            )));
        }
    }
    // Not created, not truncated: the kernel's file exists or capture is not there.
    let mut file = OpenOptions::new().write(true).open(path).map_err(|e| {
        let hint = open_hint(path, &e);
        Error::io(format!("cannot open {}{hint}", path.display()), e)
    })?;
    for (i, c) in commands.iter().enumerate() {
        let line = format!("{c}\n");
        let result = loop {
            match file.write(line.as_bytes()) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let failed = match result {
            Ok(n) if n == line.len() => None,
            Ok(n) => Some(format!(
                "{}: only {n} of {} bytes written",
                quote(c),
                line.len()
            )),
            Err(e) => Some(match e.raw_os_error() {
                Some(errno) => refusal(c, arm, errno),
                None => format!("{}: {e}", quote(c)),
            }),
        };
        if let Some(why) = failed {
            let mut msg = format!("{}: {why}", path.display());
            if i > 0 {
                let done: Vec<String> = commands[..i].iter().map(|c| quote(c)).collect();
                msg.push_str(&format!("; done before it: {}", done.join(", ")));
            }
            if i + 1 < commands.len() {
                let left: Vec<String> = commands[i + 1..].iter().map(|c| quote(c)).collect();
                msg.push_str(&format!("; not tried: {}", left.join(", ")));
            }
            return Err(Error::Refused(msg));
        }
        if !json {
            writeln!(out, "{c}").map_err(output_error)?;
        }
    }
    if json {
        write_json(
            out,
            &ControlJson {
                file: path.display().to_string(),
                written: commands,
            },
        )?;
    }
    Ok(())
}

/// `capture arm`.
pub fn arm(args: &CaptureArmArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let specs = capture::parse_specs(&args.specs, args.module.as_deref()).map_err(Error::Usage)?;
    let commands: Vec<String> = specs.iter().map(|s| format!("arm {s}")).collect();
    control(&args.file.file, &commands, true, json, out)
}

/// `capture disarm`.
pub fn disarm(args: &CaptureDisarmArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let commands: Vec<String> = if args.all {
        vec!["disarm all".to_string()]
    } else {
        capture::parse_specs(&args.specs, args.module.as_deref())
            .map_err(Error::Usage)?
            .iter()
            .map(|s| format!("disarm {s}"))
            .collect()
    };
    control(&args.file.file, &commands, false, json, out)
}

/// Reads and parses a report: `input`, `-` for standard input, or the kernel's file.
pub fn read_report(input: Option<&Path>, lenient: bool) -> Result<(Report, String)> {
    let path = input.unwrap_or(Path::new(CAPTURE_FILE));
    let stdin = path.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let mut parser = ReportParser::new(lenient);
    let result = if stdin {
        read_lines(io::stdin().lock(), MAX_INPUT, |l| parser.feed_bytes(l))
    } else {
        File::open(path)
            .map_err(ReadError::Io)
            .and_then(|f| read_lines(f, MAX_INPUT, |l| parser.feed_bytes(l)))
    };
    let parsed = result.and_then(|()| parser.finish().map_err(ReadError::Parse));
    let report = parsed.map_err(|e| match e {
        ReadError::Io(e) => {
            let hint = open_hint(path, &e);
            Error::io(format!("cannot read {name}{hint}"), e)
        }
        ReadError::Parse(source) => Error::Parse {
            path: name.clone(),
            source,
        },
        ReadError::TooLarge(limit) => Error::Refused(format!(
            "{name}: more than {} MiB of input, far more than any capture report",
            limit >> 20
        )),
    })?;
    Ok((report, name))
}

/// A site's stacks, largest first (bytes, then calls; the kernel's order among equals).
pub fn ranked(site: &CaptureSite) -> Vec<&Stack> {
    let mut stacks: Vec<&Stack> = site.stacks.iter().collect();
    stacks.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.calls.cmp(&a.calls)));
    stacks
}

#[derive(Serialize)]
struct ShowJson<'a> {
    version: &'static str,
    source: &'a str,
    armed: usize,
    max_sites: usize,
    records: usize,
    max_records: usize,
    sites: Vec<SiteJson<'a>>,
}

#[derive(Serialize)]
struct SiteJson<'a> {
    file: &'a str,
    line: u32,
    module: Option<&'a str>,
    function: &'a str,
    /// The site's row: every live allocation, made before arming or not.
    bytes: i64,
    calls: i64,
    calls_wrapped: bool,
    captured: i64,
    captured_bytes: i128,
    uncaptured: u64,
    /// Stacks the kernel reported for the site; `stacks` holds the first -n of them.
    stacks_total: usize,
    stacks: Vec<StackJson<'a>>,
    other: Option<BucketJson>,
}

#[derive(Serialize)]
struct StackJson<'a> {
    bytes: i64,
    calls: i64,
    frames: &'a [Frame],
}

#[derive(Serialize)]
struct BucketJson {
    bytes: i64,
    calls: i64,
}

fn calls_word(n: i128) -> &'static str {
    if n == 1 {
        "call"
    } else {
        "calls"
    }
}

/// Prints the report as text: per site its totals, then its stacks largest first.
pub fn write_show(
    report: &Report,
    source: &str,
    args: &CaptureShowArgs,
    out: &mut dyn Write,
) -> io::Result<()> {
    let plain = args.bytes;
    writeln!(
        out,
        "{source}: {} of {} sites armed, {} of {} records live",
        report.armed, report.max_sites, report.records, report.max_records
    )?;
    for site in &report.sites {
        writeln!(out)?;
        writeln!(out, "site {}", site.site.tag_text())?;
        let calls = site.live_calls();
        writeln!(
            out,
            "  total:    {} in {} live {}{}",
            show_size(i128::from(site.bytes), plain),
            calls,
            if calls == 1 {
                "allocation"
            } else {
                "allocations"
            },
            if calls < 0 { " (calls wrapped)" } else { "" }
        )?;
        writeln!(
            out,
            "  captured: {} in {} {} ({}); {} since arming got no record",
            show_size(site.captured_bytes(), plain),
            site.captured,
            calls_word(i128::from(site.captured)),
            count(site.stacks.len(), "stack"),
            site.uncaptured
        )?;
        let stacks = ranked(site);
        let shown = if args.lines == 0 {
            stacks.len()
        } else {
            args.lines.min(stacks.len())
        };
        for (i, stack) in stacks[..shown].iter().enumerate() {
            writeln!(
                out,
                "  stack {} of {}: {} in {} {}",
                i + 1,
                stacks.len(),
                show_size(i128::from(stack.bytes), plain),
                stack.calls,
                calls_word(i128::from(stack.calls))
            )?;
            for f in &stack.frames {
                writeln!(out, "      {}", f.text)?;
            }
        }
        if shown < stacks.len() {
            let rest = &stacks[shown..];
            let bytes: i128 = rest.iter().map(|s| i128::from(s.bytes)).sum();
            let calls: i128 = rest.iter().map(|s| i128::from(s.calls)).sum();
            writeln!(
                out,
                "  ({} more: {} in {calls} {}; -n 0 shows all)",
                count(rest.len(), "stack"),
                show_size(bytes, plain),
                calls_word(calls)
            )?;
        }
        if let Some(o) = site.other.as_ref().filter(|o| o.bytes != 0 || o.calls != 0) {
            writeln!(
                out,
                "  other stacks (past the kernel's per-site cap, or none taken): {} in {} {}",
                show_size(i128::from(o.bytes), plain),
                o.calls,
                calls_word(i128::from(o.calls))
            )?;
        }
    }
    Ok(())
}

/// `capture show`.
pub fn show(
    report: &Report,
    source: &str,
    args: &CaptureShowArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    if !json {
        return write_show(report, source, args, out).map_err(output_error);
    }
    let sites = report
        .sites
        .iter()
        .map(|site| {
            let mut stacks = ranked(site);
            let total = stacks.len();
            if args.lines > 0 {
                stacks.truncate(args.lines);
            }
            SiteJson {
                file: &site.site.file,
                line: site.site.line,
                module: site.site.module.as_deref(),
                function: &site.site.function,
                bytes: site.bytes,
                calls: site.live_calls(),
                calls_wrapped: site.live_calls() < 0,
                captured: site.captured,
                captured_bytes: site.captured_bytes(),
                uncaptured: site.uncaptured,
                stacks_total: total,
                stacks: stacks
                    .into_iter()
                    .map(|s| StackJson {
                        bytes: s.bytes,
                        calls: s.calls,
                        frames: &s.frames,
                    })
                    .collect(),
                other: site.other.as_ref().map(|o| BucketJson {
                    bytes: o.bytes,
                    calls: o.calls,
                }),
            }
        })
        .collect();
    write_json(
        out,
        &ShowJson {
            version: "1.0",
            source,
            armed: report.armed,
            max_sites: report.max_sites,
            records: report.records,
            max_records: report.max_records,
            sites,
        },
    )
}

/// The usage checks of `capture export`, made before its input is read.
pub fn check_export(json: bool) -> Result<()> {
    if json {
        return Err(Error::Usage(
            "--json does not apply to capture export (capture show --json prints the report as \
             JSON)"
                .into(),
        ));
    }
    Ok(())
}

/// `capture export`. `now_ms` stamps the pprof profile (the report carries no time).
pub fn export(
    report: &Report,
    source: &str,
    now_ms: i64,
    args: &CaptureExportArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    check_export(json)?;
    let data = match args.format {
        CaptureFormat::Pprof => {
            let comment = format!(
                "allocinfo capture 1.0 from {source}: {} of {} sites armed, {} of {} records live",
                report.armed, report.max_sites, report.records, report.max_records
            );
            pprof::render_capture(report, now_ms, &comment)
        }
        CaptureFormat::Folded => folded::render_capture(report).into_bytes(),
    };
    write_data(args.output.as_deref(), &data, out)
}

#[cfg(test)]
pub mod testdata {
    //! A report for the command and encoder tests.

    /// Two sites: one with two stacks and an `other` bucket, one built-in without stacks.
    pub const REPORT: &str = "\
# allocinfo capture 1.0: 2 of 8 sites armed, 6 of 16384 records live
site lib/t.c:270 func:wrap module:tmod bytes:512 calls:6 captured:6 uncaptured:1 stacks:2
  stack bytes:192 calls:3
    slab_alloc_node+0x7f/0xe0
    wrap+0x4c/0x60 [tmod]
    caller0+0xe/0x10 [tmod]
  stack bytes:256 calls:2
    slab_alloc_node+0x7f/0xe0
    wrap+0x4c/0x60 [tmod]
    caller1+0xe/0x10 [tmod]
    vfs_write+0xd6/0x1f0
  other bytes:64 calls:1
site mm/util.c:650 func:kvmalloc_node bytes:4096 calls:1 captured:0 uncaptured:0 stacks:0
";

    /// [`REPORT`] parsed.
    pub fn report() -> crate::capture::Report {
        match crate::capture::parse_report(REPORT) {
            Ok(r) => r,
            Err(e) => panic!("bad test data: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testdata::report;
    use super::*;
    use crate::cmd::testdata::capture as output;

    fn show_args(lines: usize, bytes: bool) -> CaptureShowArgs {
        CaptureShowArgs {
            input: None,
            lines,
            bytes,
        }
    }

    #[test]
    fn show_text() {
        let r = report();
        let text = output(|out| show(&r, "t", &show_args(10, false), false, out));
        assert_eq!(
            text,
            "t: 2 of 8 sites armed, 6 of 16384 records live\n\
             \n\
             site lib/t.c:270 [tmod] func:wrap\n\
             \x20 total:    512 B in 6 live allocations\n\
             \x20 captured: 512 B in 6 calls (2 stacks); 1 since arming got no record\n\
             \x20 stack 1 of 2: 256 B in 2 calls\n\
             \x20     slab_alloc_node+0x7f/0xe0\n\
             \x20     wrap+0x4c/0x60 [tmod]\n\
             \x20     caller1+0xe/0x10 [tmod]\n\
             \x20     vfs_write+0xd6/0x1f0\n\
             \x20 stack 2 of 2: 192 B in 3 calls\n\
             \x20     slab_alloc_node+0x7f/0xe0\n\
             \x20     wrap+0x4c/0x60 [tmod]\n\
             \x20     caller0+0xe/0x10 [tmod]\n\
             \x20 other stacks (past the kernel's per-site cap, or none taken): 64 B in 1 call\n\
             \n\
             site mm/util.c:650 func:kvmalloc_node\n\
             \x20 total:    4.0 KiB in 1 live allocation\n\
             \x20 captured: 0 B in 0 calls (0 stacks); 0 since arming got no record\n"
        );
        let text = output(|out| show(&r, "t", &show_args(1, true), false, out));
        assert!(text.contains("  stack 1 of 2: 256 in 2 calls\n"), "{text}");
        assert!(
            text.contains("  (1 stack more: 192 in 3 calls; -n 0 shows all)\n"),
            "{text}"
        );
        assert!(!text.contains("stack 2 of 2"), "{text}");
    }

    #[test]
    fn show_json() {
        let r = report();
        let json = output(|out| show(&r, "t", &show_args(1, false), true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["armed"], 2);
        let s = &v["sites"][0];
        assert_eq!(s["module"], "tmod");
        assert_eq!(s["captured_bytes"], 512);
        assert_eq!(s["stacks_total"], 2);
        assert_eq!(s["stacks"].as_array().map(Vec::len), Some(1));
        assert_eq!(s["stacks"][0]["bytes"], 256);
        assert_eq!(s["stacks"][0]["frames"][1]["function"], "wrap");
        assert_eq!(s["stacks"][0]["frames"][1]["offset"], 0x4c);
        assert_eq!(s["other"]["calls"], 1);
        assert_eq!(v["sites"][1]["module"], serde_json::Value::Null);
        assert_eq!(v["sites"][1]["other"], serde_json::Value::Null);
    }

    #[test]
    fn refusals_name_the_errno() {
        let m = refusal("arm a.c:1", true, libc::ENOENT);
        assert!(
            m.starts_with("'arm a.c:1': no allocation site matches"),
            "{m}"
        );
        assert!(m.ends_with("(ENOENT)"), "{m}");
        let m = refusal("arm function:f", true, libc::ENOSPC);
        assert!(m.contains("(ENOSPC); none of its sites was armed"), "{m}");
        assert!(!refusal("disarm a.c:1", false, libc::EINVAL).contains("none of its"));
        assert!(refusal("disarm a.c:1", false, libc::ENOENT).contains("no armed site matches"));
        assert!(refusal("arm a.c:1", true, libc::ENOSPC).contains("cap of armed sites"));
        assert!(refusal("arm a.c:1", true, libc::EINVAL).contains("malformed"));
        assert!(refusal("arm a.c:1", true, libc::ENOMEM).contains("(ENOMEM)"));
        assert!(refusal("arm a.c:1", true, libc::ENODEV).contains("not running"));
        let other = refusal("arm a.c:1", true, libc::EIO);
        assert!(
            other.contains("Input/output error") || other.contains("I/O"),
            "{other}"
        );
    }
}
