#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-fleet: the fleet's machine, made once from the install test's
# Debian 13 disk (install-image.sh) and cached in CACHE_DIR.
#
# usage: fleet-image.sh DIR BASE.qcow2 LINUX-IMAGE.deb LINUX-HEADERS.deb (either order)
#        print the path of DIR/fleet-disk-HASH.qcow2, making it first if it
#        is not there
#
# On a copy of the base disk, in a chroot, as a user would set a server
# up: our linux-image and linux-headers installed with dpkg -i (their hooks
# run initramfs-tools and update-grub, so GRUB boots ours by default), and
# Debian's prometheus-node-exporter from Debian's archive with apt-get (its
# unit enabled by its package; its textfile collector reads
# /var/lib/prometheus/node-exporter), if the base does not have it, and
# systemd-networkd for DHCP on the network card.  The install test's DKMS module
# (v4l2loopback-dkms) is removed first: nothing here needs it.  The leak
# module of tools/testing/allocprof/fleet/leak is built against our
# linux-headers with the headers' own compiler (gcc-14) and installed in
# /lib/modules/RELEASE/updates.  A unit runs the test's guest steps from a
# 9p share tagged allocprof-fleet at every boot (the steps and the tool
# come from the share, so this disk does not change with them).
#
# HASH is taken over this file, disk.sh, the leak module's sources, the base disk's
# name and the packages' contents.  Loop devices, mount, chroot: root only.
set -euo pipefail

dir=$1 base=$2
image_deb= headers_deb=
for d in "$3" "$4"; do
	case $(dpkg-deb -f "$d" Package) in
	linux-image-*) image_deb=$d ;;
	linux-headers-*) headers_deb=$d ;;
	esac
done
[ -n "$image_deb" ] && [ -n "$headers_deb" ] ||
	{ echo "fleet-image: want a linux-image and a linux-headers package" >&2; exit 1; }
H=$(cd "$(dirname "$0")/.." && pwd)
leak=$H/fleet/leak
mkdir -p "$dir"
lib=$H/debian/disk.sh
hash=$( { sha1sum "$0" "$lib" "$leak"/*; basename "$base"; sha256sum "$image_deb" "$headers_deb" | cut -d' ' -f1; } |
	sha1sum | cut -c1-12)
img=$dir/fleet-disk-$hash.qcow2
if [ -s "$img" ]; then
	echo "$img"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "fleet-image: needs root (loop devices, mount, chroot)" >&2; exit 1; }
rel=$(dpkg-deb -f "$image_deb" Package)
rel=${rel#linux-image-}

raw=$dir/partial-fleet-$hash.raw
mnt=$dir/partial-mnt-$hash
log=$dir/fleet-image.log
rm -f "$dir"/fleet-disk-*.qcow2 "$dir"/partial-fleet-*
. "$lib"
trap 'set +e; disk_release; rm -rf "$mnt"' EXIT
: > "$log"
step() { echo "fleet-image: $*" >&2; echo "== $*" >> "$log"; }
inroot() { chroot "$mnt" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@" >> "$log" 2>&1; }

step "copying $(basename "$base") to $raw"
qemu-img convert -O raw "$base" "$raw"
disk_attach "$raw"
uuid=$(blkid -s UUID -o value "$part")
mkdir -p "$mnt"
mount "$part" "$mnt"
# For our package's hooks in the chroot (update-grub).
disk_chroot_ready
cp /etc/resolv.conf "$mnt/etc/resolv.conf"

step "apt-get purge v4l2loopback-dkms; apt-get install prometheus-node-exporter, systemd-networkd"
inroot apt-get purge -y v4l2loopback-dkms
inroot apt-get update
# A server's network: DHCP on the wired interface by systemd-networkd
# (its own package from Debian 13 on), which the install test's machine,
# with no network configured, lacks.
networkd=
chroot "$mnt" apt-cache show systemd-networkd > /dev/null 2>&1 && networkd=systemd-networkd
inroot apt-get install -y --no-install-recommends prometheus-node-exporter $networkd
printf '[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\n' > "$mnt/etc/systemd/network/20-wired.network"
inroot systemctl enable systemd-networkd.service
# The kernel's check that the 8254 timer ticks through the IO-APIC
# times out on a TCG machine whose host is busy, and panics
# ("IO-APIC + timer doesn't work!"): no_timer_check, as cloud images have.
# (After serial.cfg, which sets the line.)
printf '# Slow virtual machines (TCG): skip the timer check.\nGRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX no_timer_check"\n' \
	> "$mnt/etc/default/grub.d/zz-fleet-tcg.cfg"
step "dpkg -i $(basename "$image_deb") $(basename "$headers_deb")"
mkdir -p "$mnt/tmp/fleet-debs"
cp "$image_deb" "$headers_deb" "$mnt/tmp/fleet-debs/"
inroot sh -c 'dpkg -i /tmp/fleet-debs/*.deb'
rm -rf "$mnt/tmp/fleet-debs"
grep -q "root=UUID=$uuid" "$mnt/boot/grub/grub.cfg" ||
	{ echo "fleet-image: grub.cfg does not name root=UUID=$uuid" >&2; exit 1; }
first=$(grep -m1 -o 'linux[[:space:]]*/boot/vmlinuz-[^ ]*' "$mnt/boot/grub/grub.cfg")
[ "${first##*vmlinuz-}" = "$rel" ] ||
	{ echo "fleet-image: GRUB's first entry is '$first', not $rel" >&2; exit 1; }
grep -q "vmlinuz-$rel .*no_timer_check" "$mnt/boot/grub/grub.cfg" ||
	{ echo "fleet-image: grub.cfg's entry lacks no_timer_check" >&2; exit 1; }
[ -s "$mnt/boot/initrd.img-$rel" ] || { echo "fleet-image: no initrd for $rel" >&2; exit 1; }

step "building the leak module against linux-headers-$rel"
mkdir -p "$mnt/usr/local/src/allocprof-fleet-leak"
cp "$leak"/* "$mnt/usr/local/src/allocprof-fleet-leak/"
inroot make -C "/lib/modules/$rel/build" M=/usr/local/src/allocprof-fleet-leak modules ||
	{ tail -n 20 "$log" >&2; echo "fleet-image: the leak module did not build" >&2; exit 1; }
mkdir -p "$mnt/lib/modules/$rel/updates"
cp "$mnt/usr/local/src/allocprof-fleet-leak/allocprof_fleet_leak.ko" "$mnt/lib/modules/$rel/updates/"
inroot depmod -a "$rel"

step "the test's unit and the machine's identity"
echo allocprof-fleet > "$mnt/etc/hostname"
cat > "$mnt/etc/systemd/system/allocprof-fleet.service" <<'UNIT'
[Unit]
Description=allocprof make test-fleet guest steps (from the 9p share allocprof-fleet)
After=multi-user.target prometheus-node-exporter.service

[Service]
Type=simple
ExecStartPre=/bin/mkdir -p /run/allocprof-fleet
# The 9p transport's driver may bind the device after this starts (udev
# is slow under TCG): "no channels available" until then.
ExecStartPre=/bin/sh -c 'for i in $$(seq 300); do mount -t 9p -o trans=virtio,version=9p2000.L,cache=none allocprof-fleet /run/allocprof-fleet 2>/dev/null && exit 0; sleep 2; done; exit 1'
TimeoutStartSec=infinity
ExecStart=/bin/bash /run/allocprof-fleet/fleet-guest.sh
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/allocprof-fleet.service "$mnt/etc/systemd/system/multi-user.target.wants/allocprof-fleet.service"
# Three TCG machines on a shared host of two cores boot in minutes, not
# seconds: systemd's 90 s limits for devices (ttyS0) and for starting
# units fail units that are only slow.
mkdir -p "$mnt/etc/systemd/system.conf.d"
printf '[Manager]\nDefaultTimeoutStartSec=900s\nDefaultDeviceTimeoutSec=900s\n' \
	> "$mnt/etc/systemd/system.conf.d/fleet-tcg.conf"
# The machines have a serial console and no VT: Debian's getty-static
# (gettys on tty2-tty6 when logind is missing) failed on a slow boot.
ln -sf /dev/null "$mnt/etc/systemd/system/getty-static.service"
# A new machine-id per machine at its first boot.
: > "$mnt/etc/machine-id"
rm -f "$mnt/var/lib/dbus/machine-id"
inroot apt-get clean
: > "$mnt/etc/resolv.conf"
sync
disk_release
step "converting to qcow2"
qemu-img convert -O qcow2 "$raw" "$img.tmp"
rm -f "$raw"
mv "$img.tmp" "$img"
echo "$img"
