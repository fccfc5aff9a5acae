// SPDX-License-Identifier: GPL-2.0
//! `allocinfo export`: Prometheus text (0.0.4) or OpenMetrics 1.0 exposition of every site.
//!
//! Series are keyed by `file`, `line`, `function` and `module` (empty for built-in code). Rows with
//! the same tag text are summed first: duplicate series would make a scraper reject the whole file.
//! No sample carries a timestamp, which the node_exporter textfile collector does not accept.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use serde::Serialize;

use crate::cli::{ExportArgs, ExportFormat};
use crate::cmd::write_data;
use crate::error::{Error, Result};
use crate::format::{csv, folded, pprof};
use crate::nodes::NodeProfile;
use crate::profile::{Profile, Site, SiteTotals, SnapshotMeta, Version};

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

/// The label names, in the order they are printed; `node` only with --by-node.
const LABELS: [&str; 5] = ["file", "line", "function", "module", "node"];

/// The sites (rows with the same tag text summed) that pass the filters and --min-size.
pub fn selected_sites<'a>(profile: &'a Profile, args: &ExportArgs) -> Vec<(&'a Site, SiteTotals)> {
    let filter = args.filter.to_filter(None);
    profile
        .by_site()
        .into_iter()
        .filter(|(site, t)| {
            filter.matches_site(site) && args.min_size.is_none_or(|m| t.bytes >= i128::from(m))
        })
        .collect()
}

/// The (site, node) pairs (rows with the same tag text and node summed) that pass the filters and
/// --min-size, which applies to each pair; by site, then node.
pub fn selected_site_nodes<'a>(
    profile: &'a NodeProfile,
    args: &ExportArgs,
) -> Vec<(&'a Site, u32, SiteTotals)> {
    let filter = args.filter.to_filter(None);
    profile
        .by_site_node()
        .into_iter()
        .filter(|((site, _), t)| {
            filter.matches_site(site) && args.min_size.is_none_or(|m| t.bytes >= i128::from(m))
        })
        .map(|((site, node), t)| (site, node, t))
        .collect()
}

/// Builds the metric families for the sites of `profile` that pass the filters.
pub fn families(profile: &Profile, args: &ExportArgs) -> Vec<Family> {
    let samples = selected_sites(profile, args)
        .into_iter()
        .map(|(site, t)| (site, None, t));
    // Only version 2.0 reports accuracy, so for 1.0 an empty family would claim too much.
    families_of(samples, profile.version == Version::V2_0)
}

/// Builds the metric families for the (site, node) pairs of `profile` that pass the filters: the
/// families of [`families`] with a `node` label.
pub fn node_families(profile: &NodeProfile, args: &ExportArgs) -> Vec<Family> {
    let samples = selected_site_nodes(profile, args)
        .into_iter()
        .map(|(site, node, t)| (site, Some(node), t));
    // allocinfo_nodes and the ioctl records say which tags are accurate.
    families_of(samples, true)
}

fn families_of<'a>(
    samples: impl Iterator<Item = (&'a Site, Option<u32>, SiteTotals)>,
    with_inaccurate: bool,
) -> Vec<Family> {
    let mut bytes = Vec::new();
    let mut calls = Vec::new();
    let mut inaccurate = Vec::new();
    for (site, node, t) in samples {
        let labels: BTreeMap<&'static str, String> = [
            ("file", site.file.clone()),
            ("line", site.line.to_string()),
            ("function", site.function.clone()),
            ("module", site.module.clone().unwrap_or_default()),
        ]
        .into_iter()
        .chain(node.map(|n| ("node", n.to_string())))
        .collect();
        if t.inaccurate {
            inaccurate.push(Sample {
                labels: labels.clone(),
                value: 1,
            });
        }
        calls.push(Sample {
            labels: labels.clone(),
            value: t.calls,
        });
        bytes.push(Sample {
            labels,
            value: t.bytes,
        });
    }
    let mut out = vec![
        Family {
            name: "allocinfo_bytes",
            kind: "gauge",
            unit: Some("bytes"),
            help: "Bytes currently allocated from this call site, from /proc/allocinfo.",
            samples: bytes,
        },
        Family {
            name: "allocinfo_calls",
            kind: "gauge",
            unit: None,
            help: "Live allocations (made and not yet freed) from this call site, from /proc/allocinfo.",
            samples: calls,
        },
    ];
    if with_inaccurate {
        out.push(Family {
            name: "allocinfo_inaccurate",
            kind: "gauge",
            unit: None,
            help: "1 when the kernel marked this site's counters accurate:no (some allocations were not counted).",
            samples: inaccurate,
        });
    }
    out
}

/// Escapes a label value: backslash, double quote and line feed (the same in both formats).
pub fn escape_label(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// Escapes HELP text: Prometheus escapes backslash and line feed; OpenMetrics also double quote.
fn escape_help(text: &str, format: ExportFormat) -> String {
    match format {
        ExportFormat::Openmetrics => escape_label(text),
        _ => text.replace('\\', "\\\\").replace('\n', "\\n"),
    }
}

/// The whole exposition text.
pub fn render(families: &[Family], format: ExportFormat) -> String {
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(f.help, format));
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        if let (ExportFormat::Openmetrics, Some(unit)) = (format, f.unit) {
            let _ = writeln!(out, "# UNIT {} {unit}", f.name);
        }
        for s in &f.samples {
            out.push_str(f.name);
            out.push('{');
            let present = LABELS.iter().filter(|n| s.labels.contains_key(*n));
            for (i, name) in present.enumerate() {
                let value = s.labels.get(name).map_or("", String::as_str);
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(out, "{sep}{name}=\"{}\"", escape_label(value));
            }
            let _ = writeln!(out, "}} {}", s.value);
        }
    }
    if format == ExportFormat::Openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[derive(Serialize)]
struct ExportJson<'a> {
    format: &'static str,
    families: &'a [Family],
}

/// Refuses `--by-node` with a format that has no place for the node (folded), before any input
/// is read.
pub fn check_by_node(args: &ExportArgs) -> Result<()> {
    if args.by_node && args.format == ExportFormat::Folded {
        return Err(Error::Usage(
            "--by-node applies to export -f prometheus, openmetrics, csv and pprof, not folded"
                .into(),
        ));
    }
    Ok(())
}

/// Runs `export --by-node`: as [`run`], one sample (or CSV line) per site and node.
pub fn run_nodes(
    profile: &NodeProfile,
    source: &str,
    now_ms: i64,
    args: &ExportArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    check_by_node(args)?;
    let data = match args.format {
        ExportFormat::Prometheus | ExportFormat::Openmetrics => {
            exposition(&node_families(profile, args), args.format, json)?
        }
        _ if json => return Err(json_exposition_only()),
        ExportFormat::Csv => csv::render_nodes(&selected_site_nodes(profile, args)).into_bytes(),
        // Refused by check_by_node.
        ExportFormat::Folded => Vec::new(),
        ExportFormat::Pprof => {
            let comment = format!("allocinfo nodes from {source}");
            let sites = selected_site_nodes(profile, args);
            pprof::render_nodes(&sites, pprof_time(&profile.snapshot, now_ms), &comment)
        }
    };
    write_data(args.output.as_deref(), &data, out)
}

/// The exposition text of `fams`, or its JSON form.
fn exposition(fams: &[Family], format: ExportFormat, json: bool) -> Result<Vec<u8>> {
    if json {
        exposition_json(fams, format)
    } else {
        Ok(render(fams, format).into_bytes())
    }
}

/// The refusal of `--json` with a format that is not an exposition.
fn json_exposition_only() -> Error {
    Error::Usage("--json applies to export -f prometheus and openmetrics only".into())
}

/// The time of a pprof profile: a snapshot's own, else `now_ms` (read from a live source).
fn pprof_time(snapshot: &Option<SnapshotMeta>, now_ms: i64) -> i64 {
    snapshot.as_ref().map_or(now_ms, |m| m.unix_ms)
}

/// The JSON form of an exposition.
fn exposition_json(fams: &[Family], format: ExportFormat) -> Result<Vec<u8>> {
    let doc = ExportJson {
        format: match format {
            ExportFormat::Openmetrics => "openmetrics",
            _ => "prometheus",
        },
        families: fams,
    };
    let mut s = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::io("writing JSON", std::io::Error::from(e)))?;
    s.push('\n');
    Ok(s.into_bytes())
}

/// Runs `export`, printing or writing to `-o` the exposition (or its JSON form). `now_ms` stamps
/// a pprof profile read from a live source; a snapshot keeps its own time.
pub fn run(
    profile: &Profile,
    source: &str,
    now_ms: i64,
    args: &ExportArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let data = match args.format {
        ExportFormat::Prometheus | ExportFormat::Openmetrics => {
            exposition(&families(profile, args), args.format, json)?
        }
        _ if json => return Err(json_exposition_only()),
        ExportFormat::Csv => csv::render(&selected_sites(profile, args)).into_bytes(),
        ExportFormat::Folded => folded::render(&selected_sites(profile, args)).into_bytes(),
        ExportFormat::Pprof => {
            let comment = format!("allocinfo {} from {source}", profile.version.as_str());
            let sites = selected_sites(profile, args);
            pprof::render(&sites, pprof_time(&profile.snapshot, now_ms), &comment)
        }
    };
    write_data(args.output.as_deref(), &data, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::cmd::testdata::{capture, sample};
    use crate::parse::parse;
    use clap::Parser;

    fn args(argv: &[&str]) -> ExportArgs {
        let mut full = vec!["allocinfo", "export"];
        full.extend_from_slice(argv);
        match Cli::parse_from(full).command {
            Command::Export(a) => a,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn prometheus_text() {
        let p = sample();
        let text = capture(|out| run(&p, "t", 0, &args(&["--module", "ext4"]), false, out));
        assert_eq!(
            text,
            "# HELP allocinfo_bytes Bytes currently allocated from this call site, from /proc/allocinfo.\n\
             # TYPE allocinfo_bytes gauge\n\
             allocinfo_bytes{file=\"fs/ext4/inode.c\",line=\"55\",function=\"ext4_iget\",module=\"ext4\"} 16384\n\
             allocinfo_bytes{file=\"fs/ext4/super.c\",line=\"100\",function=\"ext4_fill_super\",module=\"ext4\"} 1048576\n\
             # HELP allocinfo_calls Live allocations (made and not yet freed) from this call site, from /proc/allocinfo.\n\
             # TYPE allocinfo_calls gauge\n\
             allocinfo_calls{file=\"fs/ext4/inode.c\",line=\"55\",function=\"ext4_iget\",module=\"ext4\"} 4\n\
             allocinfo_calls{file=\"fs/ext4/super.c\",line=\"100\",function=\"ext4_fill_super\",module=\"ext4\"} 8\n"
        );
    }

    #[test]
    fn openmetrics_unit_eof_and_inaccurate() {
        let p = parse(
            "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n\
             \x20         64        1 a.c:1 func:f accurate:no \n\
             \x20         64        1 a.c:1 func:f \n\
             \x20         -8        0 b.c:2 func:g \n",
        )
        .unwrap();
        let fams = families(&p, &args(&[]));
        assert_eq!(fams.len(), 3);
        assert_eq!(fams[0].samples[0].value, 128, "duplicate rows are summed");
        assert_eq!(fams[2].samples.len(), 1);
        let text = render(&fams, ExportFormat::Openmetrics);
        assert!(text.contains("# TYPE allocinfo_bytes gauge\n# UNIT allocinfo_bytes bytes\n"));
        assert!(text
            .contains("allocinfo_bytes{file=\"b.c\",line=\"2\",function=\"g\",module=\"\"} -8\n"));
        assert!(text.contains(
            "allocinfo_inaccurate{file=\"a.c\",line=\"1\",function=\"f\",module=\"\"} 1\n"
        ));
        assert!(text.ends_with("} 1\n# EOF\n"));
        assert_eq!(
            families(&p, &args(&["--min-size", "100"]))[0].samples.len(),
            1
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_label(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
        assert_eq!(
            escape_help("a\\b\n\"", ExportFormat::Prometheus),
            "a\\\\b\\n\""
        );
        assert_eq!(escape_help("\"", ExportFormat::Openmetrics), "\\\"");
    }

    #[test]
    fn json_form() {
        let json = capture(|out| run(&sample(), "t", 0, &args(&[]), true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["families"][0]["name"], "allocinfo_bytes");
        assert_eq!(
            v["families"][0]["samples"].as_array().map(Vec::len),
            Some(7)
        );
        assert_eq!(v["families"][1]["samples"][0]["labels"]["module"], "ext4");
        assert_eq!(v["families"][1]["samples"][2]["labels"]["module"], "");
    }
}
