#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest (as /job): the devices are served by
# gluon-bridge in model mode through the control node (radiance.ko with no
# emulated device), and the kselftests, libradiance's kmod tests, the
# conformance suite and the C ABI's test run against them. Then the bridge's
# death: killed with SIGKILL while a client's work is in flight, the client
# gets errors, nothing hangs, the module unloads. Then two user devices and
# an emulated one at once. Then socket mode, as a person runs gluon-sim:
# the bridge in front of its sim-model playing gluon-sim in each handshake,
# the same suites, and what broke with the real gluon-sim: clients at once
# against a sim that drops what a busy engine gets, a stream after a
# reset, a kernel that never ends on a sim that cannot be reset, the sim
# dying mid-launch, a riscv-tests verdict.
set -u
. /suite.sh || exit 1
. /bridge.sh || exit 1

# Not here: user_test declares a device of its own (test-job runs it), and
# lifecycle_test reloads the module with emulated devices.
kselftests="device_test bo_test dmabuf_test sem_test sync_file_test sem_alias_test queue_test launch_test"
libtests="libradiance-kmod_bo libradiance-kmod_sem libradiance-kmod_queue libradiance-kmod_hal"
plan bridge_serves_two_devices $kselftests $libtests cts_kmod0 c_abi_test_against_a_user_device \
	client_fails_when_its_bridge_dies devices_freed_when_bridge_and_clients_are_gone \
	module_unloads_after_its_servers_died user_and_emulated_devices_side_by_side cts_kmod2
# Socket mode, in each handshake.
socket_suites="reports_the_shape_it_was_given sem_test sync_file_test launch_test queue_test \
	libradiance-kmod_bo libradiance-kmod_sem libradiance-kmod_hal libradiance-kmod_queue cts_kmod0 c_abi_test \
	bo_test dmabuf_test"
for hs in memfd pid; do
	plan $(for t in $socket_suites; do echo "socket_${hs}_$t"; done)
done
plan the_pid_handshake_goes_through_process_vm_readv cts_on_a_device_without_builtins_or_caps \
	a_sim_dead_at_connect_is_named_with_the_overcommit_setting
plan three_clients_at_once_against_a_dropping_sim a_command_behind_scrubs_is_not_overdue \
	a_slow_sim_that_computes_is_never_reset a_stopped_sim_is_reset_and_the_device_goes_on \
	a_stream_works_after_a_reset_the_sim_could_not_take \
	riscv_tests_verdict_through_socket_mode a_launch_that_never_ends_retires_its_stream_and_the_rest_goes_on \
	run_reports_the_launch_when_the_sim_dies

# Matches radiance_test.h: 64 MiB of VRAM each, a 500 ms launch timeout.
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=500 || exit 1

set -- $(serve b0 model --vram-mib 64)
b0=$1
set -- $(serve b1 model --vram-mib 64)
b1=$1
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
set -- $(serve b1 model --vram-mib 64 --dialect gluon-24)
b1=$1
set -- $(serve b2 model --vram-mib 64 --gluon-sim)
b2=$1
test_one user_and_emulated_devices_side_by_side sh -c \
	'grep -qx "nodes 3" /sys/kernel/debug/radiance/devices && /radctl info kmod:1 && /radctl info kmod:2'
suite cts_kmod2 /radiance-cts --device kmod:2
kill -TERM "$b1" "$b2"
gone "$b1"
gone "$b2"
rmmod radiance

# Starts sim-model NAME on /tmp/NAME.sock in handshake $2 (further arguments
# are its), logging to /tmp/NAME.log; waits for its socket, prints its pid.
sim() {
	name=$1 hs=$2
	shift 2
	/gluon-bridge sim-model "/tmp/$name.sock" --handshake "$hs" --vram-mib 64 "$@" >"/tmp/$name.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		[ -S "/tmp/$name.sock" ] && break
		sleep 0.1
	done
	echo "$pid"
}
# Bridge NAME in front of sim $2 (handshake $3; further arguments are its),
# declaring the test devices' shape and the model's built-ins; prints its
# pid.
front() {
	name=$1 s=$2 hs=$3
	shift 3
	set -- $(serve "$name" socket "/tmp/$s.sock" --handshake "$hs" --vram-mib 64 --shape 4,8,16 --builtins 0x3f "$@")
	echo "$1"
}

# The suites through socket mode, in each handshake, on two devices (as
# the model-mode bridges above). The sim-model is a gluon-sim device (no
# SET, FENCE, WAIT or counters, whole words, a stream depth of 1), so the
# suites run as in gluon-sim mode. Every command is a round trip through
# two processes, one engine kind at a time (milliseconds each under TCG),
# and the bridge holds a stream's command behind other streams' of its
# engine kind: a 5 s watchdog (scrubs ahead of a command do not count: the
# kernel ages it only while the server stands still). A SPIN ends after
# 700 ms, so that the reset of a destroyed queue's launch, which the sim
# answers later, holds up no more. RADIANCE_TEST_SERVER=socket: what cannot
# run here (device printf, which gluon-sim prints to its own console;
# queue_test's throughput and SPIN-reset cases) skips with its reason.
export RADIANCE_PARAMS_EXTRA=emulated_gluon_sim=1
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=5000 || exit 1
for hs in memfd pid; do
	s0=$(sim "s0$hs" "$hs" --spin-ms 700)
	s1=$(sim "s1$hs" "$hs" --spin-ms 700)
	b0=$(front "b0$hs" "s0$hs" "$hs")
	b1=$(front "b1$hs" "s1$hs" "$hs")
	test_one "socket_${hs}_reports_the_shape_it_was_given" sh -c \
		"cat /tmp/b0$hs /tmp/s0$hs.log; /radctl info kmod:0 >/tmp/info; cat /tmp/info; grep -q '^cores  *4$' /tmp/info &&
		grep -q '^warps per core  *8$' /tmp/info && grep -q '^threads per warp  *16$' /tmp/info"
	for t in sem_test sync_file_test launch_test queue_test; do
		suite "socket_${hs}_$t" env RADIANCE_TEST_SERVER=socket "/$t"
	done
	for t in libradiance-kmod_bo libradiance-kmod_sem libradiance-kmod_hal; do
		suite "socket_${hs}_$t" /libtest-ktap.sh "/$t" --ignored
	done
	suite "socket_${hs}_libradiance-kmod_queue" /libtest-ktap.sh --not-here device_printf_reaches_the_caller \
		"socket mode: gluon-sim prints device printf to its own console, none reaches the host" \
		/libradiance-kmod_queue --ignored
	suite "socket_${hs}_cts_kmod0" /radiance-cts --device kmod:0
	test_one "socket_${hs}_c_abi_test" /c_abi_test kmod:0
	# Last: exhausting VRAM leaves megabytes to scrub by MiB copies, a
	# backlog that would slow the suites after it.
	for t in bo_test dmabuf_test; do
		suite "socket_${hs}_$t" env RADIANCE_TEST_SERVER=socket "/$t"
	done
	kill -TERM "$b0" "$b1"
	for p in "$b0" "$b1" "$s0" "$s1"; do
		gone "$p"
	done
done
# The sim-model reaches a pid-handshake client only by process_vm_readv
# and writev, and counts the bytes it moved so when its client leaves.
test_one the_pid_handshake_goes_through_process_vm_readv sh -c \
	"grep sim-model: /tmp/s0pid.log /tmp/s1pid.log; grep -q ' [1-9][0-9]* bytes by process_vm_readv/writev\$' /tmp/s0pid.log"

# The conformance suite on a served device that declares no built-ins and
# no capabilities, as gluon-sim is served by hand: every case it cannot
# run skips, saying why, rather than failing.
s=$(sim sbare pid --spin-ms 700)
set -- $(serve bbare socket /tmp/sbare.sock --handshake pid --vram-mib 64 --shape 4,8,16)
b=$1
suite cts_on_a_device_without_builtins_or_caps /radiance-cts --device kmod:0
kill -TERM "$b"
gone "$b"
gone "$s"

# gluon-sim dies at connect where memory is not overcommitted: the bridge
# says it died, points at its output and names the setting, and declares
# no device.
s=$(sim sdead pid --die-at-connect)
/gluon-bridge socket /tmp/sdead.sock --handshake pid >/tmp/bdead 2>&1
rc=$?
gone "$s"
test_one a_sim_dead_at_connect_is_named_with_the_overcommit_setting sh -c \
	"cat /tmp/bdead /tmp/sdead.log; [ $rc = 1 ] && grep -q 'and exited: it died at connect' /tmp/bdead &&
	grep -q 'vm.overcommit_memory=1' /tmp/bdead && ! grep -q 'other one' /tmp/bdead && ! test -e /dev/radiance0"
unset RADIANCE_PARAMS_EXTRA

# Three processes at once, against a sim that drops a command whose engine
# is busy (gluon-sim e554ff7): the bridge keeps one command per engine kind
# at the sim, so every client completes and the sim dropped nothing.
s=$(sim sdrop memfd --drop-busy --latency-ms 5)
b=$(front bdrop sdrop memfd)
clients=
for i in 1 2 3; do
	sh -c '/radctl submit launch --count 40 && /radctl submit copy --bytes 100000 && /radctl submit fill --bytes 10000' \
		>"/tmp/client$i.out" 2>&1 &
	clients="$clients $!"
done
clients_ok=0
for c in $clients; do
	wait "$c" && clients_ok=$((clients_ok + 1))
done
kill -TERM "$b"
gone "$b"
gone "$s"
test_one three_clients_at_once_against_a_dropping_sim sh -c \
	"cat /tmp/client[123].out /tmp/sdrop.log; [ $clients_ok = 3 ] && grep -q ' 0 dropped\$' /tmp/sdrop.log && ! grep -q 'dropped a command' /tmp/sdrop.log"
rmmod radiance

# A command behind a backlog of scrubs is not the device's yet: 8 MiB of
# VRAM freed is 32 copies of 256 KiB of zeros, 300 ms each at this sim,
# ahead of the next client's launch (a launch may reach any VRAM, so it
# waits for the whole scrub; the copies that upload its buffers wait only
# for the scrub's commands over their part); the watchdog (1500 ms) must
# not reset the device for it while the server keeps answering, nor once
# the server takes it (it ages from then).
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=1500 || exit 1
s=$(sim sscrub pid --latency-ms 300)
b=$(front bscrub sscrub pid)
/radctl submit copy --bytes 8388608 >/tmp/scrub.out 2>&1 && /radctl submit launch --count 64 >>/tmp/scrub.out 2>&1
rc=$?
test_one a_command_behind_scrubs_is_not_overdue sh -c \
	"cat /tmp/scrub.out; [ $rc = 0 ] && grep -qx 'device_resets 0' /sys/kernel/debug/radiance/radiance0/mem"
kill -TERM "$b"
gone "$b"
gone "$s"
rmmod radiance

# Slow is not hung, on a 100 ms watchdog: a sim whose every command takes
# 400 ms, computing all along, is never reset (with --cpu-progress the
# bridge reports its CPU time as the progress of what it holds, scrubs
# included). Stopped (SIGSTOP), it computes nothing: the device is reset,
# the kernel log says for how long nothing moved, and once the sim goes on
# the device works again.
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=100 || exit 1
s=$(sim sslow pid --latency-ms 400 --compute)
b=$(front bslow sslow pid --cpu-progress)
{ /radctl submit copy --bytes 65536 && /radctl submit fill --bytes 4096 && /radctl submit launch --count 4; } \
	>/tmp/slow.out 2>&1
rc=$?
test_one a_slow_sim_that_computes_is_never_reset sh -c \
	"cat /tmp/slow.out; [ $rc = 0 ] && grep -qx 'device_resets 0' /sys/kernel/debug/radiance/radiance0/mem"
kill -TERM "$b"
gone "$b"
gone "$s"
s=$(sim sstop pid --latency-ms 1)
b=$(front bstop sstop pid --cpu-progress)
/radctl submit copy --bytes 4096 >/tmp/stop.out 2>&1
before=$?
kill -STOP "$s"
/radctl submit copy --bytes 4096 >>/tmp/stop.out 2>&1
stopped=$?
kill -CONT "$s"
/radctl submit copy --bytes 4096 >>/tmp/stop.out 2>&1
after=$?
test_one a_stopped_sim_is_reset_and_the_device_goes_on sh -c \
	"cat /tmp/stop.out; dmesg | grep 'no progress for' | tail -n 1; [ $before = 0 ] && [ $stopped != 0 ] && [ $after = 0 ] &&
	grep -qx 'device_resets 1' /sys/kernel/debug/radiance/radiance0/mem && dmesg | grep -q 'stream [0-3]: no progress for [0-9]* ms'"
kill -TERM "$b"
gone "$b"
gone "$s"
rmmod radiance

# ELFs by hand, and riscv-tests' verdict (radctl-smoke.sh).
RADCTL_SMOKE_LIB=1 . /radctl-smoke.sh
elf32 0x01300000 16 0x01300000 0 >/tmp/any.elf

# A stream after a reset: a SPIN (700 ms) is given up by the watchdog
# (500 ms); the sim still runs it, so the bridge retires its stream; then
# the sim answers, the bridge drops that answer and puts the stream back
# in service; work on every stream, that one included, goes on.
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=500 || exit 1
s=$(sim sstale pid --spin-ms 700)
b=$(front bstale sstale pid)
test_one a_stream_works_after_a_reset_the_sim_could_not_take sh -c \
	'/radctl run /tmp/any.elf --entry 0xffff0300; [ $? = 3 ] && for i in 1 2 3 4 5 6; do /radctl submit launch --count 8 || exit 1; done &&
	cat /tmp/bstale && grep -q "retired" /tmp/bstale && grep -q "back in service" /tmp/bstale &&
	/radctl info | grep -q "^streams  *4$"'
verdict 0700000001000000 >/tmp/v.out 2>&1
rc=$?
test_one riscv_tests_verdict_through_socket_mode sh -c \
	"cat /tmp/v.out; [ $rc = 4 ] && grep -q 'failed case 3' /tmp/v.out"
kill -TERM "$b"
gone "$b"
gone "$s"

# A kernel that never ends, on a sim that has no reset: the watchdog gives
# it up, the sim keeps it, so the bridge retires its stream; copies and
# fills go on the other streams at once, radctl shows the stream retired,
# and the device stays.
s=$(sim sspin memfd)
b=$(front bspin sspin memfd --timeout-ms 1500)
/radctl run /tmp/any.elf --entry 0xffff0300 >/tmp/spin.out 2>&1
spin_rc=$?
start=$(date +%s)
/radctl submit copy --bytes 4096 >/tmp/after.out 2>&1 && /radctl submit fill --bytes 65536 >>/tmp/after.out 2>&1
rc=$?
took=$(($(date +%s) - start))
/radctl info >/tmp/info.out 2>&1
test_one a_launch_that_never_ends_retires_its_stream_and_the_rest_goes_on sh -c \
	"cat /tmp/spin.out /tmp/after.out /tmp/info.out /tmp/bspin; [ $spin_rc = 3 ] && [ $rc = 0 ] && [ $took -lt 5 ] &&
	grep -q 'stream [0-3] retired' /tmp/bspin && grep -q '^streams  *4 (1 retired: [0-3])$' /tmp/info.out &&
	kill -0 $b && test -e /dev/radiance0"
kill -TERM "$b"
gone "$b"
kill -KILL "$s"
gone "$s"
rmmod radiance

# The sim dies mid-launch: radctl run reports the launch's own failure
# (exit 3), not a later call's (a watchdog longer than the kill's delay).
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=20000 || exit 1
s=$(sim sdie pid)
b=$(front bdie sdie pid)
/radctl run /tmp/any.elf --entry 0xffff0300 >/tmp/die.out 2>&1 &
run=$!
sleep 2
kill -KILL "$s"
wait "$run"
rc=$?
gone "$b"
test_one run_reports_the_launch_when_the_sim_dies sh -c \
	"cat /tmp/die.out; echo exit $rc; [ $rc = 3 ] && grep -q '^fault: ' /tmp/die.out && ! grep -q QUEUE_CREATE /tmp/die.out"
rmmod radiance
