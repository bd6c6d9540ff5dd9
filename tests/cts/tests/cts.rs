// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The conformance suite under `cargo test`, against `$RADIANCE_CTS_DEVICE`
//! (default `host`). No libtest harness: the suite prints KTAP, then one
//! libtest-style result line, which `tools/test.sh` sums with the others.

fn main() -> std::process::ExitCode {
    let (device, filter) = radiance_cts::args();
    let s = radiance_cts::run(&device, &filter, &mut std::io::stdout().lock());
    let verdict = if s.failed == 0 { "ok" } else { "FAILED" };
    println!("test result: {verdict}. {} passed; {} failed; {} ignored; 0 measured; 0 filtered out", s.passed, s.failed, s.skipped);
    s.exit_code()
}
