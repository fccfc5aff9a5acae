#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of the harness itself.  tools/testing/allocprof/phase's build-tree lock: two
# runs of a writing phase on one CACHE_DIR and BASE take turns (no
# interleaving in their log); other BASEs and phases that write nothing do
# not wait.  The Makefile's BASE/VARIANT names: every target takes the names
# make test prints.  The matrix (tools/testing/allocprof/matrix): each target's boots, mode
# words expanded, and its one definition.  Prints "N passed, N failed".
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$H/../../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pass=0 fail=0
check() {
	if [ "$2" = "$3" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL harness: $1: got '$2', want '$3'"
	fi
}
# Each run logs its start and end around a pause; a second run starting
# while the first holds the lock must not log its start before the first's end.
job() {
	CACHE_DIR=$t BASE=$1 "$H/phase" "$2" bash -c "echo start >> '$t/$3'; sleep 1; echo end >> '$t/$3'" > "$t/out.$4"
}
two() {
	: > "$t/$3"
	job "$1" "$2" "$3" a & sleep 0.2
	job "$4" "$5" "$3" b
	wait
	tr '\n' ' ' < "$t/$3"
}
check "same BASE, kernel and config" "$(two rust kernel log1 rust config)" "start end start end "
check "the second run says it waits" "$(grep -c 'waiting for another make' "$t/out.b")" 1
check "another BASE does not wait" "$(two rust kernel log2 upstream kernel)" "start start end end "
check "host-test takes no lock" "$(two rust kernel log3 rust host-test)" "start start end end "

where() {
	# Not what an enclosing make passes down (make test BASE=rust-conly).
	env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS -u BASE -u VARIANT \
		make -s -C "$REPO" CACHE_DIR=/nonexistent "$@" where 2>&1 | sed 's/ tree=.*//'
}
check "BASE=rust-conly" "$(where BASE=rust-conly)" "BASE=rust VARIANT=conly target=rust-conly"
check "BASE=upstream-noprof+prod" "$(where BASE=upstream-noprof+prod)" \
	"BASE=upstream VARIANT=noprof+prod target=upstream-noprof+prod"
check "BASE=rust VARIANT=prod" "$(where BASE=rust VARIANT=prod)" "BASE=rust VARIANT=prod target=rust-prod"
check "default" "$(where)" "BASE=rust VARIANT= target=rust"
check "unknown BASE refused" "$(where BASE=foo | grep -c 'unknown BASE=foo')" 1
check "unknown VARIANT refused" "$(where BASE=rust-nope | grep -c 'no tools/testing/allocprof/kernel-nope.config')" 1
check "both spellings at once refused" "$(where BASE=rust-up VARIANT=numa | grep -c 'names a variant already')" 1
# The matrix: boots per target in order, '*' for targets without rows, modes
# expanded, unknown modes refused; make bench and report.py read it, and no
# script keeps a copy of its own.
. "$H/matrix.sh"
names() { matrix_boots "$1" | cut -d'|' -f1 | tr '\n' ' '; }
check "matrix: rust boots" "$(names rust)" \
	"main param-0 param-1 param-never param-malformed compressed param-compressed-bad fallback early smp nongpl "
check "matrix: a target without rows takes '*'" "$(names upstream)" \
	"main param-0 param-1 param-never param-malformed nongpl "
check "matrix: modes expanded" "$(matrix_boots rust-conly | sed -n 2p)" \
	"param-0|kunit.enable=0 sysctl.vm.mem_profiling=0|boot_param|"
check "matrix: bench row" "$(matrix_bench prod-rust-compressed-off)" \
	"rust|prod|sysctl.vm.mem_profiling=0,compressed"
printf 'mode|on|\nboot|x|main|@of|@all|\n' > "$t/matrix"
check "matrix: unknown mode refused" \
	"$(MATRIX=$t/matrix bash -c ". '$H/matrix.sh'; matrix_boots x >/dev/null 2>&1 && echo accepted || echo refused")" refused
check "matrix: itrace rows are bench rows" \
	"$(for n in $(matrix_rows itrace); do matrix_bench "$n" >/dev/null || echo "$n"; done)" ""
check "matrix: cachesim rows are bench rows" \
	"$(for n in $(matrix_rows cachesim); do matrix_bench "$n" >/dev/null || echo "$n"; done)" ""
check "matrix: report.py reads it" \
	"$(python3 -c "import sys; sys.path.insert(0, '$H/bench'); import report; print(len(report.CONFIGS))")" \
	"$(matrix_rows bench | grep -vc '^p')"
check "matrix: no copies" \
	"$(ls "$H"/*.sh "$H/bench/"*.sh "$H/bench/"*.py "$REPO/Makefile" | grep -v '/test_' |
	   xargs grep -lE 'mem_profiling=(0|1,compressed)[|"]')" ""
# TCG threading (tools/testing/allocprof/vm.sh): one thread where a boot patches kernel text
# (jump labels; capture armed by a patches selftest), QEMU's default elsewhere.
thread() {
	printf '%s\n' "$1" > "$t/.config"
	env -u TCG_THREAD W=$t OUT=$t "$H/vm.sh" thread "$2"
}
cap=CONFIG_MEM_ALLOC_PROFILING_CAPTURE=y
check "thread: capture boot" "$(thread $cap alloc_sites,capture,stress)" single
check "thread: rust_sites arms capture" "$(thread $cap rust_sites)" single
check "thread: all selftests" "$(thread $cap "")" single
check "thread: capture kernel, smp boot" "$(thread $cap alloc_sites,stress)" default
check "thread: make fuzz arms capture" "$(thread $cap fuzz)" single
check "thread: no capture built" "$(thread CONFIG_RUST=y capture,rust_sites)" default
check "thread: jump labels" "$(thread CONFIG_JUMP_LABEL=y alloc_sites)" single
check "thread: TCG_THREAD overrides" \
	"$(printf '%s\n' $cap > "$t/.config"; TCG_THREAD=multi W=$t OUT=$t "$H/vm.sh" thread capture)" multi
printf '%s\n' alloc_sites capture compaction rust_sites stress > "$t/list"
check "matrix: @smp leaves out the patches selftests" "$(matrix_smp "$t/list")" \
	"alloc_sites,compaction,stress"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
