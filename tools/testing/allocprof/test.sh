#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test: host tests, then for each BASE in $TEST_BASES (default: rust,
# then upstream, the same suite on both): the kernel build, build checks,
# and test boots (KUnit and the selftests in the main boot, one boot per
# boot-parameter value).  Then the test module's rows from both BASEs are
# compared.  Ends with "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
: "${CACHE_DIR:?}" "${REPO:?}"
# Each target is BASE or BASE-VARIANT (a build with tools/testing/allocprof/kernel-VARIANT.config).
bases=${TEST_BASES:-rust upstream rust-conly rust-tightbits}

pass=0 fail=0 skip=0
t0=$(date +%s)
failures=()

phase_time() { echo "== phase $1: $(( $(date +%s) - $2 ))s"; }

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); failures+=("$1"); echo "FAIL $1"; }

. "$H/count.sh"
. "$H/matrix.sh"

# The result line of the configuration just run.
target_line() {
	echo "config $target: $((pass - tpass)) passed, $((fail - tfail)) failed, $((skip - tskip)) skipped ($(( $(date +%s) - t_target ))s)"
}

# 1. Host-side tests (tools/testing/allocprof/host-test.sh, which make host-test runs alone).
# Its ALLOCINFO_BIN= line and its own total are for this script, not shown.
# make test-configs leaves them to make test (HOST_TESTS=0).
if [ "${HOST_TESTS:-1}" = 1 ]; then
	t=$(date +%s)
	hlog=$(mktemp)
	"$H/host-test.sh" 2>&1 | tee "$hlog" | grep -vE '^(ALLOCINFO_BIN=|host tests: )'
	out=$(cat "$hlog")
	rm -f "$hlog"
	count "$out" "host tests"
	ALLOCINFO_BIN=$(sed -n 's/^ALLOCINFO_BIN=//p' <<< "$out" | tail -n 1)
	export ALLOCINFO_BIN
	phase_time host-tests "$t"
else
	# Without the host tests the VM still gets this checkout's tool, built
	# now (not whatever an older run left in the cache).
	if ALLOCINFO_BIN=$("$REPO/tools/allocinfo/build-static.sh" 2>&1 | tail -n 1) && [ -x "$ALLOCINFO_BIN" ]; then
		export ALLOCINFO_BIN
	else
		bad "build: the allocinfo tool for the test VM ($ALLOCINFO_BIN)"
		unset ALLOCINFO_BIN
	fi
fi

# Checks on a Rust-core build: no upstream core object, entry points from Rust.
build_checks() {
	local o
	for o in lib/alloc_tag.o lib/codetag.o; do
		if [ -e "$OUT/$o" ] || ar t "$OUT/lib/built-in.a" 2>/dev/null | grep -qx "$(basename "$o")"; then
			bad "build: upstream $o is built"
		else
			ok
		fi
	done
	local syms="__alloc_tag_add __alloc_tag_sub alloc_tag_read alloc_tag_top_users_begin
		    __pgalloc_tag_add_compressed __pgalloc_tag_sub_compressed
		    __pgalloc_tag_add_no_ref __pgalloc_tag_sub_no_ref
		    __pgalloc_tag_get_compressed
		    __pgalloc_tag_split __pgalloc_tag_swap
		    codetag_load_module codetag_unload_module
		    page_alloc_tagging_ops"
	local rust_syms vmlinux_syms s
	rust_syms=$(nm --defined-only "$OUT/rust/kernel.o" 2>/dev/null | awk '{print $3}')
	vmlinux_syms=$(nm --defined-only "$OUT/vmlinux" 2>/dev/null | awk '{print $3}')
	for s in $syms; do
		if grep -qx "$s" <<< "$rust_syms" && grep -qx "$s" <<< "$vmlinux_syms"; then
			ok
		else
			bad "build: $s is not defined by the Rust core (rust/kernel.o) in vmlinux"
		fi
	done
	# The module loader as the patches leave it: no failure skips an undo.
	local unwind
	if unwind=$(python3 "$H/check_unwind.py" "$SRC/kernel/module/main.c" 2>&1); then
		ok
	else
		bad "build: load_module() unwinding: $(grep -m1 FAIL <<< "$unwind")"
	fi
	# The key every module's alloc_hooks() tests: C's, exported to any module.
	if nm --defined-only "$OUT/lib/alloc_tag_keys.o" 2>/dev/null |
			awk '{print $3}' | grep -qx mem_alloc_profiling_key &&
		grep -qP '^0x[0-9a-f]+\tmem_alloc_profiling_key\tvmlinux\tEXPORT_SYMBOL\t' \
			"$OUT/Module.symvers"; then
		ok
	else
		bad "build: mem_alloc_profiling_key is not lib/alloc_tag_keys.o's, exported with EXPORT_SYMBOL"
	fi
}

# Every module's tag section holds only tags, as the Rust core's module
# loader takes it (tools/testing/allocprof/check_module_tags.sh): the test modules and the
# in-tree modules of the build.
module_tags_checks() {
	local out
	if out=$("$H/check_module_tags.sh" "$W"/test_modules/*.ko $(find "$OUT" -name '*.ko') 2>&1); then
		ok
	else
		bad "build: $target: module tag sections that are not only tags: $(head -n 3 <<< "$out" | xargs)"
	fi
}

# The build-time check on the real vmlinux: its line is in the build log, it
# passes as built, and fails under --strict with a forced small bit count.
tagcheck_checks() {
	local line out rc
	line=$(grep -E '^alloc_tag: [0-9]+ tags, [0-9]+ free page-flag bits, capacity [0-9]+$' \
		"$W/kernel-build.log" | tail -n 1)
	if [ -n "$line" ]; then ok; else bad "build: no alloc_tag_check line in $W/kernel-build.log"; fi
	out=$(NM=llvm-nm-19 sh "$SRC/scripts/alloc_tag_check.sh" --strict "$OUT/vmlinux" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "$line" ]; then
		ok
	else
		bad "build: alloc_tag_check --strict on vmlinux: exit $rc, '$out' (build log: '$line')"
	fi
	out=$(NM=llvm-nm-19 sh "$SRC/scripts/alloc_tag_check.sh" --strict --bits 8 "$OUT/vmlinux" 2>&1)
	rc=$?
	if [ $rc -eq 1 ] && grep -qE '^alloc_tag: [0-9]+ tags, 8 free page-flag bits, capacity 253$' <<< "$out"; then
		ok
	else
		bad "build: alloc_tag_check --strict --bits 8 on vmlinux: exit $rc (want 1), '$out'"
	fi
}

# A config with too few page-flag bits and the opt-in check: the build must
# fail at the vmlinux link with the check's lines, and leave no vmlinux.
tightbits_checks() {
	local log=$W/kernel-build.log
	if grep -qE '^alloc_tag: [0-9]+ tags, [0-9] free page-flag bits, capacity [0-9]+$' "$log" &&
		grep -qE '^alloc_tag: [0-9]+ tags plus [0-9]+ module tag ids and [0-9]+ Rust site tag ids do not fit in capacity [0-9]+$' "$log"; then
		ok
	else
		bad "build: $target: no alloc_tag_check failure lines in $log"
	fi
	if [ -e "$OUT/vmlinux" ]; then
		bad "build: $target: vmlinux left behind after the failed check"
	else
		ok
	fi
	grep -E '^alloc_tag: ' "$log" | tail -n 2
}

# Checks on a compressed-only build: no page_ext in the kernel at all.
conly_checks() {
	if grep -q '^CONFIG_PAGE_EXTENSION=y' "$OUT/.config"; then
		bad "build: compressed-only build has CONFIG_PAGE_EXTENSION"
	else
		ok
	fi
	if nm "$OUT/vmlinux" 2>/dev/null | grep -qE ' (page_ext_init|page_alloc_tagging_ops)$'; then
		bad "build: compressed-only vmlinux has page_ext code"
	else
		ok
	fi
}

# Rust without the profiler: nothing of the profiler in the kernel, and the
# Rust allocation paths call the plain helpers, asking for no tag.
noprof_checks() {
	local syms
	if grep -q '^CONFIG_RUST=y' "$OUT/.config" && ! grep -q '^CONFIG_MEM_ALLOC_PROFILING=y' "$OUT/.config"; then
		ok
	else
		bad "build: $target: not a CONFIG_RUST=y, MEM_ALLOC_PROFILING=n config"
	fi
	syms=$(nm --defined-only "$OUT/vmlinux" 2>/dev/null | awk '{print $3}')
	if [ -z "$syms" ]; then
		bad "build: $target: no symbols in $OUT/vmlinux"
		return
	fi
	# Any of these is the profiler (ours or upstream's) or a tag lookup.
	local found
	found=$(grep -E '^(alloc_tag_[a-z_]+|__pgalloc_tag_[a-z_]+|codetag_[a-z_]+|mem_alloc_profiling_key|page_alloc_tagging_ops|rust_helper_alloc_tag_[a-z_]+|__alloc_tag_[a-z_]+)$' <<< "$syms" | head -n 5)
	if [ -z "$found" ]; then
		ok
	else
		bad "build: $target: profiler symbols in vmlinux: $(echo $found)"
	fi
	# The linker script always bounds the section; it must hold no tag.
	local start stop
	start=$(nm "$OUT/vmlinux" | awk '$3 == "__start_alloc_tags" {print $1}')
	stop=$(nm "$OUT/vmlinux" | awk '$3 == "__stop_alloc_tags" {print $1}')
	if [ "$start" = "$stop" ]; then
		ok
	else
		bad "build: $target: alloc_tags section not empty ($start..$stop)"
	fi
	if nm "$OUT/rust/kernel.o" 2>/dev/null | grep -qE '[0-9a-f]* [tT] .*rust_sites'; then
		bad "build: $target: rust/kernel.o has the Rust call-site table"
	else
		ok
	fi
	# Rust's allocators reach the plain helpers.
	if grep -qx rust_helper_krealloc <<< "$syms" && grep -qx rust_helper_vrealloc <<< "$syms"; then
		ok
	else
		bad "build: $target: rust_helper_krealloc/vrealloc missing from vmlinux"
	fi
	for o in lib/alloc_tag.o lib/codetag.o; do
		if [ -e "$OUT/$o" ]; then bad "build: $target: $o is built"; else ok; fi
	done
}

# Debian's config: the options that shape the hot paths are Debian's (the
# fragment restates them and configure.sh checks they survived), and what
# olddefconfig changed besides our fragment is written down beside the log.
distro_checks() {
	local deb=$W/debian.config diff=$W/config-vs-debian.txt
	xz -dc "${DISTRO_CONFIG:-/usr/src/linux-config-6.12/config.amd64_none_amd64.xz}" > "$deb"
	"$SRC/scripts/diffconfig" "$deb" "$OUT/.config" > "$diff" 2>/dev/null
	echo "distro: $(grep -c '^-' "$diff") options dropped (localmodconfig: modules), $(grep -c '^+' "$diff") added, $(grep -vcE '^[-+]' "$diff") changed: $diff"
	if grep -qE '^alloc_tag: [0-9]+ tags, [0-9]+ free page-flag bits, capacity [0-9]+$' "$W/kernel-build.log"; then
		ok
		grep -E '^alloc_tag: ' "$W/kernel-build.log" | tail -n 2
	else
		bad "build: $target: no alloc_tag_check line in $W/kernel-build.log"
	fi
}


for target in $bases; do
	base=${target%%-*} variant=
	[ "$target" != "$base" ] && variant=${target#*-}
	export BASE=$base VARIANT=$variant W=$CACHE_DIR/$target
	export SRC=$CACHE_DIR/$base/src OUT=$W/build
	mkdir -p "$W/logs"
	echo "== BASE=$base${variant:+ VARIANT=$variant}"
	tpass=$pass tfail=$fail tskip=$skip t_target=$(date +%s)
	case $target in
	# Two QEMU nodes (tools/testing/allocprof/vm.sh) for the NUMA kernels.
	rust-numa|rust-distro|rust-debug) export QEMU_NODES=2 ;;
	*) unset QEMU_NODES ;;
	esac

	# 2. Build kernel, test modules and selftests.
	if [ "$target" = rust-tightbits ]; then
		if make -s -C "$REPO" kernel BASE="$base" VARIANT="$variant" >/dev/null 2>&1; then
			bad "build: $target: built although the tags do not fit and the check is on"
		else
			ok
		fi
		tightbits_checks
		target_line
		continue
	fi
	t=$(date +%s)
	if ! make -s -C "$REPO" build BASE="$base" VARIANT="$variant"; then
		bad "build: $target: the kernel, test modules or selftests did not build"
		target_line
		continue
	fi
	echo "build $target: $(( $(date +%s) - t ))s"
	case $target in
	rust|rust-up|rust-numa|rust-rt|rust-distro) build_checks ;;
	esac
	case $target in
	rust*) module_tags_checks ;;
	esac
	case $target in
	rust|rust-conly|rust-up|rust-numa|rust-rt|rust-debug) tagcheck_checks ;;
	esac
	[ "$target" = rust-conly ] && conly_checks
	[ "$target" = rust-noprof ] && noprof_checks
	[ "$target" = rust-distro ] && distro_checks
	if ! "$H/vm.sh" initramfs; then
		bad "initramfs: $target"
		target_line
		continue
	fi

	# 3. Test boots: NAME|APPEND|TESTS|JUDGE-OPTIONS, from tools/testing/allocprof/matrix.
	all=$(paste -sd, "$W/selftests.list")
	smp=$(matrix_smp "$W/selftests.list")
	if ! brows=$(matrix_boots "$target") || [ -z "$brows" ]; then
		bad "matrix: no test boots for $target"
		target_line
		continue
	fi
	mapfile -t boots <<< "$brows"
	for b in "${boots[@]}"; do
		IFS='|' read -r name append tests opts <<< "$b"
		tests=${tests//@all/$all}
		tests=${tests//@smp/$smp}
		t=$(date +%s)
		"$H/vm.sh" boot "$name" "$append ${APPEND:-}" "$tests"
		out=$(python3 "$H/ktap.py" "$W/logs/$name.log" --name "$target/$name" --expect "$tests" $opts)
		echo "$out" | grep -E '^FAIL' | head -n 40
		count "$out" "boot $target/$name"
		echo "$(tail -n 1 <<< "$out") ($(( $(date +%s) - t ))s, log: $W/logs/$name.log)"
	done
	# make fuzz's slice for this target (tools/testing/allocprof/matrix: seeds, seconds).
	fz=$(matrix_rows fuzz | awk -F'|' -v t="$target" '$1 == t' | head -n 1)
	if [ -n "$fz" ]; then
		IFS='|' read -r _ fseeds fsecs <<< "$fz"
		out=$(FUZZ_BUILD=0 FUZZ_TARGET="$target" FUZZ_PREFIX=fuzz-slice FUZZ_SEEDS="$fseeds" FUZZ_S="$fsecs" \
			"$H/fuzz.sh" 2>&1)
		grep -vE '^fuzz: [0-9]+ passed' <<< "$out"
		count "$out" "fuzz $target"
	fi
	target_line
done

# 4. Same test-module activity, same rows, whichever core counted them.
rows() {
	tr -d '\r' < "$CACHE_DIR/$1/logs/main.log" |
		sed -n '/^ALLOCPROF: rows begin$/,/^ALLOCPROF: rows end$/p' | sed '1d;$d'
}
if [[ " $bases " == *" rust "* && " $bases " == *" upstream "* ]]; then
	a=$(rows rust) b=$(rows upstream)
	if [ -z "$a" ]; then
		bad "compare: no test-module rows in the rust main boot"
	elif [ "$a" != "$b" ]; then
		bad "compare: test-module rows differ between BASE=rust and BASE=upstream"
		diff <(echo "$b") <(echo "$a") | head -n 20
	else
		ok
		echo "compare: $(wc -l <<< "$a") test-module rows identical on rust and upstream"
	fi
fi

echo "== total: $(( $(date +%s) - t0 ))s, BASE=$bases"
if [ "$fail" -ne 0 ]; then
	echo "Failed checks:"
	printf '  %s\n' "${failures[@]}" | sort -u | head -n 60
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
