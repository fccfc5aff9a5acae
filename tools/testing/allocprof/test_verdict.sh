#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of tools/testing/allocprof/verdict.sh, the count and the
# serial-log verdict shared by real.sh, debian/install.sh and
# debian/fleet.sh, on synthetic console logs.  "ok" and "FAIL" lines;
# exits non-zero on any failure.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=0 nfail=0
tok() { n=$((n + 1)); echo "ok $n $*"; }
tnotok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "FAIL $*"; }

# verdict NAME LOG-TEXT: guest_verdict in a fresh shell on LOG-TEXT; prints
# "PASS FAIL" and then the failures, one a line.
verdict() {
	printf '%b' "$2" > "$t/$1.log"
	bash -c '. "$1/verdict.sh"; guest_verdict g "$2" "G: end" > /dev/null
		echo "$pass $fail"; printf "%s\n" "${failures[@]}"' _ "$H" "$t/$1.log"
}
# expect NAME LOG-TEXT WANT: the verdict on LOG-TEXT is exactly WANT.
expect() {
	local got
	got=$(verdict "$1" "$2")
	if [ "$got" = "$3" ]; then
		tok "$1"
	else
		tnotok "$1"
		printf '  want: %s\n  got:  %s\n' "${3//$'\n'/ | }" "${got//$'\n'/ | }"
	fi
}

expect "a clean log: its results, the plan and no report" \
	'boot\r\n\x1b[0m1..2\nok 1 a\n# note\nok 2 b\nG: end\n' \
	'4 0'
expect "a not ok line is a failure named by the guest" \
	'1..2\nok 1 a\nnot ok 2 b went wrong\nG: end\n' \
	$'3 1\ng: 2 b went wrong'
expect "a result missing from the plan" \
	'1..3\nok 1 a\nok 2 b\nG: end\n' \
	$'3 1\ng: the guest planned 3 results, the log has 2'
expect "no end line, and the host's timeout named" \
	'1..1\nok 1 a\nALLOCPROF-HOST: timeout after 60s\n' \
	$'2 1\ng: the steps did not finish (ALLOCPROF-HOST: timeout after 60s)'
expect "a kernel report on the console" \
	'1..1\nok 1 a\n[   3.1] BUG: KASAN: use-after-free in f\nG: end\n' \
	$'2 1\ng: no kernel report on the console: [   3.1] BUG: KASAN: use-after-free in f'
expect "an empty log" '' \
	$'1 1\ng: the steps did not finish (no end line)'
# finish: the end line, and its status.
out=$(bash -c '. "$1/verdict.sh"; VERDICT_NAME=t; ok; ok "x"; bad "y"; finish' _ "$H")
rc=$?
if [ $rc = 1 ] && grep -qx 'ok: x' <<< "$out" && grep -qx '2 passed, 1 failed' <<< "$out" &&
	grep -qx '  y' <<< "$out"; then
	tok "finish prints the failures and the counts, and fails"
else
	tnotok "finish prints the failures and the counts, and fails (rc $rc)"
	echo "$out" | sed 's/^/  /'
fi
echo "$((n - nfail)) passed, $nfail failed"
[ $nfail = 0 ]
