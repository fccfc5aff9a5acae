// SPDX-License-Identifier: GPL-2.0
//! `allocinfo top`: the call sites holding the most memory (or live allocations).

use std::io::Write;

use serde::Serialize;

use crate::cli::{SortKey, TopArgs};
use crate::cmd::{count, output_error, show_size, write_json};
use crate::error::Result;
use crate::nodes::{node_name, NodeProfile, NodeRow};
use crate::profile::{Profile, Row, Version};
use crate::render::row_line;

/// What `top` found; the JSON output is this structure.
#[derive(Debug, Serialize)]
pub struct TopReport<'a> {
    pub version: Version,
    pub source: String,
    /// Rows in the input.
    pub sites: usize,
    /// Rows passing the filters.
    pub matched: usize,
    /// Sums over the matched rows.
    pub total_bytes: i128,
    /// Live allocations, leaving out rows whose count wrapped below zero.
    pub total_calls: i128,
    /// Matched rows whose call count wrapped, left out of `total_calls`.
    pub wrapped_calls: usize,
    pub rows: Vec<&'a Row>,
}

/// Ranks rows; ties are broken by comparing the rows' text the way `sort -g | tail` does, so that
/// `top -n N` and `sort -g /proc/allocinfo | tail -n N` pick the same sites.
pub fn rank<'a>(rows: impl Iterator<Item = &'a Row>, key: SortKey) -> Vec<&'a Row> {
    rank_by(rows, key, |r| r, row_line)
}

/// Ranks items holding a row; ties are broken by comparing `line(item)` as [`rank`] compares the
/// rows' text.
fn rank_by<'a, T>(
    items: impl Iterator<Item = &'a T>,
    key: SortKey,
    row: impl Fn(&T) -> &Row,
    line: impl Fn(&T) -> String,
) -> Vec<&'a T> {
    let mut keyed: Vec<(String, &T)> = items.map(|r| (line(r), r)).collect();
    keyed.sort_by(|(la, a), (lb, b)| {
        let (a, b) = (row(a), row(b));
        let primary = match key {
            SortKey::Size => b.bytes.cmp(&a.bytes),
            SortKey::Calls => b
                .live_calls()
                .cmp(&a.live_calls())
                .then(b.bytes.cmp(&a.bytes)),
        };
        primary.then_with(|| lb.cmp(la))
    });
    keyed.into_iter().map(|(_, r)| r).collect()
}

/// Builds the report for `args` over `profile`.
pub fn top<'a>(profile: &'a Profile, source: &str, args: &TopArgs) -> TopReport<'a> {
    let filter = args.filter.to_filter(args.min_size);
    let mut rows = rank(profile.rows.iter().filter(|r| filter.matches(r)), args.sort);
    let matched = rows.len();
    let total_bytes = rows.iter().map(|r| i128::from(r.bytes)).sum();
    let total_calls = rows.iter().map(|r| r.countable_calls()).sum();
    let wrapped_calls = rows.iter().filter(|r| r.calls_wrapped()).count();
    if args.lines > 0 {
        rows.truncate(args.lines);
    }
    TopReport {
        version: profile.version,
        source: source.to_string(),
        sites: profile.rows.len(),
        matched,
        total_bytes,
        total_calls,
        wrapped_calls,
        rows,
    }
}

/// What `top --by-node` found; the JSON output is this structure.
#[derive(Debug, Serialize)]
pub struct TopNodeReport<'a> {
    pub by_node: bool,
    pub source: String,
    /// Node ids (0 to nodes - 1).
    pub nodes: u32,
    /// Rows (a site on a node) in the input.
    pub node_rows: usize,
    /// Rows passing the filters.
    pub matched: usize,
    pub total_bytes: i128,
    /// Live allocations, leaving out rows whose count is negative.
    pub total_calls: i128,
    /// Matched rows whose call count is negative, left out of `total_calls`.
    pub wrapped_calls: usize,
    pub rows: Vec<&'a NodeRow>,
}

/// Builds the `--by-node` report: one row per site and node, ranked as [`top`] ranks sites (ties
/// broken on the allocinfo_nodes text of the rows, as `sort -g allocinfo_nodes | tail` does).
pub fn top_nodes<'a>(profile: &'a NodeProfile, source: &str, args: &TopArgs) -> TopNodeReport<'a> {
    let filter = args.filter.to_filter(args.min_size);
    let mut rows = rank_by(
        profile.rows.iter().filter(|r| filter.matches(&r.row)),
        args.sort,
        |r| &r.row,
        NodeRow::line,
    );
    let matched = rows.len();
    let total_bytes = rows.iter().map(|r| i128::from(r.row.bytes)).sum();
    let total_calls = rows.iter().map(|r| r.row.countable_calls()).sum();
    let wrapped_calls = rows.iter().filter(|r| r.row.calls_wrapped()).count();
    if args.lines > 0 {
        rows.truncate(args.lines);
    }
    TopNodeReport {
        by_node: true,
        source: source.to_string(),
        nodes: profile.nodes,
        node_rows: profile.rows.len(),
        matched,
        total_bytes,
        total_calls,
        wrapped_calls,
        rows,
    }
}

/// Prints the `--by-node` report: a NODE column, and a totals line counting rows.
pub fn write_text_nodes(
    report: &TopNodeReport<'_>,
    plain: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let mut w = || -> std::io::Result<()> {
        writeln!(out, "{:>12} {:>10} {:>5}  SITE", "SIZE", "CALLS", "NODE")?;
        for r in &report.rows {
            writeln!(
                out,
                "{:>12} {:>10} {:>5}  {}{}",
                show_size(i128::from(r.row.bytes), plain),
                r.row.live_calls(),
                node_name(r.node),
                r.row.tag_text(),
                if r.row.calls_wrapped() {
                    " (negative calls)"
                } else {
                    ""
                }
            )?;
        }
        let at = if report.matched == report.node_rows {
            count(report.matched, "node row")
        } else {
            format!(
                "{} of {}",
                report.matched,
                count(report.node_rows, "node row")
            )
        };
        let allocations = if report.total_calls == 1 {
            "allocation"
        } else {
            "allocations"
        };
        let wrapped = match report.wrapped_calls {
            0 => String::new(),
            n => format!(
                "; {} with a negative call count left out of the calls total",
                count(n, "row")
            ),
        };
        writeln!(
            out,
            "total: {} in {} live {allocations} at {at} on {} ({} shown){wrapped}",
            show_size(report.total_bytes, plain),
            report.total_calls,
            count(report.nodes as usize, "node"),
            report.rows.len()
        )
    };
    w().map_err(output_error)
}

/// Runs `top --by-node` and prints text or JSON.
pub fn run_nodes(
    profile: &NodeProfile,
    source: &str,
    args: &TopArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let report = top_nodes(profile, source, args);
    if json {
        write_json(out, &report)
    } else {
        write_text_nodes(&report, args.bytes, out)
    }
}

/// Prints the report as a table with a totals line.
pub fn write_text(report: &TopReport<'_>, plain: bool, out: &mut dyn Write) -> Result<()> {
    let mut w = || -> std::io::Result<()> {
        writeln!(out, "{:>12} {:>10}  SITE", "SIZE", "CALLS")?;
        for row in &report.rows {
            writeln!(
                out,
                "{:>12} {:>10}  {}{}",
                show_size(i128::from(row.bytes), plain),
                row.live_calls(),
                row.tag_text(),
                if row.calls_wrapped() {
                    " (calls wrapped)"
                } else {
                    ""
                }
            )?;
        }
        let at = if report.matched == report.sites {
            count(report.matched, "site")
        } else {
            format!("{} of {}", report.matched, count(report.sites, "site"))
        };
        let allocations = if report.total_calls == 1 {
            "allocation"
        } else {
            "allocations"
        };
        let wrapped = match report.wrapped_calls {
            0 => String::new(),
            n => format!(
                "; {} with a wrapped (negative) call count left out of the calls total",
                count(n, "site")
            ),
        };
        writeln!(
            out,
            "total: {} in {} live {allocations} at {at} ({} shown){wrapped}",
            show_size(report.total_bytes, plain),
            report.total_calls,
            report.rows.len()
        )
    };
    w().map_err(output_error)
}

/// Runs `top` and prints text or JSON.
pub fn run(
    profile: &Profile,
    source: &str,
    args: &TopArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let report = top(profile, source, args);
    if json {
        write_json(out, &report)
    } else {
        write_text(&report, args.bytes, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::cmd::testdata::{capture, sample};
    use clap::Parser;

    fn args(argv: &[&str]) -> TopArgs {
        let mut full = vec!["allocinfo", "top"];
        full.extend_from_slice(argv);
        match Cli::parse_from(full).command {
            Command::Top(a) => a,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn ranks_by_size_then_calls() {
        let p = sample();
        let r = top(&p, "t", &args(&["-n", "3"]));
        let names: Vec<_> = r.rows.iter().map(|r| r.site.function.as_str()).collect();
        assert_eq!(
            names,
            ["alloc_slab_page", "ext4_fill_super", "__alloc_pages"]
        );
        assert_eq!((r.sites, r.matched), (7, 7));
        let r = top(&p, "t", &args(&["-n", "1", "--sort", "calls"]));
        assert_eq!(r.rows[0].site.function, "alloc_slab_page");
        let r = top(&p, "t", &args(&["-n", "0"]));
        assert_eq!(r.rows.len(), 7);
        assert_eq!(r.rows[6].site.function, "migrate_pages");
    }

    #[test]
    fn filters_and_totals() {
        let p = sample();
        let r = top(&p, "t", &args(&["--module", "ext4", "--min-size", "20K"]));
        assert_eq!(r.rows.len(), 1);
        assert_eq!((r.matched, r.total_bytes, r.total_calls), (1, 1_048_576, 8));
    }

    #[test]
    fn text_and_json() {
        let p = sample();
        let text = capture(|out| run(&p, "t", &args(&["-n", "2"]), false, out));
        assert_eq!(
            text,
            "        SIZE      CALLS  SITE\n\
             \x20    4.0 MiB       1024  mm/slub.c:2450 func:alloc_slab_page\n\
             \x20    1.0 MiB          8  fs/ext4/super.c:100 [ext4] func:ext4_fill_super\n\
             total: 5.3 MiB in 2000 live allocations at 7 sites (2 shown)\n"
        );
        let json = capture(|out| run(&p, "t", &args(&["-n", "1"]), true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["rows"][0]["bytes"], 4194304);
        assert_eq!(v["rows"][0]["module"], serde_json::Value::Null);
        assert_eq!(v["version"], "1.0");
    }

    #[test]
    fn ties_follow_sort_g() {
        let p = crate::parse::parse(
            "allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n\
             \x20         64        1 b.c:1 func:f \n\
             \x20         64        1 a.c:1 func:f \n\
             \x20         64        2 a.c:2 func:f \n",
        )
        .unwrap();
        let ranked = rank(p.rows.iter(), SortKey::Size);
        let files: Vec<_> = ranked.iter().map(|r| r.site.tag_text()).collect();
        assert_eq!(files, ["a.c:2 func:f", "b.c:1 func:f", "a.c:1 func:f"]);
    }
}
