// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `hsa:N` backend: the HAL over ROCr, AMD's HSA runtime, and through it
//! the amdgpu kernel driver's compute interface (KFD, `/dev/kfd`), built
//! the way IREE's native AMDGPU HAL is. ROCr is loaded at run time from
//! `libhsa-runtime64.so.1` (`sys.rs` says where else it looks); a machine
//! without it, or without `/dev/kfd`, reports why with status UNAVAILABLE
//! when `hsa:N` is opened.
//!
//! Device → GPU agent N (in ROCr's order, counting GPUs only) with its
//! coarse-grained global pool for Device buffers, and the CPU agent's
//! fine-grained pool (made accessible to the GPU) for HostVisible buffers
//! and its kernarg pool for kernel arguments and update staging. Queue → an
//! AQL queue on the GPU agent; every command is a kernel dispatch packet
//! (the built-ins of `builtins.cl`, embedded as code objects per GPU
//! generation and loaded with the code-object reader into an executable;
//! fill, copy and update included), written body first and header last
//! (`packet.rs`). Timeline semaphore → a payload kept on the host, and per
//! queue one epoch signal that the packet processor decrements when a
//! submission's last packet completes; a notification ring per queue maps
//! epochs to the (semaphore, value) pairs they signal, drained by the
//! device's one completion thread (`epoch.rs`, `semaphore.rs`). A wait on
//! another queue's work is an AMD barrier-value packet on that queue's epoch
//! signal; a wait nobody has promised yet is held on the host until it is
//! (`queue.rs`). Memory is addressed by HAL users through 32-bit device
//! addresses (`native_launch.rs`), as on the cuda backend.
//!
//! DMA-buf: import through `hsa_amd_interop_map_buffer` (every ROCr);
//! export where the loaded ROCr has `hsa_amd_portable_export_dmabuf` (6.0
//! and later), decided by the symbol's presence.
//!
//! Layers: `sys` (types, packets and the symbol table) → `result` (calls
//! returning `Result`) → the safe types of the other files.
//!
//! Never run on an AMD GPU: everything past `hsa_init`. What is tested
//! here is listed in Documentation/todo.md.

mod buffer;
mod device;
mod epoch;
mod packet;
mod queue;
mod result;
mod semaphore;
pub mod sys;

pub(crate) use device::{enumerate, HsaDevice};
pub use result::{HsaError, KFD};

#[cfg(test)]
mod tests {
    use crate::{Device, StatusCode};

    /// Without ROCr or without `/dev/kfd` (CI, the build machine) `hsa:0`
    /// reports which; with both, it opens or names the missing GPU.
    #[test]
    fn open_reports_a_missing_runtime_kfd_or_gpu() {
        match Device::open("hsa:0") {
            Ok(device) => assert_eq!(device.info().backend, "hsa"),
            Err(e) if e.status() == StatusCode::Unavailable => {
                let text = e.to_string();
                assert!(text.starts_with("hsa:0: ROCr"), "{text}");
                if std::path::Path::new(super::KFD).exists() {
                    eprintln!("skipping the rest: {text}");
                } else if text.contains("not found") {
                    // No libhsa-runtime64 on this machine.
                    eprintln!("skipping the rest: {text}");
                } else {
                    assert!(text.contains("/dev/kfd is missing"), "{text}");
                    assert!(text.contains("HSA_STATUS_ERROR_OUT_OF_RESOURCES"), "ROCr's status string: {text}");
                }
            }
            Err(e) => assert_eq!(e.status(), StatusCode::NotFound, "{e}"),
        }
    }

    #[test]
    fn malformed_uris_are_refused_before_loading_the_runtime() {
        for uri in ["hsa:", "hsa:x", "hsa:-1", "hsa:0x1"] {
            let e = Device::open(uri).err().map(|e| e.status());
            assert_eq!(e, Some(StatusCode::InvalidArgument), "{uri}");
        }
    }
}
