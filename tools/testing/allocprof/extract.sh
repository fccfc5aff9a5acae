#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Extract the base's source tarball once into the cache (kept pristine).
# usage: extract.sh BASE_CONF DESTDIR
set -euo pipefail
. "$1"
dest=$2
ver=$(dpkg-query -W -f='${Version}' "$BASE_PKG")
stamp=$dest/$BASE_DIR.version
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$ver" ] && [ -f "$dest/$BASE_DIR/Makefile" ]; then
	exit 0
fi
echo "extract: $BASE_PKG $ver"
rm -rf "${dest:?}/$BASE_DIR"
mkdir -p "$dest"
tar -C "$dest" -xJf "$BASE_TARBALL"
# Source trees made from an older pristine copy are stale.
rm -rf "$(dirname "$dest")"/*/src "$(dirname "$dest")"/*/overlay.manifest
echo "$ver" > "$stamp"
