#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of harness/check_unwind.py: load_module() as patches/0009 left
# it (a codetag_load_module() failure skipping module_arch_cleanup()) fails
# the check, the fixed order and 6.12's own pass, and so does the
# repository's patch once applied to a synthetic load_module().
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
check=$H/check_unwind.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect NAME RC OUTPUT-REGEX FILE
expect() {
	local name=$1 want_rc=$2 want=$3 file=$4 out rc
	out=$(python3 "$check" "$file" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want_rc" ] && grep -qE -- "$want" <<< "$out"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL unwind: $name: rc $rc (want $want_rc), output:"
		sed 's/^/  /' <<< "$out" | head -n 20
	fi
}

# load_module LABEL: a load_module() whose codetag_load_module() failure
# jumps to LABEL, with 6.12's ladder from free_arch_cleanup down.
load_module() {
	cat <<EOC
static int load_module(struct load_info *info, const char __user *uargs,
		       int flags)
{
	err = post_relocation(mod, info);
	if (err < 0)
		goto free_modinfo;

	err = codetag_load_module(mod);
	if (err < 0)
		goto $1;

	mod->args = strndup_user(uargs, ~0UL >> 1);
	if (IS_ERR(mod->args)) {
		err = PTR_ERR(mod->args);
		goto free_arch_cleanup;
	}
	return do_init_module(mod);

 ddebug_cleanup:
	kfree(mod->args);
 free_arch_cleanup:
	module_arch_cleanup(mod);
 free_modinfo:
	free_modinfo(mod);
 free_unload:
	module_unload_free(mod);
	return err;
}
EOC
}

load_module free_modinfo > "$tmp/before.c"
load_module free_arch_cleanup > "$tmp/after.c"
load_module ddebug_cleanup > "$tmp/above.c"
load_module no_such_label > "$tmp/unknown.c"
expect "a jump past module_arch_cleanup()" 1 \
	'^FAIL: post_relocation: failures after it skip module_arch_cleanup\(\): goto free_modinfo \(line 8 ' \
	"$tmp/before.c"
expect "a jump to free_arch_cleanup" 0 '^ok: post_relocation' "$tmp/after.c"
expect "a jump above free_arch_cleanup" 0 '^ok: post_relocation' "$tmp/above.c"
expect "a jump to an unknown label" 1 'goto no_such_label' "$tmp/unknown.c"
echo 'int main(void) { return 0; }' > "$tmp/none.c"
expect "no load_module()" 1 '^FAIL: no load_module' "$tmp/none.c"

# The repository's patch, applied to the synthetic function without the
# hook: its hunk must put the jump where the check wants it.
sed -e '/codetag_load_module/,+3d' "$tmp/after.c" > "$tmp/plain.c"
hunk=$(awk '/^\+.*Counters for the allocation tags, before any module code runs/,/^\+$/' \
	"$H"/../patches/0009-*.patch | sed 's/^+//')
if [ -n "$hunk" ]; then
	awk -v hunk="$hunk" '{ print } /goto free_modinfo;/ && !done { print ""; print hunk; done = 1 }' \
		"$tmp/plain.c" > "$tmp/patched.c"
	expect "patches/0009's codetag_load_module() failure" 0 '^ok: post_relocation' "$tmp/patched.c"
else
	fail=$((fail + 1))
	echo "FAIL unwind: patches/0009 has no codetag_load_module() hunk"
fi

echo "unwind check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
