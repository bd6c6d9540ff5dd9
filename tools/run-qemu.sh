#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Boots the test kernel in QEMU (TCG) with an initramfs from
# tools/make-initramfs.sh and judges the run:
#
#	tools/run-qemu.sh [--timeout SECONDS] [--no-results-ok] <initramfs>
#
# The serial console goes to stdout live (through tools/ktap, which echoes
# it) and raw to $BUILD/console.log; after it, ktap gets one more line,
# `radiance-host: qemu exit <status>`. The exit status is ktap's: 0 only if the
# guest printed KTAP results with no failure, ran every suite of its job's
# plan to the end (tests/guest/suite.sh), printed its end marker with status
# 0, and no kernel splat (--no-results-ok: a demo run without KTAP or plan
# passes on the marker alone); 1 otherwise; 2 on bad usage. A run that hits the timeout
# (default 600 s) always fails. The last line printed is ktap's
# "N passed, N failed, N skipped".
# $KTAP: a ktap binary to use instead of building tools/ktap.
# $RADIANCE_GUEST_CMDLINE: more kernel parameters (e.g. swiotlb=force).
# $RADIANCE_KERNEL=debug: boot the debug kernel (tools/build-kernel.sh --debug).
# $RADIANCE_KERNEL_IMAGE: boot that kernel image instead of our own (a
# distribution's vmlinuz: tools/build-for-distro.sh).
# $RADIANCE_TCG_THREAD=single: run both vCPUs in one host thread (TCG's
# thread=single) instead of one thread each.
# $RADIANCE_HOST_SERIAL=PATH: give the guest a second serial port, ttyS1,
# that is the host's terminal at PATH (a board's USB-UART, or a pty of a
# TSI target), for `gluon-bridge soc --link tsi:/dev/ttyS1,baud=115200`
# in the guest. The guest's 16550 goes no faster than 115200 baud.
source "$(dirname "$0")/lib.sh"

usage() {
	echo "usage: $0 [--timeout SECONDS] [--no-results-ok] <initramfs>" >&2
	exit 2
}

timeout_s=600
ktap_args=()
initramfs=
while [[ $# -gt 0 ]]; do
	case $1 in
	--timeout)
		[[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || usage
		timeout_s=$2
		shift 2
		;;
	--no-results-ok) ktap_args+=(--no-results-ok); shift ;;
	-h | --help) usage ;;
	-*) usage ;;
	*)
		[[ -z $initramfs ]] || usage
		initramfs=$1
		shift
		;;
	esac
done
[[ -n $initramfs ]] || usage
[[ -f $initramfs ]] || die "no initramfs at $initramfs"

if [[ -n ${RADIANCE_KERNEL_IMAGE:-} ]]; then
	bzimage=$RADIANCE_KERNEL_IMAGE
	[[ -f $bzimage ]] || die "no kernel image at $bzimage"
else
	bzimage=$(kernel_dir)/arch/x86/boot/bzImage
	[[ -f $bzimage ]] || die "no bzImage at $bzimage: run tools/build-kernel.sh"
fi

if [[ -n ${KTAP:-} ]]; then
	ktap=$KTAP
else
	(cd "$TOP" && cargo build --release -q -p ktap)
	ktap=$TOP/target/release/ktap
fi
[[ -x $ktap ]] || die "no ktap binary at $ktap"

mkdir -p "$BUILD"
console_log=$BUILD/console.log
# Per run: two runs at once must not share it (they do share console.log).
pidfile=$(mktemp "$BUILD/qemu.XXXXXX.pid")
trap 'rm -f "$pidfile"' EXIT

# loglevel=5 rather than 4: WARN() and lockdep print at KERN_WARNING (4),
# and the console only shows levels below the loglevel.
qemu=(
	qemu-system-x86_64 -accel "tcg,thread=${RADIANCE_TCG_THREAD:-multi}" -m 1G -smp 2 -net none
	-nographic -no-reboot -serial mon:stdio -pidfile "$pidfile"
	-kernel "$bzimage" -initrd "$initramfs"
	-append "console=ttyS0 panic=-1 oops=panic quiet loglevel=5 ${RADIANCE_GUEST_CMDLINE:-}"
)
if [[ -n ${RADIANCE_HOST_SERIAL:-} ]]; then
	[[ -c $RADIANCE_HOST_SERIAL ]] || die "\$RADIANCE_HOST_SERIAL: no terminal at $RADIANCE_HOST_SERIAL"
	qemu+=(-chardev "serial,id=host-serial,path=$RADIANCE_HOST_SERIAL" -serial chardev:host-serial)
fi

# QEMU's console, then a line with its exit status for ktap (124 or 137: the
# timeout killed it). stdin is /dev/null: QEMU must neither wait on nor take
# over a terminal. timeout sends SIGTERM, then SIGKILL 10 s later.
console() {
	local rc=0
	timeout --kill-after=10 "$timeout_s" "${qemu[@]}" </dev/null 2>&1 |
		tee "$console_log" || rc=$?
	echo "radiance-host: qemu exit $rc"
}

# timeout puts QEMU in a process group of its own, so a Ctrl-C or a TERM to
# this script would not reach it: stop it by its pid, then let ktap finish.
stop_qemu() {
	log "interrupted: stopping QEMU"
	if [[ -s $pidfile ]]; then
		kill "$(cat "$pidfile")" 2>/dev/null || true
	fi
}
trap stop_qemu INT TERM HUP

log "booting $bzimage with $initramfs (timeout ${timeout_s}s)"
start=$SECONDS
# In the background so that the trap runs while we wait; the loop waits
# again after a signal interrupted the wait.
console | "$ktap" "${ktap_args[@]}" &
job=$!
while :; do
	rc=0
	wait "$job" || rc=$?
	kill -0 "$job" 2>/dev/null || break
done
trap - INT TERM HUP
log "run took $((SECONDS - start))s, exit status $rc"
exit "$rc"
