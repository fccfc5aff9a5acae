# SPDX-License-Identifier: GPL-2.0
# Sourced by the scripts that make git trees of the series (series.sh,
# pristine-git.sh): the team's identity and fixed commit dates, so that the
# same repo gives the same commits, and git() on the tree $G.
export GIT_AUTHOR_NAME="allocprof developers" GIT_AUTHOR_EMAIL="dev@allocprof.invalid"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export GIT_COMMITTER_DATE="2026-12-02T00:00:00Z"
git() { command git -C "$G" -c core.autocrlf=false -c advice.detachedHead=false "$@"; }
