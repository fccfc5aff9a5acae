# SPDX-License-Identifier: GPL-2.0
# Shared by tools/testing/allocprof/test.sh and tools/testing/allocprof/host-test.sh (sourced): add the
# counts of a "... P passed, F failed[, S skipped]" line to pass, fail and
# skip, and its FAIL lines to failures; $2 names the suite when the line is
# missing.  The caller defines pass, fail, skip, failures and bad().
count() {
	local line p f s
	line=$(grep -E '[0-9]+ passed, [0-9]+ failed' <<< "$1" | tail -n 1)
	if [ -z "$line" ]; then
		bad "$2: no result line"
		return
	fi
	p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<< "$line")
	f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<< "$line")
	s=$(sed -nE 's/.*\b([0-9]+) skipped.*/\1/p' <<< "$line")
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + ${s:-0}))
	while IFS= read -r l; do failures+=("$l"); done < <(grep -E '^FAIL' <<< "$1")
}
