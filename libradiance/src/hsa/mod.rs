// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `hsa:N` backend: the HAL over ROCr, AMD's HSA runtime, and through it
//! the amdgpu kernel driver's compute interface (KFD, `/dev/kfd`), built
//! the way IREE's native AMDGPU HAL is. ROCr is loaded at run time from
//! `libhsa-runtime64.so.1` (`sys.rs` says where else it looks); a machine
//! without it, or without `/dev/kfd`, reports why with status UNAVAILABLE
//! when `hsa:N` is opened.
//!
//! Documentation/design/libradiance.md (`hsa/mod.rs`) has the rest of its story.

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
