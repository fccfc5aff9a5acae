#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series: the whole change as a numbered git format-patch series against
# pristine 6.12.118, checked three ways: it applies with git am to a clean
# tree, the result is file for file the tree that make builds and tests
# (BASE=rust), and checkpatch --strict has nothing to say about it.
#
# Output: $CACHE_DIR/series/patches/*.patch
set -euo pipefail
: "${CACHE_DIR:?}" "${REPO:?}" "${SRC:?}"
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

# commit SUBJECT BODY PATH... : copy these repo paths to their kernel paths.
commit() {
	local subject=$1 body=$2
	shift 2
	local p
	for p in "$@"; do
		(cd "$REPO" && command git ls-files -- "$p") | while read -r f; do
			mkdir -p "$G/$(dirname "$f")"
			cp "$REPO/$f" "$G/$f"
		done
	done
	git add -A -f
	if git diff --cached --quiet; then
		echo "series: nothing for \"$subject\" yet; left out"
		return 0
	fi
	git commit -q -m "$subject" -m "$body"
}

# apply PATCHFILE: one of patches/*.patch as its own commit.
apply() {
	local p=$1 subject body
	subject=$(sed -n 's/^Subject: \[PATCH\] //p' "$p" | head -n 1)
	body=$(awk 'f && /^---$/ {exit} f {print} /^Subject:/ {f = 1}' "$p" | sed '1{/^$/d}')
	patch -s -p1 -d "$G" --no-backup-if-mismatch < "$p"
	git add -A -f
	git commit -q -m "$subject" -m "$body"
}

commit "alloc_tag: headers for a Rust core" \
"alloc_tag.h, codetag.h and pgalloc_tag.h keep the layouts, the call-site
macros and the static-key tests; everything else becomes a declaration of
an entry point the Rust core defines. uapi/linux/alloc_tag.h is the binary
interface of /proc/allocinfo (the ALLOCINFO_IOC_* ioctls)." include/linux include/uapi
commit "rust: per-CPU access, seq_file writer and alloc_tag helpers" \
"percpu.rs: __percpu pointers, a gs-relative add on x86_64 (no preemption
toggling), sums over possible CPUs. seq_file.rs: writing records from
Rust. rust/helpers/alloc_tag.c: the macros and inlines the core calls." \
	rust/kernel/percpu.rs rust/kernel/seq_file.rs rust/helpers/alloc_tag.c
commit "rust: alloc_tag core" \
"Tag references, page tags (page_ext, split, migration swap), the code-tag
registry with module load/unload, controls (static key, boot parameter,
sysctl), /proc/allocinfo and show_mem() top users, and a C layout check." \
	rust/kernel/alloc_tag
grep -v '^\s*#' "$REPO/patches/series" | grep -v '^\s*$' | while read -r p; do
	apply "$REPO/patches/$p"
	# New files that belong with a patch's edits go into its commit.
	case $p in
	0001-lib-build-the-alloc_tag-core-from-Rust.patch)
		cp "$REPO/Kconfig" "$G/lib/Kconfig.alloc_tag"
		cp "$REPO/lib/alloc_tag_keys.c" "$G/lib/" ;;
	0006-kbuild-check-alloc_tag-capacity-after-linking-vmlinux.patch)
		cp "$REPO/scripts/alloc_tag_check.sh" "$G/scripts/" ;;
	0011-lib-test-hook-requesting-a-module-before-the-profiler-initcall.patch)
		cp "$REPO/lib/test_alloc_tag_early.c" "$G/lib/" ;;
	*) continue ;;
	esac
	git add -A -f
	git commit -q --amend --no-edit
done
commit "Documentation/mm: allocation profiling with the Rust core" \
"Theory, the Rust layout, the controls and the /proc/allocinfo format." Documentation
commit "selftests/alloc_tag: conformance suite" \
"Format, exact per-site deltas, sysctl, boot parameter, module unload,
stress and compaction checks, with test modules at known sites." tools/testing/selftests/alloc_tag

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
python3 - "$cover" "$REPO/harness/cover-letter.txt" "$overhead" "${bench_commit:-no bench run}" <<'PY'
import sys
cover, tmpl, overhead, bench = sys.argv[1:5]
text = open(cover).read()
body = open(tmpl).read().replace("@OVERHEAD@", overhead).replace("@BENCH_COMMIT@", bench)
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
	res=$(cd "$G" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict -q \
		--no-signoff --ignore FILE_PATH_CHANGES "$p" 2>&1 || true)
	if [ -n "$res" ]; then
		echo "checkpatch: $(basename "$p"):"
		echo "$res"
		bad=$((bad + 1))
	fi
done
echo "series: checkpatch --strict: $bad of $(ls "$out" | grep -vc '^0000-') patches with remarks"
git checkout -q -f series
[ $bad -eq 0 ]
