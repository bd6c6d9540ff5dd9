#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# On the GPU machine, from build/cuda (see stage.sh): the conformance
# suite's device-group cases over cuda:0 and host, over two devices of one
# GPU (cuda:0 twice: the cuda-event route between two contexts' users), and
# over cuda:0 and cuda:1 where there is a second GPU (skipped, saying so,
# where not); then N times (default 1) the cross-device semaphore edge of
# bench-hal and the peer copy bandwidth of bench-cuda. Logs go to $OUT when
# set.
cd "$(dirname "$0")" || exit 1
out=${OUT:-/tmp}
n=${1:-1}
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "$gpus GPU(s)"
timeout 100 ./radiance-cts --group cuda:0,host 2>&1 | tee "$out/group-cuda0-host.log"
timeout 100 ./radiance-cts --group cuda:0,cuda:0,host 2>&1 | tee "$out/group-cuda0-cuda0-host.log"
if ((gpus >= 2)); then
	timeout 100 ./radiance-cts --group cuda:0,cuda:1,host 2>&1 | tee "$out/group-cuda0-cuda1-host.log"
	for i in $(seq "$n"); do
		echo "== run $i"
		timeout 60 ./bench-hal group cuda:0 cuda:1 2>&1 | tee -a "$out/bench-group-cuda.log"
		timeout 60 ./bench-cuda peer cuda:0 cuda:1 2>&1 | tee -a "$out/bench-peer.log"
	done
else
	echo "skipping the group of cuda:0 and cuda:1: this machine has one GPU"
	timeout 60 ./bench-hal group cuda:0 cuda:0 2>&1 | tee -a "$out/bench-group-cuda.log"
fi
timeout 60 ./bench-hal group cuda:0 host 2>&1 | tee -a "$out/bench-group-cuda.log"
