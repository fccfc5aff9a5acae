// SPDX-License-Identifier: GPL-2.0
//! Writes profiles back out in the exact /proc/allocinfo text format (used by `snapshot`).

use std::fmt::Write as _;

use crate::parse::{COLUMNS_HEADER, SNAPSHOT_PREFIX};
use crate::profile::{Profile, Row, SnapshotMeta};
use crate::timestamp::utc_rfc3339;

/// One row as the kernel prints it, including the trailing space and newline.
pub fn row_line(row: &Row) -> String {
    format!("{:12} {:8} {} \n", row.bytes, row.calls, row.tag_text())
}

/// The snapshot metadata line, without its newline.
pub fn snapshot_line(meta: &SnapshotMeta) -> String {
    let mut line = format!(
        "{SNAPSHOT_PREFIX}time:{} unix_ms:{}",
        utc_rfc3339(meta.unix_ms),
        meta.unix_ms
    );
    // The line is space-separated key:value pairs, so a source with spaces cannot be recorded.
    if let Some(src) = meta
        .source
        .as_deref()
        .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
    {
        let _ = write!(line, " source:{src}");
    }
    line
}

/// A whole file: the snapshot line if any, both header lines, then every row.
pub fn profile_text(profile: &Profile) -> String {
    let mut out = String::with_capacity(64 * (profile.rows.len() + 3));
    if let Some(meta) = &profile.snapshot {
        out.push_str(&snapshot_line(meta));
        out.push('\n');
    }
    let _ = writeln!(out, "allocinfo - version: {}", profile.version.as_str());
    out.push_str(COLUMNS_HEADER);
    out.push('\n');
    for row in &profile.rows {
        out.push_str(&row_line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn byte_exact_round_trip() {
        let text = "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n\
                    \x20    4194304     1024 mm/slub.c:2450 func:alloc_slab_page \n\
                    \x20      -4096        0 lib/x.c:1 [m] func:g accurate:no \n\
                    -12345678901234 123456789 a.c:1 func:f \n";
        let p = parse(text).unwrap();
        assert_eq!(profile_text(&p), text);
    }

    #[test]
    fn snapshot_line_skips_unrecordable_source() {
        let mut meta = SnapshotMeta {
            unix_ms: 0,
            source: Some("/tmp/a b".into()),
        };
        assert_eq!(
            snapshot_line(&meta),
            "# snapshot time:1970-01-01T00:00:00.000Z unix_ms:0"
        );
        meta.source = Some("/proc/allocinfo".into());
        assert!(snapshot_line(&meta).ends_with(" source:/proc/allocinfo"));
    }
}
