#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Prints the results of radiance.ko's KUnit suites (they run when the module
# is loaded) as KTAP, one top-level result per test case, so that the host
# counts every case:  kunit-ktap.sh
#
# KUnit's debugfs file nests a suite inside a one-result document; the
# suite is lifted out of it: the outer version and plan lines and the
# outer verdict go, and its lines lose one level of indentation.
set -u
found=0
for results in /sys/kernel/debug/kunit/radiance_*/results; do
	[ -f "$results" ] || continue
	found=1
	sed -e '1,2d' -e '$d' -e 's/^    //' "$results"
done
if [ "$found" -eq 0 ]; then
	echo "KTAP version 1"
	echo "1..1"
	echo "not ok 1 radiance_kunit_suites # no results in /sys/kernel/debug/kunit"
fi
