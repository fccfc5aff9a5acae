// SPDX-License-Identifier: GPL-2.0

//! Exact tables: every valid input of each parser with its result, and bad
//! inputs with their exact error, checked against `parse.rs` and the model.

mod model;

use kernel::alloc_tag::parse::{parse_boot_value, parse_page_bits, BootError, BootMode, BootValue};

fn show(input: &[u8]) -> String {
    input.escape_ascii().to_string()
}

const fn on(mode: BootMode, compressed: bool) -> Result<BootValue, BootError> {
    Ok(BootValue { mode, compressed })
}

/// The whole language of `sysctl.vm.mem_profiling=`.
const BOOT_VALID: &[(&[u8], Result<BootValue, BootError>)] = &[
    (b"0", on(BootMode::Off, false)),
    (b"1", on(BootMode::On, false)),
    (b"never", on(BootMode::Never, false)),
    (b"0,compressed", on(BootMode::Off, true)),
    (b"1,compressed", on(BootMode::On, true)),
    (b"never,compressed", on(BootMode::Never, true)),
];

const BOOT_BAD: &[(&[u8], BootError)] = &[
    (b"", BootError::Empty),
    // Not a mode: other words, other spellings, any junk around the mode.
    (b"2", BootError::BadMode),
    (b"00", BootError::BadMode),
    (b"01", BootError::BadMode),
    (b"10", BootError::BadMode),
    (b"-1", BootError::BadMode),
    (b"+1", BootError::BadMode),
    (b"0x1", BootError::BadMode),
    (b"y", BootError::BadMode),
    (b"n", BootError::BadMode),
    (b"on", BootError::BadMode),
    (b"off", BootError::BadMode),
    (b"true", BootError::BadMode),
    (b"false", BootError::BadMode),
    (b"abc", BootError::BadMode),
    (b"neve", BootError::BadMode),
    (b"nevermore", BootError::BadMode),
    (b"NEVER", BootError::BadMode),
    (b"Never", BootError::BadMode),
    (b"compressed", BootError::BadMode),
    (b" 1", BootError::BadMode),
    (b"1 ", BootError::BadMode),
    (b"1\n", BootError::BadMode),
    (b"never\n", BootError::BadMode),
    (b"\t0", BootError::BadMode),
    (b"1\0", BootError::BadMode),
    (b"\x001", BootError::BadMode),
    (b"\xff", BootError::BadMode),
    (b"1\xff", BootError::BadMode),
    (b"\xc3\xa9", BootError::BadMode),
    // The mode is everything before the first comma, checked first.
    (b",", BootError::BadMode),
    (b",,", BootError::BadMode),
    (b",compressed", BootError::BadMode),
    (b"2,compressed", BootError::BadMode),
    (b"nevermore,compressed", BootError::BadMode),
    (b"1 ,compressed", BootError::BadMode),
    (b"x,y", BootError::BadMode),
    // A good mode, then anything but exactly ",compressed".
    (b"0,", BootError::BadOption),
    (b"1,", BootError::BadOption),
    (b"never,", BootError::BadOption),
    (b"1,compress", BootError::BadOption),
    (b"1,compressedx", BootError::BadOption),
    (b"1,compressed,", BootError::BadOption),
    (b"1,compressed,compressed", BootError::BadOption),
    (b"1,,compressed", BootError::BadOption),
    (b"1,COMPRESSED", BootError::BadOption),
    (b"1, compressed", BootError::BadOption),
    (b"1,compressed ", BootError::BadOption),
    (b"1,compressed\n", BootError::BadOption),
    (b"1,compressed\0", BootError::BadOption),
    (b"0,x", BootError::BadOption),
    (b"never,1", BootError::BadOption),
    (b"1,\xff", BootError::BadOption),
];

#[test]
fn boot_value_table() {
    for &(input, want) in BOOT_VALID {
        assert_eq!(parse_boot_value(input), want, "parser on {}", show(input));
        assert_eq!(model::boot_value(input), want, "model on {}", show(input));
    }
    for &(input, err) in BOOT_BAD {
        assert_eq!(
            parse_boot_value(input),
            Err(err),
            "parser on {}",
            show(input)
        );
        assert_eq!(
            model::boot_value(input),
            Err(err),
            "model on {}",
            show(input)
        );
    }
}

#[test]
fn boot_value_long() {
    let cases: [(Vec<u8>, BootError); 4] = [
        (vec![b'1'; 4096], BootError::BadMode),
        ([&b"never"[..], &[b' '; 4096]].concat(), BootError::BadMode),
        (
            [&b"1,"[..], &b"compressed".repeat(400)].concat(),
            BootError::BadOption,
        ),
        (
            [&b"0,compressed"[..], &[b','; 4096]].concat(),
            BootError::BadOption,
        ),
    ];
    for (input, err) in &cases {
        assert_eq!(parse_boot_value(input), Err(*err), "{} bytes", input.len());
        assert_eq!(model::boot_value(input), Err(*err), "{} bytes", input.len());
    }
}

/// The kernel log's reason for each refusal, as the documentation quotes it.
#[test]
fn boot_error_descriptions() {
    assert_eq!(BootError::Empty.describe(), "empty value");
    assert_eq!(BootError::BadMode.describe(), "expected 0, 1 or never");
    assert_eq!(
        BootError::BadOption.describe(),
        "the only option after the comma is 'compressed'"
    );
}

/// Every value from 0 to 64, plain and with leading zeros.
#[test]
fn page_bits_valid() {
    for n in 0..=64u32 {
        for input in [
            format!("{n}"),
            format!("{n:02}"),
            format!("{n:03}"),
            format!("{n:08}"),
            format!("{n:09}"),
            format!("{n:040}"),
        ] {
            let input = input.as_bytes();
            assert_eq!(parse_page_bits(input), Some(n), "parser on {}", show(input));
            assert_eq!(model::page_bits(input), Some(n), "model on {}", show(input));
        }
    }
}

const PAGE_BITS_BAD: &[&[u8]] = &[
    b"",
    b"65",
    b"065",
    b"00000065",
    b"000000065",
    b"99",
    b"100",
    b"640",
    b"99999999",
    b"4294967295",
    b"4294967296",
    b"4294967360",
    b"18446744073709551616",
    b"99999999999999999999",
    b"-0",
    b"-1",
    b"+8",
    b" 8",
    b"8 ",
    b"8\n",
    b"\t8",
    b"8\0",
    b"\x008",
    b"0x8",
    b"0b1",
    b"8a",
    b"a8",
    b"1e1",
    b"8.0",
    b"8,",
    b"\xef\xbc\x98",
    b"\xff",
    b"8\xff",
];

#[test]
fn page_bits_bad() {
    for &input in PAGE_BITS_BAD {
        assert_eq!(parse_page_bits(input), None, "parser on {}", show(input));
        assert_eq!(model::page_bits(input), None, "model on {}", show(input));
    }
    // Far too long to be a number that fits, whatever the digits.
    for digit in b'0'..=b'9' {
        let input = [&[b'1'][..], &vec![digit; 4096]].concat();
        assert_eq!(
            parse_page_bits(&input),
            None,
            "1 and 4096 x {}",
            digit as char
        );
        assert_eq!(
            model::page_bits(&input),
            None,
            "1 and 4096 x {}",
            digit as char
        );
    }
}
