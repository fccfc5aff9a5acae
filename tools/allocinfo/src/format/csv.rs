// SPDX-License-Identifier: GPL-2.0
//! Sites as CSV (RFC 4180, written by the `csv` crate): one header line, then one line per site.
//!
//! CRLF line ends; a field is quoted only when it holds a comma, a double quote or a line end,
//! its quotes doubled. `module` is empty for built-in code.

use std::io::{self, Write};

use crate::format::select::SiteSum;

/// The header line, without its line end.
pub const HEADER: &str = "file,line,module,function,bytes,calls,calls_wrapped,inaccurate";

/// The header line of `--by-node`, without its line end.
pub const NODE_HEADER: &str = "file,line,module,function,node,bytes,calls,calls_wrapped,inaccurate";

/// Writes the header (with a `node` column when `by_node`), then one line per site.
pub fn write<'a>(
    sites: impl Iterator<Item = SiteSum<'a>>,
    by_node: bool,
    out: &mut impl Write,
) -> io::Result<()> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(out);
    let header = if by_node { NODE_HEADER } else { HEADER };
    w.write_record(header.split(','))?;
    let mut number = itoa::Buffer::new();
    for s in sites {
        let (site, t) = (s.site, s.totals);
        w.write_field(site.file)?;
        w.write_field(number.format(site.line))?;
        w.write_field(site.module.unwrap_or(""))?;
        w.write_field(site.function)?;
        if by_node {
            w.write_field(number.format(s.node.unwrap_or_default()))?;
        }
        w.write_field(number.format(t.bytes))?;
        w.write_field(number.format(t.calls))?;
        w.write_field(if t.wrapped { "1" } else { "0" })?;
        w.write_field(if t.inaccurate { "1" } else { "0" })?;
        w.write_record(None::<&[u8]>)?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Site, SiteTotals};

    fn render(site: &Site, node: Option<u32>) -> String {
        let totals = SiteTotals {
            bytes: -4096,
            calls: -1,
            wrapped: true,
            inaccurate: false,
        };
        let mut out = Vec::new();
        let sum = SiteSum {
            site: site.tag_ref(),
            node,
            totals,
        };
        write(std::iter::once(sum), node.is_some(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn quoting_and_rows() {
        let mut site = Site {
            file: "fs/a,b.c".into(),
            line: 7,
            module: Some("m".into()),
            function: "f".into(),
        };
        assert_eq!(
            render(&site, None),
            format!("{HEADER}\r\n\"fs/a,b.c\",7,m,f,-4096,-1,1,0\r\n")
        );
        assert_eq!(
            render(&site, Some(3)),
            format!("{NODE_HEADER}\r\n\"fs/a,b.c\",7,m,f,3,-4096,-1,1,0\r\n")
        );
        site.file = "we\"ird\nx\ry z#.c".into();
        site.module = None;
        assert_eq!(
            render(&site, None),
            format!("{HEADER}\r\n\"we\"\"ird\nx\ry z#.c\",7,,f,-4096,-1,1,0\r\n")
        );
    }
}
