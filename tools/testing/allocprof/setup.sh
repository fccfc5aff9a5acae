#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install what the build needs and is missing, and nothing else.
set -euo pipefail

# The base's source package, as its base.conf names it.
. "${BASEDIR:?set by the top Makefile}/base.conf"
KSRC_PKG=$BASE_PKG
KSRC_PIN=$BASE_PKG_VERSION
BINDGEN_VERSION=0.73.2
: "${LLVM_SUFFIX:?set by the top Makefile}"
export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm$LLVM_SUFFIX/lib}
PKGS="clang$LLVM_SUFFIX lld$LLVM_SUFFIX llvm$LLVM_SUFFIX libclang$LLVM_SUFFIX-dev qemu-system-x86 busybox-static
      flex bison bc libelf-dev libssl-dev cpio make gcc libc6-dev patch python3-ply python3-git"
# make test's host tests of allocinfo read its exports with the programs that consume them: go
# tool pprof (golang-go), promtool (prometheus) and node_exporter's textfile collector
# (prometheus-node-exporter). Installing the last two also enables their services (ports 9090,
# 9100); the tests use a port of their own.
PKGS="$PKGS golang-go prometheus prometheus-node-exporter"
# The tool's host tests render its man pages (groff, man) and load its
# completions in each shell (zsh, fish; bash is there).
PKGS="$PKGS groff-base man-db zsh fish"
# make test's host tests run allocinfo's live top view in a tmux session
# (tools/allocinfo/tests/live.rs).
PKGS="$PKGS tmux"
# make test-real also needs these (SETUP_REAL=1): the Debian image
# (mmdebstrap), its ext4 disk filled without mounting (mke2fs -d), Debian's
# xz-compressed modules.
[ "${SETUP_REAL:-0}" = 1 ] && PKGS="$PKGS mmdebstrap e2fsprogs xz-utils"
# make deb builds in a Debian 13 root made by mmdebstrap (SETUP_DEB=1).
[ "${SETUP_DEB:-0}" = 1 ] && PKGS="$PKGS mmdebstrap rsync xz-utils"
# The tool's package: its binary checked and trimmed (binutils' readelf and
# objcopy), then built with dpkg-buildpackage in that root.
[ "${SETUP_DEB:-0}" = 1 ] && PKGS="$PKGS binutils"
# make test-install makes a disk with a partition table and GRUB
# (SETUP_INSTALL=1).
[ "${SETUP_INSTALL:-0}" = 1 ] && PKGS="$PKGS mmdebstrap fdisk qemu-utils e2fsprogs"
# make test-fleet (SETUP_FLEET=1): the install test's disk and tools, a
# real Prometheus (its promtool checks the rules) and Debian's
# node_exporter, curl for Prometheus's HTTP API.
[ "${SETUP_FLEET:-0}" = 1 ] && PKGS="$PKGS mmdebstrap fdisk qemu-utils e2fsprogs prometheus prometheus-node-exporter curl"
# make bench's macro benchmark runs these two in the VM (SETUP_BENCH=1).
[ "${SETUP_BENCH:-0}" = 1 ] && PKGS="$PKGS rt-tests stress-ng"
# make bench-tool measures with GNU time's -v (SETUP_BENCH_TOOL=1).
[ "${SETUP_BENCH_TOOL:-0}" = 1 ] && PKGS="$PKGS time"

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=""
for p in $PKGS; do
	installed "$p" || missing="$missing $p"
done
ksrc_have=$(dpkg-query -W -f='${Version}' "$KSRC_PKG" 2>/dev/null || true)
if ! installed "$KSRC_PKG" || [ "$ksrc_have" != "$KSRC_PIN" ] || [ ! -f "$BASE_TARBALL" ]; then
	missing="$missing $KSRC_PKG"
fi

if [ -n "$missing" ]; then
	echo "setup: installing:$missing"
	apt-get update -qq
	pkgs=""
	for p in $missing; do
		if [ "$p" = "$KSRC_PKG" ]; then
			# Read the whole list first: grep -q would stop reading early and
			# the SIGPIPE would fail the pipeline under pipefail.
			versions=$(apt-cache madison "$KSRC_PKG")
			if grep -qF "$KSRC_PIN" <<< "$versions"; then
				pkgs="$pkgs $KSRC_PKG=$KSRC_PIN"
			else
				newest=$(awk 'NR==1 {print $3}' <<< "$versions")
				echo "setup: $KSRC_PKG $KSRC_PIN is gone from the archive; using the newest 6.12.y, $newest"
				pkgs="$pkgs $KSRC_PKG"
			fi
		else
			pkgs="$pkgs $p"
		fi
	done
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --allow-downgrades $pkgs >/dev/null
fi

if ! command -v rustup >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/rustup" ]; then
	export PATH=$HOME/.cargo/bin:$PATH
fi
sysroot=$(rustc --print sysroot)
if [ ! -d "$sysroot/lib/rustlib/src/rust/library" ]; then
	echo "setup: adding rust-src"
	rustup component add rust-src
fi
if [ "$(bindgen --version 2>/dev/null | awk '{print $2}')" != "$BINDGEN_VERSION" ]; then
	echo "setup: installing bindgen-cli $BINDGEN_VERSION"
	cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION"
fi
echo "setup: $KSRC_PKG $(dpkg-query -W -f='${Version}' $KSRC_PKG), $(rustc --version | cut -d' ' -f1-2), bindgen $BINDGEN_VERSION, clang $(clang$LLVM_SUFFIX --version | head -1 | grep -o '[0-9][0-9.]*' | head -1)"
