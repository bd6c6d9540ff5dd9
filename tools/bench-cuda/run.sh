#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# On the GPU machine, from build/cuda (see stage.sh): the conformance suite
# against cuda:0, the CUDA-only tests, then bench-cuda N times (default 1;
# the first run's full output, the others' figures). Further arguments name
# other bench builds in this folder to run between them, for an A/B within
# one run. Logs go to $OUT when it is set.
cd "$(dirname "$0")" || exit 1
out=${OUT:-/tmp}
n=${1:-1}
shift
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 ./radiance-cts --device cuda:0 2>&1 | tee "$out/cts.log" | grep -v '^ok '
# They are ignored where no GPU is (the build machine, CI): run them all.
timeout 100 ./cts-cuda-tests --include-ignored --test-threads=1 2>&1 | tee "$out/cuda-tests.log" | grep -E 'test result|FAIL|panic'
echo "== bench-cuda 1"
timeout 100 ./bench-cuda cuda:0 2>&1 | tee "$out/bench.log"
for i in $(seq 2 "$n"); do
	for b in "$@"; do
		echo "== $b"
		timeout 60 "./$b" cuda:0 2>&1 | grep -E 'submit per|end to end per'
	done
	echo "== bench-cuda $i"
	timeout 60 ./bench-cuda cuda:0 2>&1 | grep -E 'submit per|end to end per|bandwidth'
done
