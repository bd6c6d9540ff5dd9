// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Memory of the cuda backend: device memory (cuMemAlloc), pinned host
//! memory mapped for the device (cuMemHostAlloc), and the 32-bit device
//! addresses that the HAL hands out.
//!
//! Radiance kernels take u32 addresses, and the conformance suite checks
//! that buffers get them, so each buffer also gets an address in an emulated
//! 32-bit space; a launch of a built-in translates its address parameters to
//! CUDA pointers, checked against the buffer they fall in (a bad address
//! fails the launch on the host, never faults the CUDA context).

use super::{device::Shared, sys::CUdeviceptr};
use crate::native_launch::Addressed;
use crate::{backend::BackendBuffer, lock::lock, Buffer, BufferParams, Error, MemoryType, Result};
use std::{
    any::Any,
    os::fd::OwnedFd,
    sync::{
        atomic::{AtomicU32, AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

/// Pinned host memory, mapped for the device: the words that stop SPIN
/// launches, update staging, host-visible buffers.
pub(super) struct Pinned {
    shared: Arc<Shared>,
    host: *mut u8,
    device: CUdeviceptr,
    size: usize,
}

// SAFETY: the memory is plain process memory; who touches it when is up to
// the owners, as for any buffer.
unsafe impl Send for Pinned {}
// SAFETY: as above.
unsafe impl Sync for Pinned {}

impl Pinned {
    pub(super) fn new(shared: &Arc<Shared>, size: usize) -> Result<Self> {
        let _current = shared.ctx.enter()?;
        let (host, device) = shared.ctx.api().mem_host_alloc(size)?;
        Ok(Self { shared: Arc::clone(shared), host, device, size })
    }

    /// Its device address.
    pub(super) fn device(&self) -> CUdeviceptr {
        self.device
    }

    /// The u32 at byte `offset` (a multiple of 4 inside the allocation), to
    /// share with the device.
    pub(super) fn u32_at(&self, offset: usize) -> &AtomicU32 {
        assert!(offset % 4 == 0 && offset + 4 <= self.size, "u32 at {offset} of {}", self.size);
        // SAFETY: in range and aligned (the allocation is page-aligned); the
        // device only touches it with whole aligned 32-bit accesses.
        unsafe { AtomicU32::from_ptr(self.host.add(offset).cast()) }
    }

    /// Copies `src` in at `offset` (in range).
    pub(super) fn write(&self, offset: usize, src: &[u8]) {
        assert!(offset + src.len() <= self.size);
        // SAFETY: in range; the host and the device may race on a buffer's
        // bytes, as the HAL allows, but never on memory safety.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.host.add(offset), src.len()) }
    }

    /// Copies out to `dst` from `offset` (in range).
    pub(super) fn read(&self, offset: usize, dst: &mut [u8]) {
        assert!(offset + dst.len() <= self.size);
        // SAFETY: as in `write`.
        unsafe { std::ptr::copy_nonoverlapping(self.host.add(offset), dst.as_mut_ptr(), dst.len()) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        free(Allocation { shared: Arc::clone(&self.shared), memory: Raw::Host(self.host) });
    }
}

/// Memory to give back to the driver. Owners keep queued work's memory
/// alive until the work is done, so no device work uses it any more.
struct Allocation {
    shared: Arc<Shared>,
    memory: Raw,
}

enum Raw {
    Host(*mut u8),
    Device(CUdeviceptr),
}

// SAFETY: the memory is no one's any more; any thread may free it.
unsafe impl Send for Allocation {}

/// SPIN launches running in this process. The driver waits for the whole
/// device to go idle when memory is freed, so while one runs, a free would
/// wait for ever: frees wait in [`DEFERRED`] until the last one stops.
static SPINNING: AtomicUsize = AtomicUsize::new(0);
static DEFERRED: Mutex<Vec<Allocation>> = Mutex::new(Vec::new());

fn free(allocation: Allocation) {
    if SPINNING.load(Ordering::Acquire) > 0 {
        return lock(&DEFERRED).push(allocation);
    }
    let Allocation { shared, memory } = allocation;
    let api = shared.ctx.api();
    let Ok(current) = shared.ctx.enter() else { return };
    // SAFETY: allocated by `Pinned::new` or `CudaBuffer::allocate`, and
    // freed once, here.
    let _ = unsafe {
        match memory {
            Raw::Host(host) => api.mem_free_host(host),
            Raw::Device(ptr) => api.mem_free(ptr),
        }
    };
    drop(current);
}

/// Notes a SPIN launch queued.
pub(super) fn spin_started() {
    SPINNING.fetch_add(1, Ordering::AcqRel);
}

/// Notes `n` SPIN launches stopped (their queue closed and drained); frees
/// what waited for the last.
pub(super) fn spins_stopped(n: usize) {
    if n > 0 && SPINNING.fetch_sub(n, Ordering::AcqRel) == n {
        let deferred = std::mem::take(&mut *lock(&DEFERRED));
        deferred.into_iter().for_each(free);
    }
}

/// Where a buffer's bytes are.
enum Memory {
    Device { ptr: CUdeviceptr },
    Host(Pinned),
}

/// A buffer of the cuda backend.
pub(super) struct CudaBuffer {
    shared: Arc<Shared>,
    address: u64,
    size: u64,
    memory: Memory,
}

impl CudaBuffer {
    pub(super) fn allocate(shared: &Arc<Shared>, params: &BufferParams) -> Result<Arc<Self>> {
        let too_big = || Error::ResourceExhausted(format!("a {}-byte buffer", params.size));
        let len = usize::try_from(params.size).map_err(|_| too_big())?;
        let address = shared.space.reserve(params.size)?;
        let memory = match params.memory {
            // Zeroed, as the host backend's are: pinned pages may be reused.
            MemoryType::HostVisible => Pinned::new(shared, len).map(|p| {
                // SAFETY: the whole fresh allocation.
                unsafe { p.host.write_bytes(0, len) };
                Memory::Host(p)
            }),
            MemoryType::Device => {
                shared.ctx.enter().and_then(|_current| Ok(Memory::Device { ptr: shared.ctx.api().mem_alloc(len)? }))
            }
        };
        let memory = memory.inspect_err(|_| shared.space.release(address))?;
        let buffer = Arc::new(Self { shared: Arc::clone(shared), address, size: params.size, memory });
        shared.space.bind(address, &buffer);
        Ok(buffer)
    }

    /// The CUDA address of byte `offset`.
    pub(super) fn ptr(&self, offset: u64) -> CUdeviceptr {
        match &self.memory {
            Memory::Device { ptr } => ptr + offset,
            Memory::Host(pinned) => pinned.device() + offset,
        }
    }

    fn pinned(&self) -> Result<&Pinned> {
        match &self.memory {
            Memory::Host(pinned) => Ok(pinned),
            Memory::Device { .. } => Err(Error::InvalidArgument("device memory is not host-visible".into())),
        }
    }
}

impl Addressed for CudaBuffer {
    fn native(&self, offset: u64) -> u64 {
        self.ptr(offset)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// The cuda backend's object behind a [`Buffer`] of a cuda device.
pub(super) fn cuda_buffer(b: &Buffer) -> Result<&CudaBuffer> {
    b.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a buffer"))
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        self.shared.space.release(self.address);
        if let Memory::Device { ptr } = self.memory {
            free(Allocation { shared: Arc::clone(&self.shared), memory: Raw::Device(ptr) });
        }
    }
}

impl BackendBuffer for CudaBuffer {
    fn device_address(&self) -> u64 {
        self.address
    }

    fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        // In range (the HAL checked), so the offset fits in usize.
        self.pinned()?.read(offset as usize, dst);
        Ok(())
    }

    fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        self.pinned()?.write(offset as usize, src);
        Ok(())
    }

    fn map_range(&self, offset: u64, _length: u64) -> Result<*mut u8> {
        Ok(self.pinned()?.host.wrapping_add(offset as usize))
    }

    fn export_dma_buf(&self) -> Result<OwnedFd> {
        let Memory::Device { ptr } = self.memory else {
            return Err(Error::Unsupported(
                "dma-buf export: CUDA exports device memory only, and this buffer is pinned host memory".into(),
            ));
        };
        // The driver exports whole host pages.
        let size =
            usize::try_from(self.size.next_multiple_of(4096)).map_err(|_| Error::OutOfRange("buffer size".into()))?;
        let _current = self.shared.ctx.enter()?;
        // SAFETY: a live allocation of ours.
        unsafe { self.shared.ctx.api().dma_buf_export(ptr, size) }.map_err(|e| match e.status() {
            crate::StatusCode::Unimplemented | crate::StatusCode::InvalidArgument => {
                Error::Unsupported(format!("dma-buf export is not available on this device or driver: {e}"))
            }
            _ => e,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
