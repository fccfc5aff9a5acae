// SPDX-License-Identifier: GPL-2.0
//! What the end-to-end tests of the `allocinfo` binary share: running it on the fixtures.

use std::path::PathBuf;
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_allocinfo");

/// The path of a file under tests/fixtures.
pub fn fixture(name: &str) -> String {
    let mut p = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    p.push("tests/fixtures");
    p.push(name);
    p.to_string_lossy().into_owned()
}

pub fn run(args: &[&str]) -> Output {
    match Command::new(BIN).args(args).output() {
        Ok(o) => o,
        Err(e) => panic!("cannot run {BIN}: {e}"),
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output of a run that exits 0.
pub fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}
