// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radctl top`: a live view of what each device does, as `nvtop` and
//! `radeontop` give one: per device its streams' busy time, commands,
//! bytes and threads a second, VRAM and resets; per process and per queue
//! the packets and bytes a second and faults. Each figure is the change of
//! a debugfs counter between two looks, over the time between them.
//! `--once` prints one view (two looks `--interval` apart) and `--json`
//! the same as JSON, for scripts; otherwise it redraws until `q`.

use crate::error::{Error, Result};
use clap::Args;
use radiance::node::{self, MemStats, QueueStats, StreamStats};
use serde_json::{json, Value};
use std::{
    collections::BTreeMap,
    fmt::Write as _,
    io::Write as _,
    time::{Duration, Instant},
};

/// `radctl top`'s arguments.
#[derive(Args)]
pub(crate) struct Top {
    /// Print one view and exit.
    #[arg(long)]
    once: bool,
    /// Milliseconds between looks.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    interval_ms: u64,
}

/// What one look at a device saw.
struct Look {
    index: u32,
    name: String,
    mem: MemStats,
    streams: Vec<StreamStats>,
    queues: Vec<QueueStats>,
}

/// Looks at every device at `at`.
fn look() -> Result<(Instant, Vec<Look>)> {
    let mut looks = Vec::new();
    for path in node::enumerate()? {
        let dev = node::Device::open(&path.to_string_lossy())?;
        let index = dev.info().index;
        looks.push(Look {
            index,
            name: dev.info().name.clone(),
            mem: MemStats::read(index)?,
            streams: StreamStats::read(index)?,
            queues: QueueStats::read(index)?,
        });
    }
    if looks.is_empty() {
        return Err(radiance::Error::NoDevices.into());
    }
    Ok((Instant::now(), looks))
}

/// A change of a counter over `secs`, a second; 0 where it went back (a
/// new device or queue under an old name).
fn rate(now: u64, before: u64, secs: f64) -> f64 {
    now.checked_sub(before).map_or(0.0, |d| d as f64 / secs)
}

/// A process's name, from /proc; `-` once it is gone.
fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map_or("-".into(), |c| c.trim().to_string())
}

/// One view: figures between two looks, as JSON (which the text is drawn
/// from too); `name` names a process.
fn view(before: &[Look], now: &[Look], secs: f64, name: &dyn Fn(i32) -> String) -> Value {
    let devices: Vec<Value> = now
        .iter()
        .map(|d| {
            let old = before.iter().find(|b| b.index == d.index);
            let old_stream = |s: u8| old.and_then(|o| o.streams.iter().find(|x| x.stream == s)?.activity);
            let old_queue =
                |q: &QueueStats| old.and_then(|o| o.queues.iter().find(|x| x.pid == q.pid && x.queue == q.queue));
            let streams: Vec<Value> = d
                .streams
                .iter()
                .map(|s| {
                    let (a, b) = (s.activity.unwrap_or_default(), old_stream(s.stream).unwrap_or_default());
                    json!({
                        "stream": s.stream, "state": s.state,
                        "busy_percent": (rate(a.busy_ns, b.busy_ns, secs) / 1e7).min(100.0),
                        "commands_per_s": rate(a.answered, b.answered, secs),
                        "bytes_per_s": rate(a.bytes, b.bytes, secs),
                        "threads_per_s": rate(a.threads, b.threads, secs),
                    })
                })
                .collect();
            let queues: Vec<Value> = d
                .queues
                .iter()
                .map(|q| {
                    let o = old_queue(q);
                    let packets = o.map_or(0.0, |o| rate(q.completed, o.completed, secs));
                    let bytes = o.map_or(0.0, |o| rate(q.bytes.unwrap_or(0), o.bytes.unwrap_or(0), secs));
                    json!({
                        "pid": q.pid, "queue": q.queue, "stream": q.stream, "packets_per_s": packets,
                        "bytes_per_s": bytes, "faulted": q.faulted, "completed": q.completed,
                    })
                })
                .collect();
            let mut processes: BTreeMap<i32, (usize, f64, f64, usize)> = BTreeMap::new();
            for q in &queues {
                let p = processes.entry(q["pid"].as_i64().unwrap_or(0) as i32).or_default();
                p.0 += 1;
                p.1 += q["packets_per_s"].as_f64().unwrap_or(0.0);
                p.2 += q["bytes_per_s"].as_f64().unwrap_or(0.0);
                p.3 += usize::from(q["faulted"] == true);
            }
            let processes: Vec<Value> = processes
                .into_iter()
                .map(|(pid, (n, packets, bytes, faulted))| {
                    json!({
                        "pid": pid, "name": name(pid), "queues": n, "packets_per_s": packets,
                        "bytes_per_s": bytes, "faulted_queues": faulted,
                    })
                })
                .collect();
            // From 0.0: an empty float sum is -0.0, which prints as "-0".
            let sum = |key: &str, of: &[Value]| of.iter().filter_map(|v| v[key].as_f64()).fold(0.0, |a, b| a + b);
            json!({
                "device": format!("/dev/radiance{}", d.index), "index": d.index, "name": d.name,
                "vram_used": d.mem.vram_used, "vram_total": d.mem.vram_total,
                "resets": d.mem.device_resets,
                "packets_per_s": sum("packets_per_s", &queues),
                "commands_per_s": sum("commands_per_s", &streams),
                "bytes_per_s": sum("bytes_per_s", &streams),
                "threads_per_s": sum("threads_per_s", &streams),
                "faulted_queues": queues.iter().filter(|q| q["faulted"] == true).count(),
                "streams": streams, "processes": processes, "queues": queues,
            })
        })
        .collect();
    json!({ "interval_s": secs, "devices": devices })
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1048576.0)
}

/// A rate in a few columns: 12.3k, 4.5M.
fn short(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.1}G", v / 1e9),
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// The view as text that fits `rows` lines of 80 columns: each device's
/// figures and streams, then its busiest processes and queues.
fn draw(v: &Value, rows: usize) -> String {
    let mut out = String::new();
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    // A field as text, for padding (a JSON value ignores widths).
    let t = |v: &Value, k: &str| match &v[k] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let _ = writeln!(out, "radctl top: every {:.1} s, q quits", f(v, "interval_s"));
    for d in v["devices"].as_array().into_iter().flatten() {
        let name: String = d["name"].as_str().unwrap_or("").chars().take(30).collect();
        let resets = d["resets"].as_u64().map_or("-".to_string(), |r| r.to_string());
        let _ = writeln!(
            out,
            "radiance{:<2} {name:<30} VRAM {:>7}/{:>7} MiB  resets {resets}",
            t(d, "index"),
            mib(d["vram_used"].as_u64().unwrap_or(0)),
            mib(d["vram_total"].as_u64().unwrap_or(0)),
        );
        let _ = writeln!(
            out,
            "  packets/s {:>6} commands/s {:>6} bytes/s {:>6} threads/s {:>6} faults {}",
            short(f(d, "packets_per_s")),
            short(f(d, "commands_per_s")),
            short(f(d, "bytes_per_s")),
            short(f(d, "threads_per_s")),
            t(d, "faulted_queues"),
        );
        let busy: Vec<String> = d["streams"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| format!("{}:{:>3.0}%", t(s, "stream"), f(s, "busy_percent")))
            .collect();
        let _ = writeln!(out, "  busy  {}", busy.join("  "));
        let _ = writeln!(
            out,
            "  {:<8} {:<16} {:>6} {:>9} {:>9} {:>7}",
            "PID", "PROCESS", "QUEUES", "PKT/S", "BYTES/S", "FAULTS"
        );
        for p in d["processes"].as_array().into_iter().flatten() {
            let name: String = p["name"].as_str().unwrap_or("").chars().take(16).collect();
            let _ = writeln!(
                out,
                "  {:<8} {name:<16} {:>6} {:>9} {:>9} {:>7}",
                t(p, "pid"),
                t(p, "queues"),
                short(f(p, "packets_per_s")),
                short(f(p, "bytes_per_s")),
                t(p, "faulted_queues"),
            );
        }
        let mut queues: Vec<&Value> = d["queues"].as_array().into_iter().flatten().collect();
        queues.sort_by(|a, b| f(b, "packets_per_s").total_cmp(&f(a, "packets_per_s")));
        let _ = writeln!(
            out,
            "  {:<8} {:>5} {:>6} {:>9} {:>9} {:>7}",
            "PID", "QUEUE", "STREAM", "PKT/S", "BYTES/S", "STATUS"
        );
        for q in queues {
            let status = if q["faulted"] == true { "faulted" } else { "active" };
            let _ = writeln!(
                out,
                "  {:<8} {:>5} {:>6} {:>9} {:>9} {status:>7}",
                t(q, "pid"),
                t(q, "queue"),
                t(q, "stream"),
                short(f(q, "packets_per_s")),
                short(f(q, "bytes_per_s")),
            );
        }
    }
    // What does not fit is cut, the last line saying so.
    let lines: Vec<&str> = out.lines().collect();
    if lines.len() <= rows {
        return out;
    }
    let mut cut = lines[..rows.saturating_sub(1)].join("\n");
    let _ = writeln!(cut, "\n  ... {} more lines (a taller terminal shows them)", lines.len() + 1 - rows);
    cut
}

/// The terminal's rows (24 if it says nothing).
fn rows() -> usize {
    rustix::termios::tcgetwinsize(std::io::stdout()).map_or(24, |w| usize::from(w.ws_row).max(5))
}

/// Stdin in a terminal, put where a key press is read at once without an
/// echo; put back when dropped.
struct Keys {
    saved: Option<rustix::termios::Termios>,
}

impl Keys {
    fn take() -> Self {
        let stdin = std::io::stdin();
        let Ok(saved) = rustix::termios::tcgetattr(&stdin) else { return Self { saved: None } };
        let mut raw = saved.clone();
        raw.local_modes.remove(
            rustix::termios::LocalModes::ICANON | rustix::termios::LocalModes::ECHO | rustix::termios::LocalModes::ISIG,
        );
        let set = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &raw);
        Self { saved: set.ok().map(|()| saved) }
    }

    /// Waits up to `wait` for a key: true if it says quit (q, or Ctrl-C,
    /// which no longer signals).
    fn quit_within(&self, wait: Duration) -> bool {
        if self.saved.is_none() {
            std::thread::sleep(wait);
            return false;
        }
        let stdin = std::io::stdin();
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let timeout = rustix::time::Timespec::try_from(left).ok();
            let mut fds = [rustix::event::PollFd::new(&stdin, rustix::event::PollFlags::IN)];
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(0) => return false,
                Ok(_) => {
                    let mut key = [0u8; 1];
                    if matches!(rustix::io::read(&stdin, &mut key), Ok(1) if matches!(key[0], b'q' | b'Q' | 3)) {
                        return true;
                    }
                }
                Err(_) if left.is_zero() => return false,
                Err(_) => {}
            }
        }
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = rustix::termios::tcsetattr(std::io::stdin(), rustix::termios::OptionalActions::Now, saved);
        }
    }
}

/// Runs `radctl top`.
pub(crate) fn top(args: &Top, as_json: bool) -> Result<()> {
    let interval = Duration::from_millis(args.interval_ms);
    let (mut at, mut before) = look()?;
    if args.once {
        std::thread::sleep(interval);
        let (now_at, now) = look()?;
        let v = view(&before, &now, (now_at - at).as_secs_f64(), &comm);
        match as_json {
            true => println!("{v}"),
            false => print!("{}", draw(&v, usize::MAX)),
        }
        return Ok(());
    }
    let keys = Keys::take();
    loop {
        if keys.quit_within(interval) {
            return Ok(());
        }
        let (now_at, now) = look()?;
        let v = view(&before, &now, (now_at - at).as_secs_f64(), &comm);
        let mut stdout = std::io::stdout().lock();
        let written = match as_json {
            true => writeln!(stdout, "{v}"),
            // Home, clear, the view.
            false => write!(stdout, "\x1b[H\x1b[2J{}", draw(&v, rows()).replace('\n', "\r\n")),
        };
        written.and_then(|()| stdout.flush()).map_err(|e| Error::Top(format!("stdout: {e}")))?;
        (at, before) = (now_at, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use radiance::node::StreamActivity;

    fn name(pid: i32) -> String {
        if pid == 7 {
            "worker".into()
        } else {
            String::new()
        }
    }

    fn device(busy_ns: u64, bytes: u64, completed: u64) -> Look {
        let stream = |s: u8, busy_ns| StreamStats {
            stream: s,
            state: "idle".into(),
            activity: Some(StreamActivity { busy_ns, answered: completed, bytes, threads: 0 }),
            ..Default::default()
        };
        let queue = |pid, queue, faulted| QueueStats {
            pid,
            queue,
            completed,
            bytes: Some(bytes),
            faulted,
            ..Default::default()
        };
        Look {
            index: 0,
            name: "Radiance (emulated Gluon)".into(),
            mem: MemStats { vram_total: 64 << 20, vram_used: 3 << 20, device_resets: Some(2), ..Default::default() },
            streams: vec![stream(0, busy_ns), stream(1, 0)],
            queues: vec![queue(7, 1, false), queue(7, 2, true), queue(9, 1, false)],
        }
    }

    #[test]
    fn rates_are_changes_over_the_interval() {
        let v = view(&[device(0, 0, 10)], &[device(500_000_000, 2 << 20, 110)], 2.0, &name);
        let d = &v["devices"][0];
        assert_eq!(d["streams"][0]["busy_percent"], 25.0);
        assert_eq!(d["streams"][1]["busy_percent"], 0.0);
        assert_eq!(d["streams"][0]["bytes_per_s"], 1048576.0);
        // Three queues of 50 packets a second, two of them process 7's.
        assert_eq!(d["packets_per_s"], 150.0);
        assert_eq!(d["processes"][0]["pid"], 7);
        assert_eq!(d["processes"][0]["queues"], 2);
        assert_eq!(d["processes"][0]["packets_per_s"], 100.0);
        assert_eq!(d["processes"][0]["faulted_queues"], 1);
        assert_eq!(d["faulted_queues"], 1);
        assert_eq!((d["resets"].as_u64(), d["vram_used"].as_u64()), (Some(2), Some(3 << 20)));
        // A queue the first look did not see counts nothing yet.
        let v = view(&[], &[device(5, 5, 5)], 1.0, &name);
        assert_eq!(v["devices"][0]["packets_per_s"], 0.0);
        let mut idle = device(5, 5, 5);
        idle.queues.clear();
        let text = draw(&view(&[], &[idle], 1.0, &name), usize::MAX);
        assert!(text.contains("  packets/s      0 "), "{text}");
    }

    #[test]
    fn the_view_fits_80_columns_and_the_rows_it_is_given() {
        let v = view(&[device(0, 0, 10)], &[device(500_000_000, 2 << 20, 110)], 2.0, &name);
        let text = draw(&v, usize::MAX);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(text.contains("radiance0  Radiance (emulated Gluon)"), "{text}");
        assert!(text.contains("\n  7        worker                2       100      2.1M       1\n"), "{text}");
        assert!(text.contains("busy  0: 25%  1:  0%"), "{text}");
        let cut = draw(&v, 6);
        assert_eq!(cut.lines().count(), 6, "{cut}");
        assert!(cut.lines().last().unwrap().contains("more lines"), "{cut}");
    }
}
