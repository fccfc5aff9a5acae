#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make fuzz: the debug kernel (BASE=rust VARIANT=debug: KASAN, lockdep,
# kmemleak, the hang detectors) under random operations on every control
# surface at once (tools/testing/selftests/alloc_tag/fuzz/fuzz.c); with
# FUZZ_TARGET=rust-numa the NUMA test kernel instead, whose
# vm.mem_profiling takes writes (the debug kernel's is read-only, so only
# there do the driver's sysctl writes switch profiling off and on).  One
# boot per seed, $FUZZ_S seconds of fuzzing each, with a hard timeout;
# each boot judged by tools/testing/allocprof/ktap.py --fuzz (any kernel report, the
# driver's KTAP: workers done, cleanup, released rows at 0/0, kmemleak).
#
# env: FUZZ_SEEDS ("1 2 3 4 5"), FUZZ_S (600), FUZZ_X (classes the driver
# leaves out, e.g. internal), FUZZ_SLACK (seconds of boot timeout beyond
# FUZZ_S: boot, cleanup, kmemleak scan; 900), FUZZ_NODE=0 (per-node
# attribution off; on by default), FUZZ_HOTPLUG=1 (boot with
# maxcpus=1, one of the two CPUs up, and the driver takes the second on
# and off line), FUZZ_BUILD=0 (the kernel is
# built already: make test's slice), FUZZ_PREFIX (of the boots' names and
# logs, $W/logs/PREFIX-SEED.log; fuzz).  Ends with "N passed, N failed, N
# skipped"; on a failure prints the seed and the operations the log
# holds before the first report.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
: "${CACHE_DIR:?}" "${REPO:?}"
seeds=${FUZZ_SEEDS:-1 2 3 4 5}
secs=${FUZZ_S:-600}
target=${FUZZ_TARGET:-rust-debug}
case $target in
rust-debug | rust-numa) ;;
*)
	echo "fuzz: FUZZ_TARGET=$target: rust-debug or rust-numa (two QEMU nodes, per-node attribution)"
	exit 1
	;;
esac
export BASE=rust VARIANT=${target#rust-} W=$CACHE_DIR/$target
export SRC=$CACHE_DIR/rust/src OUT=$W/build
# Both kernels are NUMA kernels: two QEMU nodes (tools/testing/allocprof/vm.sh), with
# per-node attribution on (FUZZ_NODE=0: off, the GET_BATCH node flag then
# fails with EOPNOTSUPP).
unset QEMU_EXTRA QEMU_SMP
export QEMU_NODES=2
node="alloc_tag_node=${FUZZ_NODE:-1}"
cpu=
[ "${FUZZ_HOTPLUG:-0}" = 1 ] && cpu="maxcpus=1 allocprof.fuzz_cpu=1"

pass=0 fail=0 skip=0
failures=()
bad() { fail=$((fail + 1)); failures+=("$1"); echo "FAIL $1"; }
. "$H/count.sh"

if [ "${FUZZ_BUILD:-1}" = 1 ]; then
	make -s -C "$REPO" build BASE=rust VARIANT="$VARIANT" || {
		bad "fuzz: the $target kernel did not build"
		echo "$pass passed, $fail failed, $skip skipped"
		exit 1
	}
fi

# The driver, and its 32-bit twin for the compat ioctl (no C library:
# the host needs no 32-bit libc).
src=$SRC/tools/testing/selftests/alloc_tag/fuzz
# A directory per run: two make fuzz may run at once on one CACHE_DIR
# (with other seeds; each boot has an initramfs and a log of its own).
mkdir -p "$W/logs"
dir=$(mktemp -d "$W/fuzz.XXXXXX")
trap 'rm -rf "$dir"' EXIT
if ! gcc -Wall -O2 -static -o "$dir/fuzz" "$src/fuzz.c"; then
	bad "fuzz: the driver did not build"
	echo "$pass passed, $fail failed, $skip skipped"
	exit 1
fi
rm -f "$dir/fuzz32"
if grep -q '^CONFIG_IA32_EMULATION=y' "$OUT/.config" &&
	! gcc -m32 -Wall -O2 -static -nostdlib -ffreestanding -fno-pic -fno-stack-protector \
		-fno-builtin -I/usr/include/x86_64-linux-gnu -o "$dir/fuzz32" "$src/fuzz32.c"; then
	bad "fuzz: the 32-bit driver did not build"
fi
cp "$src/run.sh" "$dir/run.sh"

# The first kernel report of LOG from line FROM on, as a line number
# (empty: none).
first_report() {
	tr -d '\r' < "$1" | tail -n "+$2" | grep -anE 'KASAN|KFENCE: |BUG: |BUG at|kernel BUG|Oops|general protection fault|^(\[[ 0-9.]*\] )?WARNING:|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|bad unlock balance|soft lockup|hard LOCKUP|blocked for more than|Kernel panic|Failed to set sysctl|oom-killer' |
		grep -avE '\] fuzz: w-?[0-9]+ #' | head -n 1 | cut -d: -f1 |
		awk -v from="$2" '{ print $1 + from - 1 }'
}

# The boot asks for what the debug kernel does anyway,
# sysctl.vm.mem_profiling=1: the parameter of a read-only sysctl must be
# taken silently (ktap.py --fuzz fails on "Failed to set sysctl").
for seed in $seeds; do
	name=${FUZZ_PREFIX:-fuzz}-$seed
	log=$W/logs/$name.log
	t=$(date +%s)
	BOOT_TIMEOUT=$((secs + ${FUZZ_SLACK:-900})) "$H/vm.sh" fuzz "$name" \
		"sysctl.vm.mem_profiling=1 allocprof.fuzz_seed=$seed allocprof.fuzz_s=$secs $node ${FUZZ_X:+allocprof.fuzz_x=$FUZZ_X} $cpu ${APPEND:-}" "$dir"
	out=$(python3 "$H/ktap.py" "$log" --name "fuzz/$seed" --expect fuzz --fuzz)
	echo "$out" | grep -E '^FAIL' | head -n 40
	count "$out" "fuzz seed $seed"
	ops=$(tr -d '\r' < "$log" | sed -n "s/^fuzz: seed $seed: \([0-9]*\) operations.*/\1/p" | tail -n 1)
	if [ -z "$ops" ]; then
		# The run did not get to its count: the last sequence number of
		# each worker the log holds.
		ops=$(tr -d '\r' < "$log" | sed -n 's/.*\] fuzz: w\([0-9]*\) #\([0-9]*\) .*/\1 \2/p' |
			awk '{ last[$1] = $2 } END { for (w in last) n += last[w]; print n + 0 }')
		ops="$ops (from the log)"
	fi
	if grep -q '^FAIL' <<< "$out"; then
		# Kept: the next run of this seed writes the log again.
		cp "$log" "$W/logs/$name.fail-$(date +%Y%m%d-%H%M%S).log"
		echo "fuzz seed $seed: FAIL after $ops operations ($(( $(date +%s) - t ))s, log: $log, kept)"
		echo "  reproduce: make fuzz SEED=$seed FUZZ_S=$secs${FUZZ_X:+ FUZZ_X=$FUZZ_X}${FUZZ_HOTPLUG:+ FUZZ_HOTPLUG=$FUZZ_HOTPLUG}"
		boot=$(first_report "$log" 1)
		# The first report once the driver started.
		start=$(tr -d '\r' < "$log" | grep -an '\] fuzz: w-1 #1 ' | head -n 1 | cut -d: -f1)
		n=$(first_report "$log" "${start:-1}")
		if [ -n "$boot" ] && [ -n "$start" ] && [ "$boot" -lt "$start" ]; then
			echo "  at boot, before the driver (log line $boot):"
			tr -d '\r' < "$log" | sed -n "${boot}p" | sed 's/^/    /'
		fi
		if [ -n "$n" ]; then
			echo "  first report (log line $n):"
			tr -d '\r' < "$log" | sed -n "${n},$((n + 11))p" | sed 's/^/    /'
			echo "  the last operations before it:"
			tr -d '\r' < "$log" | head -n "$n" | grep -a '\] fuzz: w' | tail -n 64 | sed 's/^/    /'
		else
			echo "  the last operations of the log:"
			tr -d '\r' < "$log" | grep -a '\] fuzz: w' | tail -n 64 | sed 's/^/    /'
		fi
	else
		echo "fuzz seed $seed: PASS, $ops operations in ${secs}s ($(( $(date +%s) - t ))s, log: $log)"
	fi
done

if [ "$fail" -ne 0 ]; then
	echo "Failed checks:"
	printf '  %s\n' "${failures[@]}" | sort -u | head -n 60
fi
echo "fuzz: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
