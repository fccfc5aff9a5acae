// SPDX-License-Identifier: GPL-2.0
//! pprof's profile.proto, encoded by hand (the schema is small and stable): one sample per site
//! with its live allocations and bytes, the site as a location with one line in its function.
//!
//! Field numbers are those of github.com/google/pprof/proto/profile.proto. The output is not
//! gzipped; pprof reads either.

use std::collections::HashMap;

use crate::profile::{Site, SiteTotals};

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

/// The encoded profile. `unix_ms` is when the data was read; `comment` says from where.
pub fn render(sites: &[(&Site, SiteTotals)], unix_ms: i64, comment: &str) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut profile = Message::default();
    let objects = value_type(&mut strings, "inuse_objects", "count");
    profile.message(field::PROFILE_SAMPLE_TYPE, objects);
    let space = value_type(&mut strings, "inuse_space", "bytes");
    profile.message(field::PROFILE_SAMPLE_TYPE, space);

    // One function per (name, file): sites on several lines of a function share it.
    let mut functions: HashMap<(&str, &str), i64> = HashMap::new();
    let module_key = strings.id("module");
    for (i, (site, t)) in sites.iter().enumerate() {
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

        let location_id = i as i64 + 1;
        let mut line = Message::default();
        line.int(field::LINE_FUNCTION_ID, function_id);
        line.int(field::LINE_LINE, i64::from(site.line));
        let mut location = Message::default();
        location.int(field::LOCATION_ID, location_id);
        location.message(field::LOCATION_LINE, line);
        profile.message(field::PROFILE_LOCATION, location);

        let mut label = Message::default();
        label.int(field::LABEL_KEY, module_key);
        label.int(field::LABEL_STR, strings.id(site.module_or_vmlinux()));
        let mut sample = Message::default();
        sample.packed(field::SAMPLE_LOCATION_ID, &[location_id]);
        sample.packed(field::SAMPLE_VALUE, &[saturate(t.calls), saturate(t.bytes)]);
        sample.message(field::SAMPLE_LABEL, label);
        profile.message(field::PROFILE_SAMPLE, sample);
    }
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

#[cfg(test)]
mod tests {
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

    #[test]
    fn string_table_starts_empty_and_interns() {
        let mut s = Strings::new();
        assert_eq!((s.id(""), s.id("a"), s.id("b"), s.id("a")), (0, 1, 2, 1));
        assert_eq!(s.table, ["", "a", "b"]);
    }
}
