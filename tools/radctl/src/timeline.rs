// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The trace buffer's radiance events as a timeline: the Chrome Trace Event
//! format that Perfetto (ui.perfetto.dev) and `chrome://tracing` open, or
//! text for a terminal. One track per device stream (its commands, from
//! issue to answer, faults marked with their PC) and one per queue (its
//! packets, from taken to completed), grouped by process; a flow arrow from
//! each semaphore signal to the waits it satisfied; counters of commands in
//! flight and of VRAM used. The events and their fields are radiance.ko's
//! (`kmod/radiance_trace.h`). libradiance's own timeline of the HAL's queue
//! operations (`radiance::timeline`), on the same clock, joins them.

/// libradiance's timeline file: a JSON array of events, which a process
/// that did not stop it leaves unterminated.
pub(crate) fn parse_hal(text: &str) -> Option<Vec<Value>> {
    let body = text.trim_end().trim_end_matches(',');
    let whole = if body.ends_with(']') { body.to_string() } else { format!("{body}]") };
    serde_json::from_str::<Value>(&whole).ok()?.as_array().cloned()
}

use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// One event line of the trace buffer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Record {
    /// The trace clock's time, in nanoseconds.
    pub(crate) ns: u64,
    /// The task that hit it, as the buffer names it (`comm-pid`).
    pub(crate) task: String,
    /// The event, less its `radiance_` prefix.
    pub(crate) event: String,
    fields: HashMap<String, String>,
}

impl Record {
    fn num(&self, key: &str) -> u64 {
        let v = self.fields.get(key).map_or("0", String::as_str);
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap_or(0),
            None => v.parse().unwrap_or(0),
        }
    }

    fn text(&self, key: &str) -> &str {
        self.fields.get(key).map_or("", String::as_str)
    }

    fn pid(&self) -> i64 {
        self.fields.get("pid").and_then(|p| p.parse().ok()).unwrap_or(0)
    }
}

/// The radiance events of a trace buffer's text, in its order; other lines
/// (comments, other events) are left out.
pub(crate) fn parse(text: &str) -> Vec<Record> {
    text.lines().filter_map(parse_line).collect()
}

/// `  radctl-82  [001] .....  6.435634: radiance_packet: dev=0 pid=82 ...`
fn parse_line(line: &str) -> Option<Record> {
    let at = line.find(": radiance_")?;
    let (head, rest) = (&line[..at], &line[at + 2..]);
    let (event, body) = rest.split_once(": ").unwrap_or((rest.trim_end_matches(':'), ""));
    let stamp = head.split_whitespace().last()?;
    let (secs, frac) = stamp.split_once('.').unwrap_or((stamp, "0"));
    let frac_ns: u64 = format!("{frac:0<9}").get(..9)?.parse().ok()?;
    let ns = secs.parse::<u64>().ok()? * 1_000_000_000 + frac_ns;
    let task = head.split_whitespace().next().unwrap_or("").to_string();
    let mut fields = HashMap::new();
    for word in body.split_whitespace() {
        match word.split_once('=') {
            Some((k, v)) => fields.insert(k.to_string(), v.to_string()),
            // radiance_user_io's direction.
            None => fields.insert("dir".to_string(), word.to_string()),
        };
    }
    Some(Record { ns, task, event: event.strip_prefix("radiance_")?.to_string(), fields })
}

/// VRAM in use on device `dev` at `ns` (the trace clock's time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VramSample {
    pub(crate) ns: u64,
    pub(crate) dev: u32,
    pub(crate) used: u64,
}

/// What a timeline holds, for a summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) packets: usize,
    pub(crate) commands: usize,
    pub(crate) flows: usize,
    pub(crate) faults: usize,
}

/// A device's process id in the JSON: apart from every real process's.
fn device_pid(dev: u64) -> u64 {
    1_000_000_000 + dev
}

/// Where libradiance's tracks of a process start, after its kernel queues'.
const HAL_TRACKS: u64 = 1_000_000;

/// A queue's or stream's track: its process and thread in the JSON.
type Track = (i64, u64);

/// Builds the Chrome Trace Event JSON of `records`, `vram` and `hal`
/// (libradiance's events, in microseconds of the same clock), times from
/// the first of them; and what it holds.
pub(crate) fn chrome(records: &[Record], vram: &[VramSample], hal: &[Value]) -> (Value, Counts) {
    let hal_start = hal.iter().filter_map(|e| e["ts"].as_f64()).fold(f64::INFINITY, f64::min);
    let start = records
        .first()
        .map_or(u64::MAX, |r| r.ns)
        .min(vram.first().map_or(u64::MAX, |s| s.ns))
        .min(if hal_start.is_finite() { (hal_start * 1000.0) as u64 } else { u64::MAX });
    let start = if start == u64::MAX { 0 } else { start };
    let us = |ns: u64| ns.saturating_sub(start) as f64 / 1000.0;
    let end = records.last().map_or(start, |r| r.ns);
    let mut out = Vec::new();
    let mut counts = Counts::default();
    let mut names: BTreeMap<Track, String> = BTreeMap::new();
    let mut processes: BTreeMap<i64, String> = BTreeMap::new();
    // Open packets and commands, by their keys.
    let mut packets: HashMap<(u64, i64, u64, u64), &Record> = HashMap::new();
    let mut commands: HashMap<(u64, u64), &Record> = HashMap::new();
    let mut in_flight: HashMap<u64, i64> = HashMap::new();
    // Signals by semaphore id: (time, value, track).
    let mut signals: HashMap<u64, Vec<(u64, u64, Track)>> = HashMap::new();
    let queue_track = |r: &Record| -> Track { (r.pid(), r.num("queue")) };
    for r in records {
        let dev = r.num("dev");
        processes.entry(device_pid(dev) as i64).or_insert_with(|| format!("radiance{dev}"));
        match r.event.as_str() {
            "packet" => {
                // Named by its own task's name, once an event of its own
                // task shows it (a worker may take its packets).
                let own = r.task.rsplit_once('-').filter(|(_, p)| p.parse() == Ok(r.pid())).map(|(c, _)| c);
                let name = processes.entry(r.pid()).or_insert_with(|| format!("pid {}", r.pid()));
                if let Some(comm) = own {
                    *name = format!("{comm} (pid {})", r.pid());
                }
                names.entry(queue_track(r)).or_insert_with(|| format!("queue {}", r.num("queue")));
                packets.insert((dev, r.pid(), r.num("queue"), r.num("index")), r);
            }
            "packet_done" => {
                let key = (dev, r.pid(), r.num("queue"), r.num("index"));
                // Taken before the recording began: no slice.
                let Some(taken) = packets.remove(&key) else { continue };
                counts.packets += 1;
                let error = r.num("error");
                let name = match error {
                    0 => taken.text("kind").to_string(),
                    e => format!("{} (fault, errno {e})", taken.text("kind")),
                };
                let (pid, tid) = queue_track(r);
                out.push(json!({
                    "ph": "X", "cat": "packet", "name": name, "pid": pid, "tid": tid,
                    "ts": us(taken.ns), "dur": us(r.ns) - us(taken.ns),
                    "args": { "device": dev, "index": r.num("index"), "stream": taken.num("stream"),
                              "commands": taken.num("commands"), "error": error },
                }));
            }
            "cmd_issue" => {
                commands.insert((dev, r.num("id")), r);
                let n = in_flight.entry(dev).or_default();
                *n += 1;
                out.push(counter(device_pid(dev), us(r.ns), "commands in flight", *n as f64));
            }
            "cmd_done" => {
                let Some(issued) = commands.remove(&(dev, r.num("id"))) else { continue };
                counts.commands += 1;
                let n = in_flight.entry(dev).or_default();
                *n -= 1;
                out.push(counter(device_pid(dev), us(r.ns), "commands in flight", *n as f64));
                let (status, pc) = (r.num("status"), r.num("pc"));
                let op = issued.text("op");
                let name = if status == 0 {
                    op.to_string()
                } else {
                    counts.faults += 1;
                    format!("{op} FAULT at pc {pc:#x}")
                };
                let stream = r.num("stream");
                names.entry((device_pid(dev) as i64, stream)).or_insert_with(|| format!("stream {stream}"));
                out.push(json!({
                    "ph": "X", "cat": "command", "name": name, "pid": device_pid(dev), "tid": stream,
                    "ts": us(issued.ns), "dur": us(r.ns) - us(issued.ns),
                    "args": { "id": r.num("id"), "op": op, "units": issued.num("units"), "pid": r.pid(),
                              "queue": r.num("queue"), "index": r.num("index"), "status": status,
                              "pc": format!("{pc:#x}"), "warp": r.num("warp") },
                }));
            }
            "sem_signal" => {
                // A process's own signal has no queue: its host track.
                let track = match r.num("queue") {
                    q if q == u64::from(u32::MAX) => {
                        names.entry((r.pid(), 0)).or_insert_with(|| "host signals".to_string());
                        out.push(json!({
                            "ph": "X", "cat": "signal", "name": "SEM_SIGNAL", "pid": r.pid(), "tid": 0,
                            "ts": us(r.ns), "dur": 1.0,
                            "args": { "handle": r.num("handle"), "value": r.num("value") },
                        }));
                        (r.pid(), 0)
                    }
                    _ => queue_track(r),
                };
                if r.num("error") == 0 {
                    signals.entry(r.num("sem")).or_default().push((r.ns, r.num("value"), track));
                }
            }
            "wait_done" => {
                // The latest signal of its semaphore that reached its value.
                let found = signals
                    .get(&r.num("sem"))
                    .and_then(|s| s.iter().rev().find(|&&(ns, v, _)| ns <= r.ns && v >= r.num("value")));
                let Some(&(ns, _, (pid, tid))) = found else { continue };
                counts.flows += 1;
                let id = counts.flows;
                let (wpid, wtid) = queue_track(r);
                out.push(json!({ "ph": "s", "cat": "semaphore", "name": "signal", "id": id,
                                 "pid": pid, "tid": tid, "ts": us(ns) }));
                out.push(json!({ "ph": "f", "bp": "e", "cat": "semaphore", "name": "signal", "id": id,
                                 "pid": wpid, "tid": wtid, "ts": us(r.ns) }));
            }
            "reset" => out.push(json!({
                "ph": "i", "s": "p", "cat": "reset", "name": "device reset", "pid": device_pid(dev),
                "tid": 0, "ts": us(r.ns), "args": { "stream": r.num("stream"), "resets": r.num("resets") },
            })),
            "user_io" => out.push(json!({
                "ph": "i", "s": "t", "cat": "server", "name": format!("server {}", r.text("dir")),
                "pid": device_pid(dev), "tid": 999, "ts": us(r.ns), "args": { "bytes": r.num("bytes") },
            })),
            _ => {}
        }
    }
    // Still open when the recording stopped: up to its end.
    for (&(dev, pid, queue, index), taken) in &packets {
        counts.packets += 1;
        out.push(json!({
            "ph": "X", "cat": "packet", "name": format!("{} (unfinished)", taken.text("kind")),
            "pid": pid, "tid": queue, "ts": us(taken.ns), "dur": us(end) - us(taken.ns),
            "args": { "device": dev, "index": index, "unfinished": true },
        }));
    }
    for s in vram {
        processes.entry(device_pid(s.dev.into()) as i64).or_insert_with(|| format!("radiance{}", s.dev));
        out.push(counter(device_pid(s.dev.into()), us(s.ns), "VRAM used (MiB)", s.used as f64 / 1048576.0));
    }
    for e in hal.iter().filter(|e| !(e["ph"] == "M" && e["name"] == "process_name")) {
        let mut e = e.clone();
        if let Some(ts) = e["ts"].as_f64() {
            e["ts"] = json!(ts - start as f64 / 1000.0);
        }
        // Apart from the kernel's queue tracks of the same process.
        if let Some(tid) = e["tid"].as_u64() {
            e["tid"] = json!(HAL_TRACKS + tid);
        }
        out.push(e);
    }
    // A process that named itself in its own timeline keeps that name.
    for e in hal.iter().filter(|e| e["ph"] == "M" && e["name"] == "process_name") {
        if let (Some(pid), Some(name)) = (e["pid"].as_i64(), e["args"]["name"].as_str()) {
            processes.insert(pid, name.to_string());
        }
    }
    for (pid, name) in &processes {
        out.push(json!({ "ph": "M", "name": "process_name", "pid": pid, "args": { "name": name } }));
    }
    for ((pid, tid), name) in &names {
        out.push(json!({ "ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": { "name": name } }));
    }
    (json!({ "traceEvents": out, "displayTimeUnit": "ns" }), counts)
}

/// The timeline as radctl's own viewer (`viewer.html`) holding it: a page
/// that opens offline, in any browser. `</` is escaped so that no string
/// of the trace can end the script that holds it.
pub(crate) fn html(v: &Value) -> String {
    include_str!("viewer.html").replace("/*TRACE*/", &v.to_string().replace("</", "<\\/"))
}

fn counter(pid: u64, ts: f64, name: &str, value: f64) -> Value {
    json!({ "ph": "C", "name": name, "pid": pid, "ts": ts, "args": { "value": value } })
}

/// The records as lines for a terminal: the time from the first record,
/// then what happened.
pub(crate) fn text(records: &[Record]) -> String {
    let start = records.first().map_or(0, |r| r.ns);
    let mut out = String::new();
    for r in records {
        let ms = (r.ns - start) as f64 / 1e6;
        let at = format!("radiance{} pid {} queue {} packet {}", r.num("dev"), r.pid(), r.num("queue"), r.num("index"));
        let what = match r.event.as_str() {
            "packet" => format!(
                "{at}: {} taken onto stream {}, {} command(s)",
                r.text("kind"),
                r.num("stream"),
                r.num("commands")
            ),
            "packet_done" if r.num("error") == 0 => format!("{at}: completed"),
            "packet_done" => format!("{at}: FAULT, errno {}", r.num("error")),
            "cmd_issue" => format!(
                "radiance{} stream {}: command {} issued: {} of {} (pid {} queue {} packet {})",
                r.num("dev"),
                r.num("stream"),
                r.num("id"),
                r.text("op"),
                r.num("units"),
                r.pid(),
                r.num("queue"),
                r.num("index")
            ),
            "cmd_done" if r.num("status") == 0 => {
                format!("radiance{} stream {}: command {} done", r.num("dev"), r.num("stream"), r.num("id"))
            }
            "cmd_done" => format!(
                "radiance{} stream {}: command {} FAULT: status {} at pc {:#x}, warp {}",
                r.num("dev"),
                r.num("stream"),
                r.num("id"),
                r.num("status"),
                r.num("pc"),
                r.num("warp")
            ),
            "sem_signal" if r.num("error") != 0 => format!(
                "radiance{} pid {}: semaphore {} (handle {}) failed, errno {}",
                r.num("dev"),
                r.pid(),
                r.num("sem"),
                r.num("handle"),
                r.num("error")
            ),
            "sem_signal" => format!(
                "radiance{} pid {}: semaphore {} (handle {}) signalled to {}",
                r.num("dev"),
                r.pid(),
                r.num("sem"),
                r.num("handle"),
                r.num("value")
            ),
            "wait_done" => format!("{at}: wait on semaphore {} for {} satisfied", r.num("sem"), r.num("value")),
            "reset" => {
                format!("radiance{}: device reset ({}th), stream {}", r.num("dev"), r.num("resets"), r.num("stream"))
            }
            "user_io" => format!("radiance{}: server {} {} bytes", r.num("dev"), r.text("dir"), r.num("bytes")),
            other => format!("radiance{}: {other}", r.num("dev")),
        };
        let _ = writeln!(out, "{ms:>12.3} ms  {what}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy, fence and copy through radctl (as the guest recorded them),
    /// then a signal on queue 2 that queue 3 waits for, a faulting launch
    /// and a reset.
    const TRACE: &str = "\
# tracer: nop
          radctl-82      [001] .....     6.435634: radiance_packet: dev=0 pid=82 queue=1 index=0 kind=copy stream=0 commands=1
          radctl-82      [001] .....     6.445893: radiance_cmd_issue: dev=0 stream=0 id=0 pid=82 queue=1 index=0 op=copy units=65536
          radctl-82      [001] .....     6.446670: radiance_packet: dev=0 pid=82 queue=1 index=1 kind=fence stream=0 commands=0
          radctl-82      [001] .....     6.446981: radiance_packet: dev=0 pid=82 queue=1 index=2 kind=copy stream=0 commands=1
          radctl-82      [001] .....     6.447345: radiance_cmd_issue: dev=0 stream=0 id=1 pid=82 queue=1 index=2 op=copy units=65536
    kworker/u8:3-35      [001] .....     6.462134: radiance_cmd_done: dev=0 stream=0 id=0 pid=82 queue=1 index=0 status=0 pc=0x0 warp=0
    kworker/u8:3-35      [001] .....     6.462419: radiance_packet_done: dev=0 pid=82 queue=1 index=0 error=0
    kworker/u8:3-35      [001] .....     6.462606: radiance_packet_done: dev=0 pid=82 queue=1 index=1 error=0
    kworker/u8:0-10      [000] .....     6.463356: radiance_cmd_done: dev=0 stream=0 id=1 pid=82 queue=1 index=2 status=0 pc=0x0 warp=0
    kworker/u8:0-10      [000] .....     6.463493: radiance_packet_done: dev=0 pid=82 queue=1 index=2 error=0
            test-90      [000] .....     7.000000: radiance_packet: dev=0 pid=90 queue=2 index=0 kind=signal stream=1 commands=0
            test-90      [000] .....     7.000100: radiance_sem_signal: dev=0 pid=90 queue=2 index=0 handle=3 sem=17 value=1 error=0
            test-90      [000] .....     7.000110: radiance_packet_done: dev=0 pid=90 queue=2 index=0 error=0
            test-90      [000] .....     7.000200: radiance_packet: dev=0 pid=90 queue=3 index=0 kind=wait stream=2 commands=0
            test-90      [000] .....     7.000201: radiance_wait_done: dev=0 pid=90 queue=3 index=0 handle=3 sem=17 value=1 error=0
            test-90      [000] .....     7.000300: radiance_packet_done: dev=0 pid=90 queue=3 index=0 error=0
            test-90      [000] .....     7.100000: radiance_packet: dev=1 pid=90 queue=4 index=0 kind=launch stream=0 commands=1
            test-90      [000] .....     7.100010: radiance_cmd_issue: dev=1 stream=0 id=5 pid=90 queue=4 index=0 op=launch units=1
     kworker/0:1-12      [000] .....     7.100500: radiance_cmd_done: dev=1 stream=0 id=5 pid=90 queue=4 index=0 status=1 pc=0x10000000 warp=0
     kworker/0:1-12      [000] .....     7.100510: radiance_packet_done: dev=1 pid=90 queue=4 index=0 error=5
     kworker/0:1-12      [000] .....     7.200000: radiance_reset: dev=1 stream=0 resets=1
            test-90      [000] .....     7.300000: radiance_packet: dev=1 pid=90 queue=4 index=1 kind=nop stream=0 commands=0
";

    fn events(v: &Value) -> &Vec<Value> {
        v["traceEvents"].as_array().unwrap()
    }

    #[test]
    fn lines_parse_into_records_and_others_are_left_out() {
        let records = parse(TRACE);
        assert_eq!(records.len(), 22);
        let r = &records[1];
        assert_eq!((r.ns, r.event.as_str(), r.task.as_str()), (6_445_893_000, "cmd_issue", "radctl-82"));
        assert_eq!((r.num("units"), r.text("op"), r.pid()), (65536, "copy", 82));
        assert_eq!(records[17].num("pc"), 0);
        assert_eq!(records[18].num("pc"), 0x1000_0000);
        assert!(parse("garbage\n   x [0] 1.0: sched_switch: a=b\n").is_empty());
    }

    #[test]
    fn every_packet_and_command_is_a_slice_that_begins_before_it_ends() {
        let (v, counts) = chrome(&parse(TRACE), &[], &[]);
        // Five completed packets in queues 1-3, the faulting one, and one
        // still open when the recording stopped.
        assert_eq!(counts, Counts { packets: 7, commands: 3, flows: 1, faults: 1 });
        let slices: Vec<&Value> = events(&v).iter().filter(|e| e["ph"] == "X").collect();
        assert!(slices.iter().all(|s| s["dur"].as_f64().unwrap() >= 0.0 && s["ts"].as_f64().unwrap() >= 0.0));
        let packets: Vec<(u64, u64)> = slices
            .iter()
            .filter(|s| s["cat"] == "packet" && s["pid"] == 82)
            .map(|s| (s["tid"].as_u64().unwrap(), s["args"]["index"].as_u64().unwrap()))
            .collect();
        assert_eq!(packets, [(1, 0), (1, 1), (1, 2)]);
        let copy = slices.iter().find(|s| s["cat"] == "command" && s["args"]["id"] == 0).unwrap();
        assert_eq!(copy["pid"], 1_000_000_000u64);
        assert_eq!(copy["ts"], 10259.0);
        assert!((copy["dur"].as_f64().unwrap() - 16241.0).abs() < 1e-6);
        let fault = slices.iter().find(|s| s["cat"] == "command" && s["args"]["id"] == 5).unwrap();
        assert_eq!(fault["name"], "launch FAULT at pc 0x10000000");
        assert!(slices.iter().any(|s| s["name"] == "launch (fault, errno 5)"));
        assert!(slices.iter().any(|s| s["name"] == "nop (unfinished)"));
        // The JSON is text that parses back to itself.
        assert_eq!(serde_json::from_str::<Value>(&v.to_string()).unwrap(), v);
    }

    #[test]
    fn a_flow_joins_a_signal_to_the_wait_it_satisfied() {
        let (v, _) = chrome(&parse(TRACE), &[], &[]);
        let flows: Vec<&Value> = events(&v).iter().filter(|e| e["cat"] == "semaphore").collect();
        assert_eq!(flows.len(), 2);
        let (start, end) = (flows[0], flows[1]);
        assert_eq!((start["ph"].as_str(), end["ph"].as_str()), (Some("s"), Some("f")));
        assert_eq!(start["id"], end["id"]);
        // From the signalling queue, inside its packet's slice, to the
        // waiting queue, inside its wait packet's slice.
        assert_eq!((start["pid"].as_i64(), start["tid"].as_u64()), (Some(90), Some(2)));
        assert_eq!((end["pid"].as_i64(), end["tid"].as_u64()), (Some(90), Some(3)));
        let slice =
            |tid: u64| events(&v).iter().find(|e| e["ph"] == "X" && e["pid"] == 90 && e["tid"] == tid).unwrap().clone();
        for (flow, tid) in [(start, 2), (end, 3)] {
            let s = slice(tid);
            let (ts, from, to) = (flow["ts"].as_f64().unwrap(), s["ts"].as_f64().unwrap(), 0.0);
            assert!(from <= ts && ts <= from + s["dur"].as_f64().unwrap() + to, "{flow} outside {s}");
        }
    }

    #[test]
    fn counters_follow_commands_in_flight_and_vram() {
        let vram = [VramSample { ns: 6_440_000_000, dev: 0, used: 2 << 20 }];
        let (v, _) = chrome(&parse(TRACE), &vram, &[]);
        let in_flight: Vec<f64> = events(&v)
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == "commands in flight" && e["pid"] == 1_000_000_000u64)
            .map(|e| e["args"]["value"].as_f64().unwrap())
            .collect();
        assert_eq!(in_flight, [1.0, 2.0, 1.0, 0.0]);
        let used = events(&v).iter().find(|e| e["name"] == "VRAM used (MiB)").unwrap();
        assert_eq!(used["args"]["value"], 2.0);
        let names: Vec<&str> = events(&v)
            .iter()
            .filter(|e| e["name"] == "process_name")
            .filter_map(|e| e["args"]["name"].as_str())
            .collect();
        assert!(names.contains(&"radiance0") && names.contains(&"radctl (pid 82)"), "{names:?}");
        assert!(events(&v).iter().any(|e| e["name"] == "device reset" && e["pid"] == 1_000_000_001u64));
    }

    #[test]
    fn libradiance_events_join_on_the_same_clock() {
        // An operation 1 ms after the first kernel event, in an
        // unterminated file as a process that did not stop leaves it.
        let hal = parse_hal(
            "[\n{\"ph\":\"X\",\"name\":\"fill 4096 B\",\"pid\":82,\"tid\":1,\"ts\":6436634.0,\"dur\":5.0},\n",
        )
        .unwrap();
        let (v, _) = chrome(&parse(TRACE), &[], &hal);
        let fill = events(&v).iter().find(|e| e["name"] == "fill 4096 B").unwrap();
        assert_eq!(fill["ts"], 1000.0);
        assert_eq!(fill["tid"], 1_000_001u64, "apart from the kernel's queue 1 of pid 82");
        // The name a process gave itself there wins, once.
        let named = parse_hal(r#"[{"ph":"M","name":"process_name","pid":82,"args":{"name":"app (pid 82)"}}]"#).unwrap();
        let (v, _) = chrome(&parse(TRACE), &[], &named);
        let names: Vec<&Value> = events(&v).iter().filter(|e| e["name"] == "process_name" && e["pid"] == 82).collect();
        assert_eq!(names.len(), 1);
        assert_eq!(names[0]["args"]["name"], "app (pid 82)");
        assert_eq!(parse_hal("[{\"ph\":\"M\"}]").unwrap().len(), 1);
        assert!(parse_hal("not json").is_none());
    }

    #[test]
    fn a_process_is_named_by_its_own_task_not_a_worker_that_took_its_packet() {
        let worker = "  kworker/u8:3-35 [001] ..... 1.000000: radiance_packet: dev=0 pid=82 queue=1 index=0 kind=nop stream=0 commands=0";
        let own = "  radctl-82 [001] ..... 1.000100: radiance_packet: dev=0 pid=82 queue=1 index=1 kind=nop stream=0 commands=0";
        let name = |text: &str| {
            let (v, _) = chrome(&parse(text), &[], &[]);
            let m = events(&v).iter().find(|e| e["name"] == "process_name" && e["pid"] == 82).unwrap().clone();
            m["args"]["name"].as_str().unwrap().to_string()
        };
        assert_eq!(name(worker), "pid 82");
        assert_eq!(name(&format!("{worker}\n{own}")), "radctl (pid 82)");
    }

    #[test]
    fn the_viewer_page_holds_the_trace_whole() {
        let (mut v, _) = chrome(&parse(TRACE), &[], &[]);
        v["traceEvents"].as_array_mut().unwrap().push(json!({ "ph": "M", "name": "</script><b>" }));
        let page = html(&v);
        let at = page.find(r#"<script id="trace" type="application/json">"#).unwrap();
        let body = &page[at..];
        let (from, to) = (body.find('>').unwrap() + 1, body.find("</script>").unwrap());
        assert_eq!(serde_json::from_str::<Value>(&body[from..to]).unwrap(), v);
        assert!(!page.contains("/*TRACE*/"));
    }

    #[test]
    fn text_says_what_happened_in_order() {
        let t = text(&parse(TRACE));
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 22);
        assert_eq!(
            lines[0],
            "       0.000 ms  radiance0 pid 82 queue 1 packet 0: copy taken onto stream 0, 1 command(s)"
        );
        assert!(
            lines[18].ends_with("radiance1 stream 0: command 5 FAULT: status 1 at pc 0x10000000, warp 0"),
            "{}",
            lines[18]
        );
        assert!(lines[14].contains("wait on semaphore 17 for 1 satisfied"));
    }
}
