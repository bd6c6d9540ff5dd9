#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demo, inside the QEMU guest (as /job): load radiance.ko with one
# emulated device and show it through radctl (which uses libradiance).
set -eu
insmod /radiance.ko
echo "--- radctl list"
/radctl list
echo "--- radctl info kmod:0"
/radctl info kmod:0
echo "--- radctl info --json kmod:0"
/radctl info --json kmod:0
rmmod radiance
