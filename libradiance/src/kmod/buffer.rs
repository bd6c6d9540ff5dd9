// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Buffers of the kmod backend: VRAM buffer objects, and host BOs over
//! imported dma-bufs.

use super::shadow::{Shadow, ShadowQueue};
use crate::{
    backend::BackendBuffer,
    node::{map_dma_buf, BufferObject, Device, Placement},
    Buffer, BufferParams, BufferUsage, Error, MemoryType, Result,
};
use memmap2::MmapMut;
use radiance_uapi as uapi;
use std::{
    any::Any,
    os::fd::{BorrowedFd, OwnedFd},
    sync::Arc,
};

pub(super) struct KmodBuffer {
    bo: BufferObject,
    host: HostView,
    /// The dma-buf an imported buffer was made from: exporting it again
    /// hands out the same dma-buf.
    imported: Option<OwnedFd>,
}

/// How the host reaches a buffer's bytes.
enum HostView {
    /// Device memory: it does not.
    None,
    /// Through a mapping of the memory itself: mappable VRAM, or an
    /// imported dma-buf.
    Mapped(MmapMut),
    /// Through a copy of VRAM the CPU cannot map (`shadow.rs`).
    Shadow(Shadow),
}

impl KmodBuffer {
    /// Device memory is VRAM; host-visible memory is VRAM the host maps
    /// (whole pages, so it can also be exported), or on a device whose VRAM
    /// the CPU cannot map, VRAM with a host shadow whose copies run on
    /// `shadows`.
    pub(super) fn allocate(device: &Device, shadows: &Arc<ShadowQueue>, params: &BufferParams) -> Result<Self> {
        let host_visible = params.memory == MemoryType::HostVisible;
        let vram_mappable = device.info().caps & uapi::caps::VRAM_MAPPABLE != 0;
        let bo = device.create_bo(params.size, Placement::Vram, host_visible && vram_mappable)?;
        let host = match (host_visible, vram_mappable) {
            (false, _) => HostView::None,
            (true, true) => HostView::Mapped(bo.map()?),
            (true, false) => HostView::Shadow(Shadow::new(device, shadows, params.size)?),
        };
        Ok(Self { bo, host, imported: None })
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
        let host = match params.memory {
            MemoryType::HostVisible => HostView::Mapped(map_dma_buf(fd)?),
            MemoryType::Device => HostView::None,
        };
        let imported = Some(fd.try_clone_to_owned().map_err(|e| Error::io("dup of the imported dma-buf", &e))?);
        Ok(Self { bo, host, imported })
    }

    pub(super) fn bo(&self) -> &BufferObject {
        &self.bo
    }

    fn not_host_visible() -> Error {
        Error::InvalidArgument("the buffer is not host-visible".into())
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
        match &self.host {
            HostView::Mapped(map) => {
                // SAFETY: the public layer checked that the range lies inside
                // the buffer, and the mapping covers at least the buffer. The
                // memory is shared with the device; ordering against its
                // writes is the caller's, through semaphores.
                unsafe {
                    std::ptr::copy_nonoverlapping(map.as_ptr().add(offset as usize), dst.as_mut_ptr(), dst.len())
                };
                Ok(())
            }
            HostView::Shadow(shadow) => shadow.read(&self.bo, offset, dst),
            HostView::None => Err(Self::not_host_visible()),
        }
    }

    fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        match &self.host {
            HostView::Mapped(map) => {
                // SAFETY: as in `read`; the mapping is shared and writable, so
                // writing through a pointer derived from it is allowed.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.as_ptr(), map.as_ptr().cast_mut().add(offset as usize), src.len())
                };
                Ok(())
            }
            HostView::Shadow(shadow) => shadow.write(&self.bo, offset, src),
            HostView::None => Err(Self::not_host_visible()),
        }
    }

    fn map_range(&self, offset: u64, length: u64) -> Result<*mut u8> {
        match &self.host {
            // In range, so the offset fits in the mapping (and in usize).
            HostView::Mapped(map) => Ok(map.as_ptr().cast_mut().wrapping_add(offset as usize)),
            HostView::Shadow(shadow) => shadow.map_range(&self.bo, offset, length),
            HostView::None => Err(Self::not_host_visible()),
        }
    }

    fn unmap_range(&self, contents: *mut u8, length: u64) -> Result<()> {
        match &self.host {
            HostView::Shadow(shadow) => shadow.unmap_range(&self.bo, contents, length),
            HostView::Mapped(_) | HostView::None => Ok(()),
        }
    }

    fn export_dma_buf(&self) -> Result<OwnedFd> {
        if let Some(fd) = &self.imported {
            return fd.try_clone().map_err(|e| Error::io("dup of the imported dma-buf", &e));
        }
        match &self.host {
            HostView::Mapped(_) => self.bo.export_dma_buf(),
            HostView::Shadow(_) => Err(Error::Unsupported(
                "this device's VRAM cannot be mapped by the CPU (no VRAM_MAPPABLE: it lives in another process), \
                 so it cannot be shared as a dma-buf; the buffer's host shadow is only a copy, which another \
                 driver would see go stale"
                    .into(),
            )),
            HostView::None => Err(Error::Unsupported(
                "only host-visible buffers can be exported on kmod: device memory is allocated in 256-byte \
                 granules, and a dma-buf shares whole pages"
                    .into(),
            )),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
