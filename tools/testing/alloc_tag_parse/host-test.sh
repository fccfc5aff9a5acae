#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of the profiler's parsers (rust/kernel/alloc_tag/parse.rs): lint, then cargo test
# (exact tables, exhaustive short inputs, property tests against a model over a million inputs).
#
# Prints "N passed, N failed" last and exits non-zero on any failure. Build output lives under
# ${CACHE_DIR:-$HOME/.cache/allocprof}, not in the source tree.

set -u

here=$(cd "$(dirname "$0")" && pwd)
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/allocprof}
# One target directory per checkout: cargo keeps path dependencies fresh by
# their files' times, so two clones sharing one would link each other's stale
# builds of the same crate.
# The parsers are compiled from the repo's rust/kernel/alloc_tag/ (build.rs;
# ALLOC_TAG_TREE names another tree).
export CARGO_TARGET_DIR="$CACHE_DIR/parse-target-$(printf '%s' "$here" | cksum | cut -d' ' -f1)"
min_inputs=1000000

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }
# check DESCRIPTION COMMAND...: runs COMMAND, counts it, shows its output only on failure.
check() {
	local desc=$1 log
	shift
	log=$(mktemp)
	if "$@" >"$log" 2>&1; then
		pass "$desc"
	else
		fail "$desc"
		sed 's/^/    /' "$log" | tail -n 40
	fi
	rm -f "$log"
}

mkdir -p "$CACHE_DIR" || exit 1
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
cd "$here" || exit 1

check "cargo build" cargo build --locked --quiet --all-targets
check "cargo fmt --check" cargo fmt --check
check "cargo clippy" cargo clippy --locked --quiet --all-targets -- -D warnings

# cargo test: count the tests themselves from its "test result:" summary lines. --nocapture
# lets the properties' "fuzz inputs:" lines through.
t0=$(date +%s)
if cargo test --locked --no-fail-fast -- --nocapture >"$work/test.log" 2>&1; then test_rc=0; else test_rc=$?; fi
secs=$(($(date +%s) - t0))
read -r t_pass t_fail < <(awk '/^test result:/ {
	for (i = 1; i <= NF; i++) {
		if ($(i + 1) ~ /^passed/) p += $i
		if ($(i + 1) ~ /^failed/) f += $i
	}
} END { print p + 0, f + 0 }' "$work/test.log")
passed=$((passed + t_pass))
failed=$((failed + t_fail))
echo "cargo test: $t_pass passed, $t_fail failed (exit $test_rc, ${secs}s)"
if [ "$test_rc" -ne 0 ]; then
	# Named one by one (already counted by the summary lines above).
	grep -oE 'test [^ ]+ \.\.\. FAILED' "$work/test.log" | awk '{ print "FAIL: cargo test " $2 }'
	{ grep -E -A 3 '^thread .* panicked' "$work/test.log"; grep -E '^error' "$work/test.log"; } |
		head -n 40 | sed 's/^/    /'
	# A build failure runs no test at all; count it so the run cannot pass.
	[ "$t_fail" -eq 0 ] && fail "cargo test exited $test_rc"
fi

# The inputs each property and exhaustive check reports having run.
sum() { grep -oE "$1 inputs: [a-z0-9_]+ [0-9]+" "$work/test.log" | awk '{ n += $4 } END { print n + 0 }'; }
generated=$(sum fuzz)
exhaustive=$(sum exhaustive)
echo "inputs: $generated generated, $exhaustive exhaustive, each checked against the model"
if [ "$generated" -ge "$min_inputs" ]; then
	pass "property tests ran at least $min_inputs generated inputs ($generated)"
else
	fail "property tests ran $generated generated inputs, fewer than $min_inputs"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
