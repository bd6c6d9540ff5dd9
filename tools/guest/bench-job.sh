#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Benchmarks, inside the QEMU guest (as /job): one emulated device with the
# default 256 MiB of VRAM.
set -eu
insmod /radiance.ko
/vram_bench
/sem_bench
/queue_bench
/bench-hal kmod:0
rmmod radiance
