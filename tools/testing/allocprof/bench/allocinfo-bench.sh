#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-tool: wall time and peak memory of the allocinfo tool on large inputs.
#
# Builds tools/allocinfo with cargo --release, writes ROWS-row /proc/allocinfo files with
# allocinfo-gen.py (a machine and the same machine later), then runs top, diff and export
# (pprof, openmetrics, csv) under /usr/bin/time -v, REPEAT times each, and prints a Markdown
# table: the median wall and CPU (user + system) times and the largest maximum RSS of the runs.
# A last row reads a file of twice the rows (over 64 MiB). A benchmark, not a test: nothing is
# asserted, a command that fails is reported with its exit code and first error line.
#
#   ROWS=1000000 SEED=1 REPEAT=3 OUT=dir ALLOCINFO=path/to/binary (skips the build; COMMIT=text
#   says what it was built from)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/allocprof}
ROWS=${ROWS:-1000000}
SEED=${SEED:-1}
REPEAT=${REPEAT:-3}
OUT=${OUT:-$CACHE_DIR/bench-tool}
mkdir -p "$OUT" || exit 1

[ -x /usr/bin/time ] || { echo "bench-tool: /usr/bin/time is missing (Debian package time)"; exit 1; }

if [ -z "${ALLOCINFO:-}" ]; then
	# The target directory host-test.sh uses for this checkout.
	tool=$repo/tools/allocinfo
	export CARGO_TARGET_DIR="$CACHE_DIR/allocinfo-target-$(printf '%s' "$tool" | cksum | cut -d' ' -f1)"
	(cd "$tool" && cargo build --release --locked --quiet) ||
		{ echo "bench-tool: cargo build --release failed"; exit 1; }
	ALLOCINFO=$CARGO_TARGET_DIR/release/allocinfo
fi

# Inputs, made again only when the generator or its arguments changed.
gen=$here/allocinfo-gen.py
stamp=$(cat "$gen" | cksum | cut -d' ' -f1)-$ROWS-$SEED
make_input() { # name, generator arguments...
	local f=$OUT/$1
	shift
	if [ "$(cat "$f.stamp" 2>/dev/null)" != "$stamp $*" ]; then
		python3 "$gen" --seed "$SEED" "$@" > "$f.tmp" && mv "$f.tmp" "$f" &&
			echo "$stamp $*" > "$f.stamp" || { echo "bench-tool: generating $f failed"; exit 1; }
	fi
}
make_input before.txt --rows "$ROWS"
make_input after.txt --rows "$ROWS" --after
make_input double.txt --rows $((ROWS * 2))

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# One command, REPEAT runs: "wall_s cpu_s rss_mib exit": the median wall time, the median CPU
# time (user + system: on a shared machine the wall time includes waiting for a CPU), the
# largest maximum RSS.
measure() {
	local walls=() cpus=() rss=0 code=0 i r log=$OUT/time.log
	for ((i = 0; i < REPEAT; i++)); do
		/usr/bin/time -v "$ALLOCINFO" "$@" > /dev/null 2> "$log"
		code=$(sed -n 's/^\s*Exit status: //p' "$log")
		[ "$code" = 0 ] || { grep -v '^\s' "$log" | head -n 1 > "$OUT/error.txt"; break; }
		walls+=("$(sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log" |
			awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')")
		cpus+=("$(awk -F': ' '/^[ \t]*(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$log")")
		r=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$log")
		((r > rss)) && rss=$r
	done
	if [ "$code" != 0 ]; then
		echo "- - - $code"
		return
	fi
	echo "$(printf '%s\n' "${walls[@]}" | median) $(printf '%s\n' "${cpus[@]}" | median)" \
		"$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }') 0"
}

size_mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1e6 }'; }
rows_of() { echo $(($(wc -l < "$1") - 2)); }

b=$OUT/before.txt a=$OUT/after.txt d=$OUT/double.txt
echo "allocinfo $("$ALLOCINFO" --version 2>/dev/null | awk '{ print $2 }'), ${COMMIT:-commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
echo "inputs: before.txt $(rows_of "$b") rows $(size_mb "$b") MB, after.txt $(rows_of "$a") rows $(size_mb "$a") MB, double.txt $(rows_of "$d") rows $(size_mb "$d") MB (seed $SEED); median of $REPEAT runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| command | wall s | CPU s | max RSS MiB | exit |"
echo "|---|---|---|---|---|"
run() { # label, arguments...
	local label=$1 m wall cpu rss code note=""
	shift
	m=$(measure "$@")
	read -r wall cpu rss code <<< "$m"
	[ "$code" != 0 ] && note=" ($(cut -c1-100 "$OUT/error.txt"))"
	echo "| \`$label\` | $wall | $cpu | $rss | $code$note |"
}
run "top -i before.txt" top -i "$b"
run "diff before.txt after.txt" diff "$b" "$a"
run "export -f pprof -i before.txt" export -f pprof -i "$b"
run "export -f openmetrics -i before.txt" export -f openmetrics -i "$b"
run "export -f csv -i before.txt" export -f csv -i "$b"
run "top -i double.txt" top -i "$d"
