// SPDX-License-Identifier: GPL-2.0
//! pprof's profile.proto through prost: one sample per site with its live allocations and
//! bytes, the site as a location with one line in its function.
//!
//! [`render_capture`] encodes a context-capture report instead: one sample per captured stack,
//! its frames as locations (leaf first), one function per symbol and module.
//!
//! The messages mirror the part of github.com/google/pprof/proto/profile.proto this tool
//! writes, with its field numbers. A site profile is streamed: each function, location and
//! sample is encoded as a field of the profile as soon as it is known (protobuf allows a message's
//! fields in any order and concatenates repeated ones), and the string table comes last. The
//! output is not gzipped; pprof reads either.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};

use prost::encoding::{self, WireType};
use prost::Message;

use crate::capture::{Frame, Report};
use crate::format::select::SiteSum;
use crate::profile::{TagRef, BUILTIN_MODULE};

/// A profile (profile.proto's `Profile`, without mappings and the fields this tool leaves
/// unset).
#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Index 0 is the empty string, as the format requires.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// The type and unit of a sample value, as string table indices.
#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One sample: its stack (leaf first), one value per sample type, its labels.
#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A string label: key and value as string table indices.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
}

/// A location: its id (from 1) and its lines.
#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// A source line in a function.
#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// A function: its id (from 1), names and file as string table indices.
#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// Field numbers of `Profile`, for the fields written one by one.
mod tag {
    pub const SAMPLE_TYPE: u32 = 1;
    pub const SAMPLE: u32 = 2;
    pub const LOCATION: u32 = 4;
    pub const FUNCTION: u32 = 5;
    pub const STRING_TABLE: u32 = 6;
    pub const TIME_NANOS: u32 = 9;
    pub const COMMENT: u32 = 13;
    pub const DEFAULT_SAMPLE_TYPE: u32 = 14;
}

/// The string table: index 0 is the empty string. Names borrowed from the profile are not copied.
struct Strings<'a> {
    index: HashMap<Cow<'a, str>, i64>,
    table: Vec<Cow<'a, str>>,
}

impl<'a> Strings<'a> {
    fn new() -> Self {
        Strings {
            index: HashMap::from([(Cow::Borrowed(""), 0)]),
            table: vec![Cow::Borrowed("")],
        }
    }

    fn id(&mut self, s: impl Into<Cow<'a, str>>) -> i64 {
        let s = s.into();
        if let Some(&i) = self.index.get(s.as_ref()) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.clone());
        self.index.insert(s, i);
        i
    }
}

/// Saturates a wide counter into the int64 pprof stores.
fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The sample types inuse_objects/count and inuse_space/bytes.
fn sample_types(strings: &mut Strings<'_>) -> Vec<ValueType> {
    [("inuse_objects", "count"), ("inuse_space", "bytes")]
        .into_iter()
        .map(|(kind, unit)| ValueType {
            r#type: strings.id(kind),
            unit: strings.id(unit),
        })
        .collect()
}

/// A string label.
fn label<'a>(strings: &mut Strings<'a>, key: &'a str, value: impl Into<Cow<'a, str>>) -> Label {
    Label {
        key: strings.id(key),
        str: strings.id(value),
    }
}

/// What a site profile says besides its samples.
#[derive(Clone, Copy, Debug)]
pub struct Meta<'a> {
    /// When the data was read, in milliseconds since the Unix epoch.
    pub unix_ms: i64,
    /// Where the data was read from.
    pub comment: &'a str,
    /// The kernel release, as the sample label `release`, when known.
    pub release: Option<&'a str>,
}

/// Writes the profile of `sites`: one sample per site (and node: the string label `node`,
/// `"1"`), labelled with its module (`vmlinux` for built-in code). The sites of one function
/// (name and file) must be adjacent, and the nodes of one site too ([`Order::Function`]): each
/// function and location is then written once, when its first sample is.
///
/// [`Order::Function`]: crate::format::select::Order::Function
pub fn write_sites<'a>(
    sites: impl Iterator<Item = SiteSum<'a>>,
    meta: &Meta<'a>,
    out: &mut impl Write,
) -> io::Result<()> {
    let mut strings = Strings::new();
    let mut buf = Vec::with_capacity(1 << 16);
    for t in sample_types(&mut strings) {
        encoding::message::encode(tag::SAMPLE_TYPE, &t, &mut buf);
    }
    let mut node_names: HashMap<u32, i64> = HashMap::new();
    let mut function = Function::default();
    let mut location = Location {
        id: 0,
        line: vec![Line::default()],
    };
    let mut sample = Sample::default();
    let mut last_function: Option<(&str, &str)> = None;
    let mut last_site: Option<TagRef<'_>> = None;
    for s in sites {
        let site = s.site;
        let key = (site.function, site.file);
        if last_function != Some(key) {
            last_function = Some(key);
            function.id += 1;
            function.name = strings.id(key.0);
            function.system_name = function.name;
            function.filename = strings.id(key.1);
            encoding::message::encode(tag::FUNCTION, &function, &mut buf);
        }
        if last_site != Some(site) {
            last_site = Some(site);
            location.id += 1;
            location.line[0] = Line {
                function_id: function.id,
                line: i64::from(site.line),
            };
            encoding::message::encode(tag::LOCATION, &location, &mut buf);
        }
        sample.location_id.clear();
        sample.location_id.push(location.id);
        sample.value.clear();
        sample
            .value
            .extend([saturate(s.totals.calls), saturate(s.totals.bytes)]);
        sample.label.clear();
        sample.label.push(label(
            &mut strings,
            "module",
            site.module.unwrap_or(BUILTIN_MODULE),
        ));
        if let Some(node) = s.node {
            let key = strings.id("node");
            let value = *node_names
                .entry(node)
                .or_insert_with(|| strings.id(node.to_string()));
            sample.label.push(Label { key, str: value });
        }
        if let Some(release) = meta.release {
            sample.label.push(label(&mut strings, "release", release));
        }
        encoding::message::encode(tag::SAMPLE, &sample, &mut buf);
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    encoding::int64::encode(
        tag::TIME_NANOS,
        &meta.unix_ms.saturating_mul(1_000_000),
        &mut buf,
    );
    encoding::int64::encode_packed(tag::COMMENT, &[strings.id(meta.comment)], &mut buf);
    encoding::int64::encode(
        tag::DEFAULT_SAMPLE_TYPE,
        &strings.id("inuse_space"),
        &mut buf,
    );
    for s in &strings.table {
        encoding::encode_key(tag::STRING_TABLE, WireType::LengthDelimited, &mut buf);
        encoding::encode_varint(s.len() as u64, &mut buf);
        buf.extend_from_slice(s.as_bytes());
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// The synthetic outermost frame of a site's `other` bucket (stacks past the kernel's cap).
pub const OTHER_STACKS: &str = "[other stacks]";

/// A capture profile under construction: functions and locations, each made once.
struct CaptureProfile<'a> {
    strings: Strings<'a>,
    profile: Profile,
    /// (name, module) to function id: two modules' static functions of one name stay apart.
    functions: HashMap<(&'a str, Option<&'a str>), u64>,
    /// Frame text (or a synthetic frame's function) to location id.
    locations: HashMap<String, u64>,
}

impl<'a> CaptureProfile<'a> {
    fn function(&mut self, name: &'a str, filename: &'a str, module: Option<&'a str>) -> u64 {
        let next_id = self.functions.len() as u64 + 1;
        *self.functions.entry((name, module)).or_insert_with(|| {
            let name = self.strings.id(name);
            self.profile.function.push(Function {
                id: next_id,
                name,
                system_name: name,
                filename: self.strings.id(filename),
            });
            next_id
        })
    }

    /// The location of `key`, made with one line in `function_id` if new.
    fn location(&mut self, key: String, function_id: u64) -> u64 {
        let next_id = self.locations.len() as u64 + 1;
        *self.locations.entry(key).or_insert_with(|| {
            self.profile.location.push(Location {
                id: next_id,
                line: vec![Line {
                    function_id,
                    line: 0,
                }],
            });
            next_id
        })
    }

    /// A frame of a captured stack: its function's file name is the module (`vmlinux` for
    /// built-in code; empty for a bare address, whose module is unknown).
    fn frame(&mut self, f: &'a Frame) -> u64 {
        let filename = match (&f.module, f.offset) {
            (Some(m), _) => m.as_str(),
            (None, Some(_)) => BUILTIN_MODULE,
            (None, None) => "",
        };
        let id = self.function(&f.function, filename, f.module.as_deref());
        self.location(format!("frame {}", f.text), id)
    }
}

/// A context-capture report as a profile: one sample per stack with its live calls and bytes,
/// locations leaf first (the kernel's innermost-first order), labels `site` (FILE:LINE),
/// `site_function` and `module` (the site's, `vmlinux` for built-in code). A site's `other`
/// bucket is a sample of two frames, the site's function under [`OTHER_STACKS`]. Stacks of 0
/// calls and 0 bytes are left out.
pub fn render_capture(report: &Report, unix_ms: i64, comment: &str) -> Vec<u8> {
    let mut strings = Strings::new();
    let sample_type = sample_types(&mut strings);
    let mut p = CaptureProfile {
        strings,
        profile: Profile {
            sample_type,
            ..Profile::default()
        },
        functions: HashMap::new(),
        locations: HashMap::new(),
    };
    for site in &report.sites {
        let s = &site.site;
        let module = s.module_or_vmlinux();
        let mut stacks: Vec<(Vec<u64>, i64, i64)> = Vec::new();
        for stack in site
            .stacks
            .iter()
            .filter(|st| st.bytes != 0 || st.calls != 0)
        {
            let ids = stack.frames.iter().map(|f| p.frame(f)).collect();
            stacks.push((ids, stack.calls, stack.bytes));
        }
        if let Some(o) = site.other.as_ref().filter(|o| o.bytes != 0 || o.calls != 0) {
            let own = p.function(&s.function, module, s.module.as_deref());
            let own = p.location(format!("site {}", s.tag_text()), own);
            let other = p.function(OTHER_STACKS, "", None);
            let other = p.location(OTHER_STACKS.to_string(), other);
            stacks.push((vec![own, other], o.calls, o.bytes));
        }
        let site_text = format!("{}:{}", s.file, s.line);
        for (location_id, calls, bytes) in stacks {
            let label = [
                ("site", Cow::Owned(site_text.clone())),
                ("site_function", Cow::Borrowed(s.function.as_str())),
                ("module", Cow::Borrowed(module)),
            ]
            .into_iter()
            .map(|(key, value)| label(&mut p.strings, key, value))
            .collect();
            p.profile.sample.push(Sample {
                location_id,
                value: vec![calls, bytes],
                label,
            });
        }
    }
    let mut profile = p.profile;
    let mut strings = p.strings;
    profile.time_nanos = unix_ms.saturating_mul(1_000_000);
    profile.comment = vec![strings.id(comment.to_string())];
    profile.default_sample_type = strings.id("inuse_space");
    profile.string_table = strings.table.into_iter().map(Cow::into_owned).collect();
    profile.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Site, SiteTotals};

    /// One decoded sample: its frames leaf first as `function@filename`, values, labels.
    type Decoded = (Vec<String>, Vec<i64>, Vec<(String, String)>);

    /// The samples of a profile, with the string table, functions and locations resolved, and
    /// its comments.
    fn samples(data: &[u8]) -> (Vec<String>, Vec<Decoded>) {
        let p = Profile::decode(data).unwrap();
        assert_eq!(p.string_table[0], "");
        let s = |i: i64| p.string_table[i as usize].clone();
        let mut functions = HashMap::new();
        for f in &p.function {
            assert_eq!(f.name, f.system_name);
            let name = format!("{}@{}", s(f.name), s(f.filename));
            assert!(functions.insert(f.id, name).is_none());
        }
        let mut locations = HashMap::new();
        for l in &p.location {
            assert_eq!(l.line.len(), 1);
            let f = functions[&l.line[0].function_id].clone();
            assert!(locations.insert(l.id, f).is_none());
        }
        let types: Vec<(String, String)> = p
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("inuse_objects".to_string(), "count".to_string()),
                ("inuse_space".to_string(), "bytes".to_string())
            ]
        );
        assert_eq!(s(p.default_sample_type), "inuse_space");
        let comments = p.comment.iter().map(|&c| s(c)).collect();
        let samples = p
            .sample
            .iter()
            .map(|m| {
                let frames = m
                    .location_id
                    .iter()
                    .map(|id| locations[id].clone())
                    .collect();
                let labels = m.label.iter().map(|l| (s(l.key), s(l.str))).collect();
                (frames, m.value.clone(), labels)
            })
            .collect();
        (comments, samples)
    }

    #[test]
    fn capture_profile_decodes_back() {
        let r = crate::cmd::capture::testdata::report();
        let data = render_capture(&r, 1_700_000_000_000, "from t");
        assert_eq!(
            Profile::decode(&data[..]).unwrap().time_nanos,
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
        let want: Vec<Decoded> = vec![
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
        let p = Profile::decode(&data[..]).unwrap();
        assert_eq!(p.function.len(), 6);
        assert_eq!(p.location.len(), 5 + 2);
    }

    fn site(file: &str, line: u32, module: Option<&str>, function: &str) -> Site {
        Site {
            file: file.into(),
            line,
            module: module.map(str::to_string),
            function: function.into(),
        }
    }

    fn totals(bytes: i128, calls: i128) -> SiteTotals {
        SiteTotals {
            bytes,
            calls,
            ..SiteTotals::default()
        }
    }

    fn write(sums: &[SiteSum<'_>], release: Option<&str>) -> Vec<u8> {
        let mut out = Vec::new();
        let meta = Meta {
            unix_ms: 1_700_000_000_123,
            comment: "c",
            release,
        };
        write_sites(sums.iter().copied(), &meta, &mut out).unwrap();
        out
    }

    #[test]
    fn sites_stream_into_one_profile() {
        let (a7, a9, b1) = (
            site("mm/a.c", 7, None, "f"),
            site("mm/a.c", 9, None, "f"),
            site("mm/b.c", 1, Some("m"), "g"),
        );
        let sum = |site, bytes, calls| SiteSum {
            site: Site::tag_ref(site),
            node: None,
            totals: totals(bytes, calls),
        };
        let data = write(
            &[sum(&a7, 4096, 2), sum(&a9, 1 << 70, -1), sum(&b1, -64, 0)],
            Some("6.12.1"),
        );
        let p = Profile::decode(&data[..]).unwrap();
        assert_eq!(p.time_nanos, 1_700_000_000_123_000_000);
        // The two lines of f share its function.
        assert_eq!(p.function.len(), 2);
        assert_eq!(
            p.location
                .iter()
                .map(|l| (l.id, l.line[0].clone()))
                .collect::<Vec<_>>(),
            [
                (
                    1,
                    Line {
                        function_id: 1,
                        line: 7
                    }
                ),
                (
                    2,
                    Line {
                        function_id: 1,
                        line: 9
                    }
                ),
                (
                    3,
                    Line {
                        function_id: 2,
                        line: 1
                    }
                ),
            ]
        );
        let (comments, got) = samples(&data);
        assert_eq!(comments, ["c"]);
        let labels = |module: &str| {
            vec![
                ("module".to_string(), module.to_string()),
                ("release".to_string(), "6.12.1".to_string()),
            ]
        };
        assert_eq!(
            got,
            [
                (
                    vec!["f@mm/a.c".to_string()],
                    vec![2, 4096],
                    labels("vmlinux")
                ),
                (
                    vec!["f@mm/a.c".to_string()],
                    vec![-1, i64::MAX],
                    labels("vmlinux")
                ),
                (vec!["g@mm/b.c".to_string()], vec![0, -64], labels("m")),
            ]
        );
    }

    #[test]
    fn node_samples_share_their_sites_location() {
        let a = site("mm/a.c", 7, Some("m"), "f");
        let sum = |node, bytes, calls| SiteSum {
            site: a.tag_ref(),
            node: Some(node),
            totals: totals(bytes, calls),
        };
        let data = write(&[sum(0, 4096, 1), sum(3, -64, -1)], None);
        let (_, got) = samples(&data);
        let labels = |node: &str| {
            vec![
                ("module".to_string(), "m".to_string()),
                ("node".to_string(), node.to_string()),
            ]
        };
        assert_eq!(
            got,
            [
                (vec!["f@mm/a.c".to_string()], vec![1, 4096], labels("0")),
                (vec!["f@mm/a.c".to_string()], vec![-1, -64], labels("3")),
            ]
        );
        assert_eq!(Profile::decode(&data[..]).unwrap().location.len(), 1);
    }

    #[test]
    fn string_table_starts_empty_and_interns() {
        let mut s = Strings::new();
        assert_eq!((s.id(""), s.id("a"), s.id("b"), s.id("a")), (0, 1, 2, 1));
        assert_eq!(s.table, ["", "a", "b"]);
    }
}
