// SPDX-License-Identifier: GPL-2.0
//! The sites and series an export writes: the selected rows, sorted by reference and summed run
//! by run, so that a million rows cost 16 bytes each and no name is copied.
//!
//! A site is a tag text (`file:line [module] func:name`) and, with `--by-node`, a node: rows of
//! one site (a macro used twice on a line) are summed, then `--min-size` drops the sites holding
//! less, as the kernel's own filter drops tags. A series sums the sites that share its labels.

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::filter::Filter;
use crate::nodes::NodeProfile;
use crate::profile::{Profile, Row, Site, SiteTotals};

/// One selected row, by reference.
#[derive(Clone, Copy)]
struct Entry<'a> {
    row: &'a Row,
    /// The node, when the selection is by node (else 0).
    node: u32,
    /// The rank of the order's first name (file or function) among the selected rows' names:
    /// most comparisons of a sort are then of two integers, not of two strings.
    rank: u32,
}

impl Entry<'_> {
    fn same_site(&self, other: &Entry<'_>) -> bool {
        self.node == other.node && self.row.site == other.row.site
    }
}

/// The order sites come out in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// As the tag text reads: file, line, module, function, then node (CSV, folded).
    Tag,
    /// By function, file, module, node, then line: the sites of one series are adjacent, with or
    /// without the line as a label (Prometheus, OpenMetrics).
    Series,
    /// By function, file, line, module, then node: the sites of one pprof function (name and
    /// file) are adjacent, and the nodes of one site too.
    Function,
}

impl Order {
    /// The name an entry is ranked by.
    fn first_name(self, site: &Site) -> &str {
        match self {
            Order::Tag => &site.file,
            Order::Series | Order::Function => &site.function,
        }
    }
}

/// The order of two entries: their ranks stand for the first name of the order.
fn compare(order: Order, a: &Entry<'_>, b: &Entry<'_>) -> Ordering {
    let (x, y) = (&a.row.site, &b.row.site);
    a.rank.cmp(&b.rank).then_with(|| match order {
        Order::Tag => {
            (x.line, &x.module, &x.function, a.node).cmp(&(y.line, &y.module, &y.function, b.node))
        }
        Order::Series => {
            (&x.file, &x.module, a.node, x.line).cmp(&(&y.file, &y.module, b.node, y.line))
        }
        Order::Function => {
            (&x.file, x.line, &x.module, a.node).cmp(&(&y.file, y.line, &y.module, b.node))
        }
    })
}

/// The rank of each entry's `name` among the distinct names, sorted.
fn ranks<'a>(entries: &[Entry<'a>], name: impl Fn(&'a Site) -> &'a str) -> Vec<u32> {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let of_entry: Vec<u32> = entries
        .iter()
        .map(|e| {
            let n = name(&e.row.site);
            let next = names.len() as u32;
            *ids.entry(n).or_insert_with(|| {
                names.push(n);
                next
            })
        })
        .collect();
    let mut by_name: Vec<u32> = (0..names.len() as u32).collect();
    by_name.sort_unstable_by_key(|&id| names[id as usize]);
    let mut rank_of = vec![0; names.len()];
    for (rank, &id) in by_name.iter().enumerate() {
        rank_of[id as usize] = rank as u32;
    }
    of_entry
        .into_iter()
        .map(|id| rank_of[id as usize])
        .collect()
}

/// The rows that pass a filter, in one [`Order`].
pub struct Selection<'a> {
    entries: Vec<Entry<'a>>,
    by_node: bool,
    min_size: Option<i64>,
}

impl<'a> Selection<'a> {
    /// The rows of `profile` whose site passes `filter`; `min_size` applies to each site.
    pub fn of_profile(
        profile: &'a Profile,
        filter: &Filter,
        min_size: Option<i64>,
        order: Order,
    ) -> Self {
        let entries = profile
            .rows
            .iter()
            .filter(|r| filter.matches_site(&r.site))
            .map(|row| Entry {
                row,
                node: 0,
                rank: 0,
            })
            .collect();
        Self::sorted(entries, false, min_size, order)
    }

    /// The rows of `profile`, one site per tag and node; `min_size` applies to each of them.
    pub fn of_nodes(
        profile: &'a NodeProfile,
        filter: &Filter,
        min_size: Option<i64>,
        order: Order,
    ) -> Self {
        let entries = profile
            .rows
            .iter()
            .filter(|r| filter.matches_site(&r.row.site))
            .map(|r| Entry {
                row: &r.row,
                node: r.node,
                rank: 0,
            })
            .collect();
        Self::sorted(entries, true, min_size, order)
    }

    fn sorted(
        mut entries: Vec<Entry<'a>>,
        by_node: bool,
        min_size: Option<i64>,
        order: Order,
    ) -> Self {
        let ranks = ranks(&entries, |s| order.first_name(s));
        for (e, rank) in entries.iter_mut().zip(ranks) {
            e.rank = rank;
        }
        entries.sort_unstable_by(|a, b| compare(order, a, b));
        Selection {
            entries,
            by_node,
            min_size,
        }
    }

    /// The sites (rows of one tag text and node summed) holding at least `min_size`, in the
    /// selection's order.
    pub fn sites(&self) -> Sites<'a, '_> {
        Sites {
            entries: &self.entries,
            by_node: self.by_node,
            min_size: self.min_size,
        }
    }

    /// The series: the sites summed per function, file, module, node, and with `line` per line.
    /// The selection must be in [`Order::Series`].
    pub fn series(&self, line: bool) -> SeriesIter<'a, '_> {
        SeriesIter {
            sites: self.sites().peekable(),
            line,
        }
    }
}

/// One site: its tag, its node (`--by-node`) and its summed counters.
#[derive(Clone, Copy, Debug)]
pub struct SiteSum<'a> {
    pub site: &'a Site,
    pub node: Option<u32>,
    pub totals: SiteTotals,
}

/// The iterator of [`Selection::sites`].
pub struct Sites<'a, 's> {
    entries: &'s [Entry<'a>],
    by_node: bool,
    min_size: Option<i64>,
}

impl<'a> Iterator for Sites<'a, '_> {
    type Item = SiteSum<'a>;

    fn next(&mut self) -> Option<SiteSum<'a>> {
        loop {
            let first = *self.entries.first()?;
            let run = self
                .entries
                .iter()
                .position(|e| !e.same_site(&first))
                .unwrap_or(self.entries.len());
            let mut totals = SiteTotals::default();
            for e in &self.entries[..run] {
                add_row(&mut totals, e.row);
            }
            self.entries = &self.entries[run..];
            if self.min_size.is_none_or(|m| totals.bytes >= i128::from(m)) {
                return Some(SiteSum {
                    site: &first.row.site,
                    node: self.by_node.then_some(first.node),
                    totals,
                });
            }
        }
    }
}

/// Adds a row's counters to a site's.
fn add_row(t: &mut SiteTotals, row: &Row) {
    t.bytes += i128::from(row.bytes);
    t.calls += i128::from(row.live_calls());
    t.wrapped |= row.calls_wrapped();
    t.inaccurate |= !row.accurate();
}

/// One series: its labels and the sum of its sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Series<'a> {
    pub function: &'a str,
    pub file: &'a str,
    /// The module, `None` for built-in code.
    pub module: Option<&'a str>,
    /// The line, only when it is a label.
    pub line: Option<u32>,
    pub node: Option<u32>,
    pub totals: SiteTotals,
}

impl<'a> Series<'a> {
    fn of(s: &SiteSum<'a>, line: bool) -> Self {
        Series {
            function: &s.site.function,
            file: &s.site.file,
            module: s.site.module.as_deref(),
            line: line.then_some(s.site.line),
            node: s.node,
            totals: s.totals,
        }
    }

    fn same_labels(&self, other: &Series<'_>) -> bool {
        (self.function, self.file, self.module, self.line, self.node)
            == (
                other.function,
                other.file,
                other.module,
                other.line,
                other.node,
            )
    }
}

/// The iterator of [`Selection::series`].
pub struct SeriesIter<'a, 's> {
    sites: std::iter::Peekable<Sites<'a, 's>>,
    line: bool,
}

impl<'a> Iterator for SeriesIter<'a, '_> {
    type Item = Series<'a>;

    fn next(&mut self) -> Option<Series<'a>> {
        let mut sum = Series::of(&self.sites.next()?, self.line);
        while let Some(next) = self
            .sites
            .next_if(|s| sum.same_labels(&Series::of(s, self.line)))
        {
            let t = &mut sum.totals;
            t.bytes += next.totals.bytes;
            t.calls += next.totals.calls;
            t.wrapped |= next.totals.wrapped;
            t.inaccurate |= next.totals.inaccurate;
        }
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    const ROWS: &str = "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n\
        \x20         64        1 b.c:9 func:f \n\
        \x20        100        2 a.c:2 [m] func:f \n\
        \x20         10        1 a.c:1 func:f \n\
        \x20         20        1 a.c:3 func:f accurate:no \n\
        \x20          5        1 a.c:1 func:f \n\
        \x20       4096        3 a.c:7 func:e \n";

    fn sums(sel: &Selection<'_>) -> Vec<(String, i128, i128)> {
        sel.sites()
            .map(|s| (s.site.tag_text(), s.totals.bytes, s.totals.calls))
            .collect()
    }

    #[test]
    fn a_row_costs_16_bytes() {
        assert_eq!(std::mem::size_of::<Entry<'_>>(), 16);
    }

    #[test]
    fn sites_sum_one_tag_text_then_min_size() {
        let p = parse(ROWS).unwrap();
        let all = Selection::of_profile(&p, &Filter::default(), None, Order::Tag);
        assert_eq!(
            sums(&all),
            [
                ("a.c:1 func:f".to_string(), 15, 2),
                ("a.c:2 [m] func:f".to_string(), 100, 2),
                ("a.c:3 func:f".to_string(), 20, 1),
                ("a.c:7 func:e".to_string(), 4096, 3),
                ("b.c:9 func:f".to_string(), 64, 1),
            ]
        );
        // 10 and 5 make 15, which passes 15 although neither row does.
        let some = Selection::of_profile(&p, &Filter::default(), Some(15), Order::Tag);
        assert_eq!(sums(&some).len(), 5);
        let fewer = Selection::of_profile(&p, &Filter::default(), Some(16), Order::Tag);
        assert_eq!(sums(&fewer).len(), 4);
    }

    #[test]
    fn series_sum_the_lines_of_a_function() {
        let p = parse(ROWS).unwrap();
        let sel = Selection::of_profile(&p, &Filter::default(), None, Order::Series);
        let got: Vec<_> = sel
            .series(false)
            .map(|s| {
                (
                    s.function,
                    s.file,
                    s.module,
                    s.totals.bytes,
                    s.totals.inaccurate,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("e", "a.c", None, 4096, false),
                ("f", "a.c", None, 35, true),
                ("f", "a.c", Some("m"), 100, false),
                ("f", "b.c", None, 64, false),
            ]
        );
        assert_eq!(sel.series(true).count(), 5);
        assert!(sel.series(true).all(|s| s.line.is_some()));
        // --min-size drops sites before they are summed: a.c:3 (20) goes, a.c:1 (15) too.
        let sel = Selection::of_profile(&p, &Filter::default(), Some(64), Order::Series);
        let bytes: Vec<_> = sel.series(false).map(|s| s.totals.bytes).collect();
        assert_eq!(bytes, [4096, 100, 64]);
    }
}
