#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-install, inside the Debian 13 machine: run at every boot by
# allocprof-test.service (install-image.sh) from the disk labelled
# allocprof-test, which also holds our packages (debs/: the kernel's;
# tool/: allocinfo's) and test.conf (OURS_REL, the kernel release of ours).
# Three boots, one step each; the step and the test count persist on the
# root disk (/var/lib/allocprof-test):
#   install  Debian's kernel: dpkg -i our linux-headers and linux-image;
#            initramfs-tools, update-grub and DKMS run from the packages'
#            hooks; dpkg -i allocinfo (its timer starts; its service is
#            skipped: no /proc/allocinfo); reboot, and GRUB picks the newest
#            kernel
#   ours     our kernel: the checks, allocinfo's timer and export among them;
#            then apt-get purge of allocinfo and of our kernel, reboot
#   back     Debian's kernel again; power off
# Output: KTAP lines on the serial console, then "ALLOCPROF-INSTALL: end".
set -u
# Stop the serial getty first, so that no login prompt lands in the middle
# of the output: stopping it hangs the line up, and a descriptor opened
# before that would write nowhere (EIO).  Its prompt ends without a
# newline: end it.
systemctl stop serial-getty@ttyS0.service 2>/dev/null
exec > /dev/ttyS0 2>&1
echo
T=/run/allocprof-test
. "$T/test.conf"
st=/var/lib/allocprof-test
mkdir -p "$st"
step=$(cat "$st/step" 2>/dev/null || echo install)
n=$(cat "$st/n" 2>/dev/null || echo 0)
ok() { n=$((n + 1)); echo "$n" > "$st/n"; echo "ok $n $*"; }
notok() { n=$((n + 1)); echo "$n" > "$st/n"; echo "not ok $n $*"; }
diag() { echo "# $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else notok "$d"; fi; }
next() { echo "$1" > "$st/step"; sync; diag "step $step done, rebooting into step $1"; systemctl reboot; exit 0; }
finish() {
	echo "1..$n"
	echo "ALLOCPROF-INSTALL: end"
	sync
	systemctl poweroff
	exit 0
}
rel=$(uname -r)
diag "step $step on $rel, $(cut -d' ' -f1 /proc/uptime)s after boot"
# What a boot costs, for the install guide (TCG: compare the kernels with
# each other, not with hardware).
costs() {
	systemctl is-system-running --wait > /dev/null 2>&1
	diag "costs $rel: $(systemd-analyze time 2>/dev/null | head -n 1)"
	diag "costs $rel: $(grep -E '^(MemTotal|MemAvailable):' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
	diag "costs $rel: $(dmesg | grep -m1 -E '\] Memory: ' | sed 's/^\[[^]]*\] //')"
	diag "costs $rel: $(dmesg | grep -m1 -E 'page_ext' | sed 's/^\[[^]]*\] //')"
}
costs

# systemd reached its target (the boot is complete) and no unit failed.
booted_clean() {
	local state failed
	state=$(systemctl is-system-running --wait 2>/dev/null)
	failed=$(systemctl --failed --no-legend --plain 2>/dev/null)
	diag "systemd: $state${failed:+; failed: $(tr '\n' ' ' <<< "$failed")}"
	[ "$state" = running ] && [ -z "$failed" ]
}
# The root file system is the disk's partition, named by UUID on the kernel
# command line (update-grub) and in fstab.
root_by_uuid() {
	local uuid src
	uuid=$(findmnt -no UUID /) src=$(findmnt -no SOURCE /)
	diag "root: $src UUID=$uuid; cmdline: $(cat /proc/cmdline)"
	[ -n "$uuid" ] && grep -qw "root=UUID=$uuid" /proc/cmdline && grep -q "^UUID=$uuid / " /etc/fstab &&
		[ "$src" = /dev/vda1 ]
}
no_kernel_reports() {
	local r
	r=$(dmesg | grep -E 'Oops|BUG:|WARNING:|general protection|Kernel panic|kernel BUG|UBSAN|refcount_t:|list_del corruption' | head -n 10)
	[ -z "$r" ] || sed 's/^/# /' <<< "$r"
	[ -z "$r" ]
}

# allocinfo's package: its timer writes the export for node_exporter.
prom=/var/lib/prometheus/node-exporter/allocinfo.prom
unit=allocinfo-textfile
# The bytes of one site in an exposition: the largest allocinfo_bytes series
# with the site's function and file labels (in any order; with a line label,
# other lines of the function may hold less).
series_value() {
	awk -v f="function=\"$2\"" -v p="file=\"$3\"" \
		'/^allocinfo_bytes\{/ && index($0, f) && index($0, p) && (v == "" || $NF > v) {v = $NF} END {print v}' "$1"
}
tool_checks() {
	local trig before big func file v scrape manout
	check "tool: $unit.timer is enabled" [ "$(systemctl is-enabled $unit.timer 2>&1)" = enabled ]
	check "tool: $unit.timer is active" [ "$(systemctl is-active $unit.timer 2>&1)" = active ]
	# The timer fires at boot (OnBootSec=0); give a slow boot a minute.
	for _ in $(seq 60); do
		[ -s "$prom" ] && break
		sleep 1
	done
	trig=$(systemctl show -P LastTriggerUSecMonotonic $unit.timer)
	diag "$unit: $(systemctl show -p Result -p ExecMainStatus -p ConditionResult $unit.service | tr '\n' ' ')timer last triggered at ${trig}us"
	check "tool: the timer ran $unit.service by itself, which succeeded" \
		bash -c '[ "${1:-0}" != 0 ] && [ "$(systemctl show -P Result "$2")" = success ] &&
			[ "$(systemctl show -P ConditionResult "$2")" = yes ] && [ -s "$3" ]' _ "$trig" $unit.service "$prom"
	diag "$prom: $(stat -c '%s bytes, mode %a, owner %U' "$prom" 2>&1), $(grep -c '^allocinfo_bytes' "$prom" 2>/dev/null) allocinfo_bytes series"
	diag "hardening: $(systemd-analyze security --no-pager $unit.service 2>/dev/null | tail -n 1)"
	# Run it again now: the file is replaced by rename (a new inode, no
	# temporary left), with the sites of this very moment.
	before=$(stat -c %i "$prom" 2>/dev/null)
	if systemctl start $unit.service; then ok "tool: systemctl start $unit.service"; else notok "tool: systemctl start $unit.service"; fi
	check "tool: the export was replaced atomically (new inode, no temporary file left)" \
		bash -c '[ -s "$1" ] && [ "$(stat -c %i "$1")" != "$2" ] && ! ls "$(dirname "$1")"/.allocinfo.prom.tmp.* >/dev/null 2>&1' _ "$prom" "$before"
	# A known site: the largest of /proc/allocinfo read just after the export.
	big=$(awk 'NR > 2 && $1 > m {m = $1; s = $0} END {print s}' /proc/allocinfo)
	func=$(sed -n 's/.* func:\([^ ]*\).*/\1/p' <<< "$big")
	file=$(awk '{print $3}' <<< "$big"); file=${file%:*}
	v=$(series_value "$prom" "$func" "$file")
	diag "largest site: $big; exported allocinfo_bytes: ${v:-none}"
	check "tool: the export has the largest site ($func in $file) with bytes" bash -c '[ "${1:-0}" -gt 0 ]' _ "$v"
	check "tool: its series carry release=\"$rel\"" \
		bash -c 'grep "^allocinfo_bytes{" "$1" | grep -F "function=\"$2\"" | grep -qF "release=\"$3\""' _ "$prom" "$func" "$rel"
	# Debian's node_exporter serves the file through its textfile collector
	# (its values as floats: 5.6643584e+07).  The scrape, about 1 MB, goes
	# through a file: an argument is limited to 128 KiB.
	scrape=$st/metrics.txt
	curl -sf -o "$scrape" http://127.0.0.1:9100/metrics
	diag "node_exporter: $(grep -E '^node_textfile_(scrape_error|mtime_seconds)' "$scrape" | tr '\n' ' ')"
	v=$(series_value "$scrape" "$func" "$file")
	diag "node_exporter serves allocinfo_bytes of $func in $file: ${v:-none}"
	check "tool: prometheus-node-exporter serves the site's series, no textfile error" \
		bash -c 'grep -q "^node_textfile_scrape_error 0$" "$1" && awk -v v="$2" "BEGIN {exit !(v + 0 > 0)}"' _ "$scrape" "$v"
	manout=$(MANWIDTH=80 man --warnings allocinfo 2>&1 >/dev/null)
	[ -n "$manout" ] && sed 's/^/# man: /' <<< "$manout"
	check "tool: man allocinfo and man allocinfo-export render without warnings" \
		bash -c '[ -z "$1" ] && [ "$(man -w allocinfo)" = /usr/share/man/man1/allocinfo.1.gz ] &&
			MANWIDTH=80 man allocinfo-export 2>/dev/null | grep -q -- "--output"' _ "$manout"
	check "tool: bash completion: bash-completion loads it for allocinfo" \
		bash -c '. /usr/share/bash-completion/bash_completion && _comp_load allocinfo 2>/dev/null ||
			__load_completion allocinfo; complete -p allocinfo | grep -q "_allocinfo allocinfo$"'
	check "tool: zsh and fish completions are installed" \
		[ -s /usr/share/zsh/vendor-completions/_allocinfo -a -s /usr/share/fish/vendor_completions.d/allocinfo.fish ]
	# The way out: purge stops and disables the timer, and removes the units,
	# the binary and the export (node_exporter then serves no stale series).
	if DEBIAN_FRONTEND=noninteractive apt-get purge -y allocinfo > "$st/apt-purge-tool.log" 2>&1; then
		ok "tool: apt-get purge allocinfo"
	else
		notok "tool: apt-get purge allocinfo"
		tail -n 20 "$st/apt-purge-tool.log" | sed 's/^/# /'
	fi
	diag "after purge: $(ls /usr/lib/systemd/system/$unit.* /etc/systemd/system/timers.target.wants/$unit.timer \
		/var/lib/systemd/deb-systemd-helper-enabled/timers.target.wants/$unit.timer "$prom" /usr/bin/allocinfo 2>&1 | tr '\n' ';')"
	check "tool: purge removed the units, the timer's enablement, the binary and the export" \
		bash -c '! ls /usr/lib/systemd/system/$1.* /etc/systemd/system/timers.target.wants/$1.timer "$2" /usr/bin/allocinfo \
			>/dev/null 2>&1 && [ "$(systemctl is-active $1.timer)" != active ] &&
			! systemctl list-unit-files "$1.*" --no-legend | grep -q .' _ $unit "$prom"
	check "tool: node_exporter serves no allocinfo series after the purge" \
		bash -c 'm=$(curl -sf http://127.0.0.1:9100/metrics) && grep -q "^node_textfile_scrape_error 0$" <<< "$m" &&
			! grep -q "^allocinfo_" <<< "$m"'
}

case $step in
install)
	echo "KTAP version 1"
	echo "$rel" > "$st/debian_rel"
	check "debian: Debian's own kernel runs ($rel)" [ "${rel%-amd64}" != "$rel" -a "$rel" != "$OURS_REL" ]
	check "debian: systemd reached multi-user with no failed unit" booted_clean
	diag "dkms status on Debian's kernel: $(dkms status 2>&1 | tr '\n' ';')"
	debs=$(ls "$T"/debs/linux-*.deb)
	diag "installing: $(basename -a $debs | tr '\n' ' ')"
	if DEBIAN_FRONTEND=noninteractive dpkg -i $debs > "$st/dpkg-install.log" 2>&1; then
		ok "install: dpkg -i of linux-headers and linux-image"
	else
		notok "install: dpkg -i of linux-headers and linux-image"
		tail -n 30 "$st/dpkg-install.log" | sed 's/^/# /'
	fi
	grep -E 'update-initramfs|Generating grub|Found linux image|dkms|DKMS|Building|Signing|Error' "$st/dpkg-install.log" | head -n 20 | sed 's/^/# dpkg: /'
	check "install: initramfs-tools made /boot/initrd.img-$OURS_REL" [ -s "/boot/initrd.img-$OURS_REL" ]
	check "install: update-grub made a boot entry for $OURS_REL" grep -q "vmlinuz-$OURS_REL" /boot/grub/grub.cfg
	diag "grub's first entry: $(grep -m1 -o "linux[[:space:]]*/boot/vmlinuz-[^ ]*" /boot/grub/grub.cfg)"
	dk=$(dkms status 2>&1)
	diag "dkms status: $(tr '\n' ';' <<< "$dk")"
	if grep -qE "^$DKMS_MOD/[^,]+, $OURS_REL, x86_64: installed" <<< "$dk"; then
		ok "install: DKMS built $DKMS_MOD for $OURS_REL against our linux-headers"
		# With the compiler the kernel was built with (the headers'
		# .kernelvariables): kbuild warns when the names differ.
		mlog=$(ls /var/lib/dkms/"$DKMS_MOD"/*/"$OURS_REL"/*/log/make.log 2>/dev/null | head -n 1)
		diag "DKMS make.log: ${mlog:-none}"
		check "install: DKMS built it with the kernel's own compiler (no 'compiler differs' warning)" \
			bash -c '[ -f "$1" ] && ! grep -q "compiler differs" "$1"' _ "$mlog"
	else
		notok "install: DKMS built $DKMS_MOD for $OURS_REL against our linux-headers"
		for f in /var/lib/dkms/"$DKMS_MOD"/*/build/make.log; do
			[ -f "$f" ] && tail -n 25 "$f" | sed "s|^|# $f: |"
		done
	fi
	# The tool's package, on Debian's kernel (no /proc/allocinfo): the
	# timer starts at once and its service is skipped by its condition.
	tool=$(ls "$T"/tool/allocinfo_*_amd64.deb)
	if DEBIAN_FRONTEND=noninteractive dpkg -i "$tool" > "$st/dpkg-tool.log" 2>&1; then
		ok "install: dpkg -i $(basename "$tool")"
	else
		notok "install: dpkg -i $(basename "$tool")"
		tail -n 20 "$st/dpkg-tool.log" | sed 's/^/# /'
	fi
	sleep 2
	diag "allocinfo-textfile: $(systemctl show -p ActiveState -p Result -p ConditionResult allocinfo-textfile.service | tr '\n' ' ')"
	check "install: allocinfo-textfile.timer started; its service skipped on Debian's kernel, not failed" \
		bash -c '[ "$(systemctl is-active allocinfo-textfile.timer)" = active ] &&
			[ "$(systemctl show -P LastTriggerUSecMonotonic allocinfo-textfile.timer)" != 0 ] &&
			[ "$(systemctl show -P ConditionResult allocinfo-textfile.service)" = no ] &&
			! systemctl is-failed -q allocinfo-textfile.service && [ ! -e /var/lib/prometheus/node-exporter/allocinfo.prom ]'
	next ours
	;;
ours)
	check "ours: our kernel runs ($rel)" [ "$rel" = "$OURS_REL" ]
	check "ours: systemd reached multi-user with no failed unit" booted_clean
	check "ours: the root file system is the disk's, mounted by UUID" root_by_uuid
	diag "$(dmesg | grep -m1 'alloc_tag: Rust core' | sed 's/^\[[^]]*\] //')"
	check "ours: /proc/allocinfo is there with its header and rows" \
		bash -c '[ "$(head -n 1 /proc/allocinfo)" = "allocinfo - version: 2.0" ] && [ "$(wc -l < /proc/allocinfo)" -gt 500 ]'
	prof=$(cat /proc/sys/vm/mem_profiling 2>/dev/null)
	# The package turns profiling on by its config (Kconfig's default):
	# nothing on the command line, no sysctl.d drop-in.
	setby=$(grep -o 'sysctl.vm.mem_profiling=[^ ]*' /proc/cmdline; grep -rls 'mem_profiling' /etc/sysctl.d /etc/sysctl.conf /usr/lib/sysctl.d 2>/dev/null)
	diag "vm.mem_profiling=$prof${setby:+, set by: $setby}"
	check "ours: profiling is on from boot by the package's config (vm.mem_profiling=1, no drop-in)" \
		[ "$prof" = 1 -a -z "$setby" ]
	top=$(allocinfo top -n 5 2>&1)
	sed 's/^/# /' <<< "$top"
	top3=$(awk 'NR > 2 {print $1, $3}' /proc/allocinfo | sort -gr | head -n 3 | cut -d' ' -f2)
	check "ours: the allocinfo tool reads it (top -n 5 lists one of the 3 largest sites)" \
		bash -c 'grep -qFf <(printf "%s\n" $2) <<< "$1"' _ "$top" "$top3"
	# Module signing: the in-tree modules carry the key the build made, and
	# every module udev loaded was verified (no unsigned-module taint, E).
	signer=$(modinfo -F signer virtio_net 2>&1)
	taint=$(cat /proc/sys/kernel/tainted)
	diag "virtio_net signer: $signer; taint before DKMS: $taint"
	check "ours: in-tree modules are signed with the build's key and load verified" \
		[ "$signer" = "Build time autogenerated kernel key" -a $(( taint & 8192 )) = 0 ]
	# The DKMS module: built against our headers, signed by DKMS's own key
	# (not one this kernel trusts: loads with a taint, as on Debian's).
	diag "$DKMS_MOD: $(modinfo -F vermagic "$DKMS_MOD" 2>&1); signer: $(modinfo -F signer "$DKMS_MOD" 2>&1)"
	if modprobe "$DKMS_MOD" $DKMS_ARGS 2>"$st/modprobe.err"; then
		ok "dkms: modprobe $DKMS_MOD $DKMS_ARGS"
	else
		notok "dkms: modprobe $DKMS_MOD $DKMS_ARGS"
		sed 's/^/# /' "$st/modprobe.err"
	fi
	# Its BTF, made at DKMS build time against the headers' vmlinux.
	check "dkms: $DKMS_MOD has BTF (/sys/kernel/btf/$DKMS_MOD)" [ -s "/sys/kernel/btf/$DKMS_MOD" ]
	rows=$(awk -v m="[$DKMS_MOD]" 'NR > 2 && $4 == m' /proc/allocinfo)
	sed 's/^/# loaded: /' <<< "$rows"
	check "dkms: /proc/allocinfo has $DKMS_MOD's rows, with bytes, under [$DKMS_MOD]" \
		bash -c 'awk "\$1 > 0" <<< "$1" | grep -q .' _ "$rows"
	mods=$(allocinfo top -n 0 --module "$DKMS_MOD" 2>&1)
	big=$(awk '$1 > m {m = $1; s = $3} END {print s}' <<< "$rows")
	check "dkms: allocinfo top --module $DKMS_MOD lists its largest site (${big:-none})" \
		bash -c '[ -n "$2" ] && grep -qF "$2" <<< "$1"' _ "$mods" "$big"
	sed 's/^/# tool: /' <<< "$mods" | head -n 8
	modprobe -r "$DKMS_MOD" 2>&1 | sed 's/^/# /'
	left=$(awk -v m="[$DKMS_MOD]" 'NR > 2 && $4 == m && ($1 != 0 || $2 != 0)' /proc/allocinfo)
	sed 's/^/# after unload: /' <<< "$left"
	# Only a module that had rows can show them drained.
	check "dkms: its rows drained at unload" [ -n "$rows" -a -z "$left" -a ! -d "/sys/module/$DKMS_MOD" ]
	diag "taint: $(cat /proc/sys/kernel/tainted); $(dmesg | grep -m1 'module verification failed' | sed 's/^\[[^]]*\] //')"
	tool_checks
	check "ours: no kernel report in the log" no_kernel_reports
	# The way back: remove our kernel, as a user would.
	if DEBIAN_FRONTEND=noninteractive apt-get purge -y "linux-image-$OURS_REL" "linux-headers-$OURS_REL" \
		> "$st/apt-purge.log" 2>&1; then
		ok "back: apt-get purge of our linux-image and linux-headers"
	else
		notok "back: apt-get purge of our linux-image and linux-headers"
		tail -n 30 "$st/apt-purge.log" | sed 's/^/# /'
	fi
	check "back: our kernel left /boot and grub.cfg" \
		bash -c '! ls /boot/*"$1"* >/dev/null 2>&1 && ! grep -q "$1" /boot/grub/grub.cfg' _ "$OURS_REL"
	next back
	;;
back)
	check "back: Debian's own kernel runs again ($rel)" [ "$rel" = "$(cat "$st/debian_rel")" ]
	check "back: systemd reached multi-user with no failed unit" booted_clean
	diag "left in /lib/modules: $(ls /lib/modules | tr '\n' ' ')"
	diag "dkms status: $(dkms status 2>&1 | tr '\n' ';')"
	check "back: nothing of our kernel left in /lib/modules (DKMS's build removed with it)" \
		[ ! -e "/lib/modules/$OURS_REL" ]
	finish
	;;
*)
	notok "unknown step $step"
	finish
	;;
esac
