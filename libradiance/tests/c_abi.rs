// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Builds the C test program of `tests/c_abi/` against `include/libradiance.h`
//! (and the uapi header, for the built-in entry PCs), links it with the
//! library's staticlib, and runs it against `host`.

use std::{collections::BTreeSet, path::PathBuf, process::Command};

/// The staticlib built for this test run: the test binary runs from
/// <target>/<profile>/deps, and cargo puts the library in <target>/<profile>.
fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().and_then(|deps| deps.parent()).unwrap().join("libradiance.a");
    assert!(lib.exists(), "{} is missing: `cargo build -p libradiance` first (tools/test.sh does)", lib.display());
    lib
}

#[test]
fn header_declares_exactly_the_exported_functions() {
    let header =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/libradiance.h")).unwrap();
    // Every `radiance_*` identifier right before a `(` (declarations, and
    // calls in comments, which name functions too).
    let declared: BTreeSet<&str> = header
        .split('(')
        .filter_map(|before| before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next())
        .filter(|name| name.starts_with("radiance_"))
        .collect();
    let nm =
        Command::new("nm").args(["--defined-only", "--format=posix"]).arg(staticlib()).output().expect("running nm");
    assert!(nm.status.success());
    let nm = String::from_utf8_lossy(&nm.stdout);
    // POSIX format: `name type value size`, one symbol a line.
    let exported: BTreeSet<&str> = nm
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [name, "T", ..] if name.starts_with("radiance_") => Some(name),
            _ => None,
        })
        .collect();
    assert_eq!(declared, exported, "libradiance.h and the library's exported functions differ");
}

#[test]
fn c_program_drives_the_c_abi() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let src = manifest.join("tests/c_abi");
    let staticlib = staticlib();
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

/// `NAME = N` for every `PREFIX_NAME = N,` line of the header.
fn header_enum(prefix: &str) -> BTreeSet<(String, u32)> {
    let header =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/libradiance.h")).unwrap();
    header
        .lines()
        .filter_map(|l| l.trim().strip_prefix(prefix))
        .filter_map(|l| l.split_once('='))
        .map(|(name, value)| {
            let value = value.trim().split(',').next().unwrap().trim();
            (name.trim().to_owned(), value.parse().unwrap_or_else(|_| panic!("{prefix}{name} = {value}")))
        })
        .collect()
}

/// The Rust name of a topology value as the header spells it.
fn c_name(name: &str) -> String {
    name.to_uppercase().replace('-', "_")
}

#[test]
fn header_topology_enums_are_the_rust_ones() {
    use radiance::{BufferRoute as B, LinkClass as L, SemaphoreRoute as S};
    // A variant added in Rust and not listed here fails to compile.
    let _ = |s: S, b: B, l: L| {
        match s {
            S::Local | S::SyncFile | S::HostHop | S::KernelAlias | S::CudaEvent => (),
        }
        match b {
            B::Local | B::DmaBuf | B::Host | B::None | B::Peer => (),
        }
        match l {
            L::Local | L::Driver | L::Host => (),
        }
    };
    let semaphores = [S::Local, S::SyncFile, S::HostHop, S::KernelAlias, S::CudaEvent];
    let buffers = [B::Local, B::DmaBuf, B::Host, B::None, B::Peer];
    let links = [L::Local, L::Driver, L::Host];
    let rust = |items: Vec<(&str, u32)>| items.into_iter().map(|(n, v)| (c_name(n), v)).collect::<BTreeSet<_>>();
    assert_eq!(
        header_enum("RADIANCE_SEMAPHORE_ROUTE_"),
        rust(semaphores.iter().map(|r| (r.name(), *r as u32)).collect())
    );
    assert_eq!(header_enum("RADIANCE_BUFFER_ROUTE_"), rust(buffers.iter().map(|r| (r.name(), *r as u32)).collect()));
    assert_eq!(header_enum("RADIANCE_LINK_CLASS_"), rust(links.iter().map(|r| (r.name(), *r as u32)).collect()));
}
