#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-real: the Debian 13 (trixie) userspace, as a tarball made once by
# mmdebstrap from Debian's archive and cached in CACHE_DIR.
#
# usage: real-image.sh DIR    print the path of DIR/trixie-HASH.tar,
#                             building it first if it is not there
#
# HASH is taken over this file, so a change of the package list or of the
# customisation below makes a new tarball (older ones are removed).  The
# kernel's modules and the guest's check script are not in it: they change
# with every build and are added when the disk is made (real.sh), as is
# the machine id (mmdebstrap leaves /etc/machine-id empty).
set -euo pipefail

dir=$1
mkdir -p "$dir"
hash=$(sha1sum "$0" | cut -c1-12)
tar=$dir/trixie-$hash.tar
if [ -s "$tar" ]; then
	echo "$tar"
	exit 0
fi

# What the guest runs and what its checks use: systemd as init with udev;
# kmod (modprobe); the workloads (stress-ng, rt-tests' hackbench); procps
# (sysctl, free); what exercises the filesystem, block, network and
# firewall modules (xfsprogs, btrfs-progs, squashfs-tools, dmsetup,
# iproute2, nftables), and mkfs.ext4 (e2fsprogs: in trixie no longer in
# every minbase root).
PKGS=systemd,systemd-sysv,udev,kmod,passwd,stress-ng,rt-tests,procps,iproute2,nftables,xfsprogs,btrfs-progs,squashfs-tools,dmsetup,e2fsprogs

log=$dir/mmdebstrap.log
tmp=$dir/partial-$hash.tar
rm -rf "$dir"/bookworm-*.tar "$dir"/trixie-*.tar "$dir"/partial-*.tar
echo "real-image: mmdebstrap trixie ($PKGS), log in $log" >&2
# Mode unshare needs no privilege but user namespaces; as root the chroot
# mode is the plain one.
mode=root
[ "$(id -u)" = 0 ] || mode=unshare
# The root has no password (serial console, by hand); no getty on the console the checks write to, no timers that start apt or
# scrubs in the middle of a run.
if ! mmdebstrap --mode="$mode" --variant=minbase --include="$PKGS" \
	--customize-hook='echo allocprof-real > "$1/etc/hostname"' \
	--customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\n" > "$1/etc/fstab"' \
	--customize-hook='chroot "$1" passwd -d root' \
	--customize-hook='chroot "$1" systemctl mask serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer' \
	trixie "$tmp" http://deb.debian.org/debian > "$log" 2>&1; then
	tail -n 20 "$log" >&2
	echo "real-image: mmdebstrap failed; log: $log" >&2
	exit 1
fi
mv "$tmp" "$tar"
echo "$tar"
