// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Buffers of device memory: allocated with a memory type and usage, addressed
//! by kernels through their device address, mapped by the host when
//! host-visible, and shared with other drivers as dma-bufs where the backend
//! can.

use crate::{backend::BackendBuffer, lock::lock, Device, Error, Result};
use std::{
    borrow::Cow,
    fmt,
    ops::BitOr,
    os::fd::OwnedFd,
    sync::{Arc, Mutex},
};

/// Where a buffer's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryType {
    /// Device memory (VRAM): fastest for kernels; the host cannot map it.
    Device,
    /// Memory the host can map (pinned system memory, or BAR-visible VRAM;
    /// on kmod without `VRAM_MAPPABLE`, VRAM with a host shadow).
    HostVisible,
}

/// What a buffer may be used for (IREE's `iree_hal_buffer_usage_t`, reduced).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BufferUsage(u32);

impl BufferUsage {
    /// Source or target of queue fill, copy and update.
    pub const TRANSFER: Self = Self(1 << 0);
    /// Read and written by dispatched kernels through its device address.
    pub const DISPATCH: Self = Self(1 << 1);
    /// Mapped by the host (needs [`MemoryType::HostVisible`]).
    pub const MAPPING: Self = Self(1 << 2);
    const KNOWN: u32 = Self::TRANSFER.0 | Self::DISPATCH.0 | Self::MAPPING.0;

    /// The usage with these raw bits (as the C ABI passes them), if all are known.
    pub fn from_bits(bits: u32) -> Option<Self> {
        (bits & !Self::KNOWN == 0).then_some(Self(bits))
    }

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl fmt::Debug for BufferUsage {
    /// The flag names, e.g. `TRANSFER | MAPPING`, for error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [(Self::TRANSFER, "TRANSFER"), (Self::DISPATCH, "DISPATCH"), (Self::MAPPING, "MAPPING")];
        let set: Vec<&str> = names.iter().filter(|(u, _)| self.contains(*u)).map(|(_, n)| *n).collect();
        if set.is_empty() {
            f.write_str("(none)")
        } else {
            f.write_str(&set.join(" | "))
        }
    }
}

impl BitOr for BufferUsage {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// How to allocate a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferParams {
    /// Bytes; more than zero.
    pub size: u64,
    pub memory: MemoryType,
    pub usage: BufferUsage,
}

impl BufferParams {
    /// Rejects what no backend can allocate.
    pub(crate) fn check(&self) -> Result<()> {
        if self.size == 0 {
            return Err(Error::InvalidArgument("buffer size must not be zero".into()));
        }
        if self.usage.contains(BufferUsage::MAPPING) && self.memory != MemoryType::HostVisible {
            return Err(Error::InvalidArgument("a mappable buffer must be host-visible memory".into()));
        }
        Ok(())
    }
}

/// A buffer of one device. Clones share it; its memory is freed when the last
/// clone and the last queue command using it are gone.
#[derive(Clone)]
pub struct Buffer {
    device: Device,
    params: BufferParams,
    inner: Arc<dyn BackendBuffer>,
    /// Its imports on other devices of its group (`bridge.rs`), made on
    /// first use and kept as long as it lives.
    twins: Arc<Mutex<Vec<Buffer>>>,
}

/// A byte position in a buffer: where a queue command starts reading or
/// writing.
#[derive(Clone, Copy)]
pub struct BufferRef<'a> {
    pub buffer: &'a Buffer,
    pub offset: u64,
}

/// Two handles are equal when they are the same buffer.
impl PartialEq for Buffer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Buffer {}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("device_address", &format_args!("{:#x}", self.device_address()))
            .field("params", &self.params)
            .finish()
    }
}

impl Buffer {
    pub(crate) fn new(device: Device, params: BufferParams, inner: Arc<dyn BackendBuffer>) -> Self {
        Self { device, params, inner, twins: Arc::default() }
    }

    /// The same memory as a buffer of `device`, whose queues reach it
    /// through the host.
    pub(crate) fn on(&self, device: &Device) -> Buffer {
        Buffer::new(device.clone(), self.params, Arc::clone(&self.inner))
    }

    /// Its twin on `device`, made by `import` the first time.
    pub(crate) fn twin(&self, device: &Device, import: impl FnOnce() -> Result<Buffer>) -> Result<Cow<'_, Buffer>> {
        let mut twins = lock(&self.twins);
        if let Some(twin) = twins.iter().find(|t| t.device().is(device)) {
            return Ok(Cow::Owned(twin.clone()));
        }
        let twin = import()?;
        twins.push(twin.clone());
        Ok(Cow::Owned(twin))
    }

    /// The device the buffer belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The backend's object, for backends.
    pub(crate) fn backend(&self) -> &dyn BackendBuffer {
        &*self.inner
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.params.size
    }

    /// What the buffer was allocated with.
    pub fn params(&self) -> BufferParams {
        self.params
    }

    /// The address kernels use for byte 0 (32-bit on Radiance backends).
    pub fn device_address(&self) -> u64 {
        self.inner.device_address()
    }

    /// Byte `offset` of this buffer, as a command argument.
    pub fn at(&self, offset: u64) -> BufferRef<'_> {
        BufferRef { buffer: self, offset }
    }

    /// Whether `other` is this buffer (a clone of it). Device addresses do
    /// not tell: imported memory may have none.
    pub(crate) fn is(&self, other: &Buffer) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.inner), Arc::as_ptr(&other.inner))
    }

    /// Fails unless `length` bytes at `offset` lie inside the buffer.
    pub(crate) fn check_range(&self, offset: u64, length: u64) -> Result<()> {
        match offset.checked_add(length) {
            Some(end) if end <= self.size() => Ok(()),
            _ => Err(Error::OutOfRange(format!(
                "range {offset}+{length} runs past the end of a {}-byte buffer",
                self.size()
            ))),
        }
    }

    /// Fails unless the buffer was allocated for `usage`.
    pub(crate) fn check_usage(&self, usage: BufferUsage, what: &str) -> Result<()> {
        if self.params.usage.contains(usage) {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!("{what} needs a buffer allocated with {usage:?} usage")))
        }
    }

    /// Maps a host-visible buffer allocated with [`BufferUsage::MAPPING`].
    /// Host access through the mapping is coherent: what the host writes is
    /// seen by queue work that starts after the write, and what queue work
    /// wrote is seen once a semaphore it signalled is reached.
    pub fn map(&self) -> Result<Mapping<'_>> {
        self.check_usage(BufferUsage::MAPPING, "mapping")?;
        Ok(Mapping { buffer: self })
    }

    /// Where `length` bytes at `offset` of a mappable buffer are mapped in
    /// this process, for the C ABI: valid while the buffer lives and until
    /// [`Buffer::unmap_host`]. Where the host cannot map the device's
    /// memory (kmod without `VRAM_MAPPABLE`), the bytes are a copy made now
    /// and written back at unmap, and a range may be mapped once at a time.
    pub(crate) fn host_ptr(&self, offset: u64, length: u64) -> Result<*mut u8> {
        self.check_usage(BufferUsage::MAPPING, "mapping")?;
        self.check_range(offset, length)?;
        self.inner.map_range(offset, length)
    }

    /// Ends a mapping of `length` bytes at `contents` (from `host_ptr`).
    pub(crate) fn unmap_host(&self, contents: *mut u8, length: u64) -> Result<()> {
        self.inner.unmap_range(contents, length)
    }

    /// Exports the buffer's memory as a dma-buf (where the backend can).
    pub fn export_dma_buf(&self) -> Result<OwnedFd> {
        self.inner.export_dma_buf()
    }
}

/// Host access to a mapped buffer. Reads and writes copy, so that the host
/// never holds a reference into memory the device may be writing.
pub struct Mapping<'a> {
    buffer: &'a Buffer,
}

impl Mapping<'_> {
    /// Fills `dst` from the buffer at `offset`.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.buffer.check_range(offset, dst.len() as u64)?;
        self.buffer.inner.read(offset, dst)
    }

    /// Writes `src` into the buffer at `offset`.
    pub fn write(&self, offset: u64, src: &[u8]) -> Result<()> {
        self.buffer.check_range(offset, src.len() as u64)?;
        self.buffer.inner.write(offset, src)
    }

    /// `count` little-endian u32s at `offset`.
    pub fn read_u32s(&self, offset: u64, count: usize) -> Result<Vec<u32>> {
        let length = count.checked_mul(4).ok_or_else(|| Error::OutOfRange(format!("{count} u32s")))?;
        let mut bytes = vec![0; length];
        self.read(offset, &mut bytes)?;
        Ok(u32s_from_le(&bytes))
    }

    /// Writes `values` as little-endian u32s at `offset`.
    pub fn write_u32s(&self, offset: u64, values: &[u32]) -> Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write(offset, &bytes)
    }
}

/// Little-endian u32s from `bytes` (a trailing partial word is dropped).
pub(crate) fn u32s_from_le(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}
