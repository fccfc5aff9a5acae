#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Configure a kernel build tree from tinyconfig plus config fragments.
#
# usage: configure.sh SRC OUT FRAGMENT...
#
# With BASE_CONFIG=file (plain or .xz), the start is that file instead of
# tinyconfig (make test-configs "distro": Debian's config), and with
# LSMOD_LIST=file it is first reduced by localmodconfig to the modules that
# file lists, in lsmod's format.
#
# The result is reused while the fragments (and the source tree's Kconfig
# files they are resolved against) are unchanged, so warm builds stay
# incremental.  Every symbol a fragment sets to y or m must survive
# olddefconfig; a dropped symbol is an error naming it.
set -euo pipefail

src=$1 out=$2
shift 2
mkmake=(make -s -C "$src" O="$out" LLVM="${LLVM_SUFFIX:?set by the top Makefile}")

stamp=$out/.allocprof-config.sha
want=$( (cat "$@"; [ -n "${BASE_CONFIG:-}" ] && cat "$BASE_CONFIG"
	[ -n "${LSMOD_LIST:-}" ] && cat "$LSMOD_LIST"; find "$src" -name 'Kconfig*' -newer "$src/Makefile" -print0 |
	xargs -0r sha1sum) | sha1sum | cut -d' ' -f1)
if [ -f "$out/.config" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "configure: $out/.config is up to date"
	exit 0
fi

mkdir -p "$out"
if [ -n "${BASE_CONFIG:-}" ]; then
	case $BASE_CONFIG in
	*.xz) xz -dc "$BASE_CONFIG" > "$out/.config" ;;
	*) cp "$BASE_CONFIG" "$out/.config" ;;
	esac
	if [ -n "${LSMOD_LIST:-}" ]; then
		# localmodconfig asks for symbols new since that config on stdin:
		# an empty answer takes the default.
		"${mkmake[@]}" LSMOD="$(realpath "$LSMOD_LIST")" localmodconfig < <(yes '') > "$out/localmodconfig.log" 2>&1 || {
			echo "configure: localmodconfig with $LSMOD_LIST failed" >&2; exit 1; }
	fi
else
	"${mkmake[@]}" tinyconfig >/dev/null
fi
(cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$@" >/dev/null)
"${mkmake[@]}" olddefconfig >/dev/null

# The last fragment to set a symbol decides it; that value must survive.
missing=0
while IFS='|' read -r sym val; do
	case $val in
	n) grep -qx "# $sym is not set" "$out/.config" || ! grep -q "^$sym=" "$out/.config" || {
		echo "configure: $sym must be off but is on after olddefconfig" >&2; missing=1; } ;;
	*) grep -qx "$sym=$val" "$out/.config" || {
		echo "configure: $sym=$val did not survive olddefconfig" >&2; missing=1; } ;;
	esac
done < <(cat "$@" | sed -nE 's/^(CONFIG_[A-Za-z0-9_]+)=(.*)$/\1|\2/p; s/^# (CONFIG_[A-Za-z0-9_]+) is not set$/\1|n/p' |
	awk -F'|' '{v[$1] = $2; if (!($1 in o)) { o[$1] = ++n; k[n] = $1 } } END { for (i = 1; i <= n; i++) print k[i] "|" v[k[i]] }')
[ $missing -eq 0 ] || exit 1
echo "$want" > "$stamp"
echo "configure: wrote $out/.config"
