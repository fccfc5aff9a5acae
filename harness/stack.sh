#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The change is kept as a patch stack: patches/series names the patches in
# order, each a git format-patch of one commit against its parent, applied
# to pristine 6.12.118 (harness/prepare-tree.sh makes the tested tree from
# them).  This script turns the stack into a git tree to edit and back.
#
#   stack.sh lay   (make stack) a git tree in $STACK_TREE: the pristine
#                  source as the commit tagged "pristine", one commit per
#                  patch on branch "stack".  Edit it with git: commit
#                  --fixup=<commit>, rebase -i --autosquash pristine, new
#                  commits, reordering.  Refuses to replace a tree with
#                  commits or edits not yet saved (STACK_FORCE=1 does).
#   stack.sh save  (make unstack) writes pristine..stack back to patches/:
#                  one patch per commit, patches/series rewritten.
#   stack.sh check the commits of the stack tree are the repo's patches
#                  (exit 1 if not: unsaved work, or patches changed since
#                  the tree was laid).
set -euo pipefail
: "${CACHE_DIR:?}" "${REPO:?}"
PRISTINE=$CACHE_DIR/src/linux-source-6.12
G=${STACK_TREE:-$CACHE_DIR/stack/linux}
PD=$REPO/patches
H=$REPO/harness

. "$H/git-env.sh"

patch_list() {
	[ -f "$PD/series" ] || return 0
	awk '!/^[ \t]*(#|$)/ {print $1}' "$PD/series"
}

# The stack as patches, in a directory: the form patches/ keeps.
# --zero-commit and a fixed abbreviation so that an unchanged commit gives
# the same bytes after any rebase.
export_stack() {
	git format-patch -q -N --zero-commit --no-signature --abbrev=12 \
		-o "$1" pristine..stack
}

# Is the stack tree's branch exactly the repo's patches?
same_as_repo() {
	local t rc=0
	t=$(mktemp -d)
	export_stack "$t"
	if [ "$(cd "$t" && ls)" != "$(patch_list)" ]; then
		rc=1
	else
		while read -r p; do
			cmp -s "$t/$p" "$PD/$p" || { rc=1; break; }
		done < <(patch_list)
	fi
	rm -rf "$t"
	return $rc
}

dirty() {
	[ -n "$(git status --porcelain --untracked-files=no)" ] ||
		[ -e "$G/.git/rebase-merge" ] || [ -e "$G/.git/rebase-apply" ]
}

case ${1:-} in
lay)
	if [ -d "$G/.git" ] && git rev-parse -q --verify refs/heads/stack >/dev/null; then
		if [ "${STACK_FORCE:-0}" != 1 ]; then
			if dirty; then
				echo "stack: $G has uncommitted edits or a rebase in progress;" \
					"commit and make unstack, or STACK_FORCE=1 to drop them" >&2
				exit 1
			fi
			saved=$(cat "$G/.git/allocprof-saved" 2>/dev/null || true)
			if [ "$(git rev-parse stack)" != "$saved" ]; then
				echo "stack: branch stack in $G has commits not written back;" \
					"make unstack, or STACK_FORCE=1 to drop them" >&2
				exit 1
			fi
		fi
	else
		"$H/pristine-git.sh" "$PRISTINE" "$G"
	fi
	# New commits in the tree are the team's, as the stack's are.
	git config user.name "$GIT_AUTHOR_NAME"
	git config user.email "$GIT_AUTHOR_EMAIL"
	git checkout -q -f -B stack pristine
	git clean -q -fdx
	while read -r p; do
		[ -f "$PD/$p" ] || { echo "stack: patches/series names $p, which is not in patches/" >&2; exit 1; }
		git am -q --committer-date-is-author-date "$PD/$p" ||
			{ git am --abort || true; echo "stack: $p does not apply" >&2; exit 1; }
	done < <(patch_list)
	git rev-parse stack > "$G/.git/allocprof-saved"
	echo "stack: $(patch_list | wc -l) patches as commits on branch stack in $G"
	;;
save)
	[ -d "$G/.git" ] || { echo "stack: no stack tree at $G (make stack)" >&2; exit 1; }
	if dirty; then
		echo "stack: $G has uncommitted edits or a rebase in progress: commit them first" >&2
		exit 1
	fi
	git merge-base --is-ancestor pristine stack ||
		{ echo "stack: branch stack is not based on the pristine commit" >&2; exit 1; }
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	export_stack "$t"
	[ -n "$(ls "$t")" ] || { echo "stack: no commits on branch stack" >&2; exit 1; }
	{
		echo "# The change as a patch stack against pristine Linux 6.12.118, in order."
		echo "# Written by make unstack from the stack tree (make stack); see notes/series.md."
		(cd "$t" && ls)
	} > "$t.series"
	mv "$t.series" "$t/series"
	changed=$( (cd "$t" && ls) | grep -vx series |
		while read -r p; do cmp -s "$t/$p" "$PD/$p" || echo "$p"; done)
	gone=$(patch_list | while read -r p; do [ -e "$t/$p" ] || echo "$p"; done)
	for p in $gone; do rm -f "$PD/$p"; done
	cp "$t"/* "$PD/"
	git rev-parse stack > "$G/.git/allocprof-saved"
	echo "stack: $(patch_list | wc -l) patches in patches/;" \
		"$(wc -w <<< "$changed") written, $(wc -w <<< "$gone") removed"
	for p in $changed; do echo "  $p"; done
	;;
check)
	[ -d "$G/.git" ] || { echo "stack: no stack tree at $G" >&2; exit 1; }
	if dirty || ! same_as_repo; then
		echo "stack: the stack tree $G differs from patches/" >&2
		exit 1
	fi
	echo "stack: $G is patches/"
	;;
*)
	echo "usage: stack.sh lay|save|check" >&2
	exit 2
	;;
esac
