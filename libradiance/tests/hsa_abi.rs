// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Proves that the hsa backend's definitions (`src/hsa/sys.rs`) agree with
//! ROCr's own headers, `hsa/hsa.h` and `hsa/hsa_ext_amd.h` from Debian's
//! libhsa-runtime-dev (which `tools/test.sh` installs): every struct's
//! size, every field's offset and size, every enum value and packet header
//! bit position the backend uses. A C probe built from the tables below is
//! compiled against the headers and prints what the C compiler sees.

use radiance::hsa::sys::{self, *};
use std::{fmt::Write as _, mem::size_of, path::PathBuf, process::Command};

/// A C expression, and the value Rust gives it.
type Probe = (String, u64);

fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// A struct's size, and each field's offset and size under its C name
/// (`rust => "c.path"`); the listed fields must cover every byte, so that no
/// field goes unchecked.
macro_rules! layout {
    ($probes:ident, $rust:ty, $c:literal, [$($field:ident => $cfield:literal),+ $(,)?]) => {{
        let mut covered = 0;
        $probes.push((format!("sizeof({})", $c), size_of::<$rust>() as u64));
        $(
            let size = field_size(|s: &$rust| &s.$field);
            covered += size;
            $probes.push((format!("offsetof({}, {})", $c, $cfield), std::mem::offset_of!($rust, $field) as u64));
            $probes.push((format!("sizeof((({} *)0)->{})", $c, $cfield), size as u64));
        )+
        assert_eq!(covered, size_of::<$rust>(), "{}: fields do not cover the struct", $c);
    }};
}

fn probes() -> Vec<Probe> {
    let mut p = Vec::new();
    for handle in [
        "hsa_agent_t",
        "hsa_signal_t",
        "hsa_isa_t",
        "hsa_amd_memory_pool_t",
        "hsa_executable_t",
        "hsa_executable_symbol_t",
    ] {
        p.push((format!("sizeof({handle})"), 8));
    }
    layout!(p, hsa_queue_t, "hsa_queue_t", [
        type_ => "type", features => "features", base_address => "base_address", doorbell_signal => "doorbell_signal",
        size => "size", reserved1 => "reserved1", id => "id",
    ]);
    layout!(p, hsa_kernel_dispatch_packet_t, "hsa_kernel_dispatch_packet_t", [
        header => "header", setup => "setup", workgroup_size_x => "workgroup_size_x", workgroup_size_y => "workgroup_size_y",
        workgroup_size_z => "workgroup_size_z", reserved0 => "reserved0", grid_size_x => "grid_size_x", grid_size_y => "grid_size_y",
        grid_size_z => "grid_size_z", private_segment_size => "private_segment_size", group_segment_size => "group_segment_size",
        kernel_object => "kernel_object", kernarg_address => "kernarg_address", reserved2 => "reserved2",
        completion_signal => "completion_signal",
    ]);
    for c in ["hsa_barrier_and_packet_t", "hsa_barrier_or_packet_t"] {
        // One Rust struct for both C ones.
        let mut q = Vec::new();
        layout!(q, hsa_barrier_packet_t, "T", [
            header => "header", reserved0 => "reserved0", reserved1 => "reserved1", dep_signal => "dep_signal",
            reserved2 => "reserved2", completion_signal => "completion_signal",
        ]);
        p.extend(
            q.into_iter().map(|(expr, v)| (expr.replace("(T", &format!("({c}")).replace("((T", &format!("(({c}")), v)),
        );
    }
    layout!(p, hsa_amd_barrier_value_packet_t, "hsa_amd_barrier_value_packet_t", [
        header => "header.header", amd_format => "header.AmdFormat", reserved => "header.reserved", reserved0 => "reserved0",
        signal => "signal", value => "value", mask => "mask", cond => "cond", reserved1 => "reserved1", reserved2 => "reserved2",
        reserved3 => "reserved3", completion_signal => "completion_signal",
    ]);
    let consts: &[(&str, u64)] = &[
        ("HSA_STATUS_SUCCESS", HSA_STATUS_SUCCESS.into()),
        ("HSA_STATUS_INFO_BREAK", HSA_STATUS_INFO_BREAK.into()),
        ("HSA_STATUS_ERROR", HSA_STATUS_ERROR.into()),
        ("HSA_STATUS_ERROR_INVALID_ARGUMENT", HSA_STATUS_ERROR_INVALID_ARGUMENT.into()),
        ("HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", HSA_STATUS_ERROR_INVALID_QUEUE_CREATION.into()),
        ("HSA_STATUS_ERROR_INVALID_ALLOCATION", HSA_STATUS_ERROR_INVALID_ALLOCATION.into()),
        ("HSA_STATUS_ERROR_INVALID_AGENT", HSA_STATUS_ERROR_INVALID_AGENT.into()),
        ("HSA_STATUS_ERROR_OUT_OF_RESOURCES", HSA_STATUS_ERROR_OUT_OF_RESOURCES.into()),
        ("HSA_STATUS_ERROR_INVALID_CODE_OBJECT", HSA_STATUS_ERROR_INVALID_CODE_OBJECT.into()),
        ("HSA_STATUS_ERROR_NOT_INITIALIZED", HSA_STATUS_ERROR_NOT_INITIALIZED.into()),
        ("HSA_STATUS_ERROR_INVALID_ISA", HSA_STATUS_ERROR_INVALID_ISA.into()),
        ("HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS", HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS.into()),
        ("HSA_STATUS_ERROR_EXCEPTION", HSA_STATUS_ERROR_EXCEPTION.into()),
        ("HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION.into()),
        ("HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION.into()),
        ("HSA_STATUS_ERROR_MEMORY_FAULT", HSA_STATUS_ERROR_MEMORY_FAULT.into()),
        ("HSA_AGENT_INFO_NAME", HSA_AGENT_INFO_NAME.into()),
        ("HSA_AGENT_INFO_FEATURE", HSA_AGENT_INFO_FEATURE.into()),
        ("HSA_AGENT_INFO_QUEUE_MAX_SIZE", HSA_AGENT_INFO_QUEUE_MAX_SIZE.into()),
        ("HSA_AGENT_INFO_DEVICE", HSA_AGENT_INFO_DEVICE.into()),
        ("HSA_AMD_AGENT_INFO_PRODUCT_NAME", HSA_AMD_AGENT_INFO_PRODUCT_NAME.into()),
        ("HSA_DEVICE_TYPE_CPU", HSA_DEVICE_TYPE_CPU.into()),
        ("HSA_DEVICE_TYPE_GPU", HSA_DEVICE_TYPE_GPU.into()),
        ("HSA_AGENT_FEATURE_KERNEL_DISPATCH", HSA_AGENT_FEATURE_KERNEL_DISPATCH.into()),
        ("HSA_ISA_INFO_NAME_LENGTH", HSA_ISA_INFO_NAME_LENGTH.into()),
        ("HSA_ISA_INFO_NAME", HSA_ISA_INFO_NAME.into()),
        ("HSA_AMD_MEMORY_POOL_INFO_SEGMENT", HSA_AMD_MEMORY_POOL_INFO_SEGMENT.into()),
        ("HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS", HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS.into()),
        ("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED", HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED.into()),
        ("HSA_AMD_SEGMENT_GLOBAL", HSA_AMD_SEGMENT_GLOBAL.into()),
        ("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT", HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT.into()),
        ("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED", HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED.into()),
        ("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED", HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED.into()),
        ("HSA_QUEUE_TYPE_MULTI", HSA_QUEUE_TYPE_MULTI.into()),
        ("HSA_SIGNAL_CONDITION_EQ", HSA_SIGNAL_CONDITION_EQ.into()),
        ("HSA_SIGNAL_CONDITION_NE", HSA_SIGNAL_CONDITION_NE.into()),
        ("HSA_SIGNAL_CONDITION_LT", HSA_SIGNAL_CONDITION_LT.into()),
        ("HSA_SIGNAL_CONDITION_GTE", HSA_SIGNAL_CONDITION_GTE.into()),
        ("HSA_WAIT_STATE_BLOCKED", HSA_WAIT_STATE_BLOCKED.into()),
        ("HSA_PROFILE_FULL", HSA_PROFILE_FULL.into()),
        ("HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT", HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT.into()),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE",
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE.into(),
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE",
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE.into(),
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE",
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE.into(),
        ),
        ("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT", HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT.into()),
        ("HSA_PACKET_TYPE_VENDOR_SPECIFIC", HSA_PACKET_TYPE_VENDOR_SPECIFIC.into()),
        ("HSA_PACKET_TYPE_INVALID", HSA_PACKET_TYPE_INVALID.into()),
        ("HSA_PACKET_TYPE_KERNEL_DISPATCH", HSA_PACKET_TYPE_KERNEL_DISPATCH.into()),
        ("HSA_PACKET_TYPE_BARRIER_AND", HSA_PACKET_TYPE_BARRIER_AND.into()),
        ("HSA_PACKET_TYPE_BARRIER_OR", HSA_PACKET_TYPE_BARRIER_OR.into()),
        ("HSA_AMD_PACKET_TYPE_BARRIER_VALUE", HSA_AMD_PACKET_TYPE_BARRIER_VALUE.into()),
        ("HSA_PACKET_HEADER_TYPE", HSA_PACKET_HEADER_TYPE.into()),
        ("HSA_PACKET_HEADER_BARRIER", HSA_PACKET_HEADER_BARRIER.into()),
        ("HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE", HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE.into()),
        ("HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE", HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE.into()),
        ("HSA_FENCE_SCOPE_NONE", HSA_FENCE_SCOPE_NONE.into()),
        ("HSA_FENCE_SCOPE_AGENT", HSA_FENCE_SCOPE_AGENT.into()),
        ("HSA_FENCE_SCOPE_SYSTEM", HSA_FENCE_SCOPE_SYSTEM.into()),
        ("HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS", HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS.into()),
        // The fields the header packs are as wide as the Rust encoder
        // assumes: a type byte, one barrier bit, two-bit fence scopes.
        ("HSA_PACKET_HEADER_WIDTH_TYPE", 8),
        ("HSA_PACKET_HEADER_WIDTH_BARRIER", 1),
        ("HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE", 2),
        ("HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE", 2),
        ("HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS", 2),
    ];
    p.extend(consts.iter().map(|(name, v)| ((*name).to_owned(), *v)));
    p
}

/// What the C compiler makes of each probe.
fn c_values(probes: &[Probe]) -> Vec<u64> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (src, exe) = (dir.join("hsa_abi_probe.c"), dir.join("hsa_abi_probe"));
    let mut c =
        String::from("#include <stddef.h>\n#include <stdio.h>\n#include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\nint main(void) {\n");
    for (expr, _) in probes {
        writeln!(c, "\tprintf(\"%llu\\n\", (unsigned long long)({expr}));").unwrap();
    }
    c.push_str("\treturn 0;\n}\n");
    std::fs::write(&src, c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc).args(["-std=c11", "-Wall", "-Werror", "-o"]).arg(&exe).arg(&src).output().unwrap();
    assert!(
        built.status.success(),
        "the probe does not compile against <hsa/hsa.h> (apt install libhsa-runtime-dev):\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect()
}

#[test]
fn sys_rs_matches_rocr_headers() {
    let probes = probes();
    let c = c_values(&probes);
    assert_eq!(c.len(), probes.len());
    let wrong: Vec<_> = probes
        .iter()
        .zip(&c)
        .filter(|((_, rust), c)| rust != *c)
        .map(|((expr, rust), c)| format!("{expr}: rust {rust}, C {c}"))
        .collect();
    assert!(wrong.is_empty(), "sys.rs and ROCr's headers disagree:\n{}", wrong.join("\n"));
}

/// Every entry point the backend calls is in the ROCr this machine has
/// (Debian's `libhsa-runtime64.so.1`); the optional ones are reported.
#[test]
fn every_required_entry_point_resolves_in_the_installed_rocr() {
    let runtime =
        sys::Runtime::get().unwrap_or_else(|why| panic!("loading ROCr (apt install libhsa-runtime64-1): {why}"));
    assert!(sys::Runtime::REQUIRED.len() >= 25);
    let export = if runtime.portable_export_dmabuf.is_some() {
        "present"
    } else {
        "absent: dma-buf export reports UNIMPLEMENTED"
    };
    println!("optional {:?}: {export}", sys::Runtime::OPTIONAL);
}
