#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-real: the rust-real kernel (Debian's config with a realistic
# module set, tools/testing/allocprof/kernel-real.config) booted on a Debian 13 userspace
# (tools/testing/allocprof/real-image.sh) from a virtio disk, under systemd and udev, with
# the checks of tools/testing/allocprof/real/check.sh in each boot: main (profiling on,
# page_ext), compressed (1,compressed: falls back to page_ext on Debian's
# page-flag budget) and never.  Ends with "N passed, N failed" and its time;
# exits non-zero on any failure.  Documentation/allocprof/test-real.md says what it checks.
#
# REAL_BOOTS="main compressed never" picks boots, REAL_S the seconds of
# workload in each (main; the others take a third), REAL_ROUNDS the
# unload/reload rounds, REAL_BOOT_TIMEOUT the hard limit on each boot.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
: "${CACHE_DIR:?}" "${REPO:?}" "${LLVM_SUFFIX:?}"
boots=${REAL_BOOTS:-main compressed never}
secs=${REAL_S:-120}
rounds=${REAL_ROUNDS:-3}
timeout_s=${REAL_BOOT_TIMEOUT:-2400}
export BASE=rust VARIANT=real W=$CACHE_DIR/rust-real
export SRC=$CACHE_DIR/rust/src OUT=$W/build
mkdir -p "$W/logs"

VERDICT_NAME=test-real
. "$H/verdict.sh"

# 1. The kernel and its modules.
t=$(date +%s)
if ! make -s -C "$REPO" kernel BASE=rust VARIANT=real; then
	bad "build: rust-real did not build"
	finish
fi
ok
krel=$(cat "$OUT/include/config/kernel.release")
nmods=$(grep -c '=m$' "$OUT/.config")
mods=$W/modroot
rm -rf "$mods"
if ! make -s -C "$SRC" O="$OUT" LLVM="$LLVM_SUFFIX" INSTALL_MOD_PATH="$mods" \
		INSTALL_MOD_STRIP=1 modules_install > "$W/modules_install.log" 2>&1; then
	bad "build: modules_install (log: $W/modules_install.log)"
	finish
fi
nko=$(find "$mods/lib/modules/$krel" -name '*.ko*' | wc -l)
echo "kernel $krel: $nmods options =m, $nko modules installed ($(( $(date +%s) - t ))s)"
if [ "$nko" -ge 150 ]; then ok; else bad "build: only $nko modules installed (150 expected at least)"; fi

# 2. The Debian userspace (cached), and the check script.
t=$(date +%s)
if ! tar=$("$H/real-image.sh" "$CACHE_DIR/real-image"); then
	bad "image: mmdebstrap failed"
	finish
fi
ok
echo "image: $tar ($(( $(date +%s) - t ))s)"

# mkdisk IMG: a fresh root disk: the Debian tree, this kernel's modules,
# the checks and their unit.  mke2fs -d fills it without mounting anything.
mkdisk() {
	local img=$1 root=$W/rootfs
	rm -rf "$root" "$img"
	mkdir -p "$root"
	tar -xpf "$tar" -C "$root" --numeric-owner --xattrs --xattrs-include='*' || return 1
	mkdir -p "$root/usr/lib/modules"
	cp -a "$mods/lib/modules/$krel" "$root/usr/lib/modules/" || return 1
	rm -f "$root/usr/lib/modules/$krel/build" "$root/usr/lib/modules/$krel/source"
	install -m 0755 "$H/real/check.sh" "$root/usr/local/sbin/allocprof-real-check" || return 1
	install -m 0644 "$H/real/allocprof-real.service" "$root/etc/systemd/system/" || return 1
	mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
	ln -sf ../allocprof-real.service "$root/etc/systemd/system/multi-user.target.wants/allocprof-real.service"
	# An empty machine id (as mmdebstrap leaves it) makes every boot a
	# first boot (ConditionFirstBoot units, presets applied).
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$root/etc/machine-id"
	echo >> "$root/etc/machine-id"
	mke2fs -q -F -t ext4 -L root -d "$root" "$img" 8G || return 1
	rm -rf "$root"
}

# boot NAME APPEND: one boot; its serial log is $W/logs/NAME.log.  One TCG
# thread for both vCPUs: a jump-label kernel (tools/testing/allocprof/vm.sh says why).
boot() {
	local name=$1 append=$2 log=$W/logs/$1.log img=$W/disk-$1.raw fsimg=$W/fsdisk-$1.raw tmpimg=$W/tmpdisk-$1.raw
	if ! mkdisk "$img"; then
		bad "boot $name: could not make the disk"
		return 1
	fi
	# Two more empty disks (sparse, 4 GiB each): the guest makes on them
	# the ext4 the filesystem stressors run on, and the one the memory and
	# network stressors keep their files on (tools/testing/allocprof/real/check.sh).
	rm -f "$fsimg" "$tmpimg"
	truncate -s 4G "$fsimg" "$tmpimg"
	timeout --foreground -k 5 "$timeout_s" \
		qemu-system-x86_64 -accel tcg,thread=single -cpu max -m 2G -smp 2 \
		-nographic -no-reboot -nodefaults -serial stdio \
		-kernel "$OUT/arch/x86/boot/bzImage" \
		-drive file="$img",format=raw,if=virtio -drive file="$fsimg",format=raw,if=virtio \
		-drive file="$tmpimg",format=raw,if=virtio \
		-nic user,model=virtio-net-pci -device virtio-rng-pci -device virtio-balloon-pci \
		-device virtio-scsi-pci -device VGA \
		-append "root=/dev/vda rw console=ttyS0 panic=-1 log_buf_len=4M systemd.show_status=0 $append" \
		< /dev/null > "$log" 2>&1
	local rc=$?
	[ $rc -eq 124 ] && echo "ALLOCPROF-HOST: timeout after ${timeout_s}s" >> "$log"
	rm -f "$img" "$fsimg" "$tmpimg"
	return 0
}

# judge NAME: the guest's ok/not ok lines, and what the serial log shows
# (a crash or a report the guest could not see, a guest that never ended).
judge() {
	local name=$1 log=$W/logs/$1.log
	guest_verdict "$name" "$log" 'ALLOCPROF-REAL: end'
	local p f
	p=$(grep -cE '^ok [0-9]+ ' <<< "$guest_txt")
	f=$(grep -cE '^not ok [0-9]+ ' <<< "$guest_txt")
	grep -E '^# ' <<< "$guest_txt" | grep -E 'allocprof-real:|udev and systemd loaded|coverage|unload/reload:|flipped|alive at module unload \(' 
	echo "boot $name: $p passed, $f failed ($(( $(date +%s) - tb ))s, log: $log)"
}

for b in $boots; do
	tb=$(date +%s)
	case $b in
	main) append="allocprof_real=main allocprof_real_s=$secs" ;;
	compressed) append="sysctl.vm.mem_profiling=1,compressed allocprof_real=compressed allocprof_real_s=$((secs / 3))" ;;
	never) append="sysctl.vm.mem_profiling=never allocprof_real=never allocprof_real_s=$((secs / 3))" ;;
	*) bad "unknown boot $b"; continue ;;
	esac
	boot "$b" "$append allocprof_real_rounds=$rounds ${APPEND:-}" || continue
	judge "$b"
done
finish
