// SPDX-License-Identifier: GPL-2.0

//! The emulated Gluon: a software command processor for machines without a
//! Radiance board (QEMU, CI). It has a `struct device` of its own (a faux
//! device) so that it looks like any other device to the driver core.
//!
//! Its VRAM is an array of pages allocated on first use: a page nobody has
//! touched reads as zeros and costs nothing, and scrubbing a whole page just
//! frees it.

use kernel::{
    faux,
    mm::virt::VmaMixedMap,
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
    _faux: faux::Registration,
}

impl Emu {
    /// Largest emulated VRAM: Gluon addresses are 32-bit.
    pub(crate) const MAX_VRAM: u64 = 1 << 32;

    /// Creates emulated device `index` with `vram_size` bytes of VRAM (a
    /// multiple of the page size).
    pub(crate) fn new(index: u32, vram_size: u64) -> Result<Arc<Self>> {
        let name = CString::try_from_fmt(fmt!("radiance-emu{index}"))?;
        let faux = faux::Registration::new(&name, None)?;
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
            pin_init!(Self { desc, vram <- new_mutex!(vram, "Emu::vram"), _faux: faux }),
            GFP_KERNEL,
        )
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
                    // SAFETY: the caller owns `[addr, addr + len)`, so nothing
                    // else reads or writes these bytes of the page; other
                    // bytes of it may be in use, but they do not overlap. The
                    // bounds lie inside the page by construction, so the
                    // bounds check cannot fail.
                    let _ = unsafe { p.fill_zero_raw(offset as usize, n as usize) };
                }
                // Never touched, or past the end (the allocator never hands
                // that out): nothing to scrub.
                Some(None) | None => {}
            }
            at += n;
        }
    }

    fn vram_map(&self, vma: &VmaMixedMap, addr: u64) -> Result {
        let first = usize::try_from(addr / PAGE_SIZE as u64)?;
        let mut vram = self.vram.lock();
        for (i, user_addr) in (vma.start()..vma.end()).step_by(PAGE_SIZE).enumerate() {
            let slot = vram.get_mut(first + i).ok_or(EINVAL)?;
            if slot.is_none() {
                *slot = Some(Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?);
            }
            if let Some(page) = slot {
                vma.vm_insert_page(user_addr, page)?;
            }
        }
        Ok(())
    }
}
