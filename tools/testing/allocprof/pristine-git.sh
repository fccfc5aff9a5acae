#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# usage: pristine-git.sh PRISTINE DIR
# Makes DIR a git tree of the pristine source, its one commit tagged
# "pristine" (once: an existing one is left as it is).  make series keeps
# one, on which it generates the series.
set -euo pipefail
pristine=$1 G=$2
. "$(dirname "$0")/git-env.sh"
export GIT_AUTHOR_DATE="$GIT_COMMITTER_DATE"
if git rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
	exit 0
fi
[ -f "$pristine/Makefile" ] || { echo "pristine-git: no pristine tree at $pristine" >&2; exit 1; }
echo "pristine-git: making a git tree of the pristine source in $G (once)"
rm -rf "$G"
mkdir -p "$(dirname "$G")"
cp -a "$pristine" "$G"
git init -q
git add -A -f
git commit -q -m "Linux $(sed -n 's/^VERSION = //p' "$G/Makefile").$(sed -n 's/^PATCHLEVEL = //p' "$G/Makefile").$(sed -n 's/^SUBLEVEL = //p' "$G/Makefile") (pristine)"
git tag pristine
