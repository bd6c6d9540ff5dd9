#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest on the debug kernel (KASAN, KCOV, kmemleak,
# fault injection, lockdep; tools/build-kernel.sh --debug) as /job: the
# whole guest suite of test-job.sh, the module-load sweep, the stress
# tests, the fail-nth sweep, then radiance-fuzz in its CI budget (fixed
# seed, fixed number of executions), with a kmemleak scan after each as a test of its own and a
# last one after the module is unloaded. The host fails the run on any
# KASAN, lockdep, WARN or BUG line (tools/run-qemu.sh).
#
# The fuzzer's budget comes from the kernel command line as
# radiance_fuzz.execs=N (default 12000) and radiance_fuzz.seed=N (default 1).
set -u
. /suite.sh || exit 1
# test-job.sh declares its own suites.
plan kmemleak_after_guest_suite module_load kmemleak_after_module_load stress_test \
	kmemleak_after_stress fail_nth kmemleak_after_fail_nth fuzzer kmemleak_after_fuzzer \
	kmemleak_after_unload

echo "radiance-guest: the debug kernel, $(uname -r)"

param() {
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^radiance_fuzz\.$1=//p")
	echo "${v:-$2}"
}
execs=$(param execs 12000)
seed=$(param seed 1)

# kmemleak NAME: suite NAME, one test: no leak since the last scan.
kmemleak() {
	suite "$1" /kmemleak.sh "$1"
}

# What the kernel itself left suspected before we started is not ours.
/kmemleak.sh --clear

# The whole guest suite (tests/guest/test-job.sh: KUnit, the kselftests,
# libradiance's kmod tests, the conformance suite, the C ABI test, radctl),
# which loads and unloads the module itself. Its status is this job's
# (a job that could not start, a failed unload), after the rest has run.
start=$(date +%s)
sh /test-job.sh
guest_suite_rc=$?
echo "radiance-guest: the guest suite took $(($(date +%s) - start)) s"
kmemleak kmemleak_after_guest_suite

# Init and exit, and init's unwinding at each of its fault sites: the
# sweep loads the module itself, so it goes before the load below.
start=$(date +%s)
suite module_load /radiance-fuzz load
echo "radiance-guest: the module-load sweep took $(($(date +%s) - start)) s"
kmemleak kmemleak_after_module_load

# Matches radiance_test.h.
insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 launch_timeout_ms=100 || exit 1
suite stress_test env RADIANCE_KO=/radiance.ko /stress_test
kmemleak kmemleak_after_stress

start=$(date +%s)
suite fail_nth /radiance-fuzz fail-nth
echo "radiance-guest: fail-nth sweep took $(($(date +%s) - start)) s"
kmemleak kmemleak_after_fail_nth

suite fuzzer /radiance-fuzz fuzz --seed "$seed" --execs "$execs" --procs 2 --status 60
kmemleak kmemleak_after_fuzzer

rmmod radiance
kmemleak kmemleak_after_unload
exit "$guest_suite_rc"
