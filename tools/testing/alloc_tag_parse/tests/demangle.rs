// SPDX-License-Identifier: GPL-2.0

//! demangle.rs against real v0 symbols: a table of kernel-shaped symbols
//! with the exact names the rows must show, and every function symbol of a
//! sample crate (generics, const generics, trait impls, default methods,
//! closures, `dyn`, pointers, function pointers) compiled here by rustc with
//! `-Csymbol-mangling-version=v0`, checked against rustc-demangle.

use kernel::alloc_tag::demangle::{fn_name, is_alloc_machinery, FnName};
use std::process::Command;

fn shown(n: FnName<'_>) -> String {
    let mut s = String::from_utf8_lossy(n.ident).into_owned();
    for _ in 0..n.closures {
        s.push_str("::{closure}");
    }
    s
}

/// The name the reference demangler gives, reduced as demangle.rs reduces
/// it: the last path component that is not a closure, generic arguments
/// and impl headers dropped, one `::{closure}` per enclosing closure.
fn expected(sym: &str) -> Option<String> {
    let full = format!("{:#}", rustc_demangle::demangle(sym));
    // Split the path at top-level `::`, outside <...>, [...] and (...).
    let mut parts = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    let b = full.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        match c {
            '<' | '[' | '(' => depth += 1,
            '>' | ']' | ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 && c == ':' && b.get(i + 1) == Some(&b':') {
            parts.push(std::mem::take(&mut cur));
            i += 2;
            continue;
        }
        cur.push(c);
        i += 1;
    }
    parts.push(cur);
    let mut closures = 0;
    while let Some(last) = parts.last() {
        if last.starts_with("{shim") {
            parts.pop();
        } else if last.starts_with("{closure") {
            closures += 1;
            parts.pop();
        } else {
            break;
        }
    }
    let last = parts.pop()?;
    if last.starts_with('<') || last.is_empty() {
        return None;
    }
    let mut s = last;
    for _ in 0..closures {
        s.push_str("::{closure}");
    }
    Some(s)
}

#[test]
fn kernel_shaped_symbols() {
    let table: &[(&str, Option<&str>, bool)] = &[
        // A module function, a method, a trait method, a closure.
        ("_RNvCs1QnFpBW0rcS_14alloc_tag_rust9kbox_site", Some("kbox_site"), false),
        ("_RNvNtCs1QnFpBW0rcS_6kernel3foo3bar", Some("bar"), false),
        (
            "_RNvMs_NtNtCsdkXBs5YyiW6_6kernel5alloc4kvecINtB4_3VecppE7reserve",
            Some("reserve"),
            true,
        ),
        (
            "_RNvXs2_NtNtCsdkXBs5YyiW6_6kernel5alloc4kboxINtB5_3BoxppENtNtB9_4init11InPlaceInit12try_pin_init",
            Some("try_pin_init"),
            true,
        ),
        ("_RNCNvCs1QnFpBW0rcS_14alloc_tag_rust4init0B3_", Some("init::{closure}"), false),
        ("_RNvNtCsdkXBs5YyiW6_6kernel9alloc_tag10rust_sites", Some("rust_sites"), true),
        ("_RNvNtNtCsdkXBs5YyiW6_6kernel4sync3arc3new", Some("new"), true),
        // The profiler's site lookup is looked through, its other modules
        // are not (they allocate for themselves).
        (
            "_RNvNtNtCsdkXBs5YyiW6_6kernel9alloc_tag10rust_sites15register_locked",
            Some("register_locked"),
            true,
        ),
        (
            "_RNvNtNtCsdkXBs5YyiW6_6kernel9alloc_tag8registry12copy_strings",
            Some("copy_strings"),
            false,
        ),
        // kernel, but not allocation machinery.
        ("_RNvNtCsdkXBs5YyiW6_6kernel5print11call_printk", Some("call_printk"), false),
        // Not v0, or broken.
        ("kmalloc_trace_noprof", None, false),
        ("_RNvCs1QnFpBW0rcS_14alloc_tag_rus", None, false),
        ("_R", None, false),
        ("_RB_", None, false),
    ];
    for &(sym, name, machinery) in table {
        assert_eq!(fn_name(sym.as_bytes()).map(shown).as_deref(), name, "{sym}");
        assert_eq!(is_alloc_machinery(sym.as_bytes()), machinery, "{sym}");
    }
}

#[test]
fn every_symbol_of_a_sample_crate() {
    let dir = std::env::temp_dir().join(format!("alloc_tag_demangle_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("sample.o");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/demangle_sample/sample.rs"
    );
    let st = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args([
            "--edition=2021",
            "--crate-name=kernel",
            "-Csymbol-mangling-version=v0",
        ])
        .args(["--emit=obj", "-o"])
        .arg(&obj)
        .arg(src)
        .status()
        .expect("rustc runs");
    assert!(st.success());
    let out = Command::new("nm").arg(&obj).output().expect("nm runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let syms: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| s.starts_with("_R"))
        .collect();
    std::fs::remove_dir_all(&dir).ok();
    let mut checked = 0;
    for sym in &syms {
        let want = expected(sym);
        let got = fn_name(sym.as_bytes()).map(shown);
        if want.is_some() {
            assert_eq!(got, want, "{sym} ({:#})", rustc_demangle::demangle(sym));
            checked += 1;
        }
        // Allocation machinery is decided by where the function is defined:
        // the sample's `alloc` module, not generic arguments from it.
        let full = format!("{:#}", rustc_demangle::demangle(sym));
        let defined_in_alloc =
            full.starts_with("kernel::alloc::") || full.starts_with("<kernel::alloc::");
        assert_eq!(
            is_alloc_machinery(sym.as_bytes()),
            defined_in_alloc,
            "{full}"
        );
        // A prefix of a symbol never panics or reads past its end.
        for n in 0..sym.len() {
            let _ = fn_name(&sym.as_bytes()[..n]);
        }
    }
    // Unoptimised, the sample keeps its closures and generic instances (and
    // the core functions it instantiates) as symbols of their own.
    assert!(
        checked >= 20,
        "only {checked} of {} symbols checked: {syms:?}",
        syms.len()
    );
    println!("exhaustive inputs: demangle_symbols {checked}");
}
