// SPDX-License-Identifier: GPL-2.0
//! `allocinfo tree`: memory summed by source path prefix, or by module and then path prefix.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use crate::cli::{SortKey, TreeArgs, TreeBy};
use crate::cmd::{output_error, show_size, write_json};
use crate::error::Result;
use crate::nodes::{node_name, NodeProfile};
use crate::profile::{Profile, Row, Site};

/// One group: a path prefix (`mm/`, `mm/slub.c`) or a module, with its sub-groups.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub bytes: i128,
    /// Live allocations, leaving out rows whose count wrapped below zero.
    pub calls: i128,
    /// Rows summed into this group.
    pub sites: usize,
    pub children: Vec<Node>,
}

/// What `tree` found; the JSON output is this structure.
#[derive(Debug, Serialize)]
pub struct TreeReport {
    pub by: &'static str,
    pub depth: usize,
    /// Groups left out for holding nothing (0 bytes in 0 live allocations); none with --all.
    pub hidden_empty: usize,
    /// With --by-node: the node ids (0 to nodes - 1); the root's children are the nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    pub root: Node,
}

#[derive(Default)]
struct Group {
    bytes: i128,
    calls: i128,
    sites: usize,
    children: BTreeMap<String, Group>,
}

impl Group {
    fn add(&mut self, row: &Row) {
        self.bytes += i128::from(row.bytes);
        self.calls += row.countable_calls();
        self.sites += 1;
    }

    fn is_empty(&self) -> bool {
        self.bytes == 0 && self.calls == 0
    }

    /// The node for this group; `hidden` counts the empty groups left out when `!all`. With
    /// `shape.by_node`, the children of the root are NUMA nodes, kept in node order.
    fn into_node(self, name: String, shape: &Shape, hidden: &mut usize) -> Node {
        let nodes_below = shape.by_node && name == ROOT;
        let shape = &Shape {
            by_node: false,
            ..*shape
        };
        let (sort, min_size) = (shape.sort, shape.min_size);
        let mut children = Vec::new();
        for (n, g) in self.children {
            if min_size.is_some_and(|m| g.bytes < i128::from(m)) {
                continue;
            }
            if !shape.all && g.is_empty() {
                *hidden += 1 + g.count_groups();
                continue;
            }
            children.push(g.into_node(n, shape, hidden));
        }
        if nodes_below {
            children.sort_by_key(|c| c.name.get(1..).and_then(|n| n.parse::<u32>().ok()));
        } else {
            children.sort_by(|a, b| {
                let primary = match sort {
                    SortKey::Size => b.bytes.cmp(&a.bytes),
                    SortKey::Calls => b.calls.cmp(&a.calls).then(b.bytes.cmp(&a.bytes)),
                };
                primary.then_with(|| a.name.cmp(&b.name))
            });
        }
        Node {
            name,
            bytes: self.bytes,
            calls: self.calls,
            sites: self.sites,
            children,
        }
    }
}

impl Group {
    /// Groups below this one.
    fn count_groups(&self) -> usize {
        self.children.values().map(|g| 1 + g.count_groups()).sum()
    }
}

/// How the groups are pruned and ordered.
#[derive(Clone, Copy)]
struct Shape {
    sort: SortKey,
    min_size: Option<i64>,
    all: bool,
    /// The root's children are NUMA nodes.
    by_node: bool,
}

/// The name of the root group.
const ROOT: &str = "(all)";

/// The group names a row falls into, outermost first.
fn group_keys(row: &Row, by: TreeBy, depth: usize) -> Vec<String> {
    site_group_keys(&row.site, by, depth)
}

/// The depth `--depth` means when it is not given.
pub fn default_depth(by: TreeBy) -> usize {
    match by {
        TreeBy::Path => 2,
        TreeBy::Module => 0,
    }
}

/// The group names a site falls into, outermost first: its module with `--by module`, then its
/// path prefixes (`mm/`, `mm/slub.c`) down to `depth` components.
pub fn site_group_keys(site: &Site, by: TreeBy, depth: usize) -> Vec<String> {
    let mut keys = Vec::with_capacity(depth + 1);
    if by == TreeBy::Module {
        keys.push(site.module_or_vmlinux().to_string());
    }
    let parts: Vec<&str> = site.file.split('/').collect();
    for k in 1..=depth.min(parts.len()) {
        let mut prefix = parts[..k].join("/");
        if k < parts.len() {
            prefix.push('/');
        }
        keys.push(prefix);
    }
    keys
}

/// Builds the report for `args` over `profile`.
pub fn tree(profile: &Profile, args: &TreeArgs) -> TreeReport {
    build(profile.rows.iter().map(|r| (r, None)), None, args)
}

/// Builds the `--by-node` report: under the root, one group per node (`N0`, `N1`, in node
/// order), and under each the grouping of `--by`. The root's site count is that of distinct
/// sites; a node's, of the sites holding something on it.
pub fn tree_nodes(profile: &NodeProfile, args: &TreeArgs) -> TreeReport {
    let filter = args.filter.to_filter(None);
    let sites = NodeProfile::distinct_sites(
        profile
            .rows
            .iter()
            .filter(|r| filter.matches_site(&r.row.site)),
    );
    let rows = profile.rows.iter().map(|r| (&r.row, Some(r.node)));
    let mut report = build(rows, Some(profile.nodes), args);
    report.root.sites = sites;
    report
}

fn build<'a>(
    rows: impl Iterator<Item = (&'a Row, Option<u32>)>,
    nodes: Option<u32>,
    args: &TreeArgs,
) -> TreeReport {
    let depth = args.depth.unwrap_or(default_depth(args.by));
    let filter = args.filter.to_filter(None);
    let mut root = Group::default();
    for (row, node) in rows.filter(|(r, _)| filter.matches_site(&r.site)) {
        root.add(row);
        let mut group = &mut root;
        let keys = node.map(node_name).into_iter();
        for key in keys.chain(group_keys(row, args.by, depth)) {
            group = group.children.entry(key).or_default();
            group.add(row);
        }
    }
    let shape = Shape {
        sort: args.sort,
        min_size: args.min_size,
        all: args.all,
        by_node: nodes.is_some(),
    };
    let mut hidden_empty = 0;
    let root = root.into_node(ROOT.to_string(), &shape, &mut hidden_empty);
    TreeReport {
        by: match args.by {
            TreeBy::Path => "path",
            TreeBy::Module => "module",
        },
        depth,
        hidden_empty,
        nodes,
        root,
    }
}

fn write_node(node: &Node, level: usize, plain: bool, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>12} {:>10} {:>6}  {:indent$}{}",
        show_size(node.bytes, plain),
        node.calls,
        node.sites,
        "",
        node.name,
        indent = 2 * level
    )?;
    for child in &node.children {
        write_node(child, level + 1, plain, out)?;
    }
    Ok(())
}

/// Runs `tree` and prints an indented table or JSON.
pub fn run(profile: &Profile, args: &TreeArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    write_report(&tree(profile, args), args, json, out)
}

/// Runs `tree --by-node` and prints an indented table or JSON.
pub fn run_nodes(
    profile: &NodeProfile,
    args: &TreeArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    write_report(&tree_nodes(profile, args), args, json, out)
}

fn write_report(
    report: &TreeReport,
    args: &TreeArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    if json {
        return write_json(out, report);
    }
    let heading = match (report.nodes.is_some(), args.by) {
        (false, TreeBy::Module) => "MODULE",
        (false, TreeBy::Path) => "PATH",
        (true, TreeBy::Module) => "NODE / MODULE",
        (true, TreeBy::Path) => "NODE / PATH",
    };
    writeln!(
        out,
        "{:>12} {:>10} {:>6}  {heading}",
        "SIZE", "CALLS", "SITES"
    )
    .and_then(|()| write_node(&report.root, 0, args.bytes, out))
    .and_then(|()| match report.hidden_empty {
        0 => Ok(()),
        1 => writeln!(out, "(1 group holding nothing is hidden; --all shows it)"),
        n => writeln!(
            out,
            "({n} groups holding nothing are hidden; --all shows them)"
        ),
    })
    .map_err(output_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::testdata::{capture, sample};

    crate::cmd::testdata::subcommand_args!(Tree, TreeArgs, "tree");

    fn names(n: &Node) -> Vec<&str> {
        n.children.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn by_path() {
        let r = tree(&sample(), &args(&[]));
        assert_eq!(r.depth, 2);
        assert_eq!(r.root.sites, 7);
        // lib/idr.c holds nothing: hidden with its directory unless --all.
        assert_eq!(names(&r.root), ["mm/", "fs/", "kernel/"]);
        assert_eq!(r.hidden_empty, 2);
        let all = tree(&sample(), &args(&["--all"]));
        assert_eq!(names(&all.root), ["mm/", "fs/", "kernel/", "lib/"]);
        assert_eq!(all.hidden_empty, 0);
        let mm = &r.root.children[0];
        assert_eq!(mm.bytes, 4_194_304 + 262_144 - 8192);
        assert_eq!(names(mm), ["mm/slub.c", "mm/page_alloc.c", "mm/migrate.c"]);
        assert_eq!(names(&r.root.children[1]), ["fs/ext4/"]);
        let r = tree(&sample(), &args(&["--depth", "3", "--file", "ext4"]));
        assert_eq!(
            names(&r.root.children[0].children[0]),
            ["fs/ext4/super.c", "fs/ext4/inode.c"]
        );
    }

    #[test]
    fn by_module_and_min_size() {
        let r = tree(&sample(), &args(&["--by", "module", "--min-size", "1M"]));
        assert_eq!(names(&r.root), ["vmlinux", "ext4"]);
        assert!(r.root.children[0].children.is_empty());
        let r = tree(
            &sample(),
            &args(&["--by", "module", "-d", "1", "--sort", "calls"]),
        );
        assert_eq!(names(&r.root.children[0]), ["mm/", "kernel/"]);
    }

    #[test]
    fn text_and_json() {
        let p = sample();
        let text = capture(|out| run(&p, &args(&["--by", "module"]), false, out));
        assert_eq!(
            text,
            "        SIZE      CALLS  SITES  MODULE\n\
             \x20    5.3 MiB       2000      7  (all)\n\
             \x20    4.2 MiB       1988      5    vmlinux\n\
             \x20    1.0 MiB         12      2    ext4\n"
        );
        let json = capture(|out| run(&p, &args(&[]), true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["root"]["children"][0]["name"], "mm/");
    }
}
