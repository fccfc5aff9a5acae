#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make deb: our config against Debian's.
#
# usage: check-config.sh DEBIAN_CONFIG OUR_CONFIG FRAGMENT
#
# FRAGMENT is tools/testing/allocprof/linux-6.12/debian.config.  Checks that
#  - every symbol FRAGMENT sets has that value in OUR_CONFIG (olddefconfig
#    kept it; "# CONFIG_X is not set" means off or absent), and
#  - every symbol DEBIAN_CONFIG has keeps Debian's value in OUR_CONFIG,
#    unless FRAGMENT sets it or names it on a "# derived: SYM..." line
#    (what follows from the fragment's changes: MODVERSIONS takes
#    ASM_MODVERSIONS with it).
# Symbols only OUR_CONFIG has come with the new options (Rust, the
# profiler) and are allowed.  Prints the whole difference in diffconfig's
# form ("-SYM old", "+SYM new", " SYM old -> new") on stdout; what is
# wrong on stderr, and exits 1 if anything is.
set -euo pipefail
[ $# = 3 ] || { echo "usage: $0 DEBIAN_CONFIG OUR_CONFIG FRAGMENT" >&2; exit 2; }
for f in "$@"; do
	[ -r "$f" ] || { echo "check-config: cannot read $f" >&2; exit 2; }
done
awk '
function parse(line, file,    m) {
	if (match(line, /^CONFIG_[A-Za-z0-9_]+=/)) {
		sym = substr(line, 8, RLENGTH - 8)
		val = substr(line, RLENGTH + 1)
		return 1
	}
	if (line ~ /^# CONFIG_[A-Za-z0-9_]+ is not set$/) {
		sym = line; sub(/^# CONFIG_/, "", sym); sub(/ is not set$/, "", sym)
		val = "n"
		return 1
	}
	return 0
}
FILENAME == ARGV[1] { if (parse($0)) { deb[sym] = val; if (!(sym in dorder)) dorder[sym] = ++nd; dsym[nd] = sym }; next }
FILENAME == ARGV[2] { if (parse($0)) { our[sym] = val; if (!(sym in oorder)) oorder[sym] = ++no; osym[no] = sym }; next }
FILENAME == ARGV[3] {
	if ($0 ~ /^# derived:/) { for (i = 3; i <= NF; i++) derived[$i] = 1; next }
	if (parse($0)) { want[sym] = val; if (!(sym in worder)) worder[sym] = ++nw; wsym[nw] = sym }
	next
}
END {
	bad = 0
	for (i = 1; i <= nw; i++) {
		s = wsym[i]
		if (want[s] == "n") {
			if ((s in our) && our[s] != "n") { print "check-config: CONFIG_" s " must be off, is " our[s] > "/dev/stderr"; bad = 1 }
		} else if (!(s in our) || our[s] != want[s]) {
			print "check-config: CONFIG_" s "=" want[s] " did not survive olddefconfig (" ((s in our) ? our[s] : "absent") ")" > "/dev/stderr"; bad = 1
		}
	}
	for (i = 1; i <= nd; i++) {
		s = dsym[i]
		if ((s in our) && our[s] == deb[s]) continue
		if (s in our) print " " s " " deb[s] " -> " our[s]; else print "-" s " " deb[s]
		if (!(s in want) && !(s in derived)) {
			print "check-config: CONFIG_" s " changed from Debian'"'"'s " deb[s] " to " ((s in our) ? our[s] : "absent") ", which debian.config does not list" > "/dev/stderr"
			bad = 1
		}
	}
	for (i = 1; i <= no; i++) {
		s = osym[i]
		if (!(s in deb)) print "+" s " " our[s]
	}
	exit bad
}' "$1" "$2" "$3"
