#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure a kernel build tree from tinyconfig plus config fragments.
#
# usage: configure.sh SRC OUT FRAGMENT...
#
# The result is reused while the fragments (and the source tree's Kconfig
# files they are resolved against) are unchanged, so warm builds stay
# incremental.  Every symbol a fragment sets to y or m must survive
# olddefconfig; a dropped symbol is an error naming it.
set -euo pipefail

src=$1 out=$2
shift 2
mkmake=(make -s -C "$src" O="$out" LLVM=-19)

stamp=$out/.allocprof-config.sha
want=$( (cat "$@"; find "$src" -name 'Kconfig*' -newer "$src/Makefile" -print0 |
	xargs -0r sha1sum) | sha1sum | cut -d' ' -f1)
if [ -f "$out/.config" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "configure: $out/.config is up to date"
	exit 0
fi

mkdir -p "$out"
"${mkmake[@]}" tinyconfig >/dev/null
(cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$@" >/dev/null)
"${mkmake[@]}" olddefconfig >/dev/null

missing=0
for f in "$@"; do
	while IFS= read -r line; do
		case $line in
		CONFIG_*=y|CONFIG_*=m|CONFIG_*=[0-9]*)
			if ! grep -qx "$line" "$out/.config"; then
				echo "configure: $line from $(basename "$f") did not survive olddefconfig" >&2
				missing=1
			fi
			;;
		esac
	done < "$f"
done
[ $missing -eq 0 ] || exit 1
echo "$want" > "$stamp"
echo "configure: wrote $out/.config"
