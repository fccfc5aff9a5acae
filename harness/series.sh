#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series: the patch stack of patches/ (patches/series, in order) as a
# numbered git format-patch series with a cover letter, checked four ways: it
# applies with git am to a clean 6.12.118 tree, the result is file for file
# the tree that make builds and tests (BASE=rust, which prepare-tree.sh lays
# from the same patches), checkpatch --strict has nothing to say about it,
# and each Fixes: tag names a known mainline commit.  The Makefile then
# builds every prefix (harness/series-check.sh).
#
# Output: $CACHE_DIR/series/patches/*.patch
set -euo pipefail
: "${CACHE_DIR:?}" "${REPO:?}" "${SRC:?}"
PD=$REPO/patches
PRISTINE=$CACHE_DIR/src/linux-source-6.12
S=$CACHE_DIR/series
G=$S/linux
out=$S/patches
. "$REPO/harness/git-env.sh"

"$REPO/harness/pristine-git.sh" "$PRISTINE" "$G"
git checkout -q -f pristine
git clean -q -fdx
git branch -q -f series pristine
git checkout -q series
n=0
while read -r p; do
	git am -q --committer-date-is-author-date "$PD/$p" ||
		{ git am --abort || true; echo "series: patches/$p does not apply" >&2; exit 1; }
	n=$((n + 1))
done < <(grep -v '^\s*#' "$PD/series" | grep -v '^\s*$')
[ "$n" -gt 0 ] || { echo "series: patches/series names no patch" >&2; exit 1; }

rm -rf "$out"
git format-patch -q --cover-letter -o "$out" pristine..series
# The cover letter: ours in place of format-patch's placeholders, with the
# production overhead table of bench/RESULTS.md.
cover=$out/0000-cover-letter.patch
overhead=$(awk '/^# Production config/ {p = 1} p && /^## Overhead against compiled out/ {t = 1; next}
	t && /^\|/ {print; n++} t && n && !/^\|/ {exit}' "$REPO/bench/RESULTS.md" |
	awk -F'|' 'NR == 2 {next} {for (i = 2; i <= 7; i++) gsub(/^ +| +$/, "", $i)
		printf "  %-10s %-12s %-12s %-12s %-12s\n", $2, $3, $4, $6, $7}' |
	sed 's/ *$//')
bench_commit=$(sed -n 's/^- date: .*; commit \([0-9a-f]*\)$/commit \1/p' "$REPO/bench/RESULTS.md")
# The switch's size: the added lines of the patch that brings the core.
switch_lines=$(grep -l '^Subject: \[PATCH [0-9]*/[0-9]*\] alloc_tag: a Rust core' "$out"/*.patch |
	xargs cat | grep -E '^\+' | grep -vc '^+++ ' || true)
python3 - "$cover" "$REPO/harness/cover-letter.txt" "$overhead" "${bench_commit:-no bench run}" \
	"$switch_lines" <<'PY'
import sys
cover, tmpl, overhead, bench, switch = sys.argv[1:6]
text = open(cover).read()
body = open(tmpl).read().replace("@OVERHEAD@", overhead).replace("@BENCH_COMMIT@", bench)
body = body.replace("@SWITCH_LINES@", f"{int(switch):,}")
text = text.replace("*** SUBJECT HERE ***", "alloc_tag: allocation profiling with a Rust core")
text = text.replace("*** BLURB HERE ***", body.rstrip("\n"))
open(cover, "w").write(text)
PY
grep -q '\*\*\* .* HERE \*\*\*' "$cover" && { echo "series: cover letter placeholders left" >&2; exit 1; }
echo "series: $(ls "$out" | grep -vc '^0000-') patches and a cover letter in $out"

# 1. Applies with git am to a clean tree.
git checkout -q -f -B series-check pristine
git am -q $(ls "$out"/*.patch | grep -v '/0000-cover-letter.patch$')
[ "$(git rev-parse 'series-check^{tree}')" = "$(git rev-parse 'series^{tree}')" ] ||
	{ echo "series: git am result differs from the series" >&2; exit 1; }
echo "series: applies with git am to pristine 6.12"

# 2. Is what make builds and tests: every file the series changes and every
# file the tested tree overlays (prepare-tree.sh's manifest) is the same in
# both, so a new file the series leaves out is caught too.
manifest=$(dirname "$SRC")/overlay.manifest
[ -f "$manifest" ] || { echo "series: no overlay manifest at $manifest" >&2; exit 1; }
diffs=0
files=$( { git diff --name-only pristine series; cat "$manifest"; } | sort -u)
while read -r f; do
	cmp -s "$G/$f" "$SRC/$f" || { echo "series: $f differs from the tested tree" >&2; diffs=$((diffs + 1)); }
done <<< "$files"
[ $diffs -eq 0 ] || exit 1
echo "series: identical to the BASE=rust tree make builds ($(wc -l <<< "$files") files)"

# 3. checkpatch.
bad=0
for p in $(ls "$out"/*.patch | grep -v '/0000-cover-letter.patch$'); do
	# MAINTAINERS remarks are left to the maintainers; /usr/bin first so
	# spdxcheck.py finds python3-ply.
	# --no-signoff: the series awaits its authors' sign-off (the cover
	# letter says so); none is invented.
	# UNKNOWN_COMMIT_ID: this tree has no mainline history to look up the
	# commits of Fixes: tags in; they are checked below instead.
	res=$(cd "$G" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict -q \
		--no-signoff --ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$p" 2>&1 || true)
	if [ -n "$res" ]; then
		echo "checkpatch: $(basename "$p"):"
		echo "$res"
		bad=$((bad + 1))
	fi
done
echo "series: checkpatch --strict: $bad of $(ls "$out" | grep -vc '^0000-') patches with remarks"
# Fixes: tags name mainline commits listed, with their subjects, in
# harness/upstream-commits.
fixes=0
while IFS= read -r line; do
	fixes=$((fixes + 1))
	if [[ ! $line =~ ^Fixes:\ ([0-9a-f]{12})\ \(\"(.+)\"\)$ ]] ||
		! grep -qxF "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}" "$REPO/harness/upstream-commits"; then
		echo "series: not a known mainline commit: $line" >&2
		bad=$((bad + 1))
	fi
done < <(cat $(ls "$out"/*.patch | grep -v '/0000-cover-letter.patch$') | grep '^Fixes:')
echo "series: $fixes Fixes: tags, each a known mainline commit"
git checkout -q -f series
[ $bad -eq 0 ]
