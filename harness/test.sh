#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test: host tests, the kernel build, then test boots (KUnit and the
# selftests in the main boot, one boot per boot-parameter value).  Ends with
# "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
: "${W:?}" "${BASE:?}"
mkdir -p "$W/logs"

pass=0 fail=0 skip=0
t0=$(date +%s)
failures=()

phase_time() { echo "== phase $1: $(( $(date +%s) - $2 ))s"; }

# Add the counts of a "... P passed, F failed[, S skipped]" line.
count() {
	local line p f s
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' <<< "$1" | tail -n 1)
	if [ -z "$line" ]; then
		fail=$((fail + 1))
		failures+=("$2: no result line")
		return
	fi
	p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<< "$line")
	f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<< "$line")
	s=$(sed -nE 's/.*\b([0-9]+) skipped.*/\1/p' <<< "$line")
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + ${s:-0}))
	while IFS= read -r l; do failures+=("$l"); done < <(grep -E '^FAIL' <<< "$1")
}

# 1. Host-side tests.
t=$(date +%s)
out=$(python3 "$H/test_ktap.py" 2>&1)
echo "$out" | tail -n 1
count "$out" "host: ktap parser"
if [ -x "$REPO/tools/allocinfo/host-test.sh" ]; then
	out=$("$REPO/tools/allocinfo/host-test.sh" 2>&1)
	rc=$?
	echo "$out" | grep -E '^(FAIL|not ok)|passed, [0-9]+ failed' | tail -n 20
	count "$out" "host: allocinfo tool"
	[ $rc -ne 0 ] && [ "$fail" -eq 0 ] && { fail=$((fail + 1)); failures+=("host: allocinfo tool exit $rc"); }
	ALLOCINFO_BIN=$(sed -n 's/^ALLOCINFO_BIN=//p' <<< "$out" | tail -n 1)
	export ALLOCINFO_BIN
fi
phase_time host-tests "$t"

# 2. Build kernel, test modules and selftests.
if ! make -s -C "$REPO" build; then
	echo "FAIL build: the kernel, test modules or selftests did not build"
	echo "0 passed, $((fail + 1)) failed"
	exit 1
fi
"$H/vm.sh" initramfs || { echo "FAIL initramfs"; echo "$pass passed, $((fail + 1)) failed"; exit 1; }

# 3. Test boots: NAME|APPEND|TESTS|JUDGE-OPTIONS
all=$(paste -sd, "$W/selftests.list")
boots=(
	"main||$all|--kunit"
	"param-0|kunit.enable=0 sysctl.vm.mem_profiling=0|boot_param|"
	"param-1|kunit.enable=0 sysctl.vm.mem_profiling=1|boot_param|"
	"param-never|kunit.enable=0 sysctl.vm.mem_profiling=never|boot_param|"
	"param-malformed|kunit.enable=0 sysctl.vm.mem_profiling=abc|boot_param|"
)
for b in "${boots[@]}"; do
	IFS='|' read -r name append tests opts <<< "$b"
	t=$(date +%s)
	"$H/vm.sh" boot "$name" "$append $APPEND" "$tests"
	out=$(python3 "$H/ktap.py" "$W/logs/$name.log" --name "$name" --expect "$tests" $opts)
	echo "$out" | grep -E '^FAIL' | head -n 40
	count "$out" "boot $name"
	echo "$(tail -n 1 <<< "$out") ($(( $(date +%s) - t ))s, log: $W/logs/$name.log)"
done

echo "== total: $(( $(date +%s) - t0 ))s, BASE=$BASE"
if [ "$fail" -ne 0 ]; then
	echo "Failed checks:"
	printf '  %s\n' "${failures[@]}" | sort -u | head -n 60
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
