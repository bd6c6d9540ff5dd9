#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Refuses a toolchain other than the one a kernel was built with. An
# external Rust module must be compiled by the very rustc that built the
# kernel: another rustc changes the crate hash in every Rust symbol's name
# (modpost then finds them undefined) or stops with E0514; and the rust/
# metadata it links against must come from the same bindgen and C compiler.
#
#	tools/distro/check-toolchain.sh <kernel .config> [command prefix...]
#
# Runs `rustc --version`, `bindgen --version` and `CC --version` (CC: the
# first word of CONFIG_CC_VERSION_TEXT, e.g. x86_64-linux-gnu-gcc-14), each
# under the prefix (e.g. `chroot /path/to/root`), and compares the first
# line of each with CONFIG_RUSTC_VERSION_TEXT, CONFIG_BINDGEN_VERSION_TEXT
# and CONFIG_CC_VERSION_TEXT. Exit status 0 if all three match, 1 with one
# line per mismatch naming both versions otherwise.
source "$(dirname "$0")/../lib.sh"

[[ $# -ge 1 ]] || die "usage: $0 <kernel .config> [command prefix...]"
config=$1
shift
[[ -f $config ]] || die "no kernel config at $config"

config_text() {
	sed -n "s/^CONFIG_$1=\"\(.*\)\"\$/\1/p" "$config"
}

mismatches=0
# $1: the config symbol; the rest: the command that prints the version.
check() {
	local symbol=$1 want have
	shift
	want=$(config_text "$symbol")
	[[ -n $want ]] || die "$config has no CONFIG_$symbol"
	have=$("$@" --version 2>/dev/null | head -n1) || true
	if [[ $have != "$want" ]]; then
		printf 'error: %s: the kernel was built with "%s", this toolchain has "%s"\n' \
			"$1" "$want" "${have:-nothing (not found)}" >&2
		mismatches=$((mismatches + 1))
	fi
}

cc=$(config_text CC_VERSION_TEXT)
check RUSTC_VERSION_TEXT "$@" rustc
check BINDGEN_VERSION_TEXT "$@" bindgen
check CC_VERSION_TEXT "$@" "${cc%% *}"
((mismatches == 0)) || die "$mismatches tool(s) differ from the kernel's: an external module built with them would not load"
log "toolchain: rustc, bindgen and ${cc%% *} are the kernel's own"
