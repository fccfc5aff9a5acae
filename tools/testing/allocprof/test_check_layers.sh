#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of tools/testing/allocprof/check_layers.py: the Rust core's files have no
# dependency cycle, and the check finds one when it is there (an injected
# cycle in a copy of the core, and small synthetic trees for each way one
# file can name another).
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
check=$H/check_layers.py
core=${ALLOC_TAG_TREE:?the patched tree (host-test.sh lays it)}/rust/kernel/alloc_tag
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect NAME RC OUTPUT-REGEX DIR
expect() {
	local name=$1 want_rc=$2 want=$3 dir=$4 out rc
	out=$(python3 "$check" "$dir" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want_rc" ] && grep -qE -- "$want" <<< "$out"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL layers: $name: rc $rc (want $want_rc), output:"
		sed 's/^/  /' <<< "$out" | head -n 20
	fi
}

# tree NAME FILE=TEXT...: a directory of .rs files.
tree() {
	local d=$tmp/$1 f
	shift
	mkdir -p "$d"
	for f in "$@"; do
		printf '%b\n' "${f#*=}" > "$d/${f%%=*}.rs"
	done
	echo "$d"
}

expect "the core has no cycle" 0 '^layers: [0-9]+ files, no cycle$' "$core"

# A lower file made to call the init file: parse -> init -> ... -> parse.
cp -r "$core" "$tmp/injected"
printf 'fn _cycle() {\n    let _ = super::init::alloc_tag_init;\n}\n' >> "$tmp/injected/parse.rs"
expect "injected cycle in the core" 1 '^cycle: ([a-z_]+\.rs -> )+[a-z_]+\.rs$' "$tmp/injected"
expect "injected cycle names the file" 1 'parse\.rs' "$tmp/injected"

d=$(tree two a='use super::b::f;' b='use super::{c, a};' c='')
expect "use super::b and a braced group" 1 '^cycle: a\.rs -> b\.rs -> a\.rs$' "$d"

d=$(tree path a='fn f() { super::b::g() }' b='fn g() { super::c::h() }' \
	c='fn h() { crate::alloc_tag::a::f() }')
expect "super::x:: and crate::alloc_tag::x:: paths" 1 \
	'^cycle: a\.rs -> b\.rs -> c\.rs -> a\.rs$' "$d"

d=$(tree comments a='// use super::b;\n/// [`super::b`]\n/* super::b::f() */\nconst S: &str = "super::b::f";\nconst R: &str = r#"super::b"#;' \
	b='use super::a;')
expect "comments and strings are not uses" 0 '^layers: 2 files, no cycle$' "$d"

d=$(tree nested a='mod inner {\n    use super::super::b;\n    mod deeper { use super::helper; }\n}\nfn helper() {}' \
	b='use super::a;')
expect "super::super from an inline module" 1 '^cycle: a\.rs -> b\.rs -> a\.rs$' "$d"

d=$(tree inner a='mod inner {\n    use super::b;\n}' b='use super::a;')
expect "super from an inline module stays in the file" 0 'no cycle$' "$d"

d=$(tree ownitem mod='pub mod tag;\npub use tag::AllocTag;' tag='use super::AllocTag;')
expect "a file naming its own item through mod.rs" 0 '^layers: 2 files, no cycle$' "$d"

d=$(tree moditem mod='pub use tag::Y;\npub const X: u32 = 1;' tag='use super::X;\npub const Y: u32 = 2;')
expect "mod.rs items and re-exports" 1 '^cycle: mod\.rs -> tag\.rs -> mod\.rs$' "$d"

d=$(tree order mod='pub use tag::T;' tag='' page='use super::{tag::T, store};' \
	store='use super::T;')
expect "the order lists each file after what it uses" 0 \
	'^mod\.rs +uses tag' "$d"
out=$(python3 "$check" "$d" | awk '{print $1}' | tr '\n' ' ')
if [ "$out" = "tag.rs mod.rs store.rs page.rs layers: " ]; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL layers: order: got '$out'"
fi

# A name mod.rs re-exports is the child's: b uses a through it.
d=$(tree reexported mod='pub use a::T;' a='pub struct T;\nuse super::b;' b='use super::T;')
expect "a name re-exported by mod.rs is its child's" 1 '^cycle: a\.rs -> b\.rs -> a\.rs$' "$d"

# mod.rs re-exporting from a file at the top (the crate's allocators use
# it) is no cycle with the files below that use other re-exported names.
d=$(tree surface mod='pub use a::T;\npub(crate) use c::f;' a='pub struct T;' b='use super::T;' \
	c='use super::b;\npub fn f() {}')
expect "re-exports from the top and the bottom are no cycle" 0 '^layers: 4 files, no cycle$' "$d"

echo "host layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
