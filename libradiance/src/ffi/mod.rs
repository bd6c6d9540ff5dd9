// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The C ABI of `include/libradiance.h`, in IREE's HAL C style: objects are
//! opaque reference-counted handles (`*_retain`/`*_release`), every call
//! returns a `radiance_status_t` (NULL for OK; otherwise the caller frees it),
//! out-parameters come last, and no panic crosses the ABI: every entry point
//! runs inside `catch_unwind` and turns a panic into an INTERNAL status.
//!
//! Handles are `Arc<T>` raw pointers of the public Rust types, so
//! retain/release are the Arc's count.

mod buffer;
mod command;
mod device;
mod device_group;
mod handle;
mod queue;
mod semaphore;
mod status;
mod transport;

// The C header asserts the same sizes (on 64-bit targets), so the two cannot
// drift apart unnoticed.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::size_of;
    assert!(size_of::<command::SemaphoreList>() == 24);
    assert!(size_of::<buffer::BufferParamsDesc>() == 16);
    assert!(size_of::<buffer::MappingDesc>() == 24);
    assert!(size_of::<command::LaunchDesc>() == 64);
    assert!(size_of::<transport::TransportLaunchDesc>() == 64);
    assert!(size_of::<device_group::BuilderDesc>() == 136);
    assert!(size_of::<device_group::EdgeDesc>() == 16);
};
