// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Buffers of the kmod backend: VRAM buffer objects, and host BOs over
//! imported dma-bufs.

use crate::{
    backend::BackendBuffer,
    kmod::{map_dma_buf, BufferObject, Device, Placement},
    Buffer,
    BufferParams,
    BufferUsage,
    Error,
    MemoryType,
    Result,
};
use memmap2::MmapMut;
use std::{
    any::Any,
    os::fd::{BorrowedFd, OwnedFd},
};

pub(super) struct KmodBuffer {
    bo: BufferObject,
    /// The host's view of a host-visible buffer: the BO's mapping, or the
    /// imported dma-buf's.
    mapping: Option<MmapMut>,
    /// The dma-buf an imported buffer was made from: exporting it again
    /// hands out the same dma-buf.
    imported: Option<OwnedFd>,
}

impl KmodBuffer {
    /// Device memory is VRAM; host-visible memory is VRAM the host maps
    /// (whole pages, so it can also be exported).
    pub(super) fn allocate(device: &Device, params: &BufferParams) -> Result<Self> {
        let host_visible = params.memory == MemoryType::HostVisible;
        let bo = device.create_bo(params.size, Placement::Vram, host_visible)?;
        let mapping = if host_visible { Some(bo.map()?) } else { None };
        Ok(Self { bo, mapping, imported: None })
    }

    /// A host BO over `fd`. Queue commands reach it; kernels cannot, since
    /// it has no VRAM address.
    pub(super) fn import(device: &Device, fd: BorrowedFd<'_>, params: &BufferParams) -> Result<Self> {
        if params.usage.contains(BufferUsage::DISPATCH) {
            return Err(Error::Unsupported(
                "kernels cannot address an imported dma-buf: Gluon has no GPU virtual memory and reaches host \
                 memory only by DMA; import it for TRANSFER and copy it into device memory"
                    .into(),
            ));
        }
        let bo = device.import_dma_buf(fd)?;
        if bo.size() < params.size {
            return Err(Error::InvalidArgument(format!(
                "the dma-buf holds {} bytes, fewer than the {} asked for",
                bo.size(),
                params.size
            )));
        }
        let mapping = if params.memory == MemoryType::HostVisible { Some(map_dma_buf(fd)?) } else { None };
        let imported = Some(fd.try_clone_to_owned().map_err(|e| Error::io("dup of the imported dma-buf", &e))?);
        Ok(Self { bo, mapping, imported })
    }

    pub(super) fn bo(&self) -> &BufferObject {
        &self.bo
    }

    fn mapped(&self) -> Result<&MmapMut> {
        self.mapping.as_ref().ok_or_else(|| Error::InvalidArgument("the buffer is not host-visible".into()))
    }
}

/// The kmod buffer object behind a [`Buffer`] of a kmod device.
pub(super) fn kmod_bo(buffer: &Buffer) -> Result<&BufferObject> {
    Ok(buffer.backend().as_any().downcast_ref::<KmodBuffer>().ok_or(Error::WrongDevice("a buffer"))?.bo())
}

impl BackendBuffer for KmodBuffer {
    /// The VRAM address; 0 for an import, which kernels cannot address.
    fn device_address(&self) -> u64 {
        self.bo.device_address()
    }

    fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let map = self.mapped()?;
        // SAFETY: the public layer checked that the range lies inside the
        // buffer, and the mapping covers at least the buffer. The memory is
        // shared with the device; ordering against its writes is the
        // caller's, through semaphores.
        unsafe { std::ptr::copy_nonoverlapping(map.as_ptr().add(offset as usize), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        let map = self.mapped()?;
        // SAFETY: as in `read`; the mapping is shared and writable, so
        // writing through a pointer derived from it is allowed.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), map.as_ptr().cast_mut().add(offset as usize), src.len()) };
        Ok(())
    }

    fn host_ptr(&self) -> Result<*mut u8> {
        Ok(self.mapped()?.as_ptr().cast_mut())
    }

    fn export_dma_buf(&self) -> Result<OwnedFd> {
        if let Some(fd) = &self.imported {
            return fd.try_clone().map_err(|e| Error::io("dup of the imported dma-buf", &e));
        }
        if self.mapping.is_none() {
            return Err(Error::Unsupported(
                "only host-visible buffers can be exported on kmod: device memory is allocated in 256-byte \
                 granules, and a dma-buf shares whole pages"
                    .into(),
            ));
        }
        self.bo.export_dma_buf()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
