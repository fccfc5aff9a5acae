// SPDX-License-Identifier: GPL-2.0
//! The per-node views (`--by-node`) of the binary on the allocinfo_nodes fixtures: top, tree,
//! export in every format that takes a node, the summed rows of plain `-i`, and the errors.

use std::collections::HashMap;
use std::process::Command;

mod common;
mod proto;

use common::{fixture, ok, run, stderr, BIN};
use proto::{decode, int, messages, packed};

/// Exits with `code`, nothing on standard output, and standard error `want`.
fn fails(args: &[&str], code: i32, want: &str) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    assert!(o.stdout.is_empty(), "{args:?}: partial output");
    assert_eq!(stderr(&o), want, "{args:?}");
}

#[test]
fn top_by_node_text() {
    let f = fixture("nodes-2.txt");
    assert_eq!(
        ok(&["top", "--by-node", "-i", &f]),
        "        SIZE      CALLS  NODE  SITE\n\
         \x20  256.0 KiB         64    N1  mm/page_alloc.c:4800 func:__alloc_pages_noprof\n\
         \x20   64.0 KiB         16    N1  fs/ext4/super.c:100 [ext4] func:ext4_fill_super accurate:no\n\
         \x20   16.0 KiB          4    N0  mm/slub.c:2443 func:alloc_slab_page\n\
         \x20    8.0 KiB          2    N1  mm/slub.c:2443 func:alloc_slab_page\n\
         \x20    8.0 KiB          2    N1  mm/migrate.c:300 func:migrate_pages\n\
         \x20    4.0 KiB          1    N0  kernel/fork.c:77 func:dup_task_struct\n\
         \x20    1.0 KiB          1    N0  fs/ext4/super.c:100 [ext4] func:ext4_fill_super accurate:no\n\
         \x20      512 B          2    N1  tools/testing/selftests/alloc_tag/test_modules/alloc_tag_test.c:290 [alloc_tag_test] func:att_do_knode\n\
         \x20   -4.0 KiB         -1    N0  mm/migrate.c:300 func:migrate_pages (negative calls)\n\
         total: 353.5 KiB in 92 live allocations at 9 node rows on 2 nodes (9 shown); \
         1 row with a negative call count left out of the calls total\n"
    );
    // The filters of top apply to each row; --min-size to the row, not to the site's total.
    assert_eq!(
        ok(&[
            "top",
            "--by-node",
            "--bytes",
            "--module",
            "vmlinux",
            "--min-size",
            "8K",
            "--sort",
            "calls",
            "-n",
            "3",
            "-i",
            &f
        ]),
        "        SIZE      CALLS  NODE  SITE\n\
         \x20     262144         64    N1  mm/page_alloc.c:4800 func:__alloc_pages_noprof\n\
         \x20      16384          4    N0  mm/slub.c:2443 func:alloc_slab_page\n\
         \x20       8192          2    N1  mm/slub.c:2443 func:alloc_slab_page\n\
         total: 294912 in 72 live allocations at 4 of 9 node rows on 2 nodes (3 shown)\n"
    );
    assert_eq!(
        ok(&["top", "--by-node", "-i", &fixture("nodes-1.txt")]),
        "        SIZE      CALLS  NODE  SITE\n\
         \x20    4.0 MiB       1024    N0  mm/slub.c:2443 func:alloc_slab_page\n\
         \x20  256.0 KiB         64    N0  mm/page_alloc.c:4800 func:__alloc_pages_noprof\n\
         \x20    4.0 KiB          1    N0  fs/ext4/inode.c:55 [ext4] func:ext4_iget\n\
         total: 4.3 MiB in 1089 live allocations at 3 node rows on 1 node (3 shown)\n"
    );
}

#[test]
fn top_by_node_json() {
    let f = fixture("nodes-2.txt");
    let json = ok(&[
        "--json",
        "top",
        "--by-node",
        "-n",
        "2",
        "--file",
        "ext4",
        "-i",
        &f,
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    let want = serde_json::json!({
        "by_node": true,
        "source": f,
        "nodes": 2,
        "node_rows": 9,
        "matched": 2,
        "total_bytes": 66560,
        "total_calls": 17,
        "wrapped_calls": 0,
        "rows": [
            {
                "node": 1, "bytes": 65536, "calls": 16, "calls_wrapped": false,
                "file": "fs/ext4/super.c", "line": 100, "module": "ext4",
                "function": "ext4_fill_super", "accurate": false, "fields": {"accurate": "no"}
            },
            {
                "node": 0, "bytes": 1024, "calls": 1, "calls_wrapped": false,
                "file": "fs/ext4/super.c", "line": 100, "module": "ext4",
                "function": "ext4_fill_super", "accurate": false, "fields": {"accurate": "no"}
            }
        ]
    });
    assert_eq!(v, want, "{json}");
    // The negative row: "node" first, calls negative and marked.
    let json = ok(&["top", "--json", "--by-node", "-n", "0", "-i", &f]);
    assert!(
        json.contains(
            "    {\n      \"node\": 0,\n      \"bytes\": -4096,\n      \"calls\": -1,\n      \
             \"calls_wrapped\": true,\n      \"file\": \"mm/migrate.c\","
        ),
        "{json}"
    );
}

#[test]
fn tree_by_node() {
    let f = fixture("nodes-2.txt");
    assert_eq!(
        ok(&["tree", "--by-node", "-i", &f]),
        "        SIZE      CALLS  SITES  NODE / PATH\n\
         \x20  353.5 KiB         92      6  (all)\n\
         \x20   17.0 KiB          6      4    N0\n\
         \x20   12.0 KiB          4      2      mm/\n\
         \x20   16.0 KiB          4      1        mm/slub.c\n\
         \x20   -4.0 KiB          0      1        mm/migrate.c\n\
         \x20    4.0 KiB          1      1      kernel/\n\
         \x20    4.0 KiB          1      1        kernel/fork.c\n\
         \x20    1.0 KiB          1      1      fs/\n\
         \x20    1.0 KiB          1      1        fs/ext4/\n\
         \x20  336.5 KiB         86      5    N1\n\
         \x20  272.0 KiB         68      3      mm/\n\
         \x20  256.0 KiB         64      1        mm/page_alloc.c\n\
         \x20    8.0 KiB          2      1        mm/migrate.c\n\
         \x20    8.0 KiB          2      1        mm/slub.c\n\
         \x20   64.0 KiB         16      1      fs/\n\
         \x20   64.0 KiB         16      1        fs/ext4/\n\
         \x20      512 B          2      1      tools/\n\
         \x20      512 B          2      1        tools/testing/\n"
    );
    // Nodes stay in node order whatever --sort says; the groups under them follow it.
    assert_eq!(
        ok(&[
            "tree",
            "--by-node",
            "--by",
            "module",
            "--sort",
            "calls",
            "-i",
            &f
        ]),
        "        SIZE      CALLS  SITES  NODE / MODULE\n\
         \x20  353.5 KiB         92      6  (all)\n\
         \x20   17.0 KiB          6      4    N0\n\
         \x20   16.0 KiB          5      3      vmlinux\n\
         \x20    1.0 KiB          1      1      ext4\n\
         \x20  336.5 KiB         86      5    N1\n\
         \x20  272.0 KiB         68      3      vmlinux\n\
         \x20   64.0 KiB         16      1      ext4\n\
         \x20      512 B          2      1      alloc_tag_test\n"
    );
    // --min-size hides nodes and groups holding less, as it hides groups without --by-node.
    assert_eq!(
        ok(&[
            "tree",
            "--by-node",
            "--bytes",
            "-d",
            "0",
            "--min-size",
            "20K",
            "-i",
            &f
        ]),
        "        SIZE      CALLS  SITES  NODE / PATH\n\
         \x20     361984         92      6  (all)\n\
         \x20     344576         86      5    N1\n"
    );
    let json = ok(&[
        "tree",
        "--json",
        "--by-node",
        "-d",
        "1",
        "-i",
        &fixture("nodes-1.txt"),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    let group = |name: &str, bytes: i64, calls: i64, sites: i64, children| {
        serde_json::json!({
            "name": name, "bytes": bytes, "calls": calls, "sites": sites, "children": children
        })
    };
    let want = serde_json::json!({
        "by": "path",
        "depth": 1,
        "hidden_empty": 0,
        "nodes": 1,
        "root": group("(all)", 4460544, 1089, 3, vec![
            group("N0", 4460544, 1089, 3, vec![
                group("mm/", 4456448, 1088, 2, vec![]),
                group("fs/", 4096, 1, 1, vec![]),
            ]),
        ]),
    });
    assert_eq!(v, want, "{json}");
    // Without --by-node, no "nodes" key: the JSON of tree is as it was.
    let json = ok(&["tree", "--json", "-i", &fixture("nodes-1.txt")]);
    assert!(!json.contains("\"nodes\""), "{json}");
}

#[test]
fn export_by_node_openmetrics_and_prometheus() {
    let f = fixture("nodes-2.txt");
    // Without --line-label the line is no label; the series come by function, file, module, node.
    let labels = |file: &str, _line: u32, function: &str, module: &str, node: u32| {
        format!("{{function=\"{function}\",file=\"{file}\",module=\"{module}\",node=\"{node}\"}}")
    };
    let mut sites = [
        (
            "fs/ext4/super.c",
            100,
            "ext4_fill_super",
            "ext4",
            0,
            1024,
            1,
        ),
        (
            "fs/ext4/super.c",
            100,
            "ext4_fill_super",
            "ext4",
            1,
            65536,
            16,
        ),
        ("kernel/fork.c", 77, "dup_task_struct", "", 0, 4096, 1),
        ("mm/migrate.c", 300, "migrate_pages", "", 0, -4096, -1),
        ("mm/migrate.c", 300, "migrate_pages", "", 1, 8192, 2),
        (
            "mm/page_alloc.c",
            4800,
            "__alloc_pages_noprof",
            "",
            1,
            262144,
            64,
        ),
        ("mm/slub.c", 2443, "alloc_slab_page", "", 0, 16384, 4),
        ("mm/slub.c", 2443, "alloc_slab_page", "", 1, 8192, 2),
        (
            "tools/testing/selftests/alloc_tag/test_modules/alloc_tag_test.c",
            290,
            "att_do_knode",
            "alloc_tag_test",
            1,
            512,
            2,
        ),
    ];
    sites.sort_by_key(|&(file, _, function, module, node, _, _)| (function, file, module, node));
    let mut want = String::from(
        "# HELP allocinfo_bytes Bytes currently allocated from this call site, from /proc/allocinfo.\n\
         # TYPE allocinfo_bytes gauge\n\
         # UNIT allocinfo_bytes bytes\n",
    );
    for (file, line, function, module, node, bytes, _) in sites {
        let l = labels(file, line, function, module, node);
        want.push_str(&format!("allocinfo_bytes{l} {bytes}\n"));
    }
    want.push_str(
        "# HELP allocinfo_calls Live allocations (made and not yet freed) from this call site, from /proc/allocinfo.\n\
         # TYPE allocinfo_calls gauge\n",
    );
    for (file, line, function, module, node, _, calls) in sites {
        let l = labels(file, line, function, module, node);
        want.push_str(&format!("allocinfo_calls{l} {calls}\n"));
    }
    want.push_str(
        "# HELP allocinfo_inaccurate 1 when the kernel marked this site's counters accurate:no (some allocations were not counted).\n\
         # TYPE allocinfo_inaccurate gauge\n",
    );
    for node in [0, 1] {
        let l = labels("fs/ext4/super.c", 100, "ext4_fill_super", "ext4", node);
        want.push_str(&format!("allocinfo_inaccurate{l} 1\n"));
    }
    let om = ok(&["export", "--by-node", "-f", "openmetrics", "-i", &f]);
    assert_eq!(om, format!("{want}# EOF\n"));
    let prom = ok(&["export", "--by-node", "-i", &f]);
    assert_eq!(prom, want.replace("# UNIT allocinfo_bytes bytes\n", ""));
    // --min-size applies to each sample; the JSON form has the label too.
    let json = ok(&[
        "export",
        "--json",
        "--by-node",
        "--min-size",
        "64K",
        "-i",
        &f,
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    let bytes = &v["families"][0]["samples"];
    assert_eq!(bytes.as_array().map(Vec::len), Some(2), "{json}");
    assert_eq!(bytes[0]["labels"]["node"], "1");
    assert_eq!(bytes[0]["labels"]["function"], "__alloc_pages_noprof");
    assert_eq!(bytes[1]["labels"]["function"], "ext4_fill_super");
    // Without --by-node the same file gives one series per site, with no node label.
    let plain = ok(&["export", "-i", &f]);
    assert!(!plain.contains("node="), "{plain}");
    assert!(
        plain.contains(
            "allocinfo_bytes{function=\"ext4_fill_super\",file=\"fs/ext4/super.c\",module=\"ext4\"} 66560\n"
        ),
        "{plain}"
    );
}

#[test]
fn export_by_node_csv() {
    let f = fixture("nodes-2.txt");
    assert_eq!(
        ok(&["export", "--by-node", "-f", "csv", "-i", &f]),
        "file,line,module,function,node,bytes,calls,calls_wrapped,inaccurate\r\n\
         fs/ext4/super.c,100,ext4,ext4_fill_super,0,1024,1,0,1\r\n\
         fs/ext4/super.c,100,ext4,ext4_fill_super,1,65536,16,0,1\r\n\
         kernel/fork.c,77,,dup_task_struct,0,4096,1,0,0\r\n\
         mm/migrate.c,300,,migrate_pages,0,-4096,-1,1,0\r\n\
         mm/migrate.c,300,,migrate_pages,1,8192,2,0,0\r\n\
         mm/page_alloc.c,4800,,__alloc_pages_noprof,1,262144,64,0,0\r\n\
         mm/slub.c,2443,,alloc_slab_page,0,16384,4,0,0\r\n\
         mm/slub.c,2443,,alloc_slab_page,1,8192,2,0,0\r\n\
         tools/testing/selftests/alloc_tag/test_modules/alloc_tag_test.c,290,alloc_tag_test,att_do_knode,1,512,2,0,0\r\n"
    );
    assert_eq!(
        ok(&[
            "export",
            "--by-node",
            "-f",
            "csv",
            "--module",
            "ext4",
            "-i",
            &fixture("nodes-1.txt")
        ]),
        "file,line,module,function,node,bytes,calls,calls_wrapped,inaccurate\r\n\
         fs/ext4/inode.c,55,ext4,ext4_iget,0,4096,1,0,0\r\n"
    );
}

/// A decoded protocol buffer field: a varint or the bytes of a length-delimited one.
/// A pprof sample: `function@file:line`, values, labels.
type Sample = (String, Vec<i64>, Vec<(String, String)>);

/// The samples of a profile.proto, strings, functions and locations resolved (field numbers of
/// pprof's profile.proto, as src/format/pprof.rs writes them).
fn pprof_samples(data: &[u8]) -> Vec<Sample> {
    let p = decode(data);
    let strings: Vec<String> = messages(&p, 6)
        .into_iter()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    let s = |i: u64| strings[i as usize].clone();
    let functions: HashMap<u64, String> = messages(&p, 5)
        .iter()
        .map(|f| {
            let f = decode(f);
            (int(&f, 1), format!("{}@{}", s(int(&f, 2)), s(int(&f, 4))))
        })
        .collect();
    let locations: HashMap<u64, String> = messages(&p, 4)
        .iter()
        .map(|l| {
            let l = decode(l);
            let line = decode(&messages(&l, 4)[0]);
            let f = &functions[&int(&line, 1)];
            (int(&l, 1), format!("{f}:{}", int(&line, 2)))
        })
        .collect();
    assert_eq!(
        locations.len(),
        messages(&p, 4).len(),
        "location ids are unique"
    );
    messages(&p, 2)
        .iter()
        .map(|m| {
            let m = decode(m);
            let ids = packed(&m, 1);
            assert_eq!(ids.len(), 1);
            let labels = messages(&m, 3)
                .iter()
                .map(|l| {
                    let l = decode(l);
                    (s(int(&l, 1)), s(int(&l, 2)))
                })
                .collect();
            let values = packed(&m, 2)
                .into_iter()
                .map(|v| i64::from_ne_bytes(v.to_ne_bytes()))
                .collect();
            (locations[&ids[0]].clone(), values, labels)
        })
        .collect()
}

#[test]
fn export_by_node_pprof() {
    let f = fixture("nodes-2.txt");
    let o = run(&["export", "--by-node", "-f", "pprof", "-i", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let got = pprof_samples(&o.stdout);
    let sample = |loc: &str, calls: i64, bytes: i64, module: &str, node: &str| -> Sample {
        (
            loc.to_string(),
            vec![calls, bytes],
            vec![
                ("module".to_string(), module.to_string()),
                ("node".to_string(), node.to_string()),
            ],
        )
    };
    // By function, file, line, module, then node: the samples of one function are adjacent.
    let want = vec![
        sample(
            "__alloc_pages_noprof@mm/page_alloc.c:4800",
            64,
            262144,
            "vmlinux",
            "1",
        ),
        sample("alloc_slab_page@mm/slub.c:2443", 4, 16384, "vmlinux", "0"),
        sample("alloc_slab_page@mm/slub.c:2443", 2, 8192, "vmlinux", "1"),
        sample(
            "att_do_knode@tools/testing/selftests/alloc_tag/test_modules/alloc_tag_test.c:290",
            2,
            512,
            "alloc_tag_test",
            "1",
        ),
        sample("dup_task_struct@kernel/fork.c:77", 1, 4096, "vmlinux", "0"),
        sample("ext4_fill_super@fs/ext4/super.c:100", 1, 1024, "ext4", "0"),
        sample(
            "ext4_fill_super@fs/ext4/super.c:100",
            16,
            65536,
            "ext4",
            "1",
        ),
        sample("migrate_pages@mm/migrate.c:300", -1, -4096, "vmlinux", "0"),
        sample("migrate_pages@mm/migrate.c:300", 2, 8192, "vmlinux", "1"),
    ];
    assert_eq!(got, want);
    // One location per site, shared by the samples of its nodes.
    assert_eq!(messages(&decode(&o.stdout), 4).len(), 6);
    // Without --by-node: one sample per site (its nodes summed), no node label.
    let o = run(&["export", "-f", "pprof", "-i", &f]);
    let got = pprof_samples(&o.stdout);
    assert_eq!(got.len(), 6);
    assert_eq!(
        got[4],
        (
            "ext4_fill_super@fs/ext4/super.c:100".to_string(),
            vec![17, 66560],
            vec![("module".to_string(), "ext4".to_string())]
        )
    );
}

#[test]
fn plain_input_of_nodes_sums_each_tags_nodes() {
    let f = fixture("nodes-2.txt");
    assert_eq!(
        ok(&["top", "-i", &f]),
        "        SIZE      CALLS  SITE\n\
         \x20  256.0 KiB         64  mm/page_alloc.c:4800 func:__alloc_pages_noprof\n\
         \x20   65.0 KiB         17  fs/ext4/super.c:100 [ext4] func:ext4_fill_super accurate:no\n\
         \x20   24.0 KiB          6  mm/slub.c:2443 func:alloc_slab_page\n\
         \x20    4.0 KiB          1  mm/migrate.c:300 func:migrate_pages\n\
         \x20    4.0 KiB          1  kernel/fork.c:77 func:dup_task_struct\n\
         \x20      512 B          2  tools/testing/selftests/alloc_tag/test_modules/alloc_tag_test.c:290 [alloc_tag_test] func:att_do_knode\n\
         total: 353.5 KiB in 91 live allocations at 6 sites (6 shown)\n"
    );
    // A snapshot of it is /proc/allocinfo 2.0 text of the sums.
    let snap = ok(&["snapshot", "-i", &f]);
    assert!(
        snap.contains(
            "allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n\
             \x20      24576        6 mm/slub.c:2443 func:alloc_slab_page \n"
        ),
        "{snap}"
    );
    let csv = ok(&["export", "-f", "csv", "--module", "ext4", "-i", &f]);
    assert_eq!(
        csv,
        "file,line,module,function,bytes,calls,calls_wrapped,inaccurate\r\n\
         fs/ext4/super.c,100,ext4,ext4_fill_super,66560,17,0,1\r\n"
    );
    assert_eq!(
        ok(&["tree", "--by", "module", "-i", &f]),
        "        SIZE      CALLS  SITES  MODULE\n\
         \x20  353.5 KiB         91      6  (all)\n\
         \x20  288.0 KiB         72      4    vmlinux\n\
         \x20   65.0 KiB         17      1    ext4\n\
         \x20      512 B          2      1    alloc_tag_test\n"
    );
    let diff = ok(&["diff", &f, &fixture("nodes-1.txt")]);
    assert!(
        diff.ends_with(
            "total: 353.5 KiB -> 4.3 MiB (+3.9 MiB), calls 91 -> 1089 (+998); \
             1 grew, 0 shrank, 1 new, 4 gone, 1 same\n"
        ),
        "{diff}"
    );
    let same = ok(&["diff", &f, &f]);
    assert!(
        same.ends_with("0 grew, 0 shrank, 0 new, 0 gone, 6 same\n"),
        "{same}"
    );
    let watch = ok(&["watch", "--interval", "0.01", "-c", "2", "-i", &f]);
    assert!(
        watch.contains(": 353.5 KiB at 6 sites (0 B), 0 grew, 0 trending up\n"),
        "{watch}"
    );
}

#[test]
fn by_node_reads_standard_input() {
    let text = std::fs::read(fixture("nodes-1.txt")).unwrap_or_default();
    let mut child = match Command::new(BIN)
        .args(["top", "--by-node", "-i", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!("cannot run {BIN}: {e}"),
    };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(&text).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.ends_with(
            "total: 4.3 MiB in 1089 live allocations at 3 node rows on 1 node (3 shown)\n"
        ),
        "{out}"
    );
}

#[test]
fn malformed_nodes_files_fail_on_their_line() {
    let cases = [
        (
            "nodes-bad-header.txt",
            1,
            "node count 'two' is not a decimal integer",
        ),
        (
            "nodes-bad-column-header.txt",
            2,
            "expected column header '#     <size>  <calls> <node> <tag info>'",
        ),
        (
            "nodes-missing-node.txt",
            4,
            "expected N<node> after calls, found 'mm/slub.c:2443'",
        ),
        (
            "nodes-non-numeric-node.txt",
            3,
            "node 'x' is not a decimal integer",
        ),
        (
            "nodes-node-out-of-range.txt",
            5,
            "node 'N2' is not below the header's node count 2",
        ),
    ];
    for (name, line, message) in cases {
        let path = fixture(&format!("malformed/{name}"));
        let want = format!("allocinfo: {path}: line {line}: {message}\n");
        fails(&["top", "--by-node", "-i", &path], 1, &want);
        // Read without --by-node too: the same strict parser.
        fails(&["top", "-i", &path], 1, &want);
        fails(&["export", "--by-node", "-f", "csv", "-i", &path], 1, &want);
    }
}

#[test]
fn by_node_errors() {
    let plain = fixture("v1-negative.txt");
    fails(
        &["top", "--by-node", "-i", &plain],
        1,
        &format!(
            "allocinfo: {plain}: /proc/allocinfo text has no nodes: --by-node reads a copy of \
             /sys/kernel/debug/allocinfo_nodes\n"
        ),
    );
    let f = fixture("nodes-2.txt");
    fails(
        &["export", "--by-node", "-f", "folded", "-i", &f],
        2,
        "allocinfo: --by-node applies to export -f prometheus, openmetrics, csv and pprof, \
         not folded\n",
    );
    fails(
        &["--json", "export", "--by-node", "-f", "csv", "-i", &f],
        2,
        "allocinfo: --json applies to export -f prometheus and openmetrics only\n",
    );
    fails(
        &["top", "--by-node", "--source", "ioctl", "-i", &f],
        2,
        &format!("allocinfo: --source ioctl reads /proc/allocinfo itself, not {f}\n"),
    );
}

#[test]
fn live_by_node_without_the_kernel_support_says_so() {
    // Only where the machine has neither per-node source (a host without allocation
    // profiling): then --by-node names what is missing and exits 1.
    let proc = std::path::Path::new("/proc/allocinfo").exists();
    let debugfs = std::path::Path::new("/sys/kernel/debug/allocinfo_nodes").exists();
    if proc || debugfs {
        eprintln!("skipped: this machine has /proc/allocinfo or allocinfo_nodes");
        return;
    }
    for args in [
        &["top", "--by-node"][..],
        &["tree", "--by-node"],
        &["export", "--by-node"],
        &["top", "--by-node", "--source", "text"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with(
                "allocinfo: per-node attribution is not available: boot with alloc_tag_node=1 \
                 on a CONFIG_MEM_ALLOC_PROFILING_NUMA kernel ("
            ),
            "{args:?}: {err}"
        );
        assert!(err.contains("/sys/kernel/debug/allocinfo_nodes: "), "{err}");
    }
    let o = run(&["top", "--by-node", "--source", "ioctl"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(
            "allocinfo: per-node attribution is not available: boot with alloc_tag_node=1 on a \
             CONFIG_MEM_ALLOC_PROFILING_NUMA kernel (/proc/allocinfo: "
        ),
        "{}",
        stderr(&o)
    );
}
