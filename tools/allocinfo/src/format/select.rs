// SPDX-License-Identifier: GPL-2.0
//! The sites and series an export writes: the selected rows, taken as they are read with their
//! names interned, then sorted and summed run by run, so that a million rows cost 40 bytes each
//! and each name is kept once.
//!
//! A site is a tag text (`file:line [module] func:name`) and, with `--by-node`, a node: rows of
//! one site (a macro used twice on a line) are summed, then `--min-size` drops the sites holding
//! less, as the kernel's own filter drops tags. A series sums the sites that share its labels.

use crate::error::{Error, Result};
use crate::names::{NameId, Names};
use crate::profile::{RowRef, SiteTotals, TagRef};

/// One selected row: its site as numbers (file, line, module, function; the names' numbers in
/// [`Names`], then their ranks once sorted) and its counters.
#[derive(Clone, Copy)]
struct Entry {
    site: [u32; 4],
    bytes: i64,
    /// The live count ([`RowRef::live_calls`]).
    calls: i64,
    /// The node, when the selection is by node (else 0).
    node: u32,
    wrapped: bool,
    inaccurate: bool,
}

impl Entry {
    fn same_site(&self, other: &Entry) -> bool {
        self.node == other.node && self.site == other.site
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
    /// The key an entry (its names ranked) sorts by in this order.
    fn key(self, e: &Entry) -> (u128, u32) {
        let pack = |a: u32, b: u32, c: u32, d: u32| {
            (u128::from(a) << 96) | (u128::from(b) << 64) | (u128::from(c) << 32) | u128::from(d)
        };
        let [file, line, module, function] = e.site;
        match self {
            Order::Tag => (pack(file, line, module, function), e.node),
            Order::Series => (pack(function, file, module, e.node), line),
            Order::Function => (pack(function, file, line, module), e.node),
        }
    }
}

/// The rows that pass a filter, taken one by one ([`Selection::push`]), then sorted in one
/// [`Order`] ([`Selection::sort`]).
pub struct Selection {
    names: Names,
    entries: Vec<Entry>,
    by_node: bool,
    min_size: Option<i64>,
    /// Once sorted, the numbers of the names by rank (the sites then hold ranks); else empty.
    by_rank: Vec<NameId>,
    /// Whether a name could not be kept (2^32 names).
    full: bool,
}

impl Selection {
    /// An empty selection; `min_size` applies to each site (and node, when `by_node`).
    pub fn new(by_node: bool, min_size: Option<i64>) -> Self {
        Selection {
            names: Names::new(),
            entries: Vec::new(),
            by_node,
            min_size,
            by_rank: Vec::new(),
            full: false,
        }
    }

    /// Adds a selected row (on `node`, 0 unless by node).
    pub fn push(&mut self, row: &RowRef<'_>, node: u32) {
        let Some(key) = self.names.key(&row.tag) else {
            self.full = true;
            return;
        };
        let id = |n: NameId| n.index() as u32;
        self.entries.push(Entry {
            site: [id(key.file), key.line, id(key.module), id(key.function)],
            bytes: row.bytes,
            calls: row.live_calls(),
            node,
            wrapped: row.calls_wrapped(),
            inaccurate: !row.accurate(),
        });
    }

    /// Sorts the rows in `order`; an error when there were more names than can be kept.
    pub fn sort(&mut self, order: Order) -> Result<()> {
        if self.full {
            return Err(Error::Refused(
                "more than 2^32 distinct names in the input".into(),
            ));
        }
        if self.by_rank.is_empty() {
            self.by_rank = self.names.sorted();
            let mut rank_of = vec![0u32; self.by_rank.len()];
            for (rank, id) in self.by_rank.iter().enumerate() {
                rank_of[id.index()] = rank as u32;
            }
            let rank = |n: u32| rank_of.get(n as usize).copied().unwrap_or_default();
            for e in &mut self.entries {
                let [file, line, module, function] = e.site;
                e.site = [rank(file), line, rank(module), rank(function)];
            }
        }
        self.entries.sort_unstable_by_key(|e| order.key(e));
        Ok(())
    }

    /// The name of rank `rank` (the sites hold ranks once sorted).
    fn name(&self, rank: u32) -> &str {
        self.by_rank
            .get(rank as usize)
            .map_or("", |&id| self.names.name(id))
    }

    /// The site of an entry, once sorted.
    fn tag(&self, e: &Entry) -> TagRef<'_> {
        let [file, line, module, function] = e.site;
        TagRef {
            file: self.name(file),
            line,
            module: Some(self.name(module)).filter(|m| !m.is_empty()),
            function: self.name(function),
            fields: "",
        }
    }

    /// The sites (rows of one tag text and node summed) holding at least `min_size`, in the
    /// order of the last [`Selection::sort`].
    pub fn sites(&self) -> Sites<'_> {
        Sites {
            sel: self,
            entries: &self.entries,
        }
    }

    /// The series: the sites summed per function, file, module, node, and with `line` per line.
    /// The selection must be sorted in [`Order::Series`].
    pub fn series(&self, line: bool) -> SeriesIter<'_> {
        SeriesIter {
            sites: self.sites().peekable(),
            line,
        }
    }
}

/// One site: its tag (without fields), its node (`--by-node`) and its summed counters.
#[derive(Clone, Copy, Debug)]
pub struct SiteSum<'a> {
    pub site: TagRef<'a>,
    pub node: Option<u32>,
    pub totals: SiteTotals,
}

/// The iterator of [`Selection::sites`].
pub struct Sites<'s> {
    sel: &'s Selection,
    entries: &'s [Entry],
}

impl<'s> Iterator for Sites<'s> {
    type Item = SiteSum<'s>;

    fn next(&mut self) -> Option<SiteSum<'s>> {
        loop {
            let first = *self.entries.first()?;
            let run = self
                .entries
                .iter()
                .position(|e| !e.same_site(&first))
                .unwrap_or(self.entries.len());
            let mut totals = SiteTotals::default();
            for e in &self.entries[..run] {
                totals.bytes += i128::from(e.bytes);
                totals.calls += i128::from(e.calls);
                totals.wrapped |= e.wrapped;
                totals.inaccurate |= e.inaccurate;
            }
            self.entries = &self.entries[run..];
            if self
                .sel
                .min_size
                .is_none_or(|m| totals.bytes >= i128::from(m))
            {
                return Some(SiteSum {
                    site: self.sel.tag(&first),
                    node: self.sel.by_node.then_some(first.node),
                    totals,
                });
            }
        }
    }
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
            function: s.site.function,
            file: s.site.file,
            module: s.site.module,
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
pub struct SeriesIter<'s> {
    sites: std::iter::Peekable<Sites<'s>>,
    line: bool,
}

impl<'s> Iterator for SeriesIter<'s> {
    type Item = Series<'s>;

    fn next(&mut self) -> Option<Series<'s>> {
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

    fn sums(sel: &Selection) -> Vec<(String, i128, i128)> {
        sel.sites()
            .map(|s| (s.site.site().tag_text(), s.totals.bytes, s.totals.calls))
            .collect()
    }

    /// The rows of `text` in `order`.
    fn select(text: &str, min_size: Option<i64>, order: Order) -> Selection {
        let p = parse(text).unwrap();
        let mut sel = Selection::new(false, min_size);
        for row in &p.rows {
            row.view(|r| sel.push(&r, 0));
        }
        sel.sort(order).unwrap();
        sel
    }

    #[test]
    fn a_row_costs_40_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn sites_sum_one_tag_text_then_min_size() {
        let all = select(ROWS, None, Order::Tag);
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
        let some = select(ROWS, Some(15), Order::Tag);
        assert_eq!(sums(&some).len(), 5);
        let fewer = select(ROWS, Some(16), Order::Tag);
        assert_eq!(sums(&fewer).len(), 4);
    }

    #[test]
    fn series_sum_the_lines_of_a_function() {
        let sel = select(ROWS, None, Order::Series);
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
        let sel = select(ROWS, Some(64), Order::Series);
        let bytes: Vec<_> = sel.series(false).map(|s| s.totals.bytes).collect();
        assert_eq!(bytes, [4096, 100, 64]);
    }
}
