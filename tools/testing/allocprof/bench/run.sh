#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: build every configuration, boot each under the same QEMU
# settings with the same benchmark module and reader, and write
# tools/testing/allocprof/bench/RESULTS.md.  Guest clocks run on executed instructions
# (-icount shift=0,sleep=off), so figures are guest instructions.
set -uo pipefail
: "${CACHE_DIR:?}" "${REPO:?}"
B=$REPO/tools/testing/allocprof/bench
out=$CACHE_DIR/bench
mkdir -p "$out"
ICOUNT="-icount shift=0,sleep=off"
export ACCEL=tcg QEMU_EXTRA="$ICOUNT"

# Static reader, built once, with the uapi header of the tree the patches
# make (the repo holds it only inside patches/).
make -s -C "$REPO" tree BASE=rust > "$out/tree.log" 2>&1 ||
	{ echo "bench: make tree BASE=rust failed, see $out/tree.log"; exit 1; }
mkdir -p "$out/include/linux"
cp "$CACHE_DIR/rust/src/include/uapi/linux/alloc_tag.h" "$out/include/linux/" || exit 1
gcc -O2 -static -Wall -I"$out/include" -o "$out/allocinfo_read" "$B/allocinfo_read.c" || exit 1

# LABEL|BASE|VARIANT|APPEND, from tools/testing/allocprof/matrix.
. "$REPO/tools/testing/allocprof/matrix.sh"
mapfile -t configs < <(matrix_rows bench)
[ "${#configs[@]}" -gt 0 ] || { echo "bench: no configurations in $MATRIX"; exit 1; }

# BENCH_ONLY=regex: only the configurations whose label matches (the report
# still uses the logs of the others from an earlier run).
built=""
for c in "${configs[@]}"; do
	IFS='|' read -r label base variant append <<< "$c"
	[[ -n "${BENCH_ONLY:-}" && ! "$label" =~ ${BENCH_ONLY} ]] && continue
	key=$base-$variant
	w=$CACHE_DIR/$base${variant:+-$variant}
	if [[ " $built " != *" $key "* ]]; then
		echo "== bench: building $base${variant:+ ($variant)}"
		make -s -C "$REPO" build BASE="$base" VARIANT="$variant" > "$out/build-$key.log" 2>&1 ||
			{ echo "bench: build of $key failed, see $out/build-$key.log"; exit 1; }
		# The benchmark module, built against this very kernel.
		rm -rf "$w/bench-mod" && mkdir -p "$w/bench-mod"
		cp "$B/module/alloc_tag_bench.c" "$B/module/alloc_tag_rust_bench.rs" "$B/module/Makefile" "$w/bench-mod/"
		make -s -C "$w/build" LLVM="$LLVM_SUFFIX" M="$w/bench-mod" modules > "$out/module-$key.log" 2>&1 ||
			{ echo "bench: module for $key failed"; exit 1; }
		mkdir -p "$w/bench-extra"
		cp "$w/bench-mod/alloc_tag_bench.ko" "$w/bench-mod/alloc_tag_rust_bench.ko" "$out/allocinfo_read" "$w/bench-extra/"
		built="$built $key"
	fi
	name=${label#*:}
	# The NUMA kernels on two QEMU nodes (tools/testing/allocprof/vm.sh): CPU 0's loops stay
	# node-local, the remote loops allocate on node 1.
	nodes=1
	[[ "+$variant+" == *+numa+* ]] && nodes=2
	echo "== bench: booting $name"
	# allocprof_flip_off (tools/testing/allocprof/matrix): booted on, switched off here.
	CMD='if grep -qw allocprof_flip_off /proc/cmdline; then echo 0 > /proc/sys/vm/mem_profiling && echo "flipped off: $(cat /proc/sys/vm/mem_profiling)"; fi
insmod ./alloc_tag_bench.ko && rmmod alloc_tag_bench
insmod ./alloc_tag_rust_bench.ko && rmmod alloc_tag_rust_bench
dmesg | grep "alloc_tag_bench: loop="
[ -r /proc/allocinfo ] && ./allocinfo_read && grep " func:alloc_slab_obj_exts " /proc/allocinfo
dmesg | grep "bytes of page_ext"
echo "possible_cpus=$(cat /sys/devices/system/cpu/possible)"' \
	EXTRA=$w/bench-extra BASE=$base W=$w OUT=$w/build SRC=$CACHE_DIR/$base/src \
		BOOT_TIMEOUT=900 APPEND="$append" QEMU_NODES=$nodes "$REPO/tools/testing/allocprof/vm.sh" run > "$out/$name.log" 2>&1 ||
		{ echo "bench: boot $name failed:"; tail -n 20 "$out/$name.log"; exit 1; }
	grep -c "loop=" "$out/$name.log" | sed "s/^/bench: $name: /;s/$/ timed rounds/"
	size "$w/build/vmlinux" | tail -n 1 > "$out/$name.size"
	nm "$w/build/vmlinux" | grep -E ' (__start|__stop)_alloc_tags$' > "$out/$name.tags" || true
done

# Cache misses per pair (tools/testing/allocprof/bench/cacheplug): the configurations named by
# tools/testing/allocprof/matrix's cachesim rows, booted under the plugin
# (alloc_tag_bench.cachesim=CACHESIM_RUNS, 3 runs of every loop, each
# after a grace period: tools/testing/allocprof/bench/report.py takes each loop's median run, so
# that RCU or timer work that lands in one run does not make the row);
# first the model's calibration
# (tools/testing/allocprof/bench/cacheplug/check.py fails the bench if it is off).  Under -icount
# like the loops: the guest clock then counts instructions, so the timer
# interrupts that land in a window are the same whatever the host's load
# (without it, a loaded host put up to five times the misses in a window).
# BENCH_CACHESIM=0 skips it.
CACHESIM_RUNS=${CACHESIM_RUNS:-3}
if [ "${BENCH_CACHESIM:-1}" != 0 ]; then
	"$B/cacheplug/build.sh" > "$out/cacheplug-build.log" 2>&1 ||
		{ echo "bench: cacheplug did not build, see $out/cacheplug-build.log"; exit 1; }
	q=$CACHE_DIR/qemu-plugin
	first=1
	for name in $(matrix_rows cachesim); do
		[[ -n "${BENCH_ONLY:-}" && ! "$name" =~ ${BENCH_ONLY} ]] && continue
		c=$(matrix_bench "$name") || { echo "bench: cachesim $name: no such configuration"; exit 1; }
		IFS='|' read -r base variant append <<< "$c"
		w=$CACHE_DIR/$base${variant:+-$variant}
		[ -f "$w/bench-extra/alloc_tag_bench.ko" ] ||
			{ echo "bench: cachesim $name: not built (run make bench without BENCH_ONLY)"; exit 1; }
		if [ "$first" = 1 ]; then
			echo "== bench: cachesim calibration"
			rm -f "$out/cachesim-calibration.plugin"
			EXTRA=$q/calib CMD=./calib BASE=$base W=$w OUT=$w/build SRC=$CACHE_DIR/$base/src \
				ACCEL=tcg QEMU_EXTRA="$ICOUNT -plugin $q/cacheplug.so -d plugin -D $out/cachesim-calibration.plugin" \
				BOOT_TIMEOUT=900 "$REPO/tools/testing/allocprof/vm.sh" run > "$out/cachesim-calibration.log" 2>&1 ||
				{ echo "bench: cachesim calibration boot failed"; exit 1; }
			python3 "$B/cacheplug/check.py" "$out/cachesim-calibration.log" \
				"$out/cachesim-calibration.plugin" > "$out/cachesim-calibration.txt" ||
				{ echo "bench: the cache model's calibration is off:"; cat "$out/cachesim-calibration.txt"; exit 1; }
			first=0
		fi
		echo "== bench: cachesim $name"
		rm -f "$out/cachesim-$name.plugin"
		CMD='if grep -qw allocprof_flip_off /proc/cmdline; then echo 0 > /proc/sys/vm/mem_profiling; fi
insmod ./alloc_tag_bench.ko cachesim='"$CACHESIM_RUNS"' && rmmod alloc_tag_bench
dmesg | grep "alloc_tag_bench: cachesim"' \
		EXTRA=$w/bench-extra BASE=$base W=$w OUT=$w/build SRC=$CACHE_DIR/$base/src ACCEL=tcg \
			QEMU_EXTRA="$ICOUNT -plugin $q/cacheplug.so -d plugin -D $out/cachesim-$name.plugin" \
			BOOT_TIMEOUT=1800 APPEND="$append" "$REPO/tools/testing/allocprof/vm.sh" run > "$out/cachesim-$name.log" 2>&1 ||
			{ echo "bench: cachesim boot $name failed:"; tail -n 20 "$out/cachesim-$name.log"; exit 1; }
		grep -c "cacheplug: id=0 " "$out/cachesim-$name.plugin" | sed "s/^/bench: cachesim $name: /;s/$/ windows/"
	done
fi

# The macro benchmark (BENCH_MACRO=0 skips it): whole runs of Debian's
# hackbench (rt-tests) and of stress-ng's mmap stressor, by macro_time, in
# the configurations named by tools/testing/allocprof/matrix's macro rows, under -icount.
# The programs and their shared libraries go into the VM as they are
# installed here (tools/testing/allocprof/bench/macro-root.sh); the loader runs them.  One vCPU
# (MACRO_SMP=1): with two, hackbench runs spread by 10%.
MACRO_SMP=${MACRO_SMP:-1}
# macro_ran LOG: both workloads of tools/testing/allocprof/bench/macro.cmd reported, none failed.
macro_ran() {
	! grep -q "^macro: .*failed" "$1" && [ "$(grep -c "^macro: what=.* median_ns=" "$1")" = 2 ]
}
if [ "${BENCH_MACRO:-1}" != 0 ]; then
	m=$out/macro-extra
	"$B/macro-root.sh" "$m" > "$out/macro-root.log" 2>&1 ||
		{ echo "bench: macro: no root, see $out/macro-root.log"; exit 1; }
	for name in $(matrix_rows macro); do
		[[ -n "${BENCH_ONLY:-}" && ! "$name" =~ ${BENCH_ONLY} ]] && continue
		c=$(matrix_bench "$name") || { echo "bench: macro $name: no such configuration"; exit 1; }
		IFS='|' read -r base variant append <<< "$c"
		w=$CACHE_DIR/$base${variant:+-$variant}
		[ -f "$w/build/arch/x86/boot/bzImage" ] ||
			{ echo "bench: macro $name: not built (run make bench without BENCH_ONLY)"; exit 1; }
		echo "== bench: macro $name"
		QEMU_SMP=$MACRO_SMP CMD="$(cat "$B/macro.cmd")" EXTRA=$m BASE=$base W=$w OUT=$w/build SRC=$CACHE_DIR/$base/src \
			BOOT_TIMEOUT=1800 APPEND="$append" "$REPO/tools/testing/allocprof/vm.sh" run > "$out/macro-$name.log" 2>&1 ||
			{ echo "bench: macro boot $name failed:"; tail -n 20 "$out/macro-$name.log"; exit 1; }
		grep "^macro: " "$out/macro-$name.log" | sed "s/^/bench: $name: /"
		macro_ran "$out/macro-$name.log" || { echo "bench: macro $name: a workload failed or did not run"; exit 1; }
	done
fi

# Misses over the macro runs (item 5 of issue 33 with item 6's workloads):
# the cachesim configurations booted once more with the macro root, one
# vCPU, under the plugin and -icount, MACRO_CACHESIM_RUNS timed runs of each
# workload (each a window of the model; one warm-up run before them).  Needs
# both BENCH_CACHESIM and BENCH_MACRO.
MACRO_CACHESIM_RUNS=${MACRO_CACHESIM_RUNS:-3}
if [ "${BENCH_CACHESIM:-1}" != 0 ] && [ "${BENCH_MACRO:-1}" != 0 ]; then
	for name in $(matrix_rows cachesim); do
		[[ -n "${BENCH_ONLY:-}" && ! "$name" =~ ${BENCH_ONLY} ]] && continue
		c=$(matrix_bench "$name") || { echo "bench: cachesim-macro $name: no such configuration"; exit 1; }
		IFS='|' read -r base variant append <<< "$c"
		w=$CACHE_DIR/$base${variant:+-$variant}
		echo "== bench: cachesim-macro $name"
		rm -f "$out/cachesim-macro-$name.plugin"
		QEMU_SMP=1 CMD="export MACRO_CACHESIM=1
$(sed "s|^\./macro_time [0-9]* |./macro_time $MACRO_CACHESIM_RUNS |" "$B/macro.cmd")" \
			EXTRA=$out/macro-extra BASE=$base W=$w OUT=$w/build SRC=$CACHE_DIR/$base/src ACCEL=tcg \
			QEMU_EXTRA="$ICOUNT -plugin $CACHE_DIR/qemu-plugin/cacheplug.so -d plugin -D $out/cachesim-macro-$name.plugin" \
			BOOT_TIMEOUT=3600 APPEND="$append" "$REPO/tools/testing/allocprof/vm.sh" run > "$out/cachesim-macro-$name.log" 2>&1 ||
			{ echo "bench: cachesim-macro boot $name failed:"; tail -n 20 "$out/cachesim-macro-$name.log"; exit 1; }
		macro_ran "$out/cachesim-macro-$name.log" ||
			{ echo "bench: cachesim-macro $name: a workload failed or did not run"; exit 1; }
		grep -c "cacheplug: id=1 " "$out/cachesim-macro-$name.plugin" | sed "s/^/bench: cachesim-macro $name: /;s/$/ windows/"
	done
fi

# Where the instructions go, per function, on the production config:
# tools/testing/allocprof/bench/itrace.sh single-steps ITRACE_PAIRS pairs of a loop (BENCH_ITRACE=0
# skips it); the configurations named by tools/testing/allocprof/matrix's itrace rows;
# loops kmalloc and page.
if [ "${BENCH_ITRACE:-1}" != 0 ]; then
	for name in $(matrix_rows itrace); do
		[[ -n "${ITRACE_ONLY:-}" && ! "$name" =~ ${ITRACE_ONLY} ]] && continue
		c=$(matrix_bench "$name") || { echo "bench: itrace $name: no such configuration"; exit 1; }
		IFS='|' read -r base variant append <<< "$c"
		for l in "kmalloc|__kmalloc_noprof|30" "page|get_free_pages_noprof|10"; do
			IFS='|' read -r loop entry pairs <<< "$l"
			echo "== bench: itrace $name $loop"
			ITRACE_PAIRS=$pairs CACHE_DIR=$CACHE_DIR "$B/itrace.sh" "$base" "$variant" \
				"$append" "$loop" "$entry" > "$out/itrace-$name-$loop.txt" 2>&1
		done
	done
fi

# A whole run has no run note; BENCH_NOTE='...' gives a partial one its own.
if [ -n "${BENCH_ONLY:-}" ]; then
	echo "${BENCH_NOTE:-only the configurations matching $BENCH_ONLY were booted in this run; the other rows are from earlier runs}" > "$out/RUN-NOTE"
else
	rm -f "$out/RUN-NOTE"
fi
# The last section, the allocinfo tool's (make bench-tool), is not made from these logs: kept.
tool_results=$(sed -n '/^# allocinfo tool on large inputs/,$p' "$B/RESULTS.md" 2>/dev/null)
python3 "$B/report.py" "$out" "$REPO" > "$B/RESULTS.md.tmp" || exit 1
[ -z "$tool_results" ] || printf '\n%s\n' "$tool_results" >> "$B/RESULTS.md.tmp"
mv "$B/RESULTS.md.tmp" "$B/RESULTS.md" || exit 1
echo "bench: wrote tools/testing/allocprof/bench/RESULTS.md"
sed -n '/^## Loops/,/^## Memory/p' "$B/RESULTS.md" | awk 'NR <= 30'
