// SPDX-License-Identifier: GPL-2.0
//! `allocinfo diff A B`: per-site (or per-group) change between two profiles, with totals.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;

use crate::cli::{DiffArgs, DiffSort, TreeBy};
use crate::cmd::tree::{default_depth, site_group_keys};
use crate::cmd::{output_error, show_delta, show_size, write_json};
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::names::{NameId, Names, SiteKey};
use crate::profile::{Header, Profile, RowRef, Site, SiteTotals, SnapshotMeta};
use crate::size::signed;
use crate::source::{input_limit, Source};
use crate::timestamp::utc_rfc3339;

/// How a site changed between the two profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Only in B (a module loaded in between).
    New,
    /// Only in A.
    Gone,
    Grew,
    Shrank,
    /// Same bytes; live allocations may still differ.
    Same,
}

/// One site's before, after and difference.
#[derive(Debug, Serialize)]
pub struct SiteDelta {
    #[serde(flatten)]
    pub site: Site,
    pub change: Change,
    pub before_bytes: i128,
    pub after_bytes: i128,
    pub delta_bytes: i128,
    /// Signed: a count that wrapped below zero is negative.
    pub before_calls: i128,
    pub after_calls: i128,
    pub delta_calls: i128,
}

/// One group's (module's or path prefix's) before, after and difference, with `--by`.
#[derive(Debug, Serialize)]
pub struct GroupDelta {
    /// `mm/slub.c`, `ext4`, or with `--by module -d N` the module and prefix: `ext4 fs/ext4/`.
    pub group: String,
    pub change: Change,
    pub before_bytes: i128,
    pub after_bytes: i128,
    pub delta_bytes: i128,
    pub before_calls: i128,
    pub after_calls: i128,
    pub delta_calls: i128,
    /// Sites summed into the group.
    pub sites: usize,
}

/// Sums over every site that passed the filters, listed or not.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct DiffTotals {
    pub before_bytes: i128,
    pub after_bytes: i128,
    pub delta_bytes: i128,
    /// Live allocations, leaving out sites whose count wrapped below zero.
    pub before_calls: i128,
    pub after_calls: i128,
    pub delta_calls: i128,
    pub grew: usize,
    pub shrank: usize,
    pub new: usize,
    pub gone: usize,
    pub same: usize,
}

/// Where one side came from and when it was taken, if it is a snapshot.
#[derive(Debug, Serialize)]
pub struct SideInfo {
    pub path: String,
    pub unix_ms: Option<i64>,
    pub time: Option<String>,
}

/// What `diff` found; the JSON output is this structure.
#[derive(Debug, Serialize)]
pub struct DiffReport {
    pub before: SideInfo,
    pub after: SideInfo,
    /// B's time minus A's when both are snapshots.
    pub interval_ms: Option<i64>,
    pub totals: DiffTotals,
    /// The sites listed; empty with `--by`.
    pub sites: Vec<SiteDelta>,
    /// With `--by`: the groups listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<GroupDelta>>,
}

fn side(path: &str, snapshot: Option<&SnapshotMeta>) -> SideInfo {
    let unix_ms = snapshot.map(|m| m.unix_ms);
    SideInfo {
        path: path.to_string(),
        unix_ms,
        time: unix_ms.map(utc_rfc3339),
    }
}

/// One row of one side, its names interned: 32 bytes, whatever its names.
#[derive(Clone, Copy, Debug)]
struct SideRow {
    key: SiteKey,
    bytes: i64,
    calls: u64,
}

/// The rows of both sides as they are read, their names interned once for both.
struct Sides {
    names: Names,
    filter: Filter,
    rows: [Vec<SideRow>; 2],
    /// Set once 2^32 names were seen; the rows after it are not kept.
    full: bool,
}

impl Sides {
    fn new(filter: Filter) -> Self {
        Sides {
            names: Names::new(),
            filter,
            rows: [Vec::new(), Vec::new()],
            full: false,
        }
    }

    /// Takes a row of side 0 (before) or 1 (after), if it passes the filter.
    fn add(&mut self, side: usize, row: RowRef<'_>) {
        if !self.filter.matches_tag(&row.tag) {
            return;
        }
        match self.names.key(&row.tag) {
            Some(key) => self.rows[side].push(SideRow {
                key,
                bytes: row.bytes,
                calls: row.calls,
            }),
            None => self.full = true,
        }
    }
}

impl Sides {
    /// Takes `other`'s rows of `side`, read apart with names of their own.
    fn adopt(&mut self, side: usize, mut other: Sides) {
        self.full |= other.full;
        let Some(map) = other.names.renumbering(&mut self.names) else {
            self.full = true;
            return;
        };
        let mut rows = std::mem::take(&mut other.rows[side]);
        for r in &mut rows {
            r.key = r.key.renumbered(&map);
        }
        if let Some(ours) = self.rows.get_mut(side) {
            *ours = rows;
        }
    }
}

/// Reads `source`'s rows as side `side` of a comparison of its own.
fn read_side(source: &Source, side: usize, filter: Filter, limit: u64) -> Result<(Header, Sides)> {
    let mut sides = Sides::new(filter);
    let header = source.read_rows(limit, &mut |row| sides.add(side, row))?;
    Ok((header, sides))
}

/// A site's change, its names as numbers, before it is listed.
#[derive(Clone, Copy, Debug)]
struct Compared {
    key: SiteKey,
    change: Change,
    before: SiteTotals,
    after: SiteTotals,
}

impl Compared {
    fn delta_bytes(&self) -> i128 {
        self.after.bytes - self.before.bytes
    }

    fn delta_calls(&self) -> i128 {
        self.after.calls - self.before.calls
    }
}

/// Sums the rows of each site in `rows` (sorted by key) from `*at` on: the site's totals, or
/// zero when `rows` has no row of `key`.
fn sum_site(rows: &[SideRow], at: &mut usize, key: &SiteKey) -> Option<SiteTotals> {
    let mut totals: Option<SiteTotals> = None;
    while let Some(r) = rows.get(*at).filter(|r| r.key == *key) {
        let t = totals.get_or_insert_with(SiteTotals::default);
        let calls = i64::from_ne_bytes(r.calls.to_ne_bytes());
        t.bytes += i128::from(r.bytes);
        t.calls += i128::from(calls);
        t.wrapped |= calls < 0;
        *at += 1;
    }
    totals
}

/// Walks the sites of both sides in key order, handing each site's comparison to `each`.
fn compare(sides: &mut Sides, mut each: impl FnMut(&Compared)) {
    for rows in &mut sides.rows {
        rows.sort_unstable_by_key(|r| r.key.packed());
    }
    let [before, after] = &sides.rows;
    let (mut i, mut j) = (0, 0);
    loop {
        let key = match (before.get(i), after.get(j)) {
            (Some(x), Some(y)) => x.key.min(y.key),
            (Some(x), None) => x.key,
            (None, Some(y)) => y.key,
            (None, None) => break,
        };
        let (x, y) = (
            sum_site(before, &mut i, &key),
            sum_site(after, &mut j, &key),
        );
        let zero = SiteTotals::default();
        let (bx, by) = (x.unwrap_or(zero), y.unwrap_or(zero));
        let delta_bytes = by.bytes - bx.bytes;
        let change = match (x, y) {
            (None, _) => Change::New,
            (_, None) => Change::Gone,
            _ if delta_bytes > 0 => Change::Grew,
            _ if delta_bytes < 0 => Change::Shrank,
            _ => Change::Same,
        };
        each(&Compared {
            key,
            change,
            before: bx,
            after: by,
        });
    }
}

/// The order `--sort` asks for, on byte and call deltas; ties are left to the caller.
fn rank(sort: DiffSort, (xb, xc): (i128, i128), (yb, yc): (i128, i128)) -> std::cmp::Ordering {
    match sort {
        DiffSort::Abs => yb
            .abs()
            .cmp(&xb.abs())
            .then(yb.cmp(&xb))
            .then(yc.abs().cmp(&xc.abs())),
        DiffSort::Size => yb.cmp(&xb).then(yc.cmp(&xc)),
        DiffSort::Calls => yc.cmp(&xc).then(yb.cmp(&xb)),
    }
}

/// The sites to list, best first by `--sort` then by site, keeping at most about twice `-n`
/// of them (all with `-n 0`) while the comparison runs.
struct Listed<'n> {
    names: &'n Names,
    sort: DiffSort,
    keep: usize,
    sites: Vec<Compared>,
    /// The worst site kept at the last cut: one ranking below it is never listed.
    bar: Option<Compared>,
}

impl Listed<'_> {
    fn order(&self, x: &Compared, y: &Compared) -> Ordering {
        rank(
            self.sort,
            (x.delta_bytes(), x.delta_calls()),
            (y.delta_bytes(), y.delta_calls()),
        )
        .then_with(|| self.names.cmp_sites(&x.key, &y.key))
    }

    fn offer(&mut self, c: &Compared) {
        if self
            .bar
            .is_some_and(|bar| self.order(c, &bar) == Ordering::Greater)
        {
            return;
        }
        self.sites.push(*c);
        if self.keep > 0 && self.sites.len() >= 2 * self.keep.max(512) {
            self.cut();
        }
    }

    fn cut(&mut self) {
        if self.keep == 0 || self.sites.len() <= self.keep {
            return;
        }
        let mut sites = std::mem::take(&mut self.sites);
        sites.select_nth_unstable_by(self.keep - 1, |x, y| self.order(x, y));
        sites.truncate(self.keep);
        self.bar = sites.iter().copied().max_by(|x, y| self.order(x, y));
        self.sites = sites;
    }

    fn into_ranked(mut self) -> Vec<Compared> {
        self.cut();
        let mut sites = std::mem::take(&mut self.sites);
        sites.sort_by(|x, y| self.order(x, y));
        sites
    }
}

/// A group of `--by` while the comparison runs: its sums, and whether any of its sites was
/// in A and in B.
struct GroupSums {
    delta: GroupDelta,
    any_before: bool,
    any_after: bool,
}

/// Sums the compared sites per group of `--by` (at `depth`), every site filtered in, listed
/// or not.
struct Groups {
    by: TreeBy,
    depth: usize,
    /// Group of each (file, module): the group depends on nothing else.
    of: HashMap<(NameId, NameId), usize>,
    groups: Vec<GroupSums>,
    index: HashMap<String, usize>,
}

impl Groups {
    fn new(by: TreeBy, depth: usize) -> Self {
        Groups {
            by,
            depth,
            of: HashMap::new(),
            groups: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn add(&mut self, names: &Names, d: &Compared) {
        let i = match self.of.get(&(d.key.file, d.key.module)) {
            Some(&i) => i,
            None => {
                let key = site_group_keys(&names.site(&d.key), self.by, self.depth).join(" ");
                let next = self.groups.len();
                let i = *self.index.entry(key.clone()).or_insert(next);
                if i == next {
                    self.groups.push(GroupSums {
                        delta: GroupDelta {
                            group: key,
                            change: Change::Same,
                            before_bytes: 0,
                            after_bytes: 0,
                            delta_bytes: 0,
                            before_calls: 0,
                            after_calls: 0,
                            delta_calls: 0,
                            sites: 0,
                        },
                        any_before: false,
                        any_after: false,
                    });
                }
                self.of.insert((d.key.file, d.key.module), i);
                i
            }
        };
        let Some(s) = self.groups.get_mut(i) else {
            return;
        };
        let g = &mut s.delta;
        g.before_bytes += d.before.bytes;
        g.after_bytes += d.after.bytes;
        g.delta_bytes += d.delta_bytes();
        g.before_calls += d.before.calls;
        g.after_calls += d.after.calls;
        g.delta_calls += d.delta_calls();
        g.sites += 1;
        s.any_before |= d.change != Change::New;
        s.any_after |= d.change != Change::Gone;
    }

    fn into_deltas(self) -> Vec<GroupDelta> {
        self.groups
            .into_iter()
            .map(|s| {
                let mut g = s.delta;
                g.change = match (s.any_before, s.any_after) {
                    (false, _) => Change::New,
                    (_, false) => Change::Gone,
                    _ if g.delta_bytes > 0 => Change::Grew,
                    _ if g.delta_bytes < 0 => Change::Shrank,
                    _ => Change::Same,
                };
                g
            })
            .collect()
    }
}

/// Builds the report from both sides' rows: compares, drops unchanged sites unless `--all` and
/// small changes under `--min-delta`, rolls up with `--by`, sorts and truncates.
fn report(
    mut sides: Sides,
    (a_path, a_snapshot): (&str, Option<&SnapshotMeta>),
    (b_path, b_snapshot): (&str, Option<&SnapshotMeta>),
    args: &DiffArgs,
) -> Result<DiffReport> {
    if sides.full {
        return Err(Error::Refused(format!(
            "{a_path}, {b_path}: more than 2^32 distinct names"
        )));
    }
    let big_enough = |delta: i128| args.min_delta.is_none_or(|m| delta.abs() >= i128::from(m));
    let mut totals = DiffTotals::default();
    let mut groups = args
        .by
        .map(|by| Groups::new(by, args.depth.unwrap_or(default_depth(by))));
    // The sites in the order of the keys, listed in full once the comparison is over.
    let mut keyed = Vec::new();
    {
        let names = std::mem::take(&mut sides.names);
        let mut listed = Listed {
            names: &names,
            sort: args.sort,
            keep: args.lines,
            sites: Vec::new(),
            bar: None,
        };
        compare(&mut sides, |d| {
            match d.change {
                Change::New => totals.new += 1,
                Change::Gone => totals.gone += 1,
                Change::Grew => totals.grew += 1,
                Change::Shrank => totals.shrank += 1,
                Change::Same => totals.same += 1,
            }
            totals.before_bytes += d.before.bytes;
            totals.after_bytes += d.after.bytes;
            let countable = |t: &SiteTotals| if t.wrapped { 0 } else { t.calls };
            totals.before_calls += countable(&d.before);
            totals.after_calls += countable(&d.after);
            match &mut groups {
                Some(g) => g.add(&names, d),
                None if (args.all || d.change != Change::Same || d.delta_calls() != 0)
                    && big_enough(d.delta_bytes()) =>
                {
                    listed.offer(d)
                }
                None => {}
            }
        });
        drop(sides);
        for c in listed.into_ranked() {
            keyed.push(SiteDelta {
                site: names.site(&c.key),
                change: c.change,
                before_bytes: c.before.bytes,
                after_bytes: c.after.bytes,
                delta_bytes: c.delta_bytes(),
                before_calls: c.before.calls,
                after_calls: c.after.calls,
                delta_calls: c.delta_calls(),
            });
        }
    }
    totals.delta_bytes = totals.after_bytes - totals.before_bytes;
    totals.delta_calls = totals.after_calls - totals.before_calls;
    let groups = groups.map(|g| {
        let mut g = g.into_deltas();
        if !args.all {
            g.retain(|d| d.change != Change::Same || d.delta_calls != 0);
        }
        g.retain(|d| big_enough(d.delta_bytes));
        g.sort_by(|x, y| {
            rank(
                args.sort,
                (x.delta_bytes, x.delta_calls),
                (y.delta_bytes, y.delta_calls),
            )
            .then_with(|| x.group.cmp(&y.group))
        });
        if args.lines > 0 {
            g.truncate(args.lines);
        }
        g
    });
    let (before, after) = (side(a_path, a_snapshot), side(b_path, b_snapshot));
    let interval_ms = before.unix_ms.zip(after.unix_ms).map(|(x, y)| y - x);
    Ok(DiffReport {
        before,
        after,
        interval_ms,
        totals,
        sites: keyed,
        groups,
    })
}

/// Builds the report of two parsed profiles.
pub fn diff(
    a: &Profile,
    a_path: &str,
    b: &Profile,
    b_path: &str,
    args: &DiffArgs,
) -> Result<DiffReport> {
    let mut sides = Sides::new(args.filter.to_filter(None));
    for (i, p) in [a, b].into_iter().enumerate() {
        for r in &p.rows {
            r.view(|row| sides.add(i, row));
        }
    }
    report(
        sides,
        (a_path, a.snapshot.as_ref()),
        (b_path, b.snapshot.as_ref()),
        args,
    )
}

/// Memory the comparison keeps per byte of input, rounded up: a row of about 70 bytes of text
/// is a [`SideRow`] of 32.
const DIFF_BYTES_PER_INPUT_BYTE: u64 = 1;

/// Runs `diff` on two sources as they are read: only each row's interned site and counters are
/// kept, and only the sites that can be listed.
pub fn run_sources(
    (a, a_path): (&Source, &str),
    (b, b_path): (&Source, &str),
    args: &DiffArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let filter = args.filter.to_filter(None);
    // Both sides stay in memory: each may take half of what the memory holds.
    let limit = input_limit(2 * DIFF_BYTES_PER_INPUT_BYTE);
    // B is read on a thread of its own while A is read, unless one of them is standard input
    // (`diff - -` reads it twice, one after the other) or no thread can be made.
    let b_apart = (!a.is_stdin() && !b.is_stdin())
        .then(|| {
            let (b, filter) = (b.clone(), filter.clone());
            std::thread::Builder::new()
                .name("allocinfo-diff-b".into())
                .spawn(move || read_side(&b, 1, filter, limit))
                .ok()
        })
        .flatten();
    let (ha, mut sides) = read_side(a, 0, filter.clone(), limit)?;
    let (hb, other) = match b_apart {
        Some(thread) => thread.join().unwrap_or_else(|_| {
            Err(Error::Refused(format!(
                "{b_path}: the thread reading it failed"
            )))
        })?,
        None => read_side(b, 1, filter, limit)?,
    };
    sides.adopt(1, other);
    let report = report(
        sides,
        (a_path, ha.snapshot.as_ref()),
        (b_path, hb.snapshot.as_ref()),
        args,
    )?;
    write_report(&report, args, json, out)
}

fn write_report(
    report: &DiffReport,
    args: &DiffArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    if json {
        write_json(out, report)
    } else {
        write_text(report, args.bytes, out)
    }
}

/// Prints the report as text.
pub fn write_text(r: &DiffReport, plain: bool, out: &mut dyn Write) -> Result<()> {
    let mut w = || -> std::io::Result<()> {
        let when = |s: &SideInfo| s.time.as_ref().map_or(String::new(), |t| format!(" ({t})"));
        writeln!(out, "before: {}{}", r.before.path, when(&r.before))?;
        let later = r.interval_ms.map_or(String::new(), |ms| {
            format!(", {:.1} s later", ms as f64 / 1000.0)
        });
        writeln!(out, "after:  {}{}{later}", r.after.path, when(&r.after))?;
        let what = match &r.groups {
            Some(_) => "GROUP",
            None => "SITE",
        };
        writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>11}  {what}",
            "DELTA", "BEFORE", "AFTER", "DELTA_CALLS"
        )?;
        // One row: delta, before, after, calls delta, then what changed.
        let mut row = |change: &Change,
                       (delta, before, after, calls): (i128, i128, i128, i128),
                       what: &str|
         -> std::io::Result<()> {
            let note = match change {
                Change::New => " (new)",
                Change::Gone => " (gone)",
                _ => "",
            };
            writeln!(
                out,
                "{:>12} {:>12} {:>12} {:>11}  {what}{note}",
                show_delta(delta, plain),
                show_size(before, plain),
                show_size(after, plain),
                signed(calls),
            )
        };
        for g in r.groups.iter().flatten() {
            let n = (g.delta_bytes, g.before_bytes, g.after_bytes, g.delta_calls);
            row(&g.change, n, &g.group)?;
        }
        for d in &r.sites {
            let n = (d.delta_bytes, d.before_bytes, d.after_bytes, d.delta_calls);
            row(&d.change, n, &d.site.tag_text())?;
        }
        let t = &r.totals;
        writeln!(
            out,
            "total: {} -> {} ({}), calls {} -> {} ({}); {} grew, {} shrank, {} new, {} gone, {} same",
            show_size(t.before_bytes, plain),
            show_size(t.after_bytes, plain),
            show_delta(t.delta_bytes, plain),
            t.before_calls,
            t.after_calls,
            signed(t.delta_calls),
            t.grew,
            t.shrank,
            t.new,
            t.gone,
            t.same
        )
    };
    w().map_err(output_error)
}

/// Runs `diff` on two parsed profiles and prints text or JSON.
pub fn run(
    (a, a_path): (&Profile, &str),
    (b, b_path): (&Profile, &str),
    args: &DiffArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let report = diff(a, a_path, b, b_path, args)?;
    write_report(&report, args, json, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::testdata::{capture, sample};
    use crate::parse::parse;

    crate::cmd::testdata::subcommand_args!(Diff, DiffArgs, "diff", "a", "b");

    fn later() -> Profile {
        parse(
            "# snapshot unix_ms:10000\nallocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n\
             \x20    5242880     1280 mm/slub.c:2450 func:alloc_slab_page \n\
             \x20     131072       32 mm/page_alloc.c:4800 func:__alloc_pages \n\
             \x20          0        0 lib/idr.c:12 func:idr_alloc \n\
             \x20      -8192        0 mm/migrate.c:300 func:migrate_pages \n\
             \x20       4096      901 kernel/fork.c:77 func:dup_task_struct \n\
             \x20       2048        1 drivers/x.c:9 [x] func:x_probe \n",
        )
        .unwrap()
    }

    #[test]
    fn growth_sorted_with_totals() {
        let mut a = sample();
        a.snapshot = Some(crate::profile::SnapshotMeta {
            unix_ms: 0,
            source: None,
        });
        let b = later();
        let r = diff(&a, "a", &b, "b", &args(&["--sort", "size"])).unwrap();
        let order: Vec<_> = r
            .sites
            .iter()
            .map(|d| (d.site.function.as_str(), d.change))
            .collect();
        assert_eq!(
            order,
            [
                ("alloc_slab_page", Change::Grew),
                ("x_probe", Change::New),
                ("dup_task_struct", Change::Same),
                ("ext4_iget", Change::Gone),
                ("__alloc_pages", Change::Shrank),
                ("ext4_fill_super", Change::Gone),
            ]
        );
        assert_eq!(r.interval_ms, Some(10000));
        let t = &r.totals;
        assert_eq!((t.grew, t.shrank, t.new, t.gone, t.same), (1, 1, 1, 2, 3));
        assert_eq!(t.delta_bytes, b.total_bytes() - a.total_bytes());
        assert_eq!(t.delta_calls, 256 - 32 + 1 + 1 - 12);
        assert_eq!(
            diff(&a, "a", &b, "b", &args(&["--all"]))
                .unwrap()
                .sites
                .len(),
            8
        );
        assert_eq!(
            diff(&a, "a", &b, "b", &args(&["-n", "1"]))
                .unwrap()
                .sites
                .len(),
            1
        );
        let r = diff(
            &a,
            "a",
            &b,
            "b",
            &args(&["--sort", "calls", "--module", "vmlinux"]),
        )
        .unwrap();
        assert_eq!(r.sites[0].site.function, "alloc_slab_page");
        assert_eq!(r.totals.new + r.totals.gone, 0);
    }

    fn order(r: &DiffReport) -> Vec<(String, i128)> {
        match &r.groups {
            Some(g) => g.iter().map(|g| (g.group.clone(), g.delta_bytes)).collect(),
            None => r
                .sites
                .iter()
                .map(|d| (d.site.function.clone(), d.delta_bytes))
                .collect(),
        }
    }

    #[test]
    fn largest_change_either_way_first_by_default() {
        let (a, b) = (sample(), later());
        let r = diff(&a, "a", &b, "b", &args(&[])).unwrap();
        let want: Vec<(String, i128)> = [
            ("alloc_slab_page", 1_048_576),
            ("ext4_fill_super", -1_048_576),
            ("__alloc_pages", -131_072),
            ("ext4_iget", -16_384),
            ("x_probe", 2048),
            ("dup_task_struct", 0),
        ]
        .iter()
        .map(|&(f, d)| (f.to_string(), d))
        .collect();
        assert_eq!(order(&r), want);
        let r = diff(&a, "a", &b, "b", &args(&["--min-delta", "16K"])).unwrap();
        assert_eq!(order(&r), want[..4].to_vec());
        // Totals cover every site, listed or not.
        assert_eq!(r.totals.delta_bytes, b.total_bytes() - a.total_bytes());
    }

    #[test]
    fn rolled_up_by_module_and_path() {
        let (a, b) = (sample(), later());
        let r = diff(&a, "a", &b, "b", &args(&["--by", "module"])).unwrap();
        assert!(r.sites.is_empty());
        let got = order(&r);
        assert_eq!(
            got,
            [
                ("ext4".to_string(), -1_064_960),
                ("vmlinux".to_string(), 1_048_576 - 131_072),
                ("x".to_string(), 2048),
            ]
        );
        let groups = r.groups.as_deref().unwrap_or_default();
        assert_eq!(groups[0].change, Change::Gone);
        assert_eq!(groups[2].change, Change::New);
        assert_eq!(groups[1].sites, 5);
        let r = diff(&a, "a", &b, "b", &args(&["--by", "path", "-d", "1"])).unwrap();
        assert_eq!(
            order(&r),
            [
                ("fs/".to_string(), -1_064_960),
                ("mm/".to_string(), 1_048_576 - 131_072),
                ("drivers/".to_string(), 2048),
                ("kernel/".to_string(), 0),
            ]
        );
        let r = diff(
            &a,
            "a",
            &b,
            "b",
            &args(&["--by", "module", "-d", "1", "--min-delta", "4K"]),
        )
        .unwrap();
        assert_eq!(
            order(&r),
            [
                ("ext4 fs/".to_string(), -1_064_960),
                ("vmlinux mm/".to_string(), 1_048_576 - 131_072),
            ]
        );
        let text = capture(|out| {
            run(
                (&a, "a"),
                (&b, "b"),
                &args(&["--by", "module", "-n", "1"]),
                false,
                out,
            )
        });
        let lines: Vec<&str> = text.lines().skip(2).take(2).collect();
        assert_eq!(
            lines,
            [
                "       DELTA       BEFORE        AFTER DELTA_CALLS  GROUP",
                "    -1.0 MiB      1.0 MiB          0 B         -12  ext4 (gone)",
            ]
        );
    }

    #[test]
    fn text_and_json() {
        let (a, b) = (sample(), later());
        let text = capture(|out| run((&a, "a"), (&b, "b"), &args(&["-n", "1"]), false, out));
        assert_eq!(
            text,
            "before: a\n\
             after:  b (1970-01-01T00:00:10.000Z)\n\
             \x20      DELTA       BEFORE        AFTER DELTA_CALLS  SITE\n\
             \x20   +1.0 MiB      4.0 MiB      5.0 MiB        +256  mm/slub.c:2450 func:alloc_slab_page\n\
             total: 5.3 MiB -> 5.1 MiB (-142.0 KiB), calls 2000 -> 2214 (+214); \
             1 grew, 1 shrank, 1 new, 2 gone, 3 same\n"
        );
        let json = capture(|out| run((&a, "a"), (&b, "b"), &args(&[]), true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["totals"]["new"], 1);
        assert_eq!(v["sites"][0]["file"], "mm/slub.c");
        assert_eq!(v["sites"][0]["change"], "grew");
    }

    #[test]
    fn interned_names_give_the_sites_back() {
        // Names shared between files, modules and functions; a site twice in one file; a site
        // first seen last but first by name; fields that are not part of the site.
        let a = parse(
            "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n\
             \x20        100        1 x:1 func:x \n\
             \x20        200        2 x:2 [x] func:x \n\
             \x20         50        1 x:1 func:x \n\
             \x20        300        3 m.c:1 [x] func:m.c \n\
             \x20         10        1 y.c:5 func:f accurate:no \n\
             \x20          7        1 a.c:9 func:z \n",
        )
        .unwrap();
        let b = parse(
            "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n\
             \x20          7        1 a.c:9 func:z \n\
             \x20         64        1 m.c:1 func:m.c \n\
             \x20        120        1 x:1 func:x \n\
             \x20        200        2 x:2 [x] func:x \n\
             \x20          0        0 m.c:1 [x] func:m.c \n\
             \x20         10        1 y.c:5 func:f \n",
        )
        .unwrap();
        let text = capture(|out| {
            run(
                (&a, "a"),
                (&b, "b"),
                &args(&["--all", "--bytes"]),
                false,
                out,
            )
        });
        assert_eq!(
            text,
            "before: a\n\
             after:  b\n\
             \x20      DELTA       BEFORE        AFTER DELTA_CALLS  SITE\n\
             \x20       -300          300            0          -3  m.c:1 [x] func:m.c\n\
             \x20        +64            0           64          +1  m.c:1 func:m.c (new)\n\
             \x20        -30          150          120          -1  x:1 func:x\n\
             \x20          0            7            7           0  a.c:9 func:z\n\
             \x20          0          200          200           0  x:2 [x] func:x\n\
             \x20          0           10           10           0  y.c:5 func:f\n\
             total: 667 -> 401 (-266), calls 9 -> 6 (-3); 0 grew, 2 shrank, 1 new, 0 gone, 3 same\n"
        );
        // -n keeps the best sites while comparing: the same first lines.
        let r = diff(&a, "a", &b, "b", &args(&["--all", "-n", "4"])).unwrap();
        let sites: Vec<String> = r.sites.iter().map(|d| d.site.tag_text()).collect();
        assert_eq!(
            sites,
            [
                "m.c:1 [x] func:m.c",
                "m.c:1 func:m.c",
                "x:1 func:x",
                "a.c:9 func:z"
            ]
        );
    }

    #[test]
    fn listed_while_comparing_as_after_a_full_sort() {
        let side = |salt: u64| {
            let mut text =
                String::from("allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n");
            for i in 0..3000u64 {
                let module = if i % 5 == 0 { " [m]" } else { "" };
                text.push_str(&format!(
                    "{:12} {:8} d/f{}.c:{}{module} func:g{} \n",
                    64 * ((i * salt) % 7),
                    (i * salt) % 3,
                    i % 29,
                    i % 31,
                    i % 13
                ));
            }
            parse(&text).unwrap()
        };
        let (a, b) = (side(3), side(5));
        for sort in ["abs", "size", "calls"] {
            let all = diff(
                &a,
                "a",
                &b,
                "b",
                &args(&["-n", "0", "--all", "--sort", sort]),
            )
            .unwrap();
            for n in ["1", "20", "700", "1100"] {
                let r = diff(&a, "a", &b, "b", &args(&["-n", n, "--all", "--sort", sort])).unwrap();
                let got: Vec<_> = r
                    .sites
                    .iter()
                    .map(|d| (d.site.tag_text(), d.delta_bytes))
                    .collect();
                let want: Vec<_> = all
                    .sites
                    .iter()
                    .take(got.len())
                    .map(|d| (d.site.tag_text(), d.delta_bytes))
                    .collect();
                assert_eq!(got.len().to_string(), n);
                assert_eq!(got, want, "--sort {sort} -n {n}");
                assert_eq!(r.totals, all.totals);
            }
        }
    }
}
