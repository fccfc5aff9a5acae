#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host tests of the allocinfo tool: lint, cargo test, export read by its consumers (go tool pprof,
# promtool, node_exporter's textfile collector, prometheus_client's OpenMetrics parser), the
# selftest script against fixtures, and the static binary for the test VM.
#
# Prints "N passed, N failed" last and exits non-zero on any failure. Build output and the Python
# venv live under ${CACHE_DIR:-$HOME/.cache/allocprof}, not in the source tree.

set -u

here=$(cd "$(dirname "$0")" && pwd)
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/allocprof}
# One target directory per checkout: cargo keeps path dependencies fresh by
# their files' times, so two clones sharing one would link each other's stale
# builds of the same crate.
export CARGO_TARGET_DIR="$CACHE_DIR/allocinfo-target-$(printf '%s' "$here" | cksum | cut -d' ' -f1)"
venv="$CACHE_DIR/venv"
fixtures="$here/tests/fixtures"
# The in-VM selftest is part of the kernel patch stack: read it in the
# patched tree (make tree BASE=rust; tools/testing/allocprof/host-test.sh lays it).
selftest="${ALLOC_TAG_TREE:-$here/../..}/tools/testing/selftests/alloc_tag/allocinfo_tool.sh"
valid="v1-builtin-modules.txt v1-negative.txt v2-accurate.txt escaping.txt vm-6.12.118-rust.txt vm-6.12.118-upstream.txt"
# Context-capture reports (capture show/export), under tests/fixtures/capture.
capture_valid="two-sites.txt one-site.txt none-armed.txt"
target=x86_64-unknown-linux-gnu

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }
# check DESCRIPTION COMMAND...: runs COMMAND, counts it, shows its output only on failure.
check() {
	local desc=$1 log
	shift
	log=$(mktemp)
	if "$@" >"$log" 2>&1; then
		pass "$desc"
	else
		fail "$desc"
		sed 's/^/    /' "$log" | tail -n 40
	fi
	rm -f "$log"
}

mkdir -p "$CACHE_DIR" || exit 1
work=$(mktemp -d) || exit 1
node_pid=""
trap '[ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null; rm -rf "$work"' EXIT
cd "$here" || exit 1

check "cargo build" cargo build --locked --quiet
check "cargo fmt --check" cargo fmt --check
check "cargo clippy" cargo clippy --locked --quiet --all-targets -- -D warnings

# cargo test: count the tests themselves from its "test result:" summary lines.
if cargo test --locked >"$work/test.log" 2>&1; then test_rc=0; else test_rc=$?; fi
read -r t_pass t_fail < <(awk '/^test result:/ {
	for (i = 1; i <= NF; i++) {
		if ($(i + 1) ~ /^passed/) p += $i
		if ($(i + 1) ~ /^failed/) f += $i
	}
} END { print p + 0, f + 0 }' "$work/test.log")
passed=$((passed + t_pass))
failed=$((failed + t_fail))
echo "cargo test: $t_pass passed, $t_fail failed (exit $test_rc)"
if [ "$test_rc" -ne 0 ]; then
	grep -E '^(error|test .* FAILED|---- )' "$work/test.log" | head -n 40 | sed 's/^/    /'
	# A build failure runs no test at all; count it so the run cannot pass.
	[ "$t_fail" -eq 0 ] && fail "cargo test exited $test_rc"
fi

bin="$CARGO_TARGET_DIR/debug/allocinfo"

# prometheus_client (its OpenMetrics parser; its Prometheus text parser reads node_exporter's
# page below) and protobuf in a reusable venv.
setup_venv() {
	[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || return 1
	"$venv/bin/python" -c 'import prometheus_client' 2>/dev/null ||
		"$venv/bin/python" -m pip install --quiet --disable-pip-version-check prometheus_client ||
		return 1
	"$venv/bin/python" -c 'import google.protobuf' 2>/dev/null ||
		"$venv/bin/python" -m pip install --quiet --disable-pip-version-check protobuf
}
if check "python venv with prometheus_client and protobuf" setup_venv; then
	"$venv/bin/python" -m pip show prometheus_client 2>/dev/null |
		awk '/^Version:/ { print "using prometheus_client " $2 }'
	# Series and values against sums made from the fixture by check_series.py itself.
	for f in $valid; do
		"$bin" export -f openmetrics -i "$fixtures/$f" >"$work/$f.om" 2>&1
		check "OpenMetrics parser reads export -f openmetrics of $f, values exact" \
			"$venv/bin/python" tests/check_series.py openmetrics "$fixtures/$f" "$work/$f.om"
	done
	# pprof's profile.proto decoded with the protobuf library (schema from its field numbers).
	for f in $valid; do
		"$bin" --json top -n 0 -i "$fixtures/$f" >"$work/$f.json" 2>&1
		"$bin" export -f pprof -i "$fixtures/$f" >"$work/$f.pb" 2>&1
		check "protobuf decodes export -f pprof of $f" \
			"$venv/bin/python" tests/validate_pprof_proto.py "$work/$f.pb" "$work/$f.json"
	done
	# capture export -f pprof: one sample per stack, frames leaf first, against show --json.
	for f in $capture_valid; do
		"$bin" capture show --json -n 0 -i "$fixtures/capture/$f" >"$work/capture-$f.json" 2>&1
		"$bin" capture export -f pprof -i "$fixtures/capture/$f" >"$work/capture-$f.pb" 2>&1
		check "protobuf decodes capture export -f pprof of $f" \
			"$venv/bin/python" tests/validate_capture_pprof.py proto "$work/capture-$f.pb" \
			"$work/capture-$f.json"
	done
else
	fail "export validation skipped: no prometheus_client or protobuf"
fi

# The programs that read the exports are mandatory: a missing one fails (setup.sh installs them).
have() {
	command -v "$1" >/dev/null 2>&1 && return 0
	fail "no $1: apt-get install $2 (tools/testing/allocprof/setup.sh installs it)"
	return 1
}

# pprof output read by pprof itself, compared site by site and in total.
if have go golang-go; then
	go version
	pprof_matches() {
		local f=$1
		"$bin" --json top -n 0 -i "$fixtures/$f" >"$work/$f.json" &&
			"$bin" export -f pprof -i "$fixtures/$f" -o "$work/$f.pb" &&
			HOME="$CACHE_DIR/gohome" go tool pprof -raw "$work/$f.pb" >"$work/$f.raw" &&
			python3 tests/validate_pprof.py "$work/$f.raw" "$work/$f.json" &&
			python3 tests/check_series.py pprof-totals "$fixtures/$f" "$work/$f.raw"
	}
	for f in $valid; do
		check "go tool pprof reads export -f pprof of $f, totals exact" pprof_matches "$f"
	done
	capture_pprof_matches() {
		local f=$1
		"$bin" capture show --json -n 0 -i "$fixtures/capture/$f" >"$work/capture-$f.json" &&
			"$bin" capture export -f pprof -i "$fixtures/capture/$f" -o "$work/capture-$f.pb" &&
			HOME="$CACHE_DIR/gohome" go tool pprof -raw "$work/capture-$f.pb" >"$work/capture-$f.raw" &&
			python3 tests/validate_capture_pprof.py raw "$work/capture-$f.raw" "$work/capture-$f.json"
	}
	for f in $capture_valid; do
		check "go tool pprof reads capture export -f pprof of $f" capture_pprof_matches "$f"
	done
fi

# promtool parses and lints the expositions (with every optional label).
if have promtool prometheus; then
	promtool --version 2>&1 | head -n 1
	promtool_accepts() {
		"$bin" export "$@" >"$work/promtool.in" && promtool check metrics <"$work/promtool.in"
	}
	for f in $valid; do
		for fmt in prometheus openmetrics; do
			check "promtool check metrics accepts export -f $fmt of $f" \
				promtool_accepts -f "$fmt" -i "$fixtures/$f"
		done
		check "promtool check metrics accepts export --line-label --release of $f" \
			promtool_accepts --line-label --release 6.12.0-test -i "$fixtures/$f"
	done
	check "promtool check metrics accepts export --by-node of nodes-2.txt" \
		promtool_accepts --by-node -i "$fixtures/nodes-2.txt"
fi

# Debian's node_exporter with only its textfile collector, on a loopback port, reads the export
# from its directory: every series with its exact value and node_textfile_scrape_error 0.
node_exporter=$(command -v prometheus-node-exporter || command -v node_exporter)
if have "${node_exporter:-prometheus-node-exporter}" prometheus-node-exporter &&
	[ -x "$venv/bin/python" ]; then
	"$node_exporter" --version 2>&1 | head -n 1
	textfile="$work/textfile"
	mkdir -p "$textfile"
	scrape() {
		"$venv/bin/python" -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
			"http://127.0.0.1:$port/metrics"
	}
	# A free port: another run may hold one, so try a few.
	for try in 1 2 3 4 5; do
		port=$((20000 + (RANDOM % 20000)))
		"$node_exporter" --collector.disable-defaults --collector.textfile \
			--collector.textfile.directory="$textfile" \
			--web.listen-address="127.0.0.1:$port" >"$work/node_exporter.log" 2>&1 &
		node_pid=$!
		for _ in $(seq 50); do
			scrape >/dev/null 2>&1 && break 2
			kill -0 "$node_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$node_pid" 2>/dev/null
		wait "$node_pid" 2>/dev/null
		node_pid=""
	done
	if [ -n "$node_pid" ]; then
		textfile_reads() {
			local fmt=$1 f=$2
			"$bin" export -f "$fmt" --release 6.12.0-test -i "$fixtures/$f" \
				-o "$textfile/allocinfo.prom" &&
				scrape >"$work/metrics" &&
				"$venv/bin/python" tests/check_series.py scrape "$fixtures/$f" "$work/metrics" 6.12.0-test
		}
		for f in $valid; do
			for fmt in prometheus openmetrics; do
				check "node_exporter textfile collector reads export -f $fmt of $f, values exact" \
					textfile_reads "$fmt" "$f"
			done
		done
		kill "$node_pid"
		wait "$node_pid" 2>/dev/null
		node_pid=""
	else
		fail "node_exporter did not serve /metrics on a loopback port"
		sed 's/^/    /' "$work/node_exporter.log" | tail -n 20
	fi
fi

# top -n N picks the same sites as sort -g | tail -n N for every N, ties included.
awk 'NR <= 2 { print; next } { printf "%12d %8d tie/f%d.c:%d func:f \n", 4096 * (NR % 3), NR % 5, NR % 7, NR }' \
	"$fixtures/v1-builtin-modules.txt" >"$work/ties.txt"
top_matches_sort() {
	local file=$1 rows n want got
	rows=$(awk '$1 ~ /^-?[0-9]+$/' "$file" | wc -l)
	for n in $(seq 1 "$rows"); do
		want=$(awk '$1 ~ /^-?[0-9]+$/' "$file" | LC_ALL=C sort -g | tail -n "$n" |
			awk '{ print $3 }' | sort)
		got=$("$bin" top -n "$n" --bytes -i "$file" | awk 'NR > 1 && $3 ~ /:[0-9]+$/ { print $3 }' | sort)
		if [ "$want" != "$got" ]; then
			echo "n=$n: sort -g says"; echo "$want"; echo "top says"; echo "$got"
			return 1
		fi
	done
}
for f in $valid; do
	check "top -n N equals sort -g | tail -n N on $f" top_matches_sort "$fixtures/$f"
done
check "top -n N equals sort -g | tail -n N with ties" top_matches_sort "$work/ties.txt"

# The static binary that goes into the test VM (build-static.sh, which
# make test-configs and test-debug without host tests run too).
static_bin="$CARGO_TARGET_DIR/$target/release/allocinfo"
check "static release build ($target)" "$here/build-static.sh"
echo "ALLOCINFO_BIN=$static_bin"

# 100,000 rows: top and diff must succeed within 100 MB (issue 20's memory
# budget).  The time is printed, not asserted: a timer on a loaded CI machine
# is not a test (the first make test run beside a kernel build failed it).
awk 'BEGIN {
	print "allocinfo - version: 1.0"
	print "#     <size>  <calls> <tag info>"
	for (i = 0; i < 100000; i++) {
		mod = i % 4 ? "" : sprintf(" [mod%d]", i % 50)
		printf "%12d %8d dir%d/sub%d/file%d.c:%d%s func:fn_%d \n", (i * 7919) % 5000 * 64, (i * 7919) % 5000, i % 40, i % 300, i % 5000, i, mod, i
	}
}' >"$work/big-a.txt"
# B: every third row 4 KiB larger (sizes fit their 12 columns, so the rest of the line stays put).
awk 'NR > 2 && NR % 3 == 0 { printf "%12d%s\n", $1 + 4096, substr($0, 13); next } { print }' \
	"$work/big-a.txt" >"$work/big-b.txt"
within_budget() {
	local out
	out=$( { /usr/bin/time -f '%x %e %M' "$static_bin" "$@" >/dev/null; } 2>&1 | tail -n 1)
	echo "$* on 100,000 rows: $out (exit status, seconds, KiB peak RSS)"
	awk -v r="$out" 'BEGIN { split(r, v, " "); exit !(v[1] == 0 && v[3] < 100 * 1024) }'
}
if [ -x /usr/bin/time ]; then
	check "top within 100 MB on 100,000 rows" within_budget top -i "$work/big-a.txt"
	check "diff within 100 MB on 100,000 rows" \
		within_budget diff "$work/big-a.txt" "$work/big-b.txt"
else
	echo "SKIP: 100,000-row budget not measured: no /usr/bin/time"
fi

# The package's man pages and completions (allocinfo-gen, cargo feature gen), as
# debian/rules makes them: each page renders without a groff or man warning
# and documents what --help says; each completion loads in its shell and
# completes a subcommand.
gen="$CARGO_TARGET_DIR/debug/allocinfo-gen"
check "cargo clippy --features gen" cargo clippy --locked --quiet --features gen --bin allocinfo-gen -- -D warnings
check "allocinfo-gen man and completions" bash -c '
	cargo build --locked --quiet --features gen --bin allocinfo-gen &&
	SOURCE_DATE_EPOCH=0 "$1" man "$2/man" > /dev/null && "$1" completions "$2/comp" > /dev/null' _ "$gen" "$work/gen"
man_clean() {
	local page=$1 w
	w=$( { groff -man -ww -z "$page"; LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" > /dev/null; } 2>&1)
	[ -z "$w" ] || { echo "$w"; return 1; }
}
pages=$(cd "$work/gen/man" 2>/dev/null && ls)
# One page per command: allocinfo, each subcommand, and capture's actions.
want_pages=$(
	"$bin" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ && $1 != "help" {print "allocinfo-" $1 ".1"} on && /^$/ {on = 0}'
	"$bin" capture --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ && $1 != "help" {print "allocinfo-capture-" $1 ".1"} on && /^$/ {on = 0}'
	echo allocinfo.1)
check "man pages: one per command ($(wc -w <<< "$want_pages"))" \
	bash -c '[ "$(sort <<< "$1")" = "$(sort <<< "$2")" ] || { echo "want:" $1; echo "got:" $2; exit 1; }' _ "$want_pages" "$pages"
for p in $pages; do
	check "man page $p renders without warnings (groff -ww, man --warnings)" man_clean "$work/gen/man/$p"
done
# The export page lists every --format value that export --help lists.
check "man allocinfo-export lists every export format of --help" bash -c '
	page=$(MANWIDTH=200 man -l "$1" 2>/dev/null)
	formats=$("$2" export --help | awk "/^  -f, --format/ {on = 1; next}
		on && /^  +-/ && !/^ +- [a-z]+:/ {on = 0} on && /^ +- [a-z]+:/ {sub(\":\", \"\", \$2); print \$2}")
	[ -n "$formats" ] || { echo "export --help lists no formats"; exit 1; }
	for f in $formats; do
		grep -q "$f:" <<< "$page" || { echo "no $f"; exit 1; }
	done' _ "$work/gen/man/allocinfo-export.1" "$bin"
check "bash completion: bash -n, loads, completes 'allocinfo exp' to export" bash -c '
	bash -n "$1" && bash -c "source \"\$1\"; complete -p allocinfo | grep -q \" _allocinfo allocinfo\$\";
		COMP_WORDS=(allocinfo exp); COMP_CWORD=1; COMP_LINE=\"allocinfo exp\"; COMP_POINT=13; _allocinfo allocinfo exp allocinfo;
		[ \"\${COMPREPLY[*]}\" = export ]" _ "$1"' _ "$work/gen/comp/bash/allocinfo"
if command -v zsh > /dev/null; then
	check "zsh completion: zsh -n, compinit registers _allocinfo for allocinfo" bash -c '
		zsh -n "$1/_allocinfo" &&
		[ "$(zsh -f -c "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; print -r -- \$_comps[allocinfo]")" = _allocinfo ]' _ "$work/gen/comp/zsh"
else
	fail "zsh completion: no zsh (setup.sh installs it)"
fi
if command -v fish > /dev/null; then
	check "fish completion: fish -n, completes 'allocinfo exp' to export" bash -c '
		fish -n "$1" && fish --no-config -c "source $1; complete -C \"allocinfo exp\"" | cut -f1 | grep -qx export' _ "$work/gen/comp/fish/allocinfo.fish"
else
	fail "fish completion: no fish (setup.sh installs it)"
fi

# The in-VM selftest, run here against fixtures with the static binary; each KTAP line counts.
if command -v busybox >/dev/null 2>&1; then sh_cmd="busybox sh"; else sh_cmd="sh"; fi
[ -f "$selftest" ] || fail "no $selftest: lay the patched tree first (make tree BASE=rust)"
for f in $valid; do
	ALLOCINFO_FILE="$fixtures/$f" ALLOCINFO_BIN="$static_bin" $sh_cmd "$selftest" >"$work/ktap" 2>&1
	while read -r line; do
		case "$line" in
		"ok "*"# SKIP"*) fail "selftest on $f: $line" ;;
		"ok "*) pass "selftest on $f: $line" ;;
		"not ok "*) fail "selftest on $f: $line" ;;
		esac
	done <"$work/ktap"
	grep -q '^1\.\.10$' "$work/ktap" || fail "selftest on $f: no KTAP plan"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
