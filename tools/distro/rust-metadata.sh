#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Adds the rust/ metadata an external Rust module compiles against (the
# crates' .rmeta files, the proc macros, scripts/target.json) to a Debian
# kernel's installed headers, which ship without it although the kernel is
# built with CONFIG_RUST=y. Runs on the Debian system itself (or in a Debian
# root: tools/build-for-distro.sh), as root:
#
#	tools/distro/rust-metadata.sh [RELEASE]     (default: uname -r)
#
# Needs linux-headers-RELEASE and linux-source-X.Y of the same Debian
# version, and the compilers the kernel's config names (rustc, rust-src,
# bindgen, the gcc): any other is refused (check-toolchain.sh). Rebuilds
# rust/ from that source with the headers' .config (`make prepare`, a few
# minutes), refuses the result unless the configuration and the release came
# out identical to the headers' and every Rust symbol it exports is one of
# the kernel's (Module.symvers), then copies it into the headers. Does
# nothing where the headers already carry the metadata (Ubuntu's
# linux-lib-rust, Arch, or an earlier run). DKMS runs it before each build
# (dkms.conf).
source "$(dirname "$0")/../lib.sh"

release=${1:-$(uname -r)}
headers=/usr/src/linux-headers-$release
config=$headers/.config
[[ -f $config ]] || die "no $headers/.config: apt-get install linux-headers-$release"
if [[ -f $headers/rust/libkernel.rmeta && -f $headers/scripts/target.json ]]; then
	log "rust/: $headers already has it"
	exit 0
fi
grep -qx CONFIG_RUST=y "$config" || die "$release is built without CONFIG_RUST: no Rust module can load into it"
[[ $(uname -m) == x86_64 && $release == *-amd64 ]] || die "only amd64 kernels are supported, not $release"
"$TOP"/tools/distro/check-toolchain.sh "$config"

# The source must be the very version the headers come from.
series=$(cut -d. -f1,2 <<<"$release")
tarball=/usr/src/linux-source-$series.tar.xz
have=$(dpkg-query -W -f='${Version}' "linux-source-$series" 2>/dev/null || true)
want=$(dpkg-query -W -f='${Version}' "linux-headers-$release")
[[ -f $tarball && $have == "$want" ]] ||
	die "needs linux-source-$series $want (the headers' version), found '${have:-none}': apt-get install linux-source-$series=$want"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/radiance-rust.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/src obj=$work/obj
mkdir -p "$src" "$obj"
log "rust/: extracting $tarball"
tar -xJf "$tarball" -C "$src" --strip-components=1
cp "$config" "$obj/.config"
cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' "$config")
log "rust/: make prepare for $release (a few minutes; log in $work/prepare.log)"
make -C "$src" O="$obj" ARCH=x86 CC="$cc" HOSTCC="$cc" KERNELRELEASE="$release" \
	-j"$JOBS" prepare >"$work/prepare.log" 2>&1 || {
	tail -n 30 "$work/prepare.log" >&2
	die "make prepare failed for $release"
}

# What decides a module's ABI: all must equal the shipped headers'.
for f in .config include/config/auto.conf include/config/kernel.release \
	include/generated/autoconf.h include/generated/rustc_cfg include/generated/utsrelease.h; do
	cmp -s "$obj/$f" "$headers/$f" || {
		diff -u "$headers/$f" "$obj/$f" | head -n 20 >&2
		die "the rebuild changed $f: its toolchain or source is not the kernel's"
	}
done
# Every Rust symbol the rebuilt crates export must be one the kernel
# exports: the same names prove the same compiler and crate hashes.
exported=$(sed -n 's/^EXPORT_SYMBOL_RUST_GPL(\(.*\));$/\1/p' "$obj"/rust/exports_*_generated.h | sort -u)
[[ -n $exported ]] || die "no Rust exports found in the rebuilt rust/"
missing=$(comm -23 <(echo "$exported") <(awk '{print $2}' "$headers/Module.symvers" | sort -u))
[[ -z $missing ]] ||
	die "$(wc -l <<<"$missing") rebuilt Rust symbols are not $release's, e.g. $(head -n1 <<<"$missing")"
log "rust/: $(wc -l <<<"$exported") Rust symbols, all in $release's Module.symvers; config and release unchanged"

# scripts/ is the shared linux-kbuild directory on Debian: target.json is the
# same for every amd64 flavour of one version.
mkdir -p "$headers/rust"
cp "$obj"/rust/*.rmeta "$obj"/rust/*.so "$headers/rust/"
cp "$obj/scripts/target.json" "$headers/scripts/target.json"
log "rust/: added to $headers"
