# SPDX-License-Identifier: GPL-2.0
# Shared settings for the build and test scripts in tools/. Sourced, not run.
#
# Everything slow (apt lists, the kernel source, the built test kernel) lives
# under $RADIANCE_CACHE so that a rerun finds it; the repo itself stays clean
# apart from build/ (ignored).

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RADIANCE_CACHE=${RADIANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/radiance}
BUILD=$TOP/build
# The Debian package we take the kernel source from: pinned by name, not by
# revision, because old revisions leave the mirror.
KERNEL_PKG=linux-source-7.3
KERNEL_SUITE=trixie-backports
LLVM_SUFFIX=-19
JOBS=${JOBS:-$(nproc)}

export PATH=$HOME/.cargo/bin:$PATH

# The Debian mirror this machine already uses, so no host is hard-coded
# (tools/build-kernel.sh, tools/build-for-distro.sh). Either file may be
# missing (hence `|| true`): only an empty answer is a failure, the caller's
# to report.
debian_mirror() {
	{
		sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources || true
		sed -E -n 's/\[[^]]*\]//; s/^deb[[:space:]]+([^[:space:]]+).*/\1/p' \
			/etc/apt/sources.list /etc/apt/sources.list.d/*.list || true
	} 2>/dev/null | tr ' ' '\n' | awk '/\/debian\/?$/ && !seen++'
}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Which kernel the guest tools build for and boot: `test` (the default),
# `debug` (KASAN, KCOV, kmemleak, fault injection: build-kernel.sh --debug)
# or `fuzz` (the debug kernel with what syzkaller's VMs need: --fuzz).
RADIANCE_KERNEL=${RADIANCE_KERNEL:-test}
case $RADIANCE_KERNEL in
test | debug | fuzz) ;;
*) die "RADIANCE_KERNEL must be test, debug or fuzz, not '$RADIANCE_KERNEL'" ;;
esac

# Where the built kernel tree lives; set by tools/build-kernel.sh's stamp.
kernel_dir() {
	local f=$RADIANCE_CACHE/kernel/current
	[[ $RADIANCE_KERNEL == test ]] || f=$f-$RADIANCE_KERNEL
	[[ -f $f ]] || die "no $RADIANCE_KERNEL kernel built yet: run tools/build-kernel.sh${f##*/current}"
	cat "$f"
}

# The extracted kernel source (for kselftest_harness.h).
kernel_src() {
	local f=$RADIANCE_CACHE/kernel/current-src
	[[ -f $f ]] || die "no kernel source yet: run tools/build-kernel.sh"
	cat "$f"
}

# Debian packages fetched straight from the mirror through a private apt list
# (the machine's own apt configuration is never touched), kept in $DEBS:
# tools/build-for-distro.sh and tools/build-syz-image.sh.
DEBIAN_SUITES=(trixie trixie-backports)
DEBIAN_APT=$RADIANCE_CACHE/distro/apt
DEBS=$DEBIAN_APT/debs
fetch_debs() {
	local missing=() p mirror
	for p in "$@"; do
		compgen -G "$DEBS/${p}_*.deb" >/dev/null || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	mirror=$(debian_mirror)
	[[ -n $mirror ]] || die "no Debian mirror found in /etc/apt/sources.list*"
	local opts=(-o "Dir::Etc::SourceList=$DEBIAN_APT/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$DEBIAN_APT/lists" -o "Dir::State::status=$DEBIAN_APT/status"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Architecture=amd64
		-o APT::Sandbox::User=root)
	mkdir -p "$DEBIAN_APT/lists/partial" "$DEBS"
	touch "$DEBIAN_APT/status"
	printf "deb $mirror %s main\n" "${DEBIAN_SUITES[@]}" >"$DEBIAN_APT/sources.list"
	log "apt: fetching ${missing[*]}"
	apt-get "${opts[@]}" update -qq >&2
	(cd "$DEBS" && apt-get "${opts[@]}" download "${missing[@]}" >&2)
}

# A Debian 13 minbase root in DIR, made by debootstrap from its own package
# (none need be installed), with both suites in its sources.list. Extra
# debootstrap options (--include=...) follow LOG. Needs root, or sudo.
debootstrap_root() {
	local dir=$1 logfile=$2 mirror sudo=
	shift 2
	[[ $(id -u) == 0 ]] || sudo=sudo
	mirror=$(debian_mirror)
	[[ -n $mirror ]] || die "no Debian mirror found in /etc/apt/sources.list*"
	fetch_debs debootstrap
	$sudo rm -rf "$dir" "$DEBIAN_APT/debootstrap"
	dpkg-deb -x "$(ls "$DEBS"/debootstrap_*.deb)" "$DEBIAN_APT/debootstrap"
	$sudo env DEBOOTSTRAP_DIR="$DEBIAN_APT/debootstrap/usr/share/debootstrap" \
		"$DEBIAN_APT/debootstrap/usr/sbin/debootstrap" --variant=minbase --arch=amd64 "$@" \
		"${DEBIAN_SUITES[0]}" "$dir" "$mirror" >"$logfile" 2>&1 ||
		die "debootstrap failed: see $logfile"
	printf "deb $mirror %s main\n" "${DEBIAN_SUITES[@]}" | $sudo tee "$dir/etc/apt/sources.list" >/dev/null
}
