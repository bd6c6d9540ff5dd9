#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds radiance.ko for a distribution's own kernel, the one its users boot:
# Debian 13's backported 7.3 by default.
#
#	tools/build-for-distro.sh [RELEASE]
#
# Debian builds that kernel with CONFIG_RUST=y but its headers package ships
# no rust/ metadata (the .rmeta files and proc macros an external Rust module
# compiles against) and no scripts/target.json. So, in a Debian 13 root made
# with debootstrap (the machine's own apt configuration is never touched):
#  1. install the kernel's headers and linux-source of exactly the same
#     version, and the compilers its config names; refuse any other
#     (tools/distro/check-toolchain.sh);
#  2. rebuild the rust/ metadata from that source with the headers' .config,
#     prove that the configuration and the release came out identical to
#     the shipped headers', and add the metadata to the installed headers
#     (where an external module build and DKMS look for it);
#  3. build radiance.ko against those headers with the kernel's own gcc.
# Steps 1 and 2 are cached under $RADIANCE_CACHE/distro/RELEASE (about ten
# minutes cold, a few GiB); a rerun only rebuilds the module (seconds).
# Prints a directory holding radiance.ko, the kernel's unmodified vmlinuz,
# reference.ko, one of the kernel's own modules (for its vermagic), and
# radiance-signed.ko, signed with a key the kernel does not trust.
# Needs root (debootstrap, chroot), or sudo.
source "$(dirname "$0")/lib.sh"

release=${1:-7.3.4+deb13-amd64}
[[ $release =~ ^[0-9][0-9a-z.+~-]*$ ]] || die "not a kernel release: '$release'"
dist=$RADIANCE_CACHE/distro/$release
root=$dist/root
headers=/usr/src/linux-headers-$release
series=$(cut -d. -f1,2 <<<"$release")
out=$BUILD/distro-$release
SUDO=
[[ $(id -u) == 0 ]] || SUDO=sudo

# Runs a command in the Debian root, with a clean environment and a /proc
# of its own (objtool reads it) that goes away with it.
in_root() {
	$SUDO unshare --mount --pid --fork --mount-proc="$root/proc" chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# 1. The root: Debian 13 (minbase), the headers, the source of the same
# version and the toolchain. apt in the root prefers trixie's rustc to
# backports' newer one, as on a user's machine; the gate below checks it.
make_root() {
	[[ ! -f $root/.radiance-root ]] || return 0
	fetch_debs "linux-headers-$release"
	local version tmp=$root.tmp
	version=$(basename "$(ls "$DEBS"/linux-headers-"${release}"_*.deb)" | cut -d_ -f2)
	log "distro: debootstrap trixie into $root (about a minute)"
	debootstrap_root "$tmp" "$dist.debootstrap.log"
	log "distro: installing linux-headers-$release $version, its source and toolchain (about two minutes)"
	root=$tmp in_root apt-get update -qq >&2
	# python3: tools/bpf's build in `make prepare`; openssl: Kconfig asks it
	# (OPENSSL_SUPPORTS_ML_DSA), and a config made without it differs.
	root=$tmp in_root apt-get install -y -qq --no-install-recommends \
		"linux-headers-$release=$version" "linux-source-$series=$version" \
		make gcc-14 binutils rustc rust-src bindgen libclang-dev dwarves bc flex bison \
		libelf-dev libssl-dev openssl kmod xz-utils python3 >"$dist.apt.log" 2>&1 ||
		die "apt-get install in the Debian root failed: see $dist.apt.log"
	$SUDO touch "$tmp/.radiance-root"
	$SUDO mv "$tmp" "$root"
}

mkdir -p "$dist" "$out"
# One build at a time per release: the root and its /usr/src/radiance are
# shared by every checkout on the machine.
exec 9>"$dist.lock"
flock 9
make_root
config=$root$headers/.config
# Refused here already, before minutes of rebuilding.
"$TOP"/tools/distro/check-toolchain.sh "$config" $SUDO chroot "$root"

# What the module needs, kmod/Kbuild names at build time if it is missing;
# what it does without, and what that costs:
grep -qx CONFIG_KUNIT=y "$config" ||
	log "note: $release has no CONFIG_KUNIT: the module's KUnit suites are compiled out"
grep -qx CONFIG_KCOV=y "$config" ||
	log "note: $release has no CONFIG_KCOV: no coverage for tools/fuzz"
grep -qx CONFIG_DEBUG_FS=y "$config" ||
	log "note: $release has no CONFIG_DEBUG_FS: no radiance/ statistics in debugfs"

# The tree as DKMS gets it (Makefile's dkms-source): the module's sources,
# tracked or new but never build outputs, and the rust/ metadata tools.
in_root rm -rf /usr/src/radiance
in_root mkdir -p /usr/src/radiance
git -C "$TOP" ls-files -co --exclude-standard -z Kbuild Makefile dkms.conf kmod gluon/src uapi/src \
	tools/lib.sh tools/distro | tar -C "$TOP" --null -T - -c | $SUDO tar -C "$root/usr/src/radiance" -x

# 2. The rust/ metadata, into the installed headers (cached with the root).
in_root /usr/src/radiance/tools/distro/rust-metadata.sh "$release"

# 3. The module, with the headers' own Makefile: gcc-14, as the kernel.
log "distro: building radiance.ko for $release"
in_root make -C "$headers" M=/usr/src/radiance -j"$JOBS" modules >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	die "radiance.ko did not build for $release: see $out/build.log"
}
cp "$root/usr/src/radiance/kmod/radiance.ko" "$out/"
# A copy signed with a key of our own, which the kernel does not trust (as
# DKMS's own key until it is enrolled as a MOK): for the Secure Boot test.
if [[ ! -f $root/root/radiance-test-key.pem ]]; then
	in_root openssl req -new -x509 -nodes -utf8 -sha256 -days 36500 -batch -subj "/CN=radiance test key/" \
		-newkey rsa:2048 -keyout /root/radiance-test-key.pem -out /root/radiance-test-key.pem 2>/dev/null
fi
in_root sh -c "cp /usr/src/radiance/kmod/radiance.ko /tmp/radiance-signed.ko &&
	$headers/scripts/sign-file sha256 /root/radiance-test-key.pem /root/radiance-test-key.pem /tmp/radiance-signed.ko"
cp "$root/tmp/radiance-signed.ko" "$out/"
# With $RADIANCE_DISTRO_UNTRACED=1, also radiance-untraced.ko: built without
# its tracepoints (RADIANCE_NO_TRACE=y), for tools/bench.sh's price of a
# tracepoint that is off.
if [[ ${RADIANCE_DISTRO_UNTRACED:-} == 1 ]]; then
	in_root make -C "$headers" M=/usr/src/radiance RADIANCE_NO_TRACE=y -j"$JOBS" modules >>"$out/build.log" 2>&1 ||
		die "radiance-untraced.ko did not build for $release: see $out/build.log"
	cp "$root/usr/src/radiance/kmod/radiance.ko" "$out/radiance-untraced.ko"
fi

# The kernel's unmodified image and one of its own modules (loop.ko: no
# dependencies), whose vermagic radiance.ko's must equal.
fetch_debs "linux-binary-$release" "linux-modules-$release"
for pair in "linux-binary vmlinuz" "linux-modules kernel/drivers/block/loop.ko.xz"; do
	read -r pkg path <<<"$pair"
	file=$dist/$(basename "${path%.xz}")
	[[ -f $file ]] && continue
	dpkg-deb --fsys-tarfile "$(ls "$DEBS"/"$pkg-$release"_*.deb)" |
		tar -xO "./usr/lib/modules/$release/$path" >"$file.tmp"
	[[ $path != *.xz ]] || { xz -dc "$file.tmp" >"$file.xz.tmp" && mv "$file.xz.tmp" "$file.tmp"; }
	mv "$file.tmp" "$file"
done
cp "$dist/loop.ko" "$out/reference.ko"
ln -sfn "$dist/vmlinuz" "$out/vmlinuz"
ours=$(modinfo -F vermagic "$out/radiance.ko")
theirs=$(modinfo -F vermagic "$out/reference.ko")
log "vermagic: radiance.ko: $ours"
log "vermagic: loop.ko:     $theirs"
[[ $ours == "$theirs" ]] || die "radiance.ko's vermagic differs from $release's own modules'"
echo "$out"
