#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs a Rust test binary (libtest) in the guest and prints its results as
# KTAP, so the host's ktap parser counts them:  libtest-ktap.sh BINARY [ARGS]
# The plan is libtest's `running N tests`: a binary that dies part-way
# leaves results missing from it, each counted as failed.
set -u
out=/tmp/libtest.$$
"$@" --test-threads=1 >"$out" 2>&1
rc=$?
sed 's/^/# /' "$out"
awk -v rc="$rc" '
	/^running [0-9]+ tests?$/ && running == "" { running = $2 }
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
	}' "$out"
rm -f "$out"
