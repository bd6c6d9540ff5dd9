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

/// Runs one case on its own thread, with the watchdog.
fn run_case(uri: &str, case: &Case) -> Verdict {
    let (tx, rx) = mpsc::channel();
    let (uri, run) = (uri.to_owned(), case.run);
    let spawned = std::thread::Builder::new().name(case.name.to_owned()).spawn(move || {
        let verdict = match Device::open(&uri) {
            Ok(device) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&device))) {
                Ok(outcome) => Verdict::from(outcome),
                Err(_) => Verdict::Fail("the case panicked".into()),
            },
            Err(e) => Verdict::Fail(format!("opening {uri}: {e}")),
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

/// Runs the cases whose names contain `filter` against the device `uri`,
/// printing KTAP to `out`.
pub fn run(uri: &str, filter: &str, out: &mut impl Write) -> Summary {
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.name.contains(filter)).collect();
    let mut summary = Summary::default();
    // Output errors (a closed pipe) must not change the verdict.
    let _ = writeln!(out, "TAP version 13\n# radiance-cts against {uri}\n1..{}", cases.len());
    for (i, case) in cases.iter().enumerate() {
        let n = i + 1;
        let _ = match run_case(uri, case) {
            Verdict::Pass => {
                summary.passed += 1;
                writeln!(out, "ok {n} {}", case.name)
            }
            Verdict::Skip(why) => {
                summary.skipped += 1;
                writeln!(out, "ok {n} {} # SKIP {}", case.name, why.replace('\n', " "))
            }
            Verdict::Fail(why) => {
                summary.failed += 1;
                for line in why.lines() {
                    let _ = writeln!(out, "# {line}");
                }
                writeln!(out, "not ok {n} {}", case.name)
            }
        };
        let _ = out.flush();
    }
    let _ = writeln!(
        out,
        "# {} passed, {} failed, {} skipped",
        summary.passed, summary.failed, summary.skipped
    );
    summary
}

/// The device URI and case filter from the command line: `[--device URI]
/// [FILTER]`; the URI defaults to `$RADIANCE_CTS_DEVICE`, else `host`. Other
/// options are ignored: under `cargo test` they are libtest's, so `cargo
/// test FILTER` filters cases too.
pub fn args() -> (String, String) {
    let mut device = std::env::var("RADIANCE_CTS_DEVICE").unwrap_or_else(|_| "host".to_owned());
    let mut filter = String::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--device" {
            device = args.next().unwrap_or_default();
        } else if let Some(uri) = arg.strip_prefix("--device=") {
            device = uri.to_owned();
        } else if !arg.starts_with('-') {
            filter = arg;
        }
    }
    (device, filter)
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
