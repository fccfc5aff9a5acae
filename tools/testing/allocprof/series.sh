#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series: the base's series, generated from the repo.
#
# BASEDIR/series maps the repo's files to patches (seriesmap.py): each patch
# is one commit on a git tree of the pristine source ($CACHE_DIR/series/linux,
# tag "pristine"): the files of ours it adds, whole, from the repo; the
# upstream files it deletes; its BASEDIR/SLUG.diff applied; BASEDIR/SLUG.msg
# as its message with a Signed-off-by.  Then git format-patch with a cover
# letter (cover-letter.txt), and four checks: the patches apply with git am
# to the pristine tree, the result is file for file the tree make builds and
# tests (BASE=rust, which prepare-tree.sh lays from the same map),
# checkpatch --strict has nothing to say about any patch, and each Fixes:
# tag names a known mainline commit.  The Makefile then builds every prefix
# (series-check.sh).
#
# SIGNOFF="Name <address>" signs (and authors) the patches; the default is
# the team identity of git-env.sh.
#
# Output: $CACHE_DIR/series/patches/*.patch
set -euo pipefail
: "${CACHE_DIR:?}" "${REPO:?}" "${SRC:?}" "${BASEDIR:?}" "${PRISTINE:?}"
H=$REPO/tools/testing/allocprof
S=$CACHE_DIR/series
G=$S/linux
out=$S/patches
. "$H/git-env.sh"
. "$BASEDIR/base.conf"
if [ -n "${SIGNOFF:-}" ]; then
	[[ $SIGNOFF =~ ^(.+)\ \<([^<>@ ]+@[^<>@ ]+)\>$ ]] ||
		{ echo "series: SIGNOFF='$SIGNOFF': want 'Name <address>'" >&2; exit 2; }
	export GIT_AUTHOR_NAME="${BASH_REMATCH[1]}" GIT_AUTHOR_EMAIL="${BASH_REMATCH[2]}"
	export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
fi
export GIT_AUTHOR_DATE="$GIT_COMMITTER_DATE"
signoff="Signed-off-by: $GIT_AUTHOR_NAME <$GIT_AUTHOR_EMAIL>"

python3 "$H/seriesmap.py" "$BASEDIR" "$REPO" check ||
	{ echo "series: $BASEDIR/series does not map the repo (above)" >&2; exit 1; }
steps=$(python3 "$H/seriesmap.py" "$BASEDIR" "$REPO" steps)

"$H/pristine-git.sh" "$PRISTINE" "$G"
git checkout -q -f pristine
git clean -q -fdx
git checkout -q -B series pristine

commit() {
	local slug=$1 msg
	msg=$BASEDIR/$slug.msg
	# Debian's source tree ignores everything at its top (/*): add by force.
	git add -A -f
	if git diff --cached --quiet; then
		echo "series: patch $slug changes nothing" >&2
		exit 1
	fi
	{ cat "$msg"; echo; echo "$signoff"; } | git commit -q --cleanup=verbatim -F -
}

n=0 slug=
while read -r kind arg; do
	case $kind in
	patch)
		[ -n "$slug" ] && commit "$slug"
		slug=$arg n=$((n + 1))
		;;
	add)
		mkdir -p "$G/$(dirname "$arg")"
		rm -f "$G/$arg"
		cp "$REPO/$arg" "$G/$arg"
		chmod --reference="$REPO/$arg" "$G/$arg"
		;;
	delete)
		[ -e "$G/$arg" ] || { echo "series: $slug deletes $arg, which is not in the tree" >&2; exit 1; }
		git rm -q "$arg"
		;;
	diff)
		git apply --whitespace=nowarn "$arg" ||
			{ echo "series: $(basename "$arg") does not apply after the patches before it" >&2; exit 1; }
		;;
	esac
done <<< "$steps"
commit "$slug"

rm -rf "$out"
git format-patch -q --cover-letter --zero-commit --no-signature --abbrev=12 -o "$out" pristine..series
# The cover letter: ours in place of format-patch's placeholders, with the
# production overhead table of the bench's RESULTS.md.
cover=$out/0000-cover-letter.patch
results=$H/bench/RESULTS.md
overhead=$(awk '/^# Production config/ {p = 1} p && /^## Overhead against compiled out/ {t = 1; next}
	t && /^\|/ {print; n++} t && n && !/^\|/ {exit}' "$results" |
	awk -F'|' 'NR == 2 {next} {for (i = 2; i <= 7; i++) gsub(/^ +| +$/, "", $i)
		printf "  %-10s %-12s %-12s %-12s %-12s\n", $2, $3, $4, $6, $7}' |
	sed 's/ *$//')
bench_commit=$(sed -n 's/^- date: .*; commit \([0-9a-f]*\)$/commit \1/p' "$results")
# The core's size: the added lines of the patch that brings it.
core_lines=$(grep -l '^Subject: \[PATCH [0-9]*/[0-9]*\] alloc_tag: a Rust core' "$out"/*.patch |
	xargs cat | grep -E '^\+' | grep -vc '^+++ ' || true)
python3 - "$cover" "$H/cover-letter.txt" "$overhead" "${bench_commit:-no bench run}" \
	"$core_lines" "$BASE_RELEASE" <<'PY'
import sys
cover, tmpl, overhead, bench, core, release = sys.argv[1:7]
text = open(cover).read()
body = open(tmpl).read().replace("@OVERHEAD@", overhead).replace("@BENCH_COMMIT@", bench)
body = body.replace("@CORE_LINES@", f"{int(core):,}").replace("@RELEASE@", release)
text = text.replace("*** SUBJECT HERE ***", "alloc_tag: allocation profiling with a Rust core")
text = text.replace("*** BLURB HERE ***", body.rstrip("\n"))
open(cover, "w").write(text)
PY
grep -q '\*\*\* .* HERE \*\*\*' "$cover" && { echo "series: cover letter placeholders left" >&2; exit 1; }
echo "series: $n patches and a cover letter in $out"
patches=$(ls "$out"/*.patch | grep -v '/0000-cover-letter.patch$')

# 1. Applies with git am to a clean tree.
git checkout -q -f -B series-check pristine
git am -q $patches
[ "$(git rev-parse 'series-check^{tree}')" = "$(git rev-parse 'series^{tree}')" ] ||
	{ echo "series: git am result differs from the series" >&2; exit 1; }
echo "series: applies with git am to pristine $BASE_RELEASE ($BASE_PKG $BASE_PKG_VERSION)"

# 2. Is what make builds and tests: every file the series changes and every
# path the tested tree lays (prepare-tree.sh's manifest) is the same in
# both, deletions included.
manifest=$(dirname "$SRC")/overlay.manifest
[ -f "$manifest" ] || { echo "series: no manifest of the tested tree at $manifest" >&2; exit 1; }
diffs=0 count=0
while read -r f; do
	count=$((count + 1))
	if [ -e "$G/$f" ]; then
		cmp -s "$G/$f" "$SRC/$f" || { echo "series: $f differs from the tested tree" >&2; diffs=$((diffs + 1)); }
	elif [ -e "$SRC/$f" ]; then
		echo "series: $f is in the tested tree but not in the series" >&2
		diffs=$((diffs + 1))
	fi
done < <( { git diff --name-only pristine series; awk '{print $NF}' "$manifest"; } | sort -u)
[ $diffs -eq 0 ] || exit 1
echo "series: identical to the BASE=rust tree make builds ($count paths)"

# 3. checkpatch.
bad=0
for p in $patches; do
	# MAINTAINERS remarks are left to the maintainers; /usr/bin first so
	# spdxcheck.py finds python3-ply.  UNKNOWN_COMMIT_ID: this tree has no
	# mainline history to look up the commits of Fixes: tags in; they are
	# checked below instead.
	res=$(cd "$G" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict -q \
		--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$p" 2>&1 || true)
	if [ -n "$res" ]; then
		echo "checkpatch: $(basename "$p"):"
		echo "$res"
		bad=$((bad + 1))
	fi
done
echo "series: checkpatch --strict: $bad of $n patches with remarks"
# Fixes: tags name mainline commits listed, with their subjects, in
# upstream-commits.
fixes=0
while IFS= read -r line; do
	fixes=$((fixes + 1))
	if [[ ! $line =~ ^Fixes:\ ([0-9a-f]{12})\ \(\"(.+)\"\)$ ]] ||
		! grep -qxF "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}" "$H/upstream-commits"; then
		echo "series: not a known mainline commit: $line" >&2
		bad=$((bad + 1))
	fi
done < <(cat $patches | grep '^Fixes:' || true)
echo "series: $fixes Fixes: tags, each a known mainline commit"
git checkout -q -f series
[ $bad -eq 0 ]
