#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of the repo-to-tree and repo-to-series machinery on a small
# synthetic base: seriesmap.py's map and its checks, prepare-tree.sh (files
# of ours linked in, diffs applied in order, deletions, edits in place
# built as they are, paths restored when they leave the change, the
# upstream BASE), and series.sh (one commit per patch, new files whole,
# Signed-off-by, git am gives the tested tree).
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
		echo "FAIL series: $name: rc $rc (want $want_rc), output:"
		sed 's/^/  /' <<< "$out" | head -n 20
	fi
}
# same NAME A B: A and B are equal strings.
same() {
	if [ "$2" = "$3" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL series: $1: '$2' is not '$3'"
	fi
}

export CACHE_DIR=$tmp/cache REPO=$tmp/repo
P=$CACHE_DIR/src/linux-x
SRC=$CACHE_DIR/rust/src
B=$REPO/tools/testing/allocprof/linux-x
export PRISTINE=$P SRC BASEDIR=$B
A=$REPO/tools/testing/allocprof

# The pristine tree: a Makefile, two C files, and a checkpatch that finds
# nothing to say.
mkdir -p "$P/lib" "$P/scripts"
printf 'VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n' > "$P/Makefile"
seq 1 40 | sed 's/^/line /' > "$P/lib/a.c"
echo 'old' > "$P/lib/old.c"
printf '#!/usr/bin/perl\nexit 0;\n' > "$P/scripts/checkpatch.pl"

# The repo: the machinery, a file of ours, two patches.
mkdir -p "$A" "$B" "$REPO/lib" "$REPO/rust/kernel/x" "$A/bench"
cp "$H/seriesmap.py" "$H/prepare-tree.sh" "$H/series.sh" "$H/refresh.py" "$H/pristine-git.sh" "$H/git-env.sh" \
	"$H/cover-letter.txt" "$H/upstream-commits" "$A/"
: > "$A/bench/RESULTS.md"
printf 'BASE_PKG=linux-x\nBASE_PKG_VERSION=1\nBASE_TARBALL=/nonexistent\nBASE_DIR=linux-x\nBASE_RELEASE=6.12.118\n' \
	> "$B/base.conf"
echo 'ours' > "$REPO/lib/ours.c"
printf '// SPDX-License-Identifier: GPL-2.0\n' > "$REPO/rust/kernel/x/mod.rs"
cat > "$B/series" <<'EOF'
# a comment
patch 01-lib-fifth-line

patch 02-lib-ours
	add lib/ours.c
	add rust/kernel/x/
	delete lib/old.c
EOF
printf 'lib: the fifth line in words\n\nSo that it reads.\n' > "$B/01-lib-fifth-line.msg"
printf 'lib: ours\n\nAdds ours.\n' > "$B/02-lib-ours.msg"
# mkdiff OLD NEW: lib/a.c's change from OLD to NEW, as git diff writes it.
mkdiff() {
	mkdir -p "$tmp/d/old/lib" "$tmp/d/new/lib"
	cp "$1" "$tmp/d/old/lib/a.c"
	cp "$2" "$tmp/d/new/lib/a.c"
	(cd "$tmp/d" && git diff --no-index --abbrev=9 old/lib/a.c new/lib/a.c |
		sed 's|a/old/|a/|g; s|b/new/|b/|g')
}
cp "$P/lib/a.c" "$tmp/a.c"
sed -i 's/^line 5$/line five/' "$tmp/a.c"
mkdiff "$P/lib/a.c" "$tmp/a.c" > "$B/01-lib-fifth-line.diff"
cp "$tmp/a.c" "$tmp/a5.c"
sed -i 's/^line 30$/line thirty/' "$tmp/a.c"
mkdiff "$tmp/a5.c" "$tmp/a.c" > "$B/02-lib-ours.diff"
git -C "$REPO" init -q
git -C "$REPO" add -A

map() { python3 "$A/seriesmap.py" "$B" "$REPO" "$@"; }
lay() { bash "$A/prepare-tree.sh" "$P" "$SRC" "$REPO" "${1:-rust}" "$B"; }

expect "the map covers the repo" 0 '' map check
same "steps in order" "$(map steps | tr '\n' ' ')" \
	"patch 01-lib-fifth-line diff $B/01-lib-fifth-line.diff patch 02-lib-ours add lib/ours.c add rust/kernel/x/mod.rs delete lib/old.c diff $B/02-lib-ours.diff "

expect "make tree lays the change" 0 '2 patches, 2 files of ours, 1 patched, 1 deleted' lay
same "a file of ours is a link to the repo's" "$(readlink "$SRC/lib/ours.c")" "$REPO/lib/ours.c"
same "diffs applied in order" "$(sed -n '5p;30p' "$SRC/lib/a.c" | tr '\n' ' ')" "line five line thirty "
same "the pristine tree is intact" "$(sed -n 5p "$P/lib/a.c")" "line 5"
same "a deleted file is gone" "$(ls "$SRC/lib" | tr '\n' ' ')" "a.c ours.c "
echo 'edited' > "$REPO/lib/ours.c"
same "an edit in place is in the tree" "$(cat "$SRC/lib/ours.c")" "edited"
expect "a second lay changes nothing" 0 '0 updated, 0 restored' lay

# A file of ours no patch adds, a patch without a message, a diff that
# changes a file of ours, an add of nothing: each named.
echo 'stray' > "$REPO/lib/stray.c"
git -C "$REPO" add lib/stray.c
expect "an unmapped file is named" 1 'lib/stray.c: at a kernel path but added by no patch' map check
git -C "$REPO" rm -q -f lib/stray.c
mv "$B/02-lib-ours.msg" "$tmp/msg"
expect "a patch without a message is named" 1 '02-lib-ours: no 02-lib-ours.msg' map check
mv "$tmp/msg" "$B/02-lib-ours.msg"
sed 's|lib/a.c|lib/ours.c|g' "$B/01-lib-fifth-line.diff" > "$B/03-x.diff"
printf 'patch 03-x\n' >> "$B/series"
echo 'x: x' > "$B/03-x.msg"
expect "a diff of a file of ours is refused" 1 '03-x.diff changes lib/ours.c, a file of ours' map check
sed -i '/^patch 03-x$/d' "$B/series"
rm "$B/03-x.diff" "$B/03-x.msg"
cp "$B/01-lib-fifth-line.diff" "$tmp/first.diff"
{ echo 'stray text'; cat "$tmp/first.diff"; } > "$B/01-lib-fifth-line.diff"
expect "text before a diff's first section is named" 1 'text before the first "diff --git"' map check
cp "$tmp/first.diff" "$B/01-lib-fifth-line.diff"
printf '\tadd lib/none.c\n' >> "$B/series"
expect "an add of nothing is named" 1 'add lib/none.c: no such file' map check
sed -i '/none.c/d' "$B/series"
printf 'patch bad slug\n' >> "$B/series"
expect "a malformed line is named" 1 'series:[0-9]+: not "patch SLUG"' map check
sed -i '/bad slug/d' "$B/series"

# A diff that no longer applies names its patch; the tree is then
# laid again from a good map.
cp "$B/02-lib-ours.diff" "$tmp/good.diff"
sed -i 's/^-line 30$/-line 31/' "$B/02-lib-ours.diff"
expect "a diff that does not apply is named" 1 '02-lib-ours.diff does not apply' lay
cp "$tmp/good.diff" "$B/02-lib-ours.diff"

# Leaving the change: a file of ours dropped from the map and the repo is
# restored to pristine (gone), a delete dropped brings the file back.
git -C "$REPO" rm -q -r -f rust/kernel/x
sed -i '/rust\/kernel\/x/d; /delete lib\/old.c/d' "$B/series"
expect "paths that left the change are restored" 0 '2 restored' lay
same "the dropped delete is back" "$(cat "$SRC/lib/old.c")" "old"
same "the dropped file of ours is gone" "$(ls "$SRC/rust/kernel/x" | wc -l)" "0"

# The upstream BASE: the pristine tree with only the suite's directory.
mkdir -p "$REPO/tools/testing/selftests/alloc_tag"
echo 'suite' > "$REPO/tools/testing/selftests/alloc_tag/t.c"
git -C "$REPO" add -A
printf '\tadd tools/testing/selftests/alloc_tag/\n' >> "$B/series"
SRC=$CACHE_DIR/upstream/src
expect "the upstream BASE lays the suite only" 0 '1 files of ours, 0 patched, 0 deleted' lay upstream
same "upstream keeps lib/a.c pristine" "$(sed -n 5p "$SRC/lib/a.c")" "line 5"
same "upstream has the suite" "$(cat "$SRC/tools/testing/selftests/alloc_tag/t.c")" "suite"

# The series: generated, applied with git am, equal to the tested tree.
SRC=$CACHE_DIR/rust/src
lay >/dev/null
export SIGNOFF="A Developer <dev@example.org>"
expect "make series generates and checks" 0 'identical to the BASE=rust tree make builds' \
	bash "$A/series.sh"
S=$CACHE_DIR/series/patches
same "one patch per map entry and a cover letter" "$(ls "$S" | tr '\n' ' ')" \
	"0000-cover-letter.patch 0001-lib-the-fifth-line-in-words.patch 0002-lib-ours.patch "
same "each patch is signed off" "$(grep -c '^Signed-off-by: A Developer <dev@example.org>$' "$S"/000[12]-*.patch | tr '\n' ' ')" \
	"$S/0001-lib-the-fifth-line-in-words.patch:1 $S/0002-lib-ours.patch:1 "
same "a new file appears whole" "$(grep -c '^new file mode' "$S/0002-lib-ours.patch")" "2"
same "the new file's content is the repo's" "$(grep '^+edited$' "$S/0002-lib-ours.patch")" "+edited"
same "the cover letter names the base" "$(grep -c 'Linux 6.12.118' "$S/0000-cover-letter.patch")" "1"
echo 'drift' > "$SRC/lib/ours.c.tmp" && rm "$SRC/lib/ours.c" && mv "$SRC/lib/ours.c.tmp" "$SRC/lib/ours.c"
expect "a tested tree that is not the series is refused" 1 'lib/ours.c differs from the tested tree' \
	bash "$A/series.sh"
SIGNOFF="nobody" expect "a malformed SIGNOFF is refused" 2 "want 'Name <address>'" bash "$A/series.sh"

# Hooks in upstream files are edited in the tree and taken into their
# patch's diff by make refresh; make tree never overwrites such an edit.
(cd "$CACHE_DIR/src" && tar -cJf "$tmp/base.tar.xz" linux-x)
# refresh [--patch SLUG] [FILE...]
refresh() {
	local o=()
	[ "${1:-}" = --patch ] && { o=(--patch "$2"); shift 2; }
	python3 "$A/refresh.py" "${o[@]}" "$B" "$P" "$SRC" "$tmp/base.tar.xz" linux-x "$@"
}
lay >/dev/null
sed -i 's/^line 10$/line ten/' "$SRC/lib/a.c"
expect "make tree refuses to overwrite an edit" 1 'make refresh writes the edits' lay
same "the edit is still there" "$(sed -n 10p "$SRC/lib/a.c")" "line ten"
expect "refresh takes it into the last patch that changes the file" 0 \
	'refresh: lib/a.c -> .*02-lib-ours.diff' refresh
same "the diff has the edit" "$(grep -c '^+line ten$' "$B/02-lib-ours.diff")" "1"
same "the first patch's diff is unchanged" "$(grep -c 'line ten' "$B/01-lib-fifth-line.diff")" "0"
expect "make tree then lays it" 0 '0 updated' lay
expect "a second refresh finds nothing" 0 'no upstream file edited' refresh
sed -i 's/^line ten$/line 10/' "$SRC/lib/a.c"
refresh >/dev/null
same "undoing the edit gives the diff back" "$(cmp "$B/02-lib-ours.diff" "$tmp/good.diff" && echo same)" "same"
# To an earlier patch, when the later one's lines are not in the way; the
# later patch's own change stays in its diff.
sed -i 's/^line 2$/line two/' "$SRC/lib/a.c"
expect "PATCH= takes it into an earlier patch" 0 'refresh: lib/a.c -> .*01-lib-fifth-line.diff' \
	refresh --patch 01-lib-fifth-line
same "the later diff still applies" "$(lay >/dev/null && sed -n '2p;5p;30p' "$SRC/lib/a.c" | tr '\n' ' ')" \
	"line two line five line thirty "
sed -i 's/^line thirty$/line 30 again/' "$SRC/lib/a.c"
expect "an edit of a later patch's lines cannot go to an earlier patch" 1 \
	'meets the lines 02-lib-ours.diff changes' refresh --patch 01-lib-fifth-line
expect "DISCARD=1 drops the edit" 0 '1 updated' env DISCARD=1 bash "$A/prepare-tree.sh" "$P" "$SRC" "$REPO" rust "$B"
same "the tree is the diffs again" "$(sed -n 30p "$SRC/lib/a.c")" "line thirty"
# A new hook: an upstream file no diff changes, edited through its hard link
# to the pristine tree; the pristine file is taken again from the tarball.
ln -f "$P/lib/old.c" "$SRC/lib/old.c"
echo 'old, edited' > "$SRC/lib/old.c"
expect "a file no patch changes needs PATCH=" 1 'no patch changes it yet' refresh lib/old.c
expect "refresh of a new hook" 0 'pristine restored' refresh --patch 02-lib-ours lib/old.c
same "the pristine file is intact again" "$(cat "$P/lib/old.c")" "old"
same "the new hook is in the patch's diff" "$(grep -c '^+old, edited$' "$B/02-lib-ours.diff")" "1"
expect "make tree lays the new hook" 0 '2 patched' lay
same "the tree has it" "$(cat "$SRC/lib/old.c")" "old, edited"

echo "series: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
