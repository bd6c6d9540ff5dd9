// SPDX-License-Identifier: GPL-2.0

//! Host memory for HOST buffer objects: pinned system pages, DMA-mapped for
//! the device with its 32-bit mask. The scatter-gather layout is kept: the
//! device sees the memory as segments of DMA addresses, and copies to or from
//! it are split at segment boundaries.

use kernel::{
    bindings,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::Arc,
};

use crate::{
    device::Device,
    sg_table::DmaSgTable, //
};

/// Pinned, DMA-mapped host pages.
pub(crate) struct HostMem {
    // Fields drop in order: the DMA mapping goes before the pages.
    dma: KBox<DmaSgTable>,
    pages: KVec<Page>,
    device: Arc<Device>,
}

impl HostMem {
    /// `size` bytes (a multiple of the page size), zeroed, counted against
    /// the device's pinned-memory limit (ENOMEM beyond it).
    pub(crate) fn new(device: Arc<Device>, size: u64) -> Result<Self> {
        let count = usize::try_from(size / PAGE_SIZE as u64)?;
        device.pin_host(size)?;
        // Give the bytes back if anything below fails.
        let unpin = kernel::types::ScopeGuard::new(|| device.unpin_host(size));
        let mut pages = KVec::with_capacity(count, GFP_KERNEL)?;
        let mut raw = KVec::with_capacity(count, GFP_KERNEL)?;
        for _ in 0..count {
            let page = Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?;
            raw.push(page.as_ptr(), GFP_KERNEL)?;
            pages.push(page, GFP_KERNEL)?;
        }
        // SAFETY: the pages are owned by `pages`, which the returned object
        // keeps, and its field order drops the table first.
        let dma = unsafe {
            DmaSgTable::new(
                device.hw().dma_device(),
                &mut raw,
                size as usize,
                bindings::dma_data_direction::DMA_BIDIRECTIONAL,
            )?
        };
        unpin.dismiss();
        Ok(Self { dma, pages, device })
    }

    /// The device's view: `(DMA address, length)` segments, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.dma.segments()
    }

    /// The pages, in order.
    pub(crate) fn pages(&self) -> &[Page] {
        &self.pages
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        self.device.unpin_host((self.pages.len() * PAGE_SIZE) as u64);
    }
}
