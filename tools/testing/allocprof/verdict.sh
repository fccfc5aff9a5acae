# SPDX-License-Identifier: GPL-2.0
# Sourced by the tests that boot whole machines and read what their guests
# wrote on a serial console (real.sh, debian/install.sh, debian/fleet.sh):
# the count of checks, the end line, and the verdict on one guest's log.
# The caller names itself in VERDICT_NAME (for finish's time line).
t0=$(date +%s)
pass=0 fail=0
failures=()
# ok [WHAT]: a check passed (said when WHAT is given).
ok() {
	pass=$((pass + 1))
	[ $# -eq 0 ] || echo "ok: $*"
}
bad() {
	fail=$((fail + 1))
	failures+=("$1")
	echo "FAIL $1"
}
# check WHAT COMMAND...: ok or bad as COMMAND succeeds.
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else bad "$d"; fi
}
# finish: the time, the failures and "N passed, N failed"; exits non-zero
# on any failure.
finish() {
	echo "== ${VERDICT_NAME:-test}: $(( $(date +%s) - t0 ))s"
	if [ "$fail" -ne 0 ]; then
		echo "Failed checks:"
		printf '  %s\n' "${failures[@]}"
	fi
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

# guest_verdict NAME LOG END: the guest's KTAP results on its serial log
# LOG (each ok counted, each not ok a failure), that it wrote its end line
# END and as many results as its plan (1..N) said, and that the console
# shows no kernel report (one the guest could not see, or a crash).  The
# log's text (no carriage returns, no terminal escapes) is left in
# guest_txt, for the caller's own checks and lines to print.
guest_verdict() {
	local name=$1 log=$2 end=$3 l plan got r
	guest_txt=$(tr -d '\r' < "$log" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g')
	pass=$((pass + $(grep -cE '^ok [0-9]+ ' <<< "$guest_txt")))
	while read -r l; do
		[ -n "$l" ] && bad "$name: ${l#not ok }"
	done < <(grep -E '^not ok [0-9]+ ' <<< "$guest_txt")
	if grep -q "^$end\$" <<< "$guest_txt"; then
		plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' <<< "$guest_txt" | tail -n 1)
		got=$(grep -cE '^(ok|not ok) [0-9]+ ' <<< "$guest_txt")
		check "$name: the guest planned ${plan:-no} results, the log has $got" [ "${plan:-none}" = "$got" ]
	else
		bad "$name: the steps did not finish ($(grep -m1 -E '^ALLOCPROF-HOST: timeout|Kernel panic' <<< "$guest_txt" || echo 'no end line'))"
	fi
	r=$(grep -E 'Oops|BUG:|WARNING:|KASAN|general protection fault|Kernel panic|kernel BUG' <<< "$guest_txt" | head -n 5)
	check "$name: no kernel report on the console${r:+: $(head -n 1 <<< "$r")}" [ -z "$r" ]
	[ -z "$r" ] || echo "$r"
}
