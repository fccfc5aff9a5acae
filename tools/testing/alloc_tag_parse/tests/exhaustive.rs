// SPDX-License-Identifier: GPL-2.0

//! Exhaustive checks against the model: every byte string of up to two
//! bytes, and every sequence of up to a few tokens of each grammar.

mod model;

use kernel::alloc_tag::parse::{parse_boot_value, parse_page_bits};

/// Calls `f` on every concatenation of up to `max` pieces of `alphabet`
/// and returns how many there were.
fn for_each_string(alphabet: &[&[u8]], max: usize, mut f: impl FnMut(&[u8])) -> u64 {
    let mut count = 0;
    let mut digits: Vec<usize> = Vec::new();
    loop {
        let s: Vec<u8> = digits.iter().flat_map(|&d| alphabet[d]).copied().collect();
        f(&s);
        count += 1;
        // Next sequence: count in base alphabet.len(), then grow by one piece.
        match digits.iter().rposition(|&d| d + 1 < alphabet.len()) {
            Some(i) => {
                digits[i] += 1;
                digits[i + 1..].fill(0);
            }
            None if digits.len() < max => digits = vec![0; digits.len() + 1],
            None => return count,
        }
    }
}

fn check_all(name: &str, alphabet: &[&[u8]], max: usize) {
    let n = for_each_string(alphabet, max, |s| {
        let show = || s.escape_ascii().to_string();
        assert_eq!(parse_boot_value(s), model::boot_value(s), "boot {}", show());
        assert_eq!(parse_page_bits(s), model::page_bits(s), "bits {}", show());
    });
    println!("exhaustive inputs: {name} {n} (each to the two parsers)");
}

#[test]
fn every_string_of_two_bytes() {
    let bytes: Vec<[u8; 1]> = (0..=255u8).map(|b| [b]).collect();
    let alphabet: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
    check_all("bytes_up_to_2", &alphabet, 2);
}

#[test]
fn every_boot_token_sequence() {
    let tokens: &[&[u8]] = &[
        b"0",
        b"1",
        b"never",
        b",",
        b"compressed",
        b",compressed",
        b"compress",
        b"ed",
        b" ",
        b"\0",
        b"x",
    ];
    check_all("boot_tokens_up_to_5", tokens, 5);
}

#[test]
fn every_page_bits_token_sequence() {
    let tokens: &[&[u8]] = &[
        b"0",
        b"1",
        b"2",
        b"4",
        b"5",
        b"6",
        b"9",
        b"00000000",
        b" ",
        b"-",
        b"\0",
    ];
    check_all("page_bits_tokens_up_to_5", tokens, 5);
}
