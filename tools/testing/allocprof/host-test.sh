#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make host-test, and the first step of make test: the tests that need no
# kernel.  The serial-log judge (test_ktap.py), the build-time check on
# synthetic symbol tables (test_alloc_tag_check.sh), no dependency cycle
# between the Rust core's files (test_check_layers.sh), load_module()'s
# unwinding as the base's diffs leave it (test_check_unwind.sh), the
# repo-to-tree and repo-to-series machinery (test_series.sh) and the base's
# map of the repo (seriesmap.py check), the harness's lock and target names
# (test_harness.sh), the machine tests' serial-log verdict
# (test_verdict.sh), make bench's cache-model judge and report
# (test_cacheplug.py), the allocinfo tool and the parsers' host crate (their
# host-test.sh).  Prints each one's result
# line and failures, ALLOCINFO_BIN=<the static allocinfo for the test VM>,
# and last "host tests: N passed, N failed, N skipped"; exits non-zero on
# any failure.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
REPO=${REPO:-$(cd "$H/../../.." && pwd)}
export CACHE_DIR=${CACHE_DIR:-$HOME/.cache/allocprof}

pass=0 fail=0 skip=0
failures=()

# Our files are read where they are, in the repo.  The upstream files the
# diffs change exist patched only in the tested tree (BASE=rust), which the
# unwinding check reads.
export ALLOC_TAG_TREE=$REPO
if ! make -s -C "$REPO" tree BASE=rust >/dev/null; then
	echo "FAIL host: make tree BASE=rust (a diff of the base does not apply?)"
	echo "host tests: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
export PATCHED_TREE=$CACHE_DIR/rust/src

bad() { fail=$((fail + 1)); echo "FAIL $1"; }

. "$H/count.sh"

# A tool's host-test.sh: its failures and result line, the ALLOCINFO_BIN=
# line if it prints one, and a failure if it exits non-zero without counting
# one.
tool() {
	local script=$REPO/$1 name=$2 filter=$3 out rc before=$fail
	[ -x "$script" ] || return 0
	out=$("$script" 2>&1)
	rc=$?
	echo "$out" | grep -E "$filter" | tail -n 20
	echo "$out" | grep -E '^ALLOCINFO_BIN=' | tail -n 1
	count "$out" "host: $name"
	[ $rc -ne 0 ] && [ "$fail" -eq "$before" ] && bad "host: $name exit $rc"
}

# suite NAME CMD...: a harness test's FAIL lines (and their indented
# details), its result line, and its counts.
suite() {
	local name=$1 out
	shift
	out=$("$@" 2>&1)
	echo "$out" | grep -E '^(FAIL|  )' | head -n 20
	echo "$out" | tail -n 1
	count "$out" "host: $name"
}

suite "ktap parser" python3 "$H/test_ktap.py"
suite alloc_tag_check bash "$H/test_alloc_tag_check.sh"
suite layers bash "$H/test_check_layers.sh"
suite unwind bash "$H/test_check_unwind.sh"
suite "series machinery" bash "$H/test_series.sh"
suite "deb config check" bash "$H/test_debian_config.sh"
suite "machine verdict" bash "$H/test_verdict.sh"
basemap() {
	local out
	for b in "$H"/linux-*/; do
		if out=$(python3 "$H/seriesmap.py" "$b" "$REPO" check 2>&1); then
			echo "base $(basename "$b"): the series map covers the repo"
			pass=$((pass + 1))
		else
			bad "host: $(basename "$b")/series: $(head -n 3 <<< "$out" | xargs)"
		fi
	done
}
basemap
suite harness bash "$H/test_harness.sh"
suite cacheplug python3 "$H/test_cacheplug.py"

tool tools/allocinfo/host-test.sh "allocinfo tool" '^(FAIL|not ok)|passed, [0-9]+ failed'
tool tools/testing/alloc_tag_parse/host-test.sh "alloc_tag parsers" \
	'^(FAIL|not ok|inputs:)|passed, [0-9]+ failed'

echo "host tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
