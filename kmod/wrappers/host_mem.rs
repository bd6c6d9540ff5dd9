// SPDX-License-Identifier: GPL-2.0

//! Host memory for the device: zeroed system pages, DMA-mapped for it with
//! its 32-bit mask. The scatter-gather layout is kept: the device sees the
//! memory as segments of DMA addresses, and copies to or from it are split
//! at segment boundaries.
//!
//! The pages are taken in physically contiguous blocks where the allocator
//! has them cheaply (up to [`MAX_BLOCK_ORDER`]), each split into pages of
//! their own, so that a segment, and a copy's device command, spans many
//! pages; where memory is fragmented it falls back to smaller blocks, down
//! to single pages.
//!
//! What the memory is for (a HOST buffer object, counted against the
//! device's pinned-memory limit, or the scheduler's own staging) is the
//! owner's business: this file knows only pages and their mapping.
//!
//! The kernel reads and writes the bytes only through [`HostMem::read`] and
//! [`HostMem::write`], under the memory's own lock, so no two Rust accesses
//! race; a process may write its mapping of the pages meanwhile, which only
//! changes the bytes (the device and the process share them by design).

use core::ptr::NonNull;

use kernel::{
    bindings,
    device::Device,
    new_mutex,
    page::{
        BorrowedPage,
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

/// The largest block of contiguous pages asked for: 2 MiB (order 9), the
/// most a copy gains from (a device command per 2 MiB is noise next to
/// the bytes it moves), and no more than the buddy allocator keeps cheaply.
const MAX_BLOCK_ORDER: u32 = 9;

/// One page of host memory, alone or split off a larger block.
///
/// # Invariants
///
/// `page` is an order-0 page that this owns: freed on drop.
struct HostPage {
    page: NonNull<bindings::page>,
}

// SAFETY: a page has no thread affinity; moving its ownership is fine.
unsafe impl Send for HostPage {}
// SAFETY: `&HostPage` only hands out the page pointer, which any thread may use.
unsafe impl Sync for HostPage {}

impl HostPage {
    /// The page, for as long as `self` owns it.
    fn page(&self) -> BorrowedPage<'_> {
        // SAFETY: a valid page, owned by `self` (invariant) and so valid while `self` is borrowed.
        unsafe { BorrowedPage::from_raw(self.page) }
    }
}

impl Drop for HostPage {
    fn drop(&mut self) {
        // SAFETY: an order-0 page this owns (invariant), not used after this.
        unsafe { bindings::__free_pages(self.page.as_ptr(), 0) };
    }
}

/// `count` zeroed pages, in physically contiguous blocks where the
/// allocator has them without reclaim or compaction. The table of them
/// may be larger than kmalloc serves (a 512 MiB BO needs 1 MiB), hence
/// `KVVec`.
fn alloc_pages(count: usize) -> Result<KVVec<HostPage>> {
    let mut pages = KVVec::with_capacity(count, GFP_KERNEL)?;
    let mut order = MAX_BLOCK_ORDER;
    while pages.len() < count {
        let left = count - pages.len();
        while order > 0 && 1usize << order > left {
            order -= 1;
        }
        // A large block only if one is free now: a failure falls back to a
        // smaller order, and later blocks start from there.
        let cheap = if order > 0 {
            bindings::__GFP_NOWARN | (1 << bindings::___GFP_NORETRY_BIT)
        } else {
            0
        };
        let gfp = bindings::GFP_KERNEL | bindings::__GFP_ZERO | cheap;
        // SAFETY: `alloc_pages` may be called with any flags and order from a sleeping context.
        let block = NonNull::new(unsafe { bindings::alloc_pages(gfp, order) });
        let Some(block) = block else {
            if order == 0 {
                return Err(ENOMEM);
            }
            order -= 1;
            continue;
        };
        if order > 0 {
            // SAFETY: `block` is a non-compound block of order `order` just allocated, which
            // `split_page` turns into `1 << order` order-0 pages, each freed on its own.
            unsafe { bindings::split_page(block.as_ptr(), order) };
        }
        let mut dropped = false;
        for i in 0..1usize << order {
            // SAFETY: page `i` of the block is within the `1 << order` contiguous `struct page`s
            // of one buddy block, which the memory map keeps contiguous.
            let page = unsafe { block.add(i) };
            // INVARIANT: an order-0 page of the split block, owned from here on.
            let page = HostPage { page };
            // Within the capacity reserved above (`1 << order <= left`),
            // so every page is taken; one that were not is freed here.
            dropped |= pages.push_within_capacity(page).is_err();
        }
        if dropped {
            return Err(ENOMEM);
        }
    }
    Ok(pages)
}

/// Zeroed, DMA-mapped host pages.
pub(crate) struct HostMem {
    // Fields drop in order: the DMA mapping goes before the pages.
    dma: KBox<DmaSgTable>,
    pages: KVVec<HostPage>,
    /// Held by every Rust access to the pages' bytes.
    /// Lock order: level 7 (Documentation/design/locking.md).
    bytes: Pin<KBox<Mutex<()>>>,
}

impl HostMem {
    /// `size` bytes (a multiple of the page size), zeroed, mapped for `dev`.
    pub(crate) fn new(dev: &Device, size: u64) -> Result<Self> {
        let count = usize::try_from(size / PAGE_SIZE as u64)?;
        let pages = alloc_pages(count)?;
        let mut raw = KVVec::with_capacity(count, GFP_KERNEL)?;
        for page in pages.iter() {
            raw.push(page.page.as_ptr(), GFP_KERNEL)?;
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

    /// Calls `each` with pages `first .. first + count`, in order; EINVAL
    /// past the end.
    pub(crate) fn pages(
        &self,
        first: usize,
        count: usize,
        each: &mut dyn FnMut(&Page) -> Result,
    ) -> Result {
        let end = first.checked_add(count).ok_or(EINVAL)?;
        self.pages
            .get(first..end)
            .ok_or(EINVAL)?
            .iter()
            .try_for_each(|page| each(&page.page()))
    }

    /// Copies `dst.len()` bytes at `offset` into `dst` (a process may be
    /// writing them through its mapping: the caller checks what it got).
    pub(crate) fn read(&self, offset: u64, dst: &mut [u8]) -> Result {
        let _bytes = self.bytes.lock();
        let mut done = 0;
        each_page_chunk(offset, dst.len(), self.size(), |page, at, n| {
            let page = self.pages.get(page).ok_or(EINVAL)?.page();
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
            let page = self.pages.get(page).ok_or(EINVAL)?.page();
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
