// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The libradiance conformance suite: the semantics every backend must have,
//! as cases that run against any device URI and report KTAP.
//!
//! A case gets a freshly opened device and returns `Ok`, a failure naming the
//! check that failed (file:line and values), or a skip saying why the
//! backend cannot do what the case needs. Each case runs on its own thread
//! under a watchdog, so a hang is reported as a failure instead of stopping
//! the suite.

mod cases;
mod check;

pub use check::{Outcome, Stop, Verdict};

use radiance::Device;
use std::{io::Write, process::ExitCode, sync::mpsc, time::Duration};

/// One conformance case.
#[derive(Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    pub run: fn(&Device) -> Outcome,
}

/// One device-group case: it gets every device the suite was given,
/// freshly opened, and makes its own groups of them.
#[derive(Clone, Copy)]
pub struct GroupCase {
    pub name: &'static str,
    pub run: fn(&[Device]) -> Outcome,
}

/// How long one case may take before it counts as hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Counts of one run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// Every case, in the order they run.
pub fn cases() -> Vec<Case> {
    cases::all()
}

/// Every device-group case, in the order they run.
pub fn group_cases() -> Vec<GroupCase> {
    cases::group()
}

/// Runs one case on its own thread, with the watchdog.
fn run_case(uri: &str, case: &Case) -> Verdict {
    let run = case.run;
    run_with_devices(&[uri.to_owned()], case.name, move |devices| run(&devices[0]))
}

/// Opens `uris` on a thread named `name`, runs `run` there, with the
/// watchdog.
fn run_with_devices(uris: &[String], name: &str, run: impl FnOnce(&[Device]) -> Outcome + Send + 'static) -> Verdict {
    let (tx, rx) = mpsc::channel();
    let uris = uris.to_vec();
    let spawned = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        let devices: Result<Vec<Device>, String> =
            uris.iter().map(|uri| Device::open(uri).map_err(|e| format!("opening {uri}: {e}"))).collect();
        let verdict = match devices {
            Ok(devices) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&devices))) {
                Ok(outcome) => Verdict::from(outcome),
                Err(_) => Verdict::Fail("the case panicked".into()),
            },
            Err(e) => Verdict::Fail(e),
        };
        // The receiver is gone only if the watchdog gave up on this case.
        let _ = tx.send(verdict);
    });
    if let Err(e) = spawned {
        return Verdict::Fail(format!("starting the case's thread: {e}"));
    }
    rx.recv_timeout(CASE_TIMEOUT)
        .unwrap_or_else(|_| Verdict::Fail(format!("no result within {}s (hung?)", CASE_TIMEOUT.as_secs())))
}

/// A case ready to run, by name.
type Runner<'a> = (&'static str, Box<dyn Fn() -> Verdict + 'a>);

/// Runs the cases whose names contain `filter` against the device `uri`,
/// printing KTAP to `out`.
pub fn run(uri: &str, filter: &str, out: &mut impl Write) -> Summary {
    if let Some(bailed) = bail_out_unless_open([uri], out) {
        return bailed;
    }
    let cases: Vec<Runner> = cases()
        .into_iter()
        .filter(|c| c.name.contains(filter))
        .map(|c| (c.name, Box::new(move || run_case(uri, &c)) as Box<dyn Fn() -> Verdict>))
        .collect();
    report(uri, cases, out)
}

/// Runs the device-group cases whose names contain `filter` against the
/// devices `uris` (each case opens them afresh), printing KTAP to `out`.
pub fn run_group(uris: &[String], filter: &str, out: &mut impl Write) -> Summary {
    if let Some(bailed) = bail_out_unless_open(uris.iter().map(String::as_str), out) {
        return bailed;
    }
    let cases: Vec<Runner> = group_cases()
        .into_iter()
        .filter(|c| c.name.contains(filter))
        .map(|c| (c.name, Box::new(move || run_with_devices(uris, c.name, c.run)) as Box<dyn Fn() -> Verdict>))
        .collect();
    report(&format!("the group {}", uris.join(" + ")), cases, out)
}

/// A device that does not open (no driver, no GPU) is one failure with its
/// reason, not one per case.
fn bail_out_unless_open<'a>(uris: impl IntoIterator<Item = &'a str>, out: &mut impl Write) -> Option<Summary> {
    let (uri, e) = uris.into_iter().find_map(|uri| Device::open(uri).err().map(|e| (uri, e)))?;
    let why = e.to_string().replace('\n', " ");
    let why = if why.starts_with(uri) { why } else { format!("{uri}: {why}") };
    // Output errors (a closed pipe) must not change the verdict.
    let _ = writeln!(out, "TAP version 13\n1..0\nBail out! {why}\n# 0 passed, 1 failed, 0 skipped");
    Some(Summary { failed: 1, ..Summary::default() })
}

/// Runs `cases`, printing KTAP to `out`.
fn report(what: &str, cases: Vec<Runner<'_>>, out: &mut impl Write) -> Summary {
    let mut summary = Summary::default();
    // Output errors (a closed pipe) must not change the verdict.
    let _ = writeln!(out, "TAP version 13\n# radiance-cts against {what}\n1..{}", cases.len());
    for (i, (name, run)) in cases.iter().enumerate() {
        let n = i + 1;
        let _ = match run() {
            Verdict::Pass => {
                summary.passed += 1;
                writeln!(out, "ok {n} {name}")
            }
            Verdict::Skip(why) => {
                summary.skipped += 1;
                writeln!(out, "ok {n} {name} # SKIP {}", why.replace('\n', " "))
            }
            Verdict::Fail(why) => {
                summary.failed += 1;
                for line in why.lines() {
                    let _ = writeln!(out, "# {line}");
                }
                writeln!(out, "not ok {n} {name}")
            }
        };
        let _ = out.flush();
    }
    let _ = writeln!(out, "# {} passed, {} failed, {} skipped", summary.passed, summary.failed, summary.skipped);
    summary
}

/// What to run, from the command line.
pub struct Args {
    /// The device of the single-device cases: `--device URI`, else
    /// `$RADIANCE_CTS_DEVICE`, else `host`.
    pub device: String,
    /// The devices of the device-group cases: `--group URI,URI,...`, else
    /// `$RADIANCE_CTS_GROUP`; none: the group cases do not run.
    pub group: Option<Vec<String>>,
    /// Only cases whose names contain it.
    pub filter: String,
}

/// `[--device URI] [--group URI,URI,...] [FILTER]`. Other options are
/// ignored: under `cargo test` they are libtest's, so `cargo test FILTER`
/// filters cases too.
pub fn args() -> Args {
    let mut device = std::env::var("RADIANCE_CTS_DEVICE").unwrap_or_else(|_| "host".to_owned());
    let mut group = std::env::var("RADIANCE_CTS_GROUP").ok();
    let mut filter = String::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--device" {
            device = args.next().unwrap_or_default();
        } else if let Some(uri) = arg.strip_prefix("--device=") {
            device = uri.to_owned();
        } else if arg == "--group" {
            group = args.next();
        } else if let Some(uris) = arg.strip_prefix("--group=") {
            group = Some(uris.to_owned());
        } else if !arg.starts_with('-') {
            filter = arg;
        }
    }
    let group = group.map(|g| g.split(',').map(str::to_owned).collect());
    Args { device, group, filter }
}

impl std::ops::AddAssign for Summary {
    fn add_assign(&mut self, other: Self) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.skipped += other.skipped;
    }
}

impl Summary {
    /// Success exactly when no case failed.
    pub fn exit_code(&self) -> ExitCode {
        if self.failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}
