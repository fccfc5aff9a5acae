#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: the build environment, a Debian 13 (trixie) root made once by
# mmdebstrap from Debian's archive and cached in CACHE_DIR.
#
# usage: build-env.sh DIR    print the path of DIR/trixie-build-HASH,
#                            building it first if it is not there
#
# The kernel packages are built inside it with Debian 13's own toolchain,
# the one Debian builds its 6.12 kernel with: gcc-14 (Debian's config names
# it in CONFIG_CC_VERSION_TEXT, so olddefconfig changes no compiler-derived
# option and DKMS on a Debian 13 machine builds modules with the same gcc),
# binutils 2.44, pahole 1.30 from dwarves (BTF without the Rust units),
# and Debian 13's rustc, rust-src and bindgen for the Rust core.  Debian's
# config comes from the same archive: linux-config-6.12.
#
# HASH is taken over this file: a change of the package list makes a new
# root (older ones are removed).
set -euo pipefail

dir=$1
mkdir -p "$dir"
hash=$(sha1sum "$0" | cut -c1-12)
root=$dir/trixie-build-$hash
if [ -f "$root/.complete" ]; then
	echo "$root"
	exit 0
fi

# The kernel's build needs (Documentation/process/changes.rst and
# scripts/package/mkdebian's Build-Depends): gcc, make, bc, bison, flex,
# libelf-dev, libssl-dev and openssl (module signing key), kmod, cpio, rsync,
# perl, python3, dwarves (pahole, for BTF), xz-utils and zstd (Debian
# compresses modules with xz), dpkg-dev and debhelper (bindeb-pkg), and for
# Rust rustc, rust-src and bindgen (which brings libclang);
# build-essential, which dpkg-buildpackage checks for.
PKGS=build-essential,gcc,make,libc6-dev,bc,bison,flex,libelf-dev,libssl-dev,openssl,kmod,cpio,rsync,perl,python3
PKGS=$PKGS,dwarves,xz-utils,zstd,dpkg-dev,debhelper,rustc,rust-src,bindgen,linux-config-6.12

log=$dir/mmdebstrap-build.log
tmp=$dir/partial-build-$hash
rm -rf "$dir"/trixie-build-* "$dir"/partial-build-*
echo "build-env: mmdebstrap trixie ($PKGS), log in $log" >&2
mode=root
[ "$(id -u)" = 0 ] || mode=unshare
if ! mmdebstrap --mode="$mode" --variant=apt --include="$PKGS" \
	trixie "$tmp" "deb http://deb.debian.org/debian trixie main" \
	"deb http://deb.debian.org/debian-security trixie-security main" > "$log" 2>&1; then
	tail -n 20 "$log" >&2
	echo "build-env: mmdebstrap failed; log: $log" >&2
	exit 1
fi
touch "$tmp/.complete"
mv "$tmp" "$root"
echo "$root"
