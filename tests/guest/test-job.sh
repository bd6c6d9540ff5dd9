#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest (as /job): loads radiance.ko (which runs its
# KUnit suites), runs every kselftest, libradiance's kmod tests, the HAL
# conformance suite and the C ABI's test program against kmod:0 and the
# radctl smoke tests, unloads the module. Each prints KTAP; the host turns
# the console into pass/fail (tools/run-qemu.sh).
set -u

# Every race test below means something only on more than one CPU.
cpus=$(grep -c '^processor' /proc/cpuinfo)
echo "radiance-guest: $cpus CPUs online"
/ktap-one.sh guest_runs_on_two_cpus test "$cpus" -ge 2

# The run's own module parameters come on the kernel command line as
# radiance.NAME=VALUE (as modprobe would take them); every reload uses them.
RADIANCE_PARAMS_EXTRA=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^radiance\.//p' | tr '\n' ' ')
export RADIANCE_PARAMS_EXTRA
echo "radiance-guest: module parameters: ${RADIANCE_PARAMS_EXTRA:-(defaults)}"
# Matches radiance_test.h.
insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 launch_timeout_ms=500 $RADIANCE_PARAMS_EXTRA || exit 1
/kunit-ktap.sh

for t in /device_test /bo_test /dmabuf_test /sem_test /sync_file_test /sem_alias_test /queue_test /launch_test /user_test /lifecycle_test; do
	RADIANCE_KO=/radiance.ko "$t"
done

for t in /libradiance-kmod_bo /libradiance-kmod_sem /libradiance-kmod_queue /libradiance-kmod_hal /libradiance-kmod_group; do
	/libtest-ktap.sh "$t" --ignored
done
/radiance-cts --device kmod:0
/radiance-cts --group kmod:0,kmod:1,host
/ktap-one.sh c_abi_test_against_kmod /c_abi_test kmod:0
/radctl-smoke.sh

# A clean unload: the console is checked for splats afterwards.
rmmod radiance
