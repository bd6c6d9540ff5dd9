#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# One KTAP test on the debug kernel: no object leaked since the last
# `kmemleak.sh` (or `kmemleak.sh --clear`), listing each leak.
#
#	kmemleak.sh --clear	forget what is suspected now (boot, earlier runs)
#	kmemleak.sh NAME	scan and report as test NAME
#
# kmemleak only reports objects older than 5 s that no scan found a
# reference to, so it scans twice, 6 s apart. It does not track pages or
# ioremap: the driver's own counters (host_pinned, vram_bos in debugfs)
# cover those, and the fail-nth sweep and the fuzzer check them.
set -u
f=/sys/kernel/debug/kmemleak

if [ "$1" = --clear ]; then
	echo scan >"$f" 2>/dev/null
	echo clear >"$f" 2>/dev/null
	exit 0
fi
name=$1
echo "TAP version 13"
echo "1..1"
if [ ! -w "$f" ]; then
	echo "# no $f: a kernel without DEBUG_KMEMLEAK"
	echo "not ok 1 $name"
	exit 0
fi
sleep 6
echo scan >"$f"
sleep 6
echo scan >"$f"
out=/tmp/kmemleak.$$
cat "$f" >"$out"
leaks=$(grep -c '^unreferenced object' "$out")
echo "# kmemleak: $leaks unreferenced objects"
# Every leak, with its backtrace, as diagnostics.
sed 's/^/# /' "$out" | head -n 400
echo clear >"$f"
rm -f "$out"
if [ "$leaks" -eq 0 ]; then echo "ok 1 $name"; else echo "not ok 1 $name"; fi
