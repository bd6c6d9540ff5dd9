// SPDX-License-Identifier: GPL-2.0

//! Buffer objects: memory a process allocated or imported through one file.

use kernel::{
    mm::virt::VmaMixedMap,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::Arc,
};

use crate::{
    device::{
        Device,
        PinCharge, //
    },
    dma_buf::{
        Exportable,
        Import, //
    },
    host_mem::HostMem,
    hw::{
        host_windows::Window,
        open_window, //
    },
    sg_table::{
        pieces,
        Handover, //
    },
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
    /// Pinned pages, counted against the device's limit while they live.
    /// (Fields drop in order: the device's window on the memory closes
    /// before the memory is unmapped.)
    Host {
        _window: Option<Window>,
        mem: HostMem,
        _pinned: PinCharge,
    },
    /// Someone else's dma-buf, mapped for the device as long as it is held.
    Imported {
        _window: Option<Window>,
        import: Import,
    },
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
    /// A VRAM BO as BO_CREATE asks, at address `at` if given; `size` and
    /// `flags` are checked.
    pub(crate) fn new_vram(
        device: Arc<Device>,
        size: u64,
        flags: u32,
        at: Option<u64>,
    ) -> Result<Arc<Self>> {
        // A mappable BO owns whole pages, so a mapping shows nobody else's.
        let align = if flags & uapi::bo_flags::MAPPABLE != 0 {
            PAGE_SIZE as u64
        } else {
            GRANULE
        };
        let size = size.checked_next_multiple_of(align).ok_or(EINVAL)?;
        let range = match at {
            Some(addr) => device.vram().alloc_at(addr, size, align)?,
            None => device.vram().alloc(size, align)?,
        };
        let size = range.size();
        // If this allocation fails, dropping the new `Bo` frees the range.
        Ok(Arc::new(
            Self {
                device,
                memory: Memory::Vram(Some(range)),
                size,
                flags,
            },
            GFP_KERNEL,
        )?)
    }

    /// A HOST BO as BO_CREATE asks; `size` and `flags` are checked.
    pub(crate) fn new_host(device: Arc<Device>, size: u64, flags: u32) -> Result<Arc<Self>> {
        let size = size
            .checked_next_multiple_of(PAGE_SIZE as u64)
            .ok_or(EINVAL)?;
        let pinned = device.pin_host(size)?;
        let mem = HostMem::new(device.hw().dma_device(), size)?;
        let memory = Memory::Host {
            _window: open_window(device.hw(), mem.segments())?,
            mem,
            _pinned: pinned,
        };
        Ok(Arc::new(
            Self {
                device,
                memory,
                size,
                flags,
            },
            GFP_KERNEL,
        )?)
    }

    /// A HOST BO over an imported dma-buf; never mappable through us.
    pub(crate) fn new_imported(device: Arc<Device>, import: Import) -> Result<Arc<Self>> {
        let size = import.size();
        let window = open_window(device.hw(), import.segments())?;
        Ok(Arc::new(
            Self {
                device,
                memory: Memory::Imported {
                    _window: window,
                    import,
                },
                size,
                flags: 0,
            },
            GFP_KERNEL,
        )?)
    }

    /// Bytes, as rounded at creation.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    pub(crate) fn placement(&self) -> u32 {
        match self.memory {
            Memory::Vram(_) => uapi::placement::VRAM,
            Memory::Host { .. } | Memory::Imported { .. } => uapi::placement::HOST,
        }
    }

    /// The raw VRAM address the device uses for byte 0; 0 for host memory,
    /// whose DMA addresses stay inside the kernel.
    pub(crate) fn device_address(&self) -> u64 {
        match &self.memory {
            Memory::Vram(range) => range.as_ref().map_or(0, VramRange::addr),
            Memory::Host { .. } | Memory::Imported { .. } => 0,
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
    pub(crate) fn pages(
        &self,
        first: usize,
        count: usize,
        each: &mut dyn FnMut(&Page) -> Result,
    ) -> Result {
        let end = first.checked_add(count).ok_or(EINVAL)?;
        if !self.mappable() || end as u64 * PAGE_SIZE as u64 > self.size {
            return Err(EINVAL);
        }
        match &self.memory {
            Memory::Vram(Some(range)) => {
                let page = PAGE_SIZE as u64;
                self.device.hw().vram_pages(
                    range.addr() + first as u64 * page,
                    count as u64 * page,
                    each,
                )
            }
            Memory::Host { mem: host, .. } => host.pages(first, count, each),
            Memory::Vram(None) | Memory::Imported { .. } => Err(EINVAL),
        }
    }

    /// For a host BO, calls `each(dma_address, length)` for the pieces of
    /// `[offset, offset + size)` in the device's view, in order; EINVAL for
    /// VRAM or a range outside the BO.
    pub(crate) fn host_pieces(
        &self,
        offset: u64,
        size: u64,
        each: &mut dyn FnMut(u64, u64) -> Result,
    ) -> Result {
        self.check_range(offset, size)?;
        match &self.memory {
            Memory::Host { mem: host, .. } => pieces(host.segments(), offset, size, each),
            Memory::Imported { import, .. } => pieces(import.segments(), offset, size, each),
            Memory::Vram(_) => Err(EINVAL),
        }
    }

    /// For a host BO, hands `[offset, offset + len)` to the device (before
    /// it reads or writes them) or back to the CPU (after it wrote them);
    /// EINVAL for VRAM or a range outside the BO.
    pub(crate) fn sync(&self, offset: u64, len: u64, to: Handover) -> Result {
        self.check_range(offset, len)?;
        match &self.memory {
            Memory::Host { mem: host, .. } => host.sync(offset, len, to),
            Memory::Imported { import, .. } => import.sync(offset, len, to),
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

    /// Copies `src` to `offset` of a host BO: the kernel writing what a
    /// device that moves only whole words could not.
    pub(crate) fn write_host(&self, offset: u64, src: &[u8]) -> Result {
        match &self.memory {
            Memory::Host { mem: host, .. } => host.write(offset, src),
            Memory::Imported { import, .. } => import.write(offset, src),
            Memory::Vram(_) => Err(EINVAL),
        }
    }

    /// Copies `dst.len()` bytes at `offset` of a host BO into `dst`: the
    /// kernel reading what a process (or the device) wrote.
    pub(crate) fn read_host(&self, offset: u64, dst: &mut [u8]) -> Result {
        match &self.memory {
            Memory::Host { mem: host, .. } => host.read(offset, dst),
            Memory::Imported { import, .. } => import.read(offset, dst),
            Memory::Vram(_) => Err(EINVAL),
        }
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

impl Exportable for Bo {
    fn size(&self) -> u64 {
        self.size
    }

    fn pages(&self, first: usize, count: usize, each: &mut dyn FnMut(&Page) -> Result) -> Result {
        Bo::pages(self, first, count, each)
    }

    fn map(&self, vma: &VmaMixedMap, first: usize) -> Result {
        Bo::map(self, vma, first)
    }
}

impl Drop for Bo {
    fn drop(&mut self) {
        if let Memory::Vram(range) = &mut self.memory {
            if let Some(range) = range.take() {
                // Before anyone else can get the range; outside the
                // allocator's lock, since zeroing can take a while.
                self.device.hw().vram_zero(range.addr(), range.size());
                self.device.vram().free(range);
            }
        }
    }
}
