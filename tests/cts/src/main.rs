// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance-cts [--device URI] [--group URI,URI,...] [FILTER]`: runs the
//! conformance cases whose names contain FILTER against URI (default:
//! `$RADIANCE_CTS_DEVICE`, else `host`), or with `--group` (or
//! `$RADIANCE_CTS_GROUP`) the device-group cases against those devices,
//! prints KTAP, and exits 0 exactly when no case failed. This is what the
//! QEMU guest runs.

fn main() -> std::process::ExitCode {
    let args = radiance_cts::args();
    let out = &mut std::io::stdout().lock();
    match &args.group {
        Some(uris) => radiance_cts::run_group(uris, &args.filter, out),
        None => radiance_cts::run(&args.device, &args.filter, out),
    }
    .exit_code()
}
