// SPDX-License-Identifier: GPL-2.0

//! Raw views of kernel objects, for the few files that call C directly
//! (dma-buf, scatter-gather tables, the emulator's DMA mask): 7.3 keeps
//! `Device::as_raw` private to the kernel crate.

use kernel::{
    bindings,
    device::Device, //
};

/// The `struct device` behind `dev`.
pub(crate) fn device(dev: &Device) -> *mut bindings::device {
    // `Device` is a `repr(transparent)` wrapper of `Opaque<struct device>`,
    // which is `repr(transparent)` over the C struct: same address.
    core::ptr::from_ref(dev).cast_mut().cast()
}
