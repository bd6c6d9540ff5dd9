#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The main job, from nothing: install the toolchain, build (or reuse) the
# test kernel, build radiance.ko and the guest tools, boot QEMU with one
# emulated device and show it through radctl.
source "$(dirname "$0")/lib.sh"

"$TOP"/tools/install-toolchain.sh
"$TOP"/tools/build-kernel.sh >/dev/null
stage=$("$TOP"/tools/build-guest.sh)
cp "$TOP"/tools/guest/demo-job.sh "$stage/job"
"$TOP"/tools/make-initramfs.sh "$BUILD/demo.cpio.gz" "$stage"
# The runner ends with its count of KTAP results, of which the demo prints
# none: its own summary, the guest's last line, ends the output instead.
rc=0
"$TOP"/tools/run-qemu.sh --no-results-ok "$BUILD/demo.cpio.gz" |
	grep -vx '0 passed, 0 failed, 0 skipped' || rc=$?
if ((rc == 0)); then
	grep -a '^demo: ' "$BUILD/console.log" | tr -d '\r' | tail -n1
else
	echo "demo: failed (exit $rc); the guest's console is in $BUILD/console.log"
fi
exit "$rc"
