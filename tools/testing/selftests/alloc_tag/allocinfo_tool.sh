#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Checks the allocinfo tool against live /proc/allocinfo data and prints KTAP.
#
# Runs under busybox sh. ALLOCINFO_FILE and ALLOCINFO_BIN override the data file and the binary,
# so the script can be tried on the host against a fixture.

ALLOCINFO_FILE=${ALLOCINFO_FILE:-/proc/allocinfo}
ALLOCINFO_BIN=${ALLOCINFO_BIN:-/bin/allocinfo}
# sort must break ties by plain byte order, as the tool does.
LC_ALL=C
export LC_ALL

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4
NTESTS=10

num=0
passed=0
failed=0
skipped=0

ok() {
	num=$((num + 1))
	passed=$((passed + 1))
	echo "ok $num $1"
}

not_ok() {
	num=$((num + 1))
	failed=$((failed + 1))
	echo "not ok $num $1"
}

skip_all() {
	while [ "$num" -lt "$NTESTS" ]; do
		num=$((num + 1))
		skipped=$((skipped + 1))
		echo "ok $num allocinfo_tool # SKIP $1"
	done
	totals
	exit "$KSFT_SKIP"
}

totals() {
	echo "# Totals: pass:$passed fail:$failed xfail:0 xpass:0 skip:$skipped error:0"
}

# Prints a file as KTAP diagnostics, a few lines at most.
diag() {
	head -n "${2:-10}" "$1" | sed 's/^/# /'
}

# Runs the tool on live data: /proc/allocinfo itself, or the file named by ALLOCINFO_FILE.
live() {
	if [ "$ALLOCINFO_FILE" = /proc/allocinfo ]; then
		"$ALLOCINFO_BIN" "$@"
	else
		"$ALLOCINFO_BIN" "$@" -i "$ALLOCINFO_FILE"
	fi
}

# Reduces rows of allocinfo text or of `allocinfo top` output to their sites:
# "file:line [module] func:name", whatever the size columns look like.
sites() {
	awk '{
		for (i = 1; i <= NF; i++)
			if ($i ~ /:[0-9]+$/)
				break
		if (i > NF)
			next
		s = $i
		i++
		if ($i ~ /^\[.*\]$/) {
			s = s " " $i
			i++
		}
		if ($i ~ /^func:/)
			print s " " $i
	}' "$@"
}

# Rows only, without the header (and a snapshot line, if the file is a snapshot).
rows() {
	awk '$1 ~ /^-?[0-9]+$/' "$@"
}

echo "TAP version 13"
echo "1..$NTESTS"

[ -r "$ALLOCINFO_FILE" ] ||
	skip_all "$ALLOCINFO_FILE not readable (needs CONFIG_MEM_ALLOC_PROFILING and root)"
[ -x "$ALLOCINFO_BIN" ] || skip_all "$ALLOCINFO_BIN not found"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocinfo_tool.XXXXXX") ||
	skip_all "cannot make a temporary directory"
trap 'rm -rf "$tmp"' EXIT

# 1: a plain run on live data.
if live top -n 10 >"$tmp/live_top" 2>"$tmp/err" && grep -q '^total: ' "$tmp/live_top"; then
	ok "top -n 10 on live data"
else
	diag "$tmp/err"
	not_ok "top -n 10 on live data"
fi

# 2: the same top sites as sort -g | tail, both on one copy (live data moves between reads).
cat "$ALLOCINFO_FILE" >"$tmp/copy"
rows "$tmp/copy" | sort -g | tail -n 10 | sites | sort >"$tmp/want"
if "$ALLOCINFO_BIN" top -n 10 -i "$tmp/copy" >"$tmp/top" 2>"$tmp/err"; then
	sites "$tmp/top" | sort >"$tmp/got"
	if [ -s "$tmp/want" ] && [ "$(cat "$tmp/want")" = "$(cat "$tmp/got")" ]; then
		ok "top -n 10 matches sort -g | tail -n 10"
	else
		echo "# expected:"
		diag "$tmp/want"
		echo "# got:"
		diag "$tmp/got"
		not_ok "top -n 10 matches sort -g | tail -n 10"
	fi
else
	diag "$tmp/err"
	not_ok "top -n 10 matches sort -g | tail -n 10"
fi

# 3: two snapshots and a diff between them.
if live snapshot -o "$tmp/a.snap" 2>"$tmp/err" &&
	live snapshot -o "$tmp/b.snap" 2>>"$tmp/err" &&
	"$ALLOCINFO_BIN" diff "$tmp/a.snap" "$tmp/b.snap" >"$tmp/diff" 2>>"$tmp/err" &&
	grep -q '^total: .* -> .*grew.*shrank' "$tmp/diff"; then
	ok "snapshot twice, diff prints totals"
else
	diag "$tmp/err"
	diag "$tmp/diff"
	not_ok "snapshot twice, diff prints totals"
fi

# 4: export has HELP/TYPE and one sample per site (rows with the same tag text are summed);
# --line-label keeps the sites of one function apart.
if live export --line-label >"$tmp/prom" 2>"$tmp/err"; then
	help=$(grep -c '^# HELP allocinfo_bytes ' "$tmp/prom")
	type=$(grep -c '^# TYPE allocinfo_bytes gauge$' "$tmp/prom")
	samples=$(grep -c '^allocinfo_bytes{' "$tmp/prom")
	want=$(rows "$ALLOCINFO_FILE" | sites | sort -u | wc -l)
	if [ "$help" -eq 1 ] && [ "$type" -eq 1 ] &&
	   [ "$samples" -eq "$want" ] && [ "$want" -gt 0 ]; then
		ok "export has HELP/TYPE and one sample per row"
	else
		echo "# HELP lines $help, TYPE lines $type, samples $samples, sites $want"
		not_ok "export has HELP/TYPE and one sample per row"
	fi
else
	diag "$tmp/err"
	not_ok "export has HELP/TYPE and one sample per row"
fi

# 5: OpenMetrics output ends with its terminator.
if live export --format openmetrics >"$tmp/om" 2>"$tmp/err" &&
	[ "$(tail -n 1 "$tmp/om")" = "# EOF" ] &&
	   grep -q '^# UNIT allocinfo_bytes bytes$' "$tmp/om"; then
	ok "export --format openmetrics ends with # EOF"
else
	diag "$tmp/err"
	not_ok "export --format openmetrics ends with # EOF"
fi

# 6: JSON output looks like JSON.
if live --json top >"$tmp/json" 2>"$tmp/err"; then
	first=$(awk 'NF { print substr($1, 1, 1); exit }' "$tmp/json")
	last=$(awk 'NF { c = substr($NF, length($NF), 1) } END { print c }' "$tmp/json")
	case "$first$last" in
	"{}" | "[]")
		ok "--json top prints JSON"
		;;
	*)
		diag "$tmp/json" 3
		not_ok "--json top prints JSON"
		;;
	esac
else
	diag "$tmp/err"
	not_ok "--json top prints JSON"
fi

# 7: tree and usage errors behave.
live tree --by module >"$tmp/tree" 2>"$tmp/err"
tree_rc=$?
"$ALLOCINFO_BIN" top --no-such-option >/dev/null 2>&1
usage_rc=$?
if [ "$tree_rc" -eq 0 ] && grep -q ' vmlinux$' "$tmp/tree" && [ "$usage_rc" -eq 2 ]; then
	ok "tree --by module works, usage errors exit 2"
else
	echo "# tree exit $tree_rc, usage error exit $usage_rc"
	diag "$tmp/err"
	not_ok "tree --by module works, usage errors exit 2"
fi

# 8: the ioctl source. Live: top through the ioctls names the source and only sites the text
# (read after it) has. A file: --source ioctl is a usage error.
if [ "$ALLOCINFO_FILE" != /proc/allocinfo ]; then
	"$ALLOCINFO_BIN" --source ioctl top -i "$ALLOCINFO_FILE" >/dev/null 2>"$tmp/err"
	ioctl_rc=$?
	if [ "$ioctl_rc" -eq 2 ]; then
		ok "--source ioctl is refused for a file"
	else
		echo "# exit $ioctl_rc"
		diag "$tmp/err"
		not_ok "--source ioctl is refused for a file"
	fi
elif ! "$ALLOCINFO_BIN" --source ioctl top -n 0 --bytes >"$tmp/ioctl_top" 2>"$tmp/err"; then
	if grep -q 'has no allocinfo ioctls' "$tmp/err"; then
		num=$((num + 1))
		skipped=$((skipped + 1))
		echo "ok $num top through the ioctls # SKIP kernel has no allocinfo ioctls"
	else
		diag "$tmp/err"
		not_ok "top through the ioctls"
	fi
else
	"$ALLOCINFO_BIN" --source ioctl --json top -n 1 >"$tmp/ioctl_json" 2>>"$tmp/err"
	cat /proc/allocinfo >"$tmp/copy2"
	sites "$tmp/ioctl_top" | sort >"$tmp/ioctl_sites"
	rows "$tmp/copy2" | sites | sort -u >"$tmp/text_sites"
	# The ioctls keep the last 63 bytes of a longer file name: such a site
	# is the end of a text site.
	grep -vxF -f "$tmp/text_sites" "$tmp/ioctl_sites" |
		awk 'NR == FNR { t[++n] = $0; next }
		     { for (i = 1; i <= n; i++)
			       if (length(t[i]) > length($0) &&
				   substr(t[i], length(t[i]) - length($0) + 1) == $0)
				       next
		       print }' "$tmp/text_sites" - >"$tmp/only_ioctl"
	if grep -q '"source": "/proc/allocinfo (ioctl)"' "$tmp/ioctl_json" &&
	   [ -s "$tmp/ioctl_sites" ] && [ ! -s "$tmp/only_ioctl" ]; then
		ok "top through the ioctls"
	else
		diag "$tmp/err"
		echo "# sites only the ioctls returned:"
		diag "$tmp/only_ioctl"
		not_ok "top through the ioctls"
	fi
fi

# 9: watch gives the text's site count and total bytes in every sample.
# Live, through the ioctls, which read the names once and then records of
# counters only (ALLOCINFO_BATCH_COUNTERS), on the test module's sites,
# quiet while it runs; a file, read whole at each sample.
att=/sys/kernel/debug/alloc_tag_test
name="watch agrees with the text in every sample"
watch_check() {
	want_sites=$(sites "$tmp/want_rows" | sort -u | wc -l)
	want_bytes=$(awk '{ s += $1 } END { printf "%.0f", s }' "$tmp/want_rows")
	want="\"sites\":$want_sites,\"total_bytes\":$want_bytes,"
	good=$(grep -c "^{\"type\":\"sample\",.*$want" "$tmp/watch")
	if [ "$watch_rc" -eq 0 ] && [ "$good" -eq 3 ] && [ "$want_sites" -gt 0 ]; then
		ok "$name"
	else
		echo "# exit $watch_rc; text: $want_sites sites, $want_bytes bytes"
		diag "$tmp/watch" 4
		diag "$tmp/err"
		not_ok "$name"
	fi
}
if [ "$ALLOCINFO_FILE" != /proc/allocinfo ]; then
	"$ALLOCINFO_BIN" --json watch -i "$ALLOCINFO_FILE" -c 3 --interval 0.1 \
		>"$tmp/watch" 2>"$tmp/err"
	watch_rc=$?
	rows "$ALLOCINFO_FILE" >"$tmp/want_rows"
	watch_check
elif [ ! -d "$att" ] || ! "$ALLOCINFO_BIN" --source ioctl top -n 0 >/dev/null 2>&1; then
	num=$((num + 1))
	skipped=$((skipped + 1))
	echo "ok $num $name # SKIP needs /proc/allocinfo's ioctls and alloc_tag_test"
elif ! echo "kmalloc 100 3" >"$att/ctl"; then
	not_ok "$name (alloc_tag_test's ctl)"
else
	"$ALLOCINFO_BIN" --source ioctl --json watch --module alloc_tag_test -c 3 \
		--interval 0.1 >"$tmp/watch" 2>"$tmp/err"
	watch_rc=$?
	grep ' \[alloc_tag_test\] ' /proc/allocinfo >"$tmp/want_rows"
	echo "free kmalloc" >"$att/ctl"
	watch_check
fi

# 10: per-node views. Live with a per-node view: top --by-node on the test
# module's sites (3 pages on node 0, 2 kmalloc_node objects on each node)
# gives exactly the rows of /sys/kernel/debug/allocinfo_nodes. Live without
# one (several nodes, alloc_tag_node=1 not given) and on a file of
# /proc/allocinfo text: --by-node fails with exit 1 and says why.
name="top --by-node agrees with allocinfo_nodes"
nodes_file=/sys/kernel/debug/allocinfo_nodes
# "bytes calls Nn site" of node rows, sorted.
node_rows() {
	awk '$3 ~ /^N[0-9]+$/ {
		s = ""
		for (i = 4; i <= NF; i++)
			s = s " " $i
		print $1, $2, $3 s
	}' "$@" | sort
}
if [ "$ALLOCINFO_FILE" != /proc/allocinfo ] || ! head -c 1 "$nodes_file" >/dev/null 2>&1; then
	live top --by-node >"$tmp/bynode" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -eq 1 ] && [ -s "$tmp/err" ] && [ ! -s "$tmp/bynode" ]; then
		ok "top --by-node without a per-node view fails and says why"
	else
		echo "# exit $rc"
		diag "$tmp/err"
		not_ok "top --by-node without a per-node view fails and says why"
	fi
elif [ ! -d "$att" ]; then
	num=$((num + 1))
	skipped=$((skipped + 1))
	echo "ok $num $name # SKIP needs alloc_tag_test"
else
	echo "node 0 3" >"$att/ctl"
	nn=$(awk '$1 == "online_nodes" { print $2 }' "$att/info")
	n=0
	while [ "$n" -lt "${nn:-1}" ]; do
		echo "knode $n 2" >"$att/ctl"
		n=$((n + 1))
	done
	"$ALLOCINFO_BIN" --source ioctl top --by-node --bytes -n 0 --module alloc_tag_test \
		>"$tmp/bynode" 2>"$tmp/err"
	rc=$?
	grep ' \[alloc_tag_test\] ' "$nodes_file" | node_rows >"$tmp/want"
	node_rows "$tmp/bynode" >"$tmp/got"
	echo "free node" >"$att/ctl"
	echo "free knode" >"$att/ctl"
	if [ "$rc" -eq 0 ] && [ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got"; then
		ok "$name"
	else
		echo "# exit $rc; allocinfo_nodes, then the tool:"
		diag "$tmp/want"
		diag "$tmp/got"
		diag "$tmp/err"
		not_ok "$name"
	fi
fi

totals
if [ "$failed" -gt 0 ]; then
	exit "$KSFT_FAIL"
fi
exit "$KSFT_PASS"
