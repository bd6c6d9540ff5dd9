#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest booted with swiotlb=force (as /job): every test
# that moves data between host memory and the device, with every DMA mapping
# bounced. Pinned BOs hold bounce slots while they live, so the BO tests
# that pin hundreds of MiB stay in the main job.
set -u
. /suite.sh || exit 1

kselftests="queue_test launch_test"
libtests="libradiance-kmod_queue libradiance-kmod_hal"
plan $kselftests $libtests cts_kmod0

# The run's own module parameters come on the kernel command line as
# radiance.NAME=VALUE (as modprobe would take them); every reload uses them.
RADIANCE_PARAMS_EXTRA=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^radiance\.//p' | tr '\n' ' ')
export RADIANCE_PARAMS_EXTRA
echo "radiance-guest: module parameters: ${RADIANCE_PARAMS_EXTRA:-(defaults)}"
# Matches radiance_test.h.
insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 launch_timeout_ms=100 $RADIANCE_PARAMS_EXTRA || exit 1

for t in $kselftests; do
	suite "$t" env RADIANCE_KO=/radiance.ko "/$t"
done
for t in $libtests; do
	suite "$t" /libtest-ktap.sh "/$t" --ignored
done
suite cts_kmod0 /radiance-cts --device kmod:0

rmmod radiance
