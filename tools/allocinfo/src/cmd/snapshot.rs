// SPDX-License-Identifier: GPL-2.0
//! `allocinfo snapshot`: the profile saved with the time it was read, in a format the parser reads.
//!
//! A snapshot is the allocinfo text preceded by one `# snapshot time:... unix_ms:... source:...`
//! line, so `diff` can say how far apart two snapshots are and any tool that skips a leading
//! comment still reads it.

use std::io::Write;

use serde::Serialize;

use crate::cli::SnapshotArgs;
use crate::cmd::{output_error, write_json, write_output};
use crate::error::Result;
use crate::profile::{Profile, Row, SnapshotMeta, Version};
use crate::render::profile_text;
use crate::timestamp::utc_rfc3339;

/// Stamps `profile` with `now_ms` unless it already carries a snapshot time (re-saving a snapshot
/// keeps the time its data was read).
pub fn stamp(mut profile: Profile, source: Option<&str>, now_ms: i64) -> Profile {
    if profile.snapshot.is_none() {
        profile.snapshot = Some(SnapshotMeta {
            unix_ms: now_ms,
            source: source.map(str::to_string),
        });
    }
    profile
}

/// The JSON form: a summary when written to a file, the whole profile otherwise.
#[derive(Debug, Serialize)]
struct SnapshotJson<'a> {
    time: String,
    unix_ms: i64,
    source: Option<&'a str>,
    version: Version,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    sites: usize,
    total_bytes: i128,
    total_calls: i128,
    #[serde(skip_serializing_if = "Option::is_none")]
    rows: Option<&'a [Row]>,
}

/// Writes the snapshot of `profile` (read from `source` at `now_ms`) to `--output` or `out`.
pub fn run(
    profile: Profile,
    source: Option<&str>,
    now_ms: i64,
    args: &SnapshotArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let snap = stamp(profile, source, now_ms);
    if let Some(path) = &args.output {
        write_output(path, profile_text(&snap).as_bytes())?;
    } else if !json {
        return out
            .write_all(profile_text(&snap).as_bytes())
            .map_err(output_error);
    }
    if !json {
        return Ok(());
    }
    let meta = snap.snapshot.as_ref();
    let unix_ms = meta.map_or(now_ms, |m| m.unix_ms);
    write_json(
        out,
        &SnapshotJson {
            time: utc_rfc3339(unix_ms),
            unix_ms,
            source: meta.and_then(|m| m.source.as_deref()),
            version: snap.version,
            output: args.output.as_ref().map(|p| p.display().to_string()),
            sites: snap.rows.len(),
            total_bytes: snap.total_bytes(),
            total_calls: snap.total_calls(),
            rows: args.output.is_none().then_some(&snap.rows[..]),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::testdata::{capture, sample, SAMPLE};
    use crate::parse::parse;

    const T: i64 = 1_764_699_180_123;

    #[test]
    fn stdout_snapshot_parses_back() {
        let args = SnapshotArgs {
            input: Default::default(),
            output: None,
        };
        let text = capture(|out| run(sample(), Some("/proc/allocinfo"), T, &args, false, out));
        assert_eq!(
            text.lines().next(),
            Some("# snapshot time:2025-12-02T18:13:00.123Z unix_ms:1764699180123 source:/proc/allocinfo")
        );
        assert!(text.ends_with(SAMPLE));
        let back = parse(&text).unwrap();
        assert_eq!(back.rows, sample().rows);
        assert_eq!(back.snapshot.map(|m| m.unix_ms), Some(T));
        // Re-saving a snapshot keeps its original time.
        let again = capture(|out| run(parse(&text).unwrap(), None, T + 5, &args, false, out));
        assert_eq!(again, text);
    }

    #[test]
    fn file_snapshot_with_json_summary() {
        let dir = std::env::temp_dir().join(format!("allocinfo-snap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.snap");
        let args = SnapshotArgs {
            input: Default::default(),
            output: Some(path.clone()),
        };
        let json = capture(|out| run(sample(), None, T, &args, true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["sites"], 7);
        assert_eq!(v["unix_ms"], T);
        assert!(v.get("rows").is_none());
        let saved = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(saved.rows.len(), 7);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn json_without_file_carries_rows() {
        let args = SnapshotArgs {
            input: Default::default(),
            output: None,
        };
        let json = capture(|out| run(sample(), None, T, &args, true, out));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["rows"].as_array().map(Vec::len), Some(7));
        assert_eq!(v["time"], "2025-12-02T18:13:00.123Z");
    }
}
