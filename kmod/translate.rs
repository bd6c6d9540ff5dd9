// SPDX-License-Identifier: GPL-2.0

//! Packet validation and translation: a queue packet in, Gluon commands out.
//!
//! Every handle a packet names must be an object of the queue's file (found
//! through [`FileObjects`]), every range must lie inside its BO, and every
//! word a packet kind does not use must be zero; anything else is the
//! queue's fault, with the errno returned here. One function per packet
//! kind; commands longer than the device takes are split by [`split`].
//!
//! Translation runs under the scheduler's lock: it reads and checks, and
//! syncs memory for DMA, but never pins or maps memory. Launch blocks are
//! copied into pages the scheduler mapped when the device was created
//! ([`LaunchStaging`]).

use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc, //
};

use crate::{
    bo::Bo,
    hw::command::{
        Command,
        CopyDir, //
    },
    queue::FileObjects,
    semaphore::WaitState,
    sg_table::Handover,
    staging::{
        LaunchStaging,
        Slot, //
    },
    uapi::{
        self,
        packet_flags,
        packet_kind, //
    },
    vram,
};

/// The largest single COPY or MEMSET: lengths are 32-bit.
const MAX_COMMAND_BYTES: u64 = 1 << 30;

/// Where launch blocks land in VRAM: the start of the reserved region.
/// Launches run one at a time, so one slot serves all of them.
const LAUNCH_SLOT: u32 = 0;
const _: () = assert!(vram::RESERVED >= 64 * 1024);

/// What a packet's completion does to a semaphore.
#[derive(Clone, Copy)]
pub(crate) enum SemUpdate {
    /// A SIGNAL_SEMAPHORE: raise `handle` to `value`.
    Signal { handle: u32, value: u64 },
    /// A skipped SIGNAL_SEMAPHORE: fail `handle` (unless it reached
    /// `value`) with the positive errno.
    Fail { handle: u32, value: u64, error: u32 },
}

/// What a packet holds until it completes, and what completing it does.
pub(crate) struct Completion {
    /// BOs the commands use, alive while the device may touch them.
    bos: KVec<Arc<Bo>>,
    /// Host ranges the device writes: `(BO, offset, length)`, handed back
    /// to the CPU when the packet completes.
    written: KVec<(Arc<Bo>, u64, u64)>,
    /// The staged launch block, the device's until the launch completes.
    launch: Option<Slot>,
    pub(crate) update: Option<SemUpdate>,
}

impl Completion {
    fn new() -> Self {
        Self {
            bos: KVec::new(),
            written: KVec::new(),
            launch: None,
            update: None,
        }
    }

    /// The device finished the packet: what it wrote goes back to the CPU.
    pub(crate) fn hand_back(&self) {
        for (bo, offset, len) in self.written.iter() {
            // Checked when the packet was translated, so this cannot fail.
            let _ = bo.sync(*offset, *len, Handover::ToCpu);
        }
    }
}

/// One packet's commands, some perhaps not yet in the device.
pub(crate) struct Staged {
    pub(crate) packet: u64,
    pub(crate) commands: KVec<Command>,
    /// The first command not yet pushed.
    pub(crate) next: usize,
    /// Goes with the packet's last command.
    pub(crate) completion: Completion,
}

impl Staged {
    fn push(&mut self, command: Command) -> Result {
        Ok(self.commands.push(command, GFP_KERNEL)?)
    }
}

/// What a packet turned into.
pub(crate) enum Translated {
    /// Commands to run.
    Run(Staged),
    /// A WAIT_SEMAPHORE that is not satisfied yet.
    Blocked,
    /// A LAUNCH, but every staging slot is held by launches in flight: it
    /// is translated again once one completes.
    Busy,
    /// A WAIT_SEMAPHORE with SKIP_ON_FAILURE on a semaphore that failed
    /// with the positive errno `error`: skip it and `count` more packets.
    Skip { count: u32, error: u32 },
}

/// What translation works with.
pub(crate) struct Translator<'a> {
    /// The objects of the queue's file.
    pub(crate) objects: &'a dyn FileObjects,
    /// The device's launch block staging.
    pub(crate) staging: &'a Arc<LaunchStaging>,
}

/// Translates packet `index`, or skips it with the positive errno in
/// `skipping` (a failed wait's SKIP_ON_FAILURE covers it). An error is the
/// queue's fault.
pub(crate) fn translate(
    t: &Translator<'_>,
    index: u64,
    packet: &uapi::Packet,
    skipping: Option<u32>,
) -> Result<Translated> {
    let h = packet.header;
    check_header(&h)?;
    let body = &packet.body;
    let mut out = Staged {
        packet: index,
        commands: KVec::new(),
        next: 0,
        completion: Completion::new(),
    };
    if let Some(error) = skipping {
        // Skipped packets run nothing but still complete in order; a
        // skipped signal fails its semaphore then.
        if h.kind == packet_kind::SIGNAL_SEMAPHORE {
            out.completion.update = Some(SemUpdate::Fail {
                handle: lo(body[0]),
                value: body[1],
                error,
            });
        }
        out.push(Command::Fence)?;
        return Ok(Translated::Run(out));
    }
    if h.flags & packet_flags::BARRIER != 0 {
        out.push(Command::Fence)?;
    }
    match h.kind {
        packet_kind::NOP | packet_kind::FENCE => fence(body, &mut out)?,
        packet_kind::FILL => fill(t, body, &mut out)?,
        packet_kind::COPY => copy(t, body, &mut out)?,
        packet_kind::LAUNCH => {
            if !launch(t, body, &mut out)? {
                return Ok(Translated::Busy);
            }
        }
        packet_kind::WAIT_SEMAPHORE => match wait(t, &h, body)? {
            Wait::Reached => out.push(Command::Fence)?,
            Wait::Pending => return Ok(Translated::Blocked),
            Wait::Skip { count, error } => return Ok(Translated::Skip { count, error }),
        },
        packet_kind::SIGNAL_SEMAPHORE => signal(t, body, &mut out)?,
        packet_kind::READ_COUNTER | packet_kind::TIMESTAMP => counter(t, h.kind, body, &mut out)?,
        _ => return Err(EINVAL),
    }
    Ok(Translated::Run(out))
}

/// Whether [`translate`] would find the packet a WAIT_SEMAPHORE that is
/// not satisfied yet; without translating anything else.
pub(crate) fn blocks(t: &Translator<'_>, packet: &uapi::Packet, skipping: Option<u32>) -> bool {
    let h = packet.header;
    skipping.is_none()
        && h.kind == packet_kind::WAIT_SEMAPHORE
        && check_header(&h).is_ok()
        && matches!(wait(t, &h, &packet.body), Ok(Wait::Pending))
}

fn lo(word: u64) -> u32 {
    word as u32
}

fn hi(word: u64) -> u32 {
    (word >> 32) as u32
}

/// EINVAL unless the body's words from `word` on are zero: words a packet
/// kind does not use.
fn zero_from(body: &[u64; 7], word: usize) -> Result {
    match body.get(word..) {
        Some(rest) if rest.iter().all(|&w| w == 0) => Ok(()),
        _ => Err(EINVAL),
    }
}

fn check_header(h: &uapi::PacketHeader) -> Result {
    if h.reserved != 0 || h.pad != 0 || h.flags & !packet_flags::ALL != 0 {
        return Err(EINVAL);
    }
    if h.flags & packet_flags::SKIP_ON_FAILURE != 0 && h.kind != packet_kind::WAIT_SEMAPHORE {
        return Err(EINVAL);
    }
    Ok(())
}

/// Calls `each(done, n)` over `[0, size)` in pieces of at most
/// [`MAX_COMMAND_BYTES`].
fn split(size: u64, mut each: impl FnMut(u64, u32) -> Result) -> Result {
    let mut done = 0;
    while done < size {
        let n = (size - done).min(MAX_COMMAND_BYTES);
        each(done, n as u32)?;
        done += n;
    }
    Ok(())
}

/// The raw VRAM address of byte `offset` of a VRAM BO.
fn vram_addr(bo: &Bo, offset: u64) -> Result<u32> {
    if bo.placement() != uapi::placement::VRAM {
        return Err(EINVAL);
    }
    u32::try_from(bo.device_address() + offset).map_err(|_| EINVAL)
}

/// The one DMA address of `[offset, offset + size)` of a host BO: Gluon
/// reaches printf output in one piece.
fn single_dma_address(bo: &Bo, offset: u64, size: u64) -> Result<u32> {
    let mut found = None;
    bo.host_pieces(offset, size, &mut |dma, _| {
        if found.replace(dma).is_some() {
            return Err(EINVAL);
        }
        Ok(())
    })?;
    u32::try_from(found.ok_or(EINVAL)?).map_err(|_| EINVAL)
}

/// NOP and FENCE: a FENCE keeps the packet in order and gives it a response.
fn fence(body: &[u64; 7], out: &mut Staged) -> Result {
    zero_from(body, 0)?;
    out.push(Command::Fence)
}

/// FILL: MEMSETs of a VRAM BO with a 1, 2 or 4 byte pattern.
fn fill(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result {
    let (dst, pattern_size, offset, size) = (lo(body[0]), hi(body[0]), body[1], body[2]);
    let (pattern, pad) = (lo(body[3]), hi(body[3]));
    if pad != 0 {
        return Err(EINVAL);
    }
    zero_from(body, 4)?;
    let bo = t.objects.bo(dst)?;
    bo.check_range(offset, size)?;
    let pattern = match pattern_size {
        1 if pattern <= 0xff => pattern * 0x0101_0101,
        2 if pattern <= 0xffff => pattern * 0x0001_0001,
        4 => pattern,
        _ => return Err(EINVAL),
    };
    if offset % u64::from(pattern_size) != 0 || size % u64::from(pattern_size) != 0 {
        return Err(EINVAL);
    }
    split(size, |done, len| {
        out.push(Command::Memset {
            dst: vram_addr(&bo, offset + done)?,
            pattern,
            len,
        })
    })?;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(())
}

/// COPY: between two VRAM BOs, or a host BO and a VRAM BO in either
/// direction (Gluon copies to or from VRAM only).
fn copy(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result {
    let (src, dst, src_off, dst_off, size) = (lo(body[0]), hi(body[0]), body[1], body[2], body[3]);
    zero_from(body, 4)?;
    let (s, d) = (t.objects.bo(src)?, t.objects.bo(dst)?);
    s.check_range(src_off, size)?;
    d.check_range(dst_off, size)?;
    if Arc::ptr_eq(&s, &d) && src_off < dst_off + size && dst_off < src_off + size {
        return Err(EINVAL);
    }
    let vram = uapi::placement::VRAM;
    match (s.placement() == vram, d.placement() == vram) {
        (true, true) => split(size, |done, len| {
            let (src, dst) = (
                vram_addr(&s, src_off + done)?,
                vram_addr(&d, dst_off + done)?,
            );
            out.push(Command::Copy {
                src,
                dst,
                len,
                dir: CopyDir::DeviceToDevice,
            })
        })?,
        (false, true) => host_copy(out, &s, src_off, &d, dst_off, size, CopyDir::HostToDevice)?,
        (true, false) => host_copy(out, &d, dst_off, &s, src_off, size, CopyDir::DeviceToHost)?,
        (false, false) => return Err(EINVAL),
    }
    out.completion.bos.push(s, GFP_KERNEL)?;
    out.completion.bos.push(d, GFP_KERNEL)?;
    Ok(())
}

/// COPY commands between host BO `host` and VRAM BO `vram` (direction
/// `dir`), split where the host side's DMA segments end. What the device
/// will read is handed to it now; what it will write is handed back to the
/// CPU when the packet completes.
fn host_copy(
    out: &mut Staged,
    host: &Arc<Bo>,
    host_off: u64,
    vram: &Bo,
    vram_off: u64,
    size: u64,
    dir: CopyDir,
) -> Result {
    if dir == CopyDir::HostToDevice {
        host.sync(host_off, size, Handover::ToDevice)?;
    } else {
        out.completion
            .written
            .push((host.clone(), host_off, size), GFP_KERNEL)?;
    }
    let mut at = 0;
    host.host_pieces(host_off, size, &mut |dma, piece| {
        split(piece, |done, len| {
            let host_addr = u32::try_from(dma + done).map_err(|_| EINVAL)?;
            let dev = vram_addr(vram, vram_off + at + done)?;
            let (src, dst) = if dir == CopyDir::HostToDevice {
                (host_addr, dev)
            } else {
                (dev, host_addr)
            };
            out.push(Command::Copy { src, dst, len, dir })
        })?;
        at += piece;
        Ok(())
    })
}

/// LAUNCH: the launch block, copied out of its host BO into a staging
/// slot with the printf buffer's DMA address set here (a process never
/// names a DMA address). False if no slot is free.
fn launch(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
    let (block, pad, offset, size) = (lo(body[0]), hi(body[0]), body[1], body[2]);
    let (printf, pad2, printf_offset, printf_size) = (lo(body[3]), hi(body[3]), body[4], body[5]);
    if pad != 0 || pad2 != 0 {
        return Err(EINVAL);
    }
    zero_from(body, 6)?;
    let bo = t.objects.bo(block)?;
    bo.check_range(offset, size)?;
    let size = usize::try_from(size)?;
    if size < size_of::<uapi::LaunchBlock>() || offset as usize % PAGE_SIZE + size > PAGE_SIZE {
        return Err(EINVAL);
    }
    let Some(mut slot) = LaunchStaging::take(t.staging) else {
        return Ok(false);
    };
    let mut copy = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    bo.read_host(offset, &mut copy)?;
    let printf_addr = if printf == 0 {
        if printf_offset != 0 || printf_size != 0 {
            return Err(EINVAL);
        }
        0
    } else {
        let ring = t.objects.bo(printf)?;
        ring.check_range(printf_offset, printf_size)?;
        let limit = printf_ring_limit(&copy).ok_or(EINVAL)?;
        if printf_size < 4 + u64::from(limit) {
            return Err(EINVAL);
        }
        let addr = single_dma_address(&ring, printf_offset, printf_size)?;
        // The device writes only the text it has: the bytes after it must
        // reach the CPU as they were, so they go to the device first.
        ring.sync(printf_offset, printf_size, Handover::ToDevice)?;
        out.completion
            .written
            .push((ring.clone(), printf_offset, printf_size), GFP_KERNEL)?;
        out.completion.bos.push(ring, GFP_KERNEL)?;
        addr
    };
    copy.get_mut(24..28)
        .ok_or(EINVAL)?
        .copy_from_slice(&printf_addr.to_le_bytes());
    let host_addr = slot.fill(&copy)?;
    out.push(Command::LaunchKernel {
        host_addr,
        size: size as u32,
        gpu_addr: LAUNCH_SLOT,
    })?;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    out.completion.launch = Some(slot);
    Ok(true)
}

/// The `limit` of a launch block's printf ring (right after the params),
/// if the block holds the ring header and `limit` bytes after it.
fn printf_ring_limit(block: &[u8]) -> Option<u32> {
    let word = |at: usize| Some(u32::from_le_bytes(block.get(at..at + 4)?.try_into().ok()?));
    let ring = size_of::<uapi::LaunchBlock>()
        .checked_add(usize::try_from(word(28)?).ok()?)?
        .checked_add(usize::try_from(word(32)?).ok()?)?;
    let limit = word(ring + 12)?;
    (ring + size_of::<uapi::PrintfRing>() + limit as usize <= block.len()).then_some(limit)
}

/// Where a WAIT_SEMAPHORE stands.
enum Wait {
    Reached,
    Pending,
    Skip { count: u32, error: u32 },
}

/// WAIT_SEMAPHORE: the queue goes on past it once the semaphore reaches
/// the value; a failed semaphore faults the queue, or with
/// SKIP_ON_FAILURE skips the packet and `count` more.
fn wait(t: &Translator<'_>, h: &uapi::PacketHeader, body: &[u64; 7]) -> Result<Wait> {
    let (handle, skip, value) = (lo(body[0]), hi(body[0]), body[1]);
    let skip_flag = h.flags & packet_flags::SKIP_ON_FAILURE != 0;
    if skip != 0 && !skip_flag {
        return Err(EINVAL);
    }
    zero_from(body, 2)?;
    match t.objects.semaphores().wait_state(handle, value)? {
        WaitState::Reached => Ok(Wait::Reached),
        WaitState::Pending => Ok(Wait::Pending),
        WaitState::Failed(error) if skip_flag => Ok(Wait::Skip { count: skip, error }),
        WaitState::Failed(error) => Err(Error::from_errno(-(error as i32))),
    }
}

/// SIGNAL_SEMAPHORE: raises the semaphore when the packet completes, in
/// order after everything before it on the queue.
fn signal(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result {
    let (handle, pad, value) = (lo(body[0]), hi(body[0]), body[1]);
    if pad != 0 {
        return Err(EINVAL);
    }
    zero_from(body, 2)?;
    // The semaphore must exist now.
    t.objects.semaphores().wait_state(handle, value)?;
    out.completion.update = Some(SemUpdate::Signal { handle, value });
    out.push(Command::Fence)
}

/// READ_COUNTER and TIMESTAMP: a device counter (or its clock) into VRAM,
/// after everything before it.
fn counter(t: &Translator<'_>, kind: u8, body: &[u64; 7], out: &mut Staged) -> Result {
    let (dst, counter, offset) = (lo(body[0]), hi(body[0]), body[1]);
    zero_from(body, 2)?;
    if offset % 8 != 0 {
        return Err(EINVAL);
    }
    let counter = match (kind, counter) {
        (packet_kind::TIMESTAMP, 0) => uapi::counter::CLOCK_NS,
        (packet_kind::READ_COUNTER, c) if c < uapi::counter::COUNT => c,
        _ => return Err(EINVAL),
    };
    let bo = t.objects.bo(dst)?;
    bo.check_range(offset, 8)?;
    // Counts everything before it, even on a device that executes out of
    // order.
    out.push(Command::Fence)?;
    out.push(Command::ReadCounter {
        counter,
        dst: vram_addr(&bo, offset)?,
    })?;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(())
}
