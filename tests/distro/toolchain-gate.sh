#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tools/distro/check-toolchain.sh against stand-in tools: it passes the
# kernel's own versions and refuses any other, naming both. Prints TAP;
# exits non-zero if any check fails.
source "$(dirname "$0")/../../tools/lib.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/radiance-gate.XXXXXX")
trap 'rm -rf "$work"' EXIT
rustc_text='rustc 1.85.1 (4eb161250 2025-03-15) (built from a source tarball)'
cc_text='x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0'
cat >"$work/config" <<CONFIG
CONFIG_CC_VERSION_TEXT="$cc_text"
CONFIG_RUSTC_VERSION_TEXT="$rustc_text"
CONFIG_BINDGEN_VERSION_TEXT="bindgen 0.71.1"
CONFIG

# Stand-ins in $work/bin-$1 printing the versions given: rustc, bindgen, cc.
tools() {
	local bin=$work/bin-$1
	mkdir -p "$bin"
	printf '#!/bin/sh\necho "%s"\n' "$2" >"$bin/rustc"
	printf '#!/bin/sh\necho "%s"\n' "$3" >"$bin/bindgen"
	printf '#!/bin/sh\necho "%s"\necho second line\n' "$4" >"$bin/x86_64-linux-gnu-gcc-14"
	chmod +x "$bin"/*
}
# The gate with the stand-ins $1 first in PATH; its stderr in $work/err.
gate() {
	"$TOP"/tools/distro/check-toolchain.sh "$work/config" env PATH="$work/bin-$1:$PATH" 2>"$work/err"
}

n=0 failed=0
check() {
	local name=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $name"
	else
		failed=1
		echo "not ok $n $name"
		sed 's/^/# /' "$work/err"
	fi
}
refused_naming() {
	! gate "$1" && shift && for want in "$@"; do grep -qF "$want" "$work/err" || return 1; done
}

tools same "$rustc_text" "bindgen 0.71.1" "$cc_text"
tools rustc 'rustc 1.96.1 (01f6ddf75 2026-05-12) (built from a source tarball)' "bindgen 0.71.1" "$cc_text"
tools bindgen "$rustc_text" "bindgen 0.73.2" "$cc_text"
tools cc "$rustc_text" "bindgen 0.71.1" 'x86_64-linux-gnu-gcc-14 (Debian 14.2.0-23) 14.2.0'
echo "TAP version 13"
echo "1..4"
check the_kernels_own_toolchain_passes gate same
check another_rustc_is_refused_naming_both refused_naming rustc "\"$rustc_text\"" '"rustc 1.96.1 (01f6ddf75'
check another_bindgen_is_refused_naming_both refused_naming bindgen '"bindgen 0.71.1"' '"bindgen 0.73.2"'
check another_gcc_is_refused_naming_both refused_naming cc "\"$cc_text\"" '14.2.0-23'
exit "$failed"
