#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The README's table of the kernel-side files that hold `unsafe` ("Inside
# `kmod/`") must be exactly the files of kmod/, gluon/src and uapi/src whose
# code (not comments) says `unsafe`: prints both lists' differences and
# fails if there are any. Run by tools/test.sh.
source "$(dirname "$0")/lib.sh"

# First column of the table under the `| file | holds the `unsafe` for |`
# header, up to the blank line that ends it: every `name.rs` in backticks,
# relative to kmod/.
listed=$(awk '/^\| file \| holds the `unsafe` for \|$/ { on = 1; next }
	on && !/^\|/ { exit }
	on { split($0, col, "|"); print col[2] }' "$TOP/README.md" |
	grep -oE '`[a-z_/]+\.rs`' | tr -d '`' | sed 's|^|kmod/|' | sort -u)
[[ -n $listed ]] || die "README.md has no table of files holding unsafe"

# `unsafe` as a word in what is left of each line after its `//` comment.
# grep reads all of sed's output: under pipefail, `grep -q` quitting early
# could fail the pipeline with sed's SIGPIPE.
actual=$(cd "$TOP" && git ls-files 'kmod/*.rs' 'gluon/src/*.rs' 'uapi/src/*.rs' |
	while read -r f; do
		if sed 's|//.*||' "$f" | grep -w unsafe >/dev/null; then echo "$f"; fi
	done | sort -u)

rc=0
while read -r f; do
	echo "unsafe in $f, which README.md's table does not list"
	rc=1
done < <(comm -13 <(echo "$listed") <(echo "$actual"))
while read -r f; do
	echo "README.md lists $f as holding unsafe, but it has none"
	rc=1
done < <(comm -23 <(echo "$listed") <(echo "$actual"))
if ((rc == 0)); then
	echo "the $(wc -l <<<"$actual") files holding unsafe are the ones README.md lists"
fi
exit $rc
