// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The transport: the seam the Merlin IREE driver's radiance HAL calls
//! (`transport/transport.h` in ucb-bar/merlin), with all of its logic, over
//! the HAL. A drop-in `transport/kmod.c` for Merlin is only glue over the C
//! ABI of this (`radiance_transport_*`, `include/libradiance.h`).
//!
//! Documentation/design/libradiance.md (`transport.rs`) has the rest of its story.

use crate::{
    Buffer, BufferParams, BufferUsage, Device, DeviceRange, Error, Launch, MemoryType, Pattern, Queue, Result,
    Semaphore,
};
use std::{
    collections::{btree_map::Entry, BTreeMap},
    time::Duration,
};

/// Bytes of the stack each stream's launches get.
pub const STACK_BYTES: u64 = 1 << 20;
/// Bytes of thread-local storage each stream's launches get.
pub const TLS_BYTES: u64 = 64 << 10;

/// How long `synchronize` waits before it calls the device lost.
const SYNC_TIMEOUT: Duration = Duration::from_secs(600);

/// A device-to-host copy waiting for `synchronize`: its staging buffer, and
/// the caller's token for where the bytes go.
struct Pending {
    staging: Buffer,
    host: usize,
}

struct Stream {
    queue: Queue,
    semaphore: Semaphore,
    /// Operations queued so far: the value the last one signals.
    value: u64,
    pending: Vec<Pending>,
    /// Made on the stream's first dispatch.
    frame: Option<(Buffer, Buffer)>,
}

struct Allocation {
    address: u64,
    buffer: Buffer,
}

/// One device as the seam sees it.
pub struct Transport {
    device: Device,
    allocations: Vec<Allocation>,
    streams: BTreeMap<u8, Stream>,
}

impl Transport {
    /// Opens the device at `uri` (`kmod:0`, `host`, ...).
    pub fn new(uri: &str) -> Result<Self> {
        Ok(Self { device: Device::open(uri)?, allocations: Vec::new(), streams: BTreeMap::new() })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Allocates `bytes` of device memory; its device address.
    pub fn alloc_device(&mut self, bytes: u32) -> Result<u64> {
        let usage = BufferUsage::TRANSFER | BufferUsage::DISPATCH;
        let buffer =
            self.device.allocate_buffer(BufferParams { size: bytes.into(), memory: MemoryType::Device, usage })?;
        let address = buffer.device_address();
        self.allocations.push(Allocation { address, buffer });
        Ok(address)
    }

    /// The allocation holding `[address, address + length)`, and the
    /// offset in it.
    fn find(&self, address: u64, length: u32) -> Result<(Buffer, u64)> {
        self.allocations
            .iter()
            .find(|a| address >= a.address && address - a.address + u64::from(length) <= a.buffer.size())
            .map(|a| (a.buffer.clone(), address - a.address))
            .ok_or_else(|| Error::InvalidArgument(format!("{address:#x}+{length} is not inside one allocation")))
    }

    /// The stream's queue and semaphore, made on first use.
    fn stream(&mut self, id: u8) -> Result<&mut Stream> {
        Ok(match self.streams.entry(id) {
            Entry::Occupied(stream) => stream.into_mut(),
            Entry::Vacant(slot) => slot.insert(Stream {
                queue: self.device.create_queue()?,
                semaphore: self.device.create_semaphore(0)?,
                value: 0,
                pending: Vec::new(),
                frame: None,
            }),
        })
    }

    /// Queues `op` on stream `id`, after its last operation; counts it if
    /// it was queued.
    fn queued(
        &mut self,
        id: u8,
        op: impl FnOnce(&Queue, &[(&Semaphore, u64)], &[(&Semaphore, u64)]) -> Result<()>,
    ) -> Result<()> {
        let s = self.stream(id)?;
        op(&s.queue, &[(&s.semaphore, s.value)], &[(&s.semaphore, s.value + 1)])?;
        s.value += 1;
        Ok(())
    }

    /// H2D: `src` (captured now) to device address `dst`.
    pub fn copy_to_device(&mut self, stream: u8, src: &[u8], dst: u64) -> Result<()> {
        let length = u32::try_from(src.len()).map_err(|_| Error::InvalidArgument("a copy over 4 GiB".into()))?;
        let (buffer, offset) = self.find(dst, length)?;
        self.queued(stream, |q, waits, signals| q.update(waits, signals, src, buffer.at(offset)))
    }

    /// D2H: `length` bytes at device address `src`, delivered to `host` (the
    /// caller's token) at `synchronize`.
    pub fn copy_to_host(&mut self, stream: u8, src: u64, length: u32, host: usize) -> Result<()> {
        let (buffer, offset) = self.find(src, length)?;
        let usage = BufferUsage::TRANSFER | BufferUsage::MAPPING;
        let params = BufferParams { size: length.into(), memory: MemoryType::HostVisible, usage };
        let staging = self.device.allocate_buffer(params)?;
        self.queued(stream, |q, waits, signals| {
            q.copy(waits, signals, buffer.at(offset), staging.at(0), length.into())
        })?;
        self.stream(stream)?.pending.push(Pending { staging, host });
        Ok(())
    }

    /// Fills `length` bytes at device address `dst` with the 4-byte `value`.
    pub fn fill(&mut self, stream: u8, dst: u64, value: u32, length: u32) -> Result<()> {
        let (buffer, offset) = self.find(dst, length)?;
        let pattern = Pattern::U32(value);
        self.queued(stream, |q, waits, signals| q.fill(waits, signals, buffer.at(offset), length.into(), pattern))
    }

    /// Launches `launch` on `stream`, with the stream's stack and TLS in
    /// place of its own.
    pub fn dispatch(&mut self, stream: u8, mut launch: Launch) -> Result<()> {
        let device = self.device.clone();
        let (stack, tls) = match &mut self.stream(stream)?.frame {
            Some(frame) => frame,
            frame @ None => {
                let usage = BufferUsage::DISPATCH;
                let alloc = |size| device.allocate_buffer(BufferParams { size, memory: MemoryType::Device, usage });
                frame.insert((alloc(STACK_BYTES)?, alloc(TLS_BYTES)?))
            }
        };
        let range = |buffer: &Buffer| Some(DeviceRange { buffer: buffer.clone(), offset: 0, size: buffer.size() });
        (launch.stack, launch.tls) = (range(stack), range(tls));
        self.queued(stream, |q, waits, signals| q.dispatch(waits, signals, launch))
    }

    /// Waits for everything queued on `stream`, then hands each pending
    /// device-to-host copy's bytes to `deliver(token, bytes)`. The first
    /// failure of the stream's operations, with its message, if one failed;
    /// else the first failure of `deliver` (the remaining copies are
    /// dropped).
    pub fn synchronize(&mut self, stream: u8, mut deliver: impl FnMut(usize, &[u8]) -> Result<()>) -> Result<()> {
        let Some(s) = self.streams.get_mut(&stream) else { return Ok(()) };
        s.semaphore.wait(s.value, SYNC_TIMEOUT)?;
        for p in s.pending.drain(..) {
            let mut bytes = vec![0; p.staging.size() as usize];
            p.staging.map()?.read(0, &mut bytes)?;
            deliver(p.host, &bytes)?;
        }
        Ok(())
    }
}
