// SPDX-License-Identifier: GPL-2.0
//! `allocinfo top`: the call sites holding the most memory (or live allocations).

pub mod live;

use std::cmp::Ordering;
use std::io::Write;

use serde::Serialize;

use crate::cli::{SortKey, TopArgs};
use crate::cmd::{count, output_error, show_size, write_json};
use crate::error::Result;
use crate::nodes::{node_name, NodeProfile, NodeRow};
use crate::profile::{Profile, Row, RowRef, Version};
use crate::render::row_line;
use crate::source::{input_limit, Source, PROFILE_BYTES_PER_INPUT_BYTE};

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

/// The rows passing the filters of `args`, ranked and cut to `-n`, with the sums over all of
/// them (before the cut).
struct Selected<'a, T> {
    matched: usize,
    total_bytes: i128,
    total_calls: i128,
    wrapped_calls: usize,
    rows: Vec<&'a T>,
}

/// Selects from `items` (each holding a row) as [`top`] selects sites; ties are broken on
/// `line(item)` as [`rank_by`] breaks them.
fn select<'a, T>(
    items: &'a [T],
    args: &TopArgs,
    row: impl Fn(&T) -> &Row + Copy,
    line: impl Fn(&T) -> String,
) -> Selected<'a, T> {
    let filter = args.filter.to_filter(args.min_size);
    let mut rows = rank_by(
        items.iter().filter(|r| filter.matches(row(r))),
        args.sort,
        row,
        line,
    );
    let matched = rows.len();
    let total_bytes = rows.iter().map(|r| i128::from(row(r).bytes)).sum();
    let total_calls = rows.iter().map(|r| row(r).countable_calls()).sum();
    let wrapped_calls = rows.iter().filter(|r| row(r).calls_wrapped()).count();
    if args.lines > 0 {
        rows.truncate(args.lines);
    }
    Selected {
        matched,
        total_bytes,
        total_calls,
        wrapped_calls,
        rows,
    }
}

/// Builds the report for `args` over `profile`.
pub fn top<'a>(profile: &'a Profile, source: &str, args: &TopArgs) -> TopReport<'a> {
    let s = select(&profile.rows, args, |r| r, row_line);
    TopReport {
        version: profile.version,
        source: source.to_string(),
        sites: profile.rows.len(),
        matched: s.matched,
        total_bytes: s.total_bytes,
        total_calls: s.total_calls,
        wrapped_calls: s.wrapped_calls,
        rows: s.rows,
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
    let s = select(&profile.rows, args, |r| &r.row, NodeRow::line);
    TopNodeReport {
        by_node: true,
        source: source.to_string(),
        nodes: profile.nodes,
        node_rows: profile.rows.len(),
        matched: s.matched,
        total_bytes: s.total_bytes,
        total_calls: s.total_calls,
        wrapped_calls: s.wrapped_calls,
        rows: s.rows,
    }
}

/// The words of a table: what its rows are, and how a wrapped call count is marked.
struct Words {
    /// What a row is, for the totals line: `site`, `node row`.
    rows: &'static str,
    /// After a row whose call count wrapped.
    wrapped_mark: &'static str,
    /// The totals line's note on the rows left out of the calls total: what their call count
    /// is, and what they are.
    wrapped_count: &'static str,
    wrapped_rows: &'static str,
}

/// A table's sums, for its totals line.
struct Sums {
    matched: usize,
    /// Rows in the input.
    of: usize,
    total_bytes: i128,
    total_calls: i128,
    wrapped_calls: usize,
    /// Node ids, for `--by-node`.
    nodes: Option<u32>,
}

/// Prints a table of rows (with a NODE column where a row has a node) and its totals line.
fn write_table(
    rows: &[(&Row, Option<u32>)],
    sums: &Sums,
    words: &Words,
    plain: bool,
    out: &mut dyn Write,
) -> Result<()> {
    // The NODE column, where there are nodes.
    let node_column = |text: Option<String>| text.map_or(String::new(), |t| format!(" {t:>5}"));
    let mut w = || -> std::io::Result<()> {
        writeln!(
            out,
            "{:>12} {:>10}{}  SITE",
            "SIZE",
            "CALLS",
            node_column(sums.nodes.map(|_| "NODE".to_string()))
        )?;
        for (row, node) in rows {
            writeln!(
                out,
                "{:>12} {:>10}{}  {}{}",
                show_size(i128::from(row.bytes), plain),
                row.live_calls(),
                node_column(node.map(node_name)),
                row.tag_text(),
                if row.calls_wrapped() {
                    words.wrapped_mark
                } else {
                    ""
                }
            )?;
        }
        let at = if sums.matched == sums.of {
            count(sums.matched, words.rows)
        } else {
            format!("{} of {}", sums.matched, count(sums.of, words.rows))
        };
        let on = sums.nodes.map_or(String::new(), |n| {
            format!(" on {}", count(n as usize, "node"))
        });
        let allocations = if sums.total_calls == 1 {
            "allocation"
        } else {
            "allocations"
        };
        let wrapped = match sums.wrapped_calls {
            0 => String::new(),
            n => format!(
                "; {} with {} call count left out of the calls total",
                count(n, words.wrapped_rows),
                words.wrapped_count
            ),
        };
        writeln!(
            out,
            "total: {} in {} live {allocations} at {at}{on} ({} shown){wrapped}",
            show_size(sums.total_bytes, plain),
            sums.total_calls,
            rows.len()
        )
    };
    w().map_err(output_error)
}

/// Prints the `--by-node` report: a NODE column, and a totals line counting rows.
pub fn write_text_nodes(
    report: &TopNodeReport<'_>,
    plain: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let rows: Vec<_> = report.rows.iter().map(|r| (&r.row, Some(r.node))).collect();
    let sums = Sums {
        matched: report.matched,
        of: report.node_rows,
        total_bytes: report.total_bytes,
        total_calls: report.total_calls,
        wrapped_calls: report.wrapped_calls,
        nodes: Some(report.nodes),
    };
    let words = Words {
        rows: "node row",
        wrapped_mark: " (negative calls)",
        wrapped_count: "a negative",
        wrapped_rows: "row",
    };
    write_table(&rows, &sums, &words, plain, out)
}

/// Prints the report as a table with a totals line.
pub fn write_text(report: &TopReport<'_>, plain: bool, out: &mut dyn Write) -> Result<()> {
    let rows: Vec<_> = report.rows.iter().map(|r| (*r, None)).collect();
    let sums = Sums {
        matched: report.matched,
        of: report.sites,
        total_bytes: report.total_bytes,
        total_calls: report.total_calls,
        wrapped_calls: report.wrapped_calls,
        nodes: None,
    };
    let words = Words {
        rows: "site",
        wrapped_mark: " (calls wrapped)",
        wrapped_count: "a wrapped (negative)",
        wrapped_rows: "site",
    };
    write_table(&rows, &sums, &words, plain, out)
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

/// The best rows of a stream as [`rank`] orders them, keeping at most about twice `-n` of them
/// (every one with `-n 0`): rows are offered as they are parsed, and one that cannot rank among
/// the kept is dropped without being copied.
struct Best {
    /// How many to keep; 0 for all.
    keep: usize,
    key: SortKey,
    /// Each row with its text, the tie-breaker.
    rows: Vec<(Row, String)>,
    /// The worst row kept at the last cut: a row that ranks below it can never be shown.
    bar: Option<(Row, String)>,
}

impl Best {
    fn new(keep: usize, key: SortKey) -> Self {
        Best {
            keep,
            key,
            rows: Vec::new(),
            bar: None,
        }
    }

    /// The order of [`rank`]: by the sort key, then by the row's text, larger first.
    fn order(key: SortKey, (a, la): &(Row, String), (b, lb): &(Row, String)) -> Ordering {
        Self::primary(key, (a.bytes, a.live_calls()), (b.bytes, b.live_calls()))
            .then_with(|| lb.cmp(la))
    }

    /// The sort key's order on (bytes, live calls), larger first.
    fn primary(key: SortKey, (ab, ac): (i64, i64), (bb, bc): (i64, i64)) -> Ordering {
        match key {
            SortKey::Size => bb.cmp(&ab),
            SortKey::Calls => bc.cmp(&ac).then(bb.cmp(&ab)),
        }
    }

    fn offer(&mut self, row: RowRef<'_>) {
        if let Some((bar, bar_line)) = &self.bar {
            let against = (bar.bytes, bar.live_calls());
            match Self::primary(self.key, (row.bytes, row.live_calls()), against) {
                Ordering::Greater => return,
                // A tie with the bar: its text decides. An equal text is an equal row.
                Ordering::Equal if ref_line(&row) <= *bar_line => return,
                _ => {}
            }
        }
        let owned = row.to_row();
        let line = row_line(&owned);
        self.rows.push((owned, line));
        if self.keep > 0 && self.rows.len() >= 2 * self.keep.max(512) {
            self.cut();
        }
    }

    /// Keeps the `keep` best rows and raises the bar to the worst of them.
    fn cut(&mut self) {
        let (keep, key) = (self.keep, self.key);
        if keep == 0 || self.rows.len() <= keep {
            return;
        }
        self.rows
            .select_nth_unstable_by(keep - 1, |a, b| Self::order(key, a, b));
        self.rows.truncate(keep);
        self.bar = self
            .rows
            .iter()
            .max_by(|a, b| Self::order(key, a, b))
            .cloned();
    }

    /// The kept rows, best first, cut to `keep`.
    fn into_ranked(mut self) -> Vec<Row> {
        self.cut();
        let key = self.key;
        self.rows.sort_by(|a, b| Self::order(key, a, b));
        self.rows.into_iter().map(|(r, _)| r).collect()
    }
}

/// The text of a row as parsed, as [`row_line`] gives it for the row kept.
fn ref_line(row: &RowRef<'_>) -> String {
    let mut tag = String::new();
    row.tag.push_site_text(&mut tag);
    if !row.tag.fields.is_empty() {
        tag.push(' ');
        tag.push_str(row.tag.fields);
    }
    format!("{:12} {:8} {tag} \n", row.bytes, row.calls)
}

/// Runs `top` on `source` while it is read: each row is ranked as it is parsed and only the
/// best `-n` are kept, so memory does not grow with the input (with `-n 0` every matched row
/// is kept, and the input is bounded as [`Source::read`] bounds it).
pub fn run_source(source: &Source, args: &TopArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let filter = args.filter.to_filter(args.min_size);
    let mut best = Best::new(args.lines, args.sort);
    let (mut sites, mut matched, mut total_bytes, mut total_calls, mut wrapped_calls) =
        (0, 0, 0i128, 0i128, 0);
    let limit = if args.lines == 0 {
        input_limit(PROFILE_BYTES_PER_INPUT_BYTE)
    } else {
        u64::MAX
    };
    let header = source.read_rows(limit, &mut |row| {
        sites += 1;
        if filter.matches_ref(&row) {
            matched += 1;
            total_bytes += i128::from(row.bytes);
            total_calls += row.countable_calls();
            wrapped_calls += usize::from(row.calls_wrapped());
            best.offer(row);
        }
    })?;
    let rows = best.into_ranked();
    let report = TopReport {
        version: header.version,
        source: source.described(),
        sites,
        matched,
        total_bytes,
        total_calls,
        wrapped_calls,
        rows: rows.iter().collect(),
    };
    if json {
        write_json(out, &report)
    } else {
        write_text(&report, args.bytes, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::testdata::{capture, sample};

    crate::cmd::testdata::subcommand_args!(Top, TopArgs, "top");

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

    /// 5000 rows with few distinct sizes and counts, so that most ties go to the row's text.
    fn many_ties() -> Profile {
        let mut text = String::from("allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n");
        for i in 0..5000u64 {
            let module = if i % 4 == 0 { " [m]" } else { "" };
            let fields = if i % 9 == 0 { " accurate:no" } else { "" };
            text.push_str(&format!(
                "{:12} {:8} d/f{}.c:{}{module} func:g{}{fields} \n",
                64 * (i * 7919 % 13),
                i * 104729 % 5,
                i % 17,
                i % 23,
                i % 11
            ));
        }
        crate::parse::parse(&text).unwrap()
    }

    #[test]
    fn streamed_selection_ranks_as_the_full_sort() {
        let p = many_ties();
        for key in [SortKey::Size, SortKey::Calls] {
            let all: Vec<&Row> = rank(p.rows.iter(), key);
            for keep in [0, 1, 7, 600, 1500] {
                let mut best = Best::new(keep, key);
                for r in &p.rows {
                    r.view(|v| best.offer(v));
                }
                let got = best.into_ranked();
                let n = if keep == 0 { all.len() } else { keep };
                let want: Vec<Row> = all.iter().take(n).map(|r| (*r).clone()).collect();
                assert_eq!(got, want, "{key:?} -n {keep}");
            }
        }
    }
}
