#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Tests of harness/series-lint.sh on copies of this checkout: it passes on the
# checkout as it is and fails on each kind of mistake it is there to catch.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$H")
pass=0 fail=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# copy: a git checkout of the repo's tracked files in $t/r (fresh each time).
copy() {
	rm -rf "$t/r"
	mkdir -p "$t/r"
	(cd "$REPO" && git ls-files -z) | (cd "$REPO" && xargs -0 cp --parents -t "$t/r")
	git -C "$t/r" init -q && git -C "$t/r" add -A
}
expect() { # NAME WANT(pass|fail) PATTERN
	local out rc
	out=$(REPO=$t/r bash "$H/series-lint.sh" 2>&1)
	rc=$?
	if { [ "$2" = pass ] && [ $rc -eq 0 ]; } ||
		{ [ "$2" = fail ] && [ $rc -ne 0 ] && grep -q -- "$3" <<< "$out"; }; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $1 (wanted $2, exit $rc)"
		echo "$out" | sed 's/^/  /'
	fi
}

copy
expect "the checkout as it is" pass ""

copy
echo '// SPDX-License-Identifier: GPL-2.0' > "$t/r/rust/kernel/alloc_tag/extra.rs"
git -C "$t/r" add rust/kernel/alloc_tag/extra.rs
expect "a new core file no step lays" fail "extra.rs: laid by 0 steps"

copy
s=$(ls "$t/r/harness/series/"*.step | tail -n 1)
grep -h '^patch \|^@patch ' "$t/r/harness/series/"*.step | head -n 1 | sed 's/^@//' >> "$s"
expect "a patch in two steps" fail "FAIL patches"

copy
s=$(ls "$t/r/harness/series/"*.step | tail -n 1)
: > "${s%.step}.delta"
expect "a delta for the last step" fail "the last step has a delta"

copy
echo "file rust/kernel/alloc_tag/missing.rs" >> "$t/r/harness/series/02-rust-percpu.step"
expect "an item that does not exist" fail "no file rust/kernel/alloc_tag/missing.rs"

copy
s=$(ls "$t/r/harness/series/"*.step | sed -n 2p)
sed -i '1s/.*/rust: a subject line far too long for a patch subject line, which checkpatch refuses/' "$s"
expect "a subject over 75 characters" fail "subject empty or over 75"

echo "series lint tests: $pass passed, $fail failed"
[ $fail -eq 0 ]
