// SPDX-License-Identifier: GPL-2.0
//! Per-NUMA-node attribution: the rows of /sys/kernel/debug/allocinfo_nodes (or of the ioctl's
//! ALLOCINFO_BATCH_NODES records), one per tag and node holding something.

use std::collections::{BTreeMap, BTreeSet};

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::profile::{Profile, Row, Site, SiteTotals, SnapshotMeta, Version};

/// One tag's bytes and live allocations on one node. The row's `calls` holds the signed count in
/// two's complement, as /proc/allocinfo's rows do: a negative count reads as wrapped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRow {
    pub node: u32,
    pub row: Row,
}

impl NodeRow {
    /// The row as the kernel prints it in allocinfo_nodes, with its trailing space and newline.
    pub fn line(&self) -> String {
        format!(
            "{:12} {:8} N{} {} \n",
            self.row.bytes,
            self.row.live_calls(),
            self.node,
            self.row.tag_text()
        )
    }
}

impl Serialize for NodeRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(10))?;
        map.serialize_entry("node", &self.node)?;
        self.row.serialize_entries(&mut map)?;
        map.end()
    }
}

/// A whole per-node read: how many node ids the machine has, and the rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeProfile {
    /// Node ids 0 to `nodes - 1` (the kernel's nr_node_ids).
    pub nodes: u32,
    pub snapshot: Option<SnapshotMeta>,
    /// In the kernel's order: a tag's rows are consecutive, in node order.
    pub rows: Vec<NodeRow>,
}

impl NodeProfile {
    /// One row per tag, its nodes summed: what /proc/allocinfo would have said. A tag's rows are
    /// consecutive and in node order, so a row starts another tag when its tag text differs or
    /// its node is not above the last one's.
    pub fn to_profile(&self) -> Profile {
        let mut rows: Vec<Row> = Vec::new();
        let mut last: Option<&NodeRow> = None;
        for r in &self.rows {
            let same_tag =
                last.is_some_and(|l| l.node < r.node && l.row.tag_text() == r.row.tag_text());
            match rows.last_mut() {
                // The kernel's counters are sums modulo 2^64: so are these.
                Some(sum) if same_tag => {
                    sum.bytes = sum.bytes.wrapping_add(r.row.bytes);
                    sum.calls = sum.calls.wrapping_add(r.row.calls);
                }
                _ => rows.push(r.row.clone()),
            }
            last = Some(r);
        }
        Profile {
            version: Version::V2_0,
            snapshot: self.snapshot.clone(),
            rows,
        }
    }

    /// Rows summed per site and node (one tag text can occur more than once), by site, then node.
    pub fn by_site_node(&self) -> BTreeMap<(&Site, u32), SiteTotals> {
        let mut out: BTreeMap<(&Site, u32), SiteTotals> = BTreeMap::new();
        for r in &self.rows {
            let t = out.entry((&r.row.site, r.node)).or_default();
            t.bytes += i128::from(r.row.bytes);
            t.calls += i128::from(r.row.live_calls());
            t.wrapped |= r.row.calls_wrapped();
            t.inaccurate |= !r.row.accurate();
        }
        out
    }

    /// How many distinct sites these rows name.
    pub fn distinct_sites<'a>(rows: impl Iterator<Item = &'a NodeRow>) -> usize {
        rows.map(|r| &r.row.site).collect::<BTreeSet<_>>().len()
    }
}

/// A node row for messages and text output: `N1`.
pub fn node_name(node: u32) -> String {
    format!("N{node}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(node: u32, bytes: i64, calls: i64, file: &str) -> NodeRow {
        NodeRow {
            node,
            row: Row {
                bytes,
                calls: u64::from_ne_bytes(calls.to_ne_bytes()),
                site: Site {
                    file: file.into(),
                    line: 1,
                    module: None,
                    function: "f".into(),
                },
                fields: vec![],
            },
        }
    }

    #[test]
    fn summed_back_per_tag() {
        let p = NodeProfile {
            nodes: 2,
            snapshot: None,
            rows: vec![
                row(0, 4096, 1, "a.c"),
                row(1, 8192, -3, "a.c"),
                // The same tag text again from node 0: another tag (a macro used twice).
                row(0, 64, 1, "a.c"),
                row(1, -64, 0, "b.c"),
            ],
        };
        let s = p.to_profile();
        let got: Vec<_> = s
            .rows
            .iter()
            .map(|r| (r.site.file.as_str(), r.bytes, r.live_calls()))
            .collect();
        assert_eq!(got, [("a.c", 12288, -2), ("a.c", 64, 1), ("b.c", -64, 0)]);
        assert_eq!(s.version, Version::V2_0);
        let by = p.by_site_node();
        assert_eq!(by.len(), 3);
        assert_eq!(by[&(&p.rows[0].row.site, 0)].bytes, 4160);
        assert!(by[&(&p.rows[0].row.site, 1)].wrapped);
        assert_eq!(NodeProfile::distinct_sites(p.rows.iter()), 2);
        assert_eq!(p.rows[1].line(), "        8192       -3 N1 a.c:1 func:f \n");
    }
}
