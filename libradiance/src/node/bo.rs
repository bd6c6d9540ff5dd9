// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Buffer objects of a kmod device: VRAM or pinned host memory, mapped with
//! memmap2, exported and imported as dma-bufs.

use super::{ioctl, Device};
use crate::{Error, Result};
use memmap2::{MmapMut, MmapOptions};
use radiance_uapi as uapi;
use std::{
    fs::File,
    os::fd::{BorrowedFd, FromRawFd, OwnedFd},
    sync::Arc,
};

/// Where a buffer object's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Device memory; the BO has a raw VRAM device address.
    Vram,
    /// Pinned system memory the device reaches by DMA.
    Host,
}

impl Placement {
    fn to_uapi(self) -> u32 {
        match self {
            Self::Vram => uapi::placement::VRAM,
            Self::Host => uapi::placement::HOST,
        }
    }

    fn from_uapi(v: u32) -> Result<Self> {
        match v {
            uapi::placement::VRAM => Ok(Self::Vram),
            uapi::placement::HOST => Ok(Self::Host),
            other => Err(Error::Status {
                code: crate::StatusCode::Incompatible,
                message: format!("the kernel reported an unknown placement {other}"),
            }),
        }
    }
}

/// A buffer object; destroyed (its handle) when dropped. Exported dma-bufs
/// keep the memory alive on their own.
#[derive(Debug)]
pub struct BufferObject {
    fd: Arc<OwnedFd>,
    handle: u32,
    size: u64,
    placement: Placement,
    device_address: u64,
    mmap_offset: u64,
}

impl Device {
    /// Allocates `size` bytes (rounded up by the kernel). A mappable BO owns
    /// whole pages and can be mapped and exported.
    pub fn create_bo(&self, size: u64, placement: Placement, mappable: bool) -> Result<BufferObject> {
        let mut args = uapi::BoCreate {
            size,
            placement: placement.to_uapi(),
            flags: if mappable { uapi::bo_flags::MAPPABLE } else { 0 },
            ..Default::default()
        };
        ioctl::bo_create(&*self.fd, &mut args).map_err(|e| Error::os(format!("BO_CREATE of {size} bytes"), e))?;
        BufferObject::from_handle(self.fd.clone(), args.handle)
    }

    /// Allocates `size` bytes of VRAM at device address `addr` (ABI 1.8):
    /// for code and data linked at fixed addresses. `Busy` if any of the
    /// range is taken.
    pub fn create_bo_at(&self, addr: u32, size: u64, mappable: bool) -> Result<BufferObject> {
        let flags = uapi::bo_flags::FIXED_ADDRESS | if mappable { uapi::bo_flags::MAPPABLE } else { 0 };
        let mut args = uapi::BoCreate {
            size,
            placement: Placement::Vram.to_uapi(),
            flags,
            device_address: addr.into(),
            ..Default::default()
        };
        ioctl::bo_create(&*self.fd, &mut args)
            .map_err(|e| Error::os(format!("BO_CREATE of {size} bytes at {addr:#x}"), e))?;
        BufferObject::from_handle(self.fd.clone(), args.handle)
    }

    /// Makes a host BO over anyone's dma-buf (it keeps its own reference).
    pub fn import_dma_buf(&self, dmabuf: BorrowedFd<'_>) -> Result<BufferObject> {
        use std::os::fd::AsRawFd;
        let mut args = uapi::BoImport { fd: dmabuf.as_raw_fd(), ..Default::default() };
        ioctl::bo_import(&*self.fd, &mut args).map_err(|e| Error::os("BO_IMPORT", e))?;
        BufferObject::from_handle(self.fd.clone(), args.handle)
    }
}

impl BufferObject {
    /// Takes ownership of `handle`, reading what it is from BO_INFO.
    fn from_handle(fd: Arc<OwnedFd>, handle: u32) -> Result<Self> {
        // Owned from here on: an error below destroys the handle on drop.
        let mut bo = Self { fd, handle, size: 0, placement: Placement::Host, device_address: 0, mmap_offset: 0 };
        let mut info = uapi::BoInfo { handle, ..Default::default() };
        ioctl::bo_info(&*bo.fd, &mut info).map_err(|e| Error::os("BO_INFO", e))?;
        bo.size = info.size;
        bo.placement = Placement::from_uapi(info.placement)?;
        bo.device_address = info.device_address;
        bo.mmap_offset = info.mmap_offset;
        Ok(bo)
    }

    /// Bytes, as the kernel rounded them.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The raw VRAM address for VRAM BOs; 0 for host memory, whose DMA
    /// addresses the kernel keeps to itself.
    pub fn device_address(&self) -> u64 {
        self.device_address
    }

    /// The handle in its file, for tools.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    fn mappable(&self) -> Result<()> {
        match self.mmap_offset {
            0 => Err(Error::InvalidArgument("the buffer object was not created mappable".into())),
            _ => Ok(()),
        }
    }

    /// Maps the whole BO read-write.
    ///
    /// The memory is shared: exports of the BO, its other mappings and
    /// (later) the device change it concurrently, like any shared mapping.
    pub fn map(&self) -> Result<MmapMut> {
        self.mappable()?;
        let len = usize::try_from(self.size).map_err(|_| Error::InvalidArgument("buffer too large to map".into()))?;
        // SAFETY: the offset and length name exactly this BO's pages, which
        // stay mapped for the life of the mapping; the sharing described
        // above is the caller's to coordinate, as for any shared mapping.
        unsafe { MmapOptions::new().offset(self.mmap_offset).len(len).map_mut(self.fd.as_ref()) }
            .map_err(|e| Error::io("mmap", &e))
    }

    /// Exports the BO as a close-on-exec dma-buf file descriptor.
    pub fn export_dma_buf(&self) -> Result<OwnedFd> {
        self.mappable()?;
        let mut args = uapi::BoExport { handle: self.handle, flags: uapi::export_flags::CLOEXEC, ..Default::default() };
        ioctl::bo_export(&*self.fd, &mut args).map_err(|e| Error::os("BO_EXPORT", e))?;
        // SAFETY: the kernel just gave us this new descriptor; we own it.
        Ok(unsafe { OwnedFd::from_raw_fd(args.fd) })
    }
}

impl Drop for BufferObject {
    fn drop(&mut self) {
        let mut args = uapi::BoDestroy { handle: self.handle, pad: 0 };
        // Only a bad handle can fail, and this one is ours.
        let _ = ioctl::bo_destroy(&*self.fd, &mut args);
    }
}

/// Maps a dma-buf file (ours or anyone's) read-write, e.g. to check what a
/// BO holds from a process that only has the dma-buf.
pub fn map_dma_buf(dmabuf: BorrowedFd<'_>) -> Result<MmapMut> {
    let file = File::from(dmabuf.try_clone_to_owned().map_err(|e| Error::io("dup", &e))?);
    // SAFETY: the mapping is of shared memory, as `BufferObject::map` says.
    unsafe { MmapOptions::new().map_mut(&file) }.map_err(|e| Error::io("mmap dma-buf", &e))
}
