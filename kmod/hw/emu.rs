// SPDX-License-Identifier: GPL-2.0

//! The emulated Gluon: a software command processor for machines without a
//! Radiance board (QEMU, CI). It has a `struct device` of its own (a faux
//! device) so that it looks like any other device to the driver core.
//!
//! Its VRAM is an array of pages allocated on first use: a page nobody has
//! touched reads as zeros and costs nothing, and scrubbing a whole page just
//! frees it.

use kernel::{
    bindings,
    device::{
        Bound,
        Device, //
    },
    error::to_result,
    faux,
    new_mutex,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    str::CString,
    sync::{
        Arc,
        Mutex, //
    },
};

use super::{
    Gluon,
    HwDesc, //
};
use crate::uapi;

/// The emulated compute shape, a small Radiance configuration.
const CORES: u32 = 4;
const WARPS_PER_CORE: u32 = 8;
const THREADS_PER_WARP: u32 = 16;

/// A software Gluon.
#[pin_data]
pub(crate) struct Emu {
    desc: HwDesc,
    /// VRAM page `i` holds bytes `[i * PAGE_SIZE, (i + 1) * PAGE_SIZE)`;
    /// `None` reads as zeros.
    #[pin]
    vram: Mutex<KVVec<Option<Page>>>,
    /// Gives the emulated device its `struct device`; removed on drop.
    faux: faux::Registration,
}

impl Emu {
    /// Largest emulated VRAM: Gluon addresses are 32-bit.
    pub(crate) const MAX_VRAM: u64 = 1 << 32;

    /// Creates emulated device `index` with `vram_size` bytes of VRAM (a
    /// multiple of the page size).
    pub(crate) fn new(index: u32, vram_size: u64) -> Result<Arc<Self>> {
        let name = CString::try_from_fmt(fmt!("radiance-emu{index}"))?;
        let faux = faux::Registration::new(&name, None)?;
        set_dma_mask_32(device_of(&faux))?;
        let pages = usize::try_from(vram_size / PAGE_SIZE as u64)?;
        let mut vram = KVVec::with_capacity(pages, GFP_KERNEL)?;
        for _ in 0..pages {
            vram.push(None, GFP_KERNEL)?;
        }
        let desc = HwDesc {
            backend: uapi::backend::EMULATED,
            name: "Radiance (emulated Gluon)",
            cores: CORES,
            warps_per_core: WARPS_PER_CORE,
            threads_per_warp: THREADS_PER_WARP,
            vram_size,
        };
        Arc::pin_init(
            pin_init!(Self { desc, vram <- new_mutex!(vram, "Emu::vram"), faux }),
            GFP_KERNEL,
        )
    }
}

/// The emulated device's `struct device`.
fn device_of(faux: &faux::Registration) -> &Device {
    let faux: &faux::Device<Bound> = faux.as_ref();
    let dev: &Device<Bound> = faux.as_ref();
    dev
}

/// Gives the emulated device a 32-bit DMA mask: the emulator reaches host
/// memory as a board would, through 32-bit DMA addresses. A faux device has
/// no bus code to do this (`dma_coerce_mask_and_coherent` is inline C).
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

impl Gluon for Emu {
    fn desc(&self) -> &HwDesc {
        &self.desc
    }

    fn vram_zero(&self, addr: u64, len: u64) {
        let page = PAGE_SIZE as u64;
        let mut vram = self.vram.lock();
        let mut at = addr;
        while at < addr + len {
            let offset = at % page;
            let n = (page - offset).min(addr + len - at);
            let slot = vram.get_mut((at / page) as usize);
            match slot {
                // A whole page: give it back; it reads as zeros from now on.
                Some(slot) if n == page => *slot = None,
                Some(Some(p)) => {
                    // Other bytes of the page may be in use, but none of these:
                    // no overlap. The bounds lie inside the page, so the
                    // bounds check cannot fail.
                    // SAFETY: the caller owns `[addr, addr + len)`.
                    let _ = unsafe { p.fill_zero_raw(offset as usize, n as usize) };
                }
                // Never touched, or past the end (the allocator never hands
                // that out): nothing to scrub.
                Some(None) | None => {}
            }
            at += n;
        }
    }

    fn vram_pages(&self, addr: u64, len: u64, each: &mut dyn FnMut(&Page) -> Result) -> Result {
        let page = PAGE_SIZE as u64;
        let first = usize::try_from(addr / page)?;
        let count = usize::try_from(len / page)?;
        let mut vram = self.vram.lock();
        let slots = vram.get_mut(first..first + count).ok_or(EINVAL)?;
        for slot in slots {
            let p = match slot {
                Some(p) => p,
                None => slot.insert(Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?),
            };
            each(p)?;
        }
        Ok(())
    }

    fn dma_device(&self) -> &Device {
        device_of(&self.faux)
    }
}
