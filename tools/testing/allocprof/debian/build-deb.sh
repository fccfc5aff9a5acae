#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: Debian 13 packages of the kernel with the profiler.
#
# The tree make builds and tests (SRC: the pristine 6.12.118 source, which is
# also Debian 13's linux-source-6.12, with the series' files and diffs) is
# copied into CACHE_DIR/deb/src and built inside a Debian 13 root
# (build-env.sh) with Debian 13's toolchain, from Debian 13's config
# (linux-config-6.12, amd64_none_amd64) with BASEDIR/debian.config merged,
# by the kernel's own `make bindeb-pkg`.
#
# Output in CACHE_DIR/deb/packages (DEB_OUT):
#   linux-image-RELEASE_VERSION_amd64.deb, linux-headers-RELEASE_VERSION_amd64.deb
#   config-changes.txt  scripts/diffconfig of Debian's config against ours
#   SHA256SUMS
# RELEASE is 6.12.118-allocprof-amd64, so the kernel installs beside
# Debian's 6.12.118+deb13-amd64 (its own /boot files and /lib/modules);
# VERSION is 6.12.118-1+allocprofN, N the number of commits of the repo,
# so it sorts after Debian's 6.12.118-1 and after every earlier build.
#
# The copy and the build directory are kept: a second make deb after an
# edit rebuilds what the edit touches.  Module signing uses a key the first
# build generates in CACHE_DIR/deb/out/certs/ (kept for later builds, so
# that modules of one build load into the kernel of the next).
set -euo pipefail
: "${CACHE_DIR:?}" "${REPO:?}" "${SRC:?}" "${BASEDIR:?}"
. "$BASEDIR/base.conf"
H=$REPO/tools/testing/allocprof
D=$CACHE_DIR/deb
OUTDIR=${DEB_OUT:-$D/packages}
JOBS=${JOBS:-$(nproc)}
FLAVOUR=${DEB_FLAVOUR:-amd64_none_amd64}
LOCALVERSION=-allocprof-amd64
N=$(git -C "$REPO" rev-list --count HEAD 2>/dev/null || echo 0)
PKGVERSION=${DEB_VERSION:-$BASE_RELEASE-1+allocprof$N}

root=$("$H/debian/build-env.sh" "$D")
mkdir -p "$D/src" "$D/out" "$OUTDIR"
cp "$BASEDIR/debian.config" "$D/debian.config"
cp "$H/debian/check-config.sh" "$H/debian/headers-fixup.sh" "$D/"

# The tree as regular files (ours are symlinks into the checkout in SRC).
# rsync keeps the times of unchanged files, so the build stays incremental.
echo "deb: copying $SRC to $D/src"
rsync -aL --delete --exclude=/.git "$SRC/" "$D/src/"

cat > "$D/build.sh" <<'INNER'
#!/bin/bash
set -euo pipefail
cd /build/src
# Debian builds its kernel with gcc-14 under its full name, which its config
# records in CONFIG_CC_VERSION_TEXT: the same here, so that the config
# differs from Debian's only where debian.config says.
mk=(make -s O=/build/out CC=x86_64-linux-gnu-gcc-14)
debian=/usr/src/linux-config-6.12/config.$FLAVOUR.xz
stamp=/build/out/.allocprof-deb-config.sha
want=$( (cat /build/debian.config /build/check-config.sh; xz -dc "$debian"; sha1sum Kconfig init/Kconfig lib/Kconfig.alloc_tag) | sha1sum | cut -d' ' -f1)
if [ ! -f /build/out/.config ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	xz -dc "$debian" > /build/out/debian-$FLAVOUR.config
	cp /build/out/debian-$FLAVOUR.config /build/out/.config
	(cd /build/out && /build/src/scripts/kconfig/merge_config.sh -m -O /build/out .config /build/debian.config >/dev/null)
	"${mk[@]}" olddefconfig
	/build/check-config.sh /build/out/debian-$FLAVOUR.config /build/out/.config /build/debian.config \
		> /build/out/config-changes.txt
	echo "$want" > "$stamp"
fi
"${mk[@]}" rustavailable
rm -f /build/*.deb /build/*.buildinfo /build/*.changes
make O=/build/out CC=x86_64-linux-gnu-gcc-14 -j"$JOBS" LOCALVERSION="$LOCALVERSION" KDEB_PKGVERSION="$PKGVERSION" \
	KDEB_CHANGELOG_DIST=trixie KDEB_COMPRESS=xz KBUILD_VERBOSE=0 \
	DPKG_FLAGS=-Ppkg.linux-upstream.nokerneldbg bindeb-pkg
/build/headers-fixup.sh /build/linux-headers-*_"${PKGVERSION}"_amd64.deb x86_64-linux-gnu-gcc-14 /build/out
INNER
chmod +x "$D/build.sh"

# Nothing to do when the packages in OUTDIR were built from this very tree,
# build script, config fragment and build root: a second make deb (make
# test-install depends on it) then costs the copy, not a repackaging of
# four thousand modules.  The stamp is written only after a build succeeded.
rel=$BASE_RELEASE$LOCALVERSION
stamp=$OUTDIR/.inputs
inputs=$( (echo "$root"; cat "$D/build.sh" "$D/debian.config" "$D/check-config.sh" "$D/headers-fixup.sh";
	cd "$D/src" && find . -path ./.git -prune -o -printf '%P %s %T@ %l\n' | LC_ALL=C sort) | sha1sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ] &&
	ls "$OUTDIR/linux-image-${rel}_"*.deb "$OUTDIR/linux-headers-${rel}_"*.deb > /dev/null 2>&1; then
	echo "deb: the packages in $OUTDIR are up to date (same tree, config and build root):"
	ls -l "$OUTDIR"
	exit 0
fi
rm -f "$stamp"

echo "deb: building $PKGVERSION in $root (Debian 13: $(chroot "$root" gcc --version | head -1), $(chroot "$root" rustc --version))"
log=$D/build.log
mkdir -p "$root/build"
# A mount namespace of its own: the binds go away with the build.
if ! unshare -m --propagation private /bin/bash -euc '
	root=$1 d=$2
	mount --bind "$d" "$root/build"
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs tmpfs "$root/tmp"
	exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		FLAVOUR="$3" JOBS="$4" LOCALVERSION="$5" PKGVERSION="$6" \
		KBUILD_BUILD_USER=allocprof KBUILD_BUILD_HOST=allocprof \
		DEBFULLNAME=allocprof DEBEMAIL=allocprof@localhost /build/build.sh
	' _ "$root" "$D" "$FLAVOUR" "$JOBS" "$LOCALVERSION" "$PKGVERSION" > "$log" 2>&1; then
	grep -E 'error|Error|ERROR' "$log" | head -n 20 >&2
	tail -n 20 "$log" >&2
	echo "deb: the build failed; log: $log" >&2
	exit 1
fi

# Ours only: the tool's package (build-tool-deb.sh) shares the directory.
rm -f "$OUTDIR"/linux-*.deb
for p in linux-image-$rel linux-headers-$rel; do
	f=$D/${p}_${PKGVERSION}_amd64.deb
	[ -s "$f" ] || { echo "deb: $f is missing; log: $log" >&2; exit 1; }
	mv "$f" "$OUTDIR/"
done
# bindeb-pkg also makes linux-libc-dev, which would replace Debian's: not shipped.
rm -f "$D"/linux-libc-dev_*.deb "$D"/*.buildinfo "$D"/*.changes
cp "$D/out/config-changes.txt" "$OUTDIR/"
(cd "$OUTDIR" && sha256sum ./*.deb > SHA256SUMS)
echo "$inputs" > "$stamp"
echo "deb: packages in $OUTDIR:"
ls -l "$OUTDIR"
