// SPDX-License-Identifier: GPL-2.0
//! `allocinfo diff A B`: per-site (or per-group) change between two profiles, with totals.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use serde::Serialize;

use crate::cli::{DiffArgs, DiffSort, TreeBy};
use crate::cmd::tree::{default_depth, site_group_keys};
use crate::cmd::{output_error, show_delta, show_size, write_json};
use crate::error::Result;
use crate::filter::Filter;
use crate::profile::{Profile, Site, SiteTotals};
use crate::size::signed;
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
pub struct SiteDelta<'a> {
    #[serde(flatten)]
    pub site: &'a Site,
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
pub struct DiffReport<'a> {
    pub before: SideInfo,
    pub after: SideInfo,
    /// B's time minus A's when both are snapshots.
    pub interval_ms: Option<i64>,
    pub totals: DiffTotals,
    /// The sites listed; empty with `--by`.
    pub sites: Vec<SiteDelta<'a>>,
    /// With `--by`: the groups listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<GroupDelta>>,
}

fn side(path: &str, p: &Profile) -> SideInfo {
    let unix_ms = p.snapshot.as_ref().map(|m| m.unix_ms);
    SideInfo {
        path: path.to_string(),
        unix_ms,
        time: unix_ms.map(utc_rfc3339),
    }
}

/// Compares the sites of `a` and `b` that pass `filter`.
pub fn compare<'a>(
    a: &'a Profile,
    b: &'a Profile,
    filter: &Filter,
) -> (DiffTotals, Vec<SiteDelta<'a>>) {
    let before = a.by_site();
    let after = b.by_site();
    let keys: BTreeSet<&Site> = before.keys().chain(after.keys()).copied().collect();
    let mut totals = DiffTotals::default();
    let mut deltas = Vec::new();
    for site in keys {
        if !filter.matches_site(site) {
            continue;
        }
        let (x, y) = (before.get(site), after.get(site));
        let zero = SiteTotals::default();
        let (bx, by) = (x.unwrap_or(&zero), y.unwrap_or(&zero));
        let delta_bytes = by.bytes - bx.bytes;
        let change = match (x, y) {
            (None, _) => Change::New,
            (_, None) => Change::Gone,
            _ if delta_bytes > 0 => Change::Grew,
            _ if delta_bytes < 0 => Change::Shrank,
            _ => Change::Same,
        };
        match change {
            Change::New => totals.new += 1,
            Change::Gone => totals.gone += 1,
            Change::Grew => totals.grew += 1,
            Change::Shrank => totals.shrank += 1,
            Change::Same => totals.same += 1,
        }
        totals.before_bytes += bx.bytes;
        totals.after_bytes += by.bytes;
        let countable = |t: &SiteTotals| if t.wrapped { 0 } else { t.calls };
        totals.before_calls += countable(bx);
        totals.after_calls += countable(by);
        deltas.push(SiteDelta {
            site,
            change,
            before_bytes: bx.bytes,
            after_bytes: by.bytes,
            delta_bytes,
            before_calls: bx.calls,
            after_calls: by.calls,
            delta_calls: by.calls - bx.calls,
        });
    }
    totals.delta_bytes = totals.after_bytes - totals.before_bytes;
    totals.delta_calls = totals.after_calls - totals.before_calls;
    (totals, deltas)
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

/// Sums site deltas per group of `--by` (at `depth`).
fn roll_up(sites: &[SiteDelta<'_>], by: TreeBy, depth: usize) -> Vec<GroupDelta> {
    let mut groups: BTreeMap<String, (GroupDelta, bool, bool)> = BTreeMap::new();
    for d in sites {
        let key = site_group_keys(d.site, by, depth).join(" ");
        let (g, any_before, any_after) = groups.entry(key.clone()).or_insert_with(|| {
            let g = GroupDelta {
                group: key,
                change: Change::Same,
                before_bytes: 0,
                after_bytes: 0,
                delta_bytes: 0,
                before_calls: 0,
                after_calls: 0,
                delta_calls: 0,
                sites: 0,
            };
            (g, false, false)
        });
        g.before_bytes += d.before_bytes;
        g.after_bytes += d.after_bytes;
        g.delta_bytes += d.delta_bytes;
        g.before_calls += d.before_calls;
        g.after_calls += d.after_calls;
        g.delta_calls += d.delta_calls;
        g.sites += 1;
        *any_before |= d.change != Change::New;
        *any_after |= d.change != Change::Gone;
    }
    groups
        .into_values()
        .map(|(mut g, any_before, any_after)| {
            g.change = match (any_before, any_after) {
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

/// Builds the report: compares, drops unchanged sites unless `--all` and small changes under
/// `--min-delta`, rolls up with `--by`, sorts and truncates.
pub fn diff<'a>(
    a: &'a Profile,
    a_path: &str,
    b: &'a Profile,
    b_path: &str,
    args: &DiffArgs,
) -> DiffReport<'a> {
    let (totals, mut sites) = compare(a, b, &args.filter.to_filter(None));
    let big_enough = |delta: i128| args.min_delta.is_none_or(|m| delta.abs() >= i128::from(m));
    let mut groups = None;
    if let Some(by) = args.by {
        let depth = args.depth.unwrap_or(default_depth(by));
        let mut g = roll_up(&sites, by, depth);
        sites.clear();
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
        groups = Some(g);
    }
    if !args.all {
        sites.retain(|d| d.change != Change::Same || d.delta_calls != 0);
    }
    sites.retain(|d| big_enough(d.delta_bytes));
    sites.sort_by(|x, y| {
        rank(
            args.sort,
            (x.delta_bytes, x.delta_calls),
            (y.delta_bytes, y.delta_calls),
        )
        .then_with(|| x.site.cmp(y.site))
    });
    if args.lines > 0 {
        sites.truncate(args.lines);
    }
    let (before, after) = (side(a_path, a), side(b_path, b));
    let interval_ms = before.unix_ms.zip(after.unix_ms).map(|(x, y)| y - x);
    DiffReport {
        before,
        after,
        interval_ms,
        totals,
        sites,
        groups,
    }
}

/// Prints the report as text.
pub fn write_text(r: &DiffReport<'_>, plain: bool, out: &mut dyn Write) -> Result<()> {
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
    let report = diff(a, a_path, b, b_path, args);
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
    use crate::parse::parse;
    use clap::Parser;

    fn args(argv: &[&str]) -> DiffArgs {
        let mut full = vec!["allocinfo", "diff", "a", "b"];
        full.extend_from_slice(argv);
        match Cli::parse_from(full).command {
            Command::Diff(a) => a,
            other => panic!("parsed as {other:?}"),
        }
    }

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
        let r = diff(&a, "a", &b, "b", &args(&["--sort", "size"]));
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
        assert_eq!(diff(&a, "a", &b, "b", &args(&["--all"])).sites.len(), 8);
        assert_eq!(diff(&a, "a", &b, "b", &args(&["-n", "1"])).sites.len(), 1);
        let r = diff(
            &a,
            "a",
            &b,
            "b",
            &args(&["--sort", "calls", "--module", "vmlinux"]),
        );
        assert_eq!(r.sites[0].site.function, "alloc_slab_page");
        assert_eq!(r.totals.new + r.totals.gone, 0);
    }

    fn order(r: &DiffReport<'_>) -> Vec<(String, i128)> {
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
        let r = diff(&a, "a", &b, "b", &args(&[]));
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
        let r = diff(&a, "a", &b, "b", &args(&["--min-delta", "16K"]));
        assert_eq!(order(&r), want[..4].to_vec());
        // Totals cover every site, listed or not.
        assert_eq!(r.totals.delta_bytes, b.total_bytes() - a.total_bytes());
    }

    #[test]
    fn rolled_up_by_module_and_path() {
        let (a, b) = (sample(), later());
        let r = diff(&a, "a", &b, "b", &args(&["--by", "module"]));
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
        let r = diff(&a, "a", &b, "b", &args(&["--by", "path", "-d", "1"]));
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
        );
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
}
