// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Builds the C test program of `tests/c_abi/` against `include/libradiance.h`
//! (and the uapi header, for the built-in entry PCs), links it with the
//! library's staticlib, and runs it against `host`.

use std::{path::PathBuf, process::Command};

#[test]
fn c_program_drives_the_c_abi() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let src = manifest.join("tests/c_abi");
    // The test binary runs from <target>/<profile>/deps; cargo puts the
    // staticlib built for this test run in <target>/<profile>.
    let exe_dir = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let staticlib = exe_dir.parent().unwrap().join("libradiance.a");
    assert!(staticlib.exists(), "{} is missing", staticlib.display());
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c_abi_test");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg("-I")
        .arg(manifest.join("include"))
        .arg("-I")
        .arg(manifest.join("../uapi/include"))
        .arg(src.join("test.c"))
        .arg(src.join("seam.c"))
        .arg(&staticlib)
        // What Rust's std needs from the system (`--print native-static-libs`).
        .args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"])
        .status()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(status.success(), "the C test program does not build");
    let out = Command::new(&exe).arg("host").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("PASSED"), "the C test program failed:\n{stdout}");
}
