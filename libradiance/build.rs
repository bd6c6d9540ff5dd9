// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Builds the hsa backend's built-in kernels (`src/hsa/builtins.cl`) into
//! one AMDGPU code object per target below, with clang and lld (Debian 12's
//! clang-19 and lld-19, or `$RADIANCE_HSA_CLANG` and `$RADIANCE_HSA_LLD`),
//! and embeds them: `$OUT_DIR/hsa_builtins.rs`. Where no clang with the
//! AMDGPU target is found, the library still builds, with no code objects
//! and the reason, which `hsa:N` reports when it is opened.

use std::{
    env,
    fmt::Write,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

/// The GPU generations ROCm supports, by their ISA names: code object v4,
/// which ROCr 5.2 (Debian 12) and every later ROCr loads; xnack and sramecc
/// left "any", so that one object runs in either mode.
const TARGETS: &[&str] =
    &["gfx900", "gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102"];

fn tool(var: &str, default: &str) -> String {
    env::var(var).unwrap_or_else(|_| default.to_owned())
}

fn build(clang: &str, lld: &str, source: &str, out: &Path, target: &str) -> Result<PathBuf, String> {
    let object = out.join(format!("builtins-{target}.o"));
    let code = out.join(format!("builtins-{target}.hsaco"));
    let run = |cmd: &mut Command| -> Result<(), String> {
        let shown = format!("{cmd:?}");
        let o = cmd.output().map_err(|e| format!("{shown}: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{shown}: {}", String::from_utf8_lossy(&o.stderr).trim()))
        }
    };
    run(Command::new(clang)
        .args([
            "-x",
            "cl",
            "-cl-std=CL2.0",
            "-target",
            "amdgcn-amd-amdhsa",
            "-mcode-object-version=4",
            "-nogpulib",
            "-O2",
            "-c",
        ])
        .arg(format!("-mcpu={target}"))
        .arg(source)
        .arg("-o")
        .arg(&object))?;
    run(Command::new(lld).arg("-shared").arg(&object).arg("-o").arg(&code))?;
    Ok(code)
}

fn main() {
    let source = "src/hsa/builtins.cl";
    println!("cargo::rerun-if-changed={source}");
    println!("cargo::rerun-if-env-changed=RADIANCE_HSA_CLANG");
    println!("cargo::rerun-if-env-changed=RADIANCE_HSA_LLD");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let (clang, lld) = (tool("RADIANCE_HSA_CLANG", "clang-19"), tool("RADIANCE_HSA_LLD", "ld.lld-19"));
    let mut table =
        String::from("/// The built-in kernels' code objects, by GPU ISA name.\npub(super) const CODE_OBJECTS: &[(&str, &[u8])] = &[\n");
    let mut missing = None;
    for target in TARGETS {
        match build(&clang, &lld, source, &out, target) {
            Ok(code) => writeln!(table, "    ({target:?}, include_bytes!({:?})),", code.display().to_string()).unwrap(),
            Err(why) => {
                missing = Some(why);
                break;
            }
        }
    }
    if let Some(why) = &missing {
        println!("cargo::warning=hsa built-in kernels not built (hsa:N will not open): {why}");
        table = String::from(
            "/// No code objects: see `CODE_OBJECTS_MISSING`.\npub(super) const CODE_OBJECTS: &[(&str, &[u8])] = &[\n",
        );
    }
    table.push_str("];\n");
    writeln!(
        table,
        "/// Why there are no code objects, if there are none.\npub(super) const CODE_OBJECTS_MISSING: Option<&str> = {missing:?};"
    )
    .unwrap();
    fs::write(out.join("hsa_builtins.rs"), table).expect("writing hsa_builtins.rs");
}
