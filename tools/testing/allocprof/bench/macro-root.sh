#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The macro benchmark's files for the VM: usage: tools/testing/allocprof/bench/macro-root.sh DIR
# DIR/macro_time (static), DIR/root/{hackbench,stress-ng} as Debian installs
# them (packages rt-tests and stress-ng, which make setup installs), their
# shared libraries in DIR/root/lib and the loader that runs them,
# DIR/root/ld-linux-x86-64.so.2.
set -euo pipefail
dir=$1
B=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir/root/lib"
gcc -O2 -static -Wall -o "$dir/macro_time" "$B/macro_time.c"
for p in hackbench stress-ng; do
	bin=$(command -v "$p") || { echo "macro-root: $p is not installed (make setup)" >&2; exit 1; }
	cp "$bin" "$dir/root/"
	ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
		cp -L "$lib" "$dir/root/lib/"
	done
done
cp -L /lib64/ld-linux-x86-64.so.2 "$dir/root/"
dpkg-query -W -f='${Package} ${Version}\n' rt-tests stress-ng > "$dir/versions"
