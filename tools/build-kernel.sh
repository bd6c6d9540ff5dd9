#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Fetches linux-source-7.3 from Debian (private apt lists: the machine's apt
# configuration is never touched) and builds the test kernel from tinyconfig
# plus tools/kernel/radiance.config. The built tree is cached under
# $RADIANCE_CACHE/kernel/<version>-<config hash>; a rerun with the same
# version and config returns at once.
#
#	tools/build-kernel.sh [--debug|--fuzz]
#
# --debug: the debug kernel (KASAN, KCOV, kmemleak, fault injection), with
# tools/kernel/debug.config merged on top; cached beside the test kernel and
# named by `current-debug` instead of `current` (see kernel_dir in lib.sh).
# --fuzz: the debug kernel plus tools/kernel/fuzz.config, what syzkaller's
# VMs need (a virtio network card, debug info); named by `current-fuzz`.
source "$(dirname "$0")/lib.sh"

apt_dir=$RADIANCE_CACHE/apt
fragments=("$TOP/tools/kernel/radiance.config")
pointer=current
case ${1:-} in
'') ;;
--debug)
	fragments+=("$TOP/tools/kernel/debug.config")
	pointer=current-debug
	;;
--fuzz)
	fragments+=("$TOP/tools/kernel/debug.config" "$TOP/tools/kernel/fuzz.config")
	pointer=current-fuzz
	;;
*) die "usage: $0 [--debug|--fuzz]" ;;
esac

fetch_source_deb() {
	local deb
	deb=$(ls "$apt_dir"/${KERNEL_PKG}_*.deb 2>/dev/null | sort -V | tail -n1 || true)
	if [[ -n $deb ]]; then echo "$deb"; return; fi
	local mirror; mirror=$(debian_mirror)
	[[ -n $mirror ]] || die "no Debian mirror found in /etc/apt/sources.list*"
	mkdir -p "$apt_dir/lists/partial"
	echo "deb $mirror $KERNEL_SUITE main" >"$apt_dir/sources.list"
	local opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt_dir/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
	log "apt: fetching $KERNEL_PKG from $KERNEL_SUITE"
	apt-get "${opts[@]}" update -qq >&2
	(cd "$apt_dir" && apt-get "${opts[@]}" download "$KERNEL_PKG" >&2)
	ls "$apt_dir"/${KERNEL_PKG}_*.deb | sort -V | tail -n1
}

deb=$(fetch_source_deb)
version=$(basename "$deb" | sed -E "s/^${KERNEL_PKG}_([^_]+)_.*/\1/")
hash=$( (echo "$version"; cat "${fragments[@]}") | sha256sum | cut -c1-12)
src=$RADIANCE_CACHE/kernel/src-$version
out=$RADIANCE_CACHE/kernel/build-$version-$hash

if [[ -f $out/.radiance-built ]]; then
	log "kernel: cached $out"
else
	if [[ ! -f $src/.radiance-extracted ]]; then
		log "kernel: extracting $KERNEL_PKG $version"
		rm -rf "$src" "$src.tmp" "$src.deb"; mkdir -p "$src.tmp" "$src.deb"
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$src.deb" --wildcards '*.tar.xz'
		tar -xJf "$src.deb"/usr/src/${KERNEL_PKG}.tar.xz -C "$src.tmp" --strip-components=1
		rm -rf "$src.deb"
		touch "$src.tmp/.radiance-extracted"
		mv "$src.tmp" "$src"
	fi
	mk=(make -C "$src" O="$out" LLVM=$LLVM_SUFFIX -j"$JOBS")
	rm -rf "$out"; mkdir -p "$out"
	"${mk[@]}" -s tinyconfig
	"$src"/scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" "${fragments[@]}" >/dev/null
	"${mk[@]}" -s olddefconfig
	# A symbol whose dependencies are unmet is dropped silently: refuse that.
	while IFS= read -r line; do
		[[ $line =~ ^CONFIG_ ]] || continue
		grep -qx "$line" "$out/.config" || die "kernel config: $line did not stick (unmet dependency?)"
	done < <(cat "${fragments[@]}")
	"${mk[@]}" rustavailable >/dev/null || die "Rust is not available to the kernel build"
	log "kernel: building $version (config $hash, $pointer); about 12 minutes on 2 cores, 25 for --debug"
	"${mk[@]}" -s all
	touch "$out/.radiance-built"
fi
echo "$out" >"$RADIANCE_CACHE/kernel/$pointer"
# Rewritten only when it changes: other tools read it while this runs.
[[ $(cat "$RADIANCE_CACHE/kernel/current-src" 2>/dev/null) == "$src" ]] ||
	echo "$src" >"$RADIANCE_CACHE/kernel/current-src"
echo "$out"
