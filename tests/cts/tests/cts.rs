// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The conformance suite under `cargo test`, against `$RADIANCE_CTS_DEVICE`
//! (default `host`), then its device-group cases against
//! `$RADIANCE_CTS_GROUP` (default two `host` devices). No libtest harness:
//! the suite prints KTAP, then one libtest-style result line, which
//! `tools/test.sh` sums with the others.

fn main() -> std::process::ExitCode {
    let args = radiance_cts::args();
    let out = &mut std::io::stdout().lock();
    let mut s = radiance_cts::run(&args.device, &args.filter, out);
    let group = args.group.unwrap_or_else(|| vec!["host".to_owned(), "host".to_owned()]);
    s += radiance_cts::run_group(&group, &args.filter, out);
    let verdict = if s.failed == 0 { "ok" } else { "FAILED" };
    println!(
        "test result: {verdict}. {} passed; {} failed; {} ignored; 0 measured; 0 filtered out",
        s.passed, s.failed, s.skipped
    );
    s.exit_code()
}
