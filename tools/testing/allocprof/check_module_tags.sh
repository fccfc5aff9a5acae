#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# usage: check_module_tags.sh MODULE.ko...
# The module loader of the Rust core moves a module's alloc_tags section to
# a tag area of its own and takes all of it as tags, from its first byte.
# So in every module the section must hold only tags: __start_alloc_tags at
# offset 0 and __stop_alloc_tags at its end (an empty section is fine).  A
# tag section the linker padded (its alignment as padding inside, after a
# section that ends unaligned) fails the load.  Prints one line per module
# that breaks this; exits 1 if any does.
rc=0
for ko; do
	size=$(readelf -SW "$ko" 2>/dev/null | awk '$2 == "alloc_tags" {print $6; exit} $3 == "alloc_tags" {print $7; exit}')
	[ -n "$size" ] || continue
	size=$((16#$size))
	read -r start stop < <(readelf -sW "$ko" 2>/dev/null | awk '
		$8 == "__start_alloc_tags" {s = $2} $8 == "__stop_alloc_tags" {e = $2}
		END {print (s == "" ? "none" : s), (e == "" ? "none" : e)}')
	[ "$start" != none ] && start=$((16#$start))
	[ "$stop" != none ] && stop=$((16#$stop))
	if [ "$size" != 0 ] && { [ "$start" != 0 ] || [ "$stop" != "$size" ]; }; then
		echo "$(basename "$ko"): alloc_tags has $size bytes, tags at [$start, $stop)"
		rc=1
	fi
done
exit $rc
