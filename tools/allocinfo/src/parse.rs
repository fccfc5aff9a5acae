// SPDX-License-Identifier: GPL-2.0
//! A strict parser for /proc/allocinfo text (versions 1.0 and 2.0) and for snapshot files.
//!
//! Rows are printed by the kernel as `%12lli %8llu <tag info> \n`: a field wider than its width pushes
//! the rest of the line right instead of being cut, so the parser reads whitespace-separated tokens but
//! checks that the padding is exactly what printf would have produced.

use std::fmt;

use crate::nodes::{NodeProfile, NodeRow};
use crate::profile::{Profile, Row, RowRef, SnapshotMeta, TagRef, Version};

/// The first line of a snapshot file, before the allocinfo header.
pub const SNAPSHOT_PREFIX: &str = "# snapshot ";
/// The second header line, byte for byte.
pub const COLUMNS_HEADER: &str = "#     <size>  <calls> <tag info>";
const VERSION_PREFIX: &str = "allocinfo - version: ";
/// The first line of /sys/kernel/debug/allocinfo_nodes, before its version and node count.
pub const NODES_PREFIX: &str = "allocinfo nodes - version: ";
/// The second header line of allocinfo_nodes, byte for byte.
pub const NODES_COLUMNS_HEADER: &str = "#     <size>  <calls> <node> <tag info>";
const SIZE_WIDTH: usize = 12;
const CALLS_WIDTH: usize = 8;

/// Malformed input, with the 1-based line it was found on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Checks that `parse` refuses `text` on `line` with a message containing `needle`.
#[cfg(test)]
pub(crate) fn assert_refused<T: fmt::Debug>(
    parse: impl Fn(&str) -> Result<T, ParseError>,
    text: &str,
    line: usize,
    needle: &str,
) {
    match parse(text) {
        Ok(p) => panic!("accepted {text:?} as {p:?}"),
        Err(e) => {
            assert_eq!(e.line, line, "{e}");
            assert!(e.message.contains(needle), "{e} lacks {needle:?}");
        }
    }
}

/// Longest quoted piece of input in a message; more is cut, with its length given.
const QUOTE_MAX: usize = 60;

/// Input quoted for a message: in single quotes, control characters escaped (`\r`, `\u{1b}`) so
/// that they cannot garble a terminal, cut after [`QUOTE_MAX`] characters.
pub fn quote(text: &str) -> String {
    let mut out = String::from("'");
    for (i, c) in text.chars().enumerate() {
        if i == QUOTE_MAX {
            out.push_str(&format!("'... ({} bytes)", text.len()));
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

/// Longest line accepted; a kernel row is a few hundred bytes at most.
pub const MAX_LINE: usize = 64 * 1024;

/// Parses raw bytes, reporting invalid UTF-8 at the line where it occurs.
pub fn parse_bytes(data: &[u8]) -> Result<Profile, ParseError> {
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let mut parser = LineParser::default();
    if !body.is_empty() {
        for line in body.split(|&b| b == b'\n') {
            parser.feed_bytes(line)?;
        }
    }
    parser.finish()
}

/// Parses a whole /proc/allocinfo file or snapshot file.
pub fn parse(text: &str) -> Result<Profile, ParseError> {
    parse_bytes(text.as_bytes())
}

/// What a file turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// /proc/allocinfo text (or a snapshot of it).
    Sites(Profile),
    /// /sys/kernel/debug/allocinfo_nodes text.
    Nodes(NodeProfile),
}

/// Parses a whole file of either kind, telling which it was.
pub fn parse_any(text: &str) -> Result<Parsed, ParseError> {
    let mut parser = LineParser::default();
    let body = text.strip_suffix('\n').unwrap_or(text);
    if !body.is_empty() {
        for line in body.split('\n') {
            parser.feed(line)?;
        }
    }
    parser.finish_any()
}

/// Where the parser is in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Expect {
    /// A snapshot line or the version line.
    #[default]
    First,
    /// The version line after a snapshot line.
    Version,
    Columns,
    Rows,
}

/// A parser fed one line at a time, so that input is checked as it is read: a file that is not
/// allocinfo is refused at its first line, whatever follows it.
#[derive(Debug, Default)]
pub struct LineParser {
    /// Read damaged copies: CRLF line ends, rows whose trailing space was stripped, blank lines.
    lenient: bool,
    expect: Expect,
    /// Lines taken so far; the next one is `lines + 1`.
    lines: usize,
    version: Option<Version>,
    snapshot: Option<SnapshotMeta>,
    rows: Vec<Row>,
    /// The node count of an allocinfo_nodes header; None for /proc/allocinfo text.
    nodes: Option<u32>,
    node_rows: Vec<NodeRow>,
}

impl LineParser {
    /// A parser for exact kernel output, or with `lenient` for copies that went through a serial
    /// console or mail: a `\r` before each line end, stripped trailing spaces and blank lines are
    /// accepted.
    pub fn new(lenient: bool) -> Self {
        LineParser {
            lenient,
            ..LineParser::default()
        }
    }

    /// Takes one line without its `\n`.
    pub fn feed_bytes(&mut self, line: &[u8]) -> Result<(), ParseError> {
        let n = self.lines + 1;
        if line.len() > MAX_LINE {
            return err(
                n,
                format!("longer than {MAX_LINE} bytes, not an allocinfo row"),
            );
        }
        match std::str::from_utf8(line) {
            Ok(text) => self.feed(text),
            Err(_) => err(n, "invalid UTF-8"),
        }
    }

    /// Takes one line without its `\n`.
    pub fn feed(&mut self, line: &str) -> Result<(), ParseError> {
        // Taken out for the time of the call, so that the parser can be borrowed beside it.
        let mut rows = std::mem::take(&mut self.rows);
        let fed = self.feed_with(line, &mut |row| rows.push(row.to_row()));
        self.rows = rows;
        fed
    }

    /// As [`LineParser::feed_bytes`], handing a row of /proc/allocinfo text to `row` instead of
    /// keeping it ([`LineParser::finish`] then has only the rows of allocinfo_nodes text).
    pub fn feed_bytes_with(
        &mut self,
        line: &[u8],
        row: &mut dyn FnMut(RowRef<'_>),
    ) -> Result<(), ParseError> {
        let n = self.lines + 1;
        if line.len() > MAX_LINE {
            return err(
                n,
                format!("longer than {MAX_LINE} bytes, not an allocinfo row"),
            );
        }
        match std::str::from_utf8(line) {
            Ok(text) => self.feed_with(text, row),
            Err(_) => err(n, "invalid UTF-8"),
        }
    }

    /// As [`LineParser::feed`], handing a row of /proc/allocinfo text to `row` instead of
    /// keeping it.
    pub fn feed_with(
        &mut self,
        line: &str,
        row: &mut dyn FnMut(RowRef<'_>),
    ) -> Result<(), ParseError> {
        self.lines += 1;
        let n = self.lines;
        let line = if self.lenient {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.trim().is_empty() {
                return Ok(());
            }
            line
        } else {
            line
        };
        match self.expect {
            Expect::First if line.starts_with(SNAPSHOT_PREFIX) => {
                let rest = &line[SNAPSHOT_PREFIX.len()..];
                self.snapshot = Some(parse_snapshot_meta(n, rest)?);
                self.expect = Expect::Version;
            }
            Expect::First | Expect::Version if line.starts_with(NODES_PREFIX) => {
                self.nodes = Some(parse_nodes_header(n, line)?);
                // The tag info of allocinfo_nodes is that of /proc/allocinfo 2.0.
                self.version = Some(Version::V2_0);
                self.expect = Expect::Columns;
            }
            Expect::First | Expect::Version => {
                self.version = Some(parse_version(n, line)?);
                self.expect = Expect::Columns;
            }
            Expect::Columns => {
                let want = if self.nodes.is_some() {
                    NODES_COLUMNS_HEADER
                } else {
                    COLUMNS_HEADER
                };
                if line != want {
                    return err(n, format!("expected column header '{want}'"));
                }
                self.expect = Expect::Rows;
            }
            Expect::Rows => {
                let version = self.version.unwrap_or(Version::V1_0);
                let restored;
                let line = if self.lenient && !line.ends_with(' ') {
                    restored = format!("{line} ");
                    restored.as_str()
                } else {
                    line
                };
                let at = |message| ParseError { line: n, message };
                match self.nodes {
                    Some(nodes) => self
                        .node_rows
                        .push(parse_node_row(line, nodes).map_err(at)?),
                    None => row(parse_row(line, version).map_err(at)?),
                }
            }
        }
        Ok(())
    }

    /// The profile, once the whole input has been fed; allocinfo_nodes text gives each tag's
    /// nodes summed into one row ([`NodeProfile::to_profile`]).
    pub fn finish(self) -> Result<Profile, ParseError> {
        Ok(match self.finish_any()? {
            Parsed::Sites(p) => p,
            Parsed::Nodes(p) => p.to_profile(),
        })
    }

    /// The profile or per-node profile, once the whole input has been fed.
    pub fn finish_any(self) -> Result<Parsed, ParseError> {
        match (self.expect, self.version, self.nodes) {
            (Expect::Rows, _, Some(nodes)) => Ok(Parsed::Nodes(NodeProfile {
                nodes,
                snapshot: self.snapshot,
                rows: self.node_rows,
            })),
            (Expect::Rows, Some(version), None) => Ok(Parsed::Sites(Profile {
                version,
                snapshot: self.snapshot,
                rows: self.rows,
            })),
            _ if self.lines == 0 => err(1, format!("empty input, expected '{VERSION_PREFIX}1.0'")),
            _ => err(self.lines + 1, "unexpected end of input inside the header"),
        }
    }
}

/// A hint for a line that ends in a carriage return: the file went through DOS line ends.
fn crlf_hint(line: &str) -> &'static str {
    if line.ends_with('\r') {
        "; the file has CRLF line ends, which --lenient reads"
    } else {
        ""
    }
}

fn parse_version(n: usize, line: &str) -> Result<Version, ParseError> {
    let Some(v) = line.strip_prefix(VERSION_PREFIX) else {
        return err(n, format!("expected '{VERSION_PREFIX}1.0' or '2.0'"));
    };
    match v {
        "1.0" => Ok(Version::V1_0),
        "2.0" => Ok(Version::V2_0),
        other => err(
            n,
            format!(
                "unsupported version {} (this tool reads 1.0 and 2.0){}",
                quote(other),
                crlf_hint(line)
            ),
        ),
    }
}

/// `allocinfo nodes - version: 1.0, nodes: N`: the number of node ids, at least 1.
fn parse_nodes_header(n: usize, line: &str) -> Result<u32, ParseError> {
    let rest = &line[NODES_PREFIX.len()..];
    let Some((version, count)) = rest.split_once(", nodes: ") else {
        return err(
            n,
            format!(
                "expected '{NODES_PREFIX}1.0, nodes: <count>'{}",
                crlf_hint(line)
            ),
        );
    };
    if version != "1.0" {
        return err(
            n,
            format!(
                "unsupported allocinfo nodes version {} (this tool reads 1.0)",
                quote(version)
            ),
        );
    }
    let bad = |what: String| err(n, format!("{what}{}", crlf_hint(line)));
    if let Err(e) = check_integer(count, false, "node count") {
        return bad(e);
    }
    match count.parse::<u32>() {
        Ok(0) => bad("node count 0: a machine has at least one node".to_string()),
        Ok(c) => Ok(c),
        Err(e) => bad(format!("node count {}: {e}", quote(count))),
    }
}

fn parse_snapshot_meta(n: usize, rest: &str) -> Result<SnapshotMeta, ParseError> {
    let mut unix_ms = None;
    let mut source = None;
    for token in rest.split(' ') {
        let Some((key, value)) = token.split_once(':') else {
            return err(
                n,
                format!("snapshot field {} is not key:value", quote(token)),
            );
        };
        match key {
            "unix_ms" => match value.parse::<i64>() {
                Ok(v) => unix_ms = Some(v),
                Err(_) => {
                    return err(
                        n,
                        format!("snapshot unix_ms {} is not an integer", quote(value)),
                    )
                }
            },
            "source" => source = Some(value.to_string()),
            // `time` repeats unix_ms for people; unknown keys are left for later versions.
            _ => {}
        }
    }
    match unix_ms {
        Some(unix_ms) => Ok(SnapshotMeta { unix_ms, source }),
        None => err(n, "snapshot line lacks unix_ms:<milliseconds>"),
    }
}

/// Splits off a right-aligned numeric field of at least `width` columns followed by one space.
fn split_field<'a>(s: &'a str, width: usize, what: &str) -> Result<(&'a str, &'a str), String> {
    let pad = s.len() - s.trim_start_matches(' ').len();
    // Bytes, not chars: the first byte of a multi-byte char is not ASCII either.
    let digits_end = s.as_bytes()[pad..]
        .iter()
        .position(|&b| !(b.is_ascii_digit() || b == b'-'))
        .map_or(s.len(), |i| pad + i);
    let token = &s[pad..digits_end];
    if token.is_empty() {
        return Err(format!("expected {what} at column {}", pad + 1));
    }
    if digits_end < width {
        return Err(format!(
            "{what} {} is not right-aligned in {width} columns",
            quote(token)
        ));
    }
    if digits_end > width && pad > 0 {
        return Err(format!(
            "{what} {} is padded past {width} columns",
            quote(token)
        ));
    }
    match s[digits_end..].strip_prefix(' ') {
        Some(rest) => Ok((token, rest)),
        None => Err(format!("expected a space after {what} {}", quote(token))),
    }
}

/// Rejects what printf's %lli/%llu never print: leading zeros, `-0`, a lone `-`.
fn check_integer(token: &str, signed: bool, what: &str) -> Result<(), String> {
    let digits = match token.strip_prefix('-') {
        Some(d) if signed => d,
        Some(_) => return Err(format!("{what} {} must not be negative", quote(token))),
        None => token,
    };
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && !(token.starts_with('-') && digits == "0");
    if canonical {
        Ok(())
    } else {
        Err(format!("{what} {} is not a decimal integer", quote(token)))
    }
}

/// The size field that starts every row: right-aligned in 12 columns, signed.
fn parse_size_field(line: &str) -> Result<(i64, &str), String> {
    let (size_tok, rest) = split_field(line, SIZE_WIDTH, "size")?;
    check_integer(size_tok, true, "size")?;
    let bytes = size_tok
        .parse::<i64>()
        .map_err(|e| format!("size {}: {e}", quote(size_tok)))?;
    Ok((bytes, rest))
}

/// The calls field after the size: right-aligned in 8 columns; signed only where `signed`.
fn parse_calls_field<T>(rest: &str, signed: bool) -> Result<(T, &str), String>
where
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    let (calls_tok, rest) = split_field(rest, CALLS_WIDTH, "calls")?;
    check_integer(calls_tok, signed, "calls")?;
    let calls = calls_tok
        .parse::<T>()
        .map_err(|e| format!("calls {}: {e}", quote(calls_tok)))?;
    Ok((calls, rest))
}

fn parse_row(line: &str, version: Version) -> Result<RowRef<'_>, String> {
    let (bytes, rest) = parse_size_field(line)?;

    let (calls, rest) = parse_calls_field::<u64>(rest, false)?;

    let tag = parse_tag_info(line, rest, version)?;
    Ok(RowRef { bytes, calls, tag })
}

/// A row of allocinfo_nodes: `%12lli %8lli N<node> <tag info> `, the tag info as in
/// /proc/allocinfo 2.0. `nodes` is the header's node count; a row holding nothing is refused
/// (the kernel prints only the nodes holding something).
fn parse_node_row(line: &str, nodes: u32) -> Result<NodeRow, String> {
    let (bytes, rest) = parse_size_field(line)?;

    let (calls, rest) = parse_calls_field::<i64>(rest, true)?;

    let (node_tok, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let Some(digits) = node_tok.strip_prefix('N') else {
        return Err(format!(
            "expected N<node> after calls, found {}",
            quote(node_tok)
        ));
    };
    check_integer(digits, false, "node")?;
    let node = digits
        .parse::<u32>()
        .map_err(|e| format!("node {}: {e}", quote(node_tok)))?;
    if node >= nodes {
        return Err(format!(
            "node {} is not below the header's node count {nodes}",
            quote(node_tok)
        ));
    }
    if rest.is_empty() {
        return Err(format!("missing tag info after {}", quote(node_tok)));
    }
    let tag = parse_tag_info(line, rest, Version::V2_0)?;
    if bytes == 0 && calls == 0 {
        return Err(
            "row holds nothing (0 bytes, 0 calls): the kernel prints only the nodes \
                    holding something"
                .to_string(),
        );
    }
    let row = RowRef {
        bytes,
        // Signed, kept as /proc/allocinfo's rows keep theirs: two's complement in a u64.
        calls: u64::from_ne_bytes(calls.to_ne_bytes()),
        tag,
    };
    Ok(NodeRow {
        node,
        row: row.to_row(),
    })
}

/// The space-separated tokens of a tag info, refusing an empty one (a double space).
struct Tokens<'a> {
    /// What follows the last token taken; None once the last one was.
    rest: Option<&'a str>,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Result<Option<&'a str>, String> {
        let Some(rest) = self.rest else {
            return Ok(None);
        };
        let (token, more) = match rest.split_once(' ') {
            Some((t, more)) => (t, Some(more)),
            None => (rest, None),
        };
        self.rest = more;
        if token.is_empty() {
            return Err("unexpected double space in tag info".to_string());
        }
        Ok(Some(token))
    }
}

/// The tag info after the counters (`rest`, with its trailing space) of the row `line`:
/// `file:line [module] func:name`, then `key:value` fields where `version` has them.
fn parse_tag_info<'a>(line: &str, rest: &'a str, version: Version) -> Result<TagRef<'a>, String> {
    let Some(tag) = rest.strip_suffix(' ') else {
        return Err(if line.ends_with('\r') {
            format!("row must end with a space{}", crlf_hint(line))
        } else {
            "row must end with a space (--lenient reads copies whose trailing spaces were \
             stripped)"
                .to_string()
        });
    };
    if tag.is_empty() {
        return Err("missing tag info after calls".to_string());
    }
    let mut tokens = Tokens { rest: Some(tag) };

    let file_line = tokens.next()?.unwrap_or_default();
    let Some((file, line_no)) = file_line.rsplit_once(':') else {
        return Err(format!("expected file:line, found {}", quote(file_line)));
    };
    if file.is_empty() {
        return Err(format!("empty file name in {}", quote(file_line)));
    }
    check_integer(line_no, false, "line number")?;
    let line_no = line_no
        .parse::<u32>()
        .map_err(|e| format!("line number {}: {e}", quote(line_no)))?;

    let mut token = tokens.next()?;
    let mut module = None;
    if let Some(t) = token.filter(|t| t.starts_with('[')) {
        let name = t
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .filter(|m| !m.is_empty() && !m.contains(['[', ']']))
            .ok_or_else(|| format!("malformed module {}, expected [name]", quote(t)))?;
        module = Some(name);
        token = tokens.next()?;
    }

    let function = match token.and_then(|t| t.strip_prefix("func:")) {
        Some(f) if !f.is_empty() => f,
        _ => {
            return Err(format!(
                "expected func:<name>, found {}",
                quote(token.unwrap_or("end of line"))
            ))
        }
    };

    // The fields are checked here and kept as their text: a row needs no allocation to parse.
    let fields = tokens.rest.unwrap_or_default();
    // Bytes of `fields` checked so far.
    let mut checked = 0;
    while let Some(t) = tokens.next()? {
        if !version.has_fields() {
            return Err(format!(
                "field {} after func: needs version 2.0 (header says {})",
                quote(t),
                version.as_str()
            ));
        }
        let (key, _) = parse_field(t)?;
        if fields[..checked]
            .split(' ')
            .any(|f| f.split_once(':').is_some_and(|(k, _)| k == key))
        {
            return Err(format!("duplicate field {}", quote(key)));
        }
        checked = fields.len() - tokens.rest.map_or(0, |r| r.len() + 1);
    }

    Ok(TagRef {
        file,
        line: line_no,
        module,
        function,
        fields,
    })
}

fn parse_field(t: &str) -> Result<(&str, &str), String> {
    let Some((key, value)) = t.split_once(':') else {
        return Err(format!("field {} is not key:value", quote(t)));
    };
    let key_ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !key_ok {
        return Err(format!("field {} has a malformed key", quote(t)));
    }
    if value.is_empty() {
        return Err(format!("field {} has an empty value", quote(t)));
    }
    if key == "accurate" && value != "yes" && value != "no" {
        return Err(format!(
            "{} must be accurate:yes or accurate:no",
            quote(&format!("accurate:{value}"))
        ));
    }
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD1: &str = "allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n";
    const HEAD2: &str = "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n";

    fn one(head: &str, row: &str) -> Result<Row, ParseError> {
        let mut p = parse(&format!("{head}{row}\n"))?;
        Ok(p.rows.remove(0))
    }

    fn fails_on(text: &str, line: usize, needle: &str) {
        assert_refused(parse, text, line, needle);
    }

    #[test]
    fn builtin_and_module_rows() {
        let r = one(
            HEAD1,
            "     4194304     1024 mm/slub.c:2450 func:alloc_slab_page ",
        )
        .unwrap();
        assert_eq!((r.bytes, r.calls), (4194304, 1024));
        assert_eq!(r.site.file, "mm/slub.c");
        assert_eq!(r.site.line, 2450);
        assert_eq!(r.site.module, None);
        assert_eq!(r.site.function, "alloc_slab_page");
        let r = one(
            HEAD1,
            "        8192        2 fs/xfs/xfs_buf.c:390 [xfs] func:xfs_buf_alloc_pages ",
        )
        .unwrap();
        assert_eq!(r.site.module.as_deref(), Some("xfs"));
    }

    #[test]
    fn wide_fields_push_columns() {
        let r = one(HEAD1, "-12345678901234 123456789 a.c:1 func:f ").unwrap();
        assert_eq!((r.bytes, r.calls), (-12345678901234, 123456789));
        let r = one(HEAD1, "123456789012        0 a.c:1 func:f ").unwrap();
        assert_eq!(r.bytes, 123456789012);
    }

    #[test]
    fn negative_size() {
        let r = one(HEAD1, "       -4096        0 mm/migrate.c:7 func:f ").unwrap();
        assert_eq!(r.bytes, -4096);
    }

    #[test]
    fn v2_fields() {
        let r = one(
            HEAD2,
            "          64        1 a.c:1 func:f accurate:no future:3 ",
        )
        .unwrap();
        assert!(!r.accurate());
        assert_eq!(r.field("future"), Some("3"));
        let r = one(HEAD2, "          64        1 a.c:1 func:f ").unwrap();
        assert!(r.accurate());
    }

    #[test]
    fn header_errors() {
        fails_on("", 1, "empty input");
        fails_on("hello\n", 1, "expected 'allocinfo - version");
        fails_on("allocinfo - version: 3.0\n", 1, "unsupported version '3.0'");
        fails_on("allocinfo - version: 1.0\n", 2, "end of input");
        fails_on(
            "allocinfo - version: 1.0\n# size calls\n",
            2,
            "column header",
        );
    }

    #[test]
    fn row_errors() {
        let bad = [
            ("    4096        1 a.c:1 func:f ", "not right-aligned in 12"),
            (
                "        4096      1 a.c:1 func:f ",
                "not right-aligned in 8",
            ),
            ("        4096        1 a.c:1 func:f", "end with a space"),
            (
                "        4096       -1 a.c:1 func:f ",
                "must not be negative",
            ),
            (
                "           0x10        1 a.c:1 func:f ",
                "expected a space after size",
            ),
            ("        4096        1 a.c func:f ", "expected file:line"),
            ("        4096        1 a.c:x func:f ", "line number 'x'"),
            ("        4096        1 a.c:1 f ", "expected func:"),
            ("        4096        1 a.c:1 [m func:f ", "malformed module"),
            ("        4096        1 a.c:1  func:f ", "double space"),
            (
                "        4096        1 a.c:1 func:f accurate:no ",
                "needs version 2.0",
            ),
            ("        -0        1 a.c:1 func:f ", "not right-aligned"),
            (
                "          -0        1 a.c:1 func:f ",
                "not a decimal integer",
            ),
            (
                "        0010        1 a.c:1 func:f ",
                "not a decimal integer",
            ),
            (" 123456789012        1 a.c:1 func:f ", "padded past 12"),
            ("99999999999999999999        1 a.c:1 func:f ", "size '"),
            ("", "expected size"),
        ];
        for (row, needle) in bad {
            fails_on(&format!("{HEAD1}{row}\n"), 3, needle);
        }
        fails_on(
            &format!("{HEAD2}           1        1 a.c:1 func:f accurate:maybe \n"),
            3,
            "accurate:yes",
        );
        fails_on(
            &format!("{HEAD2}           1        1 a.c:1 func:f Key:v \n"),
            3,
            "malformed key",
        );
        fails_on(
            &format!("{HEAD2}           1        1 a.c:1 func:f k:v k:w \n"),
            3,
            "duplicate",
        );
    }

    #[test]
    fn error_line_numbers_count_snapshot_line() {
        let text = format!(
            "# snapshot time:x unix_ms:5\n{HEAD1}           1        1 a.c:1 func:f \nbad\n"
        );
        fails_on(&text, 5, "expected size");
        let p = parse(&format!(
            "# snapshot unix_ms:5 source:/proc/allocinfo\n{HEAD1}"
        ))
        .unwrap();
        assert_eq!(p.snapshot.map(|s| s.unix_ms), Some(5));
        fails_on(&format!("# snapshot time:x\n{HEAD1}"), 1, "lacks unix_ms");
    }

    #[test]
    fn invalid_utf8_line() {
        let mut data = HEAD1.as_bytes().to_vec();
        data.extend_from_slice(b"           1        1 a\xff.c:1 func:f \n");
        assert_eq!(parse_bytes(&data).unwrap_err().line, 3);
    }

    const NODES2: &str = "allocinfo nodes - version: 1.0, nodes: 2\n\
                          #     <size>  <calls> <node> <tag info>\n";

    fn nodes_fail_on(text: &str, line: usize, needle: &str) {
        assert_refused(parse_any, text, line, needle);
    }

    #[test]
    fn node_rows() {
        let text = format!(
            "{NODES2}\
             \x20      16384        4 N0 mm/slub.c:2443 func:alloc_slab_page \n\
             \x20       8192       -2 N1 mm/slub.c:2443 func:alloc_slab_page \n\
             \x20      -4096        0 N1 a.c:7 [m] func:f accurate:no \n\
             -12345678901234 123456789 N0 b.c:1 func:g \n"
        );
        let Ok(Parsed::Nodes(p)) = parse_any(&text) else {
            panic!("not a nodes file");
        };
        assert_eq!(p.nodes, 2);
        let got: Vec<_> = p
            .rows
            .iter()
            .map(|r| (r.node, r.row.bytes, r.row.live_calls(), r.row.tag_text()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    0,
                    16384,
                    4,
                    "mm/slub.c:2443 func:alloc_slab_page".to_string()
                ),
                (
                    1,
                    8192,
                    -2,
                    "mm/slub.c:2443 func:alloc_slab_page".to_string()
                ),
                (1, -4096, 0, "a.c:7 [m] func:f accurate:no".to_string()),
                (0, -12345678901234, 123456789, "b.c:1 func:g".to_string()),
            ]
        );
        let lines: String = p.rows.iter().map(|r| r.line()).collect();
        assert_eq!(format!("{NODES2}{lines}"), text, "rows print back as read");
        // Read as a profile, the nodes of each tag are summed.
        let summed = parse(&text).unwrap();
        assert_eq!(summed.rows.len(), 3);
        assert_eq!(
            (summed.rows[0].bytes, summed.rows[0].live_calls()),
            (24576, 2)
        );
        // No rows at all is a machine with nothing on any node.
        let Ok(Parsed::Nodes(p)) = parse_any(NODES2) else {
            panic!("not a nodes file");
        };
        assert!(p.rows.is_empty());
        assert!(matches!(parse_any(HEAD2), Ok(Parsed::Sites(_))));
    }

    #[test]
    fn node_header_errors() {
        let cols = "#     <size>  <calls> <node> <tag info>\n";
        for (first, needle) in [
            (
                "allocinfo nodes - version: 1.0",
                "expected 'allocinfo nodes - version: 1.0, nodes:",
            ),
            (
                "allocinfo nodes - version: 2.0, nodes: 2",
                "unsupported allocinfo nodes version '2.0'",
            ),
            ("allocinfo nodes - version: 1.0, nodes: 0", "node count 0"),
            (
                "allocinfo nodes - version: 1.0, nodes: two",
                "node count 'two' is not a decimal",
            ),
            (
                "allocinfo nodes - version: 1.0, nodes: 02",
                "not a decimal integer",
            ),
            (
                "allocinfo nodes - version: 1.0, nodes: -1",
                "must not be negative",
            ),
            (
                "allocinfo nodes - version: 1.0, nodes: 99999999999",
                "node count '99999999999'",
            ),
            ("allocinfo nodes - version: 1.0, nodes: 2\r", "--lenient"),
        ] {
            nodes_fail_on(&format!("{first}\n{cols}"), 1, needle);
        }
        // The column header of allocinfo_nodes, not that of /proc/allocinfo, and vice versa.
        nodes_fail_on(
            "allocinfo nodes - version: 1.0, nodes: 2\n#     <size>  <calls> <tag info>\n",
            2,
            "expected column header '#     <size>  <calls> <node> <tag info>'",
        );
        nodes_fail_on(
            &format!("allocinfo - version: 2.0\n{cols}"),
            2,
            "expected column header '#     <size>  <calls> <tag info>'",
        );
        nodes_fail_on(
            "allocinfo nodes - version: 1.0, nodes: 2\n",
            2,
            "end of input",
        );
    }

    #[test]
    fn node_row_errors() {
        let bad = [
            (
                "       16384        4 mm/a.c:1 func:f ",
                "expected N<node> after calls, found 'mm/a.c:1'",
            ),
            (
                "       16384        4 0 mm/a.c:1 func:f ",
                "expected N<node> after calls, found '0'",
            ),
            (
                "       16384        4 Nx mm/a.c:1 func:f ",
                "node 'x' is not a decimal integer",
            ),
            (
                "       16384        4 N mm/a.c:1 func:f ",
                "node '' is not a decimal integer",
            ),
            (
                "       16384        4 N01 mm/a.c:1 func:f ",
                "not a decimal integer",
            ),
            (
                "       16384        4 N-1 mm/a.c:1 func:f ",
                "must not be negative",
            ),
            (
                "       16384        4 N2 mm/a.c:1 func:f ",
                "node 'N2' is not below the header's node count 2",
            ),
            (
                "       16384        4 N99999999999 a.c:1 func:f ",
                "node 'N99999999999'",
            ),
            ("       16384        4 N0 ", "missing tag info after 'N0'"),
            ("       16384        4 N0", "missing tag info after 'N0'"),
            (
                "       16384        4 N0 mm/a.c:1 func:f",
                "end with a space",
            ),
            (
                "       16384        4  N0 mm/a.c:1 func:f ",
                "expected N<node> after calls, found ''",
            ),
            ("       16384        4 N0 mm/a.c:1 f ", "expected func:"),
            (
                "       16384        4 N0 mm/a.c:1 func:f accurate:maybe ",
                "accurate:yes",
            ),
            (
                "           0        0 N0 mm/a.c:1 func:f ",
                "row holds nothing",
            ),
            (
                "     16384        4 N0 mm/a.c:1 func:f ",
                "not right-aligned in 12",
            ),
            (
                "       16384      4 N0 mm/a.c:1 func:f ",
                "not right-aligned in 8",
            ),
            (
                "       16384       -0 N0 mm/a.c:1 func:f ",
                "calls '-0' is not a decimal",
            ),
        ];
        for (row, needle) in bad {
            nodes_fail_on(&format!("{NODES2}{row}\n"), 3, needle);
        }
        // --lenient: CRLF line ends and stripped trailing spaces, as for /proc/allocinfo.
        let mut p = LineParser::new(true);
        for line in [
            "allocinfo nodes - version: 1.0, nodes: 1\r",
            "#     <size>  <calls> <node> <tag info>\r",
            "          64        1 N0 a.c:1 func:f\r",
            "",
        ] {
            p.feed(line).unwrap();
        }
        assert!(matches!(p.finish_any(), Ok(Parsed::Nodes(n)) if n.rows.len() == 1));
    }

    #[test]
    fn missing_final_newline_is_accepted() {
        let p = parse(&format!("{HEAD1}           1        1 a.c:1 func:f ")).unwrap();
        assert_eq!(p.rows.len(), 1);
    }
}
