#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds everything the QEMU guest runs, against the cached test kernel:
# radiance.ko, the kselftests and the static Rust binaries. Prints the
# staging directory (the files to put in the initramfs).
# RADIANCE_KERNEL=debug or fuzz: for that kernel, into build/stage-KERNEL, with
# radiance-fuzz. Each kernel's radiance.ko is built in its own directory,
# build/kmod-test or build/kmod-debug, never beside the sources.
source "$(dirname "$0")/lib.sh"

kdir=$(kernel_dir)
ksrc=$(kernel_src)
stage=$BUILD/stage
[[ $RADIANCE_KERNEL == test ]] || stage=$BUILD/stage-$RADIANCE_KERNEL
mod_out=$BUILD/kmod-$RADIANCE_KERNEL
rm -rf "$stage"; mkdir -p "$stage" "$mod_out"

# Kbuild refuses a separate output directory while an in-tree build's
# outputs (`make M=$PWD` at the top) are there.
if [[ -f $TOP/modules.order ]]; then
	log "module: removing the in-tree build's outputs"
	make -s -C "$kdir" M="$TOP" clean >&2
fi
log "module: building radiance.ko for the $RADIANCE_KERNEL kernel"
# Silent (-s) when clean: whatever it prints is a warning (rustc's, or
# objtool's about a panic path), and fails the build rather than scroll by.
if ! warnings=$(make -s -C "$kdir" M="$TOP" MO="$mod_out" LLVM=$LLVM_SUFFIX -j"$JOBS" modules 2>&1 >/dev/null); then
	printf '%s\n' "$warnings" >&2
	die "radiance.ko did not build"
fi
[[ -z $warnings ]] || { printf '%s\n' "$warnings" >&2; die "radiance.ko built with warnings (above)"; }
cp "$mod_out/kmod/radiance.ko" "$stage/"

if [[ $RADIANCE_KERNEL != test ]]; then
	log "guest: building radiance-fuzz"
	make -s -C "$TOP/tools/fuzz" OUTPUT="$BUILD/fuzz" >&2
	cp "$BUILD/fuzz/radiance-fuzz" "$TOP"/tests/guest/kmemleak.sh "$TOP"/tests/guest/test-job.sh "$stage/"
fi

log "guest: building kselftests"
make -s -C "$TOP/tests/kselftest" KSRC="$ksrc" OUTPUT="$BUILD/kselftest" >&2
cp "$BUILD"/kselftest/*_test "$TOP"/tests/guest/radctl-smoke.sh "$stage/"

# Static, so the guest needs no libc of its own. An explicit --target keeps
# crt-static away from build scripts and proc macros.
log "guest: building static radctl, gluon-bridge, the demo, the conformance suite and libradiance's kmod tests"
target=x86_64-unknown-linux-gnu
static_cargo() {
	RUSTFLAGS="-C target-feature=+crt-static" cargo "$@" -q --release --target "$target" \
		--manifest-path "$TOP/Cargo.toml"
}
static_cargo build -p radctl -p radiance-cts -p bench-hal -p gluon-bridge >&2
static_cargo build -p libradiance --example kmod_buffers --example hal_pipeline >&2
cp "$TOP/target/$target/release/radctl" "$TOP/target/$target/release/radiance-cts" \
	"$TOP/target/$target/release/bench-hal" "$TOP/target/$target/release/gluon-bridge" \
	"$TOP/target/$target/release/examples/kmod_buffers" "$TOP/target/$target/release/examples/hal_pipeline" \
	"$stage/"
# Test binaries' paths have a hash in them: ask cargo for them.
for test in kmod_bo kmod_sem kmod_queue kmod_hal kmod_group; do
	bin=$(static_cargo test --no-run -p libradiance --test "$test" --message-format=json |
		sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)
	[[ -x $bin ]] || die "no libradiance $test test binary"
	cp "$bin" "$stage/libradiance-$test"
done
# The C ABI's test program, linked statically against the staticlib, to run
# against kmod:0 (the host runs it against `host` under cargo test).
static_cargo build -p libradiance >&2
cc -std=c11 -Wall -Wextra -Werror -static -o "$stage/c_abi_test" \
	-I "$TOP/libradiance/include" -I "$TOP/uapi/include" \
	"$TOP"/libradiance/tests/c_abi/test.c \
	"$TOP/target/$target/release/libradiance.a" -lpthread -lm -ldl
cp "$TOP"/tests/guest/libtest-ktap.sh "$TOP"/tests/guest/ktap-one.sh "$TOP"/tests/guest/kunit-ktap.sh \
	"$TOP"/tests/guest/suite.sh "$TOP"/tests/guest/bridge.sh "$stage/"
# The KUnit suites the module must have run, for the jobs' plans: every
# #[kunit_tests(NAME)] in kmod/ (kunit-ktap.sh --only fails on any other).
grep -rhoE --include='*.rs' '#\[kunit_tests\([a-z0-9_]+\)\]' "$TOP/kmod" |
	sed -E 's/.*\((.*)\).*/\1/' | sort -u >"$stage/kunit-suites"
[[ -s $stage/kunit-suites ]] || die "no #[kunit_tests(NAME)] in kmod/"
echo "$stage"
