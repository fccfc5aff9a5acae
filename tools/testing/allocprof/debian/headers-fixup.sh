#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb, inside the Debian 13 build root after `make bindeb-pkg`: make
# the linux-headers package build out-of-tree modules (DKMS) on a Debian 13
# machine the way Debian's own linux-headers packages do.
#
# usage: headers-fixup.sh DEB CC BUILDDIR
#
# Kbuild's headers package (scripts/package/install-extmod-build) has no
# Depends and records no compiler.  On a Debian machine with only dkms and
# make, that fails twice: no compiler is installed at all, and `make` in
# the headers directory calls plain "gcc", not the x86_64-linux-gnu-gcc-14
# the kernel was built with.  Debian's headers solve both: they depend on
# gcc-14 and name the compiler in /usr/src/linux-headers-RELEASE/
# .kernelvariables, which Debian's top Makefile (this source is Debian's)
# includes.  The same here, by rewriting the package:
#   - .kernelvariables: CC = CC (so CONFIG_CC_VERSION_TEXT matches and
#     there is no "compiler differs" warning);
#   - vmlinux with the kernel's .BTF section only, so that modules get BTF;
#   - Depends: the compiler's package, make, pahole (for that BTF), and
#     the shared libraries of the host programs the package ships
#     (modpost, sign-file, objtool...), as dpkg-shlibdeps finds them.
set -euo pipefail
deb=$1 cc=$2 builddir=$3
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
dpkg-deb -R "$deb" "$w/p"
hdir=$(find "$w/p/usr/src" -mindepth 1 -maxdepth 1 -type d -name 'linux-headers-*')
[ -d "$hdir" ] || { echo "headers-fixup: no usr/src/linux-headers-* in $deb" >&2; exit 1; }
rel=${hdir##*/linux-headers-}
[ -f "$hdir/Makefile" ] && grep -q '^-include .kernelvariables' "$hdir/Makefile" ||
	{ echo "headers-fixup: $hdir/Makefile does not include .kernelvariables (not Debian's source?)" >&2; exit 1; }
cat > "$hdir/.kernelvariables" <<EOF
# The compiler $rel was built with (make deb, Documentation/allocprof/install.md).
CC = $cc
EOF

# BTF for out-of-tree modules: kbuild generates a module's BTF against
# the headers' vmlinux, and skips it when there is none.  The kernel's
# .BTF section alone is enough for that (a few MB, not the 400 MB vmlinux).
btfdep=
if grep -q '^CONFIG_DEBUG_INFO_BTF_MODULES=y' "$hdir/include/config/auto.conf"; then
	objcopy --only-section=.BTF --set-section-flags .BTF=alloc,readonly \
		"$builddir/vmlinux" "$hdir/vmlinux" 2> >(grep -v 'empty loadable segment' >&2)
	btfdep=", pahole"
fi

ccpath=$(command -v "$cc")
ccpkg=$(dpkg-query -S "$(readlink -f "$ccpath")" | cut -d: -f1 | head -n 1)
bins=$(find "$hdir" -type f -perm -u+x ! -path "$hdir/vmlinux" -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
# dpkg-shlibdeps reads debian/control: the one bindeb-pkg made.
shlibs=$(cd "$builddir" && dpkg-shlibdeps -O $(printf -- '-e%s ' $bins) 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "headers-fixup: dpkg-shlibdeps found no libraries for: $bins" >&2; exit 1; }
depends="$ccpkg, make$btfdep, $shlibs"
ctl=$w/p/DEBIAN/control
grep -q '^Depends:' "$ctl" && { echo "headers-fixup: $deb already has Depends; kbuild changed?" >&2; exit 1; }
sed -i "/^Architecture:/a Depends: $depends" "$ctl"
# Installed-Size as dpkg-gencontrol counts it: KiB per file, rounded up,
# and one for every other entry.
isize=$(cd "$w/p" && find . -path ./DEBIAN -prune -o ! -path . -printf '%y %s\n' |
	awk '{ n += ($1 == "f") ? int(($2 + 1023) / 1024) : 1 } END { print n }')
sed -i "s/^Installed-Size:.*/Installed-Size: $isize/" "$ctl"
(cd "$w/p" && md5sum "${hdir#"$w/p/"}/.kernelvariables" ${btfdep:+"${hdir#"$w/p/"}/vmlinux"} >> DEBIAN/md5sums)
dpkg-deb -Zxz --root-owner-group -b "$w/p" "$deb.new" > /dev/null
mv "$deb.new" "$deb"
echo "headers-fixup: $(basename "$deb"): Depends: $depends; CC = $cc in .kernelvariables${btfdep:+; vmlinux with .BTF only}"
