# SPDX-License-Identifier: GPL-2.0
# The headline figures of tools/bench.sh's runs as one Markdown table, the
# baseline of Documentation/benchmarks.md. Reads the guest's output on
# Debian's kernel, then on the test kernel (either may be empty: "-"), then
# what gluon-bridge bench-tsi printed on the host, as a second table:
#
#	awk -f tools/bench-table.awk DEBIAN_LOG TEST_LOG TSI_LOG
#
# Each figure is found by the line its bench prints, in the section that
# tools/guest/bench-job.sh's headers name: the emulated device first, then
# an emulated gluon-sim device, gluon-bridge model mode in full ("model")
# and as gluon-sim ("sim"), and socket mode before the sim-model.

function put(name, value) {
	v[name, col] = value
}

# The number after the last "= " or at the end of the line.
function num(line,    m) {
	if (match(line, /= [0-9.]+\)?[[:space:]]*$/)) {
		m = substr(line, RSTART + 2, RLENGTH - 2)
	} else if (match(line, /[0-9.]+[[:space:]]*$/)) {
		m = substr(line, RSTART, RLENGTH)
	}
	sub(/[)[:space:]]+$/, "", m)
	return m
}

FNR == 1 { col++; dev = "emu"; sem = ""; section = "" }
{ sub(/\r$/, "") }

/^signal -> wake round trip, both threads on CPU 0/ { sem = "one CPU" }
/^signal -> wake round trip, threads placed by the scheduler/ { sem = "placed" }
/^queue_bench on an emulated gluon-sim device:/ { dev = "emusim" }
/^queue_bench on a device served by gluon-bridge model :/ { dev = "model" }
/^queue_bench on a device served by gluon-bridge model --gluon-sim:/ { dev = "sim" }
/^queue_bench on a device served by gluon-bridge socket/ { dev = "socket" }

sem != "" && /\(semaphore \/ futex += / { put("sem futex " sem, num($0)) }
sem != "" && /\(semaphore \/ floor = / { put("sem floor " sem, num($0)); if (sem == "placed") sem = "" }
/\(copy \/ memcpy = / { put("copy " dev, num($0)) }
/^COPY HOST->VRAM device commands per MiB: / { put("per MiB " dev, num($0)) }
/\(edge \/ NOP round trip = / { put("edge " dev, num($0)) }
/\(back to back \/ alone = / { put("launches " dev, num($0)) }
/\(fill \/ copy = / { put("fill " dev, num($0)) }
/\(held fill \/ copy = / { put("held " dev, num($0)) }
/^  [a-z-]+ \/ same device, latency / { split($0, f, " "); put("alias", f[6]) }
/^  device \/ \(straight \+ hand-off\) / { put("launch " dev, num($0)) }
/^  device \/ \(straight \+ paced hand-off\) / { put("paced " dev, num($0)) }
/^  device \/ \(straight \+ wake-up\) / { put("idle " dev, num($0)) }
# Read by name: an empty log before it counts no column.
FILENAME == ARGV[3] && /^  writes / { v["tsi writes"] = num($0) }
FILENAME == ARGV[3] && /^  reads / { v["tsi reads"] = num($0) }
FILENAME == ARGV[3] && /^  a launch: / { split($0, f, " "); v["tsi launch"] = f[3] " / " f[8] }
/\(compiled in, off \/ compiled out, busy = / { put("trace off busy", num($0)) }
/\(compiled in, off \/ compiled out, from idle = / { put("trace off idle", num($0)) }
/\(compiled in, off \/ compiled out, in a pass = / { put("trace off pass", num($0)) }
/\(on \/ compiled out, busy = / { put("trace on", num($0)) }
/^  \(from its own start - alone\) \/ \(the same\) / { put("scrub own " dev, num($0)) }
/^  the same, behind it after the idle / { put("scrub free " dev, num($0)) }

function cell(name, c) {
	return ((name, c) in v) ? v[name, c] : "-"
}

# A row: its label, goal and figure on each kernel; `pair` gives "a / b"
# of two figures (model / sim).
function row(label, goal, name, pair,    c, out) {
	out = "| " label " | " goal
	for (c = 1; c <= 2; c++)
		out = out " | " (pair == "" ? cell(name, c) : cell(name, c) " / " cell(pair, c))
	print out " |"
}

END {
	print "| figure | goal | Debian's kernel | test kernel |"
	print "|---|---|---|---|"
	row("semaphore / futex, one CPU", "<= 1.2", "sem futex one CPU")
	row("semaphore / its floor, one CPU", "<= 1.2", "sem floor one CPU")
	row("semaphore / futex, placed", "<= 1.2", "sem futex placed")
	row("semaphore / its floor, placed", "<= 1.2", "sem floor placed")
	row("COPY host to VRAM / memcpy", ">= 0.8", "copy emu")
	row("the same, served: model / sim", ">= 0.5", "copy model", "copy sim")
	row("device commands per MiB copied", "<= 1", "per MiB emu")
	row("cross-queue edge / NOP round trip", "<= 1.0", "edge emu")
	row("NOP round trip, tracepoints off / none: busy / idle", "<= 1.01", "trace off busy", "trace off idle")
	row("the same, a NOP taken in a pass", "<= 1.01", "trace off pass")
	row("NOP round trip, tracepoints on / none, busy", "-", "trace on")
	row("kernel alias / two queues of one device", "<= 1.5", "alias")
	row("launch served / floor, back to back: model / sim", "<= 1.3", "launch model", "launch sim")
	row("the same, at the client's pace", "<= 1.3", "paced model", "paced sim")
	row("the same, after a 200 us idle", "<= 1.3", "idle model", "idle sim")
	row("fill after a free / behind a scrub: model / sim", "<= 1.0", "scrub own model", "scrub own sim")
	row("the same, from the free's start", "<= 1.0", "scrub free model", "scrub free sim")
	row("64 launches at once, each / one: emulated", "-", "launches emu")
	row("the same, emulated as gluon-sim", "-", "launches emusim")
	row("the same, served: model / sim", "-", "launches model", "launches sim")
	row("1 MiB fill / copy, no SET, new pattern: sim / socket", "<= 1.5", "fill sim", "fill socket")
	row("the same, a pattern a source holds", "<= 1.5", "held sim", "held socket")
	row("fill / copy, new / held, emulated as gluon-sim", "-", "fill emusim", "held emusim")
	print ""
	print "| on the host | goal | figure |"
	print "|---|---|---|"
	hostrow("UART-TSI writes / line rate, 921600 baud", ">= 0.9", "tsi writes")
	hostrow("UART-TSI reads / line rate, 921600 baud", ">= 0.9", "tsi reads")
	hostrow("words a launch puts on the line / its accesses' own", "-", "tsi launch")
}

function hostrow(label, goal, name) {
	print "| " label " | " goal " | " ((name in v) ? v[name] : "-") " |"
}
