#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# On the GPU machine, from build/cuda (see stage.sh): the conformance
# suite's device-group cases over cuda:0 and host, and over cuda:0 and
# cuda:1 where there is a second GPU (skipped, saying so, where not), then
# the cross-device semaphore edge of bench-hal. Logs go to $OUT when set.
cd "$(dirname "$0")" || exit 1
out=${OUT:-/tmp}
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
echo "$gpus GPU(s)"
timeout 100 ./radiance-cts --group cuda:0,host 2>&1 | tee "$out/group-cuda0-host.log"
if ((gpus >= 2)); then
	timeout 100 ./radiance-cts --group cuda:0,cuda:1,host 2>&1 | tee "$out/group-cuda0-cuda1-host.log"
	timeout 60 ./bench-hal group cuda:0 cuda:1 2>&1 | tee "$out/bench-group-cuda.log"
else
	echo "skipping the group of cuda:0 and cuda:1: this machine has one GPU"
fi
timeout 60 ./bench-hal group cuda:0 host 2>&1 | tee -a "$out/bench-group-cuda.log"
