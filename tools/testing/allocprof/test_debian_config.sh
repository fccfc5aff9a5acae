#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of tools/testing/allocprof/debian/check-config.sh (make deb's
# check of our config against Debian's) on synthetic configs, and of the
# real fragment's syntax.  "ok" and "FAIL" lines; exits non-zero on any failure.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
chk=$H/debian/check-config.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n $*"; }
notok() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $*"; }

cat > "$t/debian" <<'C'
CONFIG_A=y
CONFIG_MODVERSIONS=y
CONFIG_ASM_MODVERSIONS=y
# CONFIG_PROF is not set
CONFIG_STR="x"
CONFIG_NUM=3
C
cat > "$t/frag" <<'C'
CONFIG_PROF=y
# CONFIG_MODVERSIONS is not set
# derived: ASM_MODVERSIONS
CONFIG_A=y
C
# run NAME WANT_RC OURS [STDERR_REGEX]: check-config on OURS.
run() {
	local name=$1 want=$2 ours=$3 re=${4:-}
	printf '%s\n' "$ours" > "$t/ours"
	"$chk" "$t/debian" "$t/ours" "$t/frag" > "$t/out" 2> "$t/err"
	local rc=$?
	if [ $rc = "$want" ] && { [ -z "$re" ] || grep -qE "$re" "$t/err"; }; then
		ok "$name"
	else
		notok "$name (exit $rc, want $want)"
		sed 's/^/  /' "$t/out" "$t/err"
	fi
}
good='CONFIG_A=y
# CONFIG_MODVERSIONS is not set
CONFIG_PROF=y
CONFIG_STR="x"
CONFIG_NUM=3
CONFIG_NEW=y'
run "only what the fragment changes, a derived symbol gone, a new symbol" 0 "$good"
if grep -qx -- '-ASM_MODVERSIONS y' "$t/out" && grep -qx -- ' MODVERSIONS y -> n' "$t/out" &&
	grep -qx -- ' PROF n -> y' "$t/out" && grep -qx -- '+NEW y' "$t/out" && [ "$(wc -l < "$t/out")" = 4 ]; then
	ok "the difference is printed in diffconfig's form, and only it"
else
	notok "the difference is printed in diffconfig's form, and only it"; sed 's/^/  /' "$t/out"
fi
run "a Debian value changed that the fragment does not list" 1 "${good/CONFIG_NUM=3/CONFIG_NUM=4}" \
	"CONFIG_NUM changed from Debian's 3 to 4"
run "a Debian symbol dropped that the fragment does not list" 1 "${good/CONFIG_STR=\"x\"/}" \
	"CONFIG_STR changed .* to absent"
run "a fragment symbol olddefconfig dropped" 1 "${good/CONFIG_PROF=y/}" \
	"CONFIG_PROF=y did not survive"
run "a symbol the fragment turns off, left on" 1 "${good/\# CONFIG_MODVERSIONS is not set/CONFIG_MODVERSIONS=y}" \
	"CONFIG_MODVERSIONS must be off"
run "a symbol the fragment turns off, absent, counts as off" 0 "${good/\# CONFIG_MODVERSIONS is not set/}"
"$chk" "$t/debian" "$t/missing" "$t/frag" > /dev/null 2>&1
[ $? = 2 ] && ok "an unreadable config is a usage error" || notok "an unreadable config is a usage error"

# The real fragment: every line a comment, a setting or a derived: list,
# and it turns on what make deb is for.
frag=$H/linux-6.12/debian.config
badl=$(grep -vnE '^(#.*|CONFIG_[A-Za-z0-9_]+=.+|# CONFIG_[A-Za-z0-9_]+ is not set)$' "$frag")
if [ -z "$badl" ] && grep -qx 'CONFIG_RUST=y' "$frag" && grep -qx 'CONFIG_MEM_ALLOC_PROFILING=y' "$frag"; then
	ok "linux-6.12/debian.config parses and turns on Rust and the profiler"
else
	notok "linux-6.12/debian.config parses and turns on Rust and the profiler"; echo "  $badl"
fi
echo "$((n - fail)) passed, $fail failed"
[ $fail = 0 ]
