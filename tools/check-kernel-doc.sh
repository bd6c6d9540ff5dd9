#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The C uapi header's kernel-doc must be clean: runs the kernel's own
# scripts/kernel-doc -none -Wall (from the kernel source tools/build-kernel.sh
# fetches) on uapi/include/radiance.h and fails, printing what it said, if it
# says anything. Prints nothing when the header is clean.
source "$(dirname "$0")/lib.sh"

header=uapi/include/radiance.h
src=$(kernel_src)
kdoc=$src/scripts/kernel-doc
[[ -x $kdoc ]] || die "no executable $kdoc"

# kernel-doc exits 0 after warnings (to stderr), so its output is the verdict.
out=$(cd "$TOP" && "$kdoc" -none -Wall "$header" 2>&1) || {
	printf '%s\n' "$out" >&2
	die "$kdoc failed on $header"
}
if [[ -n $out ]]; then
	printf '%s\n' "$out" >&2
	die "kernel-doc warnings in $header"
fi
