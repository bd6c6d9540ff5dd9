// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `kmod` backend of the HAL: a `/dev/radianceN` device behind the
//! traits of `backend.rs`, over the device node's ioctl wrappers
//! ([`crate::node`]).
//!
//! Documentation/design/libradiance.md (`kmod/mod.rs`) has the rest of its story.

mod buffer;
mod device;
mod queue;
mod semaphore;
mod shadow;

pub(crate) use device::KmodDevice;
