#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs the driver benchmarks in QEMU and prints their figures. Compare ratios
# within one run: absolute times under TCG are noise.
source "$(dirname "$0")/lib.sh"

"$TOP"/tools/install-toolchain.sh
"$TOP"/tools/build-kernel.sh >/dev/null
stage=$("$TOP"/tools/build-guest.sh)
for bench in vram_bench sem_bench queue_bench; do
	gcc -O2 -Wall -Werror -static -pthread -I"$TOP/uapi/include" -I"$TOP/tests/kselftest" \
		-o "$stage/$bench" "$TOP/tools/bench/$bench.c"
done
cp "$TOP"/tools/guest/bench-job.sh "$stage/job"
"$TOP"/tools/make-initramfs.sh "$BUILD/bench.cpio.gz" "$stage"
exec "$TOP"/tools/run-qemu.sh --no-results-ok "$BUILD/bench.cpio.gz"
