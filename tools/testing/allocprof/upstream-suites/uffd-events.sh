#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# A diagnostic boot, not part of any target: uffd-unit-tests' events tests
# (`-f events`: events and events-wp on every memory type) in rounds, one
# boot (Documentation/allocprof/test-real.md, "uffd-unit-tests on the debug kernels").
# Kernel arguments: allocprof_uffd_n=ROUNDS (10), allocprof_uffd_thp=
# always|madvise|never (the kernel's default if unset).  Lay it out as
#   DIR/run.sh (this file)  DIR/mm/uffd-unit-tests (CACHE_DIR/suites/mm-bin)
# and boot it with, for the debug kernel of BASE (rust or upstream):
#   BASE=rust W=$CACHE_DIR/rust-debug+suites OUT=$CACHE_DIR/rust-debug+suites/build \
#   SRC=$CACHE_DIR/rust/src REPO=. BOOT_TIMEOUT=2400 tools/testing/allocprof/vm.sh cmdboot uffd \
#   "kunit.enable=0 kmemleak=off init_on_alloc=1 allocprof_uffd_n=3" DIR
# (TCG_THREAD=single for one TCG thread); lines UFFD: in W/logs/uffd.log.
cd /extra
mount -t debugfs none /sys/kernel/debug 2>/dev/null
echo 32 > /proc/sys/vm/nr_hugepages
n=10 thp=
for a in $(cat /proc/cmdline); do case $a in
	allocprof_uffd_n=*) n=${a#*=} ;;
	allocprof_uffd_thp=*) thp=${a#*=} ;;
	esac; done
[ -n "$thp" ] && echo "$thp" > /sys/kernel/mm/transparent_hugepage/enabled
echo "UFFD: begin $(uname -r) rounds=$n thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled) profiling=$(cat /proc/sys/vm/mem_profiling 2>/dev/null)"
i=0
while [ $i -lt "$n" ]; do
	i=$((i + 1))
	t0=$(date +%s)
	# 400 s: a round that fails hangs after its error line.
	(cd /tmp && timeout 400 /extra/mm/uffd-unit-tests -f events) > /tmp/uffd.out 2>&1
	rc=$?
	echo "UFFD: round $i exit $rc $(( $(date +%s) - t0 ))s: $(grep -E 'Userfaults unit tests' /tmp/uffd.out)"
	grep -E "ERROR|corruption|fail" /tmp/uffd.out | grep -v 'fail=' | head -n 5 | sed 's/^/UFFD:   /'
	echo "UFFD:   $(grep -c 'done$' /tmp/uffd.out) done: $(grep -oE 'Testing [a-z-]+ on [a-z-]+\.\.\. done' /tmp/uffd.out | sed 's/Testing //; s/\.\.\. done//' | tr '\n' ',')"
done
dmesg | grep -E "WARNING:|BUG:|KASAN|Oops" | head -n 5 | sed 's/^/UFFD: /'
echo "UFFD: end"
