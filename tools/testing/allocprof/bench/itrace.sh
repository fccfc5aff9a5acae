#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Where the instructions of a benchmark loop go: boot a bench kernel with
# QEMU's gdb stub, single-step ITRACE_PAIRS iterations of one loop and
# print the instructions per iteration of each function on the path.
#
# usage: tools/testing/allocprof/bench/itrace.sh BASE VARIANT APPEND LOOP ENTRY
#   e.g. tools/testing/allocprof/bench/itrace.sh rust "" sysctl.vm.mem_profiling=0 kmalloc __kmalloc_noprof
# Needs a warm make bench (the bench module built for that kernel).
# ITRACE_CMD replaces the command run in the VM (it must load the bench
# module first), e.g. "insmod ./alloc_tag_bench.ko only=none; ./allocinfo_read".
set -uo pipefail
: "${CACHE_DIR:=$HOME/.cache/allocprof}"
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
base=$1 variant=$2 append=$3 loop=$4 entry=$5
w=$CACHE_DIR/$base${variant:+-$variant}
[ -f "$w/bench-extra/alloc_tag_bench.ko" ] || { echo "itrace: run make bench first" >&2; exit 1; }
export CACHE_DIR REPO BASE=$base W=$w OUT=$w/build SRC=$CACHE_DIR/$base/src
mkdir -p "$w/logs"
export ACCEL=tcg QEMU_EXTRA="-icount shift=0,sleep=off -s" BOOT_TIMEOUT=600
# The VM in a session of its own, so that QEMU goes with it at the end;
# gdb gives up after ITRACE_TIMEOUT seconds (an entry that is never hit).
CMD="${ITRACE_CMD:-insmod ./alloc_tag_bench.ko pairs=100000000 rounds=1 only=$loop}" EXTRA=$w/bench-extra \
	APPEND="$append" setsid "$REPO/tools/testing/allocprof/vm.sh" run > "$w/logs/itrace.log" 2>&1 &
vm=$!
sleep 2
ITRACE_ENTRY=$entry ITRACE_DETAIL=${ITRACE_DETAIL:-} timeout "${ITRACE_TIMEOUT:-300}" \
	gdb -q -batch -x "$REPO/tools/testing/allocprof/bench/itrace.py" "$OUT/vmlinux" 2>&1 | grep '^ITRACE'
kill -- -"$vm" 2>/dev/null
wait "$vm" 2>/dev/null
exit 0
