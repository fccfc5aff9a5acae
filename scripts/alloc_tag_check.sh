#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Check that the allocation tags of a linked vmlinux fit in the page-flag
# bits left free by this config, for compressed page tags.
#
# usage: alloc_tag_check.sh [--strict] [--bits F] [--nm-output FILE] vmlinux
#
# Reads from the symbol table of vmlinux (or from FILE, the output of nm
# on it): the bounds of the alloc_tags section (__start_alloc_tags,
# __stop_alloc_tags) and the absolute symbols the Rust core emits:
# __alloc_tag_size (bytes per tag), __alloc_tag_pgflag_bits (free
# page-flag bits of this config), __alloc_tag_index_bits_max (the widest
# index field), __alloc_tag_module_ids (indexes reserved for modules) and
# __alloc_tag_rust_site_ids (indexes reserved for Rust call sites; 0 if
# the symbol is absent).
#
# With N tags and F free bits (or --bits F), the index field is
# W = min(F, index_bits_max) bits wide; indexes 0, 1 and 2 are reserved,
# so the capacity is C = 2^W - 3 (0 when W < 2).  The tags fit when
# N + module_ids + rust_site_ids <= C.  Prints one line:
#
#   alloc_tag: N tags, F free page-flag bits, capacity C
#
# and, when they do not fit, a second one saying so.  Exit status: 0 when
# they fit or without --strict, 1 with --strict when they do not fit, 2 on
# bad arguments or a vmlinux without the symbols.

set -u

prog=alloc_tag_check
strict=0
bits=
nm_output=

usage() {
	echo "usage: $0 [--strict] [--bits F] [--nm-output FILE] vmlinux" >&2
	exit 2
}

err() {
	echo "$prog: $*" >&2
	exit 2
}

is_number() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	esac
	# At most 9 digits: no overflow in shell arithmetic.
	[ ${#1} -le 9 ]
}

while [ $# -gt 0 ]; do
	case $1 in
	--strict)
		strict=1
		;;
	--bits)
		[ $# -ge 2 ] || usage
		is_number "$2" || err "--bits: not a number: '$2'"
		bits=$2
		shift
		;;
	--nm-output)
		[ $# -ge 2 ] || usage
		nm_output=$2
		shift
		;;
	--)
		shift
		break
		;;
	-*)
		usage
		;;
	*)
		break
		;;
	esac
	shift
done
[ $# -eq 1 ] || usage
vmlinux=$1

if [ -n "$nm_output" ]; then
	[ -r "$nm_output" ] || err "cannot read $nm_output"
	syms=$(cat "$nm_output") || err "cannot read $nm_output"
else
	[ -r "$vmlinux" ] || err "cannot read $vmlinux"
	syms=$(${NM:-nm} "$vmlinux" 2>/dev/null) || err "${NM:-nm} failed on $vmlinux"
fi

# The value of symbol $1 in hex digits, as nm prints it.  Only the two section
# bounds are addresses; the others are absolute numbers.
sym_hex() {
	printf '%s\n' "$syms" | awk -v s="$1" '$NF == s && NF == 3 { print $1; exit }'
}

# diff=$1 - $2, for two hex digit strings of up to 16 digits: the upper
# and lower halves are taken apart so that shell arithmetic never
# overflows.
hexdiff() {
	a=$(printf '%16s' "$1" | tr ' ' 0)
	b=$(printf '%16s' "$2" | tr ' ' 0)
	ah=$(printf '%d' "0x$(echo "$a" | cut -c1-8)")
	al=$(printf '%d' "0x$(echo "$a" | cut -c9-16)")
	bh=$(printf '%d' "0x$(echo "$b" | cut -c1-8)")
	bl=$(printf '%d' "0x$(echo "$b" | cut -c9-16)")
	diff=$(( (ah - bh) * 4294967296 + (al - bl) ))
}

# hex=the value of symbol $1, checked to be a hex number of 64 bits.
lookup() {
	hex=$(sym_hex "$1")
	[ -n "$hex" ] || err "$vmlinux has no symbol $1 (no MEM_ALLOC_PROFILING, or no Rust core?)"
	case $hex in
	*[!0-9a-fA-F]*) err "bad value '$hex' of $1" ;;
	esac
	[ ${#hex} -le 16 ] || err "bad value '$hex' of $1"
}

# val=the value of the absolute symbol $1, in decimal; at most 2^31.
value() {
	lookup "$1"
	hexdiff "$hex" 0
	[ "$diff" -ge 0 ] && [ "$diff" -le 2147483648 ] ||
		err "value 0x$hex of $1 is out of range"
	val=$diff
}

lookup __start_alloc_tags
start=$hex
lookup __stop_alloc_tags
stop=$hex

value __alloc_tag_size
size=$val
value __alloc_tag_pgflag_bits
free=$val
value __alloc_tag_index_bits_max
max=$val
value __alloc_tag_module_ids
mods=$val
rust=0
if [ -n "$(sym_hex __alloc_tag_rust_site_ids)" ]; then
	value __alloc_tag_rust_site_ids
	rust=$val
fi

hexdiff "$stop" "$start"
bytes=$diff
[ "$size" -gt 0 ] || err "tag size is 0"
[ "$bytes" -ge 0 ] || err "alloc_tags section ends before it starts"
[ $((bytes % size)) -eq 0 ] ||
	err "alloc_tags section is $bytes bytes, not a multiple of the tag size $size"
tags=$((bytes / size))

[ -n "$bits" ] && free=$bits
w=$free
[ "$w" -gt "$max" ] && w=$max
# max is at most 24 in the core; keep 2^w in range whatever the input.
[ "$w" -gt 30 ] && w=30
if [ "$w" -lt 2 ]; then
	cap=0
else
	cap=$(( (1 << w) - 3 ))
fi

echo "alloc_tag: $tags tags, $free free page-flag bits, capacity $cap"
if [ $((tags + mods + rust)) -gt "$cap" ]; then
	echo "alloc_tag: $tags tags plus $mods module tag ids and $rust Rust site tag ids" \
		"do not fit in capacity $cap"
	[ "$strict" -eq 1 ] && exit 1
fi
exit 0
