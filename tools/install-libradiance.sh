#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Installs libradiance for C users (the IREE radiance HAL driver):
#
#	tools/install-libradiance.sh PREFIX
#
# puts lib/libradiance.a, lib/libradiance.so, include/libradiance.h (and the
# uapi's radiance.h, for the built-in kernels' PCs) and
# lib/pkgconfig/libradiance.pc under PREFIX. The .pc file finds the tree
# from its own place (${pcfiledir}), so PREFIX can be moved as a whole:
#
#	PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs libradiance
#	PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --static --libs libradiance
source "$(dirname "$0")/lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 PREFIX"
prefix=$(realpath -m "$1")
cargo build -q --release -p libradiance --manifest-path "$TOP/Cargo.toml"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$TOP/libradiance/Cargo.toml" | head -n1)
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 644 "$TOP/target/release/libradiance.a" "$prefix/lib/"
install -m 755 "$TOP/target/release/libradiance.so" "$prefix/lib/"
install -m 644 "$TOP/libradiance/include/libradiance.h" "$TOP/uapi/include/radiance.h" "$prefix/include/"
# Libs.private: what Rust's std needs from the system when the static
# library is linked (`rustc --print native-static-libs`), less -lgcc_s:
# gcc links the unwinder itself (libgcc_s as needed, or libgcc_eh under
# -static, where there is no libgcc_s to find).
cat >"$prefix/lib/pkgconfig/libradiance.pc" <<PC
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libradiance
Description: The Radiance GPU driver stack's userspace HAL (C ABI)
Version: $version
Libs: -L\${libdir} -lradiance
Libs.private: -lpthread -ldl -lm -lrt -lutil
Cflags: -I\${includedir}
PC
log "installed libradiance $version under $prefix"
