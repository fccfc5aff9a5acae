// SPDX-License-Identifier: GPL-2.0
//! The Prometheus text format (0.0.4) and OpenMetrics 1.0 text, written series by series.
//!
//! Written here rather than through a client library: the maintained Rust encoders
//! (`prometheus`, `prometheus-client`) encode a registry of live metric objects, one owned label
//! set per series, which for a million sites costs more than the whole profile. The output is
//! checked by the programs that read it: promtool, node_exporter and Prometheus (host-test.sh).
//!
//! Labels, in this order: `function`, `file`, `line` (with `--line-label` only), `module` (empty
//! for built-in code), `node` (with `--by-node` only) and `release` (when known). No sample
//! carries a timestamp, which the node_exporter textfile collector does not accept.

use std::io::{self, Write};

use crate::format::select::{Selection, Series};
use crate::profile::SiteTotals;

/// The text formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    Prometheus,
    OpenMetrics,
}

/// A metric family: its metadata and which counter of a series it exposes.
#[derive(Debug)]
pub struct FamilyMeta {
    pub name: &'static str,
    pub kind: &'static str,
    pub unit: Option<&'static str>,
    pub help: &'static str,
    value: fn(&SiteTotals) -> Option<i128>,
}

impl FamilyMeta {
    /// The sample of a series in this family, if it has one.
    pub fn value(&self, t: &SiteTotals) -> Option<i128> {
        (self.value)(t)
    }
}

/// The families, `allocinfo_inaccurate` last and only when the input says which sites are.
pub fn families(with_inaccurate: bool) -> &'static [FamilyMeta] {
    const ALL: [FamilyMeta; 3] = [
        FamilyMeta {
            name: "allocinfo_bytes",
            kind: "gauge",
            unit: Some("bytes"),
            help: "Bytes currently allocated from this call site, from /proc/allocinfo.",
            value: |t| Some(t.bytes),
        },
        FamilyMeta {
            name: "allocinfo_calls",
            kind: "gauge",
            unit: None,
            help: "Live allocations (made and not yet freed) from this call site, from /proc/allocinfo.",
            value: |t| Some(t.calls),
        },
        FamilyMeta {
            name: "allocinfo_inaccurate",
            kind: "gauge",
            unit: None,
            help: "1 when the kernel marked this site's counters accurate:no (some allocations were not counted).",
            value: |t| t.inaccurate.then_some(1),
        },
    ];
    if with_inaccurate {
        &ALL
    } else {
        &ALL[..2]
    }
}

/// A label value: text, or a number written without allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelValue<'a> {
    Text(&'a str),
    Number(u32),
}

impl std::fmt::Display for LabelValue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelValue::Text(s) => f.write_str(s),
            LabelValue::Number(n) => write!(f, "{n}"),
        }
    }
}

/// The labels of a series, in the order they are printed.
pub fn labels<'a>(
    s: &Series<'a>,
    release: Option<&'a str>,
) -> impl Iterator<Item = (&'static str, LabelValue<'a>)> {
    [
        Some(("function", LabelValue::Text(s.function))),
        Some(("file", LabelValue::Text(s.file))),
        s.line.map(|l| ("line", LabelValue::Number(l))),
        Some(("module", LabelValue::Text(s.module.unwrap_or("")))),
        s.node.map(|n| ("node", LabelValue::Number(n))),
        release.map(|r| ("release", LabelValue::Text(r))),
    ]
    .into_iter()
    .flatten()
}

/// Writes a label value with backslash, double quote and line feed escaped (the same in both
/// formats).
fn write_escaped(out: &mut impl Write, value: &str) -> io::Result<()> {
    let mut rest = value.as_bytes();
    while let Some(i) = rest.iter().position(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.write_all(&rest[..i])?;
        out.write_all(match rest[i] {
            b'\\' => b"\\\\",
            b'"' => b"\\\"",
            _ => b"\\n",
        })?;
        rest = &rest[i + 1..];
    }
    out.write_all(rest)
}

/// Escapes a label value, as [`write_escaped`] writes it.
pub fn escape_label(value: &str) -> String {
    let mut out = Vec::with_capacity(value.len());
    // Writing to a Vec cannot fail, and escaping keeps UTF-8 valid.
    let _ = write_escaped(&mut out, value);
    String::from_utf8_lossy(&out).into_owned()
}

/// Escapes HELP text: Prometheus escapes backslash and line feed; OpenMetrics also double quote.
fn escape_help(text: &str, format: TextFormat) -> String {
    match format {
        TextFormat::OpenMetrics => escape_label(text),
        TextFormat::Prometheus => text.replace('\\', "\\\\").replace('\n', "\\n"),
    }
}

/// How to write an exposition.
#[derive(Clone, Copy, Debug)]
pub struct Exposition<'r> {
    pub format: TextFormat,
    /// The source line as a label (`--line-label`).
    pub line_label: bool,
    /// The kernel release label, when known.
    pub release: Option<&'r str>,
    /// Whether to write `allocinfo_inaccurate`.
    pub with_inaccurate: bool,
}

impl Exposition<'_> {
    /// Writes every family of the series of `sel`, which must be in series order.
    pub fn write(&self, sel: &Selection, out: &mut impl Write) -> io::Result<()> {
        let mut number = itoa::Buffer::new();
        for f in families(self.with_inaccurate) {
            writeln!(
                out,
                "# HELP {} {}",
                f.name,
                escape_help(f.help, self.format)
            )?;
            writeln!(out, "# TYPE {} {}", f.name, f.kind)?;
            if let (TextFormat::OpenMetrics, Some(unit)) = (self.format, f.unit) {
                writeln!(out, "# UNIT {} {unit}", f.name)?;
            }
            for s in sel.series(self.line_label) {
                let Some(value) = f.value(&s.totals) else {
                    continue;
                };
                out.write_all(f.name.as_bytes())?;
                let mut sep = b"{".as_slice();
                for (name, v) in labels(&s, self.release) {
                    out.write_all(sep)?;
                    out.write_all(name.as_bytes())?;
                    out.write_all(b"=\"")?;
                    match v {
                        LabelValue::Text(t) => write_escaped(out, t)?,
                        LabelValue::Number(n) => out.write_all(number.format(n).as_bytes())?,
                    }
                    out.write_all(b"\"")?;
                    sep = b",";
                }
                out.write_all(b"} ")?;
                out.write_all(number.format(value).as_bytes())?;
                out.write_all(b"\n")?;
            }
        }
        if self.format == TextFormat::OpenMetrics {
            out.write_all(b"# EOF\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape_label(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape_label("x\ny\n"), "x\\ny\\n");
        assert_eq!(escape_label("plain"), "plain");
        assert_eq!(
            escape_help("a\\b\n\"", TextFormat::Prometheus),
            "a\\\\b\\n\""
        );
        assert_eq!(escape_help("\"", TextFormat::OpenMetrics), "\\\"");
    }
}
