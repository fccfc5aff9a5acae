#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of the harness itself.  harness/phase's build-tree lock: two
# runs of a writing phase on one CACHE_DIR and BASE take turns (no
# interleaving in their log); other BASEs and phases that write nothing do
# not wait.  The Makefile's BASE/VARIANT names: every target takes the names
# make test prints.  Prints "N passed, N failed".
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
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
		make -s -C "$H/.." CACHE_DIR=/nonexistent "$@" where 2>&1 | sed 's/ tree=.*//'
}
check "BASE=rust-conly" "$(where BASE=rust-conly)" "BASE=rust VARIANT=conly target=rust-conly"
check "BASE=upstream-noprof+prod" "$(where BASE=upstream-noprof+prod)" \
	"BASE=upstream VARIANT=noprof+prod target=upstream-noprof+prod"
check "BASE=rust VARIANT=prod" "$(where BASE=rust VARIANT=prod)" "BASE=rust VARIANT=prod target=rust-prod"
check "default" "$(where)" "BASE=rust VARIANT= target=rust"
check "unknown BASE refused" "$(where BASE=foo | grep -c 'unknown BASE=foo')" 1
check "unknown VARIANT refused" "$(where BASE=rust-nope | grep -c 'no harness/kernel-nope.config')" 1
check "both spellings at once refused" "$(where BASE=rust-up VARIANT=numa | grep -c 'names a variant already')" 1
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
