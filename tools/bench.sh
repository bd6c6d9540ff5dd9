#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs the driver benchmarks in QEMU and prints their figures. Compare ratios
# within one run: absolute times under TCG are noise.
#
#	tools/bench.sh [test|debian|both]
#
# On two kernels (both by default): the test kernel, whose lockdep
# (CONFIG_PROVE_LOCKING) makes every lock several times dearer than it is
# for a user, and Debian 13's own kernel with radiance.ko built for it
# (tools/build-for-distro.sh), what a user of a distribution boots.
source "$(dirname "$0")/lib.sh"

kernels=${1:-both}
case $kernels in
test | debian | both) ;;
*) die "usage: $0 [test|debian|both]" ;;
esac

"$TOP"/tools/install-toolchain.sh
"$TOP"/tools/build-kernel.sh >/dev/null
stage=$("$TOP"/tools/build-guest.sh)
for bench in vram_bench sem_bench queue_bench; do
	gcc -O2 -Wall -Werror -static -pthread -I"$TOP/uapi/include" -I"$TOP/tests/kselftest" \
		-o "$stage/$bench" "$TOP/tools/bench/$bench.c"
done
cp "$TOP"/tools/guest/bench-job.sh "$stage/job"

if [[ $kernels != debian ]]; then
	echo "== the test kernel (lockdep on) =="
	"$TOP"/tools/make-initramfs.sh "$BUILD/bench.cpio.gz" "$stage"
	"$TOP"/tools/run-qemu.sh --no-results-ok "$BUILD/bench.cpio.gz"
fi
if [[ $kernels != test ]]; then
	distro=$("$TOP"/tools/build-for-distro.sh)
	echo "== Debian's own kernel, $(basename "$distro" | sed 's/^distro-//') (no lockdep) =="
	# The stage's userspace is static: it runs on either kernel.
	rm -rf "$BUILD/stage-bench-distro"
	cp -R "$stage" "$BUILD/stage-bench-distro"
	cp "$distro/radiance.ko" "$BUILD/stage-bench-distro/"
	"$TOP"/tools/make-initramfs.sh "$BUILD/bench-distro.cpio.gz" "$BUILD/stage-bench-distro"
	RADIANCE_KERNEL_IMAGE=$distro/vmlinuz "$TOP"/tools/run-qemu.sh --no-results-ok "$BUILD/bench-distro.cpio.gz"
fi
