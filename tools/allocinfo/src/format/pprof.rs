// SPDX-License-Identifier: GPL-2.0
//! pprof's profile.proto, encoded by hand (the schema is small and stable): one sample per site
//! with its live allocations and bytes, the site as a location with one line in its function.
//!
//! [`render_capture`] encodes a context-capture report instead: one sample per captured stack,
//! its frames as locations (leaf first), one function per symbol and module.
//!
//! Field numbers are those of github.com/google/pprof/proto/profile.proto. The output is not
//! gzipped; pprof reads either.

use std::collections::HashMap;

use crate::capture::{Frame, Report};
use crate::profile::{Site, SiteTotals, BUILTIN_MODULE};

/// Protocol buffer wire types.
const VARINT: u64 = 0;
const LEN: u64 = 2;

/// A protocol buffer message under construction.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u64, wire: u64) {
        self.varint(field << 3 | wire);
    }

    /// An `int64` or `uint64` field; zero is the default and is left out.
    fn int(&mut self, field: u64, v: i64) {
        if v != 0 {
            self.key(field, VARINT);
            // int64 is encoded as its two's complement bits (ten bytes when negative).
            self.varint(u64::from_ne_bytes(v.to_ne_bytes()));
        }
    }

    fn bytes(&mut self, field: u64, data: &[u8]) {
        self.key(field, LEN);
        self.varint(data.len() as u64);
        self.0.extend_from_slice(data);
    }

    fn message(&mut self, field: u64, m: Message) {
        self.bytes(field, &m.0);
    }

    /// A packed repeated `int64`/`uint64` field.
    fn packed(&mut self, field: u64, values: &[i64]) {
        let mut inner = Message::default();
        for &v in values {
            inner.varint(u64::from_ne_bytes(v.to_ne_bytes()));
        }
        self.bytes(field, &inner.0);
    }
}

/// The string table: index 0 is the empty string, as the format requires.
struct Strings {
    index: HashMap<String, i64>,
    table: Vec<String>,
}

impl Strings {
    fn new() -> Self {
        Strings {
            index: HashMap::from([(String::new(), 0)]),
            table: vec![String::new()],
        }
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.index.insert(s.to_string(), i);
        self.table.push(s.to_string());
        i
    }
}

// Field numbers of profile.proto.
mod field {
    pub const PROFILE_SAMPLE_TYPE: u64 = 1;
    pub const PROFILE_SAMPLE: u64 = 2;
    pub const PROFILE_LOCATION: u64 = 4;
    pub const PROFILE_FUNCTION: u64 = 5;
    pub const PROFILE_STRING_TABLE: u64 = 6;
    pub const PROFILE_TIME_NANOS: u64 = 9;
    pub const PROFILE_COMMENT: u64 = 13;
    pub const PROFILE_DEFAULT_SAMPLE_TYPE: u64 = 14;
    pub const VALUE_TYPE_TYPE: u64 = 1;
    pub const VALUE_TYPE_UNIT: u64 = 2;
    pub const SAMPLE_LOCATION_ID: u64 = 1;
    pub const SAMPLE_VALUE: u64 = 2;
    pub const SAMPLE_LABEL: u64 = 3;
    pub const LABEL_KEY: u64 = 1;
    pub const LABEL_STR: u64 = 2;
    pub const LOCATION_ID: u64 = 1;
    pub const LOCATION_LINE: u64 = 4;
    pub const LINE_FUNCTION_ID: u64 = 1;
    pub const LINE_LINE: u64 = 2;
    pub const FUNCTION_ID: u64 = 1;
    pub const FUNCTION_NAME: u64 = 2;
    pub const FUNCTION_SYSTEM_NAME: u64 = 3;
    pub const FUNCTION_FILENAME: u64 = 4;
}

fn value_type(strings: &mut Strings, kind: &str, unit: &str) -> Message {
    let mut m = Message::default();
    m.int(field::VALUE_TYPE_TYPE, strings.id(kind));
    m.int(field::VALUE_TYPE_UNIT, strings.id(unit));
    m
}

/// Saturates a wide counter into the int64 pprof stores.
fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// A profile with the sample types inuse_objects/count and inuse_space/bytes.
fn start() -> (Strings, Message) {
    let mut strings = Strings::new();
    let mut profile = Message::default();
    let objects = value_type(&mut strings, "inuse_objects", "count");
    profile.message(field::PROFILE_SAMPLE_TYPE, objects);
    let space = value_type(&mut strings, "inuse_space", "bytes");
    profile.message(field::PROFILE_SAMPLE_TYPE, space);
    (strings, profile)
}

/// The time, comment, default type (inuse_space) and string table that end a profile.
fn finish(mut strings: Strings, mut profile: Message, unix_ms: i64, comment: &str) -> Vec<u8> {
    profile.int(field::PROFILE_TIME_NANOS, unix_ms.saturating_mul(1_000_000));
    let comment = strings.id(comment);
    profile.packed(field::PROFILE_COMMENT, &[comment]);
    let default_type = strings.id("inuse_space");
    profile.int(field::PROFILE_DEFAULT_SAMPLE_TYPE, default_type);
    for s in &strings.table {
        profile.bytes(field::PROFILE_STRING_TABLE, s.as_bytes());
    }
    profile.0
}

/// A string label.
fn label(strings: &mut Strings, key: &str, value: &str) -> Message {
    let mut label = Message::default();
    label.int(field::LABEL_KEY, strings.id(key));
    label.int(field::LABEL_STR, strings.id(value));
    label
}

/// The encoded profile. `unix_ms` is when the data was read; `comment` says from where.
pub fn render(sites: &[(&Site, SiteTotals)], unix_ms: i64, comment: &str) -> Vec<u8> {
    let samples: Vec<_> = sites.iter().map(|&(site, t)| (site, None, t)).collect();
    render_samples(&samples, unix_ms, comment)
}

/// As [`render`], one sample per site and node, with the node id as the string label `node`
/// (`"1"`); the samples of one site share its location.
pub fn render_nodes(sites: &[(&Site, u32, SiteTotals)], unix_ms: i64, comment: &str) -> Vec<u8> {
    let samples: Vec<_> = sites
        .iter()
        .map(|&(site, node, t)| (site, Some(node), t))
        .collect();
    render_samples(&samples, unix_ms, comment)
}

fn render_samples(
    sites: &[(&Site, Option<u32>, SiteTotals)],
    unix_ms: i64,
    comment: &str,
) -> Vec<u8> {
    let (mut strings, mut profile) = start();

    // Interned first, as it always was: the output stays byte for byte the same.
    strings.id("module");
    // One function per (name, file): sites on several lines of a function share it.
    let mut functions: HashMap<(&str, &str), i64> = HashMap::new();
    // One location per site: the samples of its nodes share it.
    let mut locations: HashMap<&Site, i64> = HashMap::new();
    for (site, node, t) in sites {
        let next_id = functions.len() as i64 + 1;
        let function_id = *functions
            .entry((site.function.as_str(), site.file.as_str()))
            .or_insert_with(|| {
                let mut f = Message::default();
                f.int(field::FUNCTION_ID, next_id);
                let name = strings.id(&site.function);
                f.int(field::FUNCTION_NAME, name);
                f.int(field::FUNCTION_SYSTEM_NAME, name);
                f.int(field::FUNCTION_FILENAME, strings.id(&site.file));
                profile.message(field::PROFILE_FUNCTION, f);
                next_id
            });

        let next_id = locations.len() as i64 + 1;
        let location_id = *locations.entry(site).or_insert_with(|| {
            let mut line = Message::default();
            line.int(field::LINE_FUNCTION_ID, function_id);
            line.int(field::LINE_LINE, i64::from(site.line));
            let mut location = Message::default();
            location.int(field::LOCATION_ID, next_id);
            location.message(field::LOCATION_LINE, line);
            profile.message(field::PROFILE_LOCATION, location);
            next_id
        });

        let module = label(&mut strings, "module", site.module_or_vmlinux());
        let mut sample = Message::default();
        sample.packed(field::SAMPLE_LOCATION_ID, &[location_id]);
        sample.packed(field::SAMPLE_VALUE, &[saturate(t.calls), saturate(t.bytes)]);
        sample.message(field::SAMPLE_LABEL, module);
        if let Some(node) = node {
            let node = label(&mut strings, "node", &node.to_string());
            sample.message(field::SAMPLE_LABEL, node);
        }
        profile.message(field::PROFILE_SAMPLE, sample);
    }
    finish(strings, profile, unix_ms, comment)
}

/// The synthetic outermost frame of a site's `other` bucket (stacks past the kernel's cap).
pub const OTHER_STACKS: &str = "[other stacks]";

/// Functions and locations of a capture profile, each made once.
#[derive(Default)]
struct Frames {
    /// (name, module) to function id: two modules' static functions of one name stay apart.
    functions: HashMap<(String, Option<String>), i64>,
    /// Frame text (or a synthetic frame's function) to location id.
    locations: HashMap<String, i64>,
}

impl Frames {
    fn function(
        &mut self,
        strings: &mut Strings,
        profile: &mut Message,
        name: &str,
        filename: &str,
        module: Option<&str>,
    ) -> i64 {
        let key = (name.to_string(), module.map(str::to_string));
        let next_id = self.functions.len() as i64 + 1;
        *self.functions.entry(key).or_insert_with(|| {
            let mut f = Message::default();
            f.int(field::FUNCTION_ID, next_id);
            let name = strings.id(name);
            f.int(field::FUNCTION_NAME, name);
            f.int(field::FUNCTION_SYSTEM_NAME, name);
            f.int(field::FUNCTION_FILENAME, strings.id(filename));
            profile.message(field::PROFILE_FUNCTION, f);
            next_id
        })
    }

    /// The location of `key`, made with one line in `function_id` if new.
    fn location(&mut self, profile: &mut Message, key: String, function_id: i64) -> i64 {
        let next_id = self.locations.len() as i64 + 1;
        *self.locations.entry(key).or_insert_with(|| {
            let mut line = Message::default();
            line.int(field::LINE_FUNCTION_ID, function_id);
            let mut location = Message::default();
            location.int(field::LOCATION_ID, next_id);
            location.message(field::LOCATION_LINE, line);
            profile.message(field::PROFILE_LOCATION, location);
            next_id
        })
    }

    /// A frame of a captured stack: its function's file name is the module (`vmlinux` for
    /// built-in code; empty for a bare address, whose module is unknown).
    fn frame(&mut self, strings: &mut Strings, profile: &mut Message, f: &Frame) -> i64 {
        let filename = match (&f.module, f.offset) {
            (Some(m), _) => m.as_str(),
            (None, Some(_)) => BUILTIN_MODULE,
            (None, None) => "",
        };
        let id = self.function(strings, profile, &f.function, filename, f.module.as_deref());
        self.location(profile, format!("frame {}", f.text), id)
    }
}

/// A context-capture report as a profile: one sample per stack with its live calls and bytes,
/// locations leaf first (the kernel's innermost-first order), labels `site` (FILE:LINE),
/// `site_function` and `module` (the site's, `vmlinux` for built-in code). A site's `other`
/// bucket is a sample of two frames, the site's function under [`OTHER_STACKS`]. Stacks of 0
/// calls and 0 bytes are left out.
pub fn render_capture(report: &Report, unix_ms: i64, comment: &str) -> Vec<u8> {
    let (mut strings, mut profile) = start();
    let mut frames = Frames::default();
    for site in &report.sites {
        let s = &site.site;
        let module = s.module_or_vmlinux();
        let mut samples: Vec<(Vec<i64>, i64, i64)> = Vec::new();
        for stack in site
            .stacks
            .iter()
            .filter(|st| st.bytes != 0 || st.calls != 0)
        {
            let ids = stack
                .frames
                .iter()
                .map(|f| frames.frame(&mut strings, &mut profile, f))
                .collect();
            samples.push((ids, stack.calls, stack.bytes));
        }
        if let Some(o) = site.other.as_ref().filter(|o| o.bytes != 0 || o.calls != 0) {
            let own = frames.function(
                &mut strings,
                &mut profile,
                &s.function,
                module,
                s.module.as_deref(),
            );
            let own = frames.location(&mut profile, format!("site {}", s.tag_text()), own);
            let other = frames.function(&mut strings, &mut profile, OTHER_STACKS, "", None);
            let other = frames.location(&mut profile, OTHER_STACKS.to_string(), other);
            samples.push((vec![own, other], o.calls, o.bytes));
        }
        for (ids, calls, bytes) in samples {
            let mut sample = Message::default();
            sample.packed(field::SAMPLE_LOCATION_ID, &ids);
            sample.packed(field::SAMPLE_VALUE, &[calls, bytes]);
            let site_text = format!("{}:{}", s.file, s.line);
            for (key, value) in [
                ("site", site_text.as_str()),
                ("site_function", s.function.as_str()),
                ("module", module),
            ] {
                let l = label(&mut strings, key, value);
                sample.message(field::SAMPLE_LABEL, l);
            }
            profile.message(field::PROFILE_SAMPLE, sample);
        }
    }
    finish(strings, profile, unix_ms, comment)
}

/// The decoder the tests read the profiles back with, shared with the end-to-end tests.
#[cfg(test)]
#[path = "../../tests/proto/mod.rs"]
mod proto;

#[cfg(test)]
mod tests {
    use super::proto::{decode, int, messages, packed};
    use super::*;

    #[test]
    fn varints_match_the_wire_format() {
        let mut m = Message::default();
        m.varint(300);
        assert_eq!(m.0, [0xac, 0x02]);
        let mut m = Message::default();
        m.int(2, -1);
        assert_eq!(
            m.0,
            [0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        let mut m = Message::default();
        m.int(2, 0);
        assert!(m.0.is_empty());
        let mut m = Message::default();
        m.packed(1, &[3, 270]);
        assert_eq!(m.0, [0x0a, 0x03, 0x03, 0x8e, 0x02]);
    }

    /// One decoded sample: its frames leaf first as `function@filename`, values, labels.
    type Sample = (Vec<String>, Vec<u64>, Vec<(String, String)>);

    /// The samples of a profile, with the string table, functions and locations resolved.
    fn samples(data: &[u8]) -> (Vec<String>, Vec<Sample>) {
        use field::*;
        let p = decode(data);
        let strings: Vec<String> = messages(&p, PROFILE_STRING_TABLE)
            .into_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect();
        assert_eq!(strings[0], "");
        let s = |i: u64| strings[i as usize].clone();
        let mut functions = HashMap::new();
        for f in messages(&p, PROFILE_FUNCTION) {
            let f = decode(&f);
            assert_eq!(int(&f, FUNCTION_NAME), int(&f, FUNCTION_SYSTEM_NAME));
            let name = format!(
                "{}@{}",
                s(int(&f, FUNCTION_NAME)),
                s(int(&f, FUNCTION_FILENAME))
            );
            assert!(functions.insert(int(&f, FUNCTION_ID), name).is_none());
        }
        let mut locations = HashMap::new();
        for l in messages(&p, PROFILE_LOCATION) {
            let l = decode(&l);
            let lines = messages(&l, LOCATION_LINE);
            assert_eq!(lines.len(), 1);
            let line = decode(&lines[0]);
            let f = functions[&int(&line, LINE_FUNCTION_ID)].clone();
            assert!(locations.insert(int(&l, LOCATION_ID), f).is_none());
        }
        let types: Vec<(String, String)> = messages(&p, PROFILE_SAMPLE_TYPE)
            .iter()
            .map(|t| {
                let t = decode(t);
                (s(int(&t, VALUE_TYPE_TYPE)), s(int(&t, VALUE_TYPE_UNIT)))
            })
            .collect();
        assert_eq!(
            types,
            [
                ("inuse_objects".to_string(), "count".to_string()),
                ("inuse_space".to_string(), "bytes".to_string())
            ]
        );
        assert_eq!(s(int(&p, PROFILE_DEFAULT_SAMPLE_TYPE)), "inuse_space");
        let comments: Vec<String> = packed(&p, PROFILE_COMMENT).into_iter().map(s).collect();
        let samples = messages(&p, PROFILE_SAMPLE)
            .iter()
            .map(|m| {
                let m = decode(m);
                let frames = packed(&m, SAMPLE_LOCATION_ID)
                    .iter()
                    .map(|id| locations[id].clone())
                    .collect();
                let labels = messages(&m, SAMPLE_LABEL)
                    .iter()
                    .map(|l| {
                        let l = decode(l);
                        (s(int(&l, LABEL_KEY)), s(int(&l, LABEL_STR)))
                    })
                    .collect();
                (frames, packed(&m, SAMPLE_VALUE), labels)
            })
            .collect();
        (comments, samples)
    }

    #[test]
    fn capture_profile_decodes_back() {
        let r = crate::cmd::capture::testdata::report();
        let data = render_capture(&r, 1_700_000_000_000, "from t");
        assert_eq!(
            int(&decode(&data), field::PROFILE_TIME_NANOS),
            1_700_000_000_000_000_000
        );
        let (comments, got) = samples(&data);
        assert_eq!(comments, ["from t"]);
        let labels = |site: &str, func: &str, module: &str| {
            vec![
                ("site".to_string(), site.to_string()),
                ("site_function".to_string(), func.to_string()),
                ("module".to_string(), module.to_string()),
            ]
        };
        let frames = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let want: Vec<Sample> = vec![
            (
                frames(&["slab_alloc_node@vmlinux", "wrap@tmod", "caller0@tmod"]),
                vec![3, 192],
                labels("lib/t.c:270", "wrap", "tmod"),
            ),
            (
                frames(&[
                    "slab_alloc_node@vmlinux",
                    "wrap@tmod",
                    "caller1@tmod",
                    "vfs_write@vmlinux",
                ]),
                vec![2, 256],
                labels("lib/t.c:270", "wrap", "tmod"),
            ),
            (
                frames(&["wrap@tmod", "[other stacks]@"]),
                vec![1, 64],
                labels("lib/t.c:270", "wrap", "tmod"),
            ),
        ];
        assert_eq!(got, want);
        // One function per symbol and module (the other bucket's site function is wrap's);
        // one location per distinct frame, and two for the other bucket.
        let p = decode(&data);
        assert_eq!(messages(&p, field::PROFILE_FUNCTION).len(), 6);
        assert_eq!(messages(&p, field::PROFILE_LOCATION).len(), 5 + 2);
    }

    #[test]
    fn site_profile_unchanged_by_capture() {
        let site = Site {
            file: "mm/a.c".into(),
            line: 7,
            module: None,
            function: "f".into(),
        };
        let t = SiteTotals {
            bytes: 4096,
            calls: 2,
            ..SiteTotals::default()
        };
        let (comments, got) = samples(&render(&[(&site, t)], 0, "c"));
        assert_eq!(comments, ["c"]);
        assert_eq!(
            got,
            [(
                vec!["f@mm/a.c".to_string()],
                vec![2, 4096],
                vec![("module".to_string(), "vmlinux".to_string())]
            )]
        );
    }

    #[test]
    fn node_samples_share_their_sites_location() {
        let site = Site {
            file: "mm/a.c".into(),
            line: 7,
            module: Some("m".into()),
            function: "f".into(),
        };
        let t = |bytes, calls| SiteTotals {
            bytes,
            calls,
            ..SiteTotals::default()
        };
        let data = render_nodes(&[(&site, 0, t(4096, 1)), (&site, 3, t(-64, -1))], 0, "c");
        let (_, got) = samples(&data);
        let labels = |node: &str| {
            vec![
                ("module".to_string(), "m".to_string()),
                ("node".to_string(), node.to_string()),
            ]
        };
        let minus = |v: i64| u64::from_ne_bytes(v.to_ne_bytes());
        assert_eq!(
            got,
            [
                (vec!["f@mm/a.c".to_string()], vec![1, 4096], labels("0")),
                (
                    vec!["f@mm/a.c".to_string()],
                    vec![minus(-1), minus(-64)],
                    labels("3")
                ),
            ]
        );
        assert_eq!(messages(&decode(&data), field::PROFILE_LOCATION).len(), 1);
    }

    #[test]
    fn string_table_starts_empty_and_interns() {
        let mut s = Strings::new();
        assert_eq!((s.id(""), s.id("a"), s.id("b"), s.id("a")), (0, 1, 2, 1));
        assert_eq!(s.table, ["", "a", "b"]);
    }
}
