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

/// The header line of `--by-node`, without its line end.
pub const NODE_HEADER: &str = "file,line,module,function,node,bytes,calls,calls_wrapped,inaccurate";

/// The whole file, CRLF line ends as RFC 4180 asks. `module` is empty for built-in code.
pub fn render(sites: &[(&Site, SiteTotals)]) -> String {
    let rows: Vec<_> = sites.iter().map(|&(site, t)| (site, None, t)).collect();
    render_rows(HEADER, &rows)
}

/// As [`render`], one line per site and node, the node id in the column `node`.
pub fn render_nodes(sites: &[(&Site, u32, SiteTotals)]) -> String {
    let rows: Vec<_> = sites
        .iter()
        .map(|&(site, node, t)| (site, Some(node), t))
        .collect();
    render_rows(NODE_HEADER, &rows)
}

fn render_rows(header: &str, rows: &[(&Site, Option<u32>, SiteTotals)]) -> String {
    let mut out = String::with_capacity(80 * (rows.len() + 1));
    out.push_str(header);
    out.push_str("\r\n");
    for (site, node, t) in rows {
        let _ = write!(
            out,
            "{},{},{},{},",
            field(&site.file),
            site.line,
            field(site.module.as_deref().unwrap_or("")),
            field(&site.function),
        );
        if let Some(node) = node {
            let _ = write!(out, "{node},");
        }
        let _ = write!(
            out,
            "{},{},{},{}\r\n",
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
        assert_eq!(
            render_nodes(&[(&site, 3, t)]),
            format!("{NODE_HEADER}\r\n\"fs/a,b.c\",7,m,f,3,-4096,-1,1,0\r\n")
        );
    }
}
