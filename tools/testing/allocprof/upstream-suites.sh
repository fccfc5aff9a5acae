#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-upstream-suites: upstream's own tests of the allocators, taken
# from the pristine 6.12 source at test time (nothing of them is in this
# repository), on our kernel and on upstream's: the allocator test modules
# (slub_kunit, test_meminit, test_free_pages, percpu_test, test_vmalloc,
# dmapool_test), built by each kernel's build from its source tree with
# tools/testing/allocprof/kernel-suites.config, and the tools/testing/selftests/mm programs
# of tools/testing/allocprof/upstream-suites/mm.list, built once from the pristine tree
# (CACHE_DIR/src) against its UAPI headers.  Boots (tools/testing/allocprof/vm.sh cmdboot):
# rust-suites main (page_ext) and compressed, upstream-suites main,
# rust-debug+suites main.  Every result that passes on upstream must pass
# on each of ours; a result upstream does not pass either is listed, not
# counted as ours failing.  Ends with "N passed, N failed, N skipped" and
# its time; exits non-zero on any failure.  Documentation/allocprof/test-real.md says why
# these tests, and which were left out.
#
# SUITES_BOOTS="rust-suites:main ..." picks boots (TARGET:NAME); the
# upstream boot is always run, as the reference.
set -uo pipefail
H=$(cd "$(dirname "$0")" && pwd)
: "${CACHE_DIR:?}" "${REPO:?}"
PRISTINE=${PRISTINE:?set by the top Makefile}
S=$CACHE_DIR/suites
boots=${SUITES_BOOTS:-rust-suites:main rust-suites:compressed rust-debug+suites:main}
t0=$(date +%s)
pass=0 fail=0 skip=0
failures=()
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); failures+=("$1"); echo "FAIL $1"; }
finish() {
	echo "== test-upstream-suites: $(( $(date +%s) - t0 ))s"
	if [ "$fail" -ne 0 ]; then
		echo "Failed checks:"
		printf '  %s\n' "${failures[@]}"
	fi
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
	exit
}

# 1. The mm selftests, from a copy of the pristine tree's tools/ (their
# Makefile writes its config probe into the source directory).
t=$(date +%s)
progs=$(grep -vE '^#|^$' "$H/upstream-suites/mm.list" | awk '{print $2}' | sort -u)
stamp=$(cat "$PRISTINE.version" "$H/upstream-suites/mm.list" 2>/dev/null | sha1sum | cut -c1-12)
if [ "$(cat "$S/mm-bin/.stamp" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$S/src" "$S/hdr" "$S/hdr-build" "$S/mm-bin"
	mkdir -p "$S/src/mm" "$S/src/scripts" "$S/mm-bin"
	cp -a "$PRISTINE/tools" "$S/src/" && cp "$PRISTINE/mm/gup_test.h" "$S/src/mm/" &&
		cp "$PRISTINE/scripts/subarch.include" "$S/src/scripts/" || { bad "mm selftests: copy of the pristine tools/"; finish; }
	if ! make -s -C "$PRISTINE" O="$S/hdr-build" INSTALL_HDR_PATH="$S/hdr" headers_install > "$S/hdr.log" 2>&1; then
		bad "mm selftests: headers_install (log: $S/hdr.log)"; finish
	fi
	make -k -s -C "$S/src/tools/testing/selftests/mm" OUTPUT="$S/mm-bin" CC=gcc LDFLAGS=-static \
		KHDR_INCLUDES="-isystem $S/hdr/include" $(for p in $progs; do echo "$S/mm-bin/$p"; done) > "$S/mm-build.log" 2>&1
	echo "$stamp" > "$S/mm-bin/.stamp"
fi
missing=
for p in $progs; do [ -x "$S/mm-bin/$p" ] || missing="$missing $p"; done
if [ -z "$missing" ]; then ok; else bad "mm selftests not built:$missing (log: $S/mm-build.log)"; fi
echo "mm selftests: $(wc -w <<< "$progs") programs from $PRISTINE ($(( $(date +%s) - t ))s)"

# The test modules each kernel builds from its own tree (pristine 6.12
# sources of lib/ and mm/: our overlay changes neither file).
KOS="lib/slub_kunit.ko lib/test_meminit.ko lib/test_free_pages.ko lib/percpu_test.ko lib/test_vmalloc.ko mm/dmapool_test.ko"

declare -A built=()
# build_one TARGET: its kernel (with the test modules), once.
build_one() {
	local target=$1 k
	[ -n "${built[$target]:-}" ] && return
	if ! make -s -C "$REPO" kernel BASE="$target"; then
		bad "build: $target"; built[$target]=no; return
	fi
	built[$target]=yes
	for k in $KOS; do
		if cmp -s "$PRISTINE/${k%.ko}.c" "$CACHE_DIR/${target%%-*}/src/${k%.ko}.c"; then ok; else
			bad "$target: ${k%.ko}.c differs from the pristine source"; fi
	done
}

# boot TARGET NAME APPEND: one boot, its SUITE: lines in $S/TARGET-NAME.res.
boot_one() {
	local target=$1 name=$2 append=$3 w=$CACHE_DIR/$1 tb
	tb=$(date +%s)
	build_one "$target"
	[ "${built[$target]}" = yes ] || return
	local extra=$w/suites-extra
	rm -rf "$extra"
	mkdir -p "$extra/modules" "$extra/mm"
	cp "$H/upstream-suites/run.sh" "$extra/"
	grep -vE '^#|^$' "$H/upstream-suites/mm.list" > "$extra/mm/list"
	for k in $KOS; do cp "$w/build/$k" "$extra/modules/" 2>/dev/null || bad "$target: $k not built"; done
	for p in $progs; do cp "$S/mm-bin/$p" "$extra/mm/" 2>/dev/null; done
	# The boot's bound and each mm program's (allocprof_suites_bound=)
	# only stop a hang: a program that ends passes whatever it took.
	# Under load (another VM, a kernel build) run 2's uffd-unit-tests
	# passed the old 300 s bound on rust-suites; on the debug kernel KASAN
	# and lockdep under TCG make each program several times slower.
	# split_huge_page_test took 2301 s of the debug boot's old 2400 s in
	# run 3 (4 million write(2) calls under KASAN and lockdep on TCG).
	local timeout=2400 a_bound=900
	case $target in *debug*) timeout=10800 a_bound=4800 ;; esac
	# Only upstream's slub_test of KUnit (not the built-in suites).
	# init_on_alloc=1, Debian's default (INIT_ON_ALLOC_DEFAULT_ON): what
	# test_meminit checks (without it or init_on_free its page tests fail
	# by design).  The debug config builds kmemleak in, which stays off as
	# in make test.
	local a="kunit.filter_glob=slub_test init_on_alloc=1 allocprof_suites_bound=$a_bound"
	# On the debug kernels uffd-unit-tests runs with THP off: its events
	# tests fail there with THP on ("memory corruption 0 1", then a hang
	# until the bound) on upstream's debug build as on ours, now and then
	# and more under load, and pass with THP off on both
	# (Documentation/allocprof/test-real.md, "uffd-unit-tests on the debug kernels").  The
	# other boots run it with THP on (always, as Debian's config).
	case $target in *debug*) a="$a kmemleak=off allocprof_suites_uffd_thp=never" ;; esac
	BASE=${target%%-*} W=$w OUT=$w/build SRC=$CACHE_DIR/${target%%-*}/src BOOT_TIMEOUT=$timeout \
		"$H/vm.sh" cmdboot "suites-$name" "$a $append" "$extra"
	local log=$w/logs/suites-$name.log
	tr -d '\r' < "$log" | sed -n 's/^SUITE: //p' > "$S/$target-$name.res"
	if tr -d '\r' < "$log" | grep -q '^SUITES: end'; then ok; else
		bad "$target $name: the run did not end ($(tr -d '\r' < "$log" | grep -m1 -E 'ALLOCPROF-HOST: timeout|Kernel panic|Oops' || echo 'no end line'); log: $log)"; fi
	tr -d '\r' < "$log" | grep -E '^SUITES: ' | grep -vE '^SUITES: (end|  )' | sed "s/^SUITES: /  $target $name: /"
	echo "boot $target $name: $(grep -c '^pass ' "$S/$target-$name.res") pass, $(grep -c '^fail ' "$S/$target-$name.res") fail, $(grep -c '^skip ' "$S/$target-$name.res") skip ($(( $(date +%s) - tb ))s, log: $log)"
}

append_of() {
	case $1 in
	main) echo "" ;;
	compressed) awk -F'|' '$1 == "mode" && $2 == "compressed" {print $3}' "$REPO/tools/testing/allocprof/matrix" ;;
	*) echo "unknown" ;;
	esac
}

# Every kernel first: a build failure shows before the boots, and the
# builds (which lock the source tree) are over before the first boot.
build_one upstream-suites
for b in $boots; do build_one "${b%%:*}"; done
boot_one upstream-suites main ""
for b in $boots; do
	boot_one "${b%%:*}" "${b#*:}" "$(append_of "${b#*:}")"
done

# Whether the uffd-unit-tests run of boot log $1 failed in its events tests
# (events, events-wp: a forked child's uffd racing mremap) and nowhere else.
uffd_events_only() {
	local errs
	errs=$(tr -d '\r' < "$1" | sed -n '/^SUITE: fail mm\/uffd-unit-tests /,/^SUITE: /p' |
		grep -E '^SUITES:   .*ERROR')
	[ -n "$errs" ] && ! grep -vqE '^SUITES:   Testing events(-wp)? on [a-z-]+\.\.\. ERROR' <<< "$errs"
}

# 2. The comparison: every result upstream passes must pass on ours.
ref=$S/upstream-suites-main.res
echo "Per suite, passed (of the results) on each boot:"
suites=$(awk '{split($2, a, "/"); print a[1]}' "$ref" | sort -u)
printf '  %-22s' suite; for f in "$ref" $(for b in $boots; do echo "$S/${b%%:*}-${b#*:}.res"; done); do printf ' %22s' "$(basename "$f" .res)"; done; echo
for s in $suites; do
	printf '  %-22s' "$s"
	for f in "$ref" $(for b in $boots; do echo "$S/${b%%:*}-${b#*:}.res"; done); do
		[ -f "$f" ] || { printf ' %22s' -; continue; }
		printf ' %22s' "$(awk -v s="$s/" 'index($2, s) == 1 {n++; if ($1 == "pass") p++} END {printf "%d/%d", p, n}' "$f")"
	done
	echo
done
while read -r st name rest; do
	if [ "$st" != pass ]; then
		skip=$((skip + 1))
		echo "not passed on upstream either ($st): $name${rest:+ ($rest)}"
		continue
	fi
	ok
	for b in $boots; do
		f=$S/${b%%:*}-${b#*:}.res
		[ -f "$f" ] || continue
		got=$(awk -v n="$name" '$2 == n {print $1; exit}' "$f")
		if [ "$got" = pass ]; then
			ok
		elif [ "$got" = fail ] && [ "$name" = mm/uffd-unit-tests ] &&
			[[ ${b%%:*} == *debug* ]] && uffd_events_only "$CACHE_DIR/${b%%:*}/logs/suites-${b#*:}.log"; then
			# Upstream's debug build of the same config fails these
			# tests too: 3 of 6 rounds of the events tests alone with
			# THP off, beside ours' 1 of 6 (Documentation/allocprof/test-real.md,
			# "uffd-unit-tests on the debug kernels"); the reference
			# boot is not a debug build, so it cannot judge them.
			skip=$((skip + 1))
			echo "not judged on ${b%%:*} ${b#*:}: $name failed in its events tests only, as upstream's debug build does"
		elif [ -z "$got" ] && grep -q "^pass ${name%%/*}/ran_its_plan" "$f"; then
			# The suite ran every test this kernel's build of it has:
			# its source leaves this one out under this config
			# (slub_kunit's three under KASAN).
			skip=$((skip + 1))
			echo "not in ${b%%:*}'s build of the suite: $name"
		else
			bad "${b%%:*} ${b#*:}: $name: ${got:-missing} (passes on upstream)"
		fi
	done
done < "$ref"
for b in $boots; do
	f=$S/${b%%:*}-${b#*:}.res
	[ -f "$f" ] || continue
	awk 'NR == FNR {u[$2] = $1; next} $1 == "pass" && u[$2] != "pass" {print "  passes here, not on upstream:", $2}' "$ref" "$f" | sed "s/^/  ${b%%:*} ${b#*:}:/"
done
finish
