#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: the Debian package of the allocinfo tool, beside the kernel's.
#
# usage: build-tool-deb.sh OUTDIR    writes OUTDIR/allocinfo_VERSION_amd64.deb
#
# The binary is built here, on the build machine, with cargo from crates.io
# (the crates are not in Debian): release, statically linked
# (+crt-static), so the package depends on no library.  With it the
# packaging helper allocinfo-gen (cargo feature "gen").  The package itself is
# made from tools/allocinfo/debian by dpkg-buildpackage with debhelper, inside
# the Debian 13 root of the kernel's build (build-env.sh): its debian/rules
# runs allocinfo-gen for the man pages and the bash, zsh and fish completions,
# and dh_installsystemd writes the maintainer scripts that enable and start
# allocinfo-textfile.timer, and stop, disable and purge it.
#
# VERSION is Cargo.toml's version + "+allocprofN", N the number of commits of
# the repo (as the kernel's 6.12.118-1+allocprofN).  The package is rebuilt
# only when the tool, its packaging, this script or the build root changed
# (a stamp in OUTDIR); otherwise the package already in OUTDIR stays, with
# its older N.
set -euo pipefail
OUTDIR=${1:?usage: build-tool-deb.sh OUTDIR}
H=$(cd "$(dirname "$0")/.." && pwd)
REPO=${REPO:-$(cd "$H/../../.." && pwd)}
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/allocprof}
T=$(cd "$REPO/tools/allocinfo" && pwd)
W=$CACHE_DIR/tool-deb
target=x86_64-unknown-linux-gnu
# host-test.sh's target directory (one per checkout), so its static build is reused.
export CARGO_TARGET_DIR="$CACHE_DIR/allocinfo-target-$(printf '%s' "$T" | cksum | cut -d' ' -f1)"
mkdir -p "$OUTDIR" "$W"
OUTDIR=$(cd "$OUTDIR" && pwd)

root=$("$H/debian/build-env.sh" "$CACHE_DIR/deb")
stamp=$OUTDIR/.allocinfo-inputs
inputs=$( (echo "$root"; rustc --version; cat "$0";
	cd "$T" && find . \( -path ./target -o -path ./debian/generated \) -prune -o -type f -print0 |
		LC_ALL=C sort -z | xargs -0 sha1sum) | sha1sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ] && ls "$OUTDIR"/allocinfo_*_amd64.deb > /dev/null 2>&1; then
	echo "tool-deb: $(basename "$OUTDIR"/allocinfo_*_amd64.deb) in $OUTDIR is up to date (same tool and packaging)"
	exit 0
fi
rm -f "$stamp"

cargo_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$T/Cargo.toml" | sed -n 1p)
n=$(git -C "$REPO" rev-list --count HEAD 2>/dev/null || echo 0)
version=${TOOL_DEB_VERSION:-$cargo_version+allocprof$n}
echo "tool-deb: allocinfo $version: static release build ($target)"
(cd "$T" && RUSTFLAGS='-C target-feature=+crt-static' \
	cargo build --release --locked --quiet --target "$target" --bin allocinfo &&
	RUSTFLAGS='-C target-feature=+crt-static' \
	cargo build --locked --quiet --target "$target" --features gen --bin allocinfo-gen)
bin=$CARGO_TARGET_DIR/$target/release/allocinfo
gen=$CARGO_TARGET_DIR/$target/debug/allocinfo-gen
if readelf -lW "$bin" | grep -q 'program interpreter' || readelf -dW "$bin" | grep -q NEEDED; then
	echo "tool-deb: $bin is not statically linked" >&2
	exit 1
fi

# The source package: tools/allocinfo's debian/ and README, the two binaries.
src=$W/allocinfo-$version
rm -rf "$W"/allocinfo-* "$W"/allocinfo_*
mkdir -p "$src/prebuilt"
cp -r "$T/debian" "$T/README" "$src/"
rm -rf "$src/debian/generated"
cp "$bin" "$gen" "$src/prebuilt/"
# The toolchain's version strings: nothing reads them (lintian's
# binary-has-unneeded-section).
objcopy --remove-section=.comment "$src/prebuilt/allocinfo"
# Who made it and when: the commit's author and date (reproducible; the
# man pages' date is the changelog's, through SOURCE_DATE_EPOCH).
maint=${DEB_MAINTAINER:-$(git -C "$REPO" log -1 --format='%an <%ae>' 2>/dev/null || echo 'allocprof <allocprof@localhost>')}
date=$(git -C "$REPO" log -1 --format=%cD 2>/dev/null || date -R)
commit=$(git -C "$REPO" log -1 --format='%h (%s)' 2>/dev/null || echo unknown)
first=$(git -C "$REPO" log --reverse --format=%cd --date=format:%Y -- tools/allocinfo 2>/dev/null | sed -n 1p)
last=$(git -C "$REPO" log -1 --format=%cd --date=format:%Y 2>/dev/null || date +%Y)
years=${first:-$last}
[ "$years" = "$last" ] || years=$years-$last
# Static glibc is part of the binary: Built-Using names the build machine's.
built_using=$(dpkg-query -W -f='${source:Package} (= ${source:Version})' libc6-dev)
sed -i -e "s|@MAINTAINER@|$maint|" -e "s|@BUILT_USING@|$built_using|" "$src/debian/control"
sed -i -e "s|@YEARS@|$years|" "$src/debian/copyright"
# The crates linked into the binary, for the copyright file.
crates=$(cd "$T" && cargo tree --locked -e normal,no-proc-macro --target "$target" --prefix none \
	--format '{p} {l}' | sed -e 's/ (\*)$//' -e 's/ (\/[^)]*)//' | grep -v '^allocinfo ' | LC_ALL=C sort -u)
{
	echo
	echo "Files: prebuilt/allocinfo"
	echo "Copyright: the authors of each crate (see crates.io)"
	echo "License: other"
	echo " The Rust crates linked into the binary, from crates.io, with their licenses:"
	sed 's/^/ /' <<< "$crates"
} >> "$src/debian/copyright"
cat > "$src/debian/changelog" <<EOF
allocinfo ($version) trixie; urgency=medium

$(echo "Built from commit $commit." | fold -s -w 72 | sed -e 's/ *$//' -e '1s/^/  * /' -e '2,$s/^/    /')

 -- $maint  $date
EOF

echo "tool-deb: dpkg-buildpackage in $root"
log=$W/build.log
mkdir -p "$root/build-tool"
if ! unshare -m --propagation private /bin/bash -euc '
	root=$1 w=$2 v=$3
	mount --bind "$w" "$root/build-tool"
	mount -t proc proc "$root/proc"
	mount -t tmpfs tmpfs "$root/tmp"
	exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		/bin/sh -c "cd /build-tool/allocinfo-$v && dpkg-buildpackage -b -uc -us"
	' _ "$root" "$W" "$version" > "$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "tool-deb: the package build failed; log: $log" >&2
	exit 1
fi
deb=$W/allocinfo_${version}_amd64.deb
[ -s "$deb" ] || { echo "tool-deb: $deb is missing; log: $log" >&2; exit 1; }
rm -f "$OUTDIR"/allocinfo_*.deb
mv "$deb" "$OUTDIR/"
if ls "$OUTDIR"/*.deb > /dev/null 2>&1; then
	(cd "$OUTDIR" && sha256sum ./*.deb > SHA256SUMS)
fi
echo "$inputs" > "$stamp"
echo "tool-deb: $OUTDIR/$(basename "$deb") ($(stat -c %s "$OUTDIR/$(basename "$deb")") bytes)"
