// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Builds Merlin's kmod transport (`merlin/transport/kmod.c`) against
//! stand-ins for its IREE declarations (`merlin/tests/transport.h`), links
//! it with the library's staticlib and runs `merlin/tests/kmod_test.c`:
//! the devices it accepts and refuses, and the line its statuses name.

use std::{path::PathBuf, process::Command};

#[test]
fn kmod_transport_picks_only_radiance_ko_devices_and_names_the_call() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let merlin = manifest.join("merlin");
    // The test binary runs from <target>/<profile>/deps; the staticlib is
    // in <target>/<profile>.
    let exe = std::env::current_exe().unwrap();
    let staticlib = exe.parent().and_then(|deps| deps.parent()).unwrap().join("libradiance.a");
    assert!(staticlib.exists(), "{} is missing: `cargo build -p libradiance` first", staticlib.display());
    let kmod_c = merlin.join("transport/kmod.c");
    let source = std::fs::read_to_string(&kmod_c).unwrap();
    let create_line = source
        .lines()
        .position(|l| l.contains("radiance_transport_create(uri"))
        .expect("kmod.c calls radiance_transport_create")
        + 1;
    let test = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("merlin_kmod_test");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&test)
        .arg("-I")
        .arg(merlin.join("tests"))
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(merlin.join("tests/kmod_test.c"))
        .arg(&kmod_c)
        .arg(&staticlib)
        .args(["-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"])
        .status()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(status.success(), "kmod.c or its test does not build");
    let out = Command::new(&test).env("KMOD_CREATE_LINE", create_line.to_string()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("PASSED"), "kmod.c's test failed:\n{stdout}");
}
