#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Lay the overlay and patches of one BASE onto its kernel source tree.
#
# usage: prepare-tree.sh PRISTINE SRC REPO BASE
#
# SRC starts as a hard-linked copy of the pristine tree.  The overlay files and
# the patched upstream files are first assembled in a staging directory; only
# files whose content differs are then written into SRC (as new files, so the
# hard links to the pristine tree break and the pristine tree stays intact, and
# with a fresh mtime so Kbuild rebuilds exactly what changed).  Files laid by
# an earlier run but no longer in the overlay are restored from the pristine
# tree, so SRC is always "pristine + this overlay + these patches".
set -euo pipefail

pristine=$1 src=$2 repo=$3 base=$4
work=$(dirname "$src")
stage=$work/stage
manifest=$work/overlay.manifest

die() { echo "prepare-tree: $*" >&2; exit 1; }
[ -f "$pristine/Makefile" ] || die "no pristine tree at $pristine"

if [ ! -f "$src/Makefile" ]; then
	rm -rf "$src"
	mkdir -p "$work"
	cp -al "$pristine" "$src"
fi

# What each BASE takes from the repo.  The kernel's own top-level Makefile and
# Kconfig are never overlaid: only these directories are.
case $base in
upstream)
	dirs="tools/testing/selftests/alloc_tag"
	series=""
	;;
rust)
	dirs="rust mm lib include scripts Documentation tools/testing/selftests/alloc_tag"
	series=$repo/patches/series
	;;
*)
	die "unknown BASE '$base' (upstream or rust)"
	;;
esac

rm -rf "$stage"
mkdir -p "$stage"
for d in $dirs; do
	[ -d "$repo/$d" ] || continue
	(cd "$repo" && git ls-files -co --exclude-standard -- "$d" 2>/dev/null ||
		find "$d" -type f) | while read -r f; do
		[ -f "$repo/$f" ] || continue
		mkdir -p "$stage/$(dirname "$f")"
		cp -p "$repo/$f" "$stage/$f"
	done
done

# The feature's Kconfig sits at the top of the repo and is sourced by the
# patched lib/Kconfig.debug.
if [ "$base" = rust ]; then
	mkdir -p "$stage/lib"
	cp -p "$repo/Kconfig" "$stage/lib/Kconfig.alloc_tag"
fi

if [ -n "$series" ] && [ -f "$series" ]; then
	pdir=$(dirname "$series")
	grep -v '^\s*#' "$series" | grep -v '^\s*$' | while read -r p; do
		# Bring the files the patch touches into the stage first.
		grep -E '^\+\+\+ b/' "$pdir/$p" | sed -e 's|^+++ b/||' -e 's|\t.*||' |
			while read -r f; do
				[ -e "$stage/$f" ] && continue
				[ -e "$pristine/$f" ] || continue
				mkdir -p "$stage/$(dirname "$f")"
				cp -p "$pristine/$f" "$stage/$f"
			done
		patch -s -p1 -d "$stage" --no-backup-if-mismatch < "$pdir/$p" ||
			die "patch $p does not apply"
	done
fi

new_manifest=$(mktemp)
(cd "$stage" && find . -type f | sed 's|^\./||' | sort) > "$new_manifest"

changed=0
while read -r f; do
	if ! cmp -s "$stage/$f" "$src/$f"; then
		mkdir -p "$src/$(dirname "$f")"
		rm -f "$src/$f"
		cp "$stage/$f" "$src/$f"
		chmod --reference="$stage/$f" "$src/$f"
		changed=$((changed + 1))
	fi
done < "$new_manifest"

restored=0
if [ -f "$manifest" ]; then
	comm -23 "$manifest" "$new_manifest" | while read -r f; do
		rm -f "$src/$f"
		if [ -e "$pristine/$f" ]; then
			cp "$pristine/$f" "$src/$f"
			touch "$src/$f"
		fi
	done
	restored=$(comm -23 "$manifest" "$new_manifest" | wc -l)
fi
mv "$new_manifest" "$manifest"
echo "prepare-tree: BASE=$base: $(wc -l < "$manifest") overlay files, $changed updated, $restored restored"
