#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the busybox initramfs of the test VM.
# usage: mkinitramfs.sh OUTPUT.cpio.gz [CMD [EXTRA_DIR]]
# Uses $W (work dir of this BASE), $SRC, $BASE and $REPO from the Makefile.
set -euo pipefail
out=$1 cmd=${2:-} extra=${3:-}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc/allocprof,modules,selftests}
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$REPO/tools/testing/allocprof/initramfs/init" "$root/init"
chmod +x "$root/init"
mkdir -p "$root/sbin"
cp "$REPO/tools/testing/allocprof/initramfs/modprobe" "$root/sbin/modprobe"
chmod +x "$root/sbin/modprobe"
echo "$BASE" > "$root/etc/allocprof/base"
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\n' > "$root/etc/group"
[ -n "$cmd" ] && printf '%s\n' "$cmd" > "$root/etc/allocprof/cmd"

moddir=$W/test_modules
cp "$moddir"/*.ko "$root/modules/" 2>/dev/null || true
# In-tree modules a selftest loads, where the config builds them (=m).
for ko in lib/test_hmm.ko; do
	if [ -f "${OUT:-$W/build}/$ko" ]; then
		cp "${OUT:-$W/build}/$ko" "$root/modules/"
	fi
done
sel=$W/selftests
list=""
for f in "$sel"/*; do
	[ -f "$f" ] && [ -x "$f" ] || continue
	cp "$f" "$root/selftests/"
	list="$list $(basename "$f")"
done
for f in "$SRC"/tools/testing/selftests/alloc_tag/*.sh; do
	[ -f "$f" ] || continue
	cp "$f" "$root/selftests/"
	chmod +x "$root/selftests/$(basename "$f")"
	list="$list $(basename "$f")"
done
# Order of the full run: stress, then compaction (which upstream 6.12 leaves
# with wrong rows) last.
echo "$list" | tr ' ' '\n' | grep -v '^$' | sort | grep -vxE 'stress|compaction' > "$root/selftests/list" || true
for t in stress compaction; do
	[ -x "$sel/$t" ] && echo "$t" >> "$root/selftests/list"
done
cp "$root/selftests/list" "$W/selftests.list"
bin=${ALLOCINFO_BIN:-$CACHE_DIR/allocinfo-target/x86_64-unknown-linux-gnu/release/allocinfo}
if [ -x "$bin" ]; then
	cp "$bin" "$root/bin/allocinfo"
fi

if [ -n "$extra" ]; then
	[ -d "$extra" ] || { echo "mkinitramfs: EXTRA=$extra is not a directory" >&2; exit 1; }
	mkdir -p "$root/extra"
	cp -a "$extra"/. "$root/extra/"
fi

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 > "$out"
