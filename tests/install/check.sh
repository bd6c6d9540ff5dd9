#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs libradiance under a temporary prefix, moves the tree elsewhere
# (the install must be relocatable), and builds tests/install/smoke.c
# against it through pkg-config only, linked to the shared library, to
# the static one, and fully static; runs each. Prints KTAP; exits non-zero
# if any check fails.
source "$(dirname "$0")/../../tools/lib.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/radiance-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$TOP"/tools/install-libradiance.sh "$work/staged" >&2
mv "$work/staged" "$work/moved"
export PKG_CONFIG_PATH=$work/moved/lib/pkgconfig
libdir=$(pkg-config --variable=libdir libradiance)

n=0 failed=0
check() {
	local name=$1
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n $name"
	else
		failed=1
		echo "not ok $n $name"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
}
shared() {
	cc -std=c11 -Wall -Werror -o "$work/smoke-shared" "$TOP/tests/install/smoke.c" \
		$(pkg-config --cflags --libs libradiance) &&
		LD_LIBRARY_PATH=$libdir "$work/smoke-shared" host
}
static() {
	cc -std=c11 -Wall -Werror -o "$work/smoke-static" "$TOP/tests/install/smoke.c" \
		$(pkg-config --static --cflags --libs libradiance | sed 's/-lradiance/-l:libradiance.a/') &&
		"$work/smoke-static" host
}
# Fully static, as a tool for an initramfs is linked: every library from
# `pkg-config --static` must exist as an archive (there is no libgcc_s.a).
fully_static() {
	cc -std=c11 -Wall -Werror -static -o "$work/smoke-fully-static" "$TOP/tests/install/smoke.c" \
		$(pkg-config --static --cflags --libs libradiance) &&
		file "$work/smoke-fully-static" | grep -q 'statically linked' &&
		"$work/smoke-fully-static" host
}
echo "TAP version 13"
echo "1..4"
check "pkg-config finds the installed libradiance" pkg-config --exists libradiance
check "a C program links the installed shared library and runs" shared
check "a C program links the installed static library and runs" static
check "a fully static C program links through pkg-config --static and runs" fully_static
exit $failed
