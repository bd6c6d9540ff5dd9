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
