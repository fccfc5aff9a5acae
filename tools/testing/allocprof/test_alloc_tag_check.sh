#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of scripts/alloc_tag_check.sh on synthetic nm outputs: the
# line it prints, the capacity formula, the fit decision at its exact
# boundary, and the exit status for bad input.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
check=${ALLOC_TAG_TREE:?the patched tree (host-test.sh lays it)}/scripts/alloc_tag_check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# nm output with TAGS tags of SIZE bytes, FREE free bits, MAX, MODS, and
# RUST (Rust site ids; no symbol when not given, as in older cores).
mk() {
	local tags=$1 size=$2 free=$3 max=$4 mods=$5 rust=${6:-}
	printf '%016x D __start_alloc_tags\n' $((0xffffffff82a0c000))
	printf '%016x D __stop_alloc_tags\n' $((0xffffffff82a0c000 + tags * size))
	printf '%016x A __alloc_tag_size\n' "$size"
	printf '%016x A __alloc_tag_pgflag_bits\n' "$free"
	printf '%016x A __alloc_tag_index_bits_max\n' "$max"
	printf '%016x A __alloc_tag_module_ids\n' "$mods"
	[ -n "$rust" ] && printf '%016x A __alloc_tag_rust_site_ids\n' "$rust"
	printf '%016x T alloc_tag_add\n' 0xffffffff81000000
}

# expect NAME RC OUTPUT-REGEX ARGS...
expect() {
	local name=$1 want_rc=$2 want=$3 out rc
	shift 3
	out=$("$check" "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want_rc" ] && grep -qE -- "$want" <<< "$out"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL alloc_tag_check: $name: rc $rc (want $want_rc), output: $out"
	fi
}

mk 853 40 42 24 1024 > "$tmp/a"
expect "the test config" 0 '^alloc_tag: 853 tags, 42 free page-flag bits, capacity 16777213$' \
	--nm-output "$tmp/a" vmlinux
expect "strict, fits" 0 '^alloc_tag: 853 tags, 42 free page-flag bits, capacity 16777213$' \
	--strict --nm-output "$tmp/a" vmlinux
expect "forced 11 bits fit" 0 'capacity 2045$' --strict --bits 11 --nm-output "$tmp/a" vmlinux
expect "forced 10 bits, not strict" 0 '853 tags plus 1024 module tag ids and 0 Rust site tag ids do not fit in capacity 1021' \
	--bits 10 --nm-output "$tmp/a" vmlinux
expect "forced 10 bits, strict" 1 '^alloc_tag: 853 tags, 10 free page-flag bits, capacity 1021$' \
	--strict --bits 10 --nm-output "$tmp/a" vmlinux
expect "1 bit: no capacity" 1 'capacity 0$' --strict --bits 1 --nm-output "$tmp/a" vmlinux
expect "0 bits" 1 '0 free page-flag bits, capacity 0$' --strict --bits 0 --nm-output "$tmp/a" vmlinux
expect "2 bits" 1 'capacity 1$' --strict --bits 2 --nm-output "$tmp/a" vmlinux

# Exactly at the boundary: 2^12 - 3 = 4093 = N + R.
mk 3069 40 12 24 1024 > "$tmp/b"
expect "N + R = C fits" 0 '^alloc_tag: 3069 tags, 12 free page-flag bits, capacity 4093$' \
	--strict --nm-output "$tmp/b" vmlinux
mk 3070 40 12 24 1024 > "$tmp/c"
expect "N + R = C + 1 does not" 1 '^alloc_tag: 3070 tags, 12 free page-flag bits, capacity 4093$' \
	--strict --nm-output "$tmp/c" vmlinux

# The Rust site reserve counts too: 2^12 - 3 = 4093 = N + M + R.
mk 2045 40 12 24 1024 1024 > "$tmp/r1"
expect "N + M + R = C fits" 0 '^alloc_tag: 2045 tags, 12 free page-flag bits, capacity 4093$' \
	--strict --nm-output "$tmp/r1" vmlinux
mk 2046 40 12 24 1024 1024 > "$tmp/r2"
expect "N + M + R = C + 1 does not" 1 \
	'^alloc_tag: 2046 tags plus 1024 module tag ids and 1024 Rust site tag ids do not fit in capacity 4093$' \
	--strict --nm-output "$tmp/r2" vmlinux

# The field is capped at the index width, whatever the free bits.
mk 100 48 60 24 0 > "$tmp/d"
expect "capped at 24 bits" 0 '100 tags, 60 free page-flag bits, capacity 16777213$' \
	--strict --nm-output "$tmp/d" vmlinux
mk 100 48 60 8 0 > "$tmp/e"
expect "capped at 8 bits" 0 'capacity 253$' --strict --nm-output "$tmp/e" vmlinux
mk 254 48 60 8 0 > "$tmp/f"
expect "capped at 8 bits, too many" 1 'capacity 253$' --strict --nm-output "$tmp/f" vmlinux
mk 0 40 5 24 0 > "$tmp/g"
expect "no tags" 0 '^alloc_tag: 0 tags, 5 free page-flag bits, capacity 29$' \
	--strict --nm-output "$tmp/g" vmlinux

# Bad input: exit 2 and a message, never a wrong line.
grep -v __alloc_tag_pgflag_bits "$tmp/a" > "$tmp/nosym"
expect "missing symbol" 2 'no symbol __alloc_tag_pgflag_bits' --nm-output "$tmp/nosym" vmlinux
grep -v __stop_alloc_tags "$tmp/a" > "$tmp/nostop"
expect "missing section bound" 2 'no symbol __stop_alloc_tags' --nm-output "$tmp/nostop" vmlinux
mk 10 40 42 24 1024 | sed 's/^\(.*\) D __stop_alloc_tags/ffffffff00000000 D __stop_alloc_tags/' > "$tmp/rev"
expect "section ends before it starts" 2 'ends before it starts' --nm-output "$tmp/rev" vmlinux
mk 10 40 42 24 1024 | sed '/__stop_alloc_tags/s/^\(.*\)\(.\) D/\1f D/' > "$tmp/odd"
expect "section not a multiple of the tag size" 2 'not a multiple' --nm-output "$tmp/odd" vmlinux
mk 10 0 42 24 1024 > "$tmp/zero"
expect "tag size 0" 2 'tag size is 0' --nm-output "$tmp/zero" vmlinux
mk 10 40 42 24 1024 | sed 's/^0*28 A __alloc_tag_size/zz A __alloc_tag_size/' > "$tmp/badhex"
expect "bad hex" 2 "bad value 'zz'" --nm-output "$tmp/badhex" vmlinux
expect "--bits not a number" 2 "not a number: 'x'" --bits x --nm-output "$tmp/a" vmlinux
expect "--bits negative" 2 "not a number: '-1'" --bits -1 --nm-output "$tmp/a" vmlinux
expect "--bits huge" 2 'not a number' --bits 99999999999999999999 --nm-output "$tmp/a" vmlinux
expect "--bits without value" 2 usage --nm-output "$tmp/a" vmlinux --bits
expect "unknown option" 2 usage --frobnicate vmlinux
expect "no vmlinux" 2 usage --strict
expect "two files" 2 usage a b
expect "unreadable nm output" 2 'cannot read' --nm-output "$tmp/none" vmlinux
expect "unreadable vmlinux" 2 'cannot read' "$tmp/none"
printf 'garbage\n' > "$tmp/garbage"
expect "not an ELF file" 2 'failed|no symbol' "$tmp/garbage"

echo "host alloc_tag_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
