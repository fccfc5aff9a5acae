#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build bzImage and in-tree modules; the full log goes to $W/kernel-build.log.
set -uo pipefail
: "${LLVM_SUFFIX:?set by the top Makefile}"
log=$W/kernel-build.log
make -C "$SRC" O="$OUT" LLVM="$LLVM_SUFFIX" -j"${JOBS:-$(nproc)}" bzImage modules > "$log" 2>&1
rc=$?
# The line of scripts/alloc_tag_check.sh, printed after every vmlinux link.
grep -E '^alloc_tag: ' "$log" | tail -n 2
if [ $rc -ne 0 ]; then
	grep -E 'error|Error' "$log" | head -40 >&2
	echo "kernel build failed (exit $rc); full log: $log" >&2
	exit $rc
fi
grep -E 'warning:' "$log" | grep -v KSYM_NAME_LEN | head -20
echo "kernel: $OUT/arch/x86/boot/bzImage ($(stat -c %s "$OUT/arch/x86/boot/bzImage") bytes)"
