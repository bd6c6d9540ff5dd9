#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every test, from nothing: the host tests (cargo test) and the module's
# formatting, then in QEMU on our test kernel (two CPUs) the module's KUnit
# suites, the kselftests, libradiance's kmod tests, the conformance suite,
# the C ABI test and the radctl smoke tests, against the emulated device in
# each dialect and implementing only what gluon-sim does; then the tests
# that move data between host memory and the device again with every DMA
# bounced (swiotlb=force); then on the debug kernel (KASAN, KCOV, kmemleak,
# fault injection) the kselftests, the stress tests, the fail-nth sweep and
# the fuzzer in its CI budget, with kmemleak scans (tests/guest/robust-job.sh);
# then Debian 13's own kernel with radiance.ko built for it
# (tools/build-for-distro.sh, tests/guest/distro-job.sh).
# The last line is the total: `N passed, N failed, N skipped`; the lines
# before it name what failed, since CI shows only a log's tail. The exit
# code is non-zero if any test failed, or if either stage could not run.
# $RADIANCE_FUZZ_EXECS: the fuzzer's budget (default 12000 executions).
source "$(dirname "$0")/lib.sh"

"$TOP"/tools/install-toolchain.sh
"$TOP"/tools/build-kernel.sh >/dev/null
"$TOP"/tools/build-kernel.sh --debug >/dev/null
mkdir -p "$BUILD"

# What failed, a line each, listed again before the total: a run's first
# failure is often thousands of lines above its end.
failures=$BUILD/failures.log
: >"$failures"
# Adds LOG's failed results (KTAP `not ok`, libtest `FAILED`) and ktap's
# reasons to the list, each prefixed with LABEL.	note_failures LABEL LOG
note_failures() {
	tr -d '\r' 2>/dev/null <"$2" | grep -E '^[[:space:]#]*not ok |^test .* \.\.\. FAILED$|^ktap: FAIL: ' |
		sed -E "s|^[[:space:]#]*|$1: |" >>"$failures" || true
}

log "host: cargo test"
host_rc=0
# The C ABI test links the staticlib, which `cargo test` alone does not
# build; --no-fail-fast so one failing test binary hides no other.
{
	cargo build --workspace --manifest-path "$TOP/Cargo.toml" &&
		cargo test --workspace --no-fail-fast --manifest-path "$TOP/Cargo.toml"
} 2>&1 | tee "$BUILD/host-tests.log" || host_rc=$?
# Each test binary's counts, summed by tools/ktap --libtest: a binary
# whose `running N tests` is not its passed + failed + ignored, or that
# printed no result (it crashed), fails; ignored tests count as skipped.
(cd "$TOP" && cargo build --release -q -p ktap) || host_rc=1
"$TOP"/target/release/ktap --libtest <"$BUILD/host-tests.log" >"$BUILD/host-counts.log" || true
cat "$BUILD/host-counts.log"
read -r host_pass host_fail host_skip < <(tail -n1 "$BUILD/host-counts.log" |
	sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p'; echo)
host_pass=${host_pass:-0} host_fail=${host_fail:-1} host_skip=${host_skip:-0}
# A build error, or cargo failing past its last test, is one failure.
if ((host_rc != 0 && host_fail == 0)); then host_fail=1; fi
note_failures "cargo test" "$BUILD/host-tests.log"
note_failures "cargo test" "$BUILD/host-counts.log"
((host_rc == 0)) || echo "cargo test: exit status $host_rc" >>"$failures"

# Runs TAP-printing script CMD..., logging to $BUILD/NAME.log, and adds its
# `ok` and `not ok` lines to the host's counts; a script that died before
# its plan counts as one failure.	host_tap NAME CMD...
host_tap() {
	local name=$1 log=$BUILD/$1.log pass fail
	shift
	"$@" >"$log" 2>&1 || true
	cat "$log"
	read -r pass fail < <(awk '/^ok /{p++} /^not ok /{f++} END {print p + 0, f + 0}' "$log")
	note_failures "$name" "$log"
	grep -q '^1\.\.' "$log" || { fail=$((fail + 1)) && echo "$name: no plan (did it die?)" >>"$failures"; }
	host_pass=$((host_pass + pass)) host_fail=$((host_fail + fail))
}

# Runs check CMD... as one host test, logging to $BUILD/NAME.log; a failure
# shows the log's start and HINT.	host_check NAME HINT CMD...
host_check() {
	local name=$1 log=$BUILD/$1.log hint=$2
	shift 2
	if "$@" >"$log" 2>&1; then
		host_pass=$((host_pass + 1))
	else
		sed -n '1,40p' "$log"
		log "$hint"
		echo "$name: $hint" >>"$failures"
		host_fail=$((host_fail + 1))
	fi
}

# libradiance as C users get it: installed, relocated, through pkg-config.
log "host: libradiance installed and linked through pkg-config"
host_tap install "$TOP"/tests/install/check.sh

# The distribution build refuses a rustc, bindgen or gcc other than the
# kernel's, naming both versions.
log "host: tools/distro/check-toolchain.sh refuses another toolchain"
host_tap toolchain-gate "$TOP"/tests/distro/toolchain-gate.sh

# Userspace keeps rustfmt.toml's style (uapi/ and gluon/ the kernel's).
log "host: cargo fmt --check"
host_check cargo-fmt "rustfmt: the workspace is not formatted (cargo fmt --all fixes it)" \
	cargo fmt --all --manifest-path "$TOP/Cargo.toml" --check

# Kernel-side `unsafe` lives in kmod/wrappers/ and the files the policy names.
log "host: unsafe only in kmod/wrappers/ and the named files"
host_check unsafe-files "unsafe outside kmod/wrappers/ and the named files (above)" \
	"$TOP"/tools/check-unsafe-files.sh

# The documents keep to their rules (README.md's length, line width, no
# history, links that resolve), and so do commit subjects (CONTRIBUTING.md).
log "host: the documents and the commit subjects"
host_check docs "a document breaks a rule of tools/check-docs.sh (above)" "$TOP"/tools/check-docs.sh
host_check commits "a commit subject breaks CONTRIBUTING.md's rule (above)" "$TOP"/tools/check-commits.sh

# The C header's kernel-doc, as the kernel's own scripts/kernel-doc reads it.
log "host: kernel-doc -none -Wall uapi/include/radiance.h"
host_check kernel-doc "uapi/include/radiance.h's kernel-doc has warnings (above)" "$TOP"/tools/check-kernel-doc.sh

# The syzkaller description covers every ioctl of the header.
log "host: tests/syzkaller/dev_radiance.txt against the header's ioctls"
host_check syzkaller "the syzkaller description and the header disagree (above)" "$TOP"/tools/check-syzkaller.sh

# The module is kernel code: it keeps the kernel's rustfmt style.
log "host: kmod/ against the kernel's .rustfmt.toml"
host_check rustfmt "rustfmt: kmod/ is not formatted (bash tools/rustfmt-kmod.sh fixes it)" \
	"$TOP"/tools/rustfmt-kmod.sh --check

log "guest: kselftests in QEMU"
guest_pass=0 guest_fail=0 guest_skip=0
stage=$("$TOP"/tools/build-guest.sh) || { guest_fail=1 && echo "guest: tools/build-guest.sh failed" >>"$failures"; }
debug_stage=$(RADIANCE_KERNEL=debug "$TOP"/tools/build-guest.sh) ||
	{ guest_fail=1 && echo "guest: RADIANCE_KERNEL=debug tools/build-guest.sh failed" >>"$failures"; }

# Boots the guest with job $1 and kernel parameters $2, adding its counts
# to the guest's. Counts come only from this run's log. $3: `debug` boots
# the debug kernel with its own build of the module; $4: a timeout.
guest_run() {
	local job=$1 log=$BUILD/guest-$1-${2//[^a-z0-9]/_}.log rc=0 pass fail skip
	local kernel=${3:-test} dir=$stage
	[[ $kernel == test ]] || dir=$debug_stage
	rm -f "$log"
	cp "$TOP/tests/guest/$job.sh" "$dir/job"
	"$TOP"/tools/make-initramfs.sh "$BUILD/$job.cpio.gz" "$dir"
	RADIANCE_KERNEL=$kernel RADIANCE_GUEST_CMDLINE=$2 \
		"$TOP"/tools/run-qemu.sh --timeout "${4:-600}" "$BUILD/$job.cpio.gz" | tee "$log" || rc=$?
	read -r pass fail skip < <(tail -n1 "$log" 2>/dev/null |
		sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p'; echo)
	pass=${pass:-0} fail=${fail:-0} skip=${skip:-0}
	if ((rc != 0 && fail == 0)); then fail=1; fi
	if ((fail != 0)); then
		note_failures "guest $job${2:+ ($2)}" "$log"
		((rc == 0)) || echo "guest $job${2:+ ($2)}: exit status $rc" >>"$failures"
	fi
	guest_pass=$((guest_pass + pass)) guest_fail=$((guest_fail + fail)) guest_skip=$((guest_skip + skip))
}
if ((guest_fail == 0)); then
	# Every suite against the emulated device in each dialect.
	log "guest: the emulated device speaking gluon-sim-16"
	guest_run test-job ""
	log "guest: the emulated device speaking gluon-24"
	guest_run test-job radiance.emulated_dialect=2
	# Only what gluon-sim e554ff7 implements (no SET, FENCE, device-to-
	# device copy or counters; whole words; one command per stream): the
	# kernel makes up the rest.
	log "guest: the emulated device implementing only what gluon-sim does"
	guest_run test-job radiance.emulated_gluon_sim=1
	# Every DMA to and from host memory through bounce buffers, as on a
	# host with memory above 4 GiB and no IOMMU: without the DMA syncs the
	# device and the CPU see different bytes.
	log "guest: the DMA paths again with swiotlb=force"
	guest_run bounce-job swiotlb=force
	guest_run bounce-job "swiotlb=force radiance.emulated_gluon_sim=1"
	# Devices served by a process: gluon-bridge's model behind the control
	# node, its death, and user devices beside an emulated one.
	log "guest: devices served by gluon-bridge (model mode)"
	guest_run user-job ""
	# A Radiance SoC behind a memory link: gluon-bridge soc over its model
	# link carries copies out as link accesses and launches by the SoC's
	# reset protocol.
	log "guest: a Radiance SoC served by gluon-bridge soc (model link)"
	guest_run soc-job ""
	# Robustness: KASAN, lockdep, kmemleak and fault injection watching the
	# kselftests, the stress tests, the fail-nth sweep and the fuzzer.
	log "guest: the debug kernel: stress, fail-nth, fuzzer, kmemleak"
	guest_run robust-job "radiance_fuzz.execs=${RADIANCE_FUZZ_EXECS:-12000} radiance_fuzz.seed=1" debug 2400
	# Debian 13's own 7.3.4 kernel, its vmlinuz unchanged, with radiance.ko
	# built for it (tools/build-for-distro.sh; cached after the first run,
	# which takes about ten minutes): vermagic, load, the kselftests and
	# the conformance suite, unload; then module signatures enforced. The
	# guest's other files are the test kernel's stage: static userspace
	# runs on either kernel.
	log "guest: Debian's own kernel with radiance.ko built for it"
	if distro=$("$TOP"/tools/build-for-distro.sh); then
		rm -rf "$BUILD/stage-distro"
		cp -R "$stage" "$BUILD/stage-distro"
		cp "$distro/radiance.ko" "$distro/reference.ko" "$distro/radiance-signed.ko" "$BUILD/stage-distro/"
		# guest_run boots $stage; bash scopes these to the call. Both
		# vCPUs in one host thread: Debian's kernel patches its static
		# keys while booting (int3, then the new bytes), and under
		# multi-threaded TCG the other vCPU now and then runs the int3
		# after the patch is done: an Oops in sched_clock_cpu or
		# set_next_task_fair before any module loads, in about one boot
		# of 40. Our test kernel has no jump labels to patch.
		RADIANCE_TCG_THREAD=single stage=$BUILD/stage-distro RADIANCE_KERNEL_IMAGE=$distro/vmlinuz \
			guest_run distro-job ""
		# Signatures enforced, as under Secure Boot: refused unless signed
		# by a key the kernel trusts.
		RADIANCE_TCG_THREAD=single stage=$BUILD/stage-distro RADIANCE_KERNEL_IMAGE=$distro/vmlinuz \
			guest_run distro-sig-job module.sig_enforce=1
	else
		guest_fail=$((guest_fail + 1))
		echo "guest: tools/build-for-distro.sh failed" >>"$failures"
	fi
fi

log "host: $host_pass passed, $host_fail failed, $host_skip skipped"
log "guest: $guest_pass passed, $guest_fail failed, $guest_skip skipped"
passed=$((host_pass + guest_pass)) failed=$((host_fail + guest_fail)) skipped=$((host_skip + guest_skip))
if ((failed != 0)); then
	echo "what failed:"
	sed 's/^/  /' "$failures"
fi
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
