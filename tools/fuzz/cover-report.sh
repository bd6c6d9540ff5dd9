#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Where radiance.ko's edges were reached, and where not, per function:
#
#	tools/fuzz/cover-report.sh [--top N] RADIANCE_KO COVER [COVER2]
#	tools/fuzz/cover-report.sh --lines [--top N] RADIANCE_KO COVER
#
# A COVER file holds .text offsets in hex, any number a line: what
# `radiance-fuzz fuzz --print-cover` prints (tools/fuzz.sh keeps it as
# build/fuzz-cover.txt), or any other KCOV PC list (syzkaller's, say) less
# the module's .text address. Other words (a line's prefix) are ignored.
# An edge is the return address
# of a call to __sanitizer_cov_trace_pc, which is what KCOV records.
#
# Prints each file's total, also counted outside the module's KUnit tests
# (which run when the module loads, where no fuzzer reaches) and, of those,
# outside the edges into KASAN's reports (about 4200 on a KASAN build:
# reached only by a bug), and then the N functions (default 40) with the
# most code edges not reached: by the first file, or with COVER2, by the
# first and the second together, with what each reached.
#
# With --lines: the N source lines with the most code edges not reached, each
# edge put on the innermost line of the project's own code (kmod/, gluon/,
# uapi/) that it was inlined into, since the kernel crate's helpers are
# inlined everywhere and a line of theirs says nothing of which call missed.
set -euo pipefail

top=40 lines=
if [[ ${1:-} == --lines ]]; then
	lines=1
	shift
fi
if [[ ${1:-} == --top ]]; then
	[[ ${2:-} =~ ^[0-9]+$ ]] || { echo "--top takes a number" >&2; exit 2; }
	top=$2
	shift 2
fi
[[ $# -eq 2 || $# -eq 3 && -z $lines ]] ||
	{ echo "usage: $0 [--lines] [--top N] RADIANCE_KO COVER [COVER2]" >&2; exit 2; }
ko=$1
for f in "${@:2}"; do
	[[ -r $f ]] || { echo "cannot read $f" >&2; exit 2; }
done

# The call sites, "function<TAB>offset<TAB>kind" a line: a call's
# relocation sits 1 byte into its 5-byte instruction, so the return address
# is 4 past it. The kind is "report" for the edge into one of KASAN's
# report calls (the block between them holds only comparisons' callbacks):
# KASAN's inline checks add one such edge to each access they check, and a
# run reaches it only when KASAN reports a bug. The others are "code".
sites() {
	objdump -dr --demangle -j .text "$ko" | awk '
		function hex(s,   v, i) {
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		function flush(kind) {
			if (site != "") printf "%s\t%s\n", site, kind
			site = ""
		}
		/^[0-9a-f]+ <.*>:$/ { flush("code"); fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn) }
		/R_X86_64_PLT32[ \t]+__sanitizer_cov_trace_pc-0x4$/ {
			flush("code")
			off = $1; sub(/:$/, "", off)
			site = sprintf("%s\t%x", fn, hex(off) + 4)
			next
		}
		/R_X86_64_PLT32[ \t]+__sanitizer_cov_trace_(const_)?(cmp|switch)/ { next }
		/R_X86_64_PLT32[ \t]+__asan_report_/ { flush("report"); next }
		/R_X86_64_PLT32/ { flush("code"); next }
		# Any jump or return ends the block ("address:\tbytes\tinstruction").
		/^ +[0-9a-f]+:\t/ && split($0, part, "\t") >= 3 && part[3] ~ /^(j[a-z]+|ret|ud2|int3)/ {
			flush("code")
		}
		END { flush("code") }'
}

# The edges COVER did not reach, by the line that holds them. addr2line
# prints each address (-a), then a function and a file:line per frame,
# innermost first; an edge's call is the byte before its return address.
missed_lines() {
	sites | awk -F'\t' '
		FILENAME == "-" { if ($3 == "code") fn[$2] = $1; next }
		{ for (i = 1; i <= NF; i++) reached[$i] = 1 }
		END { for (pc in fn) if (!(pc in reached)) print pc }
	' - FS='[ \t\r]+' "$1" |
		while read -r pc; do printf '0x%x\n' $((0x$pc - 1)); done |
		"${LLVM_ADDR2LINE:-llvm-addr2line-19}" -a -i -f -C -e "$ko" |
		awk -v top="$top" '
		# An edge of no project line is put on its outermost frame.
		function count() {
			if (line == "") { line = outer; where[line] = outer_fn }
			n[line]++
		}
		/^0x[0-9a-f]+$/ { if (pc != "") count(); pc = $0; fr = 0; line = ""; next }
		fr++ % 2 == 0 { f = $0; next }
		{ outer = $0; sub(/.*\/rust\//, "rust/", outer); outer_fn = f }
		line == "" && $0 !~ /\/rust\/kernel\// && match($0, /\/(kmod|gluon|uapi)\//) {
			line = substr($0, RSTART + 1)
			where[line] = f
		}
		END {
			if (pc != "") count()
			for (k = 0; k < top; k++) {
				best = ""
				for (l in n) if (best == "" || n[l] > n[best]) best = l
				if (best == "") break
				printf "%7d  %s  %s\n", n[best], best, where[best]
				delete n[best]
			}
		}'
}
if [[ -n $lines ]]; then
	# The debug kernel's module has no DWARF; the syzkaller kernel's has.
	objdump -h "$ko" | grep -q ' \.debug_line ' ||
		{ echo "$ko has no line table: use the fuzz kernel's (RADIANCE_KERNEL=fuzz)" >&2; exit 2; }
	printf "%7s  %s\n" missed "line (the function it is in)"
	missed_lines "$2"
	exit
fi

sites | awk -F'\t' -v top="$top" '
	FILENAME == "-" {
		fn[$2] = $1; total++
		if ($1 ~ /::tests::/) test[$2] = 1; else untested++
		if ($3 == "code") { code[$2] = 1; edges[$1]++ }
		if ($3 == "code" && !($2 in test)) reachable++
		next
	}
	{
		for (i = 1; i <= NF; i++) {
			pc = $i
			if (!(pc in fn)) continue
			key = FILENAME SUBSEP pc
			if (key in seen) continue
			seen[key] = 1
			reached[FILENAME]++
			if (!(pc in test)) outside[FILENAME]++
			if ((pc in code) && !(pc in test)) own[FILENAME]++
			by[FILENAME, fn[pc]]++
			if (!(pc in any)) { any[pc] = 1; union++; by["", fn[pc]]++ }
		}
		if (!(FILENAME in order)) { order[FILENAME] = ++n; name[n] = FILENAME }
	}
	END {
		for (i = 1; i <= n; i++) {
			printf "%s: %d of %d edges (%.1f%%); outside the KUnit tests %d of %d (%.1f%%)\n",
				name[i], reached[name[i]], total, 100 * reached[name[i]] / total,
				outside[name[i]], untested, 100 * outside[name[i]] / untested
			printf "  of the module code'"'"'s edges (no KUnit test, no KASAN report):" \
				" %d of %d (%.1f%%)\n", own[name[i]], reachable, 100 * own[name[i]] / reachable
		}
		if (n == 2)
			printf "both together: %d of %d edges (%.1f%%)\n", union, total, 100 * union / total
		printf "\nfunctions with the most edges not reached%s (no KASAN report):\n",
			n == 2 ? " by either" : ""
		printf "%7s %7s", "missed", "edges"
		for (i = 1; i <= n; i++) printf " %7s", "file" i
		printf "  function\n"
		for (f in edges) missed[f] = edges[f] - by["", f]
		for (k = 0; k < top; k++) {
			best = ""
			for (f in missed) if (best == "" || missed[f] > missed[best]) best = f
			if (best == "" || missed[best] == 0) break
			printf "%7d %7d", missed[best], edges[best]
			for (i = 1; i <= n; i++) printf " %7d", by[name[i], best]
			printf "  %s\n", best
			delete missed[best]
		}
	}' - FS='[ \t\r]+' "${@:2}"
