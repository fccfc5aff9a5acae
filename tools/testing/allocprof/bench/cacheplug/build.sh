#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Builds tools/testing/allocprof/bench/cacheplug's QEMU plugin and its calibration program into
# $CACHE_DIR/qemu-plugin.  The plugin header comes from the Debian source
# package of the installed QEMU (the binary packages do not ship it): the
# .dsc names the upstream tarball and its SHA-256, which is checked; only
# include/qemu/qemu-plugin.h is kept.  The .dsc itself is fetched over
# plain HTTP from the archive and not signature-checked.
set -euo pipefail
: "${CACHE_DIR:?}"
B=$(cd "$(dirname "$0")" && pwd)
q=$CACHE_DIR/qemu-plugin
pool=http://deb.debian.org/debian/pool/main/q/qemu
mkdir -p "$q"

ver=$(dpkg-query -W -f='${Version}' qemu-system-x86)	# 1:7.2+dfsg-7+deb12u18+b3
src=${ver#*:}
src=${src%+b[0-9]*}					# 7.2+dfsg-7+deb12u18, no binNMU
if [ ! -s "$q/qemu-plugin.h" ] || [ "$(cat "$q/version" 2>/dev/null)" != "$src" ]; then
	curl -fsS -m 120 -o "$q/qemu.dsc" "$pool/qemu_$src.dsc"
	read -r sum size tarball < <(awk '/^Checksums-Sha256:/ { f = 1; next }
		f && /\.orig\.tar\./ { print $1, $2, $3; exit }' "$q/qemu.dsc")
	[ -n "${tarball:-}" ] || { echo "cacheplug: no upstream tarball in qemu_$src.dsc" >&2; exit 1; }
	curl -fsS -m 600 -o "$q/$tarball" "$pool/$tarball"
	(cd "$q" && echo "$sum  $tarball" | sha256sum -c --quiet) ||
		{ echo "cacheplug: $tarball does not match its .dsc" >&2; exit 1; }
	tar -xf "$q/$tarball" -C "$q" --no-same-owner --strip-components=3 --wildcards '*/include/qemu/qemu-plugin.h'
	rm -f "$q/$tarball"
	echo "$src" > "$q/version"
fi
gcc -O2 -Wall -fPIC -shared -I"$q" -o "$q/cacheplug.so" "$B/cacheplug.c"
mkdir -p "$q/calib"
gcc -O2 -Wall -static -o "$q/calib/calib" "$B/calib.c"
