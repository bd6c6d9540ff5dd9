#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds what syz-manager's qemu VMs boot to fuzz radiance.ko with
# tests/syzkaller/dev_radiance.txt (Documentation/testing.md, "syzkaller"):
#
#	tools/build-syz-image.sh [OUTDIR]	(default build/syzkaller)
#
# OUTDIR gets:
#  bzImage         the fuzzing kernel (tools/build-kernel.sh --fuzz: KASAN,
#                  KCOV for the module, virtio-net, debug info);
#  initramfs.cpio.gz  a Debian 13 minbase root with openssh-server, made by
#                  debootstrap from the mirror and cached under
#                  $RADIANCE_CACHE/syzkaller, plus radiance.ko built for that
#                  kernel and tools/guest/syz-init as /init (it loads the module
#                  with two emulated devices and starts sshd on 10.0.2.15);
#  image           empty: syz-manager wants an image, and ignores an empty one;
#  key, key.pub    the ssh key the root account accepts;
#  manager.cfg     a syz-manager configuration for one TCG VM, to edit.
# syzkaller itself is not built or fetched here: set $SYZKALLER to its
# checkout to have manager.cfg name it. Needs root (debootstrap), or sudo.
source "$(dirname "$0")/lib.sh"

out=$(realpath -m "${1:-$BUILD/syzkaller}")
root=$RADIANCE_CACHE/syzkaller/root
SUDO=
[[ $(id -u) == 0 ]] || SUDO=sudo

"$TOP"/tools/build-kernel.sh --fuzz >/dev/null
export RADIANCE_KERNEL=fuzz
kdir=$(kernel_dir)
stage=$("$TOP"/tools/build-guest.sh)
mkdir -p "$out" "$(dirname "$root")"

# The root, once: sshd and what /init runs (ip, insmod). Documentation,
# locales and apt's lists are dropped: the initramfs is unpacked into RAM.
if [[ ! -f $root/.radiance-root ]]; then
	log "syzkaller: debootstrap trixie with openssh-server into $root (about a minute)"
	debootstrap_root "$root.tmp" "$root.debootstrap.log" --include=openssh-server,iproute2,kmod
	$SUDO rm -rf "$root.tmp"/usr/share/{doc,man,info,locale} "$root.tmp"/var/lib/apt/lists/* \
		"$root.tmp"/var/cache/apt/*.bin
	$SUDO touch "$root.tmp/.radiance-root"
	$SUDO rm -rf "$root"
	$SUDO mv "$root.tmp" "$root"
fi

[[ -f $out/key ]] || ssh-keygen -q -t ed25519 -N '' -C radiance-syzkaller -f "$out/key"
cp "$kdir/arch/x86/boot/bzImage" "$out/bzImage"
: >"$out/image"

log "syzkaller: packing the initramfs"
work=$(mktemp -d "$BUILD/syz-initramfs.XXXXXX")
trap '$SUDO rm -rf "$work"' EXIT
$SUDO cp -a "$root" "$work/root"
$SUDO install -m 755 "$TOP/tools/guest/syz-init" "$work/root/init"
$SUDO install -m 644 "$stage/radiance.ko" "$work/root/radiance.ko"
$SUDO install -d -m 700 "$work/root/root/.ssh"
$SUDO install -m 600 "$out/key.pub" "$work/root/root/.ssh/authorized_keys"
(cd "$work/root" && $SUDO find . -mindepth 1 -print0 | LC_ALL=C sort -z |
	$SUDO cpio --null -o -H newc --owner 0:0 --quiet) | gzip -1 >"$out/initramfs.cpio.gz.tmp"
mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"

# One VM under TCG: KVM is not assumed. 4 GiB: the root lives in RAM, and
# KASAN wants its shadow.
cat >"$out/manager.cfg" <<EOF
{
	"target": "linux/amd64",
	"http": "127.0.0.1:56741",
	"workdir": "$out/workdir",
	"kernel_obj": "$kdir",
	"module_obj": ["$(dirname "$stage")/kmod-fuzz/kmod"],
	"kernel_src": "$(kernel_src)",
	"image": "$out/image",
	"sshkey": "$out/key",
	"syzkaller": "${SYZKALLER:-/path/to/syzkaller}",
	"procs": 2,
	"sandbox": "none",
	"cover": true,
	"reproduce": true,
	"enable_syscalls": ["openat\$radiance*", "ioctl\$RADIANCE*", "mmap\$radiance*",
		"syz_memcpy_off\$radiance*", "read\$radiance*", "write\$radiance*", "close"],
	"type": "qemu",
	"vm": {
		"count": 1,
		"cpu": 2,
		"mem": 4096,
		"kernel": "$out/bzImage",
		"initrd": "$out/initramfs.cpio.gz",
		"cmdline": "rdinit=/init panic_on_warn=1 oops=panic",
		"network_device": "virtio-net-pci",
		"qemu_args": "-accel tcg -cpu max"
	}
}
EOF
log "syzkaller: $out ($(du -m "$out/initramfs.cpio.gz" | cut -f1) MiB initramfs)"
echo "$out"
