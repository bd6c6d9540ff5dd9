#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs a Rust test binary (libtest) in the guest and prints its results as
# KTAP, so the host's ktap parser counts them:
#	libtest-ktap.sh [--not-here NAME REASON]... BINARY [ARGS]
# The plan is libtest's `running N tests`: a binary that dies part-way
# leaves results missing from it, each counted as failed. A test NAME that
# cannot run where this runs is left out (libtest has no skip of its own)
# and shows as a KTAP skip with REASON, in the plan.
set -u
out=/tmp/libtest.$$
: >"$out.skips"
while [ "${1:-}" = --not-here ]; do
	printf '%s # SKIP %s\n' "$2" "$3" >>"$out.skips"
	shift 3
done
bin=$1
shift
# --exact: a name left out is not a prefix of others left out with it.
[ -s "$out.skips" ] && set -- "$@" --exact $(sed 's/ # SKIP .*//; s/^/--skip /' "$out.skips")
"$bin" "$@" --test-threads=1 >"$out" 2>&1
rc=$?
sed 's/^/# /' "$out"
awk -v rc="$rc" '
	# The cases left out, first: "NAME # SKIP REASON".
	FILENAME ~ /skips$/ { n++; line[n] = "ok " n " " $0; left_out++; next }
	/^running [0-9]+ tests?$/ && running == "" { running = $2 + left_out }
	/^test .* \.\.\. (ok|FAILED|ignored)/ {
		n++; name = $2; verdict = $0
		sub(/^.* \.\.\. /, "", verdict); sub(/,.*/, "", verdict)
		line[n] = (verdict == "ok") ? "ok " n " " name : \
			(verdict == "ignored") ? "ok " n " " name " # SKIP ignored" : "not ok " n " " name
		failed += (verdict == "FAILED")
	}
	END {
		print "TAP version 13"
		# A binary that failed without a failed test (it crashed, or
		# never ran) fails as one more test, one of its plan.
		crashed = (rc != 0 && failed == 0)
		plan = n + crashed
		if (running + 0 > plan) plan = running + 0
		print "1.." plan
		for (i = 1; i <= n; i++) print line[i]
		if (crashed) print "not ok " n + 1 " test binary exited with status " rc
	}' "$out.skips" "$out"
rm -f "$out" "$out.skips"
