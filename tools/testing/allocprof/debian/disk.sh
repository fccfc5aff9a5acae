# SPDX-License-Identifier: GPL-2.0
# Sourced by install-image.sh and fleet-image.sh: a disk image's first
# partition on a loop device, as udev would present it, and everything
# released again.  The caller sets mnt (the mount point) and calls
# disk_release on exit; root only.
loop= part= made_node= made_link=

# disk_attach RAW: RAW on a loop device with its partitions; sets loop and
# part (its first partition).  Without udev (a container) the kernel may
# not have read the partition table, or no one made the partition's node:
# both are done here.
disk_attach() {
	local major minor
	loop=$(losetup -f --show -P "$1") || return
	part=${loop}p1
	[ -r "/sys/block/${loop#/dev/}/${part#/dev/}/dev" ] || partx -a "$loop"
	if [ ! -b "$part" ]; then
		IFS=: read -r major minor < "/sys/block/${loop#/dev/}/${part#/dev/}/dev"
		mknod "$part" b "$major" "$minor"
		made_node=$part
	fi
}

# disk_chroot_ready: /dev, /proc and /sys in the mounted root, and the
# /dev/disk/by-uuid link of the partition that udev would have made
# (update-grub writes root=UUID= only if it is there).
disk_chroot_ready() {
	local d uuid
	for d in dev proc sys; do
		mount --rbind "/$d" "$mnt/$d"
	done
	uuid=$(blkid -s UUID -o value "$part")
	if [ ! -e "/dev/disk/by-uuid/$uuid" ]; then
		mkdir -p /dev/disk/by-uuid
		ln -s "$part" "/dev/disk/by-uuid/$uuid"
		made_link=/dev/disk/by-uuid/$uuid
	fi
}

# disk_release: unmounted, the loop device freed, the nodes and links made
# here gone; safe to call twice and on a partial attach.
disk_release() {
	if [ -n "${mnt:-}" ] && mountpoint -q "$mnt"; then
		umount -R "$mnt"
	fi
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "$made_node" ] && rm -f "$made_node"
	[ -n "$made_link" ] && rm -f "$made_link"
	loop= part= made_node= made_link=
}
