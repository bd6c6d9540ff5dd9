#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The long fuzzing mode: radiance-fuzz in the QEMU guest on the debug
# kernel for as long as asked, starting from the corpus kept under
# $RADIANCE_CACHE/fuzz/corpus and adding what it finds there.
#
#	tools/fuzz.sh [--minutes N] [--seed N] [--procs N]
#
# Defaults: 60 minutes, seed 1, 2 worker processes. Exit status 0 only if
# no worker died, the objects were freed, kmemleak found nothing and the
# console shows no KASAN, lockdep, WARN or BUG line. A crashing program is
# replayed with `radiance-fuzz replay HEX` (its last corpus entries are in
# build/console.log). The edges reached are kept in build/fuzz-cover.txt,
# and the functions with the most left are listed (tools/fuzz/cover-report.sh).
source "$(dirname "$0")/lib.sh"

minutes=60 seed=1 procs=2
while [[ $# -gt 0 ]]; do
	case $1 in
	--minutes | --seed | --procs)
		[[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || die "$1 takes a number"
		declare "${1#--}=$2"
		shift 2
		;;
	*) die "usage: $0 [--minutes N] [--seed N] [--procs N]" ;;
	esac
done

corpus=$RADIANCE_CACHE/fuzz/corpus
mkdir -p "$corpus" "$BUILD"
# RADIANCE_KERNEL=fuzz: on syzkaller's kernel (tools/build-syz-image.sh), to
# compare the two fuzzers' coverage of the same radiance.ko.
[[ $RADIANCE_KERNEL == fuzz ]] || RADIANCE_KERNEL=debug
export RADIANCE_KERNEL
"$TOP"/tools/build-kernel.sh --$RADIANCE_KERNEL >/dev/null
stage=$("$TOP"/tools/build-guest.sh)
cp "$TOP/tests/guest/fuzz-job.sh" "$stage/job"
rm -rf "$stage/corpus"
cp -R "$corpus" "$stage/corpus"
log "fuzz: $(ls "$corpus" | wc -l) corpus entries, $minutes minutes, seed $seed, $procs workers"
"$TOP"/tools/make-initramfs.sh "$BUILD/fuzz.cpio.gz" "$stage"
rc=0
RADIANCE_GUEST_CMDLINE="radiance_fuzz.seconds=$((minutes * 60)) radiance_fuzz.seed=$seed radiance_fuzz.procs=$procs" \
	"$TOP"/tools/run-qemu.sh --timeout $((minutes * 60 + 900)) "$BUILD/fuzz.cpio.gz" || rc=$?

# Keep what the run found: one file per entry, named by its hash.
added=0
while read -r hex; do
	name=$(printf '%s' "$hex" | sha256sum | cut -c1-16)
	[[ -f $corpus/$name ]] && continue
	perl -e 'print pack("H*", $ARGV[0])' "$hex" >"$corpus/$name"
	added=$((added + 1))
done < <(sed -n 's/.*radiance-fuzz-corpus: \([0-9a-f]*\).*/\1/p' "$BUILD/console.log")
log "fuzz: $added new corpus entries in $corpus"
# Where the edges were reached, and the functions with most left to reach.
sed -n 's/.*radiance-fuzz-cover: //p' "$BUILD/console.log" | tr -d '\r' >"$BUILD/fuzz-cover.txt"
if [[ -s $BUILD/fuzz-cover.txt ]]; then
	"$TOP"/tools/fuzz/cover-report.sh --top 15 "$BUILD/kmod-$RADIANCE_KERNEL/kmod/radiance.ko" "$BUILD/fuzz-cover.txt" >&2
fi
exit "$rc"
