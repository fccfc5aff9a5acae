// SPDX-License-Identifier: GPL-2.0
//! Property tests: random profiles survive render -> parse unchanged, and bad input never panics.

use allocinfo::parse::{parse, parse_bytes};
use allocinfo::profile::{Profile, Row, Site, SnapshotMeta, Version};
use allocinfo::render::{profile_text, row_line};
use proptest::prelude::*;

fn site() -> impl Strategy<Value = Site> {
    (
        // Paths have no spaces but may hold anything else a file name can, ':' included.
        "[a-zA-Z0-9_.:\"\\\\-]{1,12}(/[a-zA-Z0-9_.\\-]{1,10}){0,3}",
        any::<u32>(),
        proptest::option::of("[a-z0-9_]{1,16}"),
        "[A-Za-z_][A-Za-z0-9_.]{0,24}",
    )
        .prop_map(|(file, line, module, function)| Site {
            file,
            line,
            module,
            function,
        })
}

fn fields() -> impl Strategy<Value = Vec<(String, String)>> {
    (
        proptest::option::of(prop_oneof!["no", "yes"]),
        proptest::collection::btree_map("[a-z_][a-z0-9_]{0,8}", "[!-~]{1,10}", 0..3),
    )
        .prop_map(|(accurate, extra)| {
            let mut fields: Vec<(String, String)> = accurate
                .map(|v| ("accurate".to_string(), v))
                .into_iter()
                .collect();
            fields.extend(extra.into_iter().filter(|(k, _)| k != "accurate"));
            fields
        })
}

fn row(version: Version) -> impl Strategy<Value = Row> {
    let fields = if version == Version::V2_0 {
        fields().boxed()
    } else {
        Just(Vec::new()).boxed()
    };
    (any::<i64>(), any::<u64>(), site(), fields).prop_map(|(bytes, calls, site, fields)| Row {
        bytes,
        calls,
        site,
        fields,
    })
}

fn profile() -> impl Strategy<Value = Profile> {
    prop_oneof![Just(Version::V1_0), Just(Version::V2_0)].prop_flat_map(|version| {
        (
            proptest::option::of((any::<i64>(), proptest::option::of("/[a-z/]{1,20}"))),
            proptest::collection::vec(row(version), 0..40),
        )
            .prop_map(move |(meta, rows)| Profile {
                version,
                snapshot: meta.map(|(unix_ms, source)| SnapshotMeta { unix_ms, source }),
                rows,
            })
    })
}

proptest! {
    #[test]
    fn rendered_profiles_parse_back(p in profile()) {
        let text = profile_text(&p);
        let back = parse(&text);
        prop_assert_eq!(back.as_ref(), Ok(&p), "text was:\n{}", text);
        prop_assert_eq!(profile_text(&p), text);
    }

    #[test]
    fn rows_keep_printf_layout(r in row(Version::V2_0)) {
        let line = row_line(&r);
        // Fields never shrink below their printf width and are separated by single spaces.
        // Shortest possible: "<12> <8> f:0 func:f \n".
        prop_assert!(line.len() >= 12 + 1 + 8 + 1 + "f:0 func:f".len() + 2);
        prop_assert!(line.ends_with(" \n"));
        let size_end = line.find(|c: char| c != ' ').unwrap_or(0)
            + r.bytes.to_string().len();
        prop_assert!(size_end >= 12);
        prop_assert_eq!(&line[size_end..size_end + 1], " ");
    }

    #[test]
    fn a_corrupted_row_is_reported_on_its_line(
        p in profile().prop_filter("needs rows", |p| !p.rows.is_empty()),
        pick in any::<prop::sample::Index>(),
    ) {
        let text = profile_text(&p);
        let mut lines: Vec<&str> = text.lines().collect();
        let header = if p.snapshot.is_some() { 3 } else { 2 };
        let i = header + pick.index(p.rows.len());
        let chopped = lines[i].trim_end_matches(' ').to_string();
        lines[i] = &chopped;
        let bad = lines.join("\n") + "\n";
        let e = parse(&bad).err();
        prop_assert_eq!(e.map(|e| e.line), Some(i + 1));
    }

    #[test]
    fn arbitrary_input_never_panics(
        head in prop_oneof![
            Just("allocinfo - version: 1.0\n#     <size>  <calls> <tag info>\n"),
            Just("allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n"),
            Just(""),
        ],
        body in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut data = head.as_bytes().to_vec();
        data.extend_from_slice(&body);
        let _ = parse_bytes(&data);
    }

    #[test]
    fn arbitrary_rows_never_panic(line in "[ 0-9:\\-\\[\\]a-z_.]{0,60}") {
        let text = format!("allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n{line}\n");
        let _ = parse(&text);
    }
}
