#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs the driver benchmarks in QEMU and prints their figures. Compare ratios
# within one run: absolute times under TCG are noise.
#
#	tools/bench.sh [--markdown] [test|debian|both]
#
# On two kernels (both by default): the test kernel, whose lockdep
# (CONFIG_PROVE_LOCKING) makes every lock several times dearer than it is
# for a user, and Debian 13's own kernel with radiance.ko built for it
# (tools/build-for-distro.sh), what a user of a distribution boots.
# --markdown: after the runs, the headline figures as the one table of
# Documentation/benchmarks.md (tools/bench-table.awk reads the logs).
# First, on the host: the UART-TSI link's throughput against its line
# (gluon-bridge bench-tsi, a pseudo-terminal paced at 921600 baud).
source "$(dirname "$0")/lib.sh"

markdown=false
if [[ ${1:-} == --markdown ]]; then
	markdown=true
	shift
fi
kernels=${1:-both}
case $kernels in
test | debian | both) ;;
*) die "usage: $0 [--markdown] [test|debian|both]" ;;
esac
mkdir -p "$BUILD"
: >"$BUILD/bench-test.log"
: >"$BUILD/bench-debian.log"

"$TOP"/tools/install-toolchain.sh
"$TOP"/tools/build-kernel.sh >/dev/null
stage=$("$TOP"/tools/build-guest.sh)
for bench in vram_bench sem_bench queue_bench trace_bench; do
	gcc -O2 -Wall -Werror -static -pthread -I"$TOP/uapi/include" -I"$TOP/tests/kselftest" -I"$TOP/tools/bench" \
		-o "$stage/$bench" "$TOP/tools/bench/$bench.c"
done
# The module without its tracepoints, for trace_bench.
make -s -C "$(kernel_dir)" M="$TOP" MO="$BUILD/module-untraced" LLVM=$LLVM_SUFFIX RADIANCE_NO_TRACE=y \
	-j"$JOBS" modules >&2
cp "$BUILD/module-untraced/kmod/radiance.ko" "$stage/radiance-untraced.ko"
cp "$TOP"/tools/guest/bench-job.sh "$stage/job"

echo "== the UART-TSI link (host, a pseudo-terminal paced at 921600 baud) =="
cargo run -q --release --manifest-path "$TOP/Cargo.toml" -p gluon-bridge -- bench-tsi | tee "$BUILD/bench-tsi.log"

if [[ $kernels != debian ]]; then
	echo "== the test kernel (lockdep on) =="
	"$TOP"/tools/make-initramfs.sh "$BUILD/bench.cpio.gz" "$stage"
	"$TOP"/tools/run-qemu.sh --no-results-ok "$BUILD/bench.cpio.gz" | tee "$BUILD/bench-test.log"
fi
if [[ $kernels != test ]]; then
	distro=$(RADIANCE_DISTRO_UNTRACED=1 "$TOP"/tools/build-for-distro.sh)
	echo "== Debian's own kernel, $(basename "$distro" | sed 's/^distro-//') (no lockdep) =="
	# The stage's userspace is static: it runs on either kernel.
	rm -rf "$BUILD/stage-bench-distro"
	cp -R "$stage" "$BUILD/stage-bench-distro"
	cp "$distro/radiance.ko" "$distro/radiance-untraced.ko" "$BUILD/stage-bench-distro/"
	"$TOP"/tools/make-initramfs.sh "$BUILD/bench-distro.cpio.gz" "$BUILD/stage-bench-distro"
	RADIANCE_KERNEL_IMAGE=$distro/vmlinuz "$TOP"/tools/run-qemu.sh --no-results-ok "$BUILD/bench-distro.cpio.gz" |
		tee "$BUILD/bench-debian.log"
fi
if $markdown; then
	echo
	awk -f "$TOP"/tools/bench-table.awk "$BUILD/bench-debian.log" "$BUILD/bench-test.log" "$BUILD/bench-tsi.log"
fi
