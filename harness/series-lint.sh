#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The steps of make series (harness/series/), checked without a kernel tree:
# each step has a subject and items that exist; every patch of
# patches/series is an item of exactly one step; every
# file the BASE=rust tree overlays (rust mm lib include scripts
# Documentation tools/testing/selftests/alloc_tag, and Kconfig) is laid by
# exactly one step; only the last step has no delta and every delta belongs
# to a step.  One "ok"/"FAIL" line per check, then "N passed, N failed".
# REPO=DIR checks another checkout (the tests use a copy).
set -uo pipefail
REPO=${REPO:-$(cd "$(dirname "$0")/.." && pwd)}
S=$REPO/harness/series
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

mapfile -t steps < <(ls "$S"/[0-9][0-9]-*.step 2>/dev/null)
[ ${#steps[@]} -gt 0 ] && ok "${#steps[@]} steps" || bad "no steps in $S"

items() {
	awk 'NR == 1 && /^@patch / {print "patch " $2; f = 1; next}
		f && NF {print} /^---$/ {f = 1}' "$1"
}

# Subjects and items.
errs=0
for s in "${steps[@]}"; do
	first=$(head -n 1 "$s")
	if [[ $first != "@patch "* ]]; then
		grep -qx -- '---' "$s" || { echo "  $(basename "$s"): no --- line"; errs=$((errs + 1)); }
		[ -n "$first" ] && [ ${#first} -le 75 ] ||
			{ echo "  $(basename "$s"): subject empty or over 75 characters"; errs=$((errs + 1)); }
	fi
	while read -r kind path; do
		case $kind in
		file) [ -e "$REPO/$path" ] || { echo "  $(basename "$s"): no file $path"; errs=$((errs + 1)); } ;;
		patch) [ -f "$REPO/patches/$path" ] || { echo "  $(basename "$s"): no patch $path"; errs=$((errs + 1)); } ;;
		*) echo "  $(basename "$s"): unknown item '$kind $path'"; errs=$((errs + 1)) ;;
		esac
	done < <(items "$s")
done
[ $errs -eq 0 ] && ok "subjects and items" || bad "subjects and items: $errs errors"

# Patches: each once, in patches/series order.
want=$(grep -v '^\s*#' "$REPO/patches/series" | grep -v '^\s*$')
got=$(for s in "${steps[@]}"; do items "$s"; done | awk '$1 == "patch" {print $2}')
if [ "$(sort <<< "$got")" != "$(sort <<< "$want")" ]; then
	bad "patches: the steps' patches are not patches/series' ($(comm -3 <(sort <<< "$got") <(sort <<< "$want") | tr -d '\t' | tr '\n' ' '))"
elif [ "$(sort -u <<< "$got" | wc -l)" != "$(wc -l <<< "$got")" ]; then
	bad "patches: one is an item of two steps"
else
	ok "patches: each an item of one step"
fi

# Overlaid files: each laid by exactly one step.
files=$( (cd "$REPO" && git ls-files -- rust mm lib include scripts Documentation \
	tools/testing/selftests/alloc_tag Kconfig) | sort)
laid=$(for s in "${steps[@]}"; do items "$s"; done | awk '$1 == "file" {print $2}')
errs=0
while read -r f; do
	n=0
	while read -r p; do
		[ -n "$p" ] || continue
		if [ "$f" = "$p" ] || [[ $f == "$p"/* ]]; then n=$((n + 1)); fi
	done <<< "$laid"
	[ $n -eq 1 ] || { echo "  $f: laid by $n steps"; errs=$((errs + 1)); }
done <<< "$files"
[ $errs -eq 0 ] && ok "files: $(wc -l <<< "$files") overlaid files, each laid by one step" ||
	bad "files: $errs laid by no step or by several"

# Deltas: only for steps, never for the last.
errs=0
for d in "$S"/*.delta; do
	[ -e "$d" ] || continue
	[ -f "${d%.delta}.step" ] || { echo "  $(basename "$d"): no such step"; errs=$((errs + 1)); }
done
last=${steps[${#steps[@]} - 1]}
[ -f "${last%.step}.delta" ] && { echo "  the last step has a delta"; errs=$((errs + 1)); }
[ $errs -eq 0 ] && ok "deltas" || bad "deltas: $errs errors"

echo "series lint: $pass passed, $fail failed"
[ $fail -eq 0 ]
