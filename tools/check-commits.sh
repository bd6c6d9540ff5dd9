#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every commit since CONTRIBUTING.md was added keeps its subject rule:
# `area: Do the thing`, an area from CONTRIBUTING.md's table of prefixes,
# an imperative sentence starting with a capital letter and no full stop,
# at most 72 characters; a commit that changes ABI_MINOR names the new
# version ("ABI 1.N") in its subject. Prints each commit that does not,
# and fails if any. Run by tools/test.sh.
source "$(dirname "$0")/lib.sh"
cd "$TOP"

# The prefixes: the first column of the table under `| prefix |`.
areas=$(awk '/^\| prefix \|/ { on = 1; next } on && !/^\|/ { exit }
	on { split($0, col, "|"); print col[2] }' CONTRIBUTING.md | grep -oE '`[^`]+`' | tr -d '`')
[[ -n $areas ]] || die "CONTRIBUTING.md has no table of prefixes"

# The commit that added CONTRIBUTING.md: the rule holds from it on.
first=$(git log --diff-filter=A --format=%H -- CONTRIBUTING.md | tail -n1)
[[ -n $first ]] || die "CONTRIBUTING.md is not committed"

rc=0 count=0
while IFS=$'\t' read -r hash subject; do
	count=$((count + 1))
	why=
	area=${subject%%: *}
	text=${subject#*: }
	if ((${#subject} > 72)); then
		why="${#subject} characters, at most 72"
	elif [[ $area == "$subject" ]] || ! grep -qxF -- "$area" <<<"$areas"; then
		why="no prefix from CONTRIBUTING.md's table"
	elif ! [[ $text =~ ^[A-Z] ]] || [[ $text == *. ]]; then
		why="not 'area: Do the thing' (a capital first, no full stop)"
	fi
	# An ABI bump names its version.
	minor=$(git show "$hash" -- uapi/src/lib.rs | sed -nE 's/^\+pub const ABI_MINOR: u16 = ([0-9]+);/\1/p')
	if [[ -z $why && -n $minor && $subject != *"ABI 1.$minor"* ]]; then
		why="it changes the ABI to 1.$minor and does not say so"
	fi
	if [[ -n $why ]]; then
		echo "${hash:0:12} $subject: $why"
		rc=1
	fi
done < <(git log --format='%H%x09%s' "$first^..HEAD" 2>/dev/null || git log --format='%H%x09%s' "$first")

((rc == 0)) && echo "the $count commit subjects since CONTRIBUTING.md keep its rule"
exit $rc
