#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-install: our Debian 13 packages (make deb) installed on a
# Debian 13 machine the way a user installs them, booted from its disk
# through the firmware and GRUB, and removed again.
#
# The machine: install-image.sh's disk (cached), used through a qcow2
# overlay, so every run starts from the same installed Debian 13.  The
# packages (the kernel's and allocinfo's) and the guest's steps (guest.sh) are on
# a second disk.  QEMU boots from the first disk with SeaBIOS, its default
# firmware; the guest reboots itself twice (install, ours, back) and
# powers off at the end.  The guest's KTAP lines on the serial console are
# the result; the host adds that every step ran and that the serial log
# shows no kernel report.  Ends with "N passed, N failed" and its time.
#
# INSTALL_TIMEOUT is the hard limit on the whole run (seconds).
set -uo pipefail
H=$(cd "$(dirname "$0")/.." && pwd)
: "${CACHE_DIR:?}" "${REPO:?}" "${BASEDIR:?}"
. "$BASEDIR/base.conf"
W=$CACHE_DIR/install
timeout_s=${INSTALL_TIMEOUT:-3600}
pkgdir=${DEB_OUT:-$CACHE_DIR/deb/packages}
ours=$BASE_RELEASE-allocprof-amd64
mkdir -p "$W"
VERDICT_NAME=test-install
. "$H/verdict.sh"

# 1. What goes in: the packages make deb made, the kernel's and the tool's.
debs=$(ls "$pkgdir/linux-image-${ours}_"*.deb "$pkgdir/linux-headers-${ours}_"*.deb 2>/dev/null)
if [ "$(grep -c . <<< "$debs")" != 2 ]; then
	bad "packages: want linux-image-$ours and linux-headers-$ours in $pkgdir (make deb)"
	finish
fi
ok
# The tool's package (build-tool-deb.sh, which make deb runs; TOOL_DEB names
# another .deb).
tooldeb=${TOOL_DEB:-$(ls "$pkgdir"/allocinfo_*_amd64.deb 2>/dev/null | tail -n 1)}
if [ ! -s "$tooldeb" ]; then
	bad "packages: want allocinfo_VERSION_amd64.deb in $pkgdir (make deb) or TOOL_DEB"
	finish
fi
ok

# 2. The machine (cached).
t=$(date +%s)
if ! base=$("$H/debian/install-image.sh" "$CACHE_DIR/install-image"); then
	bad "image: the Debian 13 disk could not be made"
	finish
fi
ok
echo "image: $base ($(( $(date +%s) - t ))s)"
disk=$W/disk.qcow2 tdisk=$W/test.ext4 td=$W/testdisk log=$W/serial.log
rm -rf "$disk" "$tdisk" "$td"
qemu-img create -q -f qcow2 -F qcow2 -b "$base" "$disk"
mkdir -p "$td/debs" "$td/tool"
cp $debs "$td/debs/"
cp "$tooldeb" "$td/tool/"
cp "$H/debian/guest.sh" "$td/guest.sh"
# v4l2loopback allocates its devices in its own code: two of them.
printf 'OURS_REL=%s\nDKMS_MOD=v4l2loopback\nDKMS_ARGS="devices=2"\n' "$ours" > "$td/test.conf"
size=$(du -sm "$td" | cut -f1)
if ! mke2fs -q -F -t ext4 -L allocprof-test -d "$td" "$tdisk" "$((size + 64))M"; then
	bad "image: the test disk could not be made"
	finish
fi
rm -rf "$td"

# 3. The boots: firmware, GRUB, and whatever kernel GRUB picks.
echo "boot: $(basename -a $debs "$tooldeb" | tr '\n' ' ')on $(basename "$base"), serial log in $log"
timeout --foreground -k 5 "$timeout_s" \
	qemu-system-x86_64 -accel tcg -cpu max -m 2G -smp 2 \
	-nographic -nodefaults -serial stdio \
	-drive file="$disk",format=qcow2,if=virtio -drive file="$tdisk",format=raw,if=virtio \
	-nic user,model=virtio-net-pci -device virtio-rng-pci \
	< /dev/null > "$log" 2>&1
rc=$?
[ $rc -eq 124 ] && echo "ALLOCPROF-HOST: timeout after ${timeout_s}s" >> "$log"

# 4. The verdict.
guest_verdict guest "$log" 'ALLOCPROF-INSTALL: end'
grep -E '^(ok|not ok) [0-9]+ |^# ' <<< "$guest_txt"
for s in install ours back; do
	check "step $s ran" grep -q "^# step $s on " <<< "$guest_txt"
done
rm -f "$disk" "$tdisk"
finish
