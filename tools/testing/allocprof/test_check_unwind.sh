#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of tools/testing/allocprof/check_unwind.py: load_module() as an earlier patch
# left it (a codetag_load_module() failure skipping module_arch_cleanup())
# fails the check, the fixed order and 6.12's own pass, and so does the
# patched kernel/module/main.c of the stack.
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

# Our own load_module(), as the base's diffs leave it (the tree host-test.sh
# laid; PATCHED_TREE).
if [ -n "${PATCHED_TREE:-}" ] && [ -f "$PATCHED_TREE/kernel/module/main.c" ]; then
	expect "the patched kernel/module/main.c" 0 '^ok: post_relocation' \
		"$PATCHED_TREE/kernel/module/main.c"
else
	fail=$((fail + 1))
	echo "FAIL unwind: no patched kernel/module/main.c (PATCHED_TREE=${PATCHED_TREE:-})"
fi

echo "unwind check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
