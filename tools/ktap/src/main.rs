// SPDX-License-Identifier: GPL-2.0 OR MIT
//! `ktap [--no-results-ok] < console`: echoes a QEMU test run's serial
//! console line by line as it arrives, then prints why the run failed (if it
//! did) and, as the last line, `N passed, N failed, N skipped`.
//! Exit status: 0 if nothing failed, 1 if something did, 2 on bad usage.
//! The rules are in the library's documentation (src/lib.rs).

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use ktap::{Options, Parser};

const USAGE: &str = "usage: ktap [--no-results-ok] < console.log

Echoes the console from stdin, counts the KTAP results of each test document,
checks for the guest's 'radiance-guest: exit <rc>' marker and for kernel
splats, and ends with 'N passed, N failed, N skipped'. Exit status 0 only if
nothing failed (and, without --no-results-ok, at least one result was seen).
";

fn main() -> ExitCode {
    let mut opts = Options::default();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--no-results-ok" => opts.no_results_ok = true,
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

    let report = parser.finish();
    let _ = writeln!(out, "{report}");
    let _ = out.flush();
    if report.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
