#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series: the whole change as a numbered git format-patch series against
# pristine 6.12.118, with a cover letter, checked four ways: it applies with
# git am to a clean tree, the result is file for file the tree that make
# builds and tests (BASE=rust), checkpatch --strict has nothing to say about
# it, and each Fixes: tag names a known mainline commit.  The Makefile then
# builds every prefix (harness/series-check.sh).
#
# Output: $CACHE_DIR/series/patches/*.patch
set -euo pipefail
: "${CACHE_DIR:?}" "${REPO:?}" "${SRC:?}"
STEPS=$REPO/harness/series
PRISTINE=$CACHE_DIR/src/linux-source-6.12
S=$CACHE_DIR/series
G=$S/linux
out=$S/patches
export GIT_AUTHOR_NAME="allocprof developers" GIT_AUTHOR_EMAIL="dev@allocprof.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export GIT_AUTHOR_DATE="2026-12-02T00:00:00Z" GIT_COMMITTER_DATE="2026-12-02T00:00:00Z"
git() { command git -C "$G" -c core.autocrlf=false -c advice.detachedHead=false "$@"; }

if ! git rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
	echo "series: making a git tree of the pristine source (once)"
	rm -rf "$G"
	mkdir -p "$S"
	cp -a "$PRISTINE" "$G"
	git init -q
	git add -A -f
	git commit -q -m "Linux $(sed -n 's/^SUBLEVEL = //p' "$G/Makefile" | sed 's/^/6.12./') (Debian linux-source-6.12)"
	git tag pristine
fi

git checkout -q -f pristine
git clean -q -fdx
git branch -q -f series pristine
git checkout -q series

# The series is defined by harness/series/NN-name.step, in order.  A step
# file is the commit message (subject, blank line, body), a line "---", then
# its items: "file PATH" (a repo file or folder, copied to its kernel path;
# the repo's Kconfig is lib/Kconfig.alloc_tag) and "patch NAME" (one of
# patches/, applied).  A step whose first line is "@patch NAME" takes that
# patch's message and applies it; more items may follow.
#
# The tree after step K is pristine 6.12 with the items of steps 1..K laid on
# it in order, then NN-name.delta of step K if there is one: a patch that
# takes out of the files laid so far what later steps bring (a later step's
# lines in a file an earlier step adds), or adds what this step needs of a
# file whose item comes later.  The last step has no delta: the whole series
# is the tested tree.
steps=$(ls "$STEPS"/[0-9][0-9]-*.step)
step_items() {
	awk 'NR == 1 && /^@patch / {print "patch " $2; f = 1; next}
		f && NF {print} /^---$/ {f = 1}' "$1"
}
step_message() {
	local first
	first=$(head -n 1 "$1")
	if [[ $first == "@patch "* ]]; then
		local p=$REPO/patches/${first#@patch }
		sed -n 's/^Subject: \[PATCH\] //p' "$p" | head -n 1
		echo
		awk 'f && /^---$/ {exit} f {print} /^Subject:/ {f = 1}' "$p" | sed '1{/^$/d}'
	else
		sed '/^---$/,$d' "$1"
	fi
}
lay_item() {
	local kind=$1 path=$2 f
	case $kind in
	file)
		[ -e "$REPO/$path" ] || { echo "series: no $path in the repo" >&2; return 1; }
		(cd "$REPO" && command git ls-files -- "$path") | while read -r f; do
			local dest=$f
			[ "$f" = Kconfig ] && dest=lib/Kconfig.alloc_tag
			mkdir -p "$G/$(dirname "$dest")"
			cp "$REPO/$f" "$G/$dest"
		done ;;
	patch)
		patch -s -p1 -d "$G" --no-backup-if-mismatch -f < "$REPO/patches/$path" ||
			{ echo "series: patches/$path does not apply" >&2; return 1; } ;;
	*) echo "series: unknown item \"$kind $path\"" >&2; return 1 ;;
	esac
}
# lay K: the worktree becomes pristine plus the items of steps 1..K (no delta).
lay() {
	local k=$1 i=0 s kind path
	git read-tree --reset -u pristine
	git clean -q -fdx
	for s in $steps; do
		i=$((i + 1))
		[ $i -le "$k" ] || break
		while read -r kind path; do
			lay_item "$kind" "$path" || return 1
		done < <(step_items "$s")
	done
}
nsteps=$(wc -w <<< "$steps")
# Every patch of patches/series is an item of exactly one step.
for p in $(grep -v '^\s*#' "$REPO/patches/series" | grep -v '^\s*$'); do
	n=$(cat $steps | grep -Ec "^(@?patch) $p\$" || true)
	[ "$n" = 1 ] || { echo "series: patches/$p is an item of $n steps" >&2; exit 1; }
done
if [ -n "${SERIES_STOP:-}" ]; then
	# Authoring step K: its items and those before it committed as "base",
	# its delta (if any) applied on top, uncommitted; edit the worktree,
	# then git diff > the delta.
	k=$SERIES_STOP
	s=$(sed -n "${k}p" <<< "$(tr ' ' '\n' <<< "$steps")")
	[ -n "$s" ] || { echo "series: SERIES_STOP=$k: no such step" >&2; exit 2; }
	lay "$k"
	git add -A -f
	git commit -q -m "base of step $k (items only)"
	delta=${s%.step}.delta
	[ -f "$delta" ] && patch -s -p1 -d "$G" --no-backup-if-mismatch < "$delta"
	echo "series: stopped at step $k in $G: the delta is the worktree's diff to HEAD"
	exit 0
fi
k=0
for s in $steps; do
	k=$((k + 1))
	lay $k
	delta=${s%.step}.delta
	if [ -f "$delta" ]; then
		[ $k -lt "$nsteps" ] || { echo "series: the last step has a delta" >&2; exit 1; }
		patch -s -p1 -d "$G" --no-backup-if-mismatch -f < "$delta" ||
			{ echo "series: $(basename "$delta") does not apply" >&2; exit 1; }
	fi
	git add -A -f
	if git diff --cached --quiet; then
		echo "series: step $(basename "$s") changes nothing" >&2
		exit 1
	fi
	git commit -q -F <(step_message "$s")
done

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
# harness/series/upstream-commits.
fixes=0
while IFS= read -r line; do
	fixes=$((fixes + 1))
	if [[ ! $line =~ ^Fixes:\ ([0-9a-f]{12})\ \(\"(.+)\"\)$ ]] ||
		! grep -qxF "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}" "$STEPS/upstream-commits"; then
		echo "series: not a known mainline commit: $line" >&2
		bad=$((bad + 1))
	fi
done < <(cat $(ls "$out"/*.patch | grep -v '/0000-cover-letter.patch$') | grep '^Fixes:')
echo "series: $fixes Fixes: tags, each a known mainline commit"
git checkout -q -f series
[ $bad -eq 0 ]
