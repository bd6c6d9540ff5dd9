// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radctl trace`: records radiance.ko's events (tracefs `events/radiance/`)
//! while a command runs, or for a while, and writes them as a timeline
//! (`timeline`). It records in a tracefs instance of its own, so that it
//! neither reads nor disturbs the global trace buffer or another tracer,
//! on the `mono` clock, so that its VRAM samples (debugfs, every 10 ms)
//! fall on the same time line. Needs root, as tracefs and debugfs do.

use crate::{
    error::{Error, Result},
    timeline::{self, VramSample},
};
use clap::{Args, ValueEnum};
use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

/// Where tracefs is, mounted by radctl if it is not.
const TRACEFS: &str = "/sys/kernel/tracing";
/// The trace buffer of each CPU, in KiB.
const BUFFER_KIB: &str = "16384";
/// Between two VRAM samples.
const SAMPLE: Duration = Duration::from_millis(10);

/// `radctl trace`'s arguments.
#[derive(Args)]
pub(crate) struct Trace {
    /// Where to write the timeline (default: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// `json`: the Chrome Trace Event format, which ui.perfetto.dev and
    /// chrome://tracing open (written inside radctl's own viewer page when
    /// the output ends in .html); `text`: a line per event.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// Record for this many seconds (without a command).
    #[arg(long)]
    duration: Option<f64>,
    /// The command to run while recording, after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Text,
}

fn tracing_error(what: impl std::fmt::Display, e: &std::io::Error) -> Error {
    Error::Tracing(format!("{what}: {e}"))
}

/// A tracefs instance of radctl's own: removed when dropped.
struct Instance {
    dir: PathBuf,
}

impl Instance {
    /// A new instance recording radiance's events on the mono clock; not
    /// tracing yet.
    fn create() -> Result<Self> {
        mount_tracefs()?;
        let root = Path::new(TRACEFS);
        if !root.join("events/radiance").is_dir() {
            return Err(Error::Tracing(format!(
                "no radiance events in {TRACEFS}/events: is radiance.ko loaded, on a kernel with tracing?"
            )));
        }
        let dir = root.join(format!("instances/radctl-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| tracing_error(format!("creating {}", dir.display()), &e))?;
        let instance = Self { dir };
        instance.write("tracing_on", "0")?;
        instance.write("trace_clock", "mono")?;
        instance.write("buffer_size_kb", BUFFER_KIB)?;
        instance.write("events/radiance/enable", "1")?;
        Ok(instance)
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| tracing_error(format!("writing {}", path.display()), &e))
    }

    fn read(&self, file: &str) -> Result<String> {
        let path = self.dir.join(file);
        std::fs::read_to_string(&path).map_err(|e| tracing_error(format!("reading {}", path.display()), &e))
    }

    /// Events the buffer had no room for, over every CPU.
    fn lost(&self) -> u64 {
        let Ok(cpus) = std::fs::read_dir(self.dir.join("per_cpu")) else { return 0 };
        cpus.filter_map(|c| std::fs::read_to_string(c.ok()?.path().join("stats")).ok())
            .filter_map(|s| s.lines().find_map(|l| l.strip_prefix("overrun: ")?.trim().parse::<u64>().ok()))
            .sum()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        let _ = self.write("events/radiance/enable", "0");
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Mounts tracefs at its place if nothing is there.
fn mount_tracefs() -> Result<()> {
    if Path::new(TRACEFS).join("instances").is_dir() {
        return Ok(());
    }
    rustix::mount::mount("nodev", TRACEFS, "tracefs", rustix::mount::MountFlags::empty(), None)
        .map_err(|e| Error::Tracing(format!("tracefs is not at {TRACEFS} and could not be mounted there: {e}")))
}

/// The mono clock now, as the trace buffer stamps it.
fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Samples each device's VRAM use until `stop`.
fn sample_vram(stop: Arc<AtomicBool>) -> Vec<VramSample> {
    let devices: Vec<u32> = radiance::node::enumerate()
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.file_name()?.to_str()?.strip_prefix("radiance")?.parse().ok())
        .collect();
    let mut samples = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        for &dev in &devices {
            if let Ok(s) = radiance::node::MemStats::read(dev) {
                samples.push(VramSample { ns: now_ns(), dev, used: s.vram_used });
            }
        }
        std::thread::sleep(SAMPLE);
    }
    samples
}

/// Runs `radctl trace`.
pub(crate) fn trace(args: &Trace) -> Result<()> {
    let wait = match (&args.command[..], args.duration) {
        ([], Some(s)) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s),
        ([], _) => return Err(Error::Tracing("give a command after `--`, or --duration SECONDS".into())),
        (_, Some(_)) => return Err(Error::Tracing("give a command or --duration, not both".into())),
        (_, None) => Duration::ZERO,
    };
    let instance = Instance::create()?;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = std::thread::spawn({
        let stop = stop.clone();
        move || sample_vram(stop)
    });
    // The command's own HAL timeline, if it uses libradiance's HAL.
    let hal_file = std::env::temp_dir().join(format!("radctl-hal-{}.json", std::process::id()));
    instance.write("tracing_on", "1")?;
    let ran = match &args.command[..] {
        [program, rest @ ..] => {
            Some(std::process::Command::new(program).args(rest).env(radiance::timeline::ENV, &hal_file).status())
        }
        [] => {
            std::thread::sleep(wait);
            None
        }
    };
    instance.write("tracing_on", "0")?;
    stop.store(true, Ordering::Relaxed);
    let vram = sampler.join().unwrap_or_default();
    let records = timeline::parse(&instance.read("trace")?);
    let lost = instance.lost();
    drop(instance);
    let hal = std::fs::read_to_string(&hal_file).ok().and_then(|t| timeline::parse_hal(&t)).unwrap_or_default();
    let _ = std::fs::remove_file(&hal_file);

    let (out, summary) = match args.format {
        Format::Json => {
            let (v, c) = timeline::chrome(&records, &vram, &hal);
            let mut summary = format!(
                "{} packets, {} device commands ({} faulted), {} semaphore flows",
                c.packets, c.commands, c.faults, c.flows
            );
            if !hal.is_empty() {
                summary += &format!(", {} libradiance events", hal.len());
            }
            let html = args.output.as_ref().is_some_and(|p| p.extension().is_some_and(|e| e == "html"));
            (if html { timeline::html(&v) } else { format!("{v}\n") }, summary)
        }
        Format::Text => (timeline::text(&records), format!("{} events", records.len())),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, out).map_err(|e| tracing_error(format!("writing {}", path.display()), &e))?
        }
        None => print!("{out}"),
    }
    let to = args.output.as_ref().map_or(String::new(), |p| format!(" in {}", p.display()));
    eprintln!("radctl: {summary}{to}");
    if lost > 0 {
        eprintln!("radctl: the trace buffer lost {lost} events: the timeline misses some");
    }
    match ran {
        Some(Ok(status)) if !status.success() => Err(Error::Tracing(format!("{}: {status}", args.command[0]))),
        Some(Err(e)) => Err(tracing_error(format!("running {}", args.command[0]), &e)),
        _ => Ok(()),
    }
}
