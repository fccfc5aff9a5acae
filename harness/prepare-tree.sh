#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Lay one BASE's change onto its kernel source tree.
#
# usage: prepare-tree.sh PRISTINE SRC REPO BASE
#
# The change is the patch stack of REPO/patches (patches/series, in order).
# BASE=rust is pristine 6.12.118 with every patch applied; BASE=upstream is
# pristine 6.12.118 with only the conformance suite's directory
# (tools/testing/selftests/alloc_tag) of the patched tree, so that one suite
# runs on both.
#
# SRC starts as a hard-linked copy of the pristine tree.  The patched files
# are first made in a staging directory ($(dirname SRC)/stage: every file
# the stack touches, at its kernel path, the readable checkout of the change
# the host tests read); only files whose content differs are then written
# into SRC (as new files, so the hard links to the pristine tree break and
# the pristine tree stays intact, and with a fresh mtime so Kbuild rebuilds
# exactly what changed).  Files laid by an earlier run but no longer touched
# are restored from the pristine tree, so SRC is always "pristine + this
# stack".
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

case $base in
upstream) keep=tools/testing/selftests/alloc_tag ;;
rust) keep= ;;
*) die "unknown BASE '$base' (upstream or rust)" ;;
esac
series=$repo/patches/series
[ -f "$series" ] || die "no $series"

rm -rf "$stage"
mkdir -p "$stage"
# git apply as a better patch(1): exact context, file modes, new files.  The
# ceiling keeps it from taking a repository around CACHE_DIR for its own.
export GIT_CEILING_DIRECTORIES=$work
n=0
while read -r p; do
	[ -f "$repo/patches/$p" ] || die "patches/series names $p, which is not in patches/"
	# Bring the files the patch changes into the stage first.
	git apply --numstat "$repo/patches/$p" | cut -f3- | while read -r f; do
		[ -e "$stage/$f" ] && continue
		[ -e "$pristine/$f" ] || continue
		mkdir -p "$stage/$(dirname "$f")"
		cp -p "$pristine/$f" "$stage/$f"
	done
	(cd "$stage" && git apply --whitespace=nowarn "$repo/patches/$p") ||
		die "patch $p does not apply"
	n=$((n + 1))
done < <(awk '!/^[ \t]*(#|$)/ {print $1}' "$series")
[ $n -gt 0 ] || die "$series names no patch"
if [ -n "$keep" ]; then
	rm -rf "$work/keep"
	mkdir -p "$work/keep"
	[ -d "$stage/$keep" ] && mv "$stage/$keep" "$work/keep/dir"
	rm -rf "$stage"
	mkdir -p "$stage/$(dirname "$keep")"
	[ -d "$work/keep/dir" ] && mv "$work/keep/dir" "$stage/$keep"
	rm -rf "$work/keep"
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
echo "prepare-tree: BASE=$base: $n patches, $(wc -l < "$manifest") files, $changed updated, $restored restored"
