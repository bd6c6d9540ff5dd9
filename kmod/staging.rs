// SPDX-License-Identifier: GPL-2.0

//! Staging pages: launch blocks on their way to the device, and host pages
//! the kernel uses to make up what a device lacks (fill patterns, bounces).
//!
//! Gluon DMAs a launch block from host memory. The kernel copies each block
//! out of the process's buffer into a page of its own first, so that the
//! device reads a block the process can no longer change, with the printf
//! address the kernel set. Those pages are pinned and DMA-mapped once, when
//! the device is created: the scheduler stages blocks under its lock, where
//! nothing may pin or map memory. A fill on a device without MEM SET
//! copies from a page full of its pattern, and a VRAM-to-VRAM copy on a
//! device that cannot do one bounces through a page.
//!
//! A slot is the device's from [`Staging::take`] until the
//! [`Slot`] is dropped: when its launch completes, or a reset drops it.
//! When every slot is taken, launches wait for one to complete.

use kernel::{
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use crate::{
    host_mem::HostMem,
    hw::{
        host_windows::Window,
        open_window,
        Gluon, //
    },
    sg_table::{
        pieces,
        Handover, //
    },
};

/// Launch blocks staged at once, at most. The emulated device runs one
/// launch at a time; a few more keep it fed.
const SLOTS: usize = 16;

/// The pages and which of them are taken.
struct Pages {
    /// The device's window on `mem` (closed first, while it is mapped).
    _window: Option<Window>,
    mem: HostMem,
    /// Bit `i` set: slot `i` is taken.
    taken: u32,
}

/// One device's staging pages.
#[pin_data]
pub(crate) struct Staging {
    #[pin]
    pages: Mutex<Pages>,
    /// Slot `i`'s DMA address: one page, one piece, below 4 GiB.
    dma: [u32; SLOTS],
}

impl Staging {
    /// Pins and maps the pages for `hw`'s device, which DMAs from them.
    pub(crate) fn new(hw: &dyn Gluon) -> Result<Arc<Self>> {
        let mem = HostMem::new(hw.dma_device(), (SLOTS * PAGE_SIZE) as u64)?;
        let mut dma = [0u32; SLOTS];
        for (i, addr) in dma.iter_mut().enumerate() {
            let mut found = None;
            pieces(
                mem.segments(),
                (i * PAGE_SIZE) as u64,
                PAGE_SIZE as u64,
                &mut |piece, len| {
                    // A page is never split between segments; if it were, the
                    // device could not read a block from it in one piece.
                    if found.is_some() || len != PAGE_SIZE as u64 {
                        return Err(EINVAL);
                    }
                    found = Some(u32::try_from(piece)?);
                    Ok(())
                },
            )?;
            *addr = found.ok_or(EINVAL)?;
        }
        let window = open_window(hw, mem.segments())?;
        Arc::pin_init(
            try_pin_init!(Self {
                pages <- new_mutex!(
                    Pages {
                        _window: window,
                        mem,
                        taken: 0
                    },
                    "Staging::pages"
                ),
                dma,
            }),
            GFP_KERNEL,
        )
    }

    /// A free slot, or `None` when launches in flight hold them all.
    pub(crate) fn take(this: &Arc<Self>) -> Option<Slot> {
        let mut pages = this.pages.lock();
        let index = pages.taken.trailing_ones() as usize;
        if index >= SLOTS {
            return None;
        }
        pages.taken |= 1 << index;
        Some(Slot {
            staging: this.clone(),
            index,
        })
    }
}

/// A taken slot (one page); given back when dropped.
pub(crate) struct Slot {
    staging: Arc<Staging>,
    index: usize,
}

impl Slot {
    /// The slot's DMA address.
    pub(crate) fn dma_address(&self) -> u32 {
        self.staging.dma[self.index]
    }

    /// The slot's byte range in the staging pages, for `len` bytes at `at`.
    fn range(&self, at: usize, len: usize) -> Result<u64> {
        if at.checked_add(len).is_none_or(|end| end > PAGE_SIZE) || len == 0 {
            return Err(EINVAL);
        }
        Ok((self.index * PAGE_SIZE + at) as u64)
    }

    /// Copies `bytes` into the slot at `at` and hands them to the device.
    pub(crate) fn write(&self, at: usize, bytes: &[u8]) -> Result {
        let offset = self.range(at, bytes.len())?;
        let pages = self.staging.pages.lock();
        pages.mem.write(offset, bytes)?;
        pages
            .mem
            .sync(offset, bytes.len() as u64, Handover::ToDevice)
    }

    /// Takes back what the device wrote at `at` and copies it into `bytes`.
    pub(crate) fn read(&self, at: usize, bytes: &mut [u8]) -> Result {
        let offset = self.range(at, bytes.len())?;
        let pages = self.staging.pages.lock();
        pages
            .mem
            .sync(offset, bytes.len() as u64, Handover::ToCpu)?;
        pages.mem.read(offset, bytes)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.staging.pages.lock().taken &= !(1 << self.index);
    }
}
