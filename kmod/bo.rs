// SPDX-License-Identifier: GPL-2.0

//! Buffer objects: memory a process allocated or imported through one file.

use kernel::{
    bindings,
    mm::virt::VmaMixedMap,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::Arc,
};

use crate::{
    device::Device,
    dma_buf::Import,
    host_mem::HostMem,
    uapi,
    vram::{
        VramRange,
        GRANULE, //
    },
};

/// Where a BO's memory is.
enum Memory {
    /// `Some` until the BO is dropped, which scrubs and frees the range.
    Vram(Option<VramRange>),
    Host(HostMem),
    /// Someone else's dma-buf, mapped for the device as long as it is held.
    Imported { import: Import },
}

/// A buffer object. Its memory goes when the last reference goes: the
/// file's handle, dma-bufs exported from it, and (later) queue packets in
/// flight.
pub(crate) struct Bo {
    device: Arc<Device>,
    memory: Memory,
    size: u64,
    flags: u32,
}

impl Bo {
    /// A VRAM BO as BO_CREATE asks; `size` and `flags` are checked.
    pub(crate) fn new_vram(device: Arc<Device>, size: u64, flags: u32) -> Result<Arc<Self>> {
        // A mappable BO owns whole pages, so a mapping shows nobody else's.
        let align = if flags & uapi::bo_flags::MAPPABLE != 0 { PAGE_SIZE as u64 } else { GRANULE };
        let size = size.checked_next_multiple_of(align).ok_or(EINVAL)?;
        let range = device.vram().alloc(size, align)?;
        let size = range.size();
        // If this allocation fails, dropping the new `Bo` frees the range.
        Ok(Arc::new(Self { device, memory: Memory::Vram(Some(range)), size, flags }, GFP_KERNEL)?)
    }

    /// A HOST BO as BO_CREATE asks; `size` and `flags` are checked.
    pub(crate) fn new_host(device: Arc<Device>, size: u64, flags: u32) -> Result<Arc<Self>> {
        let size = size.checked_next_multiple_of(PAGE_SIZE as u64).ok_or(EINVAL)?;
        let memory = Memory::Host(HostMem::new(device.clone(), size)?);
        Ok(Arc::new(Self { device, memory, size, flags }, GFP_KERNEL)?)
    }

    /// A HOST BO over an imported dma-buf; never mappable through us.
    pub(crate) fn new_imported(device: Arc<Device>, import: Import) -> Result<Arc<Self>> {
        let size = import.size();
        Ok(Arc::new(Self { device, memory: Memory::Imported { import }, size, flags: 0 }, GFP_KERNEL)?)
    }

    /// Bytes, as rounded at creation.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    pub(crate) fn placement(&self) -> u32 {
        match self.memory {
            Memory::Vram(_) => uapi::placement::VRAM,
            Memory::Host(_) | Memory::Imported { .. } => uapi::placement::HOST,
        }
    }

    /// The raw VRAM address the device uses for byte 0; 0 for host memory,
    /// whose DMA addresses stay inside the kernel.
    pub(crate) fn device_address(&self) -> u64 {
        match &self.memory {
            Memory::Vram(range) => range.as_ref().map_or(0, VramRange::addr),
            Memory::Host(_) | Memory::Imported { .. } => 0,
        }
    }

    pub(crate) fn flags(&self) -> u32 {
        self.flags
    }

    /// Mappable BOs can be mmapped and exported: they own whole pages.
    pub(crate) fn mappable(&self) -> bool {
        self.flags & uapi::bo_flags::MAPPABLE != 0
    }

    /// Calls `each` with the BO's pages `first .. first + count`, in order.
    /// The pages stay allocated while the BO lives.
    pub(crate) fn pages(&self, first: usize, count: usize, each: &mut dyn FnMut(&Page) -> Result) -> Result {
        let end = first.checked_add(count).ok_or(EINVAL)?;
        if !self.mappable() || end as u64 * PAGE_SIZE as u64 > self.size {
            return Err(EINVAL);
        }
        match &self.memory {
            Memory::Vram(Some(range)) => {
                let page = PAGE_SIZE as u64;
                self.device.hw().vram_pages(range.addr() + first as u64 * page, count as u64 * page, each)
            }
            Memory::Host(host) => host.pages().get(first..end).ok_or(EINVAL)?.iter().try_for_each(each),
            Memory::Vram(None) | Memory::Imported { .. } => Err(EINVAL),
        }
    }

    /// For a host BO, calls `each(dma_address, length)` for the pieces of
    /// `[offset, offset + size)` in the device's view, in order; EINVAL for
    /// VRAM.
    pub(crate) fn host_pieces(&self, offset: u64, size: u64, each: &mut dyn FnMut(u64, u64) -> Result) -> Result {
        let mut visit = |segments: &mut dyn Iterator<Item = (u64, u64)>| {
            let (end, mut seg_start) = (offset + size, 0u64);
            for (dma, len) in segments {
                let (from, to) = (offset.max(seg_start), end.min(seg_start + len));
                if from < to {
                    each(dma + (from - seg_start), to - from)?;
                }
                seg_start += len;
            }
            Ok(())
        };
        match &self.memory {
            Memory::Host(host) => visit(&mut host.segments()),
            Memory::Imported { import } => visit(&mut import.segments()),
            Memory::Vram(_) => Err(EINVAL),
        }
    }

    /// EINVAL unless `[offset, offset + len)` is a non-empty range inside
    /// the BO.
    pub(crate) fn check_range(&self, offset: u64, len: u64) -> Result {
        match offset.checked_add(len) {
            Some(end) if len > 0 && end <= self.size => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Copies `dst.len()` bytes at `offset` of a host BO (allocated here,
    /// not imported) into `dst`: the kernel reading what a process wrote.
    pub(crate) fn read_host(&self, offset: u64, dst: &mut [u8]) -> Result {
        self.host_bytes(offset, dst.len(), |page, at, done, n| {
            // SAFETY: `dst` has room for `done + n` bytes; the process may
            // write the page meanwhile, which only changes the bytes copied.
            unsafe { page.read_raw(dst.as_mut_ptr().add(done), at, n) }
        })
    }

    /// Copies `src` to `offset` of a host BO (allocated here).
    pub(crate) fn write_host(&self, offset: u64, src: &[u8]) -> Result {
        self.host_bytes(offset, src.len(), |page, at, done, n| {
            // SAFETY: `src` has `done + n` bytes; no Rust code reads these
            // bytes of the page meanwhile.
            unsafe { page.write_raw(src.as_ptr().add(done), at, n) }
        })
    }

    /// Calls `each(page, offset in page, bytes so far, bytes)` over `len`
    /// bytes at `offset` of a host BO's pages.
    fn host_bytes(&self, offset: u64, len: usize, mut each: impl FnMut(&Page, usize, usize, usize) -> Result) -> Result {
        let Memory::Host(host) = &self.memory else { return Err(EINVAL) };
        self.check_range(offset, len as u64)?;
        let mut done = 0;
        while done < len {
            let at = offset as usize + done;
            let n = (PAGE_SIZE - at % PAGE_SIZE).min(len - done);
            let page = host.pages().get(at / PAGE_SIZE).ok_or(EINVAL)?;
            each(page, at % PAGE_SIZE, done, n)?;
            done += n;
        }
        Ok(())
    }

    /// Raw pointers to pages `first .. first + count`, for C.
    pub(crate) fn page_ptrs(&self, first: usize, count: usize) -> Result<KVec<*mut bindings::page>> {
        let mut ptrs = KVec::with_capacity(count, GFP_KERNEL)?;
        self.pages(first, count, &mut |p| Ok(ptrs.push(p.as_ptr(), GFP_KERNEL)?))?;
        Ok(ptrs)
    }

    /// Maps the BO from page `first` on into all of `vma`.
    ///
    /// The mapping holds the pages, not the BO: after the BO is freed its
    /// VRAM is scrubbed and reused while an old mapping keeps showing the
    /// old pages, which are no longer VRAM (the emulator gives the range
    /// fresh pages). So a mapping never shows another process's data.
    pub(crate) fn map(&self, vma: &VmaMixedMap, first: usize) -> Result {
        let mut user_addr = vma.start();
        let count = (vma.end() - vma.start()) / PAGE_SIZE;
        self.pages(first, count, &mut |page| {
            vma.vm_insert_page(user_addr, page)?;
            user_addr += PAGE_SIZE;
            Ok(())
        })
    }
}

impl Drop for Bo {
    fn drop(&mut self) {
        if let Memory::Vram(range) = &mut self.memory {
            if let Some(range) = range.take() {
                self.device.vram().free(self.device.hw(), range);
            }
        }
    }
}
