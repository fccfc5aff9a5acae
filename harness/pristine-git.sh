#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# usage: pristine-git.sh PRISTINE DIR
# Makes DIR a git tree of the pristine source, its one commit tagged
# "pristine" (once: an existing one is left as it is).  make stack and make
# series each keep one.
set -euo pipefail
pristine=$1 dir=$2
export GIT_AUTHOR_NAME="allocprof developers" GIT_AUTHOR_EMAIL="dev@allocprof.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export GIT_AUTHOR_DATE="2026-12-02T00:00:00Z" GIT_COMMITTER_DATE="2026-12-02T00:00:00Z"
git() { command git -C "$dir" -c core.autocrlf=false "$@"; }
if git rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
	exit 0
fi
[ -f "$pristine/Makefile" ] || { echo "pristine-git: no pristine tree at $pristine" >&2; exit 1; }
echo "pristine-git: making a git tree of the pristine source in $dir (once)"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
cp -a "$pristine" "$dir"
git init -q
git add -A -f
git commit -q -m "Linux 6.12.$(sed -n 's/^SUBLEVEL = //p' "$dir/Makefile") (Debian linux-source-6.12)"
git tag pristine
