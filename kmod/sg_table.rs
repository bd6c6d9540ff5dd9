// SPDX-License-Identifier: GPL-2.0

//! An owned scatter-gather table over pages, DMA-mapped for one device.
//!
//! 7.3's `kernel::scatterlist` maps only vmalloc'ed buffers it owns; the
//! driver needs tables over pages owned elsewhere (a host BO's pages, VRAM
//! pages handed to a dma-buf importer), so this is a small wrapper over
//! `sg_alloc_table_from_pages_segment` and `dma_map_sgtable`.

use kernel::{
    bindings,
    device::Device,
    error::to_result,
    prelude::*,
    sync::aref::ARef,
    types::Opaque,
};

/// Hands `len` bytes at DMA address `addr` to the device after the CPU
/// wrote them: where the mapping bounces (swiotlb: a 32-bit device and
/// memory above 4 GiB) this copies them to the bounce buffer, and on a
/// non-coherent platform it writes back caches.
///
/// # Safety
///
/// `[addr, addr + len)` lies in a live streaming mapping for `dev` made
/// with `DMA_BIDIRECTIONAL`.
pub(crate) unsafe fn sync_for_device(dev: &Device, addr: u64, len: u64) {
    let dir = bindings::dma_data_direction::DMA_BIDIRECTIONAL;
    // SAFETY: the caller's promise; `dev` is live.
    unsafe { bindings::__dma_sync_single_for_device(crate::raw::device(dev), addr, len as usize, dir) };
}

/// Hands `len` bytes at DMA address `addr` back to the CPU after the device
/// wrote them (from the bounce buffer, or past stale cache lines).
///
/// # Safety
///
/// As for [`sync_for_device`].
pub(crate) unsafe fn sync_for_cpu(dev: &Device, addr: u64, len: u64) {
    let dir = bindings::dma_data_direction::DMA_BIDIRECTIONAL;
    // SAFETY: the caller's promise; `dev` is live.
    unsafe { bindings::__dma_sync_single_for_cpu(crate::raw::device(dev), addr, len as usize, dir) };
}

/// A `struct sg_table` mapped for `dev`; unmapped and freed on drop.
///
/// `repr(C)` with the table first, so a pointer to the table handed to C
/// (a dma-buf importer) is also a pointer to the whole object.
///
/// # Invariants
///
/// `sgt` is an allocated table, DMA-mapped for `dev` in direction `dir`,
/// over pages that outlive `self`.
#[repr(C)]
pub(crate) struct DmaSgTable {
    sgt: Opaque<bindings::sg_table>,
    dev: ARef<Device>,
    dir: bindings::dma_data_direction,
}

// SAFETY: the table is only changed by `new` and `drop`; the DMA API may be
// called for it from any thread.
unsafe impl Send for DmaSgTable {}
// SAFETY: `&DmaSgTable` only reads the table.
unsafe impl Sync for DmaSgTable {}

impl DmaSgTable {
    /// Builds a table over `size` bytes of `pages` (whole pages, in order)
    /// and maps it for `dev`.
    ///
    /// # Safety
    ///
    /// Every pointer in `pages` is a valid page that stays allocated, and
    /// is not freed or reused, for as long as the returned table exists.
    pub(crate) unsafe fn new(
        dev: &Device,
        pages: &mut [*mut bindings::page],
        size: usize,
        dir: bindings::dma_data_direction,
    ) -> Result<KBox<Self>> {
        let count = u32::try_from(pages.len())?;
        // Built in place, then moved into its box: `struct sg_table` only
        // points outwards (to its entries), so moving it is fine.
        let sgt = Opaque::<bindings::sg_table>::zeroed();
        // SAFETY: `dev` is a live device for the duration of the call.
        let max_segment = match unsafe { bindings::dma_max_mapping_size(crate::raw::device(dev)) } {
            0 => u32::MAX,
            max => u32::try_from(max).unwrap_or(u32::MAX),
        };
        // SAFETY: `sgt` is zeroed memory for a table, `pages` holds `count`
        // valid pages (the caller's promise), and `size` bytes lie in them.
        to_result(unsafe {
            bindings::sg_alloc_table_from_pages_segment(
                sgt.get(),
                pages.as_mut_ptr(),
                count,
                0,
                size,
                max_segment,
                bindings::GFP_KERNEL,
            )
        })?;
        // SAFETY: the table was just allocated and filled; `dev` is live.
        if let Err(e) = to_result(unsafe { bindings::dma_map_sgtable(crate::raw::device(dev), sgt.get(), dir, 0) }) {
            // SAFETY: allocated above, not mapped, used by nobody else.
            unsafe { bindings::sg_free_table(sgt.get()) };
            return Err(e);
        }
        // INVARIANT: allocated and mapped for `dev` in `dir`. If the box
        // cannot be allocated, dropping `Self` unmaps and frees the table.
        Ok(KBox::new(Self { sgt, dev: dev.into(), dir }, GFP_KERNEL)?)
    }

    /// The `(DMA address, length)` of each mapped segment, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        // SAFETY: the table is mapped as long as `self` lives.
        unsafe { segments_of(self.sgt.get()) }
    }

    /// Hands the table to C (a dma-buf importer); get it back with
    /// [`DmaSgTable::from_raw`].
    pub(crate) fn into_raw(this: KBox<Self>) -> *mut bindings::sg_table {
        KBox::into_raw(this).cast()
    }

    /// Takes back a table given out by [`DmaSgTable::into_raw`].
    ///
    /// # Safety
    ///
    /// `sgt` came from `into_raw` and is not used by C any more.
    pub(crate) unsafe fn from_raw(sgt: *mut bindings::sg_table) -> KBox<Self> {
        // SAFETY: `Self` is `repr(C)` with the table first, and the caller
        // promises the pointer came from `into_raw` of a `KBox<Self>`.
        unsafe { KBox::from_raw(sgt.cast()) }
    }
}

/// The `(DMA address, length)` of each mapped segment of a raw table.
///
/// # Safety
///
/// `sgt` is a DMA-mapped table that stays mapped for `'a`.
pub(crate) unsafe fn segments_of<'a>(sgt: *mut bindings::sg_table) -> impl Iterator<Item = (u64, u64)> + 'a {
    // SAFETY: the caller's promise.
    let table = unsafe { kernel::scatterlist::SGTable::from_raw(sgt) };
    table.iter().map(|e| (e.dma_address(), e.dma_len()))
}

impl Drop for DmaSgTable {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the table is allocated and mapped
        // for `dev` in `dir`; nothing uses it after this.
        unsafe {
            bindings::dma_unmap_sgtable(crate::raw::device(&self.dev), self.sgt.get(), self.dir, 0);
            bindings::sg_free_table(self.sgt.get());
        }
    }
}
