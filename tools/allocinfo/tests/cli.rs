// SPDX-License-Identifier: GPL-2.0
//! End-to-end tests of the `allocinfo` binary on the fixtures: output, JSON, errors, exit codes.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

mod common;

use common::{fixture, ok, run, stderr, stdout, BIN};

/// The first 300 characters of standard error: enough for any message the tool should print, and
/// a failing assertion does not print megabytes of echoed input.
fn stderr_head(o: &Output) -> String {
    stderr(o).chars().take(300).collect()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("allocinfo-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    if let Err(e) = std::fs::create_dir_all(&d) {
        panic!("mkdir {}: {e}", d.display());
    }
    d
}

const VALID: [&str; 4] = [
    "v1-builtin-modules.txt",
    "v1-negative.txt",
    "v2-accurate.txt",
    "escaping.txt",
];

#[test]
fn top_on_every_valid_fixture() {
    for f in VALID {
        let out = ok(&["top", "-i", &fixture(f)]);
        assert!(
            out.starts_with("        SIZE      CALLS  SITE\n"),
            "{f}: {out}"
        );
        assert!(
            out.lines().last().is_some_and(|l| l.starts_with("total: ")),
            "{f}"
        );
    }
    let out = ok(&["top", "-n", "3", "-i", &fixture("v1-builtin-modules.txt")]);
    let sites: Vec<_> = out
        .lines()
        .skip(1)
        .take(3)
        .map(|l| l.rsplit("  ").next())
        .collect();
    assert_eq!(
        sites,
        [
            Some("mm/slub.c:2412 func:alloc_slab_page"),
            Some("mm/memory.c:1122 func:folio_prealloc"),
            Some("drivers/block/virtio_blk.c:1023 func:virtblk_probe"),
        ]
    );
    assert!(
        out.contains("    80.6 MiB       2134  mm/slub.c:2412"),
        "{out}"
    );
}

#[test]
fn top_filters_and_negative_sizes() {
    let f = fixture("v1-negative.txt");
    let out = ok(&["top", "-n", "0", "--bytes", "-i", &f]);
    assert!(
        out.contains("-123456789012345         12  mm/huge_memory.c:3415"),
        "{out}"
    );
    let out = ok(&["top", "--module", "virtio_net", "-i", &f]);
    assert!(out.contains("-4.0 KiB"), "{out}");
    assert!(out.contains("at 1 of 8 sites (1 shown)"), "{out}");
    let out = ok(&["top", "--min-size", "1M", "--file", "mm/", "-i", &f]);
    assert!(out.contains("at 2 of 8 sites"), "{out}");
}

#[test]
fn v2_rows_show_accuracy() {
    let f = fixture("v2-accurate.txt");
    let out = ok(&["top", "-n", "0", "-i", &f]);
    assert!(out.contains("fs/inode.c:262 func:alloc_inode accurate:no future_key:some_value"));
    let json = ok(&["--json", "top", "-n", "0", "-i", &f]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    let rows = v["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 11);
    let inaccurate = rows.iter().filter(|r| r["accurate"] == false).count();
    assert_eq!(inaccurate, 4);
    assert_eq!(v["version"], "2.0");
}

#[test]
fn tree_by_path_and_module() {
    let f = fixture("v1-builtin-modules.txt");
    let out = ok(&["tree", "-i", &f]);
    let second = out.lines().nth(2).unwrap_or_default();
    assert!(second.ends_with("  mm/"), "{out}");
    assert!(out.contains("    mm/slub.c\n"), "{out}");
    let out = ok(&["tree", "--by", "module", "-i", &f]);
    for m in ["vmlinux", "ext4", "virtio_net", "jbd2", "nf_tables"] {
        assert!(out.contains(&format!("  {m}\n")), "{m}: {out}");
    }
}

#[test]
fn snapshot_then_diff() {
    let dir = temp_dir("snap");
    let a = dir.join("a.snap");
    let a_s = a.to_string_lossy().into_owned();
    ok(&[
        "snapshot",
        "-o",
        &a_s,
        "-i",
        &fixture("v1-builtin-modules.txt"),
    ]);
    let saved = std::fs::read_to_string(&a).unwrap_or_default();
    assert!(saved.starts_with("# snapshot time:"), "{saved}");
    // A snapshot is itself valid input.
    ok(&["top", "-i", &a_s]);
    let out = ok(&["diff", &a_s, &fixture("v1-negative.txt")]);
    let total = out.lines().last().unwrap_or_default();
    assert!(total.starts_with("total: "), "{out}");
    assert!(out.contains("(new)") && out.contains("(gone)"), "{out}");
    let same = ok(&["diff", &a_s, &fixture("v1-builtin-modules.txt")]);
    assert!(
        same.ends_with("0 grew, 0 shrank, 0 new, 0 gone, 65 same\n"),
        "{same}"
    );
    let json = ok(&["diff", "--json", &a_s, &fixture("v1-negative.txt")]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    assert!(v["before"]["unix_ms"].is_i64());
    assert!(v["after"]["unix_ms"].is_null());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn watch_stops_after_count() {
    let f = fixture("v1-builtin-modules.txt");
    let out = ok(&["watch", "--interval", "0.01", "--count", "3", "-i", &f]);
    assert_eq!(out.lines().filter(|l| l.starts_with("sample ")).count(), 3);
    assert!(
        out.contains("leak suspects: none (no site trending up over 2 intervals, "),
        "{out}"
    );
    let json = ok(&["watch", "--json", "--interval", "0.01", "-c", "2", "-i", &f]);
    for line in json.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "{line}"
        );
    }
}

#[test]
fn export_formats() {
    let f = fixture("v1-builtin-modules.txt");
    let prom = ok(&["export", "-i", &f]);
    assert!(prom.starts_with("# HELP allocinfo_bytes "));
    assert!(!prom.contains("# EOF"));
    // 66 rows, one tag text twice: 65 sites, which are 60 series per family (the lines of one
    // function, file and module summed); 65 with the line as a label.
    let series = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("allocinfo_bytes{"))
            .count()
    };
    assert_eq!(series(&prom), 60);
    assert_eq!(series(&ok(&["export", "--line-label", "-i", &f])), 65);
    assert!(prom.contains(
        "allocinfo_bytes{function=\"kobject_set_name_vargs\",file=\"lib/kobject.c\",module=\"\"} 6144\n"
    ));
    let om = ok(&["export", "--format", "openmetrics", "-i", &f]);
    assert!(om.ends_with("# EOF\n"));
    assert!(om.contains("# UNIT allocinfo_bytes bytes\n"));
    let esc = ok(&["export", "-i", &fixture("escaping.txt")]);
    assert!(esc.contains(r#"file="drivers/we\"ird\\path.c""#), "{esc}");
    assert!(esc.contains(r#"module="odd\\mod""#), "{esc}");
    let dir = temp_dir("export");
    let out = dir.join("allocinfo.prom");
    let out_s = out.to_string_lossy().into_owned();
    assert_eq!(ok(&["export", "-o", &out_s, "-i", &f]), "");
    assert_eq!(std::fs::read_to_string(&out).unwrap_or_default(), prom);
    assert_eq!(
        std::fs::read_dir(&dir).map(Iterator::count).unwrap_or(0),
        1,
        "no temp file left"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_on_every_command() {
    let f = fixture("v2-accurate.txt");
    for args in [
        &["top"][..],
        &["tree"],
        &["tree", "--by", "module"],
        &["snapshot"],
        &["export"],
        &["export", "-f", "openmetrics"],
    ] {
        let mut full = vec!["--json", "-i", f.as_str()];
        full.extend_from_slice(args);
        let out = ok(&full);
        assert!(
            serde_json::from_str::<serde_json::Value>(&out).is_ok_and(|v| v.is_object()),
            "{args:?}: {out}"
        );
    }
}

#[test]
fn reads_standard_input() {
    let data = std::fs::read(fixture("v1-negative.txt")).unwrap_or_default();
    let child = Command::new(BIN)
        .args(["top", "-n", "1", "-i", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        panic!("cannot spawn {BIN}");
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&data);
    }
    let o = child.wait_with_output().ok();
    let out = o.map(|o| stdout(&o)).unwrap_or_default();
    assert!(out.contains("mm/slub.c:2412"), "{out}");
}

#[test]
fn malformed_input_is_a_runtime_error_with_a_line_number() {
    let cases = [
        ("bad-version.txt", 1, "unsupported version '3.1'"),
        ("bad-column-header.txt", 2, "column header"),
        ("no-trailing-space.txt", 4, "end with a space"),
        ("misaligned.txt", 4, "not right-aligned in 12"),
        ("v1-with-fields.txt", 5, "needs version 2.0"),
        ("missing-func.txt", 3, "expected func:"),
        ("blank-line.txt", 4, "expected size"),
        ("truncated-header.txt", 2, "end of input"),
        ("not-allocinfo.txt", 1, "expected 'allocinfo - version"),
    ];
    for (name, line, needle) in cases {
        let path = fixture(&format!("malformed/{name}"));
        for cmd in ["top", "export"] {
            let o = run(&[cmd, "-i", &path]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{name}: {err}");
            assert!(
                err.starts_with(&format!("allocinfo: {path}: line {line}: ")),
                "{name}: {err}"
            );
            assert!(err.contains(needle), "{name}: {err}");
            assert!(o.stdout.is_empty(), "{name}: partial output");
        }
    }
}

#[test]
fn exit_codes() {
    let o = run(&["top", "-i", "/nonexistent/allocinfo"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read /nonexistent/allocinfo"));
    let o = run(&["diff", "/nonexistent/a", &fixture("v1-negative.txt")]);
    assert_eq!(o.status.code(), Some(1));
    for bad in [
        &["frobnicate"][..],
        &[],
        &["top", "--sort", "name"],
        &["top", "-n", "ten"],
        &["watch", "--interval", "-1"],
        &["diff", "-i", "x", "a", "b"],
    ] {
        let o = run(bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
    let help = ok(&["--help"]);
    for cmd in [
        "top",
        "tree",
        "snapshot",
        "diff",
        "watch",
        "export",
        "Exit status",
    ] {
        assert!(help.contains(cmd), "{cmd}");
    }
    assert!(ok(&["export", "--help"]).contains("--format"));
    assert!(ok(&["--version"]).starts_with("allocinfo "));
}

/// Runs `cmd` with `-o target` and checks the file type of `target` afterwards.
fn output_keeps_file_type(cmd: &str, target: &std::path::Path) -> Output {
    let t = target.to_string_lossy().into_owned();
    run(&[cmd, "-o", &t, "-i", &fixture("v1-negative.txt")])
}

#[test]
fn output_writes_through_non_regular_files() {
    use std::os::unix::fs::FileTypeExt;
    let dir = temp_dir("nonregular");
    let real = dir.join("real.prom");
    std::fs::write(&real, "old\n").unwrap_or_default();
    let link = dir.join("link.prom");
    if let Err(e) = std::os::unix::fs::symlink(&real, &link) {
        panic!("symlink: {e}");
    }

    // A symlink stays a symlink, and the file it names gets the data.
    let o = output_keeps_file_type("export", &link);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let meta = std::fs::symlink_metadata(&link).map(|m| m.file_type().is_symlink());
    assert_eq!(meta.ok(), Some(true), "symlink replaced");
    let data = std::fs::read_to_string(&real).unwrap_or_default();
    assert!(data.starts_with("# HELP allocinfo_bytes "), "{data}");

    // A fifo is written into, not replaced: a reader on the other end gets the snapshot.
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let reader_path = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read_to_string(reader_path));
    let o = output_keeps_file_type("snapshot", &fifo);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let got = reader.join().ok().and_then(Result::ok).unwrap_or_default();
    assert!(
        got.starts_with("# snapshot time:"),
        "fifo reader got {got:?}"
    );
    let kind = std::fs::symlink_metadata(&fifo).map(|m| m.file_type().is_fifo());
    assert_eq!(kind.ok(), Some(true), "fifo replaced");

    // A character device (a copy of /dev/null's node) stays a device. Needs root for mknod.
    let null = dir.join("null");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    if root {
        let made = Command::new("mknod")
            .arg(&null)
            .args(["c", "1", "3"])
            .status();
        assert!(made.is_ok_and(|s| s.success()), "mknod");
        let o = output_keeps_file_type("snapshot", &null);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let kind = std::fs::symlink_metadata(&null).map(|m| m.file_type().is_char_device());
        assert_eq!(kind.ok(), Some(true), "device node replaced");
    } else {
        eprintln!("not root: device node case not run");
    }

    // A directory is refused with a clear error, and nothing is left behind.
    let o = output_keeps_file_type("export", &dir);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "allocinfo: cannot write {}: it is a directory\n",
            dir.display()
        )
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(left.len(), 4, "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn watch_interrupted_prints_its_verdict() {
    use std::io::{BufRead, BufReader};
    let f = fixture("v1-builtin-modules.txt");
    let child = Command::new(BIN)
        .args(["watch", "--interval", "0.05", "-i", &f])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        panic!("cannot spawn {BIN}");
    };
    let mut lines = Vec::new();
    if let Some(out) = child.stdout.take() {
        let mut reader = BufReader::new(out);
        let mut line = String::new();
        while lines.len() < 3 && reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            lines.push(std::mem::take(&mut line));
        }
        let killed = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        assert!(killed.is_ok_and(|s| s.success()));
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            lines.push(std::mem::take(&mut line));
        }
    }
    let status = child.wait().ok();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{lines:?}");
    let last = lines.last().cloned().unwrap_or_default();
    assert!(
        last.starts_with("leak suspects: none (no site trending up over "),
        "{lines:?}"
    );
}

#[test]
fn watch_refuses_standard_input_up_front() {
    let o = run(&["watch", "-c", "2", "--interval", "0.01", "-i", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "allocinfo: watch reads its input once per sample, and standard input (-i -) can be \
         read only once; give a file\n"
    );
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
}

#[test]
fn wrapped_call_counts_are_negative_and_left_out_of_totals() {
    // mm/khugepaged.c:1075 has 18446744073709551615 live calls: -1 wrapped by %llu.
    let f = fixture("v1-negative.txt");
    let out = ok(&["top", "--sort", "calls", "-n", "0", "--bytes", "-i", &f]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[1],
        "    39182336       9566  mm/memory.c:1122 func:folio_prealloc"
    );
    assert_eq!(
        lines[8],
        "           0         -1  mm/khugepaged.c:1075 func:alloc_charge_folio (calls wrapped)"
    );
    assert_eq!(
        lines[9],
        "total: -123456667373433 in 11716 live allocations at 8 sites (8 shown); \
         1 site with a wrapped (negative) call count left out of the calls total"
    );
    let json = ok(&["--json", "top", "-n", "0", "--sort", "calls", "-i", &f]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    assert_eq!(v["total_calls"], 11716);
    assert_eq!(v["wrapped_calls"], 1);
    assert_eq!(v["rows"][7]["calls"], -1);
    assert_eq!(v["rows"][7]["calls_wrapped"], true);
    assert_eq!(v["rows"][0]["calls_wrapped"], false);

    let tree = ok(&["--json", "tree", "-i", &f]);
    let v: serde_json::Value = serde_json::from_str(&tree).unwrap_or_default();
    assert_eq!(v["root"]["calls"], 11716);

    let diff = ok(&["--json", "diff", &fixture("v1-builtin-modules.txt"), &f]);
    let v: serde_json::Value = serde_json::from_str(&diff).unwrap_or_default();
    assert_eq!(v["totals"]["after_calls"], 11716);

    let prom = ok(&["export", "-i", &f]);
    assert!(prom.contains(
        "allocinfo_calls{function=\"alloc_charge_folio\",file=\"mm/khugepaged.c\",module=\"\"} -1\n"
    ), "{prom}");
}

/// Runs the tool with `args` and `chunk` written to its stdin after `head`, again and again until
/// it stops reading or `limit` bytes are written. Returns the output and how much was written.
fn feed_until_closed(args: &[&str], head: &[u8], chunk: &[u8], limit: usize) -> (Output, usize) {
    feed_command_until_closed(Command::new(BIN).args(args), head, chunk, limit)
}

/// As [`feed_until_closed`], for any command.
fn feed_command_until_closed(
    command: &mut Command,
    head: &[u8],
    chunk: &[u8],
    limit: usize,
) -> (Output, usize) {
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        panic!("cannot spawn {command:?}");
    };
    let Some(mut stdin) = child.stdin.take() else {
        panic!("no stdin");
    };
    let (head, chunk) = (head.to_vec(), chunk.to_vec());
    let writer = std::thread::spawn(move || {
        let mut written = 0;
        if stdin.write_all(&head).is_err() {
            return written;
        }
        written += head.len();
        while written < limit && stdin.write_all(&chunk).is_ok() {
            written += chunk.len();
        }
        written
    });
    let out = child.wait_with_output();
    let written = writer.join().unwrap_or(usize::MAX);
    match out {
        Ok(o) => (o, written),
        Err(e) => panic!("wait: {e}"),
    }
}

#[test]
fn header_is_checked_before_the_rest_is_read() {
    let zeros = vec![0u8; 1 << 16];
    let (o, written) = feed_until_closed(&["top", "-i", "-"], b"hello\n", &zeros, 300 << 20);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr_head(&o),
        "allocinfo: <stdin>: line 1: expected 'allocinfo - version: 1.0' or '2.0'\n"
    );
    assert!(written < 16 << 20, "read {written} bytes past a bad header");
}

#[test]
fn input_and_lines_are_capped() {
    let head = b"allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n";
    // A valid header followed by a line that never ends.
    let zeros = vec![b'0'; 1 << 16];
    let (o, written) = feed_until_closed(&["top", "-i", "-"], head, &zeros, 300 << 20);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr_head(&o),
        "allocinfo: <stdin>: line 3: longer than 65536 bytes, not an allocinfo row\n"
    );
    assert!(written < 16 << 20, "read {written} bytes of one line");
}

/// 1024 rows of `top`'s chunk: sizes, files, modules and functions that repeat as a kernel's do.
fn varied_rows() -> Vec<u8> {
    let mut rows = String::new();
    for i in 0..1024u64 {
        let module = match i % 3 {
            0 => format!("[m{}] ", i % 5),
            _ => String::new(),
        };
        rows.push_str(&format!(
            "{:12} {:8} fs/f{}.c:{i} {module}func:fn{} \n",
            64 * i,
            i,
            i % 7,
            i % 13
        ));
    }
    rows.into_bytes()
}

#[test]
fn top_reads_input_larger_than_64_mib() {
    let head = b"allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n";
    let chunk = varied_rows();
    // 80 MiB of valid rows on standard input: top keeps only its best rows, whatever the size.
    let (o, written) = feed_until_closed(
        &["top", "-i", "-", "-n", "2", "--bytes"],
        head,
        &chunk,
        80 << 20,
    );
    assert!(written > 64 << 20);
    let chunks = ((written - head.len()) / chunk.len()) as u64;
    // Each chunk: sizes 64 * (0..1024), calls 0..1024.
    let (bytes, calls) = (64 * 523_776 * chunks, 523_776 * chunks);
    assert_eq!(
        stdout(&o),
        format!(
            "        SIZE      CALLS  SITE\n\
             \x20      65472       1023  fs/f1.c:1023 [m3] func:fn9\n\
             \x20      65472       1023  fs/f1.c:1023 [m3] func:fn9\n\
             total: {bytes} in {calls} live allocations at {} sites (2 shown)\n",
            1024 * chunks
        ),
        "{}",
        stderr_head(&o)
    );
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn kept_input_is_bounded_by_memory() {
    let head = b"allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n";
    // Long rows, so that the profile kept takes less memory than the limit allows for.
    let row = format!(
        "        4096        1 drivers/{}/x.c:1 func:f \n",
        "d".repeat(200)
    );
    let rows = row.repeat(256);
    // tree keeps the whole profile: with 300,000 KiB of data segment, a sixth of it.
    let args = [
        "-c",
        "ulimit -d 300000 && exec \"$0\" \"$@\"",
        BIN,
        "tree",
        "-i",
        "-",
    ];
    let (o, written) = feed_command_until_closed(
        Command::new("sh").args(args),
        head,
        rows.as_bytes(),
        80 << 20,
    );
    assert_eq!(
        stderr_head(&o),
        "allocinfo: <stdin>: more than 48 MiB of input, more than the memory available to \
         allocinfo holds (MemAvailable in /proc/meminfo, ulimit -d and -v)\n"
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(written < 60 << 20, "read {written} bytes");
}

#[test]
fn random_bytes_are_refused_quickly() {
    let o = run(&["top", "-i", "/dev/urandom"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with("allocinfo: /dev/urandom: line 1: "),
        "{err}"
    );
    assert!(err.len() < 200 && !err.contains('\r'), "{err}");
}

#[test]
fn error_messages_escape_and_truncate_what_they_quote() {
    let dir = temp_dir("escape");
    let crlf = dir.join("crlf.txt");
    let text = std::fs::read_to_string(fixture("v1-negative.txt")).unwrap_or_default();
    let _ = std::fs::write(&crlf, text.replace('\n', "\r\n"));
    let path = crlf.to_string_lossy().into_owned();
    let o = run(&["top", "-i", &path]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr_head(&o),
        format!(
            "allocinfo: {path}: line 1: unsupported version '1.0\\r' (this tool reads 1.0 \
             and 2.0); the file has CRLF line ends, which --lenient reads\n"
        )
    );
    // A 50,000-byte file name without a line number: the message quotes the start of it.
    let long = dir.join("long.txt");
    let row = format!("        4096        1 {} func:f \n", "a".repeat(50_000));
    let _ = std::fs::write(
        &long,
        format!("allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n{row}"),
    );
    let path = long.to_string_lossy().into_owned();
    let o = run(&["top", "-i", &path]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr_head(&o),
        format!(
            "allocinfo: {path}: line 3: expected file:line, found '{}'... (50000 bytes)\n",
            "a".repeat(60)
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn diff_help_does_not_offer_input() {
    let help = ok(&["diff", "--help"]);
    assert!(!help.contains("--input"), "{help}");
    assert!(ok(&["top", "--help"]).contains("-i, --input <FILE>"));
    // -i still works before or after the other commands.
    let f = fixture("v1-negative.txt");
    assert_eq!(
        ok(&["-i", &f, "top", "-n", "1"]),
        ok(&["top", "-n", "1", "-i", &f])
    );
}

#[test]
fn sizes_take_common_spellings_and_say_what_is_wrong() {
    let f = fixture("v1-builtin-modules.txt");
    let want = ok(&["top", "-n", "0", "--min-size", "64K", "-i", &f]);
    for spelling in ["64KB", "64kB", "64 KiB", "65536B", "0.0625MB", "0.0625 mb"] {
        assert_eq!(
            ok(&["top", "-n", "0", "--min-size", spelling, "-i", &f]),
            want,
            "{spelling}"
        );
    }
    let o = run(&["top", "--min-size=-1", "-i", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with(
            "error: invalid value '-1' for '--min-size <SIZE>': size '-1' is negative; \
             sizes are 0 or more\n"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn tree_hides_empty_groups_unless_all() {
    let f = fixture("vm-6.12.118-rust.txt");
    let empty = |out: &str| {
        out.lines()
            .filter(|l| l.starts_with("         0 B          0 "))
            .count()
    };
    let out = ok(&["tree", "-i", &f]);
    assert_eq!(empty(&out), 0, "{out}");
    assert_eq!(
        out.lines().last(),
        Some("(79 groups holding nothing are hidden; --all shows them)")
    );
    assert_eq!(empty(&ok(&["tree", "--all", "-i", &f])), 79);
}

#[test]
fn one_site_is_singular() {
    let dir = temp_dir("singular");
    let one = dir.join("one.txt");
    let _ = std::fs::write(
        &one,
        "allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n\
         \x20       4096        1 mm/slub.c:2450 func:alloc_slab_page \n",
    );
    let path = one.to_string_lossy().into_owned();
    let out = ok(&["top", "-i", &path]);
    assert_eq!(
        out.lines().last(),
        Some("total: 4.0 KiB in 1 live allocation at 1 site (1 shown)")
    );
    let out = ok(&["watch", "-c", "1", "--interval", "0.01", "-i", &path]);
    assert!(out.contains(": 4.0 KiB at 1 site (baseline)\n"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_csv_folded_and_pprof() {
    let f = fixture("v1-negative.txt");
    let csv = ok(&["export", "-f", "csv", "--module", "ext4", "-i", &f]);
    assert_eq!(
        csv,
        "file,line,module,function,bytes,calls,calls_wrapped,inaccurate\r\n\
         fs/ext4/inode.c,5021,ext4,__ext4_iget,4096,1,0,0\r\n"
    );
    let csv = ok(&["export", "-f", "csv", "--file", "khugepaged", "-i", &f]);
    assert!(
        csv.ends_with("\r\nmm/khugepaged.c,1075,,alloc_charge_folio,0,-1,1,0\r\n"),
        "{csv}"
    );
    let folded = ok(&["export", "-f", "folded", "--file", "mm/", "-i", &f]);
    assert_eq!(
        folded,
        "vmlinux;mm;memory.c;folio_prealloc 39182336\nvmlinux;mm;slub.c;alloc_slab_page 84561920\n"
    );
    let o = run(&["export", "-f", "pprof", "-i", &f]);
    assert_eq!(o.status.code(), Some(0));
    // The first field is sample_type (1, length-delimited): inuse_objects/count.
    assert_eq!(
        o.stdout.get(..6),
        Some(&[0x0a, 0x04, 0x08, 0x01, 0x10, 0x02][..])
    );
    let o = run(&["--json", "export", "-f", "csv", "-i", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "allocinfo: --json applies to export -f prometheus and openmetrics only\n"
    );
}

#[test]
fn lenient_reads_damaged_copies() {
    let dir = temp_dir("lenient");
    let text = std::fs::read_to_string(fixture("v1-builtin-modules.txt")).unwrap_or_default();
    let damaged = dir.join("damaged.txt");
    let mangled: String = text
        .lines()
        .map(|l| format!("{}\r\n", l.trim_end_matches(' ')))
        .collect();
    let _ = std::fs::write(&damaged, format!("{mangled}\r\n"));
    let path = damaged.to_string_lossy().into_owned();
    let o = run(&["top", "-n", "0", "-i", &path]);
    assert_eq!(o.status.code(), Some(1), "strict by default");
    let want = ok(&["top", "-n", "0", "-i", &fixture("v1-builtin-modules.txt")]);
    assert_eq!(ok(&["top", "-n", "0", "--lenient", "-i", &path]), want);
    let diff = ok(&[
        "--lenient",
        "diff",
        &path,
        &fixture("v1-builtin-modules.txt"),
    ]);
    assert!(
        diff.ends_with("; 0 grew, 0 shrank, 0 new, 0 gone, 65 same\n"),
        "{diff}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn focus_and_exclude() {
    let f = fixture("v1-negative.txt");
    let out = ok(&[
        "top",
        "-n",
        "0",
        "--bytes",
        "--focus",
        "^mm/",
        "--exclude",
        "func:alloc_",
        "-i",
        &f,
    ]);
    let sites: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split("  ").last())
        .filter(|s| s.contains(" func:"))
        .collect();
    assert_eq!(
        sites,
        [
            "mm/memory.c:1122 func:folio_prealloc",
            "mm/compaction.c:1835 func:compaction_alloc",
            "mm/huge_memory.c:3415 func:__split_huge_page",
        ]
    );
    let o = run(&["top", "--exclude", "(", "-i", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a regular expression"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn ioctl_source_is_for_the_live_file_only() {
    let f = fixture("v1-negative.txt");
    let o = run(&["--source", "ioctl", "top", "-i", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!("allocinfo: --source ioctl reads /proc/allocinfo itself, not {f}\n")
    );
    // auto and text read files as text.
    let want = ok(&["top", "-i", &f]);
    assert_eq!(ok(&["--source", "auto", "top", "-i", &f]), want);
    assert_eq!(ok(&["top", "--source", "text", "-i", &f]), want);
    let json = ok(&["--json", "top", "-i", &f]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    assert_eq!(v["source"], f.as_str());
}

fn capture_fixture(name: &str) -> String {
    fixture(&format!("capture/{name}"))
}

/// A temporary control file, created empty as the kernel's exists before the tool writes it.
fn control_file(dir: &std::path::Path) -> String {
    let path = dir.join("allocinfo_capture");
    if let Err(e) = std::fs::write(&path, "") {
        panic!("create {}: {e}", path.display());
    }
    path.to_string_lossy().into_owned()
}

fn read(path: &str) -> String {
    match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => panic!("read {path}: {e}"),
    }
}

#[test]
fn capture_arm_and_disarm_write_exact_commands() {
    let dir = temp_dir("capture-control");
    let file = control_file(&dir);
    let out = ok(&[
        "capture",
        "arm",
        "mm/util.c:650",
        "function:seq_buf_alloc",
        "module:seq",
        "lib/a.c:7",
        "--file",
        &file,
    ]);
    assert_eq!(
        read(&file),
        "arm mm/util.c:650\narm function:seq_buf_alloc module:seq\narm lib/a.c:7\n"
    );
    assert_eq!(
        out,
        "arm mm/util.c:650\narm function:seq_buf_alloc module:seq\narm lib/a.c:7\n"
    );

    let file = control_file(&dir);
    ok(&[
        "capture",
        "disarm",
        "--module",
        "ext4",
        "fs/ext4/super.c:100",
        "a.c:1",
        "module:m",
        "--file",
        &file,
    ]);
    assert_eq!(
        read(&file),
        "disarm fs/ext4/super.c:100 module:ext4\ndisarm a.c:1 module:m\n"
    );

    let file = control_file(&dir);
    let out = ok(&["--json", "capture", "disarm", "--all", "--file", &file]);
    assert_eq!(read(&file), "disarm all\n");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["written"][0], "disarm all");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_control_errors() {
    let dir = temp_dir("capture-errors");
    let file = control_file(&dir);
    // Bad specs are usage errors, and nothing is written.
    for bad in [
        &["capture", "arm", "mm/util.c", "--file", &file][..],
        &["capture", "arm", "mm/util.c:x", "--file", &file],
        &["capture", "arm", "module:m", "--file", &file],
        &["capture", "arm", "function:", "--file", &file],
        &["capture", "arm", "a.c:1 b.c:2", "--file", &file],
        &["capture", "arm", "--file", &file],
        &["capture", "disarm", "--file", &file],
        &["capture", "disarm", "--all", "a.c:1", "--file", &file],
        &["-i", "x", "capture", "arm", "a.c:1", "--file", &file],
        &["capture", "--source", "ioctl", "show"],
        &["--json", "capture", "export", "-i", "x"],
    ] {
        let o = run(bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
    let long = format!("{}:1", "d/".repeat(130));
    let o = run(&["capture", "arm", &long, "--file", &file]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("longer than the 255 bytes"),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(&file), "");

    // A file that is not there is not created.
    let missing = dir.join("missing").to_string_lossy().into_owned();
    let o = run(&["capture", "arm", "a.c:1", "--file", &missing]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with(&format!("allocinfo: cannot open {missing}: ")));
    assert!(!dir.join("missing").exists());

    // A write refused with ENOSPC (/dev/full): the errno in words, what was not tried.
    let o = run(&["capture", "arm", "a.c:1", "b.c:2", "--file", "/dev/full"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with("allocinfo: /dev/full: 'arm a.c:1': the kernel's cap of armed sites"),
        "{err}"
    );
    assert!(
        err.contains("(ENOSPC); none of its sites was armed"),
        "{err}"
    );
    assert!(
        err.trim_end().ends_with("; not tried: 'arm b.c:2'"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_show_text_and_json() {
    let f = capture_fixture("two-sites.txt");
    let out = ok(&["capture", "show", "-i", &f]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("{f}: 2 of 8 sites armed, 9 of 16384 records live")
    );
    assert!(out.contains(
        "\nsite mm/util.c:650 func:kvmalloc_node_noprof\n\
         \x20 total:    1.1 MiB in 21 live allocations\n\
         \x20 captured: 76.0 KiB in 4 calls (3 stacks); 2 since arming got no record\n\
         \x20 stack 1 of 3: 64.0 KiB in 2 calls\n\
         \x20     __kmalloc_node_noprof+0x1c2/0x420\n\
         \x20     kvmalloc_node_noprof+0x4a/0xd0\n\
         \x20     0xffffffffc0a01234\n\
         \x20 stack 2 of 3: 4.0 KiB in 1 call\n"
    ));
    assert!(out.ends_with(
        "  other stacks (past the kernel's per-site cap, or none taken): 8.0 KiB in 1 call\n"
    ));
    // The global -i before the command, and -n.
    let out = ok(&["-i", &f, "capture", "show", "-n", "1", "--bytes"]);
    assert!(out.contains("  stack 1 of 3: 65536 in 2 calls\n"), "{out}");
    assert!(
        out.contains("  (2 stacks more: 4096 in 1 call; -n 0 shows all)\n"),
        "{out}"
    );

    let out = ok(&["capture", "show", "--json", "-i", &f]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["source"], f.as_str());
    assert_eq!(v["armed"], 2);
    assert_eq!(v["sites"][0]["module"], "alloc_tag_test");
    assert_eq!(v["sites"][0]["stacks"][0]["bytes"], 256);
    assert_eq!(
        v["sites"][0]["stacks"][0]["frames"][1]["text"],
        "att_capture_wrapper+0x4c/0x60 [alloc_tag_test]"
    );
    assert_eq!(
        v["sites"][1]["stacks"][0]["frames"][2]["offset"],
        serde_json::Value::Null
    );
    assert_eq!(v["sites"][1]["other"]["bytes"], 8192);

    let out = ok(&["capture", "show", "-i", &capture_fixture("none-armed.txt")]);
    assert!(
        out.ends_with(": 0 of 8 sites armed, 0 of 16384 records live\n"),
        "{out}"
    );
}

#[test]
fn capture_show_reads_standard_input() {
    let text = read(&capture_fixture("one-site.txt"));
    let mut child = Command::new(BIN)
        .args(["capture", "show", "-i", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("<stdin>: 1 of 8 sites armed"));
}

#[test]
fn capture_malformed_reports_are_refused_with_their_line() {
    let cases = [
        ("not-capture.txt", 1, "this is /proc/allocinfo text"),
        (
            "bad-version.txt",
            1,
            "unsupported capture report version '1.1'",
        ),
        ("bad-site.txt", 2, "expected func:<name>"),
        ("bad-frame.txt", 4, "offset '12' is not 0x<hex>"),
        ("frame-outside-stack.txt", 3, "outside a stack"),
        ("stack-without-frames.txt", 4, "stack without frames"),
        ("bad-other.txt", 5, "bytes 'x'"),
        ("blank-line.txt", 5, "expected a 'site'"),
        ("stack-count.txt", 5, "says stacks:2 but has 1"),
        ("captured-count.txt", 5, "says captured:3"),
        ("truncated.txt", 5, "1 of the 2 armed sites"),
    ];
    for (name, line, needle) in cases {
        let path = capture_fixture(&format!("malformed/{name}"));
        for args in [
            &["capture", "show", "-i", &path][..],
            &["capture", "export", "-f", "folded", "-i", &path],
        ] {
            let o = run(args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{name}: {err}");
            assert!(
                err.starts_with(&format!("allocinfo: {path}: line {line}: ")),
                "{name}: {err}"
            );
            assert!(err.contains(needle), "{name}: {err}");
            assert!(o.stdout.is_empty(), "{name}: partial output");
        }
    }
    // --lenient reads the blank line.
    let path = capture_fixture("malformed/blank-line.txt");
    ok(&["--lenient", "capture", "show", "-i", &path]);
}

#[test]
fn capture_export_folded_and_pprof() {
    let f = capture_fixture("two-sites.txt");
    let out = ok(&["capture", "export", "-f", "folded", "-i", &f]);
    assert_eq!(
        out,
        "0xffffffffc0a01234;kvmalloc_node_noprof;__kmalloc_node_noprof 65536\n\
         [other stacks];kvmalloc_node_noprof 8192\n\
         entry_SYSCALL_64_after_hwframe;att_capture_caller0 [alloc_tag_test];att_capture_wrapper [alloc_tag_test];slab_alloc_node 192\n\
         entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_read;vfs_read;seq_read_iter;kvmalloc_node_noprof;__kmalloc_node_noprof 4096\n\
         entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;vfs_write;att_capture [alloc_tag_test];att_capture_caller1 [alloc_tag_test];att_capture_wrapper [alloc_tag_test];slab_alloc_node 256\n"
    );
    let dir = temp_dir("capture-export");
    let pb = dir.join("capture.pb");
    let pb_s = pb.to_string_lossy().into_owned();
    let out = ok(&["capture", "export", "-i", &f, "-o", &pb_s]);
    assert!(out.is_empty());
    let data = std::fs::read(&pb).unwrap();
    // A profile.proto: sample types first (field 1, length-delimited), the names in the table.
    assert_eq!(data[0], 0x0a);
    let text = String::from_utf8_lossy(&data);
    for s in [
        "inuse_space",
        "att_capture_caller1",
        "alloc_tag_test",
        "[other stacks]",
        "site_function",
    ] {
        assert!(text.contains(s), "{s} not in the profile");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
