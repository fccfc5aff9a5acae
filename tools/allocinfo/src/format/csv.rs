// SPDX-License-Identifier: GPL-2.0
//! Sites as CSV (RFC 4180): one header line, then one line per site.

use std::fmt::Write as _;

use crate::profile::{Site, SiteTotals};

/// The header line, without its line end.
pub const HEADER: &str = "file,line,module,function,bytes,calls,calls_wrapped,inaccurate";

/// Quotes a field when it holds a comma, a double quote or a line end; quotes are doubled.
pub fn field(value: &str) -> String {
    if value.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

/// The whole file, CRLF line ends as RFC 4180 asks. `module` is empty for built-in code.
pub fn render(sites: &[(&Site, SiteTotals)]) -> String {
    let mut out = String::with_capacity(80 * (sites.len() + 1));
    out.push_str(HEADER);
    out.push_str("\r\n");
    for (site, t) in sites {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{}\r\n",
            field(&site.file),
            site.line,
            field(site.module.as_deref().unwrap_or("")),
            field(&site.function),
            t.bytes,
            t.calls,
            u8::from(t.wrapped),
            u8::from(t.inaccurate)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_rows() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("we\"ird"), "\"we\"\"ird\"");
        assert_eq!(field("plain"), "plain");
        let site = Site {
            file: "fs/a,b.c".into(),
            line: 7,
            module: Some("m".into()),
            function: "f".into(),
        };
        let t = SiteTotals {
            bytes: -4096,
            calls: -1,
            wrapped: true,
            inaccurate: false,
        };
        assert_eq!(
            render(&[(&site, t)]),
            format!("{HEADER}\r\n\"fs/a,b.c\",7,m,f,-4096,-1,1,0\r\n")
        );
    }
}
