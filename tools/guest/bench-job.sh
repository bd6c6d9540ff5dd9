#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Benchmarks, inside the QEMU guest (as /job): two emulated devices with the
# default 256 MiB of VRAM each (the second for the device-group edge); the
# price of a tracepoint that is off (the module built with and without);
# the queue figures again on an emulated gluon-sim device (no SET), and on
# devices served by gluon-bridge in model mode, in full and as gluon-sim
# (no SET: freed VRAM is scrubbed by copies through the bridge), with the
# launch round trip through such a device and the cost of a scrub; then
# in socket mode, in front of the sim-model playing gluon-sim.
set -eu

# Waits up to 10 s for PATH to exist.
wait_for() {
	for _ in $(seq 100); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
}

insmod /radiance.ko emulated_devices=2
/vram_bench
/sem_bench
/queue_bench
/bench-hal kmod:0
/bench-hal group kmod:0 kmod:1
rmmod radiance
# What a tracepoint that is off costs: the module with them and without.
/trace_bench /radiance.ko /radiance-untraced.ko
echo "queue_bench on an emulated gluon-sim device:"
insmod /radiance.ko emulated_gluon_sim=1
/queue_bench
rmmod radiance

# The queue figures on a device gluon-bridge serves with ARGS; a launch
# through such a device against the same launch run straight on its model,
# and what a free's scrub costs the next operation there.
bridged() {
	echo "queue_bench on a device served by gluon-bridge model $*:"
	insmod /radiance.ko emulated_devices=0
	/gluon-bridge model "$@" >/tmp/bridge 2>&1 &
	bridge=$!
	wait_for /dev/radiance0
	/queue_bench
	kill "$bridge"
	wait "$bridge" || true
	/gluon-bridge bench-launch "$@"
	/gluon-bridge bench-scrub "$@"
	rmmod radiance
}
bridged
bridged --gluon-sim

# The queue figures on a device served in socket mode, in front of the
# sim-model playing gluon-sim 013add5 (the pid handshake, no MEM SET):
# every command a round trip through two processes, as with gluon-sim.
echo "queue_bench on a device served by gluon-bridge socket (sim-model, pid handshake):"
insmod /radiance.ko emulated_devices=0
/gluon-bridge sim-model /tmp/sim.sock --handshake pid >/tmp/sim 2>&1 &
sim=$!
wait_for /tmp/sim.sock
/gluon-bridge socket /tmp/sim.sock --handshake pid --vram-mib 256 --builtins 0x3f >/tmp/bridge 2>&1 &
bridge=$!
wait_for /dev/radiance0
/queue_bench
kill "$bridge"
wait "$bridge" || true
wait "$sim" || true
rmmod radiance
