#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The documents are for readers; their history belongs to git. Checks every
# Markdown file the repository tracks:
#  - README.md has at most 200 lines;
#  - no line is over 100 characters outside code blocks;
#  - no hash of one of this repository's commits, except in the baseline
#    table of Documentation/benchmarks.md, which names the commit it ran on;
#  - no lab-notebook words ("scratch", "this pass", "runs of");
#  - every relative link resolves to a file or folder of the repository.
# Prints each problem as FILE:LINE: what, and fails if there is any. Run by
# tools/test.sh.
source "$(dirname "$0")/lib.sh"
cd "$TOP"

rc=0
problem() {
	echo "$1"
	rc=1
}

lines=$(wc -l <README.md)
((lines <= 200)) || problem "README.md: $lines lines, at most 200 (the rest goes in Documentation/)"

while read -r doc; do
	dir=$(dirname "$doc")
	# Line number and text of each line outside ``` blocks.
	while IFS=$'\t' read -r n text; do
		((${#text} <= 100)) || problem "$doc:$n: ${#text} characters, at most 100"
		if grep -qiE '\bscratch\b|\bthis pass\b|\bruns of\b' <<<"$text"; then
			problem "$doc:$n: a lab-notebook word: $text"
		fi
		if [[ $doc != Documentation/benchmarks.md ]]; then
			for word in $(grep -oE '\b[0-9a-f]{7,40}\b' <<<"$text" | grep '[a-f]' || true); do
				if git cat-file -e "$word^{commit}" 2>/dev/null; then
					problem "$doc:$n: names commit $word (history belongs to git)"
				fi
			done
		fi
		# Relative links: [text](target), without a scheme or an anchor
		# alone; the anchor part is dropped.
		for target in $(grep -oE '\]\([^)# ]+' <<<"$text" | sed 's/^](//' || true); do
			case $target in
			*://* | mailto:*) continue ;;
			esac
			[[ -e $dir/$target ]] || problem "$doc:$n: link to $target, which is not in the repository"
		done
	done < <(awk '/^[[:space:]]*```/ { code = !code; next } !code { printf "%d\t%s\n", NR, $0 }' "$doc")
done < <(git ls-files '*.md')

((rc == 0)) && echo "the documents keep to their rules ($(git ls-files '*.md' | wc -l) files)"
exit $rc
