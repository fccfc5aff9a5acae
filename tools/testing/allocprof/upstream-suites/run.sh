#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make test-upstream-suites, in the busybox guest (cmd mode, /extra): load
# upstream's allocator test modules of 6.12 (built from the pristine source
# of the kernel under test, in /extra/modules) and run the mm selftests
# (built from the pristine source, in /extra/mm).  One line per result:
#   SUITE: pass|fail|skip SUITE/TEST [detail]
# The host (tools/testing/allocprof/upstream-suites.sh) compares them between kernels.
cd /extra
# The tests' info lines stay in the log (read with dmesg), off the console
# that carries the results; warnings and worse still reach it.
echo 5 > /proc/sys/kernel/printk
res() { echo "SUITE: $1 $2${3:+ $3}"; }
mod_dmesg() { dmesg | sed 's/^\[[^]]*\] //'; }
# rows MOD: the rows /proc/allocinfo still has for module MOD that are not
# 0 bytes / 0 calls (its allocations must be freed once it is gone).
rows() { awk -v m="[$1]" 'NR > 2 && $4 == m && ($1 != 0 || $2 != 0)' /proc/allocinfo 2>/dev/null; }
reports() { grep -E 'WARNING:|BUG:|Oops|KASAN|general protection|kernel BUG|UBSAN' "$1" | head -n 3; }

# load MOD [PARAMS]: insmod with the log of that load alone in /tmp/MOD.log;
# then the module must be gone (it unloads itself by failing its init, or
# is removed here), with no report and no row left.
load() {
	m=$1; shift
	dmesg -c > /dev/null
	insmod "modules/$m.ko" "$@" > /tmp/$m.insmod 2>&1
	echo $? > /tmp/$m.rc
	[ -d "/sys/module/$m" ] && rmmod "$m"
	mod_dmesg > /tmp/$m.log
	r=$(reports /tmp/$m.log)
	if [ -z "$r" ]; then res pass "$m/no_kernel_report"; else res fail "$m/no_kernel_report" "$(echo $r | head -c 200)"; fi
	# A row may stay if its allocations are alive (the test leaks on
	# purpose) and the kernel named its site at the unload: ours "FILE:LINE
	# [MOD] ... alive at module unload", upstream "FILE:LINE module MOD ...
	# allocated at module unload".
	left=$(rows "$m" | while read -r b c site rest; do
		grep -F "$site" /tmp/$m.log | grep -q 'at module unload' || echo "$b $c $site $rest"; done)
	if [ -z "$left" ]; then res pass "$m/rows_drained_after_unload"; else res fail "$m/rows_drained_after_unload" "$(echo $left | head -c 200)"; fi
}

echo "SUITES: begin $(uname -r) mem_profiling=$(cat /proc/sys/vm/mem_profiling 2>/dev/null) compressed=$(cat /proc/sys/vm/mem_profiling_compressed 2>/dev/null || echo none)"
dmesg | grep -E 'alloc_tag: Rust core|compressed page tags|page_ext' | head -n 3 | sed 's/^\[[^]]*\] /SUITES: /'

# 1. KUnit: slub_kunit (the slab allocator's error detection, on caches
# with debugging on).  Each test of the suite is a result.
if [ -f modules/slub_kunit.ko ]; then
	load slub_kunit
	grep -qE '# Subtest: slub_test' /tmp/slub_kunit.log || res fail slub_kunit/suite_ran "no KTAP output"
	grep -E '^    (not )?ok [0-9]+ ' /tmp/slub_kunit.log | while read -r a b c d; do
		case "$a $b" in
		"not ok") res fail "slub_kunit/$(echo $d | cut -d' ' -f1)" ;;
		*) t=$(echo "$c" | cut -d' ' -f1)
		   case "$d" in *"# SKIP"*) res skip "slub_kunit/$t" ;; *) res pass "slub_kunit/$t" ;; esac ;;
		esac
	done
	grep -m1 -E '# slub_test: pass:' /tmp/slub_kunit.log | sed 's/^ */SUITES: /'
	# Every test of the suite's plan has a result (no crash midway).
	plan=$(sed -n '/# Subtest: slub_test/,$p' /tmp/slub_kunit.log | grep -m1 -E '^    1\.\.[0-9]+$' | sed 's/.*\.\.//')
	got=$(grep -cE '^    (not )?ok [0-9]+ ' /tmp/slub_kunit.log)
	if [ -n "$plan" ] && [ "$plan" = "$got" ]; then res pass slub_kunit/ran_its_plan "$got of $plan"; else res fail slub_kunit/ran_its_plan "$got of ${plan:-no plan}"; fi
else
	res fail slub_kunit/built "no module"
fi

# 2. test_meminit: page, kvmalloc, kmem_cache and RCU cache allocations.
load test_meminit
if [ "$(cat /tmp/test_meminit.rc)" = 0 ] && grep -qE 'test_meminit: all [0-9]+ tests passed' /tmp/test_meminit.log; then
	res pass test_meminit/all "$(grep -m1 -oE 'all [0-9]+ tests passed' /tmp/test_meminit.log)"
else
	res fail test_meminit/all "$(grep -m1 -E 'test_meminit: ' /tmp/test_meminit.log)"
fi

# 3. test_free_pages: freeing high-order pages against a speculative
# reference (a leak would show in MemFree).
free0=$(awk '/^MemFree:/ {print $2}' /proc/meminfo)
load test_free_pages
free1=$(awk '/^MemFree:/ {print $2}' /proc/meminfo)
if grep -q 'test_free_pages: Test completed' /tmp/test_free_pages.log && [ "$(cat /tmp/test_free_pages.rc)" = 0 ]; then
	res pass test_free_pages/completed
else
	res fail test_free_pages/completed
fi
# The test allocates and frees order-3 pages a million times each way: the
# leak it looks for is gigabytes (its Kconfig help); 256 MiB is far below
# that and far above what the per-CPU page lists and caches hold.
if [ $((free0 - free1)) -lt 262144 ]; then res pass test_free_pages/no_leak "MemFree $free0 -> $free1 kB"; else res fail test_free_pages/no_leak "MemFree $free0 -> $free1 kB"; fi

# 4. percpu_test: per-CPU operations on per-CPU allocations (it fails its
# init on purpose, so that it unloads; a wrong value is a WARN).
load percpu_test
if grep -q 'percpu test done' /tmp/percpu_test.log; then res pass percpu_test/done; else res fail percpu_test/done; fi

# 5. test_vmalloc: every test case, two threads, 2000 loops (the default
# million does not finish under TCG).  align_shift_alloc_test fails by
# design (its source says so): upstream fails it too.
load test_vmalloc nr_threads=2 test_loop_count=2000 test_repeat_count=1
for t in $(grep -oE 'Summary: [a-z0-9_]+ ' /tmp/test_vmalloc.log | awk '{print $2}' | sort -u); do
	f=$(grep -E "Summary: $t passed: [0-9]+ failed: [0-9]+" /tmp/test_vmalloc.log | sed -E 's/.*failed: ([0-9]+).*/\1/' | awk '{s += $1} END {print s + 0}')
	p=$(grep -E "Summary: $t passed: [0-9]+ failed: [0-9]+" /tmp/test_vmalloc.log | sed -E 's/.*passed: ([0-9]+).*/\1/' | awk '{s += $1} END {print s + 0}')
	if [ "$f" = 0 ] && [ "$p" -gt 0 ]; then res pass "test_vmalloc/$t"; else res fail "test_vmalloc/$t" "passed $p failed $f"; fi
done
grep -q 'Summary: ' /tmp/test_vmalloc.log || res fail test_vmalloc/ran "no summary"

# 6. dmapool_test: dma_pool blocks of each size and alignment.
load dmapool_test
if [ "$(cat /tmp/dmapool_test.rc)" = 0 ] && grep -q 'dmapool test: size' /tmp/dmapool_test.log; then
	res pass dmapool_test/all "$(grep -c 'dmapool test: size' /tmp/dmapool_test.log) sizes"
else
	res fail dmapool_test/all "insmod exit $(cat /tmp/dmapool_test.rc): $(head -c 200 /tmp/dmapool_test.insmod)"
fi

# 7. tools/testing/selftests/mm: the kselftest exit status (0 pass, 4
# skip), each under a bound.  hugetlb tests get 32 huge pages.
# Each program's bound (a hang guard): allocprof_suites_bound= (set by
# tools/testing/allocprof/upstream-suites.sh, longer on the debug kernel).
bound=300 uffd_thp=
for a in $(cat /proc/cmdline); do case $a in
	allocprof_suites_bound=*) bound=${a#*=} ;;
	allocprof_suites_uffd_thp=*) uffd_thp=${a#*=} ;;
	esac; done
thp_file=/sys/kernel/mm/transparent_hugepage/enabled
thp_default=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp_file" 2>/dev/null)
echo 32 > /proc/sys/vm/nr_hugepages
echo "SUITES: nr_hugepages $(cat /proc/sys/vm/nr_hugepages), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages 2>/dev/null
mount -t debugfs none /sys/kernel/debug 2>/dev/null
while read -r name args; do
	[ -n "$name" ] || continue
	prog=${args%% *}
	[ -x "mm/$prog" ] || { res fail "mm/$name" "not built"; continue; }
	# hugepage-mmap and map_hugetlb map 256 MiB of huge pages: 128 of
	# them while they run, 32 for the others.
	case $name in
	hugepage-mmap|map_hugetlb) echo 128 > /proc/sys/vm/nr_hugepages ;;
	*) echo 32 > /proc/sys/vm/nr_hugepages ;;
	esac
	# allocprof_suites_uffd_thp=: uffd-unit-tests' THP setting (the
	# debug boots: tools/testing/allocprof/upstream-suites.sh says why), the others'
	# stays the kernel's default.
	thp=$thp_default
	[ "$name" = uffd-unit-tests ] && [ -n "$uffd_thp" ] && thp=$uffd_thp
	[ -n "$thp" ] && echo "$thp" > "$thp_file"
	[ "$thp" = "$thp_default" ] || echo "SUITES: $name with THP $(cat "$thp_file")"
	dmesg -c > /dev/null
	t0=$(date +%s)
	(cd /tmp && timeout "$bound" /extra/mm/$args) > /tmp/mm.out 2>&1
	rc=$?
	tot=$(grep -m1 -E '^# Totals:' /tmp/mm.out)
	mod_dmesg > /tmp/mm.dmesg
	r=$(reports /tmp/mm.dmesg)
	case $rc in
	0) if [ -z "$r" ]; then res pass "mm/$name" "$(( $(date +%s) - t0 ))s $tot"; else res fail "mm/$name" "kernel report: $(echo $r | head -c 150)"; fi ;;
	4) res skip "mm/$name" "$tot $(grep -m1 -iE 'skip' /tmp/mm.out | head -c 120)" ;;
	*) res fail "mm/$name" "exit $rc $(( $(date +%s) - t0 ))s $tot"
	   # awk ends every line, the last one of a program killed mid-line
	   # too (with sed, the next result line was glued to it and lost).
	   { grep -E '^not ok|FAIL|fail|rror' /tmp/mm.out || tail -n 4 /tmp/mm.out; } | head -n 5 | awk '{print "SUITES:   " $0}' ;;
	esac
done < mm/list

# 8. After everything: no row negative or wrapped.
bad=$(awk 'NR > 2 && ($1 < 0 || $2 < 0 || $1 > 4611686018427387904 || $2 > 4611686018427387904)' /proc/allocinfo)
if [ -z "$bad" ]; then res pass allocinfo/rows_not_negative_or_wrapped; else res fail allocinfo/rows_not_negative_or_wrapped "$(echo $bad | head -c 200)"; fi
echo "SUITES: end"
