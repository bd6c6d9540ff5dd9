// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Judges what `cargo test` printed (its own lines and its test binaries',
//! stdout and stderr together), so that the host's counts are the sum of
//! what each test binary ran.
//!
//! Rules:
//! - A test binary's output begins at cargo's `Running ...` or
//!   `Doc-tests ...` line and ends at the next one.
//! - Each ends with one `test result:` line: its `passed`, `failed` and
//!   `ignored` (skipped) counts are the binary's. Where libtest printed
//!   `running N tests`, N must be their sum; a difference counts as failed.
//!   (A binary without libtest's harness may print only the result line.)
//! - A binary without a result line (it crashed, or was killed) counts its
//!   `test NAME ... ok|ignored|FAILED` lines, and each test of its
//!   `running N` that has no such line as failed; at least one failure.
//! - A binary with more than one result line is one more failure, and so
//!   is a log in which no test binary ran at all.

use crate::Report;

/// One test binary's output.
#[derive(Debug)]
struct Binary {
    name: String,
    running: Option<u32>,
    /// (passed, failed, ignored) of its `test result:` lines, summed.
    result: Option<(u32, u32, u32)>,
    results: u32,
    /// Its `test NAME ... ` lines: (ok, FAILED, ignored).
    lines: (u32, u32, u32),
}

/// Judges a whole `cargo test` log.
pub fn parse(log: &str) -> Report {
    let mut report = Report::default();
    let mut binaries = 0;
    let mut binary: Option<Binary> = None;
    for line in log.lines() {
        let body = line.trim();
        if let Some(name) = body.strip_prefix("Running ").or_else(|| body.strip_prefix("Doc-tests ")) {
            if let Some(b) = binary.take() {
                judge(&b, &mut report);
            }
            binaries += 1;
            binary = Some(Binary { name: name.to_string(), running: None, result: None, results: 0, lines: (0, 0, 0) });
            continue;
        }
        let Some(b) = &mut binary else { continue };
        if let Some(n) = running(line) {
            b.running.get_or_insert(n);
        } else if let Some(counts) = line.strip_prefix("test result: ").and_then(result) {
            let (p, f, i) = b.result.unwrap_or_default();
            b.result = Some((p + counts.0, f + counts.1, i + counts.2));
            b.results += 1;
        } else if let Some(verdict) = test_line(line) {
            match verdict {
                "ok" => b.lines.0 += 1,
                "FAILED" => b.lines.1 += 1,
                _ => b.lines.2 += 1,
            }
        }
    }
    if let Some(b) = binary.take() {
        judge(&b, &mut report);
    }
    if binaries == 0 {
        report.failed += 1;
        report.reasons.push("no test binary ran (did the build fail?)".to_string());
    }
    report
}

fn judge(b: &Binary, r: &mut Report) {
    let Some((passed, failed, ignored)) = b.result else {
        let (ok, bad, ignored) = b.lines;
        let missing = b.running.map_or(0, |n| n.saturating_sub(ok + bad + ignored)).max(u32::from(bad == 0));
        r.passed += ok;
        r.skipped += ignored;
        r.failed += bad + missing;
        r.results += ok + bad + ignored;
        r.reasons.push(format!(
            "{}: no 'test result:' line (did it crash?): {ok} ok, {bad} failed, {ignored} ignored of {} tests; {missing} more counted as failed",
            b.name,
            b.running.map_or_else(|| "?".to_string(), |n| n.to_string())
        ));
        return;
    };
    r.passed += passed;
    r.failed += failed;
    r.skipped += ignored;
    r.results += passed + failed + ignored;
    if b.results > 1 {
        r.failed += 1;
        r.reasons.push(format!("{}: {} 'test result:' lines", b.name, b.results));
    }
    if let Some(n) = b.running {
        let sum = passed + failed + ignored;
        if n != sum {
            r.failed += n.abs_diff(sum);
            r.reasons.push(format!(
                "{}: running {n} tests, but {passed} passed + {failed} failed + {ignored} ignored = {sum}",
                b.name
            ));
        }
    }
    if failed > 0 {
        r.reasons.push(format!("{}: {failed} failed", b.name));
    }
}

/// `running N tests` (or `running 1 test`).
fn running(line: &str) -> Option<u32> {
    let rest = line.strip_prefix("running ")?;
    let (n, word) = rest.split_once(' ')?;
    matches!(word, "test" | "tests").then_some(())?;
    n.parse().ok()
}

/// `ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; ...`:
/// (passed, failed, ignored).
fn result(rest: &str) -> Option<(u32, u32, u32)> {
    let (_, counts) = rest.split_once(". ")?;
    let mut c = (None, None, None);
    for field in counts.split(';') {
        let Some((n, what)) = field.trim().split_once(' ') else { continue };
        let n = n.parse().ok();
        match what {
            "passed" => c.0 = n,
            "failed" => c.1 = n,
            "ignored" => c.2 = n,
            _ => {}
        }
    }
    Some((c.0?, c.1?, c.2?))
}

/// `test NAME ... ok`, `... FAILED` or `... ignored[, reason]`: the verdict.
fn test_line(line: &str) -> Option<&str> {
    let (_, verdict) = line.strip_prefix("test ")?.split_once(" ... ")?;
    let verdict = verdict.split(',').next()?.trim();
    matches!(verdict, "ok" | "FAILED" | "ignored").then_some(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(r: &Report) -> (u32, u32, u32) {
        (r.passed, r.failed, r.skipped)
    }

    const LIB: &str = "     Running unittests src/lib.rs (target/debug/deps/libradiance-0123)\n\n\
        running 3 tests\n\
        test a ... ok\n\
        test b ... ignored, needs cuda:0\n\
        test c ... ok\n\n\
        test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\n";

    #[test]
    fn binaries_add_up() {
        let log = format!(
            "   Compiling ktap v0.1.0\n{LIB}\
             \x20    Running tests/cts.rs (target/debug/deps/cts-0123)\n\
             TAP version 13\n1..2\nok 1 x\nok 2 y # SKIP no\n\
             test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n\
             \x20  Doc-tests libradiance\n\nrunning 1 test\ntest src/lib.rs - (line 3) ... FAILED\n\n\
             test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.2s\n"
        );
        let r = parse(&log);
        assert_eq!(counts(&r), (3, 1, 2), "{r:?}");
        assert_eq!(r.results, 6);
        assert_eq!(r.reasons, vec!["libradiance: 1 failed".to_string()]);
    }

    #[test]
    fn a_binary_that_crashed_counts_what_it_did_not_run_as_failed() {
        let log = format!(
            "{LIB}     Running tests/kmod_bo.rs (target/debug/deps/kmod_bo-0123)\n\n\
             running 5 tests\ntest a ... ok\ntest b ... ignored\n\
             error: test failed, to rerun pass `-p libradiance --test kmod_bo`\n\n\
             Caused by:\n  process didn't exit successfully: `kmod_bo` (signal: 11, SIGSEGV: invalid memory reference)\n"
        );
        let r = parse(&log);
        assert_eq!(counts(&r), (3, 3, 2), "{r:?}");
        assert!(
            r.reasons[0].starts_with("tests/kmod_bo.rs (target/debug/deps/kmod_bo-0123): no 'test result:' line"),
            "{:?}",
            r.reasons
        );
        assert!(
            r.reasons[0].ends_with("1 ok, 0 failed, 1 ignored of 5 tests; 3 more counted as failed"),
            "{:?}",
            r.reasons
        );
    }

    #[test]
    fn a_binary_that_died_before_its_first_test_is_one_failure() {
        let r =
            parse(&format!("{LIB}     Running tests/hsa.rs (target/debug/deps/hsa-0123)\nerror: could not execute\n"));
        assert_eq!(counts(&r), (2, 1, 1), "{r:?}");
        // A FAILED line is failure enough.
        let r = parse("     Running x\n\nrunning 1 test\ntest a ... FAILED\n");
        assert_eq!(counts(&r), (0, 1, 0), "{r:?}");
    }

    #[test]
    fn a_count_that_does_not_add_up_fails() {
        let log = "     Running x\n\nrunning 4 tests\n\
            test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n";
        let r = parse(log);
        assert_eq!(counts(&r), (2, 1, 1), "{r:?}");
        assert_eq!(r.reasons, vec!["x: running 4 tests, but 2 passed + 0 failed + 1 ignored = 3".to_string()]);
    }

    #[test]
    fn two_result_lines_in_one_binary_fail() {
        let log = "     Running x\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n\
            test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let r = parse(log);
        assert_eq!(counts(&r), (2, 1, 0), "{r:?}");
        assert_eq!(r.reasons, vec!["x: 2 'test result:' lines".to_string()]);
    }

    #[test]
    fn no_binary_is_a_failure() {
        let r = parse("   Compiling x\nerror[E0308]: mismatched types\n");
        assert_eq!(counts(&r), (0, 1, 0), "{r:?}");
        assert!(!r.success());
        // Filtered-out tests did not run: they are not counted.
        let r = parse(
            "     Running x\n\nrunning 0 tests\n\n\
             test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 7 filtered out; finished in 0.00s\n",
        );
        assert_eq!(counts(&r), (0, 0, 0), "{r:?}");
        assert!(r.success());
    }

    #[test]
    fn test_lines() {
        assert_eq!(test_line("test a::b ... ok"), Some("ok"));
        assert_eq!(test_line("test a ... ignored, needs cuda:0 (x, y)"), Some("ignored"));
        assert_eq!(test_line("test a ... FAILED"), Some("FAILED"));
        assert_eq!(test_line("test a ... "), None);
        assert_eq!(test_line("test result: ok. 1 passed"), None);
        assert_eq!(running("running 1 test"), Some(1));
        assert_eq!(running("running 12 tests"), Some(12));
        assert_eq!(running("running the suite"), None);
    }
}
