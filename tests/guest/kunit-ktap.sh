#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# radiance.ko's KUnit suites run when the module is loaded; this prints
# their results from /sys/kernel/debug/kunit:
#
#	kunit-ktap.sh SUITE		suite SUITE as KTAP, one top-level result
#					per test case, so that the host counts
#					every case; nothing, and status 1, where
#					SUITE left no results
#	kunit-ktap.sh --only SUITE...	one test: the module ran no radiance_*
#					suite but these (the job's manifest,
#					/kunit-suites, misses none)
#
# KUnit's debugfs file nests a suite inside a one-result document; the
# suite is lifted out of it: the outer version and plan lines and the
# outer verdict go, and its lines lose one level of indentation. A suite
# KUnit skipped whole has nothing nested: its one skipped result stays.
set -u
dir=/sys/kernel/debug/kunit

if [ "${1:-}" != --only ]; then
	results=$dir/$1/results
	[ -f "$results" ] || { echo "# no $results: the module did not run KUnit suite $1"; exit 1; }
	if sed -n 3p "$results" | grep -q '^    KTAP version'; then
		sed -e '1,2d' -e '$d' -e 's/^    //' "$results"
	else
		cat "$results"
	fi
	exit 0
fi
shift
unlisted=
for results in "$dir"/radiance_*/results; do
	[ -f "$results" ] || continue
	name=$(basename "$(dirname "$results")")
	case " $* " in
	*" $name "*) ;;
	*) unlisted="$unlisted $name" ;;
	esac
done
echo "KTAP version 1"
echo "1..1"
if [ -z "$unlisted" ]; then
	echo "ok 1 every radiance_* KUnit suite is in the manifest"
else
	echo "# not in the manifest:$unlisted"
	echo "not ok 1 every radiance_* KUnit suite is in the manifest"
fi
