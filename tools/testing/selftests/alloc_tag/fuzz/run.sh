#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# In the VM (make fuzz, tools/testing/allocprof/fuzz.sh): one run of the fuzz driver, its
# seed, seconds and left-out classes from the kernel command line
# (allocprof.fuzz_seed=, allocprof.fuzz_s=, allocprof.fuzz_x=; with
# allocprof.fuzz_cpu=1 CPUs go on and off line too), its KTAP
# between the markers tools/testing/allocprof/ktap.py reads.
arg() {
	for a in $(cat /proc/cmdline); do
		case $a in "$1"=*) echo "${a#*=}"; return;; esac
	done
}

seed=$(arg allocprof.fuzz_seed)
secs=$(arg allocprof.fuzz_s)
x=$(arg allocprof.fuzz_x)
cpu=$(arg allocprof.fuzz_cpu)
cd "$(dirname "$0")" || exit 1
echo "ALLOCPROF: selftest fuzz begin"
./fuzz ${cpu:+-c} -s "${seed:-1}" -t "${secs:-60}" ${x:+-x "$x"}
echo "ALLOCPROF: selftest fuzz exit $?"
