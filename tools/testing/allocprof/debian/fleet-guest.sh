#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-fleet, inside one of the fleet's Debian 13 machines: run at
# boot by allocprof-fleet.service (fleet-image.sh) from the 9p share
# allocprof-fleet, which holds fleet.conf (NAME, ROLE, OURS_REL, LEAK_SIZE,
# LEAK_PERIOD_MS, TIMER_S), the tool's package (tool/) and the host's word
# on the phase
# (phase: run, freeze, end).
#   run     install the tool; its timer writes the export for Prometheus
#           every TIMER_S s; ROLE=leak also loads allocprof_fleet_leak
#   freeze  stop the timer; read /proc/allocinfo once (allocinfo.txt on
#           the share) and export that very read as the textfile, so the
#           scrapes from now on and the host's own reading are one sample;
#           the textfile's mtime goes to the share (frozen) and lets the
#           host see which sample Prometheus holds
#   end     ROLE=leak unloads the module (its rows drain); power off
# Output: KTAP lines on the serial console, then "ALLOCPROF-FLEET: end".
set -u
# As guest.sh: the serial getty goes first (its hangup would make an
# earlier descriptor write nowhere).
systemctl stop serial-getty@ttyS0.service 2>/dev/null
exec > /dev/ttyS0 2>&1
echo
S=/run/allocprof-fleet
. "$S/fleet.conf"
prom=/var/lib/prometheus/node-exporter/allocinfo.prom
rel=$(uname -r)
n=0
ok() { n=$((n + 1)); echo "ok $n $NAME: $*"; }
notok() { n=$((n + 1)); echo "not ok $n $NAME: $*"; }
diag() { echo "# $NAME: $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else notok "$d"; fi; }
finish() {
	echo "1..$n"
	echo "ALLOCPROF-FLEET: end"
	sync
	systemctl poweroff
	exit 0
}
# The host's word (this phase or a later one); a machine left without one
# is stopped by the host's timeout.
wait_phase() {
	local p
	while p=$(cat "$S/phase" 2>/dev/null); do
		[ "$p" = "$1" ] || [ "$p" = end ] && return 0
		sleep 1
	done
}
put() { cat > "$S/$1.tmp" && mv "$S/$1.tmp" "$S/$1"; }

echo "KTAP version 1"
diag "$ROLE machine on $rel, $(cut -d' ' -f1 /proc/uptime)s after boot"
hostnamectl hostname "$NAME" 2>/dev/null || hostname "$NAME"
check "our kernel runs ($rel), booted by GRUB" [ "$rel" = "$OURS_REL" ]
state=$(systemctl is-system-running --wait 2>/dev/null)
failed=$(systemctl --failed --no-legend --plain 2>/dev/null)
diag "systemd: $state${failed:+; failed: $(tr '\n' ' ' <<< "$failed")}"
check "systemd reached multi-user with no failed unit" [ "$state" = running -a -z "$failed" ]
for u in $(awk '{print $1}' <<< "$failed"); do
	journalctl -b -u "$u" -n 8 --no-pager 2>&1 | sed "s/^/# $NAME: $u: /"
done
check "/proc/allocinfo is there (version 2.0)" [ "$(head -n 1 /proc/allocinfo)" = "allocinfo - version: 2.0" ]
diag "node_exporter: $(dpkg-query -W -f='${Package} ${Version}' prometheus-node-exporter 2>&1), $(systemctl is-active prometheus-node-exporter)"
check "Debian's prometheus-node-exporter runs" systemctl is-active -q prometheus-node-exporter

# The tool's package: dpkg -i enables and starts its timer.
debs=$(ls "$S"/tool/allocinfo_*.deb 2>/dev/null)
if [ -n "$debs" ] && DEBIAN_FRONTEND=noninteractive dpkg -i $debs > /run/fleet-dpkg.log 2>&1; then
	ok "dpkg -i $(basename -a $debs | tr '\n' ' ')"
else
	notok "dpkg -i ${debs:-(no allocinfo package on the share)}"
	tail -n 20 /run/fleet-dpkg.log 2>/dev/null | sed 's/^/# /'
fi
check "the package enabled and started allocinfo-textfile.timer" \
	bash -c 'systemctl is-enabled -q allocinfo-textfile.timer && systemctl is-active -q allocinfo-textfile.timer'
# The test's interval, over whatever schedule the package sets.
mkdir -p /etc/systemd/system/allocinfo-textfile.timer.d
cat > /etc/systemd/system/allocinfo-textfile.timer.d/fleet-test.conf <<EOT
[Timer]
OnCalendar=
OnBootSec=
OnUnitActiveSec=
OnActiveSec=0
OnUnitActiveSec=${TIMER_S}s
AccuracySec=1s
EOT
systemctl daemon-reload
systemctl enable --now allocinfo-textfile.timer > /dev/null 2>&1
systemctl restart allocinfo-textfile.timer
check "allocinfo-textfile.timer is active" systemctl is-active -q allocinfo-textfile.timer
for _ in $(seq 60); do
	[ -s "$prom" ] && break
	sleep 1
done
check "the timer's service wrote $prom" [ -s "$prom" ]
diag "export: $(grep -c '^allocinfo_bytes{' "$prom" 2>/dev/null) allocinfo_bytes series; $(grep -m1 '^allocinfo_bytes{' "$prom" 2>/dev/null)"

if [ "$ROLE" = leak ]; then
	t_load=$(cut -d' ' -f1 /proc/uptime)
	check "modprobe allocprof_fleet_leak size=$LEAK_SIZE period_ms=$LEAK_PERIOD_MS" \
		modprobe allocprof_fleet_leak size="$LEAK_SIZE" period_ms="$LEAK_PERIOD_MS"
	diag "leak loaded at uptime ${t_load}s"
fi
echo "ALLOCPROF-FLEET: running"
wait_phase freeze

# One read of /proc/allocinfo, exported as is.
systemctl stop allocinfo-textfile.timer
systemctl stop allocinfo-textfile.service
# The leak's count just before and just after the read bracket its row's.
leaked() { cat /sys/module/allocprof_fleet_leak/parameters/leaked 2>/dev/null; }
t_snap=$(cut -d' ' -f1 /proc/uptime)
leaked_before=$(leaked)
cat /proc/allocinfo > /run/fleet-allocinfo.txt
leaked_after=$(leaked)
relopt=()
allocinfo export --help 2>/dev/null | grep -q -- '--release' && relopt=(--release "$rel")
check "allocinfo export -i of the snapshot to $prom" \
	allocinfo export -i /run/fleet-allocinfo.txt "${relopt[@]}" -o "$prom"
mtime=$(stat -c %Y "$prom")
cp /run/fleet-allocinfo.txt "$S/allocinfo.txt.tmp" && mv "$S/allocinfo.txt.tmp" "$S/allocinfo.txt"
{
	echo "mtime=$mtime"
	echo "release=$rel"
	echo "uptime=$t_snap"
	if [ "$ROLE" = leak ]; then
		echo "leak_loaded_uptime=$t_load"
		echo "leaked_before=$leaked_before"
		echo "leaked_after=$leaked_after"
	fi
} | put frozen
diag "frozen: textfile mtime $mtime, $(grep -c . /run/fleet-allocinfo.txt) lines at uptime ${t_snap}s"
echo "ALLOCPROF-FLEET: frozen"
wait_phase end

if [ "$ROLE" = leak ]; then
	row=$(grep -E ' \[allocprof_fleet_leak\] func:fleet_leak_alloc' /proc/allocinfo)
	diag "before unload: $row"
	check "rmmod allocprof_fleet_leak" rmmod allocprof_fleet_leak
	left=$(awk '$4 == "[allocprof_fleet_leak]" && ($1 != 0 || $2 != 0)' /proc/allocinfo)
	check "the leak's rows drained at unload" [ -n "$row" -a -z "$left" ]
fi
r=$(dmesg | grep -E 'Oops|BUG:|WARNING:|general protection|Kernel panic|kernel BUG|UBSAN|refcount_t:|list_del corruption' | head -n 10)
[ -z "$r" ] || sed 's/^/# /' <<< "$r"
check "no kernel report in the log" [ -z "$r" ]
finish
