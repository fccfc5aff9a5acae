#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-real, inside the Debian guest: the checks of one boot, run by
# allocprof-real.service once multi-user.target is reached.  Results go to
# the serial console as KTAP-style "ok N name" / "not ok N name" lines with
# "# " diagnostics, then the guest powers off.
#
# The kernel command line says what this boot is:
#   allocprof_real=main|compressed|never   the profiling mode asked for
#   allocprof_real_s=N                      seconds of workload (default 120)
#   allocprof_real_rounds=N                 unload/reload rounds (default 3)
#   allocprof_real_nopoweroff               stay up (debugging by hand)
set -uo pipefail

out=/var/log/allocprof-real.log
exec > >(tee "$out" > /dev/ttyS0) 2>&1

arg() {
	local a
	for a in $(cat /proc/cmdline); do
		case $a in "$1="*) echo "${a#*=}"; return;; esac
	done
	echo "$2"
}
mode=$(arg allocprof_real main)
secs=$(arg allocprof_real_s 120)
rounds=$(arg allocprof_real_rounds 3)
t0=$(date +%s)
work=/var/tmp/allocprof-real
rm -rf "$work"
mkdir -p "$work"
# What the checks themselves write (stress-ng's output and exit statuses,
# the samples) goes to a tmpfs: a root that fills must not lose the verdict.
st=/run/allocprof-real
mkdir -p "$st"

n=0 npass=0 nfail=0
ok() { n=$((n + 1)); npass=$((npass + 1)); echo "ok $n $1"; }
notok() { n=$((n + 1)); nfail=$((nfail + 1)); echo "not ok $n $1"; }
# check NAME CMD...: ok if CMD succeeds; its output as diagnostics if not.
check() {
	local name=$1 o
	shift
	if o=$("$@" 2>&1); then
		ok "$name"
	else
		notok "$name"
		sed 's/^/# /' <<< "$o" | head -n 20
	fi
}
diag() { echo "# $*"; }
modules() { awk '{print $1}' /proc/modules | sort; }

echo "TAP version 13"
diag "allocprof-real: mode $mode, ${secs}s of workload, $rounds unload/reload rounds, kernel $(uname -r)"

# 0. The image has every program the checks below run: one missing would
# only show as a check of its class failing for another reason, or as a
# fallback (the filesystem class on the root) that hides it.
missing=
for c in mkfs.ext4 mkfs.xfs mkfs.btrfs mksquashfs dmsetup losetup ip nft stress-ng hackbench sysctl modprobe udevadm blockdev; do
	command -v "$c" > /dev/null || missing="$missing $c"
done
if [ -z "$missing" ]; then ok userspace_tools; else notok userspace_tools; diag "not in the image:$missing"; fi

# 1. systemd and udev.
udevadm settle --timeout=120
check multi_user_reached systemctl is-active multi-user.target
failed=$(systemctl list-units --failed --plain --no-legend 2>&1 | awk '{print $1}')
if [ -z "$failed" ]; then ok no_failed_units; else notok no_failed_units; diag "failed: $failed"; fi
boot_mods=$(modules)
diag "udev and systemd loaded $(wc -l <<< "$boot_mods") modules: $(echo $boot_mods)"
# The devices QEMU gives the guest (tools/testing/allocprof/real.sh) have drivers that are
# modules; udev must have loaded them by their modaliases.
missing=
for m in virtio_net virtio_rng virtio_balloon virtio_scsi bochs i2c_piix4 qemu_fw_cfg; do
	grep -qx "$m" <<< "$boot_mods" || missing="$missing $m"
done
if [ -z "$missing" ] && [ "$(wc -l <<< "$boot_mods")" -ge 20 ]; then
	ok udev_loaded_modules
else
	notok udev_loaded_modules
	diag "missing:${missing:-none}; $(wc -l <<< "$boot_mods") loaded (at least 20 expected)"
fi

# 2. The profiling mode asked for.
prof=$(cat /proc/sys/vm/mem_profiling 2>/dev/null || echo missing)
comp=$(cat /proc/sys/vm/mem_profiling_compressed 2>/dev/null || echo missing)
diag "vm.mem_profiling=$prof vm.mem_profiling_compressed=$comp; $(dmesg | grep -m1 'alloc_tag: Rust core' | sed 's/^\[[^]]*\] //')"
case $mode in
main)
	if [ "$prof" = 1 ] && [ "$comp" = 0 ]; then ok profiling_on_page_ext; else notok profiling_on_page_ext; fi ;;
compressed)
	# Debian's page-flag budget has no room for the tag index.
	# Not "dmesg | grep -q": grep leaves at the first match, dmesg then
	# dies of SIGPIPE and, under pipefail, the check failed although the
	# line was there (run 6's compressed boot).
	if [ "$prof" = 1 ] && [ "$comp" = 0 ] && grep -q 'compressed page tags do not fit' <<< "$(dmesg)"; then
		ok compressed_falls_back_to_page_ext
	else
		notok compressed_falls_back_to_page_ext
	fi ;;
never)
	if [ "$prof" = 0 ] && ! sysctl -q -w vm.mem_profiling=1 2>/dev/null &&
		[ "$(cat /proc/sys/vm/mem_profiling)" = 0 ]; then
		ok never_stays_off
	else
		notok never_stays_off
	fi ;;
esac

# 3. Use the server modules as their users would: each mount, device or
# ruleset below makes the kernel load its modules (request_module), as on
# a real system.  Then take it all down again, so that they can be
# unloaded.
loopdev() { truncate -s "$2" "$work/$1.img" && losetup -f --show "$work/$1.img"; }
use_xfs() {
	local d
	d=$(loopdev xfs 320M) || return 1
	mkfs.xfs -q "$d" && mkdir -p "$work/xfs" && mount -t xfs "$d" "$work/xfs" &&
		cp -a /usr/lib/modules "$work/xfs/" && sync && umount "$work/xfs" && losetup -d "$d"
}
use_btrfs() {
	local d
	d=$(loopdev btrfs 256M) || return 1
	mkfs.btrfs -q -f "$d" && mkdir -p "$work/btrfs" && mount -t btrfs -o compress=zstd "$d" "$work/btrfs" &&
		btrfs subvolume create "$work/btrfs/sub" >/dev/null && cp -a /usr/share/doc "$work/btrfs/sub/" &&
		btrfs scrub start -B "$work/btrfs" >/dev/null && umount "$work/btrfs" && losetup -d "$d"
}
use_squashfs() {
	mksquashfs /usr/share/man "$work/sq.img" -quiet -noappend >/dev/null && mkdir -p "$work/sq" &&
		mount -t squashfs -o loop "$work/sq.img" "$work/sq" && ls -R "$work/sq" >/dev/null && umount "$work/sq"
}
use_dm_crypt() {
	local d key
	d=$(loopdev crypt 64M) || return 1
	key=$(head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n')
	dmsetup create allocprof-crypt --table "0 $((64 * 2048)) crypt aes-xts-plain64 $key 0 $d 0" &&
		mkfs.ext4 -q /dev/mapper/allocprof-crypt && udevadm settle &&
		dmsetup remove --retry allocprof-crypt && losetup -d "$d"
}
# Names of our own: loading bonding and dummy creates bond0 and dummy0.
use_links() {
	ip link add apbr type bridge && ip link add apv0 type veth peer name apv1 && ip link set apv0 master apbr &&
	ip link add link apv1 name apv1.10 type vlan id 10 && ip link add apd type dummy &&
	ip link add apbond type bond && ip link add apvx type vxlan id 42 dstport 4789 local 127.0.0.1 &&
	ip link add apmv link apd type macvlan && ip link add apwg type wireguard && ip tuntap add aptun mode tun &&
	ip link set apbr up && ip link set apv0 up && ip link set apv1 up && ip link set apv1.10 up && ip link set apwg up &&
	for l in apv1.10 apvx apmv apwg apbond apd apbr apv0; do ip link del "$l" || return 1; done &&
	ip tuntap del aptun mode tun
}
use_nft() {
	nft -f - <<-'EOF' && nft list ruleset >/dev/null && nft flush ruleset
	table inet allocprof {
		chain input { type filter hook input priority 0; ct state established,related accept; tcp dport 22 limit rate 10/second log prefix "allocprof " reject with tcp reset; }
	}
	table ip allocprof_nat {
		chain post { type nat hook postrouting priority 100; masquerade; }
	}
	EOF
}
use_overlay() {
	mkdir -p "$work"/ov/{l,u,w,m} && mount -t overlay overlay -o lowerdir="$work/ov/l",upperdir="$work/ov/u",workdir="$work/ov/w" "$work/ov/m" &&
		echo x > "$work/ov/m/f" && umount "$work/ov/m"
}
for u in xfs btrfs squashfs dm_crypt links nft overlay; do
	check "use_$u" "use_$u"
done
modprobe -a br_netfilter nft_compat xt_conntrack xt_MASQUERADE tls tcp_bbr sch_fq 8021q zram nbd 9pnet_virtio vsock_loopback binfmt_misc 2>&1 | sed 's/^/# /'
used_mods=$(modules)
diag "after use: $(wc -l <<< "$used_mods") modules; loaded by use: $(comm -13 <(echo "$boot_mods") <(echo "$used_mods") | xargs)"

# 4. Workloads for $secs seconds, while vm.mem_profiling flips and every
# module that can be removed is unloaded and reloaded.
removable() {
	# No holders and no users: modprobe -r can take it (and then its
	# dependencies that nothing else uses).
	awk '$3 == 0 && $4 == "-" {print $1}' /proc/modules | sort
}
cands=$(removable)
diag "removable at the start: $(wc -l <<< "$cands"): $(echo $cands)"
mkdir -p "$work/stress" "$work/fs"
stress_log=$st/stress.log
# The filesystem class on an ext4 of its own, on the second virtio disk
# tools/testing/allocprof/real.sh gives each boot (4 GiB): not a loop file on the root,
# whose writes fail with EIO (and the class with them) whenever the root
# is full; how full each got is sampled while they run.
if [ -b /dev/vdb ]; then
	fsdev=/dev/vdb
	diag "the filesystem class on /dev/vdb ($(( $(blockdev --getsize64 /dev/vdb) / 1048576 )) MiB)"
else
	fsdev=$(loopdev fs 3G)
	diag "no second disk: the filesystem class on a loop file on the root"
fi
mkfs.ext4 -q -F "$fsdev" && mount "$fsdev" "$work/fs" ||
	diag "no filesystem of its own for the filesystem class: it runs on the root"
# The temporary files of the memory and network classes on a third disk
# (4 GiB): with them on the root, something in those classes took the
# root's every free block for a moment (used 7.9 of 8 GiB, while du saw
# under 1 GiB before and after), and whatever wrote to the root then failed.
if [ -b /dev/vdc ] && mkfs.ext4 -q -F /dev/vdc && mount /dev/vdc "$work/stress"; then
	diag "the memory and network classes' temporary files on /dev/vdc"
else
	diag "no third disk: the memory and network classes' temporary files on the root"
fi
( end=$(( $(date +%s) + secs )) peak=
while [ "$(date +%s)" -lt "$end" ]; do
	peak="$peak
$(df --output=target,pcent,ipcent,source,fstype / "$work/fs" "$work/stress" 2>/dev/null | tail -n +2)"
	# Once the root is nearly full: what fills it.
	if [ ! -s "$st/du.full" ] && [ "$(df --output=pcent / | tail -n 1 | tr -dc 0-9)" -ge 80 ]; then
		find / -xdev -type f -size +50M -printf '%s %p\n' 2>/dev/null | sort -rn | head -n 8 > "$st/du.full"
		du -xs /var/tmp/allocprof-real/stress/* /var/* /tmp /root 2>/dev/null | sort -rn | head -n 8 >> "$st/du.full"
		# Space the names above do not show: unlinked files still open.
		for f in /proc/[0-9]*/fd/*; do
			l=$(readlink "$f" 2>/dev/null) || continue
			case $l in
			/*' (deleted)') p=${f#/proc/}; p=${p%%/*}
				echo "$(stat -Lc %s "$f" 2>/dev/null || echo 0) $(cat "/proc/$p/comm" 2>/dev/null)[$p] $l" ;;
			esac
		done 2>/dev/null | sort -rn | head -n 8 >> "$st/du.full"
		# Every top directory of the root, and unlinked files that are
		# only mapped (closed after mmap): /proc/PID/maps, not fd.
		du -x -d 1 -m / 2>/dev/null | sort -rn | head -n 8 | sed 's/^/du-MiB /' >> "$st/du.full"
		for p in /proc/[0-9]*; do
			grep -h ' (deleted)$' "$p/maps" 2>/dev/null | awk -v c="$(cat "$p/comm" 2>/dev/null)" \
				'{print c, $6}'
		done | sort | uniq -c | sort -rn | head -n 8 | sed 's/^/mapped-deleted /' >> "$st/du.full"
	fi
	echo "$(( $(date +%s) - t0 ))s:$(df -m --output=used,avail,pcent / | tail -n 1 | xargs | tr ' ' ,)" >> "$st/df.series"
	sleep 10
done; sort -k1,1 -k2,2n <<< "$peak" | awk 'NF {a[$1] = $0} END {for (k in a) print a[k]}' > "$st/df.peak" ) &
df_pid=$!
# Memory, filesystem (on the ext4 root) and network (loopback) classes, all
# their stressors at once, one instance each; hackbench (rt-tests) for the
# socket and pipe paths.
# stress-ng can overrun its --timeout on a loaded TCG guest: a hard bound.
bound=$((secs * 3 + 120))
# The filesystem stressors that write big files (1 GiB each by default)
# get 128 MiB, and dirmany, which fills the filesystem with files until
# ENOSPC by design, is left out: together they filled the 8 GiB root and
# every other stressor that creates a file failed with ENOSPC.
# tlb-shootdown is left out of the memory class: stress-ng 0.15.06's
# check of its bogo-op counter fails in every boot ("corrupted bogo-ops
# counter, N vs 0", "hash error ... vs 0"), the never boot included, with
# the profiler off and no kernel report.  The 0 is the checksum the
# instance stores when it returns: it never returned normally (its
# children are pinned one per vCPU and force TLB shootdowns between them,
# on a guest whose two vCPUs share one TCG thread).  Documentation/allocprof/test-real.md.
mem_bounds="--exclude tlb-shootdown"
fs_bounds="--exclude dirmany --hdd-bytes 128M --iomix-bytes 128M --fallocate-bytes 128M --sync-file-bytes 128M
	--copy-file-bytes 128M --fiemap-bytes 64M --dirdeep-inodes 20000"
(
	{ timeout -k 10 $bound stress-ng --class memory --all 1 --timeout "${secs}s" --temp-path "$work/stress" --metrics-brief \
		--oom-avoid $mem_bounds 2>&1; echo "$?" > "$st/rc-memory"; } | sed 's/^/memory: /' &
	{ timeout -k 10 $bound stress-ng --class filesystem --all 1 --timeout "${secs}s" --temp-path "$work/fs" --metrics-brief \
		$fs_bounds 2>&1; echo "$?" > "$st/rc-filesystem"; } | sed 's/^/filesystem: /' &
	{ timeout -k 10 $bound stress-ng --class network --all 1 --timeout "${secs}s" --temp-path "$work/stress" --metrics-brief \
		2>&1; echo "$?" > "$st/rc-network"; } | sed 's/^/network: /' &
	wait
) > "$stress_log" 2>&1 &
stress_pid=$!
hackbench_rc=0
( end=$(( $(date +%s) + secs )); while [ "$(date +%s)" -lt "$end" ]; do
	timeout -k 5 120 hackbench -g 2 -l 100 -s 512 >/dev/null 2>&1 || exit 1; done ) &
hack_pid=$!
flips=0 flip_fail=0
if [ "$mode" != never ]; then
	# A flip patches every site of the static key (thousands, modules'
	# too): the longest write is reported.
	( end=$(( $(date +%s) + secs )) f=0 bad=0 longest=0
	flip() {
		local a b
		a=$(date +%s%N)
		echo "$1" > /proc/sys/vm/mem_profiling || bad=$((bad + 1))
		b=$(( ($(date +%s%N) - a) / 1000000 ))
		[ $b -gt $longest ] && longest=$b
		f=$((f + 1))
	}
	while [ "$(date +%s)" -lt "$end" ]; do
		flip 0; sleep 0.7
		flip 1; sleep 0.7
	done; echo "$f $bad $longest" > "$st/flips" ) &
	flip_pid=$!
fi

declare -A unloaded=() busy=() reload_fail=()
end=$(( $(date +%s) + secs ))
r=0
while [ $r -lt "$rounds" ] || [ "$(date +%s)" -lt "$end" ]; do
	r=$((r + 1))
	for m in $cands; do
		grep -q "^$m " /proc/modules || continue
		# modprobe -r can fail on a soft dependency that something else
		# holds (btrfs's crc32c: crc32c_intel, held by ext4) after the
		# module itself went: that counts as an unload.
		if modprobe -r "$m" 2>"$st/modprobe.err" || ! grep -q "^$m " /proc/modules; then
			unloaded[$m]=$(( ${unloaded[$m]:-0} + 1 ))
		else
			busy[$m]=$(head -n 1 "$st/modprobe.err" | head -c 200)
			busy[$m]=${busy[$m]:-exit status only}
		fi
		if ! modprobe "$m" 2>"$st/modprobe.err"; then
			reload_fail[$m]=$(( ${reload_fail[$m]:-0} + 1 ))
			diag "modprobe $m: $(head -c 300 "$st/modprobe.err")"
		fi
	done
	[ $r -ge 50 ] && break
done
diag "unload/reload: $r rounds; $(echo ${!unloaded[@]} | wc -w) modules unloaded and reloaded, $(( $(echo ${unloaded[@]} | tr ' ' '+' | sed 's/^$/0/') )) unloads in all"
diag "unloaded: $(for m in $(echo ${!unloaded[@]} | tr ' ' '\n' | sort); do printf '%s:%s ' "$m" "${unloaded[$m]}"; done)"
for m in "${!busy[@]}"; do diag "modprobe -r $m failed at times: ${busy[$m]}"; done
wait "$stress_pid"
wait "$df_pid"
diag "filesystems at their fullest (mount, blocks, inodes, source, type): $(sed 's/  */ /g' "$st/df.peak" | xargs)"
diag "root over time (s since the checks began: used MiB, available MiB, use%): $(xargs < "$st/df.series" 2>/dev/null)"
[ -s "$st/du.full" ] && { diag "the root at 80 % full: the largest files and directories:"; sed 's/^/#   /' "$st/du.full"; }
umount "$work/fs" 2>/dev/null && [ "$fsdev" != /dev/vdb ] && losetup -d "$fsdev"
umount "$work/stress" 2>/dev/null
wait "$hack_pid" || hackbench_rc=$?
if [ "$mode" != never ]; then
	wait "$flip_pid"
	read -r flips flip_fail flip_ms < "$st/flips"
	echo 1 > /proc/sys/vm/mem_profiling
fi
# What failed first, then stress-ng's summaries.
grep -E 'stress-ng: (fail|error):|terminated with an error' "$stress_log" | sort | uniq -c | sort -rn | head -n 30 | sed 's/^/# /'
grep -E '(skipped|passed|failed|untrustworthy):' "$stress_log" | sed 's/^/# /' | head -n 30

if [ ${#reload_fail[@]} -eq 0 ]; then ok modules_reload; else notok modules_reload; diag "reload failed: ${!reload_fail[*]}"; fi
# Every removable module at least $rounds times, but those a workload held.
short=
for m in $cands; do
	[ "${unloaded[$m]:-0}" -ge "$rounds" ] || [ -n "${busy[$m]:-}" ] || short="$short $m"
done
if [ -z "$short" ]; then ok modules_unloaded_each_round; else notok modules_unloaded_each_round; diag "not unloaded $rounds times:$short"; fi
# Every module is back (the workloads may have loaded more).
now_mods=$(modules)
gone=$(comm -23 <(echo "$used_mods") <(echo "$now_mods") | xargs)
if [ -z "$gone" ]; then ok modules_all_back; else notok modules_all_back; diag "gone: $gone"; fi
diag "loaded during the workloads: $(comm -13 <(echo "$used_mods") <(echo "$now_mods") | xargs)"
# stress-ng's exit status: 0 all passed, 2 a stressor failed, 3 one lacked
# a resource and skipped itself, 124 or 137 our bound killed it.  A class
# passes with 0, or with 3 and no "fail:" line (a skip is no failure of
# the kernel; a stressor that fails for lack of space still prints
# "fail:").
rcs= sbad=
for c in memory filesystem network; do
	rc=$(cat "$st/rc-$c" 2>/dev/null || echo none)
	rcs="$rcs $c:$rc"
	case $rc in
	0) ;;
	3) grep -q "^$c: stress-ng: fail:" "$stress_log" && sbad="$sbad $c" ;;
	*) sbad="$sbad $c" ;;
	esac
done
diag "stress-ng exit:$rcs"
if [ -z "$sbad" ]; then
	ok stress_ng_passed
else
	notok stress_ng_passed
fi
if [ "$hackbench_rc" = 0 ]; then ok hackbench; else notok hackbench; fi
if [ "$mode" != never ]; then
	if [ "$flips" -gt 0 ] && [ "$flip_fail" = 0 ]; then ok sysctl_flipped; else notok sysctl_flipped; fi
	diag "vm.mem_profiling flipped $flips times ($flip_fail writes refused), the longest write took $flip_ms ms"
fi

# 5. After: the kernel log, the rows.
# (Not "Call Trace": the OOM killer's report has one, and the memory
# stressors may call it, which is no defect.)
reports=$(dmesg | grep -E 'Oops|BUG:|WARNING:|KASAN|general protection|list_del corruption|refcount_t:|Kernel panic|kernel BUG|UBSAN' | head -n 20)
if [ -z "$reports" ]; then ok no_kernel_reports; else notok no_kernel_reports; sed 's/^/# /' <<< "$reports"; fi
diag "OOM killer: $(dmesg | grep -c 'invoked oom-killer') invocations; soft lockups: $(dmesg | grep -c 'soft lockup'); hung tasks: $(dmesg | grep -c 'blocked for more than')"

if [ -r /proc/allocinfo ]; then
	# Unload everything that can go, then read the rows: a module's rows
	# must be gone or drained (0/0), or held by allocations the kernel named
	# as alive at its unload.
	for i in 1 2 3; do
		for m in $(removable); do modprobe -r "$m" 2>/dev/null; done
	done
	left=$(modules)
	gone=$(comm -23 <(echo "$used_mods") <(echo "$left"))
	diag "unloaded for the row check: $(wc -w <<< "$gone") modules; still loaded: $(echo $left)"
	cat /proc/allocinfo > "$st/allocinfo"
	# Row: BYTES CALLS FILE:LINE [MODULE] func:NAME ...
	wrapped=$(awk 'NR > 2 && ($1 < 0 || $2 < 0 || $2 > 4611686018427387904 || $1 > 4611686018427387904)' "$st/allocinfo")
	if [ -z "$wrapped" ]; then ok rows_not_negative_or_wrapped; else notok rows_not_negative_or_wrapped; head -n 20 <<< "$wrapped" | sed 's/^/# /'; fi
	alive=$(dmesg | grep 'alive at module unload')
	undrained=
	while read -r bytes calls site modname rest; do
		m=${modname#[}; m=${m%]}
		[ "$bytes" = 0 ] && [ "$calls" = 0 ] && continue
		grep -qx "$m" <<< "$left" && continue
		grep -qF "$site [$m]" <<< "$alive" && continue
		undrained="$undrained
$bytes $calls $site $modname $rest"
	done < <(awk 'NR > 2 && $4 ~ /^\[.*\]$/' "$st/allocinfo")
	if [ -z "$undrained" ]; then ok unloaded_module_rows_drained; else notok unloaded_module_rows_drained; sed '/^$/d; s/^/# /' <<< "$undrained" | head -n 30; fi
	nalive=$(grep -c . <<< "$alive")
	[ -n "$alive" ] && { diag "rows alive at module unload ($nalive):"; sed 's/^/#   /' <<< "$alive" | sort | uniq -c | sort -rn | head -n 30; }
	# Attribution coverage.
	sum=$(awk 'NR > 2 {s += $1} END {printf "%.0f", s}' "$st/allocinfo")
	# The slab pages are rows (alloc_slab_page) and so are the objects in
	# them (their callers'): counted twice, by upstream's design as by
	# ours.  Without the slab pages, every byte counted is in a distinct
	# page in use.
	slabpages=$(awk 'NR > 2 && / func:alloc_slab_page( |$)/ {s += $1} END {printf "%.0f", s}' "$st/allocinfo")
	counted=$((sum - slabpages))
	read -r total free cached anon shmem slab pt kstack percpu vmalloc < <(awk '
		/^MemTotal:/ {t=$2} /^MemFree:/ {f=$2} /^Cached:/ {c=$2} /^AnonPages:/ {a=$2} /^Shmem:/ {sh=$2}
		/^Slab:/ {sl=$2} /^PageTables:/ {p=$2} /^KernelStack:/ {k=$2} /^Percpu:/ {pc=$2} /^VmallocUsed:/ {v=$2}
		END {print t, f, c, a, sh, sl, p, k, pc, v}' /proc/meminfo)
	used=$(( (total - free) * 1024 ))
	diag "coverage: /proc/allocinfo sums $((sum / 1048576)) MiB, $((slabpages / 1048576)) MiB of it slab pages whose objects are rows too; without those, $((counted / 1048576)) MiB of $((used / 1048576)) MiB in use (MemTotal - MemFree): $(( counted * 100 / used ))%"
	diag "meminfo (MiB): Cached $((cached / 1024)) (Shmem $((shmem / 1024))), AnonPages $((anon / 1024)), Slab $((slab / 1024)), PageTables $((pt / 1024)), KernelStack $((kstack / 1024)), Percpu $((percpu / 1024)), VmallocUsed $((vmalloc / 1024))"
	diag "largest rows:"
	sort -rn "$st/allocinfo" 2>/dev/null | head -n 12 | sed 's/^/#   /'
	if [ "$mode" = never ]; then
		# Nothing is counted when profiling was never on.
		if [ "$sum" = 0 ]; then ok never_counts_nothing; else notok never_counts_nothing; fi
	elif [ "$counted" -gt 0 ] && [ "$counted" -le "$used" ]; then
		ok coverage_within_used_memory
	else
		notok coverage_within_used_memory
	fi
	cp "$st/allocinfo" /var/log/allocinfo.after
elif [ "$mode" = never ]; then
	ok never_no_allocinfo
else
	notok allocinfo_readable
fi

echo "1..$n"
diag "allocprof-real: $npass passed, $nfail failed ($(( $(date +%s) - t0 ))s)"
echo "ALLOCPROF-REAL: end"
sync
sleep 2
grep -qw allocprof_real_nopoweroff /proc/cmdline || systemctl poweroff --no-block
