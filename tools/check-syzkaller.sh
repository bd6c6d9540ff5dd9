#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tests/syzkaller/dev_radiance.txt, the syzkaller description of the uapi,
# must describe every ioctl uapi/include/radiance.h defines, and no other:
# compares the RADIANCE_IOCTL_* names of the two and prints each one that
# only one of them has. Checks also that its .const file names each ioctl.
# Prints nothing when they agree.
source "$(dirname "$0")/lib.sh"
cd "$TOP"

header=uapi/include/radiance.h
description=tests/syzkaller/dev_radiance.txt
consts=tests/syzkaller/dev_radiance.txt.const
[[ -f $description && -f $consts ]] || die "no $description or no $consts"

defined=$(grep -oE '^#define RADIANCE_IOCTL_[A-Z0-9_]+[[:space:]]+(\\|_IO)' "$header" |
	awk '{print $2}' | sort -u)
described=$(grep -oE '^ioctl\$RADIANCE_IOCTL_[A-Z0-9_]+\(' "$description" |
	sed 's/^ioctl\$//; s/($//' | sort -u)
extracted=$(grep -oE '^RADIANCE_IOCTL_[A-Z0-9_]+ ' "$consts" | tr -d ' ' | grep -v '^RADIANCE_IOCTL_TYPE$' | sort -u)

rc=0
while read -r name; do
	printf '%s: %s is not in %s\n' "$description" "$name" "$header" >&2
	rc=1
done < <(comm -13 <(echo "$defined") <(echo "$described") | grep .)
while read -r name; do
	printf '%s: no ioctl$%s for %s'"'"'s ioctl\n' "$description" "$name" "$header" >&2
	rc=1
done < <(comm -23 <(echo "$defined") <(echo "$described") | grep .)
while read -r name; do
	printf '%s: no value for %s (run syz-extract again: Documentation/testing.md)\n' "$consts" "$name" >&2
	rc=1
done < <(comm -23 <(echo "$defined") <(echo "$extracted") | grep .)
exit $rc
