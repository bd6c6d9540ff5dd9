// SPDX-License-Identifier: GPL-2.0

//! Buffer objects: VRAM that a process allocated through one file.

use kernel::{
    mm::virt::VmaMixedMap,
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
};

use crate::{
    device::Device,
    uapi,
    vram::{
        VramRange,
        GRANULE, //
    },
};

/// A buffer object. Its VRAM is scrubbed and freed when the last reference
/// goes (its handle, and later its exports and queue packets in flight).
pub(crate) struct Bo {
    device: Arc<Device>,
    /// `Some` until drop.
    range: Option<VramRange>,
    flags: u32,
}

impl Bo {
    /// Allocates a VRAM BO as BO_CREATE asks; `flags` are checked.
    pub(crate) fn new_vram(device: Arc<Device>, size: u64, flags: u32) -> Result<Arc<Self>> {
        // A mappable BO owns whole pages, so a mapping shows nobody else's.
        let align = if flags & uapi::bo_flags::MAPPABLE != 0 { PAGE_SIZE as u64 } else { GRANULE };
        let size = size.checked_next_multiple_of(align).ok_or(EINVAL)?;
        let range = device.vram().alloc(size, align)?;
        // If this allocation fails, dropping the new `Bo` frees the range.
        Ok(Arc::new(Self { device, range: Some(range), flags }, GFP_KERNEL)?)
    }

    pub(crate) fn size(&self) -> u64 {
        self.range.as_ref().map_or(0, VramRange::size)
    }

    /// The raw VRAM address the device uses for byte 0.
    pub(crate) fn device_address(&self) -> u64 {
        self.range.as_ref().map_or(0, VramRange::addr)
    }

    pub(crate) fn flags(&self) -> u32 {
        self.flags
    }

    pub(crate) fn mappable(&self) -> bool {
        self.flags & uapi::bo_flags::MAPPABLE != 0
    }

    /// Maps the first `vma.end() - vma.start()` bytes of the BO into `vma`.
    ///
    /// The mapping holds the pages, not the BO: after BO_DESTROY the VRAM
    /// range is scrubbed and reused while an old mapping keeps showing the
    /// old contents, which are no longer VRAM (the emulator hands the range
    /// fresh pages). So a mapping never shows another process's data.
    pub(crate) fn map(&self, vma: &VmaMixedMap) -> Result {
        let len = (vma.end() - vma.start()) as u64;
        if !self.mappable() || len > self.size() {
            return Err(EINVAL);
        }
        self.device.hw().vram_map(vma, self.device_address())
    }
}

impl Drop for Bo {
    fn drop(&mut self) {
        if let Some(range) = self.range.take() {
            self.device.vram().free(self.device.hw(), range);
        }
    }
}
