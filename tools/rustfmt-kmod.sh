#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Formats the kernel module's Rust code (kmod/ and the uapi file it
# includes) with the kernel's own .rustfmt.toml, as `make rustfmt` does for
# in-tree code (the kernel's rustfmt targets do not take M=):
#
#	tools/rustfmt-kmod.sh            # rewrite
#	tools/rustfmt-kmod.sh --check    # print the diffs, fail if any
source "$(dirname "$0")/lib.sh"

# The crate root reaches every file through its `mod` items.
exec rustfmt --edition 2021 --config-path "$(kernel_src)/.rustfmt.toml" "$@" "$TOP/kmod/radiance_main.rs"
