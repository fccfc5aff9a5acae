#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Make the kernel tree a BASE builds: the pristine source plus the repo.
#
# usage: prepare-tree.sh PRISTINE SRC REPO BASE BASEDIR
#
# BASEDIR (tools/testing/allocprof/linux-6.12) maps the repo's files to the
# series (its series file, read by seriesmap.py).  BASE=rust is the whole
# change: each file of ours is a symlink in SRC to the repo's file at the
# same path, so an edit in the repo is what the next build compiles and a
# compiler message's path opens the repo's file; each upstream file that a
# patch changes is the pristine file with the patches' diffs applied in
# series order; deleted files are gone.  BASE=upstream is the pristine tree
# with only the conformance suite (tools/testing/selftests/alloc_tag), so
# that one suite runs on both.
#
# SRC starts as a hard-linked copy of the pristine tree.  Only what differs
# from the last run is written (a patched file as a new file, so the hard
# link to the pristine tree breaks, with a fresh mtime so that Kbuild
# rebuilds exactly what changed).  Paths laid by an earlier run but no
# longer part of the change are restored from the pristine tree, so SRC is
# always "pristine + this change".  An upstream file edited in SRC since the
# last run is refused, never overwritten (make refresh takes the edit into
# its patch's diff; DISCARD=1 drops it).
set -euo pipefail

pristine=$1 src=$2 repo=$(cd "$3" && pwd) base=$4 basedir=$(cd "$5" && pwd)
work=$(dirname "$src")
stage=$work/stage
manifest=$work/overlay.manifest
H=$(cd "$(dirname "$0")" && pwd)

die() { echo "prepare-tree: $*" >&2; exit 1; }
[ -f "$pristine/Makefile" ] || die "no pristine tree at $pristine"

case $base in
upstream) only=(--only tools/testing/selftests/alloc_tag/) ;;
rust) only=() ;;
*) die "unknown BASE '$base' (upstream or rust)" ;;
esac
steps=$(python3 "$H/seriesmap.py" "$basedir" "$repo" steps "${only[@]}") ||
	die "cannot read $basedir/series"

if [ ! -f "$src/Makefile" ]; then
	rm -rf "$src"
	mkdir -p "$work"
	cp -al "$pristine" "$src"
fi

# The upstream files the diffs change, patched in a staging directory.
rm -rf "$stage"
mkdir -p "$stage"
# The ceiling keeps git apply from taking a repository around CACHE_DIR.
export GIT_CEILING_DIRECTORIES=$work
new_manifest=$(mktemp)
trap 'rm -f "$new_manifest" "$new_manifest.adds"' EXIT
patches=0 slug=
while read -r kind arg; do
	case $kind in
	patch) slug=$arg; patches=$((patches + 1)) ;;
	add) echo "link $arg" ;;
	delete) echo "delete $arg" ;;
	diff)
		(cd "$stage" && git apply --numstat "$arg") | cut -f3- | while read -r f; do
			[ -e "$stage/$f" ] && continue
			[ -e "$pristine/$f" ] || continue
			mkdir -p "$stage/$(dirname "$f")"
			cp -p "$pristine/$f" "$stage/$f"
		done
		(cd "$stage" && git apply --whitespace=nowarn "$arg") ||
			die "$slug.diff does not apply"
		;;
	esac
done <<< "$steps" > "$new_manifest.adds"
[ $patches -gt 0 ] || die "$basedir/series names no patch"
{
	cat "$new_manifest.adds"
	(cd "$stage" && find . -type f | sed 's|^\./||' | sort | xargs -r sha1sum |
		awk '{print "file", $2, $1}')
} | sort -k2 > "$new_manifest"
rm -f "$new_manifest.adds"

# An upstream file edited in the tree since the last run is the developer's
# work: never overwrite it.  make refresh writes it into its patch's diff.
if [ -f "$manifest" ] && [ "${DISCARD:-0}" != 1 ]; then
	edited=$(awk '$1 == "file" && NF == 3 {print $3 "  " $2}' "$manifest" |
		(cd "$src" && sha1sum --check --quiet 2>/dev/null || true) | sed -n 's/: FAILED.*$//p' |
		# Already what the diffs give (make refresh took it): nothing to lose.
		while read -r f; do cmp -s "$src/$f" "$stage/$f" || echo "$f"; done)
	if [ -n "$edited" ]; then
		echo "prepare-tree: edited in $src since it was laid:" >&2
		sed 's/^/    /' <<< "$edited" >&2
		die "make refresh writes the edits into their patches' diffs (DISCARD=1 make tree drops them)"
	fi
fi

changed=0
while read -r kind f _; do
	case $kind in
	link)
		want=$repo/$f
		if [ "$(readlink "$src/$f" 2>/dev/null)" != "$want" ]; then
			# A file that differs from what was there must look newer
			# to make than what was built from it.
			cmp -s "$want" "$src/$f" || touch "$want"
			mkdir -p "$src/$(dirname "$f")"
			rm -rf "$src/$f"
			ln -s "$want" "$src/$f"
			changed=$((changed + 1))
		fi
		;;
	file)
		if [ -L "$src/$f" ] || [ "$src/$f" -ef "$pristine/$f" ] || ! cmp -s "$stage/$f" "$src/$f"; then
			mkdir -p "$src/$(dirname "$f")"
			rm -f "$src/$f"
			cp "$stage/$f" "$src/$f"
			chmod --reference="$stage/$f" "$src/$f"
			changed=$((changed + 1))
		fi
		;;
	delete)
		if [ -e "$src/$f" ] || [ -L "$src/$f" ]; then
			rm -f "$src/$f"
			changed=$((changed + 1))
		fi
		;;
	esac
done < "$new_manifest"

restored=0
if [ -f "$manifest" ]; then
	while read -r f; do
		rm -f "$src/$f"
		if [ -e "$pristine/$f" ]; then
			cp "$pristine/$f" "$src/$f"
			touch "$src/$f"
		fi
		restored=$((restored + 1))
	done < <(comm -23 <(awk '{print (NF == 1 ? $1 : $2)}' "$manifest" | sort) <(awk '{print $2}' "$new_manifest" | sort))
fi
cp "$new_manifest" "$manifest"
echo "prepare-tree: BASE=$base: $patches patches, $(grep -c '^link' "$manifest" || true) files of ours," \
	"$(grep -c '^file' "$manifest" || true) patched, $(grep -c '^delete' "$manifest" || true) deleted;" \
	"$changed updated, $restored restored"
