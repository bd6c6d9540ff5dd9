// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance-cts [--device URI] [FILTER]`: runs the conformance cases whose
//! names contain FILTER against URI (default: `$RADIANCE_CTS_DEVICE`, else
//! `host`), prints KTAP, and exits 0 exactly when no case failed. This is
//! what the QEMU guest runs.

fn main() -> std::process::ExitCode {
    let (device, filter) = radiance_cts::args();
    radiance_cts::run(&device, &filter, &mut std::io::stdout().lock()).exit_code()
}
