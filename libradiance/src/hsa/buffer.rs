// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Memory of the hsa backend: device memory (the GPU's coarse-grained
//! pool), host-visible memory (the CPU's fine-grained pool, which the GPU is
//! allowed to access), kernarg memory (arguments and update staging), and
//! dma-bufs mapped into ROCr's flat address space.

use super::device::Shared;
use crate::{backend::BackendBuffer, native_launch::Addressed, Buffer, BufferParams, Error, MemoryType, Result};
use std::{
    any::Any,
    os::fd::{BorrowedFd, OwnedFd},
    sync::Arc,
};

/// An allocation from one of the device's pools, freed when dropped.
pub(super) struct PoolMemory {
    shared: Arc<Shared>,
    ptr: *mut u8,
    size: usize,
}

// SAFETY: the memory is plain process memory (or device memory in the same
// address space); who touches it when is up to the owners, as for any
// buffer.
unsafe impl Send for PoolMemory {}
// SAFETY: as above.
unsafe impl Sync for PoolMemory {}

impl PoolMemory {
    /// `size` bytes from `pool`, host memory made accessible to the GPU.
    pub(super) fn host(shared: &Arc<Shared>, size: usize, kernarg: bool) -> Result<Self> {
        let pool = if kernarg { shared.pools.kernarg } else { shared.pools.host };
        let memory = Self { shared: Arc::clone(shared), ptr: shared.api.pool_allocate(pool, size)?, size };
        // SAFETY: the live allocation just made.
        unsafe { shared.api.allow_access(&[shared.gpu], memory.ptr)? };
        // Zeroed, as the host backend's buffers are.
        // SAFETY: the whole fresh allocation, host memory.
        unsafe { memory.ptr.write_bytes(0, size) };
        Ok(memory)
    }

    /// `size` bytes of the GPU's own memory.
    fn device(shared: &Arc<Shared>, size: usize) -> Result<Self> {
        Ok(Self { shared: Arc::clone(shared), ptr: shared.api.pool_allocate(shared.pools.device, size)?, size })
    }

    pub(super) fn address(&self) -> u64 {
        self.ptr as u64
    }

    /// Copies `src` in at `offset` (in range; host memory only).
    pub(super) fn write(&self, offset: usize, src: &[u8]) {
        assert!(offset + src.len() <= self.size);
        // SAFETY: in range of host memory; the host and the device may race
        // on a buffer's bytes, as the HAL allows, but never on memory
        // safety.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(offset), src.len()) }
    }

    fn read(&self, offset: usize, dst: &mut [u8]) {
        assert!(offset + dst.len() <= self.size);
        // SAFETY: as in `write`.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), dst.as_mut_ptr(), dst.len()) }
    }
}

impl Drop for PoolMemory {
    fn drop(&mut self) {
        // SAFETY: allocated by `pool_allocate`, freed once; owners keep
        // queued work's memory alive until the work is done.
        let _ = unsafe { self.shared.api.pool_free(self.ptr) };
    }
}

/// Where a buffer's bytes are.
enum Memory {
    Device(PoolMemory),
    Host(PoolMemory),
    /// Someone's dma-buf, mapped for the GPU.
    Imported {
        ptr: *mut u8,
    },
}

/// A buffer of the hsa backend.
pub(super) struct HsaBuffer {
    shared: Arc<Shared>,
    address: u64,
    size: u64,
    memory: Memory,
}

// SAFETY: as for `PoolMemory`.
unsafe impl Send for HsaBuffer {}
// SAFETY: as above.
unsafe impl Sync for HsaBuffer {}

impl HsaBuffer {
    fn new(shared: &Arc<Shared>, size: u64, memory: impl FnOnce() -> Result<Memory>) -> Result<Arc<Self>> {
        let address = shared.space.reserve(size)?;
        let memory = memory().inspect_err(|_| shared.space.release(address))?;
        let buffer = Arc::new(Self { shared: Arc::clone(shared), address, size, memory });
        shared.space.bind(address, &buffer);
        Ok(buffer)
    }

    pub(super) fn allocate(shared: &Arc<Shared>, params: &BufferParams) -> Result<Arc<Self>> {
        let len = usize::try_from(params.size)
            .map_err(|_| Error::ResourceExhausted(format!("a {}-byte buffer", params.size)))?;
        Self::new(shared, params.size, || match params.memory {
            MemoryType::HostVisible => PoolMemory::host(shared, len, false).map(Memory::Host),
            MemoryType::Device => PoolMemory::device(shared, len).map(Memory::Device),
        })
    }

    /// A Device buffer over a dma-buf. ROCr maps it for the GPU only, so it
    /// cannot be host-visible.
    pub(super) fn import(shared: &Arc<Shared>, fd: BorrowedFd<'_>, params: &BufferParams) -> Result<Arc<Self>> {
        if params.memory == MemoryType::HostVisible {
            return Err(Error::Unsupported(
                "dma-buf import on hsa: ROCr maps a dma-buf for the GPU only; import it as Device memory".into(),
            ));
        }
        Self::new(shared, params.size, || {
            let (ptr, size) = shared.api.dma_buf_import(&[shared.gpu], fd)?;
            if (size as u64) < params.size {
                // SAFETY: just mapped, never used.
                unsafe { shared.api.dma_buf_unmap(ptr) };
                return Err(Error::InvalidArgument(format!(
                    "the dma-buf has {size} bytes, fewer than the {} asked for",
                    params.size
                )));
            }
            Ok(Memory::Imported { ptr })
        })
    }

    fn host(&self) -> Result<&PoolMemory> {
        match &self.memory {
            Memory::Host(memory) => Ok(memory),
            _ => Err(Error::InvalidArgument("device memory is not host-visible".into())),
        }
    }
}

impl Addressed for HsaBuffer {
    fn size(&self) -> u64 {
        self.size
    }

    fn native(&self, offset: u64) -> u64 {
        let base = match &self.memory {
            Memory::Device(m) | Memory::Host(m) => m.address(),
            Memory::Imported { ptr } => *ptr as u64,
        };
        base + offset
    }
}

/// The hsa backend's object behind a [`Buffer`] of an hsa device.
pub(super) fn hsa_buffer(b: &Buffer) -> Result<&HsaBuffer> {
    b.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a buffer"))
}

impl Drop for HsaBuffer {
    fn drop(&mut self) {
        self.shared.space.release(self.address);
        if let Memory::Imported { ptr } = self.memory {
            // SAFETY: mapped by `import`, unmapped once; queued work keeps
            // its buffers until it is done.
            unsafe { self.shared.api.dma_buf_unmap(ptr) };
        }
    }
}

impl BackendBuffer for HsaBuffer {
    fn device_address(&self) -> u64 {
        self.address
    }

    fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        // In range (the HAL checked), so the offset fits in usize.
        self.host()?.read(offset as usize, dst);
        Ok(())
    }

    fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        self.host()?.write(offset as usize, src);
        Ok(())
    }

    fn map_range(&self, offset: u64, _length: u64) -> Result<*mut u8> {
        Ok(self.host()?.ptr.wrapping_add(offset as usize))
    }

    fn export_dma_buf(&self) -> Result<OwnedFd> {
        let memory = match &self.memory {
            Memory::Device(m) | Memory::Host(m) => m,
            Memory::Imported { .. } => {
                return Err(Error::Unsupported("dma-buf export of an imported dma-buf: export the original".into()))
            }
        };
        // SAFETY: a live allocation of ours.
        unsafe { self.shared.api.dma_buf_export(memory.ptr, memory.size) }.unwrap_or_else(|| {
            Err(Error::Unsupported(
                "dma-buf export: the loaded ROCr has no hsa_amd_portable_export_dmabuf (ROCr 6.0 and later have it)"
                    .into(),
            ))
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
