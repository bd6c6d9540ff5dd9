#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest (as /job): loads radiance.ko (which runs its
# KUnit suites), runs every kselftest, libradiance's kmod tests, the HAL
# conformance suite and the C ABI's test program against kmod:0 and the
# radctl smoke tests, unloads the module. Each prints KTAP; the host turns
# the console into pass/fail (tools/run-qemu.sh), holding the job to its
# plan: every suite below must run and finish (tests/guest/suite.sh).
set -u
. /suite.sh || exit 1

kselftests="device_test bo_test dmabuf_test sem_test sync_file_test sem_alias_test queue_test launch_test user_test watchdog_test lifecycle_test trace_test"
libtests="libradiance-kmod_bo libradiance-kmod_sem libradiance-kmod_queue libradiance-kmod_hal libradiance-kmod_group"
# The module's KUnit suites: tools/build-guest.sh lists them from kmod/.
kunit=$(cat /kunit-suites) && [ -n "$kunit" ] || { echo "radiance-guest: no KUnit manifest (/kunit-suites)"; exit 1; }
plan guest_runs_on_two_cpus $kunit kunit_manifest $kselftests $libtests \
	cts_kmod0 cts_group c_abi_test_against_kmod radctl_smoke

# Every race test below means something only on more than one CPU.
cpus=$(grep -c '^processor' /proc/cpuinfo)
echo "radiance-guest: $cpus CPUs online"
test_one guest_runs_on_two_cpus test "$cpus" -ge 2

# The run's own module parameters come on the kernel command line as
# radiance.NAME=VALUE (as modprobe would take them); every reload uses them.
RADIANCE_PARAMS_EXTRA=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^radiance\.//p' | tr '\n' ' ')
export RADIANCE_PARAMS_EXTRA
echo "radiance-guest: module parameters: ${RADIANCE_PARAMS_EXTRA:-(defaults)}"
# Matches radiance_test.h.
insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 launch_timeout_ms=100 $RADIANCE_PARAMS_EXTRA || exit 1
for s in $kunit; do
	suite "$s" /kunit-ktap.sh "$s"
done
suite kunit_manifest /kunit-ktap.sh --only $kunit

for t in $kselftests; do
	suite "$t" env RADIANCE_KO=/radiance.ko "/$t"
done

for t in $libtests; do
	suite "$t" /libtest-ktap.sh "/$t" --ignored
done
suite cts_kmod0 /radiance-cts --device kmod:0
suite cts_group /radiance-cts --group kmod:0,kmod:1,host
test_one c_abi_test_against_kmod /c_abi_test kmod:0
suite radctl_smoke /radctl-smoke.sh

# A clean unload: the console is checked for splats afterwards.
rmmod radiance
