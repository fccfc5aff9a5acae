// SPDX-License-Identifier: GPL-2.0
//! The in-memory model of one /proc/allocinfo read: a version, optional snapshot metadata, and rows.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// The `allocinfo - version: X` of a file; each version fixes which row fields may appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// Linux 6.10 to 6.17: no `key:value` fields.
    V1_0,
    /// Linux 6.18 on: rows may carry `accurate:no` and later `key:value` fields.
    V2_0,
}

impl Version {
    /// The version as printed in the header line.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V1_0 => "1.0",
            Version::V2_0 => "2.0",
        }
    }

    /// Whether rows of this version may carry `key:value` fields.
    pub fn has_fields(self) -> bool {
        self == Version::V2_0
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One allocation call site: what a code tag names. Built-in sites have no module.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Site {
    pub file: String,
    pub line: u32,
    pub module: Option<String>,
    pub function: String,
}

impl Site {
    /// The site as /proc/allocinfo prints it: `file:line [module] func:name`.
    pub fn tag_text(&self) -> String {
        match &self.module {
            Some(m) => format!("{}:{} [{}] func:{}", self.file, self.line, m, self.function),
            None => format!("{}:{} func:{}", self.file, self.line, self.function),
        }
    }

    /// The module name, with `vmlinux` standing for built-in code.
    pub fn module_or_vmlinux(&self) -> &str {
        self.module.as_deref().unwrap_or(BUILTIN_MODULE)
    }

    /// The site as a tag as parsed, without fields.
    pub fn tag_ref(&self) -> TagRef<'_> {
        TagRef {
            file: &self.file,
            line: self.line,
            module: self.module.as_deref(),
            function: &self.function,
            fields: "",
        }
    }
}

/// The name used for built-in (non-module) sites wherever a module name is shown or matched.
pub const BUILTIN_MODULE: &str = "vmlinux";

/// The signed count a printed (`%llu`) count stands for: 2^64 - n reads back as -n.
fn live_count(printed: u64) -> i64 {
    i64::from_ne_bytes(printed.to_ne_bytes())
}

/// What a printed count adds to a total: nothing when it is a wrapped negative one.
fn countable_count(printed: u64) -> i128 {
    if live_count(printed) < 0 {
        0
    } else {
        i128::from(printed)
    }
}

/// One row: the live bytes and live allocation count charged to a site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Signed: 6.12 can underflow after page migration.
    pub bytes: i64,
    /// As printed (`%llu`); see [`Row::live_calls`] for the count it stands for.
    pub calls: u64,
    pub site: Site,
    /// `key:value` fields after `func:`, in file order (v2.0 only).
    pub fields: Vec<(String, String)>,
}

impl Row {
    /// The live allocation count. The kernel keeps it signed but prints it unsigned, so a count
    /// that went below zero (a free charged to a site its allocation was not) reads as 2^64 - n;
    /// this gives it back as -n.
    pub fn live_calls(&self) -> i64 {
        live_count(self.calls)
    }

    /// Whether the printed count is a wrapped negative one (2^63 or more).
    pub fn calls_wrapped(&self) -> bool {
        live_count(self.calls) < 0
    }

    /// The live allocations this row adds to a total: wrapped counts are left out.
    pub fn countable_calls(&self) -> i128 {
        countable_count(self.calls)
    }

    /// False when the kernel marked the counters `accurate:no`.
    pub fn accurate(&self) -> bool {
        self.field("accurate") != Some("no")
    }

    /// The value of a `key:value` field, if present.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The full tag text including `key:value` fields, without the trailing space.
    pub fn tag_text(&self) -> String {
        let mut text = self.site.tag_text();
        for (k, v) in &self.fields {
            text.push(' ');
            text.push_str(k);
            text.push(':');
            text.push_str(v);
        }
        text
    }
}

impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(9))?;
        self.serialize_entries(&mut map)?;
        map.end()
    }
}

impl Row {
    /// The entries of the row's JSON object, for objects that add their own (a node row's node).
    pub fn serialize_entries<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry("bytes", &self.bytes)?;
        map.serialize_entry("calls", &self.live_calls())?;
        map.serialize_entry("calls_wrapped", &self.calls_wrapped())?;
        map.serialize_entry("file", &self.site.file)?;
        map.serialize_entry("line", &self.site.line)?;
        map.serialize_entry("module", &self.site.module)?;
        map.serialize_entry("function", &self.site.function)?;
        map.serialize_entry("accurate", &self.accurate())?;
        let fields: BTreeMap<&str, &str> = self
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        map.serialize_entry("fields", &fields)
    }
}

impl Row {
    /// The row seen as a [`RowRef`], as a streaming reader sees rows.
    pub fn view<R>(&self, f: impl FnOnce(RowRef<'_>) -> R) -> R {
        let fields = self
            .fields
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(" ");
        f(RowRef {
            bytes: self.bytes,
            calls: self.calls,
            tag: TagRef {
                file: &self.site.file,
                line: self.site.line,
                module: self.site.module.as_deref(),
                function: &self.site.function,
                fields: &fields,
            },
        })
    }
}

/// A tag as parsed, borrowing the names from the line it was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagRef<'a> {
    pub file: &'a str,
    pub line: u32,
    pub module: Option<&'a str>,
    pub function: &'a str,
    /// The `key:value` fields after `func:`, space-separated as in the row; empty for none.
    pub fields: &'a str,
}

impl TagRef<'_> {
    /// The `key:value` fields in file order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.split(' ').filter_map(|f| f.split_once(':'))
    }

    /// The site, owning its names.
    pub fn site(&self) -> Site {
        Site {
            file: self.file.to_string(),
            line: self.line,
            module: self.module.map(str::to_string),
            function: self.function.to_string(),
        }
    }

    /// The module name, with `vmlinux` standing for built-in code.
    pub fn module_or_vmlinux(&self) -> &str {
        self.module.unwrap_or(BUILTIN_MODULE)
    }

    /// Appends the site as /proc/allocinfo prints it (without the fields), as
    /// [`Site::tag_text`] gives it.
    pub fn push_site_text(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = match self.module {
            Some(m) => write!(
                out,
                "{}:{} [{m}] func:{}",
                self.file, self.line, self.function
            ),
            None => write!(out, "{}:{} func:{}", self.file, self.line, self.function),
        };
    }
}

/// A row as parsed, borrowing its names from the line: what a streaming reader hands on, so
/// that reading a row allocates nothing. [`RowRef::to_row`] keeps one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowRef<'a> {
    pub bytes: i64,
    /// As printed; see [`Row::calls`].
    pub calls: u64,
    pub tag: TagRef<'a>,
}

impl RowRef<'_> {
    /// As [`Row::live_calls`].
    pub fn live_calls(&self) -> i64 {
        live_count(self.calls)
    }

    /// As [`Row::calls_wrapped`].
    pub fn calls_wrapped(&self) -> bool {
        live_count(self.calls) < 0
    }

    /// As [`Row::countable_calls`].
    pub fn countable_calls(&self) -> i128 {
        countable_count(self.calls)
    }

    /// As [`Row::accurate`].
    pub fn accurate(&self) -> bool {
        !self.tag.fields().any(|(k, v)| k == "accurate" && v == "no")
    }

    /// The row, owning its names.
    pub fn to_row(&self) -> Row {
        Row {
            bytes: self.bytes,
            calls: self.calls,
            site: self.tag.site(),
            fields: self
                .tag
                .fields()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

/// Metadata that `allocinfo snapshot` puts on the line before the allocinfo header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SnapshotMeta {
    /// When the data was read, in milliseconds since the Unix epoch (UTC).
    pub unix_ms: i64,
    /// Where the data was read from, when it could be recorded.
    pub source: Option<String>,
}

/// What a read says besides its rows (a streaming read hands the rows on as it goes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: Version,
    pub snapshot: Option<SnapshotMeta>,
}

/// A whole parsed file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub version: Version,
    pub snapshot: Option<SnapshotMeta>,
    pub rows: Vec<Row>,
}

impl Profile {
    /// Sum of bytes over all rows (wide, so that underflowed rows cannot overflow the sum).
    pub fn total_bytes(&self) -> i128 {
        self.rows.iter().map(|r| i128::from(r.bytes)).sum()
    }

    /// Sum of live allocations over all rows whose count did not wrap.
    pub fn total_calls(&self) -> i128 {
        self.rows.iter().map(Row::countable_calls).sum()
    }

    /// Rows whose call count wrapped below zero.
    pub fn wrapped_calls(&self) -> usize {
        self.rows.iter().filter(|r| r.calls_wrapped()).count()
    }

    /// Rows summed per site: one tag text can occur more than once (a macro used twice on a line).
    pub fn by_site(&self) -> BTreeMap<&Site, SiteTotals> {
        let mut sites: BTreeMap<&Site, SiteTotals> = BTreeMap::new();
        for row in &self.rows {
            let t = sites.entry(&row.site).or_default();
            t.bytes += i128::from(row.bytes);
            t.calls += i128::from(row.live_calls());
            t.wrapped |= row.calls_wrapped();
            t.inaccurate |= !row.accurate();
        }
        sites
    }
}

/// Counters of one site after summing duplicate rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteTotals {
    pub bytes: i128,
    /// Signed: a wrapped count is negative here.
    pub calls: i128,
    /// Some row of the site had a wrapped count.
    pub wrapped: bool,
    pub inaccurate: bool,
}
