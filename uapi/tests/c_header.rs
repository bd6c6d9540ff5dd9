// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Proves that `include/radiance.h` and the Rust ABI agree: every struct's
//! size, every field's offset and size, and every ioctl number. A C program
//! generated from the tables below is compiled against the header and prints
//! what the C compiler sees; the test compares that with what rustc sees.

use radiance_uapi as uapi;
use std::{collections::BTreeMap, fmt::Write as _, mem::size_of, path::PathBuf, process::Command};

/// One fact about the ABI: a C expression and the value Rust gives it.
struct Fact {
    c_expr: String,
    rust: u64,
}

/// Size of a field, from a projection closure (no instance needed).
fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// Lists a struct's size and each field's offset and size, and checks on the
/// Rust side that the listed fields cover every byte (no implicit padding and
/// no unlisted field).
macro_rules! abi_struct {
    ($facts:ident, $rust:ty, $c:literal, [$($field:ident),+ $(,)?]) => {{
        let mut covered = 0usize;
        $facts.push(Fact { c_expr: format!("sizeof(struct {})", $c), rust: size_of::<$rust>() as u64 });
        $(
            let size = field_size(|s: &$rust| &s.$field);
            covered += size;
            $facts.push(Fact {
                c_expr: format!("offsetof(struct {}, {})", $c, stringify!($field)),
                rust: core::mem::offset_of!($rust, $field) as u64,
            });
            $facts.push(Fact {
                c_expr: format!("sizeof(((struct {} *)0)->{})", $c, stringify!($field)),
                rust: size as u64,
            });
        )+
        assert_eq!(covered, size_of::<$rust>(), "{}: fields do not cover the struct (padding?)", $c);
    }};
}

fn facts() -> Vec<Fact> {
    let mut f = Vec::new();
    abi_struct!(
        f,
        uapi::GetInfo,
        "radiance_get_info",
        [
            flags,
            pad0,
            abi_major,
            abi_minor,
            device_index,
            backend,
            pad1,
            name,
            cores,
            warps_per_core,
            threads_per_warp,
            max_queues,
            vram_size,
            packet_size,
            doorbell_page_size,
            features,
            builtins,
            pad2,
            dialect,
            streams,
            caps,
            retired_streams,
            pad3,
        ]
    );
    abi_struct!(
        f,
        uapi::BoCreate,
        "radiance_bo_create",
        [
            size,
            placement,
            flags,
            handle,
            pad,
            device_address,
            mmap_offset,
        ]
    );
    abi_struct!(f, uapi::BoDestroy, "radiance_bo_destroy", [handle, pad]);
    abi_struct!(
        f,
        uapi::BoInfo,
        "radiance_bo_info",
        [
            handle,
            pad,
            size,
            placement,
            flags,
            device_address,
            mmap_offset,
        ]
    );
    abi_struct!(
        f,
        uapi::BoExport,
        "radiance_bo_export",
        [handle, flags, fd, pad]
    );
    abi_struct!(
        f,
        uapi::BoImport,
        "radiance_bo_import",
        [fd, flags, handle, pad, size]
    );
    abi_struct!(
        f,
        uapi::SemCreate,
        "radiance_sem_create",
        [initial, flags, handle, value_offset]
    );
    abi_struct!(f, uapi::SemDestroy, "radiance_sem_destroy", [handle, pad]);
    abi_struct!(
        f,
        uapi::SemSignal,
        "radiance_sem_signal",
        [handle, pad, value]
    );
    abi_struct!(
        f,
        uapi::SemQuery,
        "radiance_sem_query",
        [handle, pad, value, error, pad1]
    );
    abi_struct!(f, uapi::SemFail, "radiance_sem_fail", [handle, error]);
    abi_struct!(
        f,
        uapi::SemWaitPoint,
        "radiance_sem_wait_point",
        [handle, pad, value]
    );
    abi_struct!(
        f,
        uapi::SemWait,
        "radiance_sem_wait",
        [points, count, flags, deadline_ns, index, pad]
    );
    abi_struct!(
        f,
        uapi::SemExportSyncFile,
        "radiance_sem_export_sync_file",
        [handle, flags, value, fd, pad]
    );
    abi_struct!(
        f,
        uapi::SemImportSyncFile,
        "radiance_sem_import_sync_file",
        [handle, fd, value, flags, pad]
    );
    abi_struct!(
        f,
        uapi::SemImportHandle,
        "radiance_sem_import_handle",
        [fd, handle, flags, new_handle, value_offset]
    );
    abi_struct!(
        f,
        uapi::QueueControl,
        "radiance_queue_control",
        [
            write_index,
            read_index,
            needs_kick,
            status,
            error,
            err_code,
            fault_index,
            err_pc,
            err_thread,
        ]
    );
    abi_struct!(
        f,
        uapi::QueueCreate,
        "radiance_queue_create",
        [
            ring_packets,
            priority,
            flags,
            queue_id,
            ring_offset,
            control_offset,
        ]
    );
    abi_struct!(
        f,
        uapi::QueueDestroy,
        "radiance_queue_destroy",
        [queue_id, pad]
    );
    abi_struct!(f, uapi::QueueKick, "radiance_queue_kick", [queue_id, pad]);
    abi_struct!(
        f,
        uapi::UserDeclare,
        "radiance_user_declare",
        [
            flags,
            dialect,
            streams,
            stream_depth,
            cores,
            warps_per_core,
            threads_per_warp,
            builtins,
            vram_size,
            caps,
            name,
            device_index,
            pad,
            bytes_per_s,
            threads_per_s
        ]
    );
    abi_struct!(
        f,
        uapi::UserHostAccess,
        "radiance_user_host_access",
        [addr, user_ptr, len, flags]
    );
    abi_struct!(f, uapi::UserReset, "radiance_user_reset", [flags, pad]);
    abi_struct!(
        f,
        uapi::UserRetire,
        "radiance_user_retire",
        [streams, flags]
    );
    abi_struct!(
        f,
        uapi::UserProgress,
        "radiance_user_progress",
        [stream, flags, units]
    );
    abi_struct!(
        f,
        uapi::UserInlineBlock,
        "radiance_user_inline_block",
        [len, pad]
    );
    abi_struct!(
        f,
        uapi::LaunchDesc,
        "radiance_launch_desc",
        [
            start_pc,
            kernel_pc,
            grid,
            block,
            shmem_per_block,
            regs_per_thread,
            flags,
            pad,
            params,
            params_size,
            params_offset,
            stack,
            pad1,
            stack_offset,
            stack_size,
            tls,
            pad2,
            tls_offset,
            tls_size,
        ]
    );
    abi_struct!(
        f,
        uapi::QueueQuery,
        "radiance_queue_query",
        [
            queue_id,
            pad,
            read_index,
            submit_index,
            status,
            error,
            fault_index,
            err_code,
            err_pc,
            err_thread,
            pad1,
        ]
    );
    abi_struct!(
        f,
        uapi::PacketHeader,
        "radiance_packet_header",
        [kind, flags, reserved, pad]
    );
    abi_struct!(f, uapi::Packet, "radiance_packet", [header, body]);
    abi_struct!(
        f,
        uapi::FillPacket,
        "radiance_fill_packet",
        [
            header,
            dst,
            pattern_size,
            dst_offset,
            size,
            pattern,
            pad,
            reserved,
        ]
    );
    abi_struct!(
        f,
        uapi::CopyPacket,
        "radiance_copy_packet",
        [header, src, dst, src_offset, dst_offset, size, reserved]
    );
    abi_struct!(
        f,
        uapi::LaunchPacket,
        "radiance_launch_packet",
        [
            header,
            block,
            pad,
            block_offset,
            block_size,
            printf,
            pad2,
            printf_offset,
            printf_size,
            reserved,
        ]
    );
    abi_struct!(
        f,
        uapi::PrintfRing,
        "radiance_printf_ring",
        [lock, head, tail, limit]
    );
    abi_struct!(
        f,
        uapi::LaunchBlock,
        "radiance_launch_block",
        [
            entry_pc,
            grid,
            block,
            regs_per_thread,
            flags,
            pad,
            shmem_per_block,
            printf_host_addr,
            binary_size,
            params_size,
            pad1,
        ]
    );
    abi_struct!(
        f,
        uapi::SemaphorePacket,
        "radiance_semaphore_packet",
        [header, handle, skip, value, reserved]
    );
    abi_struct!(
        f,
        uapi::CounterPacket,
        "radiance_counter_packet",
        [header, dst, counter, dst_offset, reserved]
    );
    let consts: &[(&str, u64)] = &[
        (
            "RADIANCE_PACKET_READ_COUNTER",
            uapi::packet_kind::READ_COUNTER as u64,
        ),
        (
            "RADIANCE_PACKET_TIMESTAMP",
            uapi::packet_kind::TIMESTAMP as u64,
        ),
        ("RADIANCE_COUNTER_COMMANDS", uapi::counter::COMMANDS as u64),
        ("RADIANCE_COUNTER_THREADS", uapi::counter::THREADS as u64),
        ("RADIANCE_COUNTER_CLOCK_NS", uapi::counter::CLOCK_NS as u64),
        (
            "RADIANCE_PACKET_WAIT_SEMAPHORE",
            uapi::packet_kind::WAIT_SEMAPHORE as u64,
        ),
        (
            "RADIANCE_PACKET_SIGNAL_SEMAPHORE",
            uapi::packet_kind::SIGNAL_SEMAPHORE as u64,
        ),
        (
            "RADIANCE_PACKET_LAUNCH_DESC",
            uapi::packet_kind::LAUNCH_DESC as u64,
        ),
        (
            "RADIANCE_IOCTL_QUEUE_CREATE",
            uapi::IOCTL_QUEUE_CREATE as u64,
        ),
        (
            "RADIANCE_IOCTL_QUEUE_DESTROY",
            uapi::IOCTL_QUEUE_DESTROY as u64,
        ),
        ("RADIANCE_IOCTL_QUEUE_QUERY", uapi::IOCTL_QUEUE_QUERY as u64),
        ("RADIANCE_IOCTL_QUEUE_KICK", uapi::IOCTL_QUEUE_KICK as u64),
        (
            "RADIANCE_IOCTL_USER_DECLARE",
            uapi::IOCTL_USER_DECLARE as u64,
        ),
        (
            "RADIANCE_IOCTL_USER_HOST_READ",
            uapi::IOCTL_USER_HOST_READ as u64,
        ),
        (
            "RADIANCE_IOCTL_USER_HOST_WRITE",
            uapi::IOCTL_USER_HOST_WRITE as u64,
        ),
        ("RADIANCE_IOCTL_USER_RESET", uapi::IOCTL_USER_RESET as u64),
        ("RADIANCE_IOCTL_USER_RETIRE", uapi::IOCTL_USER_RETIRE as u64),
        (
            "RADIANCE_IOCTL_USER_PROGRESS",
            uapi::IOCTL_USER_PROGRESS as u64,
        ),
        (
            "RADIANCE_USER_HOST_ACCESS_MAX",
            uapi::USER_HOST_ACCESS_MAX as u64,
        ),
        ("RADIANCE_BACKEND_USER", uapi::backend::USER as u64),
        ("RADIANCE_GLUON_ERR_RESET", uapi::gluon_err::RESET as u64),
        ("RADIANCE_QUEUE_MIN_PACKETS", uapi::QUEUE_MIN_PACKETS as u64),
        ("RADIANCE_QUEUE_MAX_PACKETS", uapi::QUEUE_MAX_PACKETS as u64),
        ("RADIANCE_QUEUE_ACTIVE", uapi::queue_status::ACTIVE as u64),
        ("RADIANCE_QUEUE_FAULTED", uapi::queue_status::FAULTED as u64),
        ("RADIANCE_GLUON_ERR_BAD_PC", uapi::gluon_err::BAD_PC as u64),
        (
            "RADIANCE_GLUON_ERR_BAD_ADDRESS",
            uapi::gluon_err::BAD_ADDRESS as u64,
        ),
        (
            "RADIANCE_GLUON_ERR_BAD_COMMAND",
            uapi::gluon_err::BAD_COMMAND as u64,
        ),
        ("RADIANCE_GLUON_ERR_DMA", uapi::gluon_err::DMA as u64),
        (
            "RADIANCE_GLUON_ERR_BAD_LAUNCH",
            uapi::gluon_err::BAD_LAUNCH as u64,
        ),
        ("RADIANCE_PACKET_SIZE", uapi::PACKET_SIZE as u64),
        ("RADIANCE_PACKET_NOP", uapi::packet_kind::NOP as u64),
        ("RADIANCE_PACKET_FENCE", uapi::packet_kind::FENCE as u64),
        ("RADIANCE_PACKET_FILL", uapi::packet_kind::FILL as u64),
        ("RADIANCE_PACKET_COPY", uapi::packet_kind::COPY as u64),
        ("RADIANCE_PACKET_LAUNCH", uapi::packet_kind::LAUNCH as u64),
        (
            "RADIANCE_PACKET_BARRIER",
            uapi::packet_flags::BARRIER as u64,
        ),
        (
            "RADIANCE_PACKET_SKIP_ON_FAILURE",
            uapi::packet_flags::SKIP_ON_FAILURE as u64,
        ),
        (
            "RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE",
            uapi::IOCTL_SEM_IMPORT_SYNC_FILE as u64,
        ),
        (
            "RADIANCE_IOCTL_SEM_IMPORT_HANDLE",
            uapi::IOCTL_SEM_IMPORT_HANDLE as u64,
        ),
        (
            "RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE",
            uapi::IOCTL_SEM_EXPORT_SYNC_FILE as u64,
        ),
        ("RADIANCE_IOCTL_SEM_CREATE", uapi::IOCTL_SEM_CREATE as u64),
        ("RADIANCE_IOCTL_SEM_DESTROY", uapi::IOCTL_SEM_DESTROY as u64),
        ("RADIANCE_IOCTL_SEM_SIGNAL", uapi::IOCTL_SEM_SIGNAL as u64),
        ("RADIANCE_IOCTL_SEM_QUERY", uapi::IOCTL_SEM_QUERY as u64),
        ("RADIANCE_IOCTL_SEM_FAIL", uapi::IOCTL_SEM_FAIL as u64),
        ("RADIANCE_IOCTL_SEM_WAIT", uapi::IOCTL_SEM_WAIT as u64),
        ("RADIANCE_SEM_FAILED_VALUE", uapi::SEM_FAILED_VALUE),
        (
            "RADIANCE_SEM_WAIT_MAX_POINTS",
            uapi::SEM_WAIT_MAX_POINTS as u64,
        ),
        ("RADIANCE_SEM_WAIT_ANY", uapi::sem_wait_flags::ANY as u64),
        (
            "RADIANCE_USER_DECLARE_READ_WAITS",
            uapi::user_declare_flags::READ_WAITS as u64,
        ),
        (
            "RADIANCE_USER_DECLARE_TAKES_DOORBELLS",
            uapi::user_declare_flags::TAKES_DOORBELLS as u64,
        ),
        (
            "RADIANCE_USER_DECLARE_INLINE_BLOCKS",
            uapi::user_declare_flags::INLINE_BLOCKS as u64,
        ),
        (
            "RADIANCE_USER_DECLARE_REPORTS_PROGRESS",
            uapi::user_declare_flags::REPORTS_PROGRESS as u64,
        ),
        (
            "RADIANCE_USER_INLINE_BLOCK_MAX",
            uapi::USER_INLINE_BLOCK_MAX as u64,
        ),
        ("RADIANCE_IOCTL_BO_EXPORT", uapi::IOCTL_BO_EXPORT as u64),
        ("RADIANCE_IOCTL_BO_IMPORT", uapi::IOCTL_BO_IMPORT as u64),
        ("RADIANCE_PLACEMENT_HOST", uapi::placement::HOST as u64),
        (
            "RADIANCE_EXPORT_CLOEXEC",
            uapi::export_flags::CLOEXEC as u64,
        ),
        ("RADIANCE_IOCTL_BO_CREATE", uapi::IOCTL_BO_CREATE as u64),
        ("RADIANCE_IOCTL_BO_DESTROY", uapi::IOCTL_BO_DESTROY as u64),
        ("RADIANCE_IOCTL_BO_INFO", uapi::IOCTL_BO_INFO as u64),
        ("RADIANCE_PLACEMENT_VRAM", uapi::placement::VRAM as u64),
        ("RADIANCE_BO_MAPPABLE", uapi::bo_flags::MAPPABLE as u64),
        (
            "RADIANCE_BO_FIXED_ADDRESS",
            uapi::bo_flags::FIXED_ADDRESS as u64,
        ),
        ("RADIANCE_IOCTL_GET_INFO", uapi::IOCTL_GET_INFO as u64),
        ("RADIANCE_ABI_MAJOR", uapi::ABI_MAJOR as u64),
        ("RADIANCE_ABI_MINOR", uapi::ABI_MINOR as u64),
        ("RADIANCE_IOCTL_TYPE", uapi::IOCTL_TYPE as u64),
        ("RADIANCE_MAX_DEVICES", uapi::MAX_DEVICES as u64),
        ("RADIANCE_BACKEND_EMULATED", uapi::backend::EMULATED as u64),
        ("RADIANCE_BACKEND_PCI", uapi::backend::PCI as u64),
        ("RADIANCE_BACKEND_PLATFORM", uapi::backend::PLATFORM as u64),
        ("RADIANCE_NAME_LEN", uapi::NAME_LEN as u64),
        ("RADIANCE_GET_INFO_SIZE_V1", uapi::sizes::GET_INFO[0] as u64),
        (
            "RADIANCE_GET_INFO_SIZE_V1_4",
            uapi::sizes::GET_INFO[1] as u64,
        ),
        (
            "RADIANCE_GET_INFO_SIZE_V1_8",
            uapi::sizes::GET_INFO[2] as u64,
        ),
        (
            "RADIANCE_USER_DECLARE_SIZE_V1_9",
            uapi::sizes::USER_DECLARE[0] as u64,
        ),
        ("RADIANCE_BUILTIN_FILL_U32", uapi::builtin::FILL_U32 as u64),
        ("RADIANCE_BUILTIN_COPY_U32", uapi::builtin::COPY_U32 as u64),
        (
            "RADIANCE_BUILTIN_VECADD_U32",
            uapi::builtin::VECADD_U32 as u64,
        ),
        ("RADIANCE_BUILTIN_SPIN", uapi::builtin::SPIN as u64),
        (
            "RADIANCE_BUILTIN_PRINTF_U32",
            uapi::builtin::PRINTF_U32 as u64,
        ),
        ("RADIANCE_BUILTIN_START", uapi::builtin::START as u64),
        (
            "RADIANCE_DIALECT_GLUON_SIM_16",
            uapi::dialect::GLUON_SIM_16 as u64,
        ),
        ("RADIANCE_DIALECT_GLUON_24", uapi::dialect::GLUON_24 as u64),
        ("RADIANCE_CAP_SET", uapi::caps::SET),
        ("RADIANCE_CAP_FENCE", uapi::caps::FENCE),
        ("RADIANCE_CAP_WAIT", uapi::caps::WAIT),
        ("RADIANCE_CAP_COPY_D2D", uapi::caps::COPY_D2D),
        ("RADIANCE_CAP_COUNTERS", uapi::caps::COUNTERS),
        ("RADIANCE_CAP_SUBWORD", uapi::caps::SUBWORD),
        ("RADIANCE_CAP_VRAM_MAPPABLE", uapi::caps::VRAM_MAPPABLE),
    ];
    for &(name, rust) in consts {
        f.push(Fact {
            c_expr: format!("(unsigned long long)({name})"),
            rust,
        });
    }
    f
}

/// Compiles and runs a C program that prints each fact's C value, one a line.
fn c_values(facts: &[Fact]) -> Vec<u64> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let src = dir.join("c_header_check.c");
    let exe = dir.join("c_header_check");
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include \"radiance.h\"\nint main(void) {\n",
    );
    for fact in facts {
        writeln!(
            c,
            "\tprintf(\"%llu\\n\", (unsigned long long)({}));",
            fact.c_expr
        )
        .unwrap();
    }
    c.push_str("\treturn 0;\n}\n");
    std::fs::write(&src, c).unwrap();

    let include = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(status.success(), "the C header does not compile");
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

#[test]
fn c_header_matches_rust() {
    let facts = facts();
    let c = c_values(&facts);
    assert_eq!(c.len(), facts.len());
    let mismatches: BTreeMap<_, _> = facts
        .iter()
        .zip(&c)
        .filter(|(f, c)| f.rust != **c)
        .map(|(f, c)| (f.c_expr.clone(), (f.rust, *c)))
        .collect();
    assert!(
        mismatches.is_empty(),
        "C header and Rust ABI disagree (rust, c): {mismatches:#?}"
    );
}

#[test]
fn ioctl_numbers_decode() {
    let cmd = uapi::IoctlCmd::decode(uapi::IOCTL_GET_INFO);
    assert_eq!(cmd.ty, uapi::IOCTL_TYPE);
    assert_eq!(cmd.nr, uapi::nr::GET_INFO);
    assert_eq!(cmd.size, size_of::<uapi::GetInfo>());
    assert_eq!(cmd.dir, uapi::IOC_READ | uapi::IOC_WRITE);
}
