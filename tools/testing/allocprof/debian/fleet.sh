#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make test-fleet: a fleet of Debian 13 machines with our kernel, each with
# Debian's prometheus-node-exporter and the allocinfo timer, scraped by a
# real Prometheus on this host; PromQL's answers are checked against each
# machine's own /proc/allocinfo.
#
# The machines: fleet-image.sh's disk (the install test's Debian 13 disk
# with our packages and node_exporter installed, made once, cached), one
# qcow2 overlay each, booted through SeaBIOS and GRUB under QEMU TCG with
# one CPU.  Each reaches the host through a 9p share (its settings, the
# guest's steps fleet-guest.sh, the tool, the host's word on the phase, and
# its results) and is scraped through a forwarded loopback port.  One of
# them (ROLE leak) loads allocprof_fleet_leak, which leaks LEAK_SIZE bytes
# every LEAK_PERIOD_MS ms.
#
# Prometheus (Debian's, run here with its own configuration and storage in
# CACHE_DIR/fleet, not as the system's service) scrapes every FLEET_SCRAPE_S s
# and loads tools/allocinfo/contrib/prometheus's rules.  The run: all
# machines exported; FLEET_SETTLE_S seconds for a freshly booted machine to
# settle; FLEET_RUN_S seconds, the window of the growth query; freeze (each machine
# exports one read of /proc/allocinfo, which it keeps); Prometheus holds
# that sample of every machine; fleet-check.py asks PromQL and compares;
# the machines power off.  Ends with "N passed, N failed" and its time.
#
# FLEET_TIMEOUT is the hard limit on the whole run (seconds); FLEET_SETTLE_S
# and FLEET_RUN_S the time between all exported and the freeze, FLEET_SCRAPE_S Prometheus's
# scrape and rule interval, FLEET_TIMER_S the allocinfo timer's.
set -uo pipefail
H=$(cd "$(dirname "$0")/.." && pwd)
: "${CACHE_DIR:?}" "${REPO:?}" "${BASEDIR:?}"
. "$BASEDIR/base.conf"
W=$CACHE_DIR/fleet
timeout_s=${FLEET_TIMEOUT:-3600}
# After boot, khugepaged collapses the machine's anonymous memory into
# huge pages (Debian's kernel has THP "always"): alloc_charge_folio grew by
# 12-20 MiB in the first six minutes of three idle machines, at up to
# 30 KiB/s over 15 minutes, and then not at all.  Growth is measured over
# the run after this settling time, when only a leak still grows.
settle_s=${FLEET_SETTLE_S:-600}
run_s=${FLEET_RUN_S:-300}
nvm=${FLEET_VMS:-3}
mem=${FLEET_MEM:-1536M}
# Scrape and export intervals: three TCG machines of one CPU on a busy
# 2-core host answered a scrape (8,000 series through node_exporter) in
# 2.5 s at best and not within 5 s at worst, and requests piled up.
scrape_s=${FLEET_SCRAPE_S:-30}
timer_s=${FLEET_TIMER_S:-15}
# The leak: 16 KiB every 250 ms, 64 KiB/s.
leak_size=16384 leak_period_ms=250
# A site "grows" above a quarter of the leak's rate, 16 KiB/s: over a run
# of five minutes 4.7 MiB that stays allocated.  The leak clears it four
# times over; whether every other site of an idle machine stays under it
# is what the check finds (the notes print each machine's three fastest).
threshold=${FLEET_THRESHOLD:-$((leak_size * 1000 / leak_period_ms / 4))}
pkgdir=${DEB_OUT:-$CACHE_DIR/deb/packages}
ours=$BASE_RELEASE-allocprof-amd64
rules=$REPO/tools/allocinfo/contrib/prometheus
mkdir -p "$W"
VERDICT_NAME=test-fleet
. "$H/verdict.sh"
deadline=$((t0 + timeout_s))
pids=() prom_pid=
stop_all() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	[ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null
	wait 2>/dev/null
	pids=() prom_pid=
}
# The machines and Prometheus stop with the run, however it ends.
finish_run() {
	stop_all
	finish
}
trap 'bad "interrupted"; finish_run' INT TERM
left() { echo $((deadline - $(date +%s))); }

# 1. What goes in: our kernel packages (make deb) and the tool's package
# (build-tool-deb.sh, which make deb runs too).
debs=$(ls "$pkgdir/linux-image-${ours}_"*.deb "$pkgdir/linux-headers-${ours}_"*.deb 2>/dev/null)
if [ "$(grep -c . <<< "$debs")" != 2 ]; then
	bad "packages: want linux-image-$ours and linux-headers-$ours in $pkgdir (make deb)"
	finish_run
fi
ok "packages: $(basename -a $debs | tr '\n' ' ')"
tool=$W/tool
mkdir -p "$tool"
rm -f "$tool"/allocinfo*
# Its own up-to-date check keeps the package while the tool is unchanged.
if ! "$H/debian/build-tool-deb.sh" "$tool/deb" ||
	! cp "$(ls -t "$tool"/deb/allocinfo_*_amd64.deb | head -n 1)" "$tool/"; then
	bad "tool: build-tool-deb.sh made no allocinfo package"
	finish_run
fi
ok "tool: $(basename "$tool"/allocinfo_*.deb)"

# 2. The rules, as promtool sees them.
check "promtool check rules $(basename "$rules")/allocinfo-rules.yml allocinfo-alerts.yml" \
	promtool check rules "$rules/allocinfo-rules.yml" "$rules/allocinfo-alerts.yml"

# 3. The machine (cached): the install test's disk, then ours on it.
t=$(date +%s)
# make test-install may be making the same disk right now (its partial
# files are there and growing): wait for it rather than start over.
for i in $(seq 120); do
	p=$(ls "$CACHE_DIR"/install-image/partial-disk-*.raw 2>/dev/null | head -n 1)
	[ -n "$p" ] && [ $(( $(date +%s) - $(stat -c %Y "$p") )) -lt 120 ] || break
	[ "$i" = 1 ] && echo "image: waiting for another run making $(basename "$p")"
	sleep 10
done
base=$("$H/debian/install-image.sh" "$CACHE_DIR/install-image") ||
	{ bad "image: the Debian 13 disk could not be made"; finish_run; }
img=$("$H/debian/fleet-image.sh" "$W/image" "$base" $debs) ||
	{ bad "image: the fleet's disk could not be made (log: $W/image/fleet-image.log)"; finish_run; }
ok "image: $(basename "$img") ($(( $(date +%s) - t ))s)"

# 4. Prometheus, on free loopback ports like the machines' exporters.
read -r -a ports <<< "$(python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' $((nvm + 1)))"
pport=${ports[0]}
prom=http://127.0.0.1:$pport
names=()
for i in $(seq 1 "$nvm"); do
	names+=("fleet$i")
done
rm -rf "$W/prometheus-data" "$W"/vm-*
{
	printf 'global:\n  scrape_interval: %ss\n  scrape_timeout: %ss\n  evaluation_interval: %ss\n' \
		"$scrape_s" "$scrape_s" "$scrape_s"
	printf 'rule_files:\n  - %s/allocinfo-rules.yml\n  - %s/allocinfo-alerts.yml\n' "$rules" "$rules"
	# node_exporter's textfile collector (the export) and meminfo (for the
	# dashboard's memory in use); its other collectors cost a slow TCG
	# machine seconds per scrape.
	printf 'scrape_configs:\n  - job_name: node\n    params:\n      collect[]: [textfile, meminfo]\n'
	printf '    static_configs:\n'
	for i in $(seq 1 "$nvm"); do
		printf '      - targets: ["127.0.0.1:%s"]\n        labels: {instance: %s}\n' \
			"${ports[$i]}" "${names[$((i - 1))]}"
	done
} > "$W/prometheus.yml"
check "promtool check config" promtool check config "$W/prometheus.yml" > /dev/null
prometheus --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/prometheus-data" \
	--web.listen-address="127.0.0.1:$pport" --storage.tsdb.retention.time=1d \
	> "$W/prometheus.log" 2>&1 &
prom_pid=$!
for _ in $(seq 60); do
	curl -fs "$prom/-/ready" > /dev/null 2>&1 && break
	sleep 1
done
check "prometheus $(prometheus --version 2>&1 | awk 'NR == 1 {print $3}') ready on $prom" \
	curl -fs "$prom/-/ready" -o /dev/null
q() { # an instant query's vector as "instance value" lines ("-" for no instance)
	curl -fsG "$prom/api/v1/query" --data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} |
		python3 -c 'import json, sys
for s in json.load(sys.stdin)["data"]["result"]:
    print(s["metric"].get("instance", "-"), s["value"][1])'
}

# 5. The machines.
echo "boot: $nvm machines of $(basename "$img"), ${mem} and one CPU each, TCG; Prometheus on $prom"
for i in $(seq 1 "$nvm"); do
	name=${names[$((i - 1))]}
	d=$W/vm-$name
	mkdir -p "$d/share/tool"
	qemu-img create -q -f qcow2 -F qcow2 -b "$img" "$d/disk.qcow2"
	cp "$H/debian/fleet-guest.sh" "$d/share/"
	cp "$tool"/allocinfo_*.deb "$d/share/tool/"
	role=plain
	[ "$i" = 1 ] && role=leak
	printf 'NAME=%s\nROLE=%s\nOURS_REL=%s\nLEAK_SIZE=%s\nLEAK_PERIOD_MS=%s\nTIMER_S=%s\n' \
		"$name" "$role" "$ours" "$leak_size" "$leak_period_ms" "$timer_s" > "$d/share/fleet.conf"
	echo run > "$d/share/phase"
	echo "$role" > "$d/role"
	timeout --foreground -k 5 "$(left)" \
		qemu-system-x86_64 -accel tcg -cpu max -m "$mem" -smp 1 \
		-nographic -nodefaults -serial stdio \
		-drive file="$d/disk.qcow2",format=qcow2,if=virtio \
		-virtfs local,path="$d/share",mount_tag=allocprof-fleet,security_model=none \
		-nic user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:${ports[$i]}-:9100 \
		-device virtio-rng-pci \
		< /dev/null > "$d/serial.log" 2>&1 &
	pids+=($!)
	echo "  $name ($role): scraped on 127.0.0.1:${ports[$i]}, serial log $d/serial.log"
done
# Every machine's QEMU runs and no kernel panicked (a panicked machine hangs).
alive() {
	local p
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null || return 1
	done
	! grep -aq 'Kernel panic' "$W"/vm-*/serial.log
}
# Every machine running and exported: Prometheus has allocinfo_bytes of each.
t=$(date +%s)
ready=0
while [ "$(left)" -gt 0 ] && alive; do
	n=$(q 'count(count by (instance) (allocinfo_bytes))' | awk '{print $2}')
	if [ "${n:-0}" = "$nvm" ]; then
		ready=1
		break
	fi
	sleep 5
done
if [ $ready = 0 ]; then
	bad "the machines never all exported to Prometheus (booted: $(grep -l 'ALLOCPROF-FLEET: running' "$W"/vm-*/serial.log | wc -l) of $nvm)"
else
	ok "Prometheus scrapes allocinfo_bytes of all $nvm machines ($(( $(date +%s) - t ))s after boot)"
	echo "settle: ${settle_s}s; run: ${run_s}s"
	end=$(($(date +%s) + settle_s + run_s))
	while [ "$(date +%s)" -lt "$end" ] && alive; do
		sleep 5
	done
	check "the machines stayed up through the settling time and the run" alive
fi

# 6. Freeze; wait until Prometheus holds every machine's frozen sample and
# the rules have been evaluated on it.
t_freeze=$(date +%s.%N)
for name in "${names[@]}"; do
	echo freeze > "$W/vm-$name/share/phase.tmp" && mv "$W/vm-$name/share/phase.tmp" "$W/vm-$name/share/phase"
done
held=0
while [ $ready = 1 ] && [ "$(left)" -gt 0 ] && alive; do
	held=1
	for name in "${names[@]}"; do
		f=$W/vm-$name/share/frozen
		m=$(sed -n 's/^mtime=//p' "$f" 2>/dev/null)
		got=$(q "node_textfile_mtime_seconds{instance=\"$name\",file=~\"(.*/)?allocinfo[.]prom\"}" | awk '{print $2}')
		if [ -z "$m" ] || [ "${got:-}" != "$m" ]; then
			held=0
			break
		fi
	done
	[ $held = 1 ] && break
	sleep 2
done
t_eval=
if [ $held = 1 ]; then
	# Two rule evaluations after the last machine's frozen scrape.
	sleep $((2 * scrape_s + 1))
	t_eval=$(date +%s.%N)
	ok "Prometheus holds every machine's frozen sample ($(awk -v a="$t_eval" -v b="$t_freeze" 'BEGIN {printf "%.0f", a - b}')s after the freeze)"
elif [ $ready = 1 ]; then
	bad "Prometheus never held the frozen sample of every machine"
fi

# 7. PromQL against the machines' own files.
if [ -n "$t_eval" ]; then
	vmargs=()
	for name in "${names[@]}"; do
		vmargs+=(--vm "$name:$(cat "$W/vm-$name/role"):$W/vm-$name/share")
	done
	python3 "$H/debian/fleet-check.py" --prom "$prom" --t-eval "$t_eval" --t-freeze "$t_freeze" \
		"${vmargs[@]}" --leak-size "$leak_size" --leak-period-ms "$leak_period_ms" \
		--threshold "$threshold" --run-s "$run_s" > "$W/check.txt" 2>&1
	cat "$W/check.txt"
	pass=$((pass + $(grep -cE '^ok [0-9]+ ' "$W/check.txt")))
	while read -r l; do
		[ -n "$l" ] && bad "promql: ${l#not ok }"
	done < <(grep -E '^not ok [0-9]+ ' "$W/check.txt")
fi

# 8. The end: the machines unload the leak and power off.
for name in "${names[@]}"; do
	echo end > "$W/vm-$name/share/phase.tmp" && mv "$W/vm-$name/share/phase.tmp" "$W/vm-$name/share/phase"
done
# They power off within a few minutes; a machine that does not is stopped.
stop=$(($(date +%s) + 300))
while [ "$(date +%s)" -lt "$stop" ]; do
	up=0
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && up=1
	done
	[ $up = 0 ] && break
	sleep 2
done
for p in "${pids[@]}"; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
pids=()
for name in "${names[@]}"; do
	guest_verdict "$name" "$W/vm-$name/serial.log" 'ALLOCPROF-FLEET: end'
	grep -E '^(ok|not ok) [0-9]+ |^# ' <<< "$guest_txt"
done
if [ -n "$prom_pid" ]; then
	kill "$prom_pid" 2>/dev/null
	wait "$prom_pid" 2>/dev/null
	prom_pid=
	e=$(grep -E 'level=(error|warn)' "$W/prometheus.log" | grep -v 'Error on ingesting samples that are too old' | head -n 3)
	[ -n "$e" ] && echo "# prometheus.log: $e"
fi
rm -f "$W"/vm-*/disk.qcow2
finish_run
