#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# radctl against the loaded module (emulated_devices=2 emulated_vram_mib=64),
# as KTAP. Each case checks radctl's output and exit code.
set -u
n=0
failed=0
check() {
	n=$((n + 1))
	desc=$1; shift
	if "$@" >/tmp/out 2>&1; then
		echo "ok $n $desc"
	else
		echo "not ok $n $desc"; sed 's/^/# /' /tmp/out; failed=1
	fi
}
# Each case is a small shell function, so `check` sees one command.
list_shows_both() { o=$(/radctl list) && echo "$o" && [ "$(echo "$o" | grep -c '^/dev/radiance[01] ')" = 2 ]; }
info_text() { o=$(/radctl info kmod:1) && echo "$o" && echo "$o" | grep -q '^vram  *64 MiB$' && echo "$o" | grep -q '^index  *1$' && echo "$o" | grep -q '^builtin kernels  *fill_u32, copy_u32, vecadd_u32, spin, printf_u32, start$' && echo "$o" | grep -qE '^dialect  *gluon-(sim-16|24)$' && echo "$o" | grep -q '^streams  *4$'; }
info_json() { o=$(/radctl info --json 0) && echo "$o" && echo "$o" | grep -q '"vram_bytes":67108864' && echo "$o" | grep -q '"backend":"emulated"'; }
# 64 MiB less the 64 KiB the driver keeps for the device.
mem_text() { o=$(/radctl mem kmod:1) && echo "$o" && echo "$o" | grep -q '^vram total  *67043328 B' && echo "$o" | grep -q '^free blocks  *1$'; }
submit_all() { for w in "nop --count 100" "fill --bytes 10000" "copy --bytes 100000" "launch --count 1000"; do /radctl submit $w || return 1; done; }
submit_printf() { o=$(/radctl submit printf --count 3) && echo "$o" && [ "$(echo "$o" | head -n3)" = "$(printf 'thread 0: 0\nthread 1: 1\nthread 2: 2')" ]; }
missing_device() { ! /radctl info kmod:5 2>/tmp/err && cat /tmp/err && grep -q 'no such device' /tmp/err; }
no_driver() { rmmod radiance && ! /radctl list 2>/tmp/err; rc=$?; cat /tmp/err; insmod /radiance.ko emulated_devices=2 emulated_vram_mib=64 ${RADIANCE_PARAMS_EXTRA:-}; [ $rc = 0 ] && grep -q 'is radiance.ko loaded' /tmp/err; }

echo "TAP version 13"
echo "1..8"
check "radctl list shows both devices" list_shows_both
check "radctl info prints device 1" info_text
check "radctl info --json" info_json
check "radctl mem shows VRAM use" mem_text
check "radctl submit nop, fill, copy and launch check out" submit_all
check "radctl submit printf prints what the device printed" submit_printf
check "radctl info on a missing device fails clearly" missing_device
check "radctl list without the module fails clearly" no_driver
exit $failed
