#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs inside the QEMU guest (as /job): the device is a Radiance SoC served
# by `gluon-bridge soc` over its model link (the SoC's address map in the
# bridge's process; its GPU runs no Muon code but plays the reset protocol).
# The kselftests that make sense on such a device run against it (copies,
# fills, faults, everything but the built-in kernels, which a SoC has not);
# then radctl run launches an image at the SoC's start PC, a start PC the
# SoC cannot run, a GPU that never finishes (the bridge's timeout and the
# kernel's watchdog), the tapeout and nightly launch protocols, and the
# bridge's death under a client. Then the same over UART-TSI: the SoC model
# behind `gluon-bridge tsi-target`, a bring-up FPGA's TSI client on a
# pseudo-terminal, with a good target and two bad ones.
set -u
. /suite.sh || exit 1
. /bridge.sh || exit 1

kselftests="device_test bo_test dmabuf_test sem_test sync_file_test sem_alias_test queue_test launch_test"
plan $kselftests soc_runs_an_image_at_its_link_address soc_image_reached_gpu_dram_and_completed \
	soc_refuses_another_start_pc soc_fault_names_the_start_pc soc_bridge_timeout_is_an_execution_fault \
	soc_device_serves_on_after_a_timeout soc_watchdog_reset_ends_a_hung_launch \
	soc_info_names_the_epilogue_protocol soc_epilogue_launch_completes \
	soc_info_names_the_nightly_protocol soc_nightly_launch_completes soc_nightly_needs_launch \
	client_fails_when_its_soc_bridge_dies tsi_bo_test tsi_runs_an_image \
	tsi_runs_a_fused_soc_image tsi_flushes_each_line_from_the_l2_before_writing_it \
	tsi_garbage_loses_the_device_saying_why tsi_silence_loses_the_device_saying_why \
	module_unloads_after_its_soc_servers_died

# 64 MiB of VRAM, as radiance_test.h says, and a 500 ms launch timeout: a
# launch on a SoC reports no progress, and the bridge's own 200 ms timeout
# below must come first.
insmod /radiance.ko emulated_devices=0 launch_timeout_ms=500 || exit 1

# The two test devices, each of their shape: 4 cores (two clusters of two).
set -- $(serve k0 soc --link model --vram-mib 64 --clusters 2)
k0=$1
set -- $(serve k1 soc --link model --vram-mib 64 --clusters 2)
k1=$1
for t in $kselftests; do
	suite "$t" env RADIANCE_TEST_SERVER=soc "/$t"
done
kill -TERM "$k0" "$k1"
gone "$k0"
gone "$k1"

# Bytes $@ as binary.
bytes() {
	for b in "$@"; do printf "\\$(printf %03o $((b)))"; done
}
le16() { bytes $(($1 & 255)) $(($1 >> 8 & 255)); }
le32() { bytes $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }

# A Muon ELF32 executable: 16 bytes at 0x10000000, its entry. The model
# runs no code, so any bytes do; they are read back to show the image
# reached GPU DRAM over the link.
{
	bytes 0x7f 0x45 0x4c 0x46 1 1 1 0 0 0 0 0 0 0 0 0
	le16 2; le16 243; le32 1; le32 0x10000000; le32 52; le32 0; le32 0
	le16 52; le16 32; le16 1; le16 40; le16 0; le16 0
	for v in 1 84 0x10000000 0x10000000 16 16 5 4; do le32 "$v"; done
	bytes 0x13 0 0 0 0x6f 0 0 0 0xde 0xc0 0xad 0x0b 0x11 0x0c 0x1a 0x6e
} >/tmp/image.elf

# 16 other bytes as a fused SoC image: an RV64 ELF (the host's) whose
# .text sits at 0x1_1000_0000, the GPU's half. Sections only: the ELF
# header, .text, .shstrtab, then the null, .text and .shstrtab headers.
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32)); }
section() { # name type flags addr offset size align
	le32 "$1"; le32 "$2"; le64 "$3"; le64 "$4"; le64 "$5"; le64 "$6"; le32 0; le32 0; le64 "$7"; le64 0
}
{
	bytes 0x7f 0x45 0x4c 0x46 2 1 1 0 0 0 0 0 0 0 0 0
	le16 2; le16 243; le32 1; le64 0x80000000; le64 0; le64 0x68; le32 0
	le16 64; le16 56; le16 0; le16 64; le16 3; le16 2
	bytes 0x13 0 0 0 0x6f 0 0 0 0xf5 0xed 0x50 0xc0 0x11 0x0c 0x1a 0x6e
	printf '\000.text\000.shstrtab\000'
	bytes 0 0 0 0 0 0 0
	section 0 0 0 0 0 0 0
	section 1 1 6 0x110000000 0x40 16 4
	section 7 3 0 0 0x50 17 1
} >/tmp/image.soc.elf

set -- $(serve b1 soc --link model --vram-mib 512)
b1=$1 d1=$2
test_one soc_runs_an_image_at_its_link_address sh -c \
	"/radctl run --device $d1 --read 0x10000000:16 /tmp/image.elf >/tmp/run.out 2>&1; rc=\$?; cat /tmp/run.out /tmp/b1; test \$rc = 0"
test_one soc_image_reached_gpu_dram_and_completed sh -c \
	'grep -q "^completed$" /tmp/run.out && grep -q "^0x10000000  13 00 00 00 6f 00 00 00 de c0 ad 0b 11 0c 1a 6e$" /tmp/run.out'
# The SoC starts warps only at 0x10000000: anything else is Gluon's
# execution fault at that PC (exit 3), and reset is never released.
test_one soc_refuses_another_start_pc sh -c \
	"/radctl run --device $d1 --entry 0x10000100 /tmp/image.elf >/tmp/run.out 2>&1; rc=\$?; cat /tmp/run.out; test \$rc = 3"
test_one soc_fault_names_the_start_pc grep -q '^fault: Gluon status 1 at pc 0x10000100' /tmp/run.out

# A GPU that never finishes: the bridge's own timeout answers an execution
# fault at the start PC and resets the GPU; the device serves on.
set -- $(serve b2 soc --link model:hang --vram-mib 512 --timeout-ms 200)
b2=$1 d2=$2
test_one soc_bridge_timeout_is_an_execution_fault sh -c \
	"/radctl run --device $d2 /tmp/image.elf; test \$? = 3 && grep 'no finish after' /tmp/b2"
test_one soc_device_serves_on_after_a_timeout sh -c \
	"/radctl run --device $d2 --read 0x10000000:16 /tmp/image.elf | grep '^0x10000000  13 00'; kill -0 $b2"
# The kernel's watchdog (500 ms) comes first: it resets the device, the
# bridge holds the GPU in reset and acknowledges.
set -- $(serve b3 soc --link model:hang --vram-mib 512 --timeout-ms 60000)
b3=$1 d3=$2
test_one soc_watchdog_reset_ends_a_hung_launch sh -c \
	"timeout 20 /radctl run --device $d3 /tmp/image.elf; rc=\$?; echo rc \$rc; test \$rc = 3 && kill -0 $b3"
kill -TERM "$b2" "$b3"
gone "$b2"
gone "$b3"

# The other launch protocols: the tapeout epilogue's DONE slots, and the
# nightly LAUNCH word with END slots. radctl info names each; a nightly
# GPU launched by the epilogue's protocol never starts, so the bridge's
# timeout ends it and its report names the protocol it ran.
protocol() {
	name=$1 gpu=$2 protocol=$3
	set -- $(serve "p$name" soc --link "model:$gpu" --protocol "$protocol" --vram-mib 512 --timeout-ms 300)
	echo "$1 $2"
}
for p in epilogue nightly; do
	set -- $(protocol "$p" "$p" "$p")
	bridge=$1 node=${2:-none}
	test_one "soc_info_names_the_${p}_protocol" sh -c \
		"/radctl info $node | tee /tmp/info.out; grep -q '^name  *Radiance SoC, launch: $p\$' /tmp/info.out"
	test_one "soc_${p}_launch_completes" sh -c \
		"/radctl run --device $node /tmp/image.elf >/tmp/run.out 2>&1; rc=\$?; cat /tmp/run.out; test \$rc = 0"
	kill -TERM "$bridge"
	gone "$bridge"
done
set -- $(protocol x nightly epilogue)
test_one soc_nightly_needs_launch sh -c \
	"/radctl run --device $2 /tmp/image.elf; test \$? = 3 && grep -q 'no finish after .* (epilogue protocol)' /tmp/px"
kill -TERM "$1"
gone "$1"

# The bridge dies under a client launching over and over: the client ends
# with ENODEV's message, nothing hangs, the device goes.
sh -c "while /radctl run --device $d1 /tmp/image.elf >/tmp/client.out 2>&1; do :; done" &
client=$!
sleep 2
kill -KILL "$b1"
wait "$client"
gone "$b1"
test_one client_fails_when_its_soc_bridge_dies sh -c \
	"cat /tmp/client.out; grep -qi 'no such device\|ENODEV\|not found\|no /dev' /tmp/client.out && ! test -e /dev/$d1"

# tsi_target NAME [ARG]...: starts `gluon-bridge tsi-target ARG...`
# (stderr to /tmp/NAME.log); waits for its terminal; prints its pid and
# the terminal's path.
tsi_target() {
	name=$1
	shift
	/gluon-bridge tsi-target --clusters 2 "$@" >"/tmp/$name.path" 2>"/tmp/$name.log" &
	pid=$!
	for _ in $(seq 100); do
		[ -s "/tmp/$name.path" ] && break
		sleep 0.1
	done
	echo "$pid $(cat "/tmp/$name.path")"
}

# Over UART-TSI, every write confirmed by a read: buffer objects (the
# test devices' 64 MiB), then a launch of the image (at 0x10000000: 512
# MiB), as over the model link. (queue_test's thousands of packets, a
# request and its read each through the pty, overrun its harness's timeout
# under TCG.)
set -- $(tsi_target t0)
t0=$1 pty=${2:-none}
set -- $(serve k0 soc --link "tsi:$pty" --vram-mib 64 --clusters 2)
k0=$1
suite tsi_bo_test env RADIANCE_TEST_SERVER=soc /bo_test
kill -TERM "$k0"
gone "$k0"
gone "$t0"
set -- $(tsi_target t3 --log)
t3=$1 pty=${2:-none}
set -- $(serve k3 soc --link "tsi:$pty" --vram-mib 512 --clusters 2)
k3=$1 d3=${2:-none}
test_one tsi_runs_an_image sh -c \
	"/radctl run --device $d3 --read 0x10000000:16 /tmp/image.elf >/tmp/tsi.out 2>&1; rc=\$?; cat /tmp/tsi.out /tmp/k3;
	test \$rc = 0 && grep -q '^0x10000000  13 00 00 00 6f 00 00 00 de c0 ad 0b 11 0c 1a 6e$' /tmp/tsi.out"
# A fused image's GPU half, at its address less 0x1_0000_0000, over the
# last image.
test_one tsi_runs_a_fused_soc_image sh -c \
	"/radctl run --device $d3 --read 0x10000000:16 /tmp/image.soc.elf >/tmp/tsi.out 2>&1; rc=\$?; cat /tmp/tsi.out;
	test \$rc = 0 && grep -q '^0x10000000  13 00 00 00 6f 00 00 00 f5 ed 50 c0 11 0c 1a 6e$' /tmp/tsi.out"
kill -TERM "$k3"
gone "$k3"
gone "$t3"
cat /tmp/t0.log
tail -n 20 /tmp/t3.log
# Behind a bring-up FPGA GPU DRAM is the FPGA's, and the chip's L2 sits
# between it and the GPU: the image's line (0x110000000 >> 4) is flushed
# from the L2 just before the image is written.
test_one tsi_flushes_each_line_from_the_l2_before_writing_it sh -c \
	"grep -B2 -m1 'write 0x110000000 ' /tmp/t3.log | grep -q 'write 0x002010240   1 words 11000000'"

# A target that answers garbage, and one that goes silent: the bridge says
# which link and address and why, it exits, the device goes, and the
# client gets an error rather than a hang.
# bad_target TEST MESSAGE [ARG]...: a copy through a bridge in front of
# `tsi-target ARG...` fails, the bridge says MESSAGE (a grep pattern) and
# the device is gone.
bad_target() {
	name=$1 message=$2
	shift 2
	set -- $(tsi_target "t$name" "$@")
	target=$1 pty=${2:-none}
	set -- $(serve "k$name" soc --link "tsi:$pty" --vram-mib 64)
	bridge=$1 node=${2:-none}
	/radctl submit copy --device "$node" --bytes 4096 >"/tmp/$name.out" 2>&1
	rc=$?
	gone "$bridge"
	kill -TERM "$target"
	test_one "$name" sh -c "cat /tmp/$name.out /tmp/k$name; [ $rc != 0 ] &&
		grep -q 'tsi:/dev/pts/[0-9]*: $message' /tmp/k$name && ! test -e /dev/$node"
}
bad_target tsi_garbage_loses_the_device_saying_why 'the write at 0x1[0-9a-f]* did not land' --garbage
bad_target tsi_silence_loses_the_device_saying_why 'no answer reading .* the target stopped' --silent-after-words 64
test_one module_unloads_after_its_soc_servers_died rmmod radiance
