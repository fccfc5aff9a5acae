// SPDX-License-Identifier: GPL-2.0

//! Property tests: each parser agrees with the model, and never panics, on
//! arbitrary byte strings and on strings made near its grammar (valid values
//! cut, spliced and mutated byte by byte).
//!
//! The number of inputs of each property is fixed in [`PROPERTIES`]; each
//! property checks that it ran exactly that many and prints a `fuzz inputs:`
//! line, which `host-test.sh` adds up. The seed is random on every run and
//! printed; `PROPTEST_RNG_SEED=<seed>` repeats a run.

mod model;

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::fmt::Debug;
use std::hash::{BuildHasher, Hasher};

use kernel::alloc_tag::demangle::{fn_name, is_alloc_machinery};
use kernel::alloc_tag::parse::{parse_boot_value, parse_page_bits};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

/// Every property and its number of inputs.
const PROPERTIES: &[(&str, u32)] = &[
    ("boot_value_any_bytes", 250_000),
    ("boot_value_near_grammar", 320_000),
    ("page_bits_any_bytes", 100_000),
    ("page_bits_near_grammar", 220_000),
    ("demangle_near_grammar", 150_000),
];

/// The claim of issue 8: at least a million parser inputs per run.
#[test]
fn at_least_a_million_inputs() {
    let total: u64 = PROPERTIES.iter().map(|&(_, n)| u64::from(n)).sum();
    println!("fuzz inputs planned: {total}");
    assert!(total >= 1_000_000, "only {total} inputs planned");
}

/// Runs one property for its planned number of inputs. `check` returns
/// whether the parser accepted the input, or the disagreement. With
/// `balanced`, the inputs must be neither almost all accepted nor almost
/// all refused, so that a strategy cannot quietly miss one side.
fn run_property<S>(
    name: &str,
    strategy: S,
    balanced: bool,
    check: impl Fn(&[u8]) -> Result<bool, TestCaseError>,
) where
    S: Strategy<Value = Vec<u8>>,
{
    let cases = PROPERTIES
        .iter()
        .find(|&&(n, _)| n == name)
        .map(|&(_, cases)| cases)
        .unwrap_or_else(|| panic!("{name} is not in PROPERTIES"));
    let mut config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(RandomState::new().build_hasher().finish());
    }
    let seed = config.rng_seed;
    let ran = Cell::new(0u64);
    let accepted = Cell::new(0u64);
    let result = TestRunner::new(config).run(&strategy.prop_map(Bytes), |input| {
        ran.set(ran.get() + 1);
        if check(&input.0)? {
            accepted.set(accepted.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e} (PROPTEST_RNG_SEED={seed} repeats the run)");
    }
    let (ran, accepted) = (ran.get(), accepted.get());
    println!("fuzz inputs: {name} {ran} ({accepted} accepted, seed {seed})");
    assert_eq!(ran, u64::from(cases), "{name}: inputs run");
    if balanced {
        assert!(
            accepted >= ran / 20 && accepted <= ran - ran / 20,
            "{name}: {accepted} of {ran} accepted"
        );
    }
}

/// An input, shown as a byte string literal when a property fails.
#[derive(Clone)]
struct Bytes(Vec<u8>);

impl Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// Arbitrary bytes, mostly short, sometimes longer than a page.
fn any_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => vec(any::<u8>(), 0..16),
        3 => vec(any::<u8>(), 16..100),
        1 => vec(any::<u8>(), 4000..4200),
    ]
}

/// One change to a byte string.
#[derive(Clone, Debug)]
enum Edit {
    Insert(Index, u8),
    InsertToken(Index, &'static [u8]),
    Delete(Index),
    Replace(Index, u8),
    /// Copies a slice (from, to) to the end.
    Repeat(Index, Index),
    Truncate(Index),
    FlipCase(Index),
}

impl Edit {
    fn apply(&self, s: &mut Vec<u8>) {
        let len = s.len();
        match *self {
            Edit::Insert(at, b) => s.insert(at.index(len + 1), b),
            Edit::InsertToken(at, token) => {
                let at = at.index(len + 1);
                s.splice(at..at, token.iter().copied());
            }
            Edit::Delete(at) if len > 0 => {
                s.remove(at.index(len));
            }
            Edit::Replace(at, b) if len > 0 => s[at.index(len)] = b,
            Edit::Repeat(from, to) => {
                let (a, b) = (from.index(len + 1), to.index(len + 1));
                let copy = s[a.min(b)..a.max(b)].to_vec();
                s.extend(copy);
            }
            Edit::Truncate(at) => s.truncate(at.index(len + 1)),
            Edit::FlipCase(at) if len > 0 => s[at.index(len)] ^= 0x20,
            _ => {}
        }
    }
}

/// Strings near a grammar: up to six tokens side by side, or a seed (a
/// valid value) with up to four edits, bytes taken from `bytes` or at random.
fn near(
    seeds: &'static [&'static [u8]],
    tokens: &'static [&'static [u8]],
    bytes: &'static [u8],
) -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![3 => select(bytes), 1 => any::<u8>()];
    let edit = prop_oneof![
        (any::<Index>(), byte.clone()).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), select(tokens)).prop_map(|(i, t)| Edit::InsertToken(i, t)),
        any::<Index>().prop_map(Edit::Delete),
        (any::<Index>(), byte).prop_map(|(i, b)| Edit::Replace(i, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::Repeat(a, b)),
        any::<Index>().prop_map(Edit::Truncate),
        any::<Index>().prop_map(Edit::FlipCase),
    ];
    let mutated = (select(seeds), vec(edit, 0..=4)).prop_map(|(seed, edits)| {
        let mut s = seed.to_vec();
        for e in &edits {
            e.apply(&mut s);
        }
        s
    });
    let spliced = vec(select(tokens), 0..=6).prop_map(|t| t.concat());
    prop_oneof![mutated, spliced]
}

const BOOT_SEEDS: &[&[u8]] = &[
    b"0",
    b"1",
    b"never",
    b"0,compressed",
    b"1,compressed",
    b"never,compressed",
];
const BOOT_TOKENS: &[&[u8]] = &[
    b"0",
    b"1",
    b"never",
    b",compressed",
    b",",
    b"compressed",
    b"compress",
    b"ed",
    b"nev",
    b"er",
    b"NEVER",
    b"2",
    b" ",
    b"\n",
    b"\0",
    b"\xff",
];
const BOOT_BYTES: &[u8] = b"01,nevrcompsd \n\t\0\xff";

#[test]
fn boot_value_any_bytes() {
    run_property("boot_value_any_bytes", any_bytes(), false, check_boot);
}

#[test]
fn boot_value_near_grammar() {
    let strategy = near(BOOT_SEEDS, BOOT_TOKENS, BOOT_BYTES);
    run_property("boot_value_near_grammar", strategy, true, check_boot);
}

fn check_boot(input: &[u8]) -> Result<bool, TestCaseError> {
    let got = parse_boot_value(input);
    prop_assert_eq!(got, model::boot_value(input), "on {}", input.escape_ascii());
    Ok(got.is_ok())
}

const PAGE_BITS_SEEDS: &[&[u8]] = &[
    b"0",
    b"8",
    b"9",
    b"24",
    b"63",
    b"64",
    b"064",
    b"00000064",
    b"000000000064",
];
const PAGE_BITS_TOKENS: &[&[u8]] = &[
    b"0",
    b"4",
    b"6",
    b"9",
    b"00",
    b"00000000",
    b"64",
    b"65",
    b"4294967296",
    b"-",
    b"+",
    b" ",
    b"\n",
    b"\0",
    b"x",
];
const PAGE_BITS_BYTES: &[u8] = b"0123456789-+ \n\0x\xff";

#[test]
fn page_bits_any_bytes() {
    run_property("page_bits_any_bytes", any_bytes(), false, check_page_bits);
}

#[test]
fn page_bits_near_grammar() {
    let strategy = near(PAGE_BITS_SEEDS, PAGE_BITS_TOKENS, PAGE_BITS_BYTES);
    run_property("page_bits_near_grammar", strategy, true, check_page_bits);
}

fn check_page_bits(input: &[u8]) -> Result<bool, TestCaseError> {
    let got = parse_page_bits(input);
    prop_assert_eq!(got, model::page_bits(input), "on {}", input.escape_ascii());
    Ok(got.is_some())
}

/// v0 symbols with back-references (`B`, base 62 up to `_`), and pieces of
/// them: back-references whose value is near `u64::MAX` (where the target,
/// two past it, overflows), near `usize::MAX / 2` and small, in path, type
/// and const position.
const DEMANGLE_SEEDS: &[&[u8]] = &[
    b"_RNvNtCs1234_6kernel5alloc7realloc",
    b"_RNvMNtCs1_3foo3barNtB2_3Baz3new",
    b"_RINvCs1_3foo3barNtB4_3BazEB4_",
    b"_RNvB_3foo",
    b"_RNvBlYGhA16ahye_3foo",
    b"_RNvBlYGhA16ahyd_3foo",
    b"_RINvC3foo3barBlYGhA16ahye_E",
    b"_RINvC3foo3barKBlYGhA16ahyd_E",
    b"_RNCNvC3foo3bar0B3_",
];
const DEMANGLE_TOKENS: &[&[u8]] = &[
    b"_R",
    b"N",
    b"v",
    b"t",
    b"C",
    b"M",
    b"X",
    b"Y",
    b"I",
    b"E",
    b"K",
    b"B",
    b"Cs1_",
    b"3foo",
    b"3bar",
    b"0",
    b"_",
    b"p",
    b"R",
    b"Q",
    b"A",
    b"S",
    b"F",
    b"D",
    b"L",
    b"lYGhA16ahye_",
    b"lYGhA16ahyd_",
    b"lYGhA16ahyc_",
    b"lYGhA16ahyf_",
    b"aZl8N0y58M7_",
    b"zzzzzzzzzzzzzzzzzzzzzz_",
];
const DEMANGLE_BYTES: &[u8] = b"_RNvCBIEKMXY0123456789azAZ";

/// demangle.rs never panics (overflow checks on) and never reads past the
/// symbol, on v0 symbols near the grammar; the accepted ones are named.
#[test]
fn demangle_near_grammar() {
    let strategy = near(DEMANGLE_SEEDS, DEMANGLE_TOKENS, DEMANGLE_BYTES);
    run_property("demangle_near_grammar", strategy, false, |input| {
        let _ = is_alloc_machinery(input);
        Ok(fn_name(input).is_some())
    });
}

/// Back-references at and near `u64::MAX`, in each position, are refused
/// without overflowing.
#[test]
fn demangle_backrefs_near_u64_max() {
    for b in [
        "lYGhA16ahye_",
        "lYGhA16ahyd_",
        "lYGhA16ahyc_",
        "aZl8N0y58M7_",
    ] {
        for sym in [
            format!("_RNvB{b}3foo"),
            format!("_RINvC3foo3barB{b}E"),
            format!("_RINvC3foo3barKB{b}E"),
            format!("_RNvMB{b}3foo"),
        ] {
            assert!(fn_name(sym.as_bytes()).is_none(), "{sym}");
        }
    }
}
