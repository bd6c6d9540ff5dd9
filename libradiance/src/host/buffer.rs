// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Memory of the host backend: anonymous mappings placed in an emulated
//! 32-bit device address space, so that kernels can address buffers by u32
//! device addresses as they do on Radiance.

use crate::{backend::BackendBuffer, lock::lock, Buffer, BufferParams, Error, Result};
use memmap2::MmapMut;
use std::{
    any::Any,
    collections::BTreeMap,
    os::fd::OwnedFd,
    sync::{Arc, Mutex, Weak},
};

/// The first device address handed out; zero stays unmapped so that a null
/// pointer faults.
const BASE: u64 = 0x1000_0000;
/// One past the last device address handed out: the built-in entry PCs above
/// it are code, not data.
const END: u64 = 0xFFFF_0000;
/// Alignment of every buffer's device address.
const ALIGN: u64 = 256;

/// Which device addresses belong to which live buffer.
#[derive(Default)]
pub(super) struct AddressSpace {
    /// Base address to buffer. Weak: a buffer lives as long as its users hold
    /// it; its `Drop` removes its entry.
    buffers: Mutex<BTreeMap<u64, Weak<HostBuffer>>>,
}

impl AddressSpace {
    /// A new zero-filled buffer at the lowest free address that fits.
    pub(super) fn allocate(self: &Arc<Self>, params: &BufferParams) -> Result<Arc<HostBuffer>> {
        let exhausted = || {
            Error::ResourceExhausted(format!("no {}-byte range left in the 32-bit device address space", params.size))
        };
        let mut buffers = lock(&self.buffers);
        let mut base = BASE;
        for (&start, buffer) in buffers.iter() {
            if base.checked_add(params.size).ok_or_else(exhausted)? <= start {
                break;
            }
            let size = buffer.upgrade().map_or(ALIGN, |b| b.size);
            base = (start + size).next_multiple_of(ALIGN);
        }
        if base.checked_add(params.size).ok_or_else(exhausted)? > END {
            return Err(exhausted());
        }
        let len = usize::try_from(params.size).map_err(|_| exhausted())?;
        let memory =
            MmapMut::map_anon(len).map_err(|e| Error::ResourceExhausted(format!("mapping {len} bytes: {e}")))?;
        let buffer =
            Arc::new(HostBuffer { space: Arc::clone(self), base, size: params.size, memory: Mutex::new(memory) });
        buffers.insert(base, Arc::downgrade(&buffer));
        Ok(buffer)
    }

    /// The live buffer holding device address `address`, and `address`'s
    /// offset in it.
    pub(super) fn resolve(&self, address: u64) -> Option<(Arc<HostBuffer>, u64)> {
        let buffers = lock(&self.buffers);
        let (&base, buffer) = buffers.range(..=address).next_back()?;
        let buffer = buffer.upgrade()?;
        (address - base < buffer.size).then(|| (buffer, address - base))
    }
}

/// A host buffer. Its memory is only touched with `memory` locked, by the
/// host (mapping reads and writes) and by queue workers alike, so the two
/// never race.
pub(super) struct HostBuffer {
    space: Arc<AddressSpace>,
    base: u64,
    size: u64,
    memory: Mutex<MmapMut>,
}

impl HostBuffer {
    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Runs `f` on the `len` bytes at `offset`.
    pub(super) fn with_bytes<R>(&self, offset: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let mut memory = lock(&self.memory);
        let size = memory.len();
        let bytes =
            usize::try_from(offset).ok().and_then(|start| memory.get_mut(start..start.checked_add(len)?)).ok_or_else(
                || Error::OutOfRange(format!("{len} bytes at {offset} run past the end of a {size}-byte buffer")),
            )?;
        Ok(f(bytes))
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        lock(&self.space.buffers).remove(&self.base);
    }
}

/// The host backend's object behind a [`Buffer`] of a host device.
pub(super) fn host_buffer(b: &Buffer) -> Result<&HostBuffer> {
    b.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a buffer"))
}

impl BackendBuffer for HostBuffer {
    fn device_address(&self) -> u64 {
        self.base
    }

    fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.with_bytes(offset, dst.len(), |bytes| dst.copy_from_slice(bytes))
    }

    fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        self.with_bytes(offset, src.len(), |bytes| bytes.copy_from_slice(src))
    }

    fn map_range(&self, offset: u64, _length: u64) -> Result<*mut u8> {
        // The mapping never moves, so the pointer outlives the lock; the
        // range is inside it, so the offset fits in usize.
        Ok(lock(&self.memory).as_mut_ptr().wrapping_add(offset as usize))
    }

    fn export_dma_buf(&self) -> Result<OwnedFd> {
        Err(Error::Unsupported(
            "dma-buf export: the host backend's memory is plain process memory with no kernel driver to export it"
                .into(),
        ))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
