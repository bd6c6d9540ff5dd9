// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The conformance suite against `hsa:0`: it needs ROCr and an AMD GPU
//! behind `/dev/kfd`, so it is ignored (counted as skipped) unless asked
//! for with `--include-ignored`; asked for where `hsa:0` does not open, the
//! suite bails out and the test fails, with ROCr's status and the missing
//! `/dev/kfd`. How the suite reports a device that does not open is checked
//! everywhere.

/// Where hsa:0 does not open, the suite bails out: one failure, with why.
#[test]
#[ignore = "needs hsa:0 (run with --include-ignored on a machine with ROCr and an AMD GPU behind /dev/kfd)"]
fn suite_against_hsa_0() {
    let mut ktap = Vec::new();
    let summary = radiance_cts::run("hsa:0", "", &mut ktap);
    print!("{}", String::from_utf8_lossy(&ktap));
    assert_eq!(summary.failed, 0, "{summary:?}");
}

/// A device that does not open is one failure with its reason, so that a
/// script running the suite against `hsa:0` gets a non-zero exit and why.
#[test]
fn a_device_that_does_not_open_bails_out_once() {
    let mut ktap = Vec::new();
    let summary = radiance_cts::run("hsa:x", "", &mut ktap);
    let ktap = String::from_utf8(ktap).unwrap();
    assert_eq!((summary.passed, summary.failed, summary.skipped), (0, 1, 0), "{ktap}");
    assert!(ktap.contains("\nBail out! hsa:x: invalid device name \"hsa:x\""), "{ktap}");
    assert_eq!(ktap.lines().filter(|l| l.starts_with("not ok")).count(), 0, "{ktap}");
}
