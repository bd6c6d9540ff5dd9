// SPDX-License-Identifier: GPL-2.0 OR MIT
//! `ktap [--no-results-ok] < console`: echoes a QEMU test run's serial
//! console line by line as it arrives, then prints why the run failed (if it
//! did) and, as the last line, `N passed, N failed, N skipped`.
//! `ktap --libtest < cargo-test.log` judges `cargo test`'s output instead
//! (src/libtest.rs), printing only the failures and that line.
//! Exit status: 0 if nothing failed, 1 if something did, 2 on bad usage.
//! The rules are in the library's documentation (src/lib.rs).

use std::io::{self, BufRead, Read, Write};
use std::process::ExitCode;

use ktap::{Options, Parser, Report};

const USAGE: &str = "usage: ktap [--no-results-ok] < console.log
       ktap --libtest < cargo-test.log

Echoes the console from stdin, counts the KTAP results of each test document
and of each suite of the job's plan, checks for the guest's
'radiance-guest: exit <rc>' marker and for kernel splats, and ends with
'N passed, N failed, N skipped'. Exit status 0 only if nothing failed (and,
without --no-results-ok, at least one result was seen, and the job declared
its plan). --libtest: sums what each test binary of a 'cargo test' log ran.
";

fn main() -> ExitCode {
    // A test run must say what it runs; a demo need not.
    let mut opts = Options { plan_required: true, ..Options::default() };
    let mut libtest = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--no-results-ok" => opts = Options { no_results_ok: true, plan_required: false },
            "--libtest" => libtest = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => {
                eprint!("ktap: unknown argument '{arg}'\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }

    if libtest {
        let mut log = Vec::new();
        if let Err(e) = io::stdin().lock().read_to_end(&mut log) {
            eprintln!("ktap: reading the log: {e}");
            return ExitCode::from(2);
        }
        return verdict(&ktap::libtest::parse(&String::from_utf8_lossy(&log)), &mut io::stdout().lock());
    }

    let mut parser = Parser::new(opts);
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut buf = Vec::new();
    let mut last = b'\n';
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = writeln!(out, "ktap: reading the console: {e}");
                break;
            }
        }
        // Echo the bytes as they came; a closed stdout must not stop the
        // judging, so write errors are ignored.
        last = *buf.last().unwrap_or(&b'\n');
        let _ = out.write_all(&buf);
        let _ = out.flush();
        parser.feed_line(&String::from_utf8_lossy(&buf));
    }
    if last != b'\n' {
        let _ = writeln!(out);
    }

    verdict(&parser.finish(), &mut out)
}

/// Prints the report; the exit status says whether anything failed.
fn verdict(report: &Report, out: &mut impl Write) -> ExitCode {
    let _ = writeln!(out, "{report}");
    let _ = out.flush();
    if report.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
