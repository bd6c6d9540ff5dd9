// SPDX-License-Identifier: GPL-2.0

//! Host memory for the device: zeroed system pages, DMA-mapped for it with
//! its 32-bit mask. The scatter-gather layout is kept: the device sees the
//! memory as segments of DMA addresses, and copies to or from it are split
//! at segment boundaries.
//!
//! What the memory is for (a HOST buffer object, counted against the
//! device's pinned-memory limit, or the scheduler's own staging) is the
//! owner's business: this file knows only pages and their mapping.
//!
//! The kernel reads and writes the bytes only through [`HostMem::read`] and
//! [`HostMem::write`], under the memory's own lock, so no two Rust accesses
//! race; a process may write its mapping of the pages meanwhile, which only
//! changes the bytes (the device and the process share them by design).

use kernel::{
    bindings,
    device::Device,
    new_mutex,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::Mutex,
};

use crate::sg_table::{
    DmaSgTable,
    Handover, //
};

/// Zeroed, DMA-mapped host pages.
pub(crate) struct HostMem {
    // Fields drop in order: the DMA mapping goes before the pages.
    dma: KBox<DmaSgTable>,
    pages: KVec<Page>,
    /// Held by every Rust access to the pages' bytes.
    bytes: Pin<KBox<Mutex<()>>>,
}

impl HostMem {
    /// `size` bytes (a multiple of the page size), zeroed, mapped for `dev`.
    pub(crate) fn new(dev: &Device, size: u64) -> Result<Self> {
        let count = usize::try_from(size / PAGE_SIZE as u64)?;
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
                dev,
                &mut raw,
                size as usize,
                bindings::dma_data_direction::DMA_BIDIRECTIONAL,
            )?
        };
        let bytes = KBox::pin_init(new_mutex!((), "HostMem::bytes"), GFP_KERNEL)?;
        Ok(Self { dma, pages, bytes })
    }

    /// Bytes.
    pub(crate) fn size(&self) -> u64 {
        (self.pages.len() * PAGE_SIZE) as u64
    }

    /// The device's view: `(DMA address, length)` segments, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.dma.segments()
    }

    /// The pages, in order.
    pub(crate) fn pages(&self) -> &[Page] {
        &self.pages
    }

    /// Copies `dst.len()` bytes at `offset` into `dst` (a process may be
    /// writing them through its mapping: the caller checks what it got).
    pub(crate) fn read(&self, offset: u64, dst: &mut [u8]) -> Result {
        let _bytes = self.bytes.lock();
        let mut done = 0;
        each_page_chunk(offset, dst.len(), self.size(), |page, at, n| {
            let page = self.pages.get(page).ok_or(EINVAL)?;
            let dst = dst.get_mut(done..done + n).ok_or(EINVAL)?;
            // SAFETY: `dst` is valid for `n` writable bytes, and `bytes` is held: no other Rust code
            // reads or writes the pages meanwhile (only `read` and `write` do, under it).
            unsafe { page.read_raw(dst.as_mut_ptr(), at, n)? };
            done += n;
            Ok(())
        })
    }

    /// Copies `src` to `offset`.
    pub(crate) fn write(&self, offset: u64, src: &[u8]) -> Result {
        let _bytes = self.bytes.lock();
        let mut done = 0;
        each_page_chunk(offset, src.len(), self.size(), |page, at, n| {
            let page = self.pages.get(page).ok_or(EINVAL)?;
            let src = src.get(done..done + n).ok_or(EINVAL)?;
            // SAFETY: `src` is valid for `n` bytes, and `bytes` is held: no other Rust code reads or
            // writes the pages meanwhile (only `read` and `write` do, under it).
            unsafe { page.write_raw(src.as_ptr(), at, n)? };
            done += n;
            Ok(())
        })
    }

    /// Hands `[offset, offset + len)` to the device or back to the CPU.
    pub(crate) fn sync(&self, offset: u64, len: u64, to: Handover) -> Result {
        self.dma.sync(offset, len, to)
    }
}

/// Calls `each(page index, offset in page, bytes)` over `len` bytes at
/// `offset` of a `size`-byte run of pages; EINVAL unless all lie inside.
fn each_page_chunk(
    offset: u64,
    len: usize,
    size: u64,
    mut each: impl FnMut(usize, usize, usize) -> Result,
) -> Result {
    if offset.checked_add(len as u64).is_none_or(|end| end > size) {
        return Err(EINVAL);
    }
    let mut done = 0;
    while done < len {
        let at = offset as usize + done;
        let n = (PAGE_SIZE - at % PAGE_SIZE).min(len - done);
        each(at / PAGE_SIZE, at % PAGE_SIZE, n)?;
        done += n;
    }
    Ok(())
}
