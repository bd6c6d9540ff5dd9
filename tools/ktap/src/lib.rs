// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Judges a QEMU test run from what its serial console printed.
//!
//! The console carries, in any order: kernel messages, the guest job's own
//! output (kselftest binaries printing KTAP/TAP documents one after another),
//! the guest init's end marker `radiance-guest: exit <rc>`, the job's plan
//! and suite markers (below), and the host-side line
//! `radiance-host: qemu exit <status>` that `tools/run-qemu.sh` appends
//! after QEMU has exited. [`Parser`] takes the lines one at a time and
//! [`Parser::finish`] turns them into a [`Report`]: counts of passed, failed
//! and skipped results, and one explanation per failure.
//!
//! Rules:
//! - Only results at the indentation of their document's version line count;
//!   nested (indented) subtests are already summed up by their parent's line.
//! - `# SKIP` (and `# TODO`) count as skipped, `# XFAIL` as passed, `# XPASS`
//!   as failed. A plan `1..0 # SKIP` counts as one skipped result.
//! - A document with fewer results than its plan (the binary crashed) counts
//!   each missing result as failed; `Bail out!` counts at least one failure.
//! - One more failure for each of: no end marker, a non-zero job status, a
//!   non-zero QEMU status, each console line that shows a kernel splat, and
//!   (unless [`Options::no_results_ok`]) no results at all.
//!
//! Suites (tests/guest/suite.sh prints the markers): a job names what it
//! must run in `radiance-guest: plan NAME...` lines (each name once; plans
//! add up, so a job may run another job), and runs each suite between
//! `radiance-guest: suite NAME` and `radiance-guest: suite NAME exit RC`;
//! the results in between are the suite's. A document ends where a suite
//! begins or ends. One more failure for each suite that:
//! - is in the plan but never began (its binary was not there, the job
//!   died before it);
//! - began but is not in the plan, or began twice;
//! - began and never ended (the job died in it);
//! - ended with no result (`1..0 # SKIP` counts as one);
//! - exited non-zero without a failed result (it crashed after its last
//!   result; 4, kselftest's KSFT_SKIP, is fine when all it had were skips).
//!
//! Once a plan is seen, a result outside every suite is one more failure
//! (a binary the manifest does not hold to account). With
//! [`Options::plan_required`], a run with results and no plan fails too.
//!
//! So a run passed exactly when [`Report::failed`] is zero.

use std::fmt;

pub mod libtest;

/// The guest init prints this, then the job's exit status.
pub const GUEST_MARKER: &str = "radiance-guest: exit ";
/// `tools/run-qemu.sh` prints this, then QEMU's exit status (124 or 137:
/// killed by `timeout`).
pub const HOST_MARKER: &str = "radiance-host: qemu exit ";
/// The job prints this, then the names of the suites it must run.
pub const PLAN_MARKER: &str = "radiance-guest: plan ";
/// The job prints this, then a suite's name when it begins, and its name,
/// `exit` and its exit status when it ends.
pub const SUITE_MARKER: &str = "radiance-guest: suite ";
/// kselftest's exit status for a program that skipped everything.
const KSFT_SKIP: i32 = 4;

/// Console substrings that mean the kernel complained, with the name each is
/// reported by. Checked in order: the first match names the line, so the
/// specific lockdep and might_sleep reports come before `WARNING:`/`BUG:`.
const SPLATS: &[(&str, &str)] = &[
    ("possible circular locking dependency", "lockdep: possible circular locking dependency"),
    ("possible recursive locking", "lockdep: possible recursive locking"),
    ("inconsistent lock state", "lockdep: inconsistent lock state"),
    ("sleeping function called from invalid context", "sleeping function called from invalid context"),
    ("general protection fault", "general protection fault"),
    ("Kernel panic", "kernel panic"),
    ("kernel BUG at", "kernel BUG"),
    ("rust_kernel: panicked", "Rust panic"),
    ("rust_panic", "Rust panic"),
    ("UBSAN:", "UBSAN"),
    ("KASAN:", "KASAN"),
    ("new suspected memory leak", "kmemleak"),
    ("Oops", "Oops"),
    ("BUG:", "BUG"),
    ("WARNING:", "WARNING"),
];

/// How to judge a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// A run that prints no KTAP results passes if the job exited 0 and the
    /// kernel did not complain (a demo, not a test run).
    pub no_results_ok: bool,
    /// A run with results must have a plan (`radiance-guest: plan`): a
    /// test job must say what it runs.
    pub plan_required: bool,
}

/// The verdict on a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    /// KTAP results seen (top level of their documents).
    pub results: u32,
    /// One line per failure, in the order they were found.
    pub reasons: Vec<String>,
    /// The job's exit status from the end marker, if it was printed.
    pub guest_exit: Option<i32>,
}

impl Report {
    /// True when nothing failed.
    pub fn success(&self) -> bool {
        self.failed == 0
    }

    /// The last line `ktap` prints: `N passed, N failed, N skipped`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed, {} skipped", self.passed, self.failed, self.skipped)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.reasons {
            writeln!(f, "ktap: FAIL: {r}")?;
        }
        write!(f, "{}", self.summary())
    }
}

/// `# Totals: pass:N fail:N xfail:N xpass:N skip:N error:N` (kselftest.h).
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    fail: u32,
    xpass: u32,
    error: u32,
}

/// One KTAP/TAP document: from its version line to the next one at the same
/// or a lower indentation, or to the end of the console.
#[derive(Debug)]
struct Doc {
    /// 1-based, in console order.
    number: u32,
    /// Console line of its version line (or first result, if it had none).
    line: u32,
    indent: usize,
    plan: Option<u32>,
    plan_skip: bool,
    results: u32,
    /// `not ok`/XPASS results (not counting missing ones).
    failed_results: u32,
    bailed: Option<String>,
    totals: Option<Totals>,
}

/// A suite that has begun and not ended: the report's counts when it began,
/// so that what it added is their difference.
#[derive(Debug)]
struct Suite {
    name: String,
    line: u32,
    at: Counts,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    passed: u32,
    failed: u32,
    skipped: u32,
    results: u32,
}

impl Counts {
    fn of(r: &Report) -> Self {
        Self { passed: r.passed, failed: r.failed, skipped: r.skipped, results: r.results }
    }

    fn since(self, before: Self) -> Self {
        Self {
            passed: self.passed - before.passed,
            failed: self.failed - before.failed,
            skipped: self.skipped - before.skipped,
            results: self.results - before.results,
        }
    }
}

/// Feeds on console lines; see the crate documentation for the rules.
#[derive(Debug, Default)]
pub struct Parser {
    opts: Options,
    report: Report,
    line: u32,
    docs: u32,
    doc: Option<Doc>,
    /// `Some(None)`: a marker whose status did not parse.
    guest: Option<Option<i32>>,
    host: Option<Option<i32>>,
    /// The suites of every plan line, in order.
    planned: Vec<String>,
    /// The suites that began, in order.
    begun: Vec<String>,
    suite: Option<Suite>,
    /// Results counted inside suites.
    suite_results: u32,
}

impl Parser {
    pub fn new(opts: Options) -> Self {
        Self { opts, ..Self::default() }
    }

    /// Takes one console line, with or without its line ending.
    pub fn feed_line(&mut self, raw: &str) {
        self.line += 1;
        let line = clean(raw);
        let body = line.trim_start();
        let indent = line.len() - body.len();

        self.check_splat(body);
        if self.guest.is_none() {
            if let Some(i) = body.find(GUEST_MARKER) {
                self.guest = Some(parse_status(&body[i + GUEST_MARKER.len()..]));
            }
        }
        if self.host.is_none() {
            if let Some(rest) = body.strip_prefix(HOST_MARKER) {
                self.host = Some(parse_status(rest));
            }
        }
        if let Some(names) = body.strip_prefix(PLAN_MARKER) {
            self.plan(names);
            return;
        }
        if let Some(rest) = body.strip_prefix(SUITE_MARKER) {
            self.suite_marker(rest);
            return;
        }

        if is_version(body) {
            match &self.doc {
                Some(d) if indent > d.indent => {} // a nested subtest's header
                _ => {
                    self.end_doc();
                    self.start_doc(indent);
                }
            }
            return;
        }
        if body.starts_with('#') {
            if let (Some(d), Some(t)) = (&mut self.doc, body.strip_prefix("# Totals:")) {
                if indent == d.indent {
                    d.totals = Some(parse_totals(t));
                }
            }
            return;
        }

        let plan = parse_plan(body);
        let result = parse_result(body);
        let bail = body.strip_prefix("Bail out!");
        if plan.is_none() && result.is_none() && bail.is_none() {
            return;
        }
        // TAP without a version line: take it as a document of its own.
        if self.doc.is_none() && indent == 0 {
            self.start_doc(0);
        }
        let Some(d) = &mut self.doc else { return };
        if indent != d.indent {
            return;
        }
        if let Some((n, skip)) = plan {
            if d.plan.is_none() {
                d.plan = Some(n);
                d.plan_skip = skip;
            }
        } else if let Some(r) = result {
            d.results += 1;
            self.report.results += 1;
            match r.kind {
                Kind::Pass => self.report.passed += 1,
                Kind::Skip => self.report.skipped += 1,
                Kind::Fail | Kind::XPass => {
                    d.failed_results += 1;
                    self.report.failed += 1;
                    let why = if r.kind == Kind::XPass { "unexpectedly passed" } else { "failed" };
                    self.report
                        .reasons
                        .push(format!("test {why}: {} (document {}, console line {})", body, d.number, self.line));
                }
            }
        } else if let Some(msg) = bail {
            d.bailed = Some(msg.trim().to_string());
        }
    }

    /// Ends the input and gives the verdict.
    pub fn finish(mut self) -> Report {
        self.end_doc();
        if let Some(s) = self.suite.take() {
            self.close_suite(&s);
            self.report.fail(format!("suite {} (console line {}) never ended: the job died in it", s.name, s.line));
        }
        for name in self.planned.iter().filter(|n| !self.begun.contains(n)) {
            self.report.fail(format!("suite {name} is in the plan but never ran"));
        }
        let loose = self.report.results - self.suite_results;
        if !self.planned.is_empty() && loose > 0 {
            self.report.fail(format!("{loose} results outside every suite of the plan"));
        }
        if self.planned.is_empty() && self.report.results > 0 && self.opts.plan_required {
            self.report.fail(format!("no plan: the job did not say which suites it runs ('{PLAN_MARKER}NAME...')"));
        }
        let r = &mut self.report;
        match self.guest {
            None => r.fail(format!(
                "no end marker '{}<rc>': the guest hung, panicked, or was killed by the timeout",
                GUEST_MARKER
            )),
            Some(None) => r.fail("the end marker's exit status did not parse".to_string()),
            Some(Some(0)) => {}
            Some(Some(rc)) => r.fail(format!("the guest job exited with status {rc}")),
        }
        r.guest_exit = self.guest.flatten();
        match self.host {
            None | Some(Some(0)) => {}
            Some(Some(s @ (124 | 137))) => r.fail(format!("QEMU was killed by the timeout (status {s})")),
            Some(Some(s)) => r.fail(format!("QEMU exited with status {s}")),
            Some(None) => r.fail("QEMU's exit status did not parse".to_string()),
        }
        if r.results == 0 && !self.opts.no_results_ok {
            r.fail("no test results".to_string());
        }
        self.report
    }

    fn plan(&mut self, names: &str) {
        for name in names.split_whitespace() {
            if self.planned.iter().any(|n| n == name) {
                self.report.fail(format!("suite {name} is in the plan twice (console line {})", self.line));
            } else {
                self.planned.push(name.to_string());
            }
        }
    }

    /// `NAME` (it begins) or `NAME exit RC` (it ended).
    fn suite_marker(&mut self, rest: &str) {
        self.end_doc();
        let words: Vec<&str> = rest.split_whitespace().collect();
        match words[..] {
            [name] => self.begin_suite(name),
            [name, "exit", rc] => self.end_suite(name, rc.parse().ok()),
            _ => self.report.fail(format!("a suite marker that did not parse (console line {})", self.line)),
        }
    }

    fn begin_suite(&mut self, name: &str) {
        if let Some(s) = self.suite.take() {
            self.close_suite(&s);
            self.report.fail(format!("suite {} (console line {}) never ended: {name} began", s.name, s.line));
        }
        if self.begun.iter().any(|n| n == name) {
            self.report.fail(format!("suite {name} ran twice (console line {})", self.line));
        } else if !self.planned.iter().any(|n| n == name) {
            self.report.fail(format!("suite {name} is not in the plan (console line {})", self.line));
        }
        self.begun.push(name.to_string());
        self.suite = Some(Suite { name: name.to_string(), line: self.line, at: Counts::of(&self.report) });
    }

    fn end_suite(&mut self, name: &str, rc: Option<i32>) {
        let Some(s) = self.suite.take_if(|s| s.name == name) else {
            self.report.fail(format!("suite {name} ended without beginning (console line {})", self.line));
            return;
        };
        let got = self.close_suite(&s);
        let what = format!("suite {name} (console line {})", s.line);
        match rc {
            None => self.report.fail(format!("{what}: its exit status did not parse")),
            _ if got.results == 0 => self.report.fail(format!(
                "{what} printed no results (exit status {}{})",
                rc.unwrap_or(0),
                if rc == Some(127) { ": not found" } else { "" }
            )),
            Some(0) => {}
            Some(KSFT_SKIP) if got.passed == 0 && got.failed == 0 => {}
            Some(rc) if got.failed == 0 => self.report.fail(format!(
                "{what} exited with status {rc} but no test failed: did it crash after its last result?"
            )),
            Some(_) => {}
        }
    }

    /// What suite `s` added to the report.
    fn close_suite(&mut self, s: &Suite) -> Counts {
        let got = Counts::of(&self.report).since(s.at);
        self.suite_results += got.results;
        got
    }

    fn start_doc(&mut self, indent: usize) {
        self.docs += 1;
        self.doc = Some(Doc {
            number: self.docs,
            line: self.line,
            indent,
            plan: None,
            plan_skip: false,
            results: 0,
            failed_results: 0,
            bailed: None,
            totals: None,
        });
    }

    fn end_doc(&mut self) {
        let Some(d) = self.doc.take() else { return };
        let r = &mut self.report;
        let what = match &self.suite {
            Some(s) => format!("document {} (console line {}, suite {})", d.number, d.line, s.name),
            None => format!("document {} (console line {})", d.number, d.line),
        };
        let missing = d.plan.map_or(0, |p| p.saturating_sub(d.results));
        if missing > 0 {
            r.failed += missing;
            r.reasons.push(format!(
                "{what}: plan 1..{} but only {} results: {missing} missing (did the test binary crash?)",
                d.plan.unwrap_or(0),
                d.results
            ));
        }
        if let Some(msg) = &d.bailed {
            if missing == 0 {
                r.failed += 1;
            }
            r.reasons.push(format!("{what}: Bail out! {msg}"));
        }
        if d.plan == Some(0) && d.plan_skip && d.results == 0 {
            r.skipped += 1;
            r.results += 1;
        }
        if d.plan.is_none() && d.results == 0 && d.bailed.is_none() {
            r.fail(format!("{what}: no plan and no results (did the test binary crash?)"));
        }
        if let Some(t) = d.totals {
            let said = t.fail + t.xpass + t.error;
            if said > d.failed_results {
                r.failed += said - d.failed_results;
                r.reasons.push(format!(
                    "{what}: '# Totals' reports {said} failures but only {} 'not ok' lines were seen",
                    d.failed_results
                ));
            }
        }
    }

    fn check_splat(&mut self, body: &str) {
        // The closing line of a report repeats its title.
        if body.starts_with("---[ end ") {
            return;
        }
        if let Some((_, name)) = SPLATS.iter().find(|(pat, _)| body.contains(pat)) {
            self.report.fail(format!("kernel splat ({name}), console line {}: {body}", self.line));
        }
    }
}

impl Report {
    fn fail(&mut self, why: String) {
        self.failed += 1;
        self.reasons.push(why);
    }
}

/// Parses a whole console.
pub fn parse(console: &str, opts: Options) -> Report {
    let mut p = Parser::new(opts);
    for l in console.lines() {
        p.feed_line(l);
    }
    p.finish()
}

/// Drops what is not the line's own text: `\r`, NULs, terminal escape
/// sequences (SeaBIOS clears the screen), trailing blanks, and a leading
/// kernel console prefix (`<6>`, `[    1.234567]`, `[    T1]`).
fn clean(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\r' | '\n' | '\0' => {}
            // CSI: parameters and intermediates, then one final byte; other
            // escapes are two characters long.
            '\x1b' => {
                if let Some('[') = chars.next() {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c => s.push(c),
        }
    }
    let mut t = s.trim_end();
    if let Some(rest) = strip_level(t) {
        t = rest;
    }
    let mut stripped = false;
    while let Some(rest) = strip_bracket(t) {
        t = rest;
        stripped = true;
    }
    if stripped {
        t = t.strip_prefix(' ').unwrap_or(t);
    }
    t.to_string()
}

/// `<6>` as /dev/kmsg and some consoles show a message's level.
fn strip_level(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('<')?;
    let end = rest.find('>')?;
    (end > 0 && end <= 3 && rest[..end].bytes().all(|b| b.is_ascii_digit())).then(|| &rest[end + 1..])
}

/// `[    1.234567]` (PRINTK_TIME) or `[    T1]`/`[ C0]` (PRINTK_CALLER).
fn strip_bracket(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('[')?;
    let end = rest.find(']')?;
    let inner = rest[..end].trim();
    let time = inner.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit())
    });
    let caller = inner.len() >= 2
        && (inner.starts_with('T') || inner.starts_with('C'))
        && inner[1..].bytes().all(|c| c.is_ascii_digit());
    (time || caller).then(|| &rest[end + 1..])
}

fn is_version(body: &str) -> bool {
    let v = body.strip_prefix("TAP version ").or_else(|| body.strip_prefix("KTAP version "));
    v.is_some_and(|n| !n.is_empty() && n.trim().bytes().all(|c| c.is_ascii_digit()))
}

/// `1..N`, optionally followed by `# SKIP reason`: (N, skip).
fn parse_plan(body: &str) -> Option<(u32, bool)> {
    let rest = body.strip_prefix("1..")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let n = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if !(tail.is_empty() || tail.starts_with(char::is_whitespace)) {
        return None;
    }
    Some((n, directive(tail).0 == Some(Directive::Skip)))
}

fn parse_status(rest: &str) -> Option<i32> {
    rest.split_whitespace().next()?.parse().ok()
}

fn parse_totals(rest: &str) -> Totals {
    let mut t = Totals::default();
    for field in rest.split_whitespace() {
        let Some((k, v)) = field.split_once(':') else {
            continue;
        };
        let Ok(v) = v.parse() else { continue };
        match k {
            "fail" => t.fail = v,
            "xpass" => t.xpass = v,
            "error" => t.error = v,
            _ => {}
        }
    }
    t
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Skip,
    Todo,
    XFail,
    XPass,
}

/// Finds a `# SKIP`-style directive in the text after a result's number:
/// (directive, text before it).
fn directive(s: &str) -> (Option<Directive>, &str) {
    for (i, _) in s.match_indices('#') {
        let after = s[i + 1..].trim_start();
        let word: String = after.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        let d = match word.to_ascii_uppercase().as_str() {
            "SKIP" => Directive::Skip,
            "TODO" => Directive::Todo,
            "XFAIL" => Directive::XFail,
            "XPASS" => Directive::XPass,
            _ => continue,
        };
        return (Some(d), &s[..i]);
    }
    (None, s)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pass,
    Fail,
    Skip,
    XPass,
}

#[derive(Debug)]
struct TestResult {
    kind: Kind,
}

/// `ok N desc # directive` or `not ok N desc # directive`.
fn parse_result(body: &str) -> Option<TestResult> {
    let (ok, rest) = match body.strip_prefix("not ok") {
        Some(r) => (false, r),
        None => (true, body.strip_prefix("ok")?),
    };
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let kind = match (directive(rest).0, ok) {
        (Some(Directive::Skip | Directive::Todo), _) => Kind::Skip,
        (Some(Directive::XFail), _) => Kind::Pass,
        (Some(Directive::XPass), _) => Kind::XPass,
        (None, true) => Kind::Pass,
        (None, false) => Kind::Fail,
    };
    Some(TestResult { kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: &str = "radiance-guest: exit 0\n";

    fn run(console: &str) -> Report {
        parse(console, Options::default())
    }

    fn counts(r: &Report) -> (u32, u32, u32) {
        (r.passed, r.failed, r.skipped)
    }

    #[test]
    fn all_pass() {
        let r = run(&format!("boot noise\nTAP version 13\n1..3\nok 1 a\nok 2 b\nok 3 c\n# Totals: pass:3 fail:0 xfail:0 xpass:0 skip:0 error:0\n{END}"));
        assert_eq!(counts(&r), (3, 0, 0), "{r:?}");
        assert!(r.success());
        assert!(r.reasons.is_empty());
        assert_eq!(r.summary(), "3 passed, 0 failed, 0 skipped");
        assert_eq!(r.guest_exit, Some(0));
    }

    #[test]
    fn one_failure() {
        let r = run(&format!("TAP version 13\n1..2\nok 1 a\nnot ok 2 b\n{END}"));
        assert_eq!(counts(&r), (1, 1, 0));
        assert!(!r.success());
        assert_eq!(r.reasons.len(), 1);
        assert!(r.reasons[0].contains("not ok 2 b"), "{:?}", r.reasons);
        assert_eq!(r.summary(), "1 passed, 1 failed, 0 skipped");
    }

    #[test]
    fn skip_and_xfail_and_xpass() {
        let r = run(&format!(
            "KTAP version 1\n1..6\nok 1 a # SKIP no device\nok 2 # SKIP\nnot ok 3 c # skip lowercase\n\
             ok 4 d # XFAIL known\nok 5 e # XPASS oops\nok 6 f#1 # TODO later\n{END}"
        ));
        assert_eq!(counts(&r), (1, 1, 4), "{r:?}");
        assert!(r.reasons[0].contains("unexpectedly passed"));
    }

    #[test]
    fn skip_only_passes() {
        let r = run(&format!("TAP version 13\n1..1\nok 1 a # SKIP no device\n{END}"));
        assert_eq!(counts(&r), (0, 0, 1));
        assert!(r.success());
    }

    #[test]
    fn whole_binary_skipped() {
        let r = run(&format!("TAP version 13\n1..0 # SKIP needs root\n{END}"));
        assert_eq!(counts(&r), (0, 0, 1), "{r:?}");
        assert!(r.success());
    }

    #[test]
    fn nested_subtests_not_double_counted() {
        let console = "KTAP version 1\n\
            1..2\n\
            \x20   KTAP version 1\n\
            \x20   # Subtest: suite_a\n\
            \x20   1..3\n\
            \x20   ok 1 t1\n\
            \x20   not ok 2 t2\n\
            \x20   ok 3 t3 # SKIP nope\n\
            not ok 1 suite_a\n\
            \x20   # Subtest: suite_b\n\
            \x20   1..1\n\
            \x20   ok 1 t1\n\
            ok 2 suite_b\n";
        let r = run(&format!("{console}{END}"));
        assert_eq!(counts(&r), (1, 1, 0), "{r:?}");
        assert_eq!(r.results, 2);
    }

    #[test]
    fn kselftest_runner_prefixed_children_are_comments() {
        let r = run(&format!(
            "TAP version 13\n1..1\n# selftests: radiance: t\n# TAP version 13\n# 1..2\n# ok 1 x\n# not ok 2 y\nnot ok 1 selftests: radiance: t # exit=1\n{END}"
        ));
        assert_eq!(counts(&r), (0, 1, 0));
    }

    #[test]
    fn crash_mid_plan() {
        let r = run(&format!("TAP version 13\n1..5\nok 1 a\nok 2 b\n{END}"));
        assert_eq!(counts(&r), (2, 3, 0), "{r:?}");
        assert!(r.reasons.iter().any(|s| s.contains("3 missing")), "{:?}", r.reasons);
    }

    #[test]
    fn crash_mid_plan_then_next_document() {
        let r = run(&format!("TAP version 13\n1..3\nok 1 a\nTAP version 13\n1..1\nok 1 z\n{END}"));
        assert_eq!(counts(&r), (2, 2, 0), "{r:?}");
    }

    #[test]
    fn crash_before_plan() {
        let r = run(&format!("TAP version 13\nSegmentation fault\n{END}"));
        assert_eq!(counts(&r), (0, 2, 0), "{r:?}"); // the empty document + no results
    }

    #[test]
    fn bail_out() {
        let r = run(&format!("TAP version 13\n1..4\nok 1 a\nBail out! cannot open /dev/radiance\n# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0\n{END}"));
        assert_eq!(counts(&r), (1, 3, 0), "{r:?}");
        assert!(r.reasons.iter().any(|s| s.contains("Bail out! cannot open")));
        let r = run(&format!("TAP version 13\n1..1\nok 1 a\nBail out! late\n{END}"));
        assert_eq!(counts(&r), (1, 1, 0), "{r:?}");
    }

    #[test]
    fn totals_reporting_more_failures() {
        let r = run(&format!(
            "TAP version 13\n1..1\nok 1 a\n# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0\n{END}"
        ));
        assert_eq!(counts(&r), (1, 1, 0), "{r:?}");
    }

    #[test]
    fn missing_marker() {
        let r = run("TAP version 13\n1..1\nok 1 a\n");
        assert_eq!(counts(&r), (1, 1, 0));
        assert!(!r.success());
        assert!(r.reasons[0].contains("no end marker"), "{:?}", r.reasons);
        assert_eq!(r.guest_exit, None);
    }

    #[test]
    fn nonzero_exit() {
        let r = run("TAP version 13\n1..1\nok 1 a\nradiance-guest: exit 3\n");
        assert_eq!(counts(&r), (1, 1, 0));
        assert_eq!(r.guest_exit, Some(3));
        assert!(r.reasons[0].contains("status 3"));
        let r = run("TAP version 13\n1..1\nok 1 a\nradiance-guest: exit what\n");
        assert_eq!(counts(&r), (1, 1, 0));
    }

    #[test]
    fn host_status() {
        let ok = format!("TAP version 13\n1..1\nok 1 a\n{END}radiance-host: qemu exit 0\n");
        assert!(run(&ok).success());
        let r = run(&format!("TAP version 13\n1..1\nok 1 a\n{END}radiance-host: qemu exit 124\n"));
        assert_eq!(counts(&r), (1, 1, 0));
        assert!(r.reasons[0].contains("timeout"));
    }

    #[test]
    fn lockdep_splat() {
        let console = format!(
            "TAP version 13\n1..1\n\
             ======================================================\n\
             WARNING: possible circular locking dependency detected\n\
             7.3.4 #1 Not tainted\n\
             ------------------------------------------------------\n\
             ok 1 a\n{END}"
        );
        let r = run(&console);
        assert_eq!(counts(&r), (1, 1, 0), "{r:?}");
        assert!(r.reasons[0].contains("lockdep: possible circular locking dependency"), "{:?}", r.reasons);
        assert!(r.reasons[0].contains("console line 4"), "{:?}", r.reasons);
    }

    #[test]
    fn each_splat_line_counts() {
        let console = format!(
            "BUG: sleeping function called from invalid context at mm/slab.c:1\n\
             WARNING: CPU: 0 PID: 1 at drivers/radiance.rs:10 foo+0x1/0x2\n\
             ---[ end trace 0000000000000000 ]---\n\
             kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)\n\
             TAP version 13\n1..1\nok 1 a\n{END}"
        );
        let r = run(&console);
        assert_eq!(counts(&r), (1, 3, 0), "{r:?}");
        assert!(r.reasons[0].contains("(sleeping function called from invalid context)"));
        assert!(r.reasons[1].contains("(WARNING)"));
        assert!(r.reasons[2].contains("(kmemleak)"));
    }

    #[test]
    fn panic_without_marker() {
        let console = "TAP version 13\n1..2\nok 1 a\n\
            BUG: kernel NULL pointer dereference, address: 0000000000000000\n\
            Oops: 0002 [#1] PREEMPT SMP\n\
            Kernel panic - not syncing: Fatal exception\n\
            ---[ end Kernel panic - not syncing: Fatal exception ]---\n";
        let r = run(console);
        // 1 missing result + 3 splat lines + no marker.
        assert_eq!(counts(&r), (1, 5, 0), "{r:?}");
    }

    #[test]
    fn carriage_returns_and_prefixes() {
        let console = "\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS (version 1.16)\r\n\
            [    1.000000] TAP version 13\r\n\
            <6>[    1.000001][    T1] 1..3\r\n\
            \rok 1 a\r\n\
            [    1.000002] not ok 2 b\r\n\
            ok 3 c # SKIP\r\r\n\
            [    2.5] radiance-guest: exit 0\r\n";
        let r = run(console);
        assert_eq!(counts(&r), (1, 1, 1), "{r:?}");
        assert_eq!(r.guest_exit, Some(0));
        assert_eq!(r.reasons.len(), 1, "{:?}", r.reasons);
    }

    #[test]
    fn two_documents_in_a_row() {
        let console = format!(
            "TAP version 13\n1..2\nok 1 a\nok 2 b\n# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0\n\
             KTAP version 1\n1..3\nok 1 x\nnot ok 2 y\nok 3 z # SKIP\n\
             # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0\n{END}"
        );
        let r = run(&console);
        assert_eq!(counts(&r), (3, 1, 1), "{r:?}");
        assert!(r.reasons[0].contains("document 2"), "{:?}", r.reasons);
    }

    #[test]
    fn no_results() {
        let r = run(END);
        assert_eq!(counts(&r), (0, 1, 0));
        assert_eq!(r.reasons, vec!["no test results".to_string()]);
        let demo = Options { no_results_ok: true, ..Options::default() };
        let r = parse(&format!("hello from the demo\n{END}"), demo);
        assert_eq!(counts(&r), (0, 0, 0));
        assert!(r.success());
        let r = parse("hello from the demo\nradiance-guest: exit 1\n", demo);
        assert!(!r.success());
        let r = parse(&format!("WARNING: CPU: 0\n{END}"), demo);
        assert_eq!(counts(&r), (0, 1, 0));
        let r = parse("hello\n", demo);
        assert_eq!(counts(&r), (0, 1, 0));
    }

    #[test]
    fn tap_without_version_line() {
        let r = run(&format!("1..2\nok 1 a\nok 2 b\n{END}"));
        assert_eq!(counts(&r), (2, 0, 0));
        assert!(r.success());
    }

    #[test]
    fn not_results() {
        let r = run(&format!("okay then\nok\nnot okay\nlooks ok 1 to me\n{END}"));
        // A bare "ok" is a result; "okay", "not okay" and mid-line "ok" are not.
        assert_eq!(counts(&r), (1, 0, 0), "{r:?}");
    }

    /// `suite NAME` around `body`, ending with exit status `rc`.
    fn suite(name: &str, body: &str, rc: i32) -> String {
        format!("{SUITE_MARKER}{name}\n{body}\n{SUITE_MARKER}{name} exit {rc}\n")
    }

    const ONE: &str = "TAP version 13\n1..1\nok 1 t";

    #[test]
    fn planned_suites_that_all_ran() {
        let console = format!(
            "{PLAN_MARKER}a b\n{}{}{END}",
            suite("a", "TAP version 13\n1..2\nok 1 x\nok 2 y # SKIP no", 0),
            suite("b", "KTAP version 1\n1..1\nnot ok 1 z", 1)
        );
        let r = run(&console);
        assert_eq!(counts(&r), (1, 1, 1), "{r:?}");
        assert_eq!(r.reasons.len(), 1, "{:?}", r.reasons);
        assert!(r.reasons[0].contains("not ok 1 z"), "{:?}", r.reasons);
    }

    #[test]
    fn a_planned_suite_that_never_ran_fails() {
        let r = run(&format!("{PLAN_MARKER}a sem_test b\n{}{}{END}", suite("a", ONE, 0), suite("b", ONE, 0)));
        assert_eq!(counts(&r), (2, 1, 0), "{r:?}");
        assert_eq!(r.reasons, vec!["suite sem_test is in the plan but never ran".to_string()]);
    }

    #[test]
    fn a_missing_binary_fails_its_suite() {
        let console = format!("{PLAN_MARKER}a\n{}{END}", suite("a", "sh: /sem_test: not found", 127));
        let r = run(&console);
        assert_eq!(counts(&r), (0, 2, 0), "{r:?}");
        assert!(
            r.reasons[0].starts_with("suite a (console line 2) printed no results (exit status 127: not found)"),
            "{:?}",
            r.reasons
        );
        assert_eq!(r.reasons[1], "no test results");
    }

    #[test]
    fn a_suite_that_ends_early_fails_each_missing_result() {
        let results: String = (1..=30).map(|i| format!("ok {i} t{i}\n")).collect();
        let console = format!(
            "{PLAN_MARKER}a\n{}{END}",
            suite("a", &format!("KTAP version 1\n1..40\n{results}Segmentation fault"), 139)
        );
        let r = run(&console);
        assert_eq!(counts(&r), (30, 10, 0), "{r:?}");
        assert_eq!(r.reasons.len(), 1, "{:?}", r.reasons);
        assert!(r.reasons[0].contains("suite a): plan 1..40 but only 30 results: 10 missing"), "{:?}", r.reasons);
    }

    #[test]
    fn a_suite_that_crashes_after_its_last_result_fails() {
        let r = run(&format!("{PLAN_MARKER}a\n{}{END}", suite("a", ONE, 139)));
        assert_eq!(counts(&r), (1, 1, 0), "{r:?}");
        assert!(
            r.reasons[0].contains("suite a (console line 2) exited with status 139 but no test failed"),
            "{:?}",
            r.reasons
        );
    }

    #[test]
    fn ksft_skip_passes_only_a_suite_that_skipped_everything() {
        let skipped = suite("a", "TAP version 13\n1..0 # SKIP needs root", KSFT_SKIP);
        let r = run(&format!("{PLAN_MARKER}a\n{skipped}{END}"));
        assert_eq!(counts(&r), (0, 0, 1), "{r:?}");
        let r = run(&format!("{PLAN_MARKER}a\n{}{END}", suite("a", ONE, KSFT_SKIP)));
        assert_eq!(counts(&r), (1, 1, 0), "{r:?}");
    }

    #[test]
    fn a_suite_the_job_died_in_fails() {
        let console = format!("{PLAN_MARKER}a b\n{SUITE_MARKER}a\n{ONE}\nradiance-guest: exit 2\n");
        let r = run(&console);
        assert_eq!(counts(&r), (1, 3, 0), "{r:?}");
        assert!(r.reasons[0].contains("suite a (console line 2) never ended"), "{:?}", r.reasons);
        assert!(r.reasons[1].contains("suite b is in the plan but never ran"), "{:?}", r.reasons);
        assert!(r.reasons[2].contains("status 2"), "{:?}", r.reasons);
    }

    #[test]
    fn suites_outside_the_plan_or_twice_fail() {
        let console = format!(
            "{PLAN_MARKER}a a\n{}{}{}{SUITE_MARKER}c exit 0\n{END}",
            suite("a", ONE, 0),
            suite("a", ONE, 0),
            suite("b", ONE, 0)
        );
        let r = run(&console);
        assert_eq!(counts(&r), (3, 4, 0), "{r:?}");
        assert!(r.reasons[0].contains("suite a is in the plan twice"), "{:?}", r.reasons);
        assert!(r.reasons[1].contains("suite a ran twice"), "{:?}", r.reasons);
        assert!(r.reasons[2].contains("suite b is not in the plan"), "{:?}", r.reasons);
        assert!(r.reasons[3].contains("suite c ended without beginning"), "{:?}", r.reasons);
    }

    #[test]
    fn a_suite_that_begins_ends_the_one_before() {
        let console = format!("{PLAN_MARKER}a b\n{SUITE_MARKER}a\n{ONE}\n{}{END}", suite("b", ONE, 0));
        let r = run(&console);
        assert_eq!(counts(&r), (2, 1, 0), "{r:?}");
        assert!(r.reasons[0].contains("suite a (console line 2) never ended: b began"), "{:?}", r.reasons);
    }

    #[test]
    fn documents_end_at_suite_boundaries() {
        // a's document stops after one of three results; b's results,
        // without a version line of their own, are not a's.
        let console = format!(
            "{PLAN_MARKER}a b\n{}{}{END}",
            suite("a", "TAP version 13\n1..3\nok 1 x", 1),
            suite("b", "1..1\nok 1 y", 0)
        );
        let r = run(&console);
        assert_eq!(counts(&r), (2, 2, 0), "{r:?}");
        assert_eq!(r.reasons.len(), 1, "{:?}", r.reasons);
        assert!(r.reasons[0].contains("suite a): plan 1..3 but only 1 results"), "{:?}", r.reasons);
    }

    #[test]
    fn plans_add_up_across_nested_jobs() {
        // robust-job runs test-job, whose plan comes later.
        let console = format!(
            "{PLAN_MARKER}outer\n{PLAN_MARKER}inner_1 inner_2\n{}{}{}{END}",
            suite("inner_1", ONE, 0),
            suite("inner_2", ONE, 0),
            suite("outer", ONE, 0)
        );
        let r = run(&console);
        assert_eq!(counts(&r), (3, 0, 0), "{r:?}");
        assert!(r.success());
    }

    #[test]
    fn results_outside_the_plan_fail() {
        let r = run(&format!("{PLAN_MARKER}a\n{}{ONE}\nok 2 u\n{END}", suite("a", ONE, 0)));
        assert_eq!(counts(&r), (3, 1, 0), "{r:?}");
        assert_eq!(r.reasons, vec!["2 results outside every suite of the plan".to_string()]);
    }

    #[test]
    fn a_test_run_without_a_plan_fails_where_one_is_required() {
        let required = Options { plan_required: true, ..Options::default() };
        let r = parse(&format!("{ONE}\n{END}"), required);
        assert_eq!(counts(&r), (1, 1, 0), "{r:?}");
        assert!(r.reasons[0].starts_with("no plan"), "{:?}", r.reasons);
        let r = parse(&format!("{PLAN_MARKER}a\n{}{END}", suite("a", ONE, 0)), required);
        assert!(r.success(), "{r:?}");
        let demo = Options { no_results_ok: true, plan_required: true };
        assert!(parse(&format!("hello\n{END}"), demo).success());
    }

    #[test]
    fn suite_markers_that_do_not_parse_fail() {
        let r = run(&format!(
            "{PLAN_MARKER}a\n{SUITE_MARKER}a\n{ONE}\n{SUITE_MARKER}a exit what\n{SUITE_MARKER}a b\n{END}"
        ));
        assert_eq!(counts(&r), (1, 2, 0), "{r:?}");
        assert!(r.reasons[0].contains("its exit status did not parse"), "{:?}", r.reasons);
        assert!(r.reasons[1].contains("a suite marker that did not parse"), "{:?}", r.reasons);
    }

    #[test]
    fn display_ends_with_summary() {
        let r = run("TAP version 13\n1..1\nnot ok 1 a\n");
        let text = r.to_string();
        assert_eq!(text.lines().last(), Some("0 passed, 2 failed, 0 skipped"));
        assert_eq!(text.lines().filter(|l| l.starts_with("ktap: FAIL: ")).count(), 2);
    }
}
