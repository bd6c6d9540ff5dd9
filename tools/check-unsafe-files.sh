#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Where kernel-side `unsafe` may live is a directory: kmod/wrappers/, the
# safe wrappers over `kernel::bindings`, and besides it only the few files
# the policy names below (Documentation/design/overview.md says why each).
# Checks that every file of kmod/, gluon/src and uapi/src whose code (not
# comments) says `unsafe` is one of those, that every wrapper holds some,
# and that the wrappers import no driver type, only one another. Prints
# each breach and fails if any. Run by tools/test.sh.
source "$(dirname "$0")/lib.sh"
cd "$TOP"

wrappers=kmod/wrappers
# Not wrappers, each with one narrow use of `unsafe`: the ioctl decoder's
# FromBytes/AsBytes for the uapi structs, the control node giving back
# bytes a server's write could not take, and the emulated device's byte
# access to its own VRAM pages and to mapped host memory.
named="kmod/ioctl.rs kmod/control.rs kmod/hw/emu.rs"

# `unsafe` as a word in what is left of each line after its `//` comment.
# grep reads all of sed's output: under pipefail, `grep -q` quitting early
# could fail the pipeline with sed's SIGPIPE.
holds_unsafe() {
	sed 's|//.*||' "$1" | grep -w unsafe >/dev/null
}

rc=0 count=0
for f in $(git ls-files 'kmod/*.rs' 'gluon/src/*.rs' 'uapi/src/*.rs'); do
	if [[ $f == $wrappers/* ]]; then
		if [[ $f != $wrappers/mod.rs ]] && ! holds_unsafe "$f"; then
			echo "$f holds no unsafe: a wrapper belongs in $wrappers/ only if it needs it"
			rc=1
		fi
		# A wrapper names only other wrappers (the root re-exports them).
		for m in $(grep -oE 'crate::[a-z_]+' "$f" | sed 's/crate:://' | sort -u); do
			if [[ $m != wrappers && ! -f $wrappers/$m.rs ]]; then
				echo "$f uses crate::$m: a wrapper imports no driver type"
				rc=1
			fi
		done
		count=$((count + 1))
	elif holds_unsafe "$f"; then
		if [[ " $named " == *" $f "* ]]; then
			count=$((count + 1))
		else
			echo "unsafe in $f: it belongs in $wrappers/, or in the policy's named files"
			rc=1
		fi
	fi
done
((rc == 0)) && echo "unsafe lives in $wrappers/ and the $(wc -w <<<"$named") named files ($count files)"
exit $rc
