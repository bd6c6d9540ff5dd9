#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest on the debug kernel as /job for tools/fuzz.sh,
# the long fuzzing mode: radiance-fuzz from the corpus in /corpus for
# radiance_fuzz.seconds (kernel command line), printing each new corpus
# entry for the host to keep and the edges reached, then kmemleak and the module's unload.
set -u
. /suite.sh || exit 1
plan fuzzer kmemleak_after_fuzzer kmemleak_after_unload

param() {
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^radiance_fuzz\.$1=//p")
	echo "${v:-$2}"
}

/kmemleak.sh --clear
insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 launch_timeout_ms=100 || exit 1
mkdir -p /corpus
suite fuzzer /radiance-fuzz fuzz --seed "$(param seed 1)" --seconds "$(param seconds 600)" \
	--procs "$(param procs 2)" --corpus-in /corpus --print-corpus --print-cover --status 60
suite kmemleak_after_fuzzer /kmemleak.sh kmemleak_after_fuzzer
rmmod radiance
suite kmemleak_after_unload /kmemleak.sh kmemleak_after_unload
