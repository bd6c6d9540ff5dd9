#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest (as /job) on a distribution's own kernel, booted
# unchanged, with the radiance.ko that tools/build-for-distro.sh built for it
# and reference.ko, one of that kernel's own modules: the vermagic lines
# must agree, both modules load, the kselftests that need no debug kernel
# and the conformance suite on kmod:0 pass, and the module unloads cleanly
# (the host checks the console for splats afterwards).
set -u
. /suite.sh || exit 1

kselftests="device_test bo_test dmabuf_test sem_test sync_file_test sem_alias_test queue_test launch_test user_test watchdog_test lifecycle_test trace_test"
plan vermagic_is_the_kernels_own vermagic_names_the_running_kernel the_kernels_own_module_loads \
	module_taint_is_only_out_of_tree_and_unsigned $kselftests cts_kmod0

# A module's vermagic string, read from its .modinfo strings (busybox
# modinfo wants a modules.dep even for a path).
vermagic() {
	tr '\0' '\n' <"$1" | sed -n 's/^vermagic=//p'
}

release=$(uname -r)
ours=$(vermagic /radiance.ko)
theirs=$(vermagic /reference.ko)
echo "radiance-guest: running $release"
echo "radiance-guest: radiance.ko vermagic: $ours"
echo "radiance-guest: reference.ko vermagic: $theirs"
test_one vermagic_is_the_kernels_own test -n "$ours" -a "$ours" = "$theirs"
test_one vermagic_names_the_running_kernel test "${ours%% *}" = "$release"
# The guest itself can load the kernel's own modules: a failure below is
# radiance.ko's.
test_one the_kernels_own_module_loads insmod /reference.ko

insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 launch_timeout_ms=100 || exit 1
# Unsigned and out of tree: the kernel says so in the taint (E, O), and
# nothing else.
test_one module_taint_is_only_out_of_tree_and_unsigned \
	sh -c 'cat /sys/module/radiance/taint; [ "$(cat /sys/module/radiance/taint)" = OE ]'

for t in $kselftests; do
	suite "$t" env RADIANCE_KO=/radiance.ko "/$t"
done
suite cts_kmod0 /radiance-cts --device kmod:0

rmmod radiance
