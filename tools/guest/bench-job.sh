#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Benchmarks, inside the QEMU guest (as /job): two emulated devices with the
# default 256 MiB of VRAM each (the second for the device-group edge); then
# the queue figures again on a gluon-sim device (no SET: scrubs by copy).
set -eu
insmod /radiance.ko emulated_devices=2
/vram_bench
/sem_bench
/queue_bench
/bench-hal kmod:0
/bench-hal group kmod:0 kmod:1
rmmod radiance
echo "queue_bench on an emulated gluon-sim device:"
insmod /radiance.ko emulated_gluon_sim=1
/queue_bench
rmmod radiance
