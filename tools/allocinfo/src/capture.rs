// SPDX-License-Identifier: GPL-2.0
//! The context-capture report (/sys/kernel/debug/allocinfo_capture, version 1.0): its model, a
//! strict line parser, and the control commands written to the same file.
//!
//! The report is a header line, then per armed site a `site` line, its stacks (a `stack` line
//! followed by its frames, innermost first, indented four spaces) and, when not zero, an `other`
//! line for the stacks beyond the kernel's per-site cap:
//!
//! ```text
//! # allocinfo capture 1.0: 1 of 8 sites armed, 5 of 16384 records live
//! site lib/a.c:270 func:wrap module:m bytes:448 calls:5 captured:5 uncaptured:0 stacks:1
//!   stack bytes:448 calls:5
//!     slab_alloc_node+0x7f/0xe0
//!     wrap+0x4c/0x60 [m]
//! ```
//!
//! Besides the shape of each line, the parser checks what the kernel guarantees of one read: as
//! many sites as the header says are armed, as many stacks per site as its `stacks:` says, each
//! stack with at least one frame, and `captured:` equal to the calls of its stacks and `other`.

use std::fmt;

use serde::Serialize;

use crate::parse::{quote, ParseError, MAX_LINE};
use crate::profile::Site;

/// The debugfs file the kernel offers for context capture.
pub const CAPTURE_FILE: &str = "/sys/kernel/debug/allocinfo_capture";
const HEADER_PREFIX: &str = "# allocinfo capture ";
/// The longest command the kernel takes in one write (its buffer is 256 bytes, NUL excluded).
pub const MAX_COMMAND: usize = 255;

/// One frame of a captured stack, as the kernel's `%pS` printed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Frame {
    /// The frame exactly as printed: `vfs_write+0xd6/0x1f0`, `wrap+0x4c/0x60 [m]`, or a bare
    /// address `0xffffffffc0a01234` when the kernel found no symbol.
    pub text: String,
    /// The symbol (`vfs_write`); for a bare address, the address text itself.
    pub function: String,
    /// Offset into the symbol and the symbol's size; none for a bare address.
    pub offset: Option<u64>,
    pub size: Option<u64>,
    /// The module of the symbol; none for built-in code.
    pub module: Option<String>,
}

impl Frame {
    /// The function as a stack viewer should show it: `wrap [m]` for module code.
    pub fn display_function(&self) -> String {
        match &self.module {
            Some(m) => format!("{} [{m}]", self.function),
            None => self.function.clone(),
        }
    }
}

/// Live bytes and calls of one stack (or of the `other` bucket, which has no frames).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stack {
    pub bytes: i64,
    pub calls: i64,
    /// Innermost first, as the kernel prints them.
    pub frames: Vec<Frame>,
}

/// One armed site and what its records hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CaptureSite {
    #[serde(flatten)]
    pub site: Site,
    /// The site's row: every live allocation, including those made before arming.
    pub bytes: i64,
    /// As printed (`%llu`-style); see [`CaptureSite::live_calls`].
    pub calls: u64,
    /// Live calls that have a record (the stacks and `other` together).
    pub captured: i64,
    /// Allocations since arming that got no record (record cap, or no memory for one).
    pub uncaptured: u64,
    /// The stacks, in the kernel's order (largest first).
    pub stacks: Vec<Stack>,
    /// Stacks beyond the kernel's per-site cap, and allocations without a stack.
    pub other: Option<Stack>,
    /// The line of the `site` line in the input (1-based).
    #[serde(skip)]
    pub line_no: usize,
}

impl CaptureSite {
    /// The live calls of the site's row, a wrapped (negative) count given back as negative.
    pub fn live_calls(&self) -> i64 {
        i64::from_ne_bytes(self.calls.to_ne_bytes())
    }

    /// Bytes held by captured allocations: the stacks and `other`.
    pub fn captured_bytes(&self) -> i128 {
        self.stacks
            .iter()
            .chain(self.other.as_ref())
            .map(|s| i128::from(s.bytes))
            .sum()
    }
}

/// A whole report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Armed sites and the kernel's cap on them.
    pub armed: usize,
    pub max_sites: usize,
    /// Live records, all sites together, and the kernel's cap on them.
    pub records: usize,
    pub max_records: usize,
    pub sites: Vec<CaptureSite>,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

/// A decimal integer as the kernel's `{}` prints it: no sign unless `signed`, no leading zeros.
fn integer<T: std::str::FromStr>(token: &str, signed: bool, what: &str) -> Result<T, String> {
    let digits = match token.strip_prefix('-') {
        Some(d) if signed => d,
        Some(_) => return Err(format!("{what} {} must not be negative", quote(token))),
        None => token,
    };
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && !(token.starts_with('-') && digits == "0");
    if !canonical {
        return Err(format!("{what} {} is not a decimal integer", quote(token)));
    }
    token
        .parse()
        .map_err(|_| format!("{what} {} is out of range", quote(token)))
}

/// Splits `key:value` tokens off `text` in the given order and parses their values.
fn keyed<'a>(text: &'a str, key: &str) -> Result<(&'a str, &'a str), String> {
    let (token, rest) = text.split_once(' ').unwrap_or((text, ""));
    match token.strip_prefix(key).and_then(|t| t.strip_prefix(':')) {
        Some(v) => Ok((v, rest)),
        None => Err(format!(
            "expected {key}:<number>, found {}",
            quote(if token.is_empty() {
                "end of line"
            } else {
                token
            })
        )),
    }
}

/// `bytes:N calls:N` of a `stack` or `other` line.
fn bytes_calls(text: &str) -> Result<(i64, i64), String> {
    let (b, rest) = keyed(text, "bytes")?;
    let (c, rest) = keyed(rest, "calls")?;
    if !rest.is_empty() {
        return Err(format!("unexpected {} after calls", quote(rest)));
    }
    Ok((integer(b, true, "bytes")?, integer(c, true, "calls")?))
}

fn parse_header(line: &str) -> Result<(usize, usize, usize, usize), String> {
    let Some(rest) = line.strip_prefix(HEADER_PREFIX) else {
        let hint = if line.starts_with("allocinfo - version: ") {
            "; this is /proc/allocinfo text, which top and the other commands read"
        } else {
            ""
        };
        return Err(format!(
            "expected '{HEADER_PREFIX}1.0: ...': not a context-capture report (the text of \
             {CAPTURE_FILE}){hint}"
        ));
    };
    let (version, rest) = rest.split_once(": ").unwrap_or((rest, ""));
    if version != "1.0" {
        return Err(format!(
            "unsupported capture report version {} (this tool reads 1.0)",
            quote(version)
        ));
    }
    let words: Vec<&str> = rest.split(' ').collect();
    let shape = [
        "", "of", "", "sites", "armed,", "", "of", "", "records", "live",
    ];
    if words.len() != shape.len()
        || words
            .iter()
            .zip(shape)
            .any(|(w, s)| !s.is_empty() && *w != s)
    {
        return Err(format!(
            "expected 'N of N sites armed, N of N records live', found {}",
            quote(rest)
        ));
    }
    Ok((
        integer(words[0], false, "armed sites")?,
        integer(words[2], false, "site cap")?,
        integer(words[5], false, "live records")?,
        integer(words[7], false, "record cap")?,
    ))
}

/// `FILE:LINE func:NAME [module:NAME] bytes:N calls:N captured:N uncaptured:N stacks:N`, after
/// `site `. Returns the site and how many stacks it announces.
fn parse_site(text: &str, line_no: usize) -> Result<(CaptureSite, usize), String> {
    // The five counters come last; read them from the right so that nothing before them has to
    // be free of spaces.
    let mut tail = text.rsplitn(6, ' ');
    let mut counters = [""; 5];
    for slot in counters.iter_mut().rev() {
        *slot = tail.next().unwrap_or("");
    }
    let head = tail.next().unwrap_or("");
    let mut values = [""; 5];
    for ((slot, token), key) in
        values
            .iter_mut()
            .zip(counters)
            .zip(["bytes", "calls", "captured", "uncaptured", "stacks"])
    {
        *slot = keyed(token, key)?.0;
    }
    let (file_line, rest) = head.split_once(' ').unwrap_or((head, ""));
    let Some((file, line)) = file_line.rsplit_once(':') else {
        return Err(format!("expected FILE:LINE, found {}", quote(file_line)));
    };
    if file.is_empty() {
        return Err(format!("empty file name in {}", quote(file_line)));
    }
    let line: u32 = integer(line, false, "line number")?;
    let Some(rest) = rest.strip_prefix("func:") else {
        return Err(format!(
            "expected func:<name> after {}, found {}",
            quote(file_line),
            quote(if rest.is_empty() { "end of line" } else { rest })
        ));
    };
    let (function, module) = match rest.rsplit_once(" module:") {
        Some((f, m)) => {
            if m.is_empty() || m.contains(' ') {
                return Err(format!("malformed module {}", quote(m)));
            }
            (f, Some(m.to_string()))
        }
        None => (rest, None),
    };
    if function.is_empty() || function.starts_with(' ') {
        return Err("empty function name after func:".to_string());
    }
    let site = CaptureSite {
        site: Site {
            file: file.to_string(),
            line,
            module,
            function: function.to_string(),
        },
        bytes: integer(values[0], true, "bytes")?,
        calls: integer(values[1], false, "calls")?,
        captured: integer(values[2], true, "captured")?,
        uncaptured: integer(values[3], false, "uncaptured")?,
        stacks: Vec::new(),
        other: None,
        line_no,
    };
    Ok((site, integer(values[4], false, "stacks")?))
}

fn hex(text: &str, what: &str, frame: &str) -> Result<u64, String> {
    text.strip_prefix("0x")
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or_else(|| {
            format!(
                "frame {}: {what} {} is not 0x<hex>",
                quote(frame),
                quote(text)
            )
        })
}

/// A frame: `SYMBOL+0xOFF/0xSIZE`, optionally ` [MODULE]`, or a bare `0xADDRESS`.
pub fn parse_frame(text: &str) -> Result<Frame, String> {
    if text.is_empty() {
        return Err("empty frame".to_string());
    }
    let (symbol, module) = match text.split_once(' ') {
        Some((s, m)) => {
            let name = m
                .strip_prefix('[')
                .and_then(|m| m.strip_suffix(']'))
                .filter(|m| !m.is_empty() && !m.contains([' ', '[', ']']))
                .ok_or_else(|| {
                    format!(
                        "frame {}: expected SYMBOL+0xOFF/0xSIZE [MODULE]",
                        quote(text)
                    )
                })?;
            (s, Some(name.to_string()))
        }
        None => (text, None),
    };
    let frame = |function: &str, offset, size| Frame {
        text: text.to_string(),
        function: function.to_string(),
        offset,
        size,
        module: module.clone(),
    };
    match symbol.rsplit_once('+') {
        Some((function, off_size)) if !function.is_empty() => {
            let Some((off, size)) = off_size.split_once('/') else {
                return Err(format!(
                    "frame {}: expected SYMBOL+0xOFF/0xSIZE",
                    quote(text)
                ));
            };
            let off = hex(off, "offset", text)?;
            let size = hex(size, "size", text)?;
            Ok(frame(function, Some(off), Some(size)))
        }
        None if module.is_none() && symbol.starts_with("0x") => {
            hex(symbol, "address", text)?;
            Ok(frame(symbol, None, None))
        }
        _ => Err(format!(
            "frame {}: expected SYMBOL+0xOFF/0xSIZE or 0xADDRESS",
            quote(text)
        )),
    }
}

/// Where the parser is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Expect {
    #[default]
    Header,
    /// A `site` line (or the end).
    Site,
    /// Inside a site: a `stack`, `other` or next `site` line.
    Body,
    /// Right after a `stack` line: its first frame.
    Frame,
    /// After a frame: another frame, or what may follow a stack.
    FrameOrBody,
    /// After `other`: the next site or the end.
    AfterOther,
}

/// A parser fed one line at a time, like [`crate::parse::LineParser`].
#[derive(Debug, Default)]
pub struct ReportParser {
    lenient: bool,
    expect: Expect,
    lines: usize,
    report: Report,
    /// The `stacks:` count of the current site.
    announced: usize,
}

impl ReportParser {
    /// A strict parser, or with `lenient` one that takes CRLF line ends and blank lines.
    pub fn new(lenient: bool) -> Self {
        ReportParser {
            lenient,
            ..ReportParser::default()
        }
    }

    /// Takes one line without its `\n`.
    pub fn feed_bytes(&mut self, line: &[u8]) -> Result<(), ParseError> {
        if line.len() > MAX_LINE {
            self.lines += 1;
            return err(
                self.lines,
                format!("longer than {MAX_LINE} bytes, not a capture report line"),
            );
        }
        match std::str::from_utf8(line) {
            Ok(text) => self.feed(text),
            Err(_) => {
                self.lines += 1;
                err(self.lines, "invalid UTF-8")
            }
        }
    }

    /// Takes one line without its `\n`.
    pub fn feed(&mut self, line: &str) -> Result<(), ParseError> {
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
        self.line(n, line).map_err(|message| {
            let hint = if line.ends_with('\r') {
                "; the file has CRLF line ends, which --lenient reads"
            } else {
                ""
            };
            ParseError {
                line: n,
                message: format!("{message}{hint}"),
            }
        })
    }

    fn line(&mut self, n: usize, line: &str) -> Result<(), String> {
        if self.expect == Expect::Header {
            let (armed, max_sites, records, max_records) = parse_header(line)?;
            self.report = Report {
                armed,
                max_sites,
                records,
                max_records,
                sites: Vec::new(),
            };
            self.expect = Expect::Site;
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("site ") {
            if self.expect == Expect::Frame {
                return Err(
                    "expected a frame ('    SYMBOL+0xOFF/0xSIZE') after the stack line, \
                            found a site line"
                        .into(),
                );
            }
            self.end_site()?;
            if self.report.sites.len() == self.report.armed {
                return Err(format!(
                    "site {} beyond the {} the header says are armed",
                    self.report.sites.len() + 1,
                    self.report.armed
                ));
            }
            let (site, announced) = parse_site(rest, n)?;
            self.report.sites.push(site);
            self.announced = announced;
            self.expect = Expect::Body;
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("    ") {
            if !matches!(self.expect, Expect::Frame | Expect::FrameOrBody) {
                return Err(format!("frame {} outside a stack", quote(rest)));
            }
            let frame = parse_frame(rest)?;
            if let Some(stack) = self.site()?.stacks.last_mut() {
                stack.frames.push(frame);
            }
            self.expect = Expect::FrameOrBody;
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("  stack ") {
            match self.expect {
                Expect::Body | Expect::FrameOrBody => {}
                Expect::Frame => return Err("stack without frames".into()),
                Expect::AfterOther => return Err("stack line after the other line".into()),
                _ => return Err("stack line outside a site".into()),
            }
            let (bytes, calls) = bytes_calls(rest)?;
            let announced = self.announced;
            let site = self.site()?;
            if site.stacks.len() == announced {
                return Err(format!(
                    "stack {} beyond the stacks:{} of the site on line {}",
                    site.stacks.len() + 1,
                    announced,
                    site.line_no
                ));
            }
            site.stacks.push(Stack {
                bytes,
                calls,
                frames: Vec::new(),
            });
            self.expect = Expect::Frame;
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("  other ") {
            match self.expect {
                Expect::Body | Expect::FrameOrBody => {}
                Expect::Frame => return Err("stack without frames".into()),
                Expect::AfterOther => return Err("a second other line".into()),
                _ => return Err("other line outside a site".into()),
            }
            let (bytes, calls) = bytes_calls(rest)?;
            self.site()?.other = Some(Stack {
                bytes,
                calls,
                frames: Vec::new(),
            });
            self.expect = Expect::AfterOther;
            return Ok(());
        }
        Err(format!(
            "expected a 'site', '  stack', '  other' or '    FRAME' line, found {}",
            quote(line)
        ))
    }

    fn site(&mut self) -> Result<&mut CaptureSite, String> {
        self.report
            .sites
            .last_mut()
            .ok_or_else(|| "no site line before this".to_string())
    }

    /// Checks the site just finished against its own counts.
    fn end_site(&mut self) -> Result<(), String> {
        let announced = self.announced;
        let Some(site) = self.report.sites.last() else {
            return Ok(());
        };
        if site.stacks.len() != announced {
            return Err(format!(
                "the site on line {} says stacks:{} but has {}",
                site.line_no,
                announced,
                site.stacks.len()
            ));
        }
        let calls: i128 = site
            .stacks
            .iter()
            .chain(site.other.as_ref())
            .map(|s| i128::from(s.calls))
            .sum();
        if calls != i128::from(site.captured) {
            return Err(format!(
                "the site on line {} says captured:{} but its stacks and other line hold {} calls",
                site.line_no, site.captured, calls
            ));
        }
        Ok(())
    }

    /// The report, once the whole input has been fed.
    pub fn finish(mut self) -> Result<Report, ParseError> {
        let end = self.lines + 1;
        match self.expect {
            Expect::Header => {
                return err(
                    1,
                    format!("empty input, expected '{HEADER_PREFIX}1.0: ...'"),
                )
            }
            Expect::Frame => return err(end, "unexpected end of input: a stack without frames"),
            _ => {}
        }
        self.end_site()
            .map_err(|message| ParseError { line: end, message })?;
        if self.report.sites.len() != self.report.armed {
            return err(
                end,
                format!(
                    "unexpected end of input: {} of the {} armed sites",
                    self.report.sites.len(),
                    self.report.armed
                ),
            );
        }
        Ok(self.report)
    }
}

/// Parses a whole report.
pub fn parse_report(text: &str) -> Result<Report, ParseError> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut parser = ReportParser::default();
    if !body.is_empty() {
        for line in body.split('\n') {
            parser.feed(line)?;
        }
    }
    parser.finish()
}

/// What a control command names: `FILE:LINE` or `function:NAME`, optionally `module:NAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// `FILE:LINE` or `function:NAME` as the kernel reads it.
    pub target: String,
    pub module: Option<String>,
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.module {
            Some(m) => write!(f, "{} module:{m}", self.target),
            None => write!(f, "{}", self.target),
        }
    }
}

/// Checks one `FILE:LINE` or `function:NAME` word as the kernel would.
fn check_target(word: &str) -> Result<(), String> {
    if let Some(name) = word.strip_prefix("function:") {
        if name.is_empty() {
            return Err("function: needs a name (function:NAME)".into());
        }
        return Ok(());
    }
    match word.rsplit_once(':') {
        Some((file, line)) if !file.is_empty() => integer::<u32>(line, false, "line number")
            .map(|_| ())
            .map_err(|e| format!("{}: {e}", quote(word))),
        _ => Err(format!(
            "{} is not FILE:LINE or function:NAME (as /proc/allocinfo spells them)",
            quote(word)
        )),
    }
}

/// Reads the specs of `arm`/`disarm`: each `FILE:LINE` or `function:NAME` may be followed by a
/// `module:NAME` word for itself; `module` applies to those without one.
pub fn parse_specs(words: &[String], module: Option<&str>) -> Result<Vec<Spec>, String> {
    let mut specs: Vec<Spec> = Vec::new();
    let mut prev_takes_module = false;
    for word in words {
        if word.is_empty() || word.contains(char::is_whitespace) {
            return Err(format!(
                "{} holds white space, which the kernel splits commands at",
                quote(word)
            ));
        }
        if let Some(name) = word.strip_prefix("module:") {
            let Some(last) = specs.last_mut().filter(|_| prev_takes_module) else {
                return Err(format!(
                    "{} must follow the FILE:LINE or function:NAME it applies to",
                    quote(word)
                ));
            };
            if name.is_empty() {
                return Err("module: needs a name (module:NAME)".into());
            }
            last.module = Some(name.to_string());
            prev_takes_module = false;
            continue;
        }
        check_target(word)?;
        specs.push(Spec {
            target: word.clone(),
            module: None,
        });
        prev_takes_module = true;
    }
    if let Some(m) = module {
        if m.is_empty() || m.contains(char::is_whitespace) {
            return Err(format!("--module {} is not a module name", quote(m)));
        }
        for s in specs.iter_mut().filter(|s| s.module.is_none()) {
            s.module = Some(m.to_string());
        }
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const GOOD: &str = "\
# allocinfo capture 1.0: 2 of 8 sites armed, 6 of 16384 records live
site tools/testing/selftests/alloc_tag/test_modules/alloc_tag_test.c:270 func:att_capture_wrapper module:alloc_tag_test bytes:448 calls:5 captured:5 uncaptured:0 stacks:2
  stack bytes:256 calls:2
    slab_alloc_node+0x7f/0xe0
    att_capture_wrapper+0x4c/0x60 [alloc_tag_test]
    att_capture_caller1+0xe/0x10 [alloc_tag_test]
    entry_SYSCALL_64_after_hwframe+0x4b/0x53
  stack bytes:192 calls:3
    slab_alloc_node+0x7f/0xe0
    0xffffffffc0a01234
  other bytes:0 calls:0
site mm/util.c:650 func:kvmalloc_node_noprof bytes:-4096 calls:18446744073709551615 captured:1 uncaptured:7 stacks:0
  other bytes:64 calls:1
";

    fn fails_on(text: &str, line: usize, needle: &str) {
        crate::parse::assert_refused(parse_report, text, line, needle);
    }

    #[test]
    fn good_report() {
        let r = parse_report(GOOD).unwrap();
        assert_eq!(
            (r.armed, r.max_sites, r.records, r.max_records),
            (2, 8, 6, 16384)
        );
        let s = &r.sites[0];
        assert_eq!(
            s.site.file,
            "tools/testing/selftests/alloc_tag/test_modules/alloc_tag_test.c"
        );
        assert_eq!(s.site.line, 270);
        assert_eq!(s.site.function, "att_capture_wrapper");
        assert_eq!(s.site.module.as_deref(), Some("alloc_tag_test"));
        assert_eq!((s.bytes, s.calls, s.captured, s.uncaptured), (448, 5, 5, 0));
        assert_eq!(s.stacks.len(), 2);
        assert_eq!((s.stacks[0].bytes, s.stacks[0].calls), (256, 2));
        assert_eq!(s.stacks[0].frames.len(), 4);
        let f = &s.stacks[0].frames[1];
        assert_eq!(f.text, "att_capture_wrapper+0x4c/0x60 [alloc_tag_test]");
        assert_eq!(f.function, "att_capture_wrapper");
        assert_eq!((f.offset, f.size), (Some(0x4c), Some(0x60)));
        assert_eq!(f.module.as_deref(), Some("alloc_tag_test"));
        let bare = &s.stacks[1].frames[1];
        assert_eq!(
            (bare.function.as_str(), bare.offset),
            ("0xffffffffc0a01234", None)
        );
        assert_eq!(s.other.as_ref().map(|o| (o.bytes, o.calls)), Some((0, 0)));
        assert_eq!(s.captured_bytes(), 448);
        assert_eq!(s.line_no, 2);
        let t = &r.sites[1];
        assert_eq!(t.site.module, None);
        assert_eq!((t.bytes, t.live_calls(), t.uncaptured), (-4096, -1, 7));
        assert!(t.stacks.is_empty());
        assert_eq!(t.other.as_ref().map(|o| o.bytes), Some(64));
        assert_eq!(t.line_no, 12);
    }

    #[test]
    fn nothing_armed_and_missing_final_newline() {
        let r =
            parse_report("# allocinfo capture 1.0: 0 of 8 sites armed, 0 of 16384 records live")
                .unwrap();
        assert!(r.sites.is_empty());
        let text = GOOD.strip_suffix('\n').unwrap();
        assert_eq!(parse_report(text).unwrap().sites.len(), 2);
    }

    #[test]
    fn frames() {
        let f = parse_frame("_RNvCs1234_9my_module8do_alloc+0x12/0x40 [rmod]").unwrap();
        assert_eq!(f.function, "_RNvCs1234_9my_module8do_alloc");
        assert_eq!(
            f.display_function(),
            "_RNvCs1234_9my_module8do_alloc [rmod]"
        );
        let f = parse_frame("foo.isra.0+0x0/0x8").unwrap();
        assert_eq!((f.function.as_str(), f.offset), ("foo.isra.0", Some(0)));
        for (bad, needle) in [
            ("foo", "SYMBOL+0xOFF/0xSIZE or 0xADDRESS"),
            ("foo+0x1", "expected SYMBOL+0xOFF/0xSIZE"),
            ("foo+12/0x4", "offset '12'"),
            ("foo+0x1/0xzz", "size '0xzz'"),
            ("foo+0x1/0x2 [m", "[MODULE]"),
            ("foo+0x1/0x2 []", "[MODULE]"),
            ("foo+0x1/0x2 [m] x", "[MODULE]"),
            ("0xffffffffc0a0123g", "address"),
            ("0x12 [m]", "SYMBOL+0xOFF/0xSIZE or 0xADDRESS"),
            ("+0x1/0x2", "SYMBOL+0xOFF/0xSIZE or 0xADDRESS"),
            ("", "empty frame"),
        ] {
            match parse_frame(bad) {
                Ok(f) => panic!("accepted {bad:?}: {f:?}"),
                Err(e) => assert!(e.contains(needle), "{bad:?}: {e} lacks {needle:?}"),
            }
        }
    }

    const HEAD: &str = "# allocinfo capture 1.0: 1 of 8 sites armed, 1 of 16384 records live\n";
    const SITE: &str = "site a.c:1 func:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:1\n";
    const STACK: &str = "  stack bytes:64 calls:1\n    f+0x1/0x2\n";

    #[test]
    fn header_errors() {
        fails_on("", 1, "empty input");
        fails_on(
            "allocinfo - version: 1.0\n",
            1,
            "not a context-capture report",
        );
        fails_on(
            "# allocinfo capture 2.0: 0 of 8 sites armed, 0 of 16384 records live\n",
            1,
            "unsupported capture report version '2.0'",
        );
        fails_on(
            "# allocinfo capture 1.0: 0 of 8 sites, 0 of 16384 records live\n",
            1,
            "expected 'N of N sites armed",
        );
        fails_on(
            "# allocinfo capture 1.0: x of 8 sites armed, 0 of 16384 records live\n",
            1,
            "armed sites 'x'",
        );
        fails_on(
            "# allocinfo capture 1.0: 0 of 8 sites armed, 0 of 16384 records live\r\n",
            1,
            "--lenient",
        );
    }

    #[test]
    fn site_errors() {
        let bad = [
            ("site a.c func:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:1", "expected FILE:LINE"),
            ("site :1 func:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:1", "empty file name"),
            ("site a.c:01 func:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:1", "line number '01'"),
            ("site a.c:1 fn:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:1", "expected func:"),
            ("site a.c:1 func: bytes:64 calls:1 captured:1 uncaptured:0 stacks:1", "empty function"),
            ("site a.c:1 func:f module: bytes:64 calls:1 captured:1 uncaptured:0 stacks:1", "malformed module"),
            ("site a.c:1 func:f bytes:6x4 calls:1 captured:1 uncaptured:0 stacks:1", "bytes '6x4'"),
            ("site a.c:1 func:f bytes:64 calls:-1 captured:1 uncaptured:0 stacks:1", "must not be negative"),
            ("site a.c:1 func:f bytes:64 calls:1 captured:1 stacks:1", "expected bytes:"),
            ("site a.c:1 func:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:1 x:1", "expected bytes:"),
            ("site a.c:1 func:f bytes:64 calls:1 captured:1 uncaptured:0 stack:1", "expected stacks:"),
            ("site a.c:1 func:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:99999999999999999999", "out of range"),
        ];
        for (line, needle) in bad {
            fails_on(&format!("{HEAD}{line}\n"), 2, needle);
        }
    }

    #[test]
    fn structure_errors() {
        // Each line class in the wrong place, with the line it is reported on.
        let cases: [(String, usize, &str); 14] = [
            (
                format!("{HEAD}  stack bytes:1 calls:1\n"),
                2,
                "outside a site",
            ),
            (format!("{HEAD}    f+0x1/0x2\n"), 2, "outside a stack"),
            (
                format!("{HEAD}  other bytes:1 calls:1\n"),
                2,
                "outside a site",
            ),
            (format!("{HEAD}{SITE}    f+0x1/0x2\n"), 3, "outside a stack"),
            (
                format!("{HEAD}{SITE}  stack bytes:64 calls:1\n  stack bytes:0 calls:0\n"),
                4,
                "stack without frames",
            ),
            (
                format!("{HEAD}{SITE}  stack bytes:64 calls:1\n"),
                4,
                "stack without frames",
            ),
            (
                format!("{HEAD}{SITE}{STACK}  stack bytes:0 calls:0\n"),
                5,
                "beyond the stacks:1 of the site on line 2",
            ),
            (
                format!("{HEAD}{SITE}{STACK}  other bytes:0 calls:0\n  other bytes:0 calls:0\n"),
                6,
                "second other",
            ),
            (
                format!("{HEAD}{SITE}  other bytes:64 calls:1\n{STACK}"),
                4,
                "after the other line",
            ),
            (
                format!("{HEAD}{SITE}  stack bytes:64 calls:1 x\n"),
                3,
                "unexpected 'x' after calls",
            ),
            (
                format!("{HEAD}{SITE}  stack bytes:64\n"),
                3,
                "expected calls:",
            ),
            (
                format!("{HEAD}{SITE}{STACK}\tjunk\n"),
                5,
                "expected a 'site'",
            ),
            (
                format!("{HEAD}{SITE}{STACK}{SITE}"),
                5,
                "beyond the 1 the header says",
            ),
            (
                format!("{HEAD}{SITE}  stack bytes:64 calls:1\n{SITE}"),
                4,
                "found a site line",
            ),
        ];
        for (text, line, needle) in &cases {
            fails_on(text, *line, needle);
        }
    }

    #[test]
    fn count_errors() {
        // stacks: and captured: are checked when the site ends: at the next site or the end.
        fails_on(
            &format!("{HEAD}site a.c:1 func:f bytes:64 calls:1 captured:1 uncaptured:0 stacks:2\n{STACK}"),
            5,
            "says stacks:2 but has 1",
        );
        fails_on(
            &format!(
                "# allocinfo capture 1.0: 2 of 8 sites armed, 1 of 16384 records live\n\
                 site a.c:1 func:f bytes:64 calls:1 captured:2 uncaptured:0 stacks:1\n{STACK}{SITE}{STACK}"
            ),
            5,
            "captured:2 but its stacks and other line hold 1 calls",
        );
        fails_on(HEAD, 2, "0 of the 1 armed sites");
        let two = HEAD.replace("1 of 8", "2 of 8");
        fails_on(&format!("{two}{SITE}{STACK}"), 5, "1 of the 2 armed sites");
    }

    #[test]
    fn invalid_utf8_and_lenient() {
        let mut p = ReportParser::new(false);
        p.feed(HEAD.trim_end()).unwrap();
        assert_eq!(p.feed_bytes(b"site \xff").unwrap_err().line, 2);
        let mut p = ReportParser::new(true);
        for line in format!("{HEAD}\n{SITE}{STACK}")
            .replace('\n', "\r\n")
            .split("\r\n")
        {
            p.feed(&format!("{line}\r")).unwrap();
        }
        assert_eq!(p.finish().unwrap().sites.len(), 1);
    }

    #[test]
    fn specs() {
        let w = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let specs = parse_specs(
            &w(&[
                "mm/util.c:650",
                "function:seq_buf_alloc",
                "module:m",
                "a.c:1",
            ]),
            Some("ext4"),
        )
        .unwrap();
        let text: Vec<String> = specs.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "mm/util.c:650 module:ext4",
                "function:seq_buf_alloc module:m",
                "a.c:1 module:ext4"
            ]
        );
        for (bad, needle) in [
            (&["module:m"][..], "must follow"),
            (&["a.c:1", "module:m", "module:n"], "must follow"),
            (&["a.c"], "is not FILE:LINE"),
            (&["a.c:x"], "line number 'x'"),
            (&[":1"], "is not FILE:LINE"),
            (&["function:"], "needs a name"),
            (&["a.c:1", "module:"], "needs a name"),
            (&["a.c:1 b.c:2"], "white space"),
        ] {
            match parse_specs(&w(bad), None) {
                Ok(s) => panic!("accepted {bad:?}: {s:?}"),
                Err(e) => assert!(e.contains(needle), "{bad:?}: {e} lacks {needle:?}"),
            }
        }
    }
}
