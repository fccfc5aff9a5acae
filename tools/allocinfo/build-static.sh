#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The static allocinfo binary that goes into the test VM: built (release,
# crt-static, no interpreter, no shared library) in this checkout's cargo
# target directory under ${CACHE_DIR:-$HOME/.cache/allocprof}, the one
# host-test.sh uses.  Prints its path last; non-zero if it did not build.
set -u
here=$(cd "$(dirname "$0")" && pwd)
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/allocprof}
# One target directory per checkout: cargo keeps path dependencies fresh by
# their files' times, so two clones sharing one would link each other's stale
# builds of the same crate.
export CARGO_TARGET_DIR="$CACHE_DIR/allocinfo-target-$(printf '%s' "$here" | cksum | cut -d' ' -f1)"
target=x86_64-unknown-linux-gnu
bin="$CARGO_TARGET_DIR/$target/release/allocinfo"
cd "$here" || exit 1
RUSTFLAGS='-C target-feature=+crt-static' \
	cargo build --release --locked --quiet --target "$target" || exit 1
if readelf -lW "$bin" | grep -q 'program interpreter' || readelf -dW "$bin" | grep -q NEEDED; then
	echo "build-static: $bin is not static" >&2
	exit 1
fi
"$bin" --version || exit 1
echo "$bin"
