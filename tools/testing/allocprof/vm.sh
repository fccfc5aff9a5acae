#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the test VM.
#
# usage: vm.sh run                    boot; print the report, or the output of
#                                     $CMD (run in /extra if $EXTRA was given);
#                                     $APPEND adds kernel arguments
#        vm.sh boot NAME APPEND TESTS  one test boot; log to $W/logs/NAME.log
#        vm.sh thread TESTS            the TCG threading such a boot takes
#        vm.sh fuzz NAME APPEND DIR    one make fuzz boot: DIR (the driver and
#                                      its run.sh) at /extra, run.sh run
#        vm.sh cmdboot NAME APPEND DIR the same with KUnit on (make
#                                      test-upstream-suites)
#
# QEMU_NODES=2: two NUMA nodes of 512 MiB, one CPU each (the NUMA kernels:
# rust-numa, rust-distro, rust-debug and its make fuzz boots).
#
# Every boot has a hard timeout ($BOOT_TIMEOUT seconds).  KVM is used when
# it is really usable (ACCEL=auto), else TCG; ACCEL=kvm|tcg forces one.
set -uo pipefail

: "${W:?}" "${OUT:?}" "${BOOT_TIMEOUT:=300}" "${ACCEL:=auto}"
H=$(cd "$(dirname "$0")" && pwd)
. "$H/matrix.sh"
kernel=$OUT/arch/x86/boot/bzImage
mkdir -p "$W/logs"

accel() {
	case $ACCEL in
	kvm|tcg) echo "$ACCEL"; return;;
	esac
	# /dev/kvm can exist on nested, software-only virtualisation where a
	# guest crawls: only take KVM when the CPU has hardware support.
	if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		echo kvm
	else
		echo tcg
	fi
}

# tcg_thread TESTS: "single", or nothing for QEMU's default (one host thread
# per vCPU, single under -icount), the TCG threading for a boot that runs
# selftests TESTS (empty: all of them, or a command).
#
# QEMU 7.2's multi-threaded TCG breaks x86 text patching: a vCPU running the
# code that text_poke_bp() patches can trap on its int3 after the patch is
# complete and die with "Oops: int3" (Documentation/allocprof/real-configs.md: the pristine C
# profiler of 6.12 crashes the same way).  So a boot that patches kernel text
# while both vCPUs run takes one TCG thread: a jump-label kernel (every
# static key flip patches), and a capture kernel running a selftest that arms
# capture (static_call_update(), the "patches" rows of tools/testing/allocprof/matrix).  The
# other boots keep one host thread per vCPU, where races really overlap.
# TCG_THREAD=single|multi overrides.
tcg_thread() {
	local t
	if [ -n "${TCG_THREAD:-}" ]; then
		echo "$TCG_THREAD"
		return
	fi
	if grep -q '^CONFIG_JUMP_LABEL=y' "$OUT/.config"; then
		echo single
		return
	fi
	if grep -q '^CONFIG_MEM_ALLOC_PROFILING_CAPTURE=y' "$OUT/.config"; then
		[ -z "$1" ] && { echo single; return; }
		for t in $(matrix_rows patches); do
			if [[ ",$1," == *",$t,"* ]]; then
				echo single
				return
			fi
		done
	fi
}

# Two QEMU NUMA nodes of 512 MiB, one CPU each, each CPU a socket of its
# own (two cores of one socket on two nodes make the scheduler warn that
# they share a cache across nodes).
numa=()
smp=${QEMU_SMP:-2}
if [ "${QEMU_NODES:-1}" = 2 ]; then
	numa=(-object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M
		-numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1)
	smp=2,sockets=2,cores=1,threads=1
fi

# boot LOG INITRD APPEND TESTS
boot() {
	local log=$1 initrd=$2 append=$3 a
	a=$(accel)
	local cpu=() accel=$a
	[ "$a" = kvm ] && cpu=(-cpu host)
	if [ "$a" = tcg ]; then
		local thread
		thread=$(tcg_thread "${4:-}")
		accel="tcg${thread:+,thread=$thread}"
	fi
	timeout --foreground -k 5 "$BOOT_TIMEOUT" \
		qemu-system-x86_64 -accel "$accel" "${cpu[@]}" "${numa[@]}" ${QEMU_EXTRA:-} \
		-m 1G -smp "$smp" -nographic -no-reboot -nodefaults -serial stdio \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 log_buf_len=4M $append" \
		< /dev/null > "$log" 2>&1
	local rc=$?
	echo "ALLOCPROF-HOST: accel $accel" >> "$log"
	[ $rc -eq 124 ] && echo "ALLOCPROF-HOST: timeout after ${BOOT_TIMEOUT}s" >> "$log"
	return $rc
}

# extra_boot NAME APPEND DIR TESTS: a boot whose initramfs carries DIR at
# /extra and runs its run.sh (allocprof.mode=cmd); TESTS names the boot for
# the TCG threading choice.  The initramfs is removed after.
extra_boot() {
	local name=$1 append=$2 dir=$3 tests=$4 initrd rc
	initrd=$W/initramfs-$name.cpio.gz
	"$H/mkinitramfs.sh" "$initrd" "sh /extra/run.sh" "$dir" || exit 1
	boot "$W/logs/$name.log" "$initrd" "allocprof.mode=cmd $append" "$tests"
	rc=$?
	rm -f "$initrd"
	exit $rc
}

case ${1:-} in
run)
	append=${APPEND:-} cmd=${CMD:-} extra=${EXTRA:-}
	initrd=$W/initramfs-run.cpio.gz
	if [ -n "$cmd" ]; then mode=cmd; else mode=run; fi
	"$H/mkinitramfs.sh" "$initrd" "$cmd" "$extra" || exit 1
	log=$W/logs/run.log
	echo "vm: booting BASE=$BASE ($(accel), timeout ${BOOT_TIMEOUT}s), log in $log"
	boot "$log" "$initrd" "kunit.enable=0 allocprof.mode=$mode $append"
	rc=$?
	tr -d '\r' < "$log" | sed -n '/^ALLOCPROF: \(report\|cmd\) begin$/,/^ALLOCPROF: exit /p' |
		sed '1d;$d'
	status=$(tr -d '\r' < "$log" | sed -n 's/^ALLOCPROF: exit \([0-9]*\)$/\1/p' | tail -n 1)
	if [ -z "$status" ]; then
		echo "vm: the VM did not finish (qemu exit $rc); last lines of $log:" >&2
		tail -n 30 "$log" >&2
		exit 1
	fi
	exit "$status"
	;;
boot)
	name=$2 append=$3 tests=$4
	initrd=$W/initramfs-test.cpio.gz
	[ -f "$initrd" ] || "$H/mkinitramfs.sh" "$initrd" || exit 1
	boot "$W/logs/$name.log" "$initrd" "allocprof.mode=test ${tests:+allocprof.tests=$tests} $append" "$tests"
	;;
initramfs)
	"$H/mkinitramfs.sh" "$W/initramfs-test.cpio.gz"
	;;
fuzz)
	# make fuzz (tools/testing/allocprof/fuzz.sh): the driver arms capture, so it is a
	# "patches" test (one TCG thread on a capture kernel).
	extra_boot "$2" "kunit.enable=0 $3" "$4" fuzz
	;;
cmdboot)
	# make test-upstream-suites (tools/testing/allocprof/upstream-suites.sh): KUnit left
	# on (slub_kunit is a KUnit suite).
	extra_boot "$2" "$3" "$4" cmdboot
	;;
thread)
	# The TCG threading a boot running selftests $2 would get.
	t=$(tcg_thread "${2:-}")
	echo "${t:-default}"
	;;
*)
	echo "usage: vm.sh run | boot NAME APPEND TESTS | fuzz NAME APPEND DIR | initramfs | thread TESTS" >&2
	exit 2
	;;
esac
