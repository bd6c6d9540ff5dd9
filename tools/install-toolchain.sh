#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs everything the build and the QEMU tests need, idempotently:
# Debian packages, rust-src, bindgen-cli. Never changes the machine's apt
# sources (the kernel source comes through a private list, build-kernel.sh).
source "$(dirname "$0")/lib.sh"

APT_PACKAGES=(
	# LLVM >= 17 for the kernel's Rust support; Debian 12's default 14 is too old.
	clang-19 lld-19 llvm-19 libclang-19-dev
	# Kernel build.
	make gcc flex bison bc cpio xz-utils libelf-dev libssl-dev kmod
	# Guest.
	busybox-static qemu-system-x86
	# C users of libradiance find it through pkg-config (tests/install).
	pkg-config
	# The hsa backend's tests: ROCr's headers (the C probe of
	# libradiance/tests/hsa_abi.rs) and ROCr itself (hsa:0 without /dev/kfd).
	# clang-19 and lld-19 above also build its built-in kernels.
	libhsa-runtime64-1 libhsa-runtime-dev
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	log "apt: installing ${missing[*]}"
	SUDO=; [[ $(id -u) = 0 ]] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! rustup component list --installed | grep -q '^rust-src'; then
	log "rustup: adding rust-src"
	rustup component add rust-src
fi

# 7.3 wants bindgen >= 0.71.1.
bindgen_ok() {
	local v
	v=$(bindgen --version 2>/dev/null | awk '{print $2}') || return 1
	[[ -n $v ]] && printf '0.71.1\n%s\n' "$v" | sort -V -C
}
if ! bindgen_ok; then
	log "cargo: installing bindgen-cli"
	cargo install --locked --quiet bindgen-cli
fi
log "toolchain ready"
