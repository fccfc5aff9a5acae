// SPDX-License-Identifier: GPL-2.0
//! A protobuf wire-format decoder for the tests of the pprof output, apart from the encoder it
//! checks (prost, in src/format/pprof.rs): tests/nodes.rs includes this file.

/// A decoded field: a varint or the bytes of a length-delimited one.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Bytes(Vec<u8>),
}

fn varint(data: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&b, rest)) = data.split_first() else {
            panic!("truncated varint");
        };
        *data = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
    }
    panic!("varint longer than 10 bytes")
}

/// Decodes one message into (field number, value) pairs, in order; only the two wire types the
/// encoder writes (0, varint; 2, length-delimited) are accepted.
pub fn decode(mut data: &[u8]) -> Vec<(u64, Value)> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let key = varint(&mut data);
        let value = match key & 7 {
            0 => Value::Int(varint(&mut data)),
            2 => {
                let n = varint(&mut data) as usize;
                let (v, rest) = data.split_at(n);
                data = rest;
                Value::Bytes(v.to_vec())
            }
            w => panic!("wire type {w}"),
        };
        out.push((key >> 3, value));
    }
    out
}

/// The varints of field `f`.
pub fn ints(m: &[(u64, Value)], f: u64) -> Vec<u64> {
    m.iter()
        .filter(|(n, _)| *n == f)
        .map(|(_, v)| match v {
            Value::Int(i) => *i,
            Value::Bytes(b) => panic!("field {f} is bytes {b:?}"),
        })
        .collect()
}

/// The first varint of field `f`, 0 (the default) when it is absent.
pub fn int(m: &[(u64, Value)], f: u64) -> u64 {
    ints(m, f).first().copied().unwrap_or(0)
}

/// The length-delimited values (messages, strings) of field `f`.
pub fn messages(m: &[(u64, Value)], f: u64) -> Vec<Vec<u8>> {
    m.iter()
        .filter(|(n, _)| *n == f)
        .map(|(_, v)| match v {
            Value::Bytes(b) => b.clone(),
            Value::Int(i) => panic!("field {f} is varint {i}"),
        })
        .collect()
}

/// The varints of packed repeated field `f`.
pub fn packed(m: &[(u64, Value)], f: u64) -> Vec<u64> {
    let mut out = Vec::new();
    for b in messages(m, f) {
        let mut data = &b[..];
        while !data.is_empty() {
            out.push(varint(&mut data));
        }
    }
    out
}
