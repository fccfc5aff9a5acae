// SPDX-License-Identifier: GPL-2.0
//! `allocinfo export`: every site for other tools, streamed to the output: Prometheus text
//! (0.0.4) or OpenMetrics 1.0, CSV, folded stacks or pprof's profile.proto.
//!
//! The Prometheus series are labelled so that a site can be followed across kernel builds:
//! `function`, `file`, `module` (empty for built-in code) and the kernel `release`; the sites of
//! one function in one file and module are summed, unless `--line-label` makes the line a label
//! too. See [`crate::format::exposition`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::cli::{ExportArgs, ExportFormat};
use crate::cmd::write_stream;
use crate::error::{Error, Result};
use crate::format::exposition::{self, Exposition, TextFormat};
use crate::format::select::{Order, Selection};
use crate::format::{csv, folded, pprof};
use crate::nodes::NodeProfile;
use crate::profile::{Profile, SnapshotMeta, Version};
use crate::source::{input_limit, Source, PROC_ALLOCINFO, PROFILE_BYTES_PER_INPUT_BYTE};

/// Where the running kernel says its release (`uname -r`).
const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// One exposed series.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Sample {
    pub labels: BTreeMap<&'static str, String>,
    pub value: i128,
}

/// One metric family with its metadata.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Family {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub unit: Option<&'static str>,
    pub help: &'static str,
    pub samples: Vec<Sample>,
}

/// What the export reads: the selected rows, kept as they are read (names interned), with what
/// the formats need to know of the input.
pub struct Input {
    /// The version of a site profile; None for the nodes.
    version: Option<Version>,
    snapshot: Option<SnapshotMeta>,
    rows: Selection,
}

impl Input {
    /// Reads the sites of `source` as a stream, keeping the rows `args` select.
    pub fn read(source: &Source, args: &ExportArgs) -> Result<Input> {
        let filter = args.filter.to_filter(None);
        let mut rows = Selection::new(false, args.min_size);
        let limit = input_limit(PROFILE_BYTES_PER_INPUT_BYTE);
        let header = source.read_rows(limit, &mut |row| {
            if filter.matches_tag(&row.tag) {
                rows.push(&row, 0);
            }
        })?;
        Ok(Input {
            version: Some(header.version),
            snapshot: header.snapshot,
            rows,
        })
    }

    /// The rows of `profile` that `args` select.
    pub fn of_profile(profile: &Profile, args: &ExportArgs) -> Input {
        let filter = args.filter.to_filter(None);
        let mut rows = Selection::new(false, args.min_size);
        for row in profile.rows.iter().filter(|r| filter.matches_site(&r.site)) {
            row.view(|r| rows.push(&r, 0));
        }
        Input {
            version: Some(profile.version),
            snapshot: profile.snapshot.clone(),
            rows,
        }
    }

    /// The rows of `profile` that `args` select, one site per tag and node.
    pub fn of_nodes(profile: &NodeProfile, args: &ExportArgs) -> Input {
        let filter = args.filter.to_filter(None);
        let mut rows = Selection::new(true, args.min_size);
        for r in profile
            .rows
            .iter()
            .filter(|r| filter.matches_site(&r.row.site))
        {
            r.row.view(|row| rows.push(&row, r.node));
        }
        Input {
            version: None,
            snapshot: profile.snapshot.clone(),
            rows,
        }
    }

    fn by_node(&self) -> bool {
        self.version.is_none()
    }

    /// The selected rows in `order`.
    fn select(&mut self, order: Order) -> Result<&Selection> {
        self.rows.sort(order)?;
        Ok(&self.rows)
    }

    /// Whether the input says which sites are accurate: only version 2.0 does, and the nodes
    /// (allocinfo_nodes and the ioctl records) always do. For 1.0 an empty
    /// allocinfo_inaccurate family would claim too much.
    fn with_inaccurate(&self) -> bool {
        self.version.is_none_or(|v| v == Version::V2_0)
    }

    /// The pprof comment: what was read, from where.
    fn comment(&self, source: &str) -> String {
        match self.version {
            Some(v) => format!("allocinfo {} from {source}", v.as_str()),
            None => format!("allocinfo nodes from {source}"),
        }
    }
}

/// The metric families of the series `input` exports, for `--json`.
pub fn families(
    input: &mut Input,
    args: &ExportArgs,
    release: Option<&str>,
) -> Result<Vec<Family>> {
    let with_inaccurate = input.with_inaccurate();
    let sel = input.select(Order::Series)?;
    Ok(exposition::families(with_inaccurate)
        .iter()
        .map(|f| Family {
            name: f.name,
            kind: f.kind,
            unit: f.unit,
            help: f.help,
            samples: sel
                .series(args.line_label)
                .filter_map(|s| {
                    let value = f.value(&s.totals)?;
                    let labels = exposition::labels(&s, release)
                        .map(|(name, v)| (name, v.to_string()))
                        .collect();
                    Some(Sample { labels, value })
                })
                .collect(),
        })
        .collect())
}

#[derive(Serialize)]
struct ExportJson<'a> {
    format: &'static str,
    families: &'a [Family],
}

/// Refuses the options a format has no place for, before any input is read: `--by-node` with
/// folded, `--json` and `--line-label` outside the expositions, `--release` with csv and folded.
pub fn check_args(args: &ExportArgs, json: bool) -> Result<()> {
    let exposition = matches!(
        args.format,
        ExportFormat::Prometheus | ExportFormat::Openmetrics
    );
    if args.by_node && args.format == ExportFormat::Folded {
        return Err(Error::Usage(
            "--by-node applies to export -f prometheus, openmetrics, csv and pprof, not folded"
                .into(),
        ));
    }
    if json && !exposition {
        return Err(Error::Usage(
            "--json applies to export -f prometheus and openmetrics only".into(),
        ));
    }
    if args.line_label && !exposition {
        return Err(Error::Usage(
            "--line-label applies to export -f prometheus and openmetrics only (the others keep \
             the line)"
                .into(),
        ));
    }
    if args.release.is_some() && matches!(args.format, ExportFormat::Csv | ExportFormat::Folded) {
        return Err(Error::Usage(
            "--release applies to export -f prometheus, openmetrics and pprof".into(),
        ));
    }
    Ok(())
}

/// Whether `input` (`-i`, or none) is the live /proc/allocinfo.
pub fn is_live(input: Option<&Path>) -> bool {
    input.is_none_or(|p| p == Path::new(PROC_ALLOCINFO))
}

/// The `release` label: `--release`, else for live input the running kernel's (`uname -r`),
/// else none. csv and folded have no place for it.
pub fn release(args: &ExportArgs, live: bool) -> Result<Option<String>> {
    if let Some(r) = &args.release {
        return Ok(Some(r.clone()));
    }
    if !live || matches!(args.format, ExportFormat::Csv | ExportFormat::Folded) {
        return Ok(None);
    }
    let text = std::fs::read_to_string(OSRELEASE).map_err(|e| {
        Error::io(
            format!("cannot read the kernel release from {OSRELEASE}"),
            e,
        )
    })?;
    Ok(Some(text.trim_end().to_string()))
}

/// The time of a pprof profile: a snapshot's own, else `now_ms` (read from a live source).
fn pprof_time(snapshot: &Option<SnapshotMeta>, now_ms: i64) -> i64 {
    snapshot.as_ref().map_or(now_ms, |m| m.unix_ms)
}

/// Runs `export`: writes the export of `input` to `-o` or `out` (`--json`: the families of the
/// exposition as JSON). `source` names the input in the pprof comment; `now_ms` stamps a pprof
/// profile read from a live source (a snapshot keeps its own time); `release` is the label.
pub fn run(
    input: &mut Input,
    source: &str,
    now_ms: i64,
    release: Option<&str>,
    args: &ExportArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    check_args(args, json)?;
    let output = args.output.as_deref();
    let text_format = match args.format {
        ExportFormat::Openmetrics => TextFormat::OpenMetrics,
        _ => TextFormat::Prometheus,
    };
    match args.format {
        ExportFormat::Prometheus | ExportFormat::Openmetrics if json => {
            let doc = ExportJson {
                format: match text_format {
                    TextFormat::OpenMetrics => "openmetrics",
                    TextFormat::Prometheus => "prometheus",
                },
                families: &families(input, args, release)?,
            };
            write_stream(output, out, |w| {
                serde_json::to_writer_pretty(&mut *w, &doc)?;
                w.write_all(b"\n")
            })
        }
        ExportFormat::Prometheus | ExportFormat::Openmetrics => {
            let exposition = Exposition {
                format: text_format,
                line_label: args.line_label,
                release,
                with_inaccurate: input.with_inaccurate(),
            };
            let sel = input.select(Order::Series)?;
            write_stream(output, out, |mut w| exposition.write(sel, &mut w))
        }
        ExportFormat::Csv => {
            let by_node = input.by_node();
            let sel = input.select(Order::Tag)?;
            write_stream(output, out, |mut w| {
                csv::write(sel.sites(), by_node, &mut w)
            })
        }
        ExportFormat::Folded => {
            let sel = input.select(Order::Tag)?;
            let sites: Vec<_> = sel.sites().map(|s| (s.site.site(), s.totals)).collect();
            let sites: Vec<_> = sites.iter().map(|(s, t)| (s, *t)).collect();
            let text = folded::render(&sites);
            write_stream(output, out, |w| w.write_all(text.as_bytes()))
        }
        ExportFormat::Pprof => {
            let comment = input.comment(source);
            let unix_ms = pprof_time(&input.snapshot, now_ms);
            let sel = input.select(Order::Function)?;
            let meta = pprof::Meta {
                unix_ms,
                comment: &comment,
                release,
            };
            write_stream(output, out, |mut w| {
                pprof::write_sites(sel.sites(), &meta, &mut w)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::testdata::{capture, sample};
    use crate::parse::parse;
    use std::path::Path;

    crate::cmd::testdata::subcommand_args!(Export, ExportArgs, "export");

    fn export(p: &Profile, release: Option<&str>, argv: &[&str]) -> String {
        let a = args(argv);
        let mut input = Input::of_profile(p, &a);
        capture(|out| run(&mut input, "t", 0, release, &a, false, out))
    }

    #[test]
    fn prometheus_text() {
        let text = export(&sample(), None, &["--module", "ext4"]);
        assert_eq!(
            text,
            "# HELP allocinfo_bytes Bytes currently allocated from this call site, from /proc/allocinfo.\n\
             # TYPE allocinfo_bytes gauge\n\
             allocinfo_bytes{function=\"ext4_fill_super\",file=\"fs/ext4/super.c\",module=\"ext4\"} 1048576\n\
             allocinfo_bytes{function=\"ext4_iget\",file=\"fs/ext4/inode.c\",module=\"ext4\"} 16384\n\
             # HELP allocinfo_calls Live allocations (made and not yet freed) from this call site, from /proc/allocinfo.\n\
             # TYPE allocinfo_calls gauge\n\
             allocinfo_calls{function=\"ext4_fill_super\",file=\"fs/ext4/super.c\",module=\"ext4\"} 8\n\
             allocinfo_calls{function=\"ext4_iget\",file=\"fs/ext4/inode.c\",module=\"ext4\"} 4\n"
        );
    }

    const TWO_LINES: &str = "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n\
         \x20         64        1 a.c:1 func:f accurate:no \n\
         \x20         64        1 a.c:1 func:f \n\
         \x20       4096        2 a.c:9 func:f \n\
         \x20         -8        0 b\"\\.c:2 [m] func:g \n";

    #[test]
    fn lines_summed_unless_a_label() {
        let p = parse(TWO_LINES).unwrap();
        let text = export(&p, Some("6.12.1"), &["-f", "openmetrics"]);
        assert_eq!(
            text,
            "# HELP allocinfo_bytes Bytes currently allocated from this call site, from /proc/allocinfo.\n\
             # TYPE allocinfo_bytes gauge\n\
             # UNIT allocinfo_bytes bytes\n\
             allocinfo_bytes{function=\"f\",file=\"a.c\",module=\"\",release=\"6.12.1\"} 4224\n\
             allocinfo_bytes{function=\"g\",file=\"b\\\"\\\\.c\",module=\"m\",release=\"6.12.1\"} -8\n\
             # HELP allocinfo_calls Live allocations (made and not yet freed) from this call site, from /proc/allocinfo.\n\
             # TYPE allocinfo_calls gauge\n\
             allocinfo_calls{function=\"f\",file=\"a.c\",module=\"\",release=\"6.12.1\"} 4\n\
             allocinfo_calls{function=\"g\",file=\"b\\\"\\\\.c\",module=\"m\",release=\"6.12.1\"} 0\n\
             # HELP allocinfo_inaccurate 1 when the kernel marked this site's counters accurate:no (some allocations were not counted).\n\
             # TYPE allocinfo_inaccurate gauge\n\
             allocinfo_inaccurate{function=\"f\",file=\"a.c\",module=\"\",release=\"6.12.1\"} 1\n\
             # EOF\n"
        );
        let text = export(&p, None, &["--line-label", "--function", "f"]);
        let samples: Vec<_> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "allocinfo_bytes{function=\"f\",file=\"a.c\",line=\"1\",module=\"\"} 128",
                "allocinfo_bytes{function=\"f\",file=\"a.c\",line=\"9\",module=\"\"} 4096",
                "allocinfo_calls{function=\"f\",file=\"a.c\",line=\"1\",module=\"\"} 2",
                "allocinfo_calls{function=\"f\",file=\"a.c\",line=\"9\",module=\"\"} 2",
                "allocinfo_inaccurate{function=\"f\",file=\"a.c\",line=\"1\",module=\"\"} 1",
            ]
        );
        // --min-size drops the site a.c:1 (128 bytes), then a.c:9 alone makes f's series.
        let text = export(&p, None, &["--min-size", "129"]);
        let samples: Vec<_> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "allocinfo_bytes{function=\"f\",file=\"a.c\",module=\"\"} 4096",
                "allocinfo_calls{function=\"f\",file=\"a.c\",module=\"\"} 2",
            ]
        );
    }

    #[test]
    fn options_refused_where_they_have_no_place() {
        let refused = |argv: &[&str], json: bool| check_args(&args(argv), json).is_err();
        assert!(refused(&["-f", "folded", "--by-node"], false));
        assert!(refused(&["-f", "csv"], true));
        assert!(refused(&["-f", "pprof", "--line-label"], false));
        assert!(refused(&["-f", "csv", "--release", "6.12"], false));
        assert!(!refused(&["-f", "pprof", "--release", "6.12"], false));
        assert!(!refused(
            &["-f", "openmetrics", "--line-label", "--release", "x"],
            true
        ));
    }

    #[test]
    fn release_label() {
        let given = args(&["--release", "6.12.1-test"]);
        assert_eq!(
            release(&given, false).ok(),
            Some(Some("6.12.1-test".into()))
        );
        assert_eq!(release(&args(&[]), false).ok(), Some(None));
        assert_eq!(release(&args(&["-f", "csv"]), true).ok(), Some(None));
        assert!(is_live(None));
        assert!(is_live(Some(Path::new("/proc/allocinfo"))));
        assert!(!is_live(Some(Path::new("a.snap"))));
    }

    #[test]
    fn json_form() {
        let p = sample();
        let a = args(&["--release", "r1"]);
        let mut input = Input::of_profile(&p, &a);
        let json = capture(|out| run(&mut input, "t", 0, Some("r1"), &a, true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["format"], "prometheus");
        assert_eq!(v["families"][0]["name"], "allocinfo_bytes");
        assert_eq!(
            v["families"][0]["samples"].as_array().map(Vec::len),
            Some(7)
        );
        assert_eq!(
            v["families"][1]["samples"][0],
            serde_json::json!({
                "labels": {"function": "__alloc_pages", "file": "mm/page_alloc.c",
                           "module": "", "release": "r1"},
                "value": 64
            })
        );
    }
}
