// SPDX-License-Identifier: GPL-2.0

//! An owned scatter-gather table over pages, DMA-mapped for one device.
//!
//! 7.3's `kernel::scatterlist` maps only vmalloc'ed buffers it owns; the
//! driver needs tables over pages owned elsewhere (a host BO's pages, VRAM
//! pages handed to a dma-buf importer), so this is a small wrapper over
//! `sg_alloc_table_from_pages_segment` and `dma_map_sgtable`, plus
//! bounds-checked DMA syncs over a table's byte range, so that no caller
//! handles a raw DMA address to sync it.

use kernel::{
    bindings, device::Device, error::to_result, prelude::*, sync::aref::ARef, types::Opaque,
};

/// Which way a DMA sync hands memory over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handover {
    /// To the device, after the CPU wrote it: where the mapping bounces
    /// (swiotlb: a 32-bit device and memory above 4 GiB) this copies it to
    /// the bounce buffer; on a non-coherent platform it writes back caches.
    ToDevice,
    /// Back to the CPU, after the device wrote it (from the bounce buffer,
    /// or past stale cache lines).
    ToCpu,
}

/// Calls `each(dma_address, length)` for the pieces of `[offset, offset +
/// len)` of a buffer laid out as `segments` (`(DMA address, length)`, in
/// order), in order. EINVAL if the range is empty or runs past the end.
pub(crate) fn pieces(
    segments: impl Iterator<Item = (u64, u64)>,
    offset: u64,
    len: u64,
    each: &mut dyn FnMut(u64, u64) -> Result,
) -> Result {
    let end = offset.checked_add(len).filter(|_| len > 0).ok_or(EINVAL)?;
    let mut seg_start = 0u64;
    for (dma, seg_len) in segments {
        let (from, to) = (offset.max(seg_start), end.min(seg_start + seg_len));
        if from < to {
            each(dma + (from - seg_start), to - from)?;
        }
        seg_start += seg_len;
        if seg_start >= end {
            return Ok(());
        }
    }
    Err(EINVAL)
}

/// Syncs `[offset, offset + len)` of a mapped table, checked against its
/// length (EINVAL past the end).
///
/// # Safety
///
/// `sgt` is DMA-mapped for `dev` in direction `dir` and stays mapped for
/// the duration of the call.
unsafe fn sync_range(
    dev: &Device,
    sgt: *mut bindings::sg_table,
    dir: bindings::dma_data_direction,
    offset: u64,
    len: u64,
    to: Handover,
) -> Result {
    // SAFETY: the caller's promise.
    let segments = unsafe { segments_of(sgt) };
    let dev = crate::raw::device(dev);
    pieces(segments, offset, len, &mut |addr, n| {
        // SAFETY: `[addr, addr + n)` lies in one segment of the table (`pieces` checked), which the
        // caller promises is mapped for `dev` in `dir`; `dev` is live while borrowed.
        unsafe {
            match to {
                Handover::ToDevice => {
                    bindings::__dma_sync_single_for_device(dev, addr, n as usize, dir)
                }
                Handover::ToCpu => bindings::__dma_sync_single_for_cpu(dev, addr, n as usize, dir),
            }
        }
        Ok(())
    })
}

/// A mapped table that someone else owns (a dma-buf exporter), borrowed
/// for as long as it stays mapped.
///
/// # Invariants
///
/// `sgt` is DMA-mapped for `dev` in direction `dir` for as long as `self`
/// lives.
pub(crate) struct MappedTable {
    sgt: *mut bindings::sg_table,
    dev: ARef<Device>,
    dir: bindings::dma_data_direction,
}

// SAFETY: only read, and the DMA API may be called for it from any thread.
unsafe impl Send for MappedTable {}
// SAFETY: `&MappedTable` only reads the table.
unsafe impl Sync for MappedTable {}

impl MappedTable {
    /// Borrows a table.
    ///
    /// # Safety
    ///
    /// `sgt` is DMA-mapped for `dev` in direction `dir`, and stays so until
    /// the returned value is dropped.
    pub(crate) unsafe fn new(
        sgt: *mut bindings::sg_table,
        dev: &Device,
        dir: bindings::dma_data_direction,
    ) -> Self {
        // INVARIANT: the caller's promise.
        Self {
            sgt,
            dev: dev.into(),
            dir,
        }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::sg_table {
        self.sgt
    }

    /// The `(DMA address, length)` of each mapped segment, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        // SAFETY: mapped while `self` lives (type invariant).
        unsafe { segments_of(self.sgt) }
    }

    /// Syncs `[offset, offset + len)` of the buffer; EINVAL past its end.
    pub(crate) fn sync(&self, offset: u64, len: u64, to: Handover) -> Result {
        // SAFETY: mapped for `dev` in `dir` while `self` lives (invariant).
        unsafe { sync_range(&self.dev, self.sgt, self.dir, offset, len, to) }
    }
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
        if let Err(e) = to_result(unsafe {
            bindings::dma_map_sgtable(crate::raw::device(dev), sgt.get(), dir, 0)
        }) {
            // SAFETY: `sgt` was allocated in this function, is not mapped,
            // and nobody else uses it.
            unsafe { bindings::sg_free_table(sgt.get()) };
            return Err(e);
        }
        // INVARIANT: allocated and mapped for `dev` in `dir`. If the box
        // cannot be allocated, dropping `Self` unmaps and frees the table.
        Ok(KBox::new(
            Self {
                sgt,
                dev: dev.into(),
                dir,
            },
            GFP_KERNEL,
        )?)
    }

    /// The `(DMA address, length)` of each mapped segment, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        // SAFETY: the table is mapped as long as `self` lives.
        unsafe { segments_of(self.sgt.get()) }
    }

    /// Syncs `[offset, offset + len)` of the buffer; EINVAL past its end.
    pub(crate) fn sync(&self, offset: u64, len: u64, to: Handover) -> Result {
        // SAFETY: mapped for `dev` in `dir` while `self` lives (invariant).
        unsafe { sync_range(&self.dev, self.sgt.get(), self.dir, offset, len, to) }
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
unsafe fn segments_of<'a>(sgt: *mut bindings::sg_table) -> impl Iterator<Item = (u64, u64)> + 'a {
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
