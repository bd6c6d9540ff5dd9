#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the initramfs for a QEMU test run:
#
#	tools/make-initramfs.sh <out.cpio.gz> <staging-dir>
#
# A gzip'd newc cpio with busybox-static as /bin/busybox plus a symlink per
# applet (/sbin, /usr/bin and /usr/sbin point at /bin), tools/guest/init as
# /init, and everything in <staging-dir> copied on top (the caller puts the
# guest's `job` script there, and radiance.ko and static test binaries).
# The archive is reproducible: sorted, owned by 0:0, all times set to
# $SOURCE_DATE_EPOCH (default 0), gzip without a name or time stamp.
# Set $BUSYBOX to use another static busybox than /bin/busybox.
source "$(dirname "$0")/lib.sh"

[[ $# -eq 2 ]] || die "usage: $0 <out.cpio.gz> <staging-dir>"
out=$1
staging=$2
busybox=${BUSYBOX:-/bin/busybox}
epoch=${SOURCE_DATE_EPOCH:-0}

[[ -d $staging ]] || die "staging dir '$staging' does not exist"
[[ -x $busybox ]] || die "no busybox at $busybox: apt-get install busybox-static"
if command -v file >/dev/null; then
	file -L "$busybox" | grep -q 'statically linked' ||
		die "$busybox is not statically linked: apt-get install busybox-static"
fi

umask 022
mkdir -p "$BUILD" "$(dirname "$out")"
work=$(mktemp -d "$BUILD/initramfs.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

mkdir -p "$root"/{bin,dev,proc,sys,tmp,root,etc,usr}
ln -s bin "$root/sbin"
ln -s ../bin "$root/usr/bin"
ln -s ../bin "$root/usr/sbin"
cp "$busybox" "$root/bin/busybox"
chmod 755 "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[[ $applet == busybox ]] || ln -s busybox "$root/bin/$applet"
done
install -m 755 "$TOP/tools/guest/init" "$root/init"
cp -R --no-preserve=ownership "$staging/." "$root/"

find "$root" -exec touch -h -d "@$epoch" {} +
(cd "$root" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner 0:0 --reproducible --quiet) |
	gzip -9 -n >"$out.tmp"
mv "$out.tmp" "$out"
log "initramfs: $out ($(du -k "$out" | cut -f1) KiB)"
