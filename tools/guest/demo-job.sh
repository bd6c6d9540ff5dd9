#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo, inside the QEMU guest (as /job): load radiance.ko with one
# emulated device, show it through radctl, run a buffer workload and a HAL
# pipeline through libradiance and work through a queue, and show that
# everything was freed.
set -eu
insmod /radiance.ko
echo "--- radctl list"
/radctl list
echo "--- radctl info kmod:0"
/radctl info kmod:0
echo "--- radctl info --json kmod:0"
/radctl info --json kmod:0
echo "--- kmod_buffers (libradiance)"
/kmod_buffers kmod:0
echo "--- hal_pipeline (the libradiance HAL: two queues, one timeline, a failure)"
/hal_pipeline kmod:0
echo "--- radctl submit launch (vector add on the emulated Gluon, checked)"
/radctl submit launch --count 4096
echo "--- radctl submit printf (the device's printf, drained to the host)"
/radctl submit printf --count 4
echo "--- radctl mem kmod:0"
/radctl mem kmod:0
rmmod radiance
echo "demo: /dev/radiance0 shown by radctl; buffers, a HAL pipeline, a vector add and device printf ran on it; the module unloaded"
