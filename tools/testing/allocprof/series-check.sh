#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make series-check: does every prefix of the series build?  Checks out each
# commit of the series make series made, in order, and builds it
# incrementally in one build tree with the test config (tinyconfig plus
# $FRAGS, olddefconfig at each prefix: options a prefix does not know yet
# are dropped, not an error).  Prints one line per prefix and stops at the
# first that does not build, with its first errors (KEEP_GOING=1 goes on).
# A prefix whose build warns, from rustc or from the compiler on a file the
# series changes, does not pass either.  PREFIXES=FROM-TO (1-based,
# inclusive) checks only those.
#
# A whole check rebuilds much of the kernel at each prefix that changes a
# header: expect 3 to 5 minutes per prefix on 2 cores.  A prefix whose tree
# and config inputs passed before (listed in $S/checked-trees) is not built
# again, so a change to messages or to later steps costs only the prefixes
# it changes; SERIES_RECHECK=1 builds them all.
set -uo pipefail
: "${CACHE_DIR:?}" "${LLVM_SUFFIX:?}" "${FRAGS:?}"
S=$CACHE_DIR/series
G=$S/linux
B=$S/build
log=$S/series-check.log

git() { command git -C "$G" -c advice.detachedHead=false "$@"; }
if ! git rev-parse -q --verify refs/heads/series >/dev/null 2>&1; then
	echo "series-check: no series in $G: run make series first" >&2
	exit 1
fi
mapfile -t commits < <(git rev-list --reverse pristine..series)
n=${#commits[@]}
from=1 to=$n
if [ -n "${PREFIXES:-}" ]; then
	if [[ ! $PREFIXES =~ ^([0-9]+)-([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -lt 1 ] ||
		[ "${BASH_REMATCH[2]}" -gt "$n" ] || [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
		echo "series-check: PREFIXES=$PREFIXES: want FROM-TO within 1-$n" >&2
		exit 2
	fi
	from=${BASH_REMATCH[1]} to=${BASH_REMATCH[2]}
fi

mk=(make -s -C "$G" O="$B" LLVM="$LLVM_SUFFIX")
touched=$(git diff --name-only pristine series)
# What a build depends on besides the tree: the config fragments and the
# toolchain.
inputs=$( { cat $FRAGS; echo "$LLVM_SUFFIX"; clang$LLVM_SUFFIX --version | head -n 1; rustc --version; } |
	sha1sum | cut -c1-12)
checked=$S/checked-trees
touch "$checked"
bad=0
mkdir -p "$B"
for ((i = from; i <= to; i++)); do
	c=${commits[i - 1]}
	subject=$(git log -1 --format=%s "$c")
	key="$(git rev-parse "$c^{tree}") $inputs"
	if [ "${SERIES_RECHECK:-0}" != 1 ] && grep -qxF "$key" "$checked"; then
		echo "series-check: $i/$n built before (same tree and config): $subject"
		continue
	fi
	git checkout -q -f "$c" || { echo "series-check: cannot check out $c" >&2; exit 1; }
	t=$(date +%s)
	{
		"${mk[@]}" tinyconfig >/dev/null &&
		(cd "$B" && "$G/scripts/kconfig/merge_config.sh" -m -O "$B" "$B/.config" $FRAGS >/dev/null) &&
		"${mk[@]}" olddefconfig >/dev/null &&
		"${mk[@]}" -j"${JOBS:-$(nproc)}" bzImage modules
	} > "$log.$i" 2>&1
	rc=$?
	# Warnings: rustc's, and the C compiler's on files the series touches.
	warns=$( { grep -E '^warning:' "$log.$i" | grep -v 'warnings\? emitted'
		grep -E ': warning:' "$log.$i" | grep -F -f <(sed 's|^|/|' <<< "$touched") ; } || true)
	if [ $rc -eq 0 ] && [ -n "$warns" ]; then
		rc=1
		echo "$warns" > "$log.$i.warnings"
	fi
	if [ $rc -eq 0 ]; then
		echo "series-check: $i/$n builds ($(( $(date +%s) - t ))s): $subject"
		echo "$key" >> "$checked"
	else
		bad=$((bad + 1))
		echo "series-check: $i/$n does NOT build cleanly ($(( $(date +%s) - t ))s): $subject"
		# Errors, not every line with the word: v0-mangled Rust symbols
		# (kallsyms' "too long" notes) contain "error" too.
		{ grep -E '^error|: error|Error [0-9]+$' "$log.$i" || cat "$log.$i.warnings"; } |
			head -n 8 | sed 's/^/    /'
		echo "    full log: $log.$i"
		[ "${KEEP_GOING:-0}" = 1 ] || break
	fi
done
git checkout -q -f series
echo "series-check: $bad of the prefixes checked do not build"
[ $bad -eq 0 ]
