// SPDX-License-Identifier: GPL-2.0

//! Points the crate at the kernel's parsers where they are: `parse.rs` and
//! `demangle.rs` of `rust/kernel/alloc_tag/` in this repository, three levels
//! up (or in the tree `ALLOC_TAG_TREE` names), and `testing`, the path the
//! kernel crate's test hooks give them.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=ALLOC_TAG_TREE");
    let tree = match env::var("ALLOC_TAG_TREE") {
        Ok(tree) => PathBuf::from(tree),
        Err(_) => PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"))
            .join("../../.."),
    };
    let dir = tree.join("rust/kernel/alloc_tag");
    let mut out = String::new();
    for name in ["parse", "demangle"] {
        let file = dir.join(format!("{name}.rs"));
        assert!(file.is_file(), "no {}", file.display());
        println!("cargo:rerun-if-changed={}", file.display());
        out.push_str(&format!(
            "#[path = {:?}]\npub mod {name};\n",
            file.display().to_string()
        ));
    }
    // The examples reach the parsers as the kernel crate's test hooks
    // export them (`kernel::alloc_tag::testing`).
    out.push_str(
        "pub mod testing {\n    pub use super::demangle::*;\n    pub use super::parse::*;\n}\n",
    );
    let dest = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("alloc_tag_mods.rs");
    fs::write(dest, out).expect("write alloc_tag_mods.rs");
}
