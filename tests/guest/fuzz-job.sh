#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest on the debug kernel as /job for tools/fuzz.sh,
# the long fuzzing mode: radiance-fuzz from the corpus in /corpus for
# radiance_fuzz.seconds (kernel command line), printing each new corpus
# entry for the host to keep and the edges reached, then kmemleak and the
# module's unload. The time is split between emulated devices speaking
# gluon-sim-16 and gluon-24: the module encodes and decodes both, and a
# device speaks one.
set -u
. /suite.sh || exit 1
plan fuzzer_sim16 kmemleak_after_sim16 fuzzer_gluon24 kmemleak_after_gluon24

param() {
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^radiance_fuzz\.$1=//p")
	echo "${v:-$2}"
}

half=$(($(param seconds 600) / 2))
mkdir -p /corpus
/kmemleak.sh --clear
for dialect in sim16:1 gluon24:2; do
	name=${dialect%:*}
	insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 launch_timeout_ms=100 \
		emulated_dialect="${dialect#*:}" || exit 1
	suite "fuzzer_$name" /radiance-fuzz fuzz --seed "$(param seed 1)" --seconds "$half" \
		--procs "$(param procs 2)" --corpus-in /corpus --print-corpus --print-cover --status 60
	rmmod radiance
	suite "kmemleak_after_$name" /kmemleak.sh "kmemleak_after_$name"
done
