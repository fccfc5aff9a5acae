#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Extract the Debian 6.12 source tarball once into the cache (kept pristine).
# usage: extract.sh TARBALL DESTDIR
set -euo pipefail
tar=$1 dest=$2
ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
stamp=$dest/linux-source-6.12.version
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$ver" ] && [ -f "$dest/linux-source-6.12/Makefile" ]; then
	exit 0
fi
echo "extract: linux-source-6.12 $ver"
rm -rf "$dest/linux-source-6.12"
mkdir -p "$dest"
tar -C "$dest" -xJf "$tar"
# Source trees made from an older pristine copy are stale.
rm -rf "$(dirname "$dest")"/*/src "$(dirname "$dest")"/*/overlay.manifest
echo "$ver" > "$stamp"
