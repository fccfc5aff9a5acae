#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of the patch stack's round trip (harness/stack.sh, make stack
# and make unstack) and of prepare-tree.sh laying it, on a small synthetic
# "pristine" tree: patches written back from the stack tree apply and give
# its files; an unchanged stack writes back byte for byte; a fixup of the
# first patch rewrites that patch only; unsaved work is never dropped; a
# patch that does not apply is named.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect NAME WANT_RC OUTPUT-REGEX CMD...
expect() {
	local name=$1 want_rc=$2 want=$3 out rc
	shift 3
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want_rc" ] && grep -qE -- "$want" <<< "$out"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL stack: $name: rc $rc (want $want_rc), output:"
		sed 's/^/  /' <<< "$out" | head -n 20
	fi
}
# same NAME A B: A and B are equal strings.
same() {
	if [ "$2" = "$3" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL stack: $1: '$2' is not '$3'"
	fi
}

export CACHE_DIR=$tmp/cache REPO=$tmp/repo STACK_TREE=$tmp/cache/stack/linux
P=$CACHE_DIR/src/linux-source-6.12
mkdir -p "$P/lib" "$REPO/patches" "$REPO/harness"
printf 'VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n' > "$P/Makefile"
seq 1 40 | sed 's/^/line /' > "$P/lib/a.c"
cp "$H/stack.sh" "$H/pristine-git.sh" "$H/git-env.sh" "$REPO/harness/"
g() { git -C "$STACK_TREE" -c user.name=t -c user.email=t@t "$@"; }

expect "lay with no patches" 0 '^stack: 0 patches' "$REPO/harness/stack.sh" lay
same "an empty stack is the pristine commit" "$(g rev-parse stack)" "$(g rev-parse pristine)"

# Two commits: one edits a file of the pristine tree, one adds a file.
sed -i 's/^line 5$/line five/' "$STACK_TREE/lib/a.c"
g commit -q -a -m "lib: the fifth line in words"
echo 'new file' > "$STACK_TREE/lib/b.c"
chmod +x "$STACK_TREE/lib/b.c"
g add lib/b.c
g commit -q -m "lib: add b.c"
expect "save writes both" 0 '2 written, 0 removed' "$REPO/harness/stack.sh" save
same "patches/series names them in order" \
	"$(grep -v '^#' "$REPO/patches/series" | tr '\n' ' ')" \
	"0001-lib-the-fifth-line-in-words.patch 0002-lib-add-b.c.patch "
expect "check: the tree is the patches" 0 'is patches/' "$REPO/harness/stack.sh" check

# prepare-tree.sh lays them on the pristine tree: the tree make builds.
expect "prepare-tree applies the stack" 0 '2 files' \
	"$H/prepare-tree.sh" "$P" "$CACHE_DIR/rust/src" "$REPO" rust
same "the laid a.c is the stack tree's" "$(cat "$CACHE_DIR/rust/src/lib/a.c")" "$(cat "$STACK_TREE/lib/a.c")"
same "the laid b.c keeps its mode" "$(stat -c %a "$CACHE_DIR/rust/src/lib/b.c")" "755"
same "the pristine a.c is untouched" "$(sed -n 5p "$P/lib/a.c")" "line 5"

# Lay again from the patches: the same commits, and nothing to write.
before=$(cat "$REPO/patches/"*.patch | md5sum)
expect "lay again" 0 '^stack: 2 patches' "$REPO/harness/stack.sh" lay
expect "save an unchanged stack" 0 '0 written, 0 removed' "$REPO/harness/stack.sh" save
same "an unchanged stack writes the same bytes" "$(cat "$REPO/patches/"*.patch | md5sum)" "$before"

# A fixup of the first (middle) patch rewrites that patch only.
p2=$(md5sum < "$REPO/patches/0002-lib-add-b.c.patch")
sed -i 's/^line 30$/line thirty/' "$STACK_TREE/lib/a.c"
g commit -q -a --fixup=stack~1
GIT_SEQUENCE_EDITOR=true g rebase -q -i --autosquash pristine >/dev/null 2>&1
expect "save after a fixup" 0 '1 written, 0 removed' "$REPO/harness/stack.sh" save
expect "the fixup is in the first patch" 0 '^\+line thirty' cat "$REPO/patches/0001-lib-the-fifth-line-in-words.patch"
same "the second patch is unchanged" "$(md5sum < "$REPO/patches/0002-lib-add-b.c.patch")" "$p2"
"$H/prepare-tree.sh" "$P" "$CACHE_DIR/rust/src" "$REPO" rust >/dev/null
same "make tree follows the fixup" "$(sed -n 30p "$CACHE_DIR/rust/src/lib/a.c")" "line thirty"

# Unsaved work is never dropped.
echo more >> "$STACK_TREE/lib/b.c"
expect "save refuses uncommitted edits" 1 'uncommitted' "$REPO/harness/stack.sh" save
expect "lay refuses uncommitted edits" 1 'uncommitted' "$REPO/harness/stack.sh" lay
g commit -q -a -m "lib: more in b.c"
expect "lay refuses commits not written back" 1 'not written back' "$REPO/harness/stack.sh" lay
expect "check sees them" 1 'differs' "$REPO/harness/stack.sh" check
expect "save writes the new patch" 0 '1 written, 0 removed' "$REPO/harness/stack.sh" save
g reset -q --hard stack~1
expect "save after dropping a commit removes its patch" 0 '0 written, 1 removed' "$REPO/harness/stack.sh" save
same "two patches left" "$(grep -vc '^#' "$REPO/patches/series")" 2

# A patch that does not apply is named, by make stack and by make tree.
sed -i 's/^ line 4$/ line four/' "$REPO/patches/0001-lib-the-fifth-line-in-words.patch"
expect "lay names the patch that does not apply" 1 '0001-lib-the-fifth-line-in-words.patch does not apply' \
	env STACK_FORCE=1 "$REPO/harness/stack.sh" lay
expect "prepare-tree names it" 1 'patch 0001-lib-the-fifth-line-in-words.patch does not apply' \
	"$H/prepare-tree.sh" "$P" "$CACHE_DIR/rust/src" "$REPO" rust

echo "patch stack: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
