// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A user-mode queue of a kmod device: packets are written straight into the
//! mapped ring; `flush` publishes them and rings the doorbell only when the
//! kernel's scheduler sleeps (`needs_kick`), so a busy queue costs no
//! syscalls.

use super::{ioctl, staging::StagingRing, BufferObject, Device, Placement, Semaphore};
use crate::{Error, Launch, Pattern, Result};
use core::mem::offset_of;
use memmap2::{MmapMut, MmapOptions};
use radiance_uapi as uapi;
use rustix::io::Errno;
use std::{
    os::fd::OwnedFd,
    sync::{
        atomic::{AtomicU32, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

/// Bytes of each queue's staging ring (pinned host memory).
const STAGING_BYTES: u64 = 256 << 10;

/// Staged bytes: in the ring, or in a buffer object of their own.
enum Staged {
    Ring(u64),
    Own(BufferObject),
}

/// A range of a VRAM buffer object: the BO, an offset, bytes.
pub type VramRange<'a> = (&'a BufferObject, u64, u64);

/// Where a launch's start code puts the threads' stacks and thread-local
/// storage (none by default).
#[derive(Clone, Copy, Default)]
pub struct Frame<'a> {
    pub stack: Option<VramRange<'a>>,
    pub tls: Option<VramRange<'a>>,
}

/// Why a queue stopped: what QUEUE_QUERY and the control block say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFault {
    /// The queue's id in its file.
    pub queue: u32,
    /// The positive errno.
    pub error: u32,
    /// The packet that faulted.
    pub packet: u64,
    /// Gluon's ERR_CODE, ERR_PC and ERR_THREAD for a device fault.
    pub err_code: u32,
    pub err_pc: u32,
    pub err_thread: u32,
}

impl QueueFault {
    /// The fault as an error: a device fault names Gluon's error, PC and
    /// thread ([`StatusCode::Aborted`](crate::StatusCode::Aborted)); a
    /// fault the kernel found (a bad packet, a timeout) is its errno.
    pub fn error(&self) -> Error {
        let at = format!("queue {}, packet {}", self.queue, self.packet);
        if self.err_code == 0 {
            return Error::os(format!("{at} faulted"), Errno::from_raw_os_error(self.error as i32));
        }
        let why = match u8::try_from(self.err_code) {
            Ok(uapi::gluon_err::BAD_PC) => "an execution error (a warp faulted, or no code at the PC)",
            Ok(uapi::gluon_err::BAD_ADDRESS) => "an address outside VRAM",
            Ok(uapi::gluon_err::BAD_COMMAND) => "a malformed command",
            Ok(uapi::gluon_err::DMA) => "a DMA transfer failed",
            Ok(uapi::gluon_err::BAD_LAUNCH) => "a malformed launch block",
            _ => "an unknown error code",
        };
        Error::DeviceFault {
            pc: self.err_pc,
            thread: self.err_thread.into(),
            why: format!("{why} (ERR_CODE {}; {at})", self.err_code),
        }
    }
}

/// A queue's control block as the kernel publishes it: completion and
/// fault. Clones share the mapping, which stays readable after the queue
/// is destroyed (it then no longer changes).
#[derive(Clone)]
pub struct QueueStatus {
    id: u32,
    control: Arc<MmapMut>,
}

impl QueueStatus {
    fn u64_at(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: `offset` is an 8-aligned field of the control block, in
        // the mapping that lives as long as `self`.
        unsafe { AtomicU64::from_ptr(self.control.as_ptr().add(offset).cast::<u64>().cast_mut()) }
    }

    fn u32_at(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: as in `u64_at`, for a 4-aligned field.
        unsafe { AtomicU32::from_ptr(self.control.as_ptr().add(offset).cast::<u32>().cast_mut()) }
    }

    /// Packets the kernel has completed.
    pub fn completed(&self) -> u64 {
        self.u64_at(offset_of!(uapi::QueueControl, read_index)).load(Ordering::Acquire)
    }

    /// The fault that stopped the queue, if any.
    pub fn fault(&self) -> Option<QueueFault> {
        let status = self.u32_at(offset_of!(uapi::QueueControl, status)).load(Ordering::SeqCst);
        (status == uapi::queue_status::FAULTED).then(|| QueueFault {
            queue: self.id,
            error: self.u32_at(offset_of!(uapi::QueueControl, error)).load(Ordering::Acquire),
            packet: self.u64_at(offset_of!(uapi::QueueControl, fault_index)).load(Ordering::Acquire),
            err_code: self.u32_at(offset_of!(uapi::QueueControl, err_code)).load(Ordering::Acquire),
            err_pc: self.u32_at(offset_of!(uapi::QueueControl, err_pc)).load(Ordering::Acquire),
            err_thread: self.u32_at(offset_of!(uapi::QueueControl, err_thread)).load(Ordering::Acquire),
        })
    }
}

/// A queue; destroyed when dropped: what it has not completed is
/// cancelled (its signals fail with ECANCELED).
pub struct Queue {
    fd: Arc<OwnedFd>,
    id: u32,
    packets: u32,
    ring: MmapMut,
    status: QueueStatus,
    /// Packets written so far (published or not).
    written: u64,
    /// The write index last published.
    published: u64,
    /// Where UPDATE data and LAUNCH blocks are staged.
    ring_staging: StagingRing,
    /// Staged bytes that did not fit in the ring, each in a buffer object
    /// of its own, with the ring index after which it may go.
    staging: Vec<(u64, BufferObject)>,
    /// Packets of the operation inside [`Queue::with_semaphores`], held
    /// back until its wait packets (which count them) are written.
    batch: Option<Batch>,
    /// The batch's memory between operations, kept to save an allocation
    /// per operation.
    spare: Vec<uapi::Packet>,
    /// The kernel's ABI minor version: SKIP_ON_FAILURE needs 1.7,
    /// LAUNCH_DESC 1.8.
    abi_minor: u16,
}

/// Packets held back, and the ring index the first of them will get.
struct Batch {
    base: u64,
    packets: Vec<uapi::Packet>,
}

impl Device {
    /// A queue with a ring of `packets` packets (a power of two, 16 to
    /// 65536).
    pub fn create_queue(&self, packets: u32) -> Result<Queue> {
        let mut args = uapi::QueueCreate { ring_packets: packets, ..Default::default() };
        ioctl::queue_create(&*self.fd, &mut args).map_err(|e| Error::os("QUEUE_CREATE", e))?;
        let map = |offset: u64, len: usize| {
            // SAFETY: the ring and the control block are shared with the
            // kernel, which this module only touches through volatile writes
            // and atomics.
            unsafe { MmapOptions::new().offset(offset).len(len).map_mut(self.fd.as_ref()) }
                .map_err(|e| Error::io("mmap queue", &e))
        };
        let page = rustix::param::page_size();
        let mapped = map(args.ring_offset, (packets as usize * uapi::PACKET_SIZE).next_multiple_of(page))
            .and_then(|ring| Ok((ring, map(args.control_offset, page)?)))
            .and_then(|(ring, control)| Ok((ring, control, StagingRing::new(self, STAGING_BYTES)?)));
        let (ring, control, ring_staging) = match mapped {
            Ok(maps) => maps,
            Err(e) => {
                // The queue exists: do not leave it behind.
                let mut destroy = uapi::QueueDestroy { queue_id: args.queue_id, pad: 0 };
                let _ = ioctl::queue_destroy(&*self.fd, &mut destroy);
                return Err(e);
            }
        };
        Ok(Queue {
            fd: self.fd.clone(),
            id: args.queue_id,
            packets,
            ring,
            status: QueueStatus { id: args.queue_id, control: Arc::new(control) },
            written: 0,
            published: 0,
            ring_staging,
            staging: Vec::new(),
            batch: None,
            spare: Vec::new(),
            abi_minor: self.info.abi_minor,
        })
    }
}

impl Queue {
    /// The control block, shareable.
    pub fn status(&self) -> &QueueStatus {
        &self.status
    }

    /// Packets the kernel has completed.
    pub fn completed(&self) -> u64 {
        self.status.completed()
    }

    /// The fault that stopped the queue, if any.
    pub fn fault(&self) -> Option<QueueFault> {
        self.status.fault()
    }

    fn fault_error(&self) -> Option<Error> {
        self.fault().map(|f| f.error())
    }

    /// Packets written so far, published or not: the ring index the next
    /// packet gets (what `completed()` reaches once all of them completed).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The ring index the next packet will get, counting held-back ones.
    fn next_index(&self) -> u64 {
        self.batch.as_ref().map_or(self.written, |b| b.base + b.packets.len() as u64)
    }

    /// Writes one packet, or holds it back inside `with_semaphores`.
    fn put<T: Copy>(&mut self, packet: T) -> Result<()> {
        const { assert!(size_of::<T>() == uapi::PACKET_SIZE) };
        // SAFETY: `T` is a 64-byte uapi packet of plain integers, as is
        // `Packet`; any bytes are a valid `Packet`.
        let packet = unsafe { std::mem::transmute_copy::<T, uapi::Packet>(&packet) };
        match &mut self.batch {
            Some(batch) => {
                batch.packets.push(packet);
                Ok(())
            }
            None => self.write(packet),
        }
    }

    /// Writes one packet into the ring, waiting for space (publishing what
    /// is written so the kernel can make room).
    fn write(&mut self, packet: uapi::Packet) -> Result<()> {
        while self.written - self.completed() >= u64::from(self.packets) {
            if let Some(e) = self.fault_error() {
                return Err(e);
            }
            self.flush()?;
            std::thread::yield_now();
        }
        let slot = (self.written % u64::from(self.packets)) as usize * uapi::PACKET_SIZE;
        // SAFETY: the slot is 64 bytes inside the ring mapping; the kernel
        // does not read it before `write_index` covers it (release store in
        // `flush`).
        unsafe { std::ptr::write_volatile(self.ring.as_mut_ptr().add(slot).cast::<uapi::Packet>(), packet) };
        self.written += 1;
        let completed = self.completed();
        self.staging.retain(|(last, _)| *last >= completed);
        Ok(())
    }

    fn header(kind: u8, barrier: bool) -> uapi::PacketHeader {
        let flags = if barrier { uapi::packet_flags::BARRIER } else { 0 };
        uapi::PacketHeader { kind, flags, ..Default::default() }
    }

    /// Fills `size` bytes of `dst` from `offset` with `pattern`.
    pub fn fill(&mut self, dst: &BufferObject, offset: u64, size: u64, pattern: Pattern) -> Result<()> {
        let (pattern_size, value) = match pattern {
            Pattern::U8(v) => (1, u32::from(v)),
            Pattern::U16(v) => (2, u32::from(v)),
            Pattern::U32(v) => (4, v),
        };
        self.put(uapi::FillPacket {
            header: Self::header(uapi::packet_kind::FILL, false),
            dst: dst.handle(),
            pattern_size,
            dst_offset: offset,
            size,
            pattern: value,
            ..Default::default()
        })
    }

    /// Copies `size` bytes between two buffer objects of the device.
    pub fn copy(
        &mut self,
        src: &BufferObject,
        src_offset: u64,
        dst: &BufferObject,
        dst_offset: u64,
        size: u64,
    ) -> Result<()> {
        self.copy_handles(src.handle(), src_offset, dst.handle(), dst_offset, size)
    }

    fn copy_handles(&mut self, src: u32, src_offset: u64, dst: u32, dst_offset: u64, size: u64) -> Result<()> {
        self.put(uapi::CopyPacket {
            header: Self::header(uapi::packet_kind::COPY, false),
            src,
            dst,
            src_offset,
            dst_offset,
            size,
            ..Default::default()
        })
    }

    /// Host memory holding `bytes` (within one page if `one_page`): the
    /// queue's staging ring, or a buffer object of their own when the ring
    /// has no room.
    fn stage(&mut self, device: &Device, bytes: &[u8], one_page: bool) -> Result<Staged> {
        self.ring_staging.retire(self.completed());
        if let Some(offset) = self.ring_staging.stage(bytes, one_page) {
            return Ok(Staged::Ring(offset));
        }
        let bo = device.create_bo(bytes.len() as u64, Placement::Host, true)?;
        bo.map()?[..bytes.len()].copy_from_slice(bytes);
        Ok(Staged::Own(bo))
    }

    /// The buffer object handle and offset of staged bytes.
    fn staged_at(&self, staged: &Staged) -> (u32, u64) {
        match staged {
            Staged::Ring(offset) => (self.ring_staging.bo().handle(), *offset),
            Staged::Own(bo) => (bo.handle(), 0),
        }
    }

    /// Overwrites the start of staged bytes, before the packet that reads
    /// them is put.
    fn rewrite_staged(&mut self, staged: &Staged, bytes: &[u8]) -> Result<()> {
        match staged {
            Staged::Ring(offset) => self.ring_staging.rewrite(*offset, bytes),
            Staged::Own(bo) => {
                let mut map = bo.map()?;
                map.get_mut(..bytes.len())
                    .ok_or_else(|| Error::InvalidArgument("staged bytes".into()))?
                    .copy_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// Keeps staged bytes until the packet just put (which reads them)
    /// completes.
    fn keep(&mut self, staged: Staged) {
        let end = self.next_index();
        match staged {
            Staged::Ring(_) => self.ring_staging.keep_until(end),
            Staged::Own(bo) => self.staging.push((end, bo)),
        }
    }

    /// Writes `data` (copied now, through staging host memory) to `dst`.
    pub fn update(&mut self, device: &Device, data: &[u8], dst: &BufferObject, offset: u64) -> Result<()> {
        let staged = self.stage(device, data, false)?;
        let (handle, at) = self.staged_at(&staged);
        self.copy_handles(handle, at, dst.handle(), offset, data.len() as u64)?;
        self.keep(staged);
        Ok(())
    }

    /// Launches a kernel, with its stack and TLS in `frame`; its
    /// descriptor goes through staging memory and the kernel builds the
    /// device's launch block from it.
    pub fn launch(&mut self, device: &Device, launch: &Launch, frame: Frame<'_>) -> Result<()> {
        self.launch_desc(device, launch, frame, None).map(drop)
    }

    /// Launches a kernel with a printf ring of up to `limit` bytes; the text
    /// it prints can be read from the result once the launch completed.
    pub fn launch_with_printf(&mut self, device: &Device, launch: &Launch, limit: u32) -> Result<Printf> {
        let out = self.launch_desc(device, launch, Frame::default(), Some(limit))?;
        out.map(|bo| Printf { bo }).ok_or_else(|| Error::InvalidArgument("no printf buffer".into()))
    }

    /// Writes the launch descriptor and its params (and a host buffer for
    /// printf text of `limit` bytes, if asked) and the LAUNCH_DESC packet.
    fn launch_desc(
        &mut self,
        device: &Device,
        launch: &Launch,
        frame: Frame<'_>,
        limit: Option<u32>,
    ) -> Result<Option<BufferObject>> {
        if self.abi_minor < 8 {
            return Err(Error::Status {
                code: crate::StatusCode::Incompatible,
                message: format!("kernel ABI 1.{} has no LAUNCH_DESC (needs 1.8)", self.abi_minor),
            });
        }
        let range = |r: Option<VramRange<'_>>| match r {
            Some((bo, offset, size)) if bo.placement() == Placement::Vram => Ok((bo.handle(), offset, size)),
            Some(_) => Err(Error::InvalidArgument("a launch's stack and TLS must be in VRAM".into())),
            None => Ok((0, 0, 0)),
        };
        let ((stack, stack_offset, stack_size), (tls, tls_offset, tls_size)) = (range(frame.stack)?, range(frame.tls)?);
        let params_size = u32::try_from(launch.params.len())
            .map_err(|_| Error::InvalidArgument(format!("{} bytes of params", launch.params.len())))?;
        let mut desc = uapi::LaunchDesc {
            start_pc: launch.start_pc,
            kernel_pc: launch.kernel_pc(),
            grid: launch.grid,
            block: launch.block,
            shmem_per_block: launch.shmem_per_block,
            // The device wants at least one.
            regs_per_thread: launch.regs_per_thread.max(1),
            params_size,
            stack,
            stack_offset,
            stack_size,
            tls,
            tls_offset,
            tls_size,
            ..Default::default()
        };
        let desc_size = size_of::<uapi::LaunchDesc>();
        // The params follow the descriptor in the same staged bytes.
        let mut staged_bytes = vec![0; desc_size + launch.params.len()];
        staged_bytes[desc_size..].copy_from_slice(&launch.params);
        let staged = self.stage(device, &staged_bytes, true)?;
        let (handle, at) = self.staged_at(&staged);
        desc.params_offset = at + desc_size as u64;
        self.rewrite_staged(&staged, as_bytes(&desc))?;
        let out = match limit {
            Some(limit) => Some(device.create_bo(4 + u64::from(limit), Placement::Host, true)?),
            None => None,
        };
        self.put(uapi::LaunchPacket {
            header: Self::header(uapi::packet_kind::LAUNCH_DESC, false),
            block: handle,
            block_offset: at,
            block_size: desc_size as u64,
            printf: out.as_ref().map_or(0, BufferObject::handle),
            printf_size: limit.map_or(0, |limit| 4 + u64::from(limit)),
            ..Default::default()
        })?;
        self.keep(staged);
        Ok(out)
    }

    /// A packet that does nothing but complete in order.
    pub fn nop(&mut self) -> Result<()> {
        self.put(uapi::Packet { header: Self::header(uapi::packet_kind::NOP, false), ..Default::default() })
    }

    /// Everything after this starts only when everything before it ended.
    pub fn barrier(&mut self) -> Result<()> {
        self.put(uapi::Packet { header: Self::header(uapi::packet_kind::FENCE, true), ..Default::default() })
    }

    fn semaphore_packet(&mut self, kind: u8, sem: &Semaphore, value: u64) -> Result<()> {
        self.put(uapi::SemaphorePacket {
            header: Self::header(kind, false),
            handle: sem.handle(),
            value,
            ..Default::default()
        })
    }

    /// The queue goes no further until `sem` reaches `value`; if `sem`
    /// fails, the queue faults with its error.
    pub fn wait(&mut self, sem: &Semaphore, value: u64) -> Result<()> {
        self.semaphore_packet(uapi::packet_kind::WAIT_SEMAPHORE, sem, value)
    }

    /// Raises `sem` to `value` when everything before has completed.
    pub fn signal(&mut self, sem: &Semaphore, value: u64) -> Result<()> {
        self.semaphore_packet(uapi::packet_kind::SIGNAL_SEMAPHORE, sem, value)
    }

    /// Runs `op` (any of the methods above) after every `(semaphore, value)`
    /// of `waits` is reached, and raises every one of `signals` once it and
    /// everything before it completed — the HAL's wait and signal lists, as
    /// WAIT_SEMAPHORE and SIGNAL_SEMAPHORE packets around it.
    ///
    /// The packets form one unit: if a wait's semaphore fails, nothing of
    /// `op` runs, every one of `signals` fails with that error, and the
    /// queue goes on with what follows (each wait carries SKIP_ON_FAILURE
    /// and the count of packets after it). If `op` fails, nothing is
    /// written.
    pub fn with_semaphores(
        &mut self,
        waits: &[(&Semaphore, u64)],
        signals: &[(&Semaphore, u64)],
        op: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        if !waits.is_empty() && self.abi_minor < 7 {
            return Err(Error::Status {
                code: crate::StatusCode::Incompatible,
                message: format!("kernel ABI 1.{} cannot skip a failed wait's work (needs 1.7)", self.abi_minor),
            });
        }
        let packets = std::mem::take(&mut self.spare);
        self.batch = Some(Batch { base: self.written + waits.len() as u64, packets });
        let done = op(self);
        let mut body = self.batch.take().map(|b| b.packets).unwrap_or_default();
        if let Err(e) = done {
            // Staging memory of packets that will never be written.
            let written = self.written;
            self.staging.retain(|(last, _)| *last <= written);
            return Err(e);
        }
        let after = body.len() + signals.len();
        for (i, (sem, value)) in waits.iter().enumerate() {
            let skip = u32::try_from(waits.len() - 1 - i + after)
                .map_err(|_| Error::InvalidArgument(format!("{after} packets in one submission")))?;
            self.put(uapi::SemaphorePacket {
                header: uapi::PacketHeader {
                    kind: uapi::packet_kind::WAIT_SEMAPHORE,
                    flags: uapi::packet_flags::SKIP_ON_FAILURE,
                    ..Default::default()
                },
                handle: sem.handle(),
                skip,
                value: *value,
                ..Default::default()
            })?;
        }
        for packet in body.drain(..) {
            self.write(packet)?;
        }
        self.spare = body;
        for (sem, value) in signals {
            self.signal(sem, *value)?;
        }
        Ok(())
    }

    /// Publishes the packets written; kicks only if the scheduler sleeps.
    /// With nothing written since the last flush it does nothing: the
    /// scheduler, once it asks for kicks, looks at the queue once more, and
    /// so saw everything published before.
    pub fn flush(&mut self) -> Result<()> {
        if self.written == self.published {
            return Ok(());
        }
        self.status.u64_at(offset_of!(uapi::QueueControl, write_index)).store(self.written, Ordering::SeqCst);
        self.published = self.written;
        // Sequentially consistent against the kernel's fully ordered
        // needs_kick update: either it sees our index or we see its flag.
        if self.status.u32_at(offset_of!(uapi::QueueControl, needs_kick)).load(Ordering::SeqCst) != 0 {
            self.kick()?;
        }
        Ok(())
    }

    /// Rings the queue's doorbell (QUEUE_KICK) whatever was published: the
    /// scheduler runs a pass, here with nothing new to take. For measuring
    /// what a pass costs; [`Queue::flush`] rings it when it is needed.
    pub fn kick(&self) -> Result<()> {
        let mut args = uapi::QueueKick { queue_id: self.id, pad: 0 };
        ioctl::queue_kick(&*self.fd, &mut args).map_err(|e| Error::os("QUEUE_KICK", e))
    }

    /// Flushes and waits until every packet completed (or the queue
    /// faulted: its error), polling with backoff; `deadline` None waits for
    /// ever.
    pub fn finish(&mut self, deadline: Option<Instant>) -> Result<()> {
        self.flush()?;
        let mut pause = Duration::from_micros(1);
        while self.completed() < self.written {
            if let Some(e) = self.fault_error() {
                return Err(e);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::DeadlineExceeded);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
        self.staging.clear();
        Ok(())
    }
}

/// The bytes of a uapi struct (plain integers, no padding).
fn as_bytes<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: only used for `repr(C)` uapi structs of integers without
    // padding (checked by uapi/tests/c_header.rs), so every byte is set.
    unsafe { std::slice::from_raw_parts(std::ptr::from_ref(value).cast::<u8>(), size_of::<T>()) }
}

/// Where a launch's printf text lands.
pub struct Printf {
    bo: BufferObject,
}

impl Printf {
    /// The text the launch printed (once it completed).
    pub fn text(&self) -> Result<String> {
        let map = self.bo.map()?;
        let len = u32::from_le_bytes([map[0], map[1], map[2], map[3]]) as usize;
        let text = map.get(4..4 + len).ok_or_else(|| Error::InvalidArgument(format!("printf length {len}")))?;
        Ok(String::from_utf8_lossy(text).into_owned())
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let mut args = uapi::QueueDestroy { queue_id: self.id, pad: 0 };
        // Only a bad id can fail, and this one is ours.
        let _ = ioctl::queue_destroy(&*self.fd, &mut args);
    }
}
