#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest on the debug kernel as /job for tools/fuzz.sh,
# the long fuzzing mode: radiance-fuzz from the corpus in /corpus for
# radiance_fuzz.seconds (kernel command line), printing each new corpus
# entry for the host to keep and the edges reached, then kmemleak and the
# module's unload. The time is split three ways between emulated devices
# speaking gluon-sim-16, gluon-24, and gluon-sim-16 as gluon-sim does it:
# the module encodes and decodes both dialects, and on the last makes up
# what gluon-sim lacks (fills, device-to-device copies, sub-word ranges)
# from what it has, one command a stream at a time, on a device slowed so
# that queues back up behind it. Before them the module-load sweep loads
# the module itself, to reach init and exit and their unwinding under
# faults, which the fuzzer's programs cannot.
set -u
. /suite.sh || exit 1
plan module_load kmemleak_after_module_load fuzzer_sim16 kmemleak_after_sim16 \
	fuzzer_gluon24 kmemleak_after_gluon24 fuzzer_gluon_sim kmemleak_after_gluon_sim

param() {
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^radiance_fuzz\.$1=//p")
	echo "${v:-$2}"
}

part=$(($(param seconds 600) / 3))
mkdir -p /corpus
/kmemleak.sh --clear
suite module_load /radiance-fuzz load --print-cover
suite kmemleak_after_module_load /kmemleak.sh kmemleak_after_module_load
# Each part's module parameters are the load sweep's cases of the same
# name (tools/fuzz/module_load.c), which it has just loaded and unloaded.
for name in sim16 gluon24 gluon_sim; do
	params=$(/radiance-fuzz params "$name") || exit 1
	# shellcheck disable=SC2086 # the module parameters, one word each
	insmod /radiance.ko $params || exit 1
	suite "fuzzer_$name" /radiance-fuzz fuzz --seed "$(param seed 1)" --seconds "$part" \
		--procs "$(param procs 2)" --corpus-in /corpus --print-corpus --print-cover --status 60
	rmmod radiance
	suite "kmemleak_after_$name" /kmemleak.sh "kmemleak_after_$name"
done
