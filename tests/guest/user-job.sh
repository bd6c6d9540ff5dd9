#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest (as /job): the devices are served by
# gluon-bridge in model mode through the control node (radiance.ko with no
# emulated device), and the kselftests, libradiance's kmod tests, the
# conformance suite and the C ABI's test run against them. Then the bridge's
# death: killed with SIGKILL while a client's work is in flight, the client
# gets errors, nothing hangs, the module unloads. Then two user devices and
# an emulated one at once.
set -u
. /suite.sh || exit 1

# Not here: user_test declares a device of its own (test-job runs it), and
# lifecycle_test reloads the module with emulated devices.
kselftests="device_test bo_test dmabuf_test sem_test sync_file_test sem_alias_test queue_test launch_test"
libtests="libradiance-kmod_bo libradiance-kmod_sem libradiance-kmod_queue libradiance-kmod_hal"
plan bridge_serves_two_devices $kselftests $libtests cts_kmod0 c_abi_test_against_a_user_device \
	client_fails_when_its_bridge_dies devices_freed_when_bridge_and_clients_are_gone \
	module_unloads_after_its_servers_died user_and_emulated_devices_side_by_side cts_kmod2

# Matches radiance_test.h: 64 MiB of VRAM each, a 500 ms launch timeout.
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=500 || exit 1

# Starts bridge NAME in model mode (further arguments are its), logging to
# /tmp/NAME; waits for its node and prints the bridge's pid.
serve() {
	log=/tmp/$1
	shift
	/gluon-bridge model --vram-mib 64 "$@" >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		node=$(head -n1 "$log" 2>/dev/null)
		[ -n "$node" ] && [ -e "/dev/$node" ] && break
		sleep 0.1
	done
	echo "$pid"
}

b0=$(serve b0)
b1=$(serve b1)
test_one bridge_serves_two_devices sh -c 'test -e /dev/radiance0 && test -e /dev/radiance1'

# The bridge declares the emulated devices' shape (radiance_test.h);
# RADIANCE_TEST_SERVER tells the tests that GET_INFO says so as a user
# device whose VRAM the CPU cannot map.
for t in $kselftests; do
	suite "$t" env RADIANCE_TEST_SERVER=bridge "/$t"
done

for t in $libtests; do
	suite "$t" /libtest-ktap.sh "/$t" --ignored
done
suite cts_kmod0 /radiance-cts --device kmod:0
test_one c_abi_test_against_a_user_device /c_abi_test kmod:0

# Waits until process $1 (not a child of this shell) is gone.
gone() {
	while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
}

# The bridge dies mid-stream: a client runs the conformance suite on its
# device over and over until a run fails, and says how it failed. It must
# end (not hang) with ENODEV's message.
sh -c 'while /radiance-cts --device kmod:1 >/tmp/client.out 2>&1; do :; done' &
client=$!
sleep 2
kill -KILL "$b1"
wait "$client"
gone "$b1"
test_one client_fails_when_its_bridge_dies sh -c \
	'cat /tmp/client.out | grep "not ok" | head -n 3; grep -qi "no such device\|ENODEV\|not found\|no /dev" /tmp/client.out && ! test -e /dev/radiance1'
test_one devices_freed_when_bridge_and_clients_are_gone \
	grep -qx 'devices_live 1' /sys/kernel/debug/radiance/devices

kill -TERM "$b0"
gone "$b0"
test_one module_unloads_after_its_servers_died rmmod radiance

# Two user devices beside an emulated one.
insmod /radiance.ko emulated_devices=1 launch_timeout_ms=500 || exit 1
b1=$(serve b1 --dialect gluon-24)
b2=$(serve b2 --gluon-sim)
test_one user_and_emulated_devices_side_by_side sh -c \
	'grep -qx "nodes 3" /sys/kernel/debug/radiance/devices && /radctl info kmod:1 && /radctl info kmod:2'
suite cts_kmod2 /radiance-cts --device kmod:2
kill -TERM "$b1" "$b2"
gone "$b1"
gone "$b2"
rmmod radiance
