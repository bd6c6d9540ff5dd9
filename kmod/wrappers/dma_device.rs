// SPDX-License-Identifier: GPL-2.0

//! The `struct device` of a Gluon the kernel reaches without a bus: the
//! emulator, or a process's server. Host memory is DMA-mapped for it like
//! for a board, under Gluon's 32-bit host address width.

use kernel::{
    bindings,
    device::{
        Bound,
        Device, //
    },
    error::to_result,
    faux,
    prelude::*,
};

/// A faux device with a 32-bit DMA mask; removed on drop.
pub(crate) struct DmaDevice(faux::Registration);

impl DmaDevice {
    /// Registers `/sys/devices/faux/<name>`; ENOMEM if it cannot.
    pub(crate) fn new(name: &CStr) -> Result<Self> {
        // `faux_device_create` answers every failure with NULL, which 7.3's
        // `faux::Registration` reports as ENODEV. Ours can only be a failed
        // allocation (callers make each name unique, and a faux device
        // without operations has no probe to fail).
        let registration =
            faux::Registration::new(name, None)
                .map_err(|e| if e == ENODEV { ENOMEM } else { e })?;
        let this = Self(registration);
        set_dma_mask_32(this.device())?;
        Ok(this)
    }

    pub(crate) fn device(&self) -> &Device {
        let faux: &faux::Device<Bound> = self.0.as_ref();
        let dev: &Device<Bound> = faux.as_ref();
        dev
    }
}

/// Gives the device a 32-bit DMA mask: it reaches host memory as a board
/// would, through 32-bit DMA addresses. A faux device has no bus code to
/// do this (`dma_coerce_mask_and_coherent` is inline C).
fn set_dma_mask_32(dev: &Device) -> Result {
    let dev = crate::raw::device(dev);
    // Pointing `dma_mask` at the device's own `coherent_dma_mask` is what
    // `dma_coerce_mask_and_coherent` does; both live as long as `dev`.
    // SAFETY: `dev` is a live, registered device that nobody else uses yet.
    unsafe {
        (*dev).dma_mask = &raw mut (*dev).coherent_dma_mask;
        to_result(bindings::dma_set_mask(dev, u64::from(u32::MAX)))?;
        to_result(bindings::dma_set_coherent_mask(dev, u64::from(u32::MAX)))
    }
}
