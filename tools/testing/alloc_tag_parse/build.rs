// SPDX-License-Identifier: GPL-2.0

//! Points the crate at the parsers in the patched kernel tree: the change is
//! kept as a patch stack, so `parse.rs` and `demangle.rs` exist only in a tree
//! with the patches applied (`make tree BASE=rust`; `ALLOC_TAG_TREE` names it).

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=ALLOC_TAG_TREE");
    let tree = env::var("ALLOC_TAG_TREE").expect(
        "ALLOC_TAG_TREE: the kernel tree with the patch stack applied (make tree BASE=rust)",
    );
    let dir = PathBuf::from(tree).join("rust/kernel/alloc_tag");
    let mut out = String::new();
    for name in ["parse", "demangle"] {
        let file = dir.join(format!("{name}.rs"));
        assert!(file.is_file(), "no {} in ALLOC_TAG_TREE", file.display());
        println!("cargo:rerun-if-changed={}", file.display());
        out.push_str(&format!(
            "#[path = {:?}]\npub mod {name};\n",
            file.display().to_string()
        ));
    }
    let dest = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("alloc_tag_mods.rs");
    fs::write(dest, out).expect("write alloc_tag_mods.rs");
}
