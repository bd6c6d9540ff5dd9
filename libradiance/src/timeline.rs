// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A timeline of the HAL's queue operations, in the Chrome Trace Event
//! format that Perfetto and `chrome://tracing` open (and `radctl trace`
//! merges with the kernel's events): a track per queue of every device and
//! backend, a slice per operation from its submission to its signals being
//! reached (an instant for one that signals nothing), and an arrow from
//! each signal to the waits it satisfied, across queues and the devices of
//! a group. A host signal is an instant on a track of its own.
//!
//! Off by default. [`start`] (or `RADIANCE_TIMELINE=FILE` in the
//! environment, read when the first device opens) turns it on and
//! [`stop`] writes the end. While it is off, an operation pays one relaxed
//! atomic load. While it is on, a thread of its own watches the
//! operations' signal semaphores every 50 µs, so an operation's end is
//! seen within that. Times are the monotonic clock's, in microseconds,
//! the clock `radctl trace` records the kernel's events on.
//!
//! The file is a JSON array written as events happen, each flushed: a
//! process that exits without [`stop`] leaves it unterminated, which the
//! viewers and `radctl trace` accept.

use crate::{backend::Commands, command_buffer::Op, Error, Queue, Result, Semaphore};
use std::{
    collections::HashMap,
    fs::File,
    io::Write,
    path::Path,
    sync::{
        atomic::{AtomicBool, Ordering},
        Mutex, MutexGuard, Once,
    },
    thread::JoinHandle,
    time::Duration,
};

/// The environment variable that names the file to record into.
pub const ENV: &str = "RADIANCE_TIMELINE";

/// Between two looks at the operations' signal semaphores.
const WATCH: Duration = Duration::from_micros(50);

static ON: AtomicBool = AtomicBool::new(false);
static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);
static FROM_ENV: Once = Once::new();

/// Whether operations are being recorded: the one check they pay.
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// An operation whose signals are not all reached yet.
struct Pending {
    tid: u64,
    name: String,
    start: f64,
    signals: Vec<(Semaphore, u64)>,
}

/// A wait not matched to a signal yet: its semaphore, value, track, time.
type Wait = (usize, u64, u64, f64);

struct Recorder {
    out: File,
    /// Queues by their identity, as tracks (thread ids) of the process.
    tracks: HashMap<usize, u64>,
    pending: Vec<Pending>,
    /// Signals reached so far, by semaphore: value, track, time.
    signalled: HashMap<usize, Vec<(u64, u64, f64)>>,
    waits: Vec<Wait>,
    flows: u64,
    watcher: Option<JoinHandle<()>>,
}

/// A semaphore's identity while it lives.
fn key(s: &Semaphore) -> usize {
    s.key()
}

/// The monotonic clock, in microseconds.
fn now_us() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
}

fn lock() -> MutexGuard<'static, Option<Recorder>> {
    RECORDER.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recorder {
    /// Appends one event; a write that fails stops nothing (the timeline
    /// is a view, not the work).
    fn emit(&mut self, event: &str) {
        let _ = self.out.write_all(event.as_bytes()).and_then(|()| self.out.write_all(b",\n"));
    }

    fn track(&mut self, queue: usize, name: impl FnOnce(u64) -> String) -> u64 {
        let next = self.tracks.len() as u64 + 1;
        let pid = std::process::id();
        *self.tracks.entry(queue).or_insert_with(|| {
            let event = format!(
                r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{next},"args":{{"name":{}}}}}"#,
                json_string(&name(next))
            );
            let _ = self.out.write_all(event.as_bytes()).and_then(|()| self.out.write_all(b",\n"));
            next
        })
    }

    /// An arrow from a signal (on `from` at `at`) to a wait (on `to`,
    /// submitted at `then`): it ends when the wait was met, the later of
    /// the two, inside the waiting operation's slice.
    fn flow(&mut self, from: u64, at: f64, to: u64, then: f64) {
        let then = then.max(at);
        self.flows += 1;
        let (id, pid) = (self.flows, std::process::id());
        self.emit(&format!(
            r#"{{"ph":"s","cat":"semaphore","name":"signal","id":{id},"pid":{pid},"tid":{from},"ts":{at:.3}}}"#
        ));
        self.emit(&format!(
            r#"{{"ph":"f","bp":"e","cat":"semaphore","name":"signal","id":{id},"pid":{pid},"tid":{to},"ts":{then:.3}}}"#
        ));
    }

    /// A wait on `sem` for `value` by track `tid` at `ts`: joined to a
    /// signal that reached it, now or when one does.
    fn wait(&mut self, sem: usize, value: u64, tid: u64, ts: f64) {
        let found = self.signalled.get(&sem).and_then(|s| s.iter().rev().find(|&&(v, _, _)| v >= value)).copied();
        match found {
            Some((_, from, at)) => self.flow(from, at, tid, ts),
            None => self.waits.push((sem, value, tid, ts)),
        }
    }

    /// `sem` reached `value`, signalled by track `tid` at `ts`.
    fn signalled(&mut self, sem: usize, value: u64, tid: u64, ts: f64) {
        self.signalled.entry(sem).or_default().push((value, tid, ts));
        let (met, rest): (Vec<Wait>, Vec<Wait>) =
            std::mem::take(&mut self.waits).into_iter().partition(|&(s, v, _, _)| s == sem && v <= value);
        self.waits = rest;
        for (_, _, to, then) in met {
            self.flow(tid, ts, to, then);
        }
    }

    /// Ends the operations whose signals are all reached (or failed): a
    /// slice each, up to now.
    fn look(&mut self) {
        let now = now_us();
        let pid = std::process::id();
        for p in std::mem::take(&mut self.pending) {
            // Each semaphore read once: reached, short, or failed.
            let states: Vec<Option<bool>> = p.signals.iter().map(|(s, v)| s.query().ok().map(|x| x >= *v)).collect();
            if states.contains(&Some(false)) {
                self.pending.push(p);
                continue;
            }
            let failed = states.contains(&None);
            let name = if failed { format!("{} (failed)", p.name) } else { p.name.clone() };
            self.emit(&format!(
                r#"{{"ph":"X","cat":"operation","name":{},"pid":{pid},"tid":{},"ts":{:.3},"dur":{:.3}}}"#,
                json_string(&name),
                p.tid,
                p.start,
                (now - p.start).max(0.0)
            ));
            if !failed {
                for (s, v) in &p.signals {
                    self.signalled(key(s), *v, p.tid, now);
                }
            }
        }
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Starts recording into `path` (replaced), if nothing records yet.
pub fn start(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let mut guard = lock();
    if guard.is_some() {
        return Err(Error::InvalidArgument("the timeline records already: stop it first".into()));
    }
    let mut out = File::create(path).map_err(|e| Error::io(format!("creating {}", path.display()), &e))?;
    out.write_all(b"[\n").map_err(|e| Error::io(format!("writing {}", path.display()), &e))?;
    let mut recorder = Recorder {
        out,
        tracks: HashMap::new(),
        pending: Vec::new(),
        signalled: HashMap::new(),
        waits: Vec::new(),
        flows: 0,
        watcher: None,
    };
    let pid = std::process::id();
    let comm = std::fs::read_to_string("/proc/self/comm").map_or("libradiance".into(), |c| c.trim().to_string());
    recorder.emit(&format!(
        r#"{{"ph":"M","name":"process_name","pid":{pid},"args":{{"name":{}}}}}"#,
        json_string(&format!("{comm} (pid {pid})"))
    ));
    *guard = Some(recorder);
    ON.store(true, Ordering::Relaxed);
    Ok(())
}

/// Stops recording: the operations still running are written as unfinished
/// (up to now), and the file is closed as a whole JSON array.
pub fn stop() -> Result<()> {
    let watcher = {
        let mut guard = lock();
        ON.store(false, Ordering::Relaxed);
        guard.as_mut().and_then(|r| r.watcher.take())
    };
    if let Some(w) = watcher {
        let _ = w.join();
    }
    let Some(mut r) = lock().take() else { return Ok(()) };
    r.look();
    let (now, pid) = (now_us(), std::process::id());
    for p in std::mem::take(&mut r.pending) {
        r.emit(&format!(
            r#"{{"ph":"X","cat":"operation","name":{},"pid":{pid},"tid":{},"ts":{:.3},"dur":{:.3},"args":{{"unfinished":true}}}}"#,
            json_string(&format!("{} (unfinished)", p.name)),
            p.tid,
            p.start,
            (now - p.start).max(0.0)
        ));
    }
    r.out
        .write_all(
            format!(r#"{{"ph":"M","name":"process_sort_index","pid":{pid},"args":{{"sort_index":0}}}}]"#).as_bytes(),
        )
        .and_then(|()| r.out.flush())
        .map_err(|e| Error::io("writing the timeline", &e))
}

/// Starts recording if `RADIANCE_TIMELINE` names a file: once, when the
/// first device opens. A file that cannot be created is said on stderr.
pub(crate) fn from_env() {
    FROM_ENV.call_once(|| {
        if let Some(path) = std::env::var_os(ENV) {
            if let Err(e) = start(&path) {
                eprintln!("libradiance: {ENV}: {e}");
            }
        }
    });
}

/// What `commands` do, as the slice's name.
fn describe(commands: &Commands) -> String {
    let one = |op: &Op| match op {
        Op::Fill { length, .. } => format!("fill {length} B"),
        Op::Copy { length, .. } => format!("copy {length} B"),
        Op::Update { data, .. } => format!("update {} B", data.len()),
        Op::Dispatch(_) => "dispatch".to_string(),
        Op::Barrier => "barrier".to_string(),
    };
    match commands {
        Commands::None => "barrier".to_string(),
        Commands::One(c) => one(&c.0),
        Commands::Recorded(all) => format!("execute {} commands", all.len()),
    }
}

/// Records an operation of `queue` submitted now: `waits`, `commands`,
/// `signals`. Out of line: the submission pays only [`on`] while off.
#[cold]
#[inline(never)]
pub(crate) fn submitted(
    queue: &Queue,
    waits: &[(&Semaphore, u64)],
    commands: &Commands,
    signals: &[(&Semaphore, u64)],
) {
    let ts = now_us();
    let mut guard = lock();
    let Some(r) = guard.as_mut() else { return };
    let uri = queue.device().info().uri.clone();
    let tid = r.track(queue.key(), |n| format!("{uri} queue {n}"));
    for (s, v) in waits {
        r.wait(key(s), *v, tid, ts);
    }
    let name = describe(commands);
    if signals.is_empty() {
        let pid = std::process::id();
        r.emit(&format!(
            r#"{{"ph":"i","s":"t","cat":"operation","name":{},"pid":{pid},"tid":{tid},"ts":{ts:.3}}}"#,
            json_string(&name)
        ));
        return;
    }
    let signals = signals.iter().map(|&(s, v)| (s.clone(), v)).collect();
    r.pending.push(Pending { tid, name, start: ts, signals });
    if r.watcher.is_none() {
        r.watcher = std::thread::Builder::new().name("radiance-timeline".into()).spawn(watch).ok();
    }
}

/// Records a host signal of `semaphore` to `value`.
#[cold]
#[inline(never)]
pub(crate) fn host_signal(semaphore: &Semaphore, value: u64) {
    let ts = now_us();
    let mut guard = lock();
    let Some(r) = guard.as_mut() else { return };
    let tid = r.track(0, |_| "host signals".to_string());
    let pid = std::process::id();
    r.emit(&format!(
        r#"{{"ph":"X","cat":"signal","name":"host signal","pid":{pid},"tid":{tid},"ts":{ts:.3},"dur":1,"args":{{"value":{value}}}}}"#
    ));
    r.signalled(key(semaphore), value, tid, ts);
}

/// The watcher: ends operations as their signals are reached, until the
/// recording stops.
fn watch() {
    while on() {
        if let Some(r) = lock().as_mut() {
            r.look();
        }
        std::thread::sleep(WATCH);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BufferParams, BufferUsage, Device, DeviceGroup, MemoryType, Pattern};
    use serde_json::Value;

    /// The tests share the one recorder.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn events(path: &Path) -> Vec<Value> {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        v.as_array().unwrap().clone()
    }

    #[test]
    fn operations_are_slices_and_a_signal_flows_to_its_wait_across_devices() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("radiance-timeline-{}.json", std::process::id()));
        let (a, b) = (Device::open("host").unwrap(), Device::open("host").unwrap());
        let _group = DeviceGroup::new(&[a.clone(), b.clone()]).unwrap();
        let (qa, qb) = (a.create_queue().unwrap(), b.create_queue().unwrap());
        let params = BufferParams { size: 4096, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
        let buf = a.allocate_buffer(params).unwrap();
        let (s, t) = (a.create_semaphore(0).unwrap(), b.create_semaphore(0).unwrap());
        let gate = a.create_semaphore(0).unwrap();
        start(&path).unwrap();
        assert!(start(&path).is_err(), "one recording at a time");
        // b waits for a's fill, which waits for the host: the wait is
        // recorded before the signal it is joined to.
        qb.barrier(&[(&s, 1)], &[(&t, 1)]).unwrap();
        qa.fill(&[(&gate, 1)], &[(&s, 1)], buf.at(0), 4096, Pattern::U32(7)).unwrap();
        gate.signal(1).unwrap();
        t.wait(1, Duration::from_secs(10)).unwrap();
        qa.barrier(&[], &[]).unwrap();
        // Seen by the watcher before it stops.
        std::thread::sleep(Duration::from_millis(20));
        stop().unwrap();
        let ev = events(&path);
        let slice = |name: &str| ev.iter().find(|e| e["ph"] == "X" && e["name"] == name).unwrap().clone();
        let (fill, barrier) = (slice("fill 4096 B"), slice("barrier"));
        assert!(fill["dur"].as_f64().unwrap() >= 0.0 && barrier["dur"].as_f64().unwrap() >= 0.0);
        assert_ne!(fill["tid"], barrier["tid"], "a track per queue");
        assert!(ev.iter().any(|e| e["ph"] == "i" && e["name"] == "barrier"), "an operation with no signal");
        // The host's signal flows to the fill's wait, the fill's signal to
        // b's barrier.
        let starts: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "s").collect();
        let ends: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "f").collect();
        assert_eq!((starts.len(), ends.len()), (2, 2), "{ev:?}");
        let end_of = |id: &Value| ends.iter().find(|e| e["id"] == *id).unwrap();
        let to_barrier = starts.iter().find(|s| end_of(&s["id"])["tid"] == barrier["tid"]).unwrap();
        assert_eq!(to_barrier["tid"], fill["tid"]);
        // Every arrow goes forward in time, and ends inside its slice.
        for s in &starts {
            let end = end_of(&s["id"]);
            assert!(end["ts"].as_f64() >= s["ts"].as_f64(), "{s} -> {end}");
        }
        let into_barrier = end_of(&to_barrier["id"])["ts"].as_f64().unwrap();
        let (from, dur) = (barrier["ts"].as_f64().unwrap(), barrier["dur"].as_f64().unwrap());
        assert!(from <= into_barrier && into_barrier <= from + dur, "{barrier}");
        let names: Vec<&str> =
            ev.iter().filter(|e| e["name"] == "thread_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
        assert!(
            names.iter().filter(|n| n.starts_with("host queue")).count() == 2 && names.contains(&"host signals"),
            "{names:?}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn off_records_nothing_and_an_unfinished_operation_is_closed_at_stop() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("radiance-timeline-off-{}.json", std::process::id()));
        let d = Device::open("host").unwrap();
        let q = d.create_queue().unwrap();
        let (s, never) = (d.create_semaphore(0).unwrap(), d.create_semaphore(0).unwrap());
        q.barrier(&[], &[]).unwrap();
        assert!(!on());
        start(&path).unwrap();
        q.barrier(&[(&never, 1)], &[(&s, 1)]).unwrap();
        stop().unwrap();
        let ev = events(&path);
        assert!(ev.iter().any(|e| e["name"] == "barrier (unfinished)" && e["args"]["unfinished"] == true));
        assert_eq!(ev.iter().filter(|e| e["ph"] == "X" || e["ph"] == "i").count(), 1, "{ev:?}");
        never.fail(Error::Cancelled("the test is over".into()));
        let _ = std::fs::remove_file(&path);
    }
}
