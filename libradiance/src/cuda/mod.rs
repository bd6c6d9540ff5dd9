// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `cuda:N` backend: the HAL over NVIDIA's CUDA driver API, loaded at
//! run time from `libcuda.so.1` (a machine without it reports "CUDA driver
//! not found" with status UNAVAILABLE when `cuda:N` is opened).
//!
//! Documentation/design/libradiance.md (`cuda/mod.rs`) has the rest of its story.

mod buffer;
mod context;
mod device;
mod graph;
mod module;
mod queue;
mod result;
mod semaphore;
pub mod sys;

pub(crate) use device::CudaDevice;
pub use module::{BUILTINS_PTX, BUILTIN_KERNELS};
pub use result::CudaError;

#[cfg(test)]
mod tests {
    use crate::{Device, StatusCode};

    /// Without a driver (CI, the build machine) `cuda:0` reports it; with one,
    /// it opens or names the missing device.
    #[test]
    fn open_reports_a_missing_driver_or_device() {
        match Device::open("cuda:0") {
            Ok(device) => assert_eq!(device.info().backend, "cuda"),
            Err(e) if e.status() == StatusCode::Unavailable => {
                assert!(e.to_string().contains("CUDA driver not found"), "{e}");
                eprintln!("skipping the rest: {e}");
            }
            Err(e) => assert_eq!(e.status(), StatusCode::NotFound, "{e}"),
        }
    }

    #[test]
    fn malformed_uris_are_refused_before_loading_the_driver() {
        for uri in ["cuda:", "cuda:x", "cuda:-1"] {
            let e = Device::open(uri).err().map(|e| e.status());
            assert_eq!(e, Some(StatusCode::InvalidArgument), "{uri}");
        }
    }
}
