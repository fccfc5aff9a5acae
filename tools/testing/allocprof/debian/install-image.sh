#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-install: a Debian 13 (trixie) machine on a disk, as a user has
# one: made once by mmdebstrap from Debian's archive, cached in CACHE_DIR.
#
# usage: install-image.sh DIR    print the path of DIR/trixie-disk-HASH.qcow2,
#                                building it first if it is not there
#
# The disk has an MBR partition table with one ext4 partition, mounted by
# UUID (/etc/fstab, and root=UUID= on the kernel command line that
# update-grub writes), GRUB for BIOS in its boot sector (grub-pc), and
# Debian's own kernel (linux-image-amd64) with the initrd initramfs-tools
# made for it.  DKMS and a real DKMS package from Debian (v4l2loopback-dkms)
# are installed; with no kernel headers installed yet, DKMS builds nothing
# until ours arrive.  Debian's prometheus-node-exporter runs (for allocinfo's
# timer), with man-db, bash-completion and curl.  A unit runs the test from a second disk labelled
# allocprof-test at every boot (the test's scripts are on that disk, so
# the cached image does not change with them).
#
# HASH is taken over this file and disk.sh.  Loop devices and mount: root only.
set -euo pipefail

dir=$1
lib=$(dirname "$0")/disk.sh
mkdir -p "$dir"
hash=$(cat "$0" "$lib" | sha1sum | cut -c1-12)
img=$dir/trixie-disk-$hash.qcow2
if [ -s "$img" ]; then
	echo "$img"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "install-image: needs root (loop devices, mount, chroot)" >&2; exit 1; }

# systemd as init with udev; Debian's kernel and its initrd tools; GRUB for
# BIOS; DKMS with a module from Debian, built for Debian's kernel against
# linux-headers-amd64 (which brings gcc-14) as on any machine that uses
# DKMS, and openssl, with which DKMS makes its module signing key.
PKGS=systemd,systemd-sysv,udev,kmod,passwd,procps,e2fsprogs,xz-utils,zstd,linux-image-amd64,initramfs-tools
PKGS=$PKGS,grub-pc,linux-headers-amd64,dkms,v4l2loopback-dkms,openssl,ca-certificates
# For allocinfo's package: Debian's node_exporter, whose textfile collector
# serves the timer's export, man to read its pages, bash-completion to load
# its completion, curl to scrape node_exporter.
PKGS=$PKGS,prometheus-node-exporter,man-db,bash-completion,curl

raw=$dir/partial-disk-$hash.raw
mnt=$dir/partial-mnt-$hash
log=$dir/mmdebstrap-disk.log
rm -f "$dir"/trixie-disk-*.qcow2 "$dir"/partial-disk-*
. "$lib"
trap 'set +e; disk_release; rm -rf "$mnt"' EXIT

truncate -s 8G "$raw"
printf 'label: dos\n,,L,*\n' | sfdisk -q "$raw"
disk_attach "$raw"
mkfs.ext4 -q -L debian-root "$part"
uuid=$(blkid -s UUID -o value "$part")
mkdir -p "$mnt"
mount "$part" "$mnt"

echo "install-image: mmdebstrap trixie ($PKGS) onto $part, log in $log" >&2
# The variant Debian's installer gives (apt, and what "important"
# priority adds would be more), without recommends, as a server has it.
if ! mmdebstrap --mode=root --variant=apt --include="$PKGS" \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='echo allocprof-install > "$1/etc/hostname"' \
	--customize-hook="printf 'UUID=$uuid / ext4 rw,errors=remount-ro 0 1\n' > \"\$1/etc/fstab\"" \
	--customize-hook='chroot "$1" passwd -d root' \
	--customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer getty@tty1.service' \
	trixie "$mnt" "deb http://deb.debian.org/debian trixie main" \
	"deb http://deb.debian.org/debian-security trixie-security main" > "$log" 2>&1; then
	tail -n 20 "$log" >&2
	echo "install-image: mmdebstrap failed; log: $log" >&2
	exit 1
fi

# GRUB: on the serial console, a short menu, the kernel's messages on ttyS0.
cat > "$mnt/etc/default/grub.d/serial.cfg" <<'GRUB'
# The test machine has a serial console only.
GRUB_TIMEOUT=1
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
GRUB_CMDLINE_LINUX="console=ttyS0,115200"
GRUB_DISABLE_OS_PROBER=true
GRUB
# The test's entry point: the scripts come from the second disk.
cat > "$mnt/etc/systemd/system/allocprof-test.service" <<'UNIT'
[Unit]
Description=allocprof make test-install step (from the disk labelled allocprof-test)
After=multi-user.target
ConditionPathExists=/dev/disk/by-label/allocprof-test

[Service]
Type=simple
ExecStartPre=/bin/mkdir -p /run/allocprof-test
ExecStartPre=/bin/mount -o ro /dev/disk/by-label/allocprof-test /run/allocprof-test
ExecStart=/bin/bash /run/allocprof-test/guest.sh
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
ln -s /etc/systemd/system/allocprof-test.service "$mnt/etc/systemd/system/multi-user.target.wants/allocprof-test.service"
: > "$mnt/etc/machine-id"

disk_chroot_ready
chroot "$mnt" grub-install --target=i386-pc "$loop" >> "$log" 2>&1 ||
	{ tail -n 5 "$log" >&2; echo "install-image: grub-install failed" >&2; exit 1; }
chroot "$mnt" update-grub >> "$log" 2>&1 ||
	{ tail -n 5 "$log" >&2; echo "install-image: update-grub failed" >&2; exit 1; }
grep -q "root=UUID=$uuid" "$mnt/boot/grub/grub.cfg" ||
	{ echo "install-image: grub.cfg does not name root=UUID=$uuid" >&2; exit 1; }
disk_release
qemu-img convert -O qcow2 "$raw" "$img.tmp"
rm -f "$raw"
mv "$img.tmp" "$img"
echo "$img"
