#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Runs a program that is one test (exit status 0: passed) and prints it as
# KTAP, with its output as diagnostics:  ktap-one.sh NAME PROGRAM [ARGS]
set -u
name=$1
shift
out=/tmp/ktap-one.$$
"$@" >"$out" 2>&1
rc=$?
echo "TAP version 13"
echo "1..1"
sed 's/^/# /' "$out"
if [ "$rc" -eq 0 ]; then echo "ok 1 $name"; else echo "not ok 1 $name # exit status $rc"; fi
rm -f "$out"
