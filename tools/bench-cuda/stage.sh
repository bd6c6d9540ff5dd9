#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds what the CUDA machine runs (it has no Rust toolchain) into
# build/cuda/: the conformance suite, the CUDA-only tests, bench-cuda, bench-hal (its
# device-group edge), and
# run.sh, the one command to run there:
#
#   bash tools/bench-cuda/stage.sh          # here
#   bash build/cuda/run.sh [N]              # on the GPU machine, with build/cuda carried
source "$(dirname "$0")/../lib.sh"

out=$BUILD/cuda
mkdir -p "$out"
cargo build --release -q --manifest-path "$TOP/Cargo.toml" -p radiance-cts -p bench-cuda -p bench-hal
tests=$(cargo test --release -q --manifest-path "$TOP/Cargo.toml" -p radiance-cts --test cuda --no-run \
	--message-format=json | grep -F '"test":true' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)
[[ -x $tests ]] || die "no CUDA test binary"
cp "$TOP/target/release/radiance-cts" "$TOP/target/release/bench-cuda" "$TOP/target/release/bench-hal" "$out/"
cp "$tests" "$out/cts-cuda-tests"
cp "$TOP/tools/bench-cuda/run.sh" "$TOP/tools/bench-cuda/group.sh" "$out/"
log "staged in $out"
