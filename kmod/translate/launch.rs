// SPDX-License-Identifier: GPL-2.0

//! LAUNCH and LAUNCH_DESC: the launch block is built anew in the device's
//! dialect in a staging page, so a process never writes a raw block and
//! never names a DMA address; the printf buffer's is set here.

use core::{
    mem::offset_of,
    ops::Range, //
};

use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
    transmute::FromBytes, //
};

use super::{
    hi,
    lo,
    vram_addr,
    zero_from,
    Staged,
    Translator, //
};
use crate::{
    bo::Bo,
    gluon::{
        Command,
        Launch, //
    },
    sg_table::Handover,
    staging::Slot,
    uapi, vram,
};

/// Where launch blocks land in VRAM: the start of the reserved region.
/// Launches run one at a time, so one slot serves all of them.
const LAUNCH_SLOT: u32 = 0;
const _: () = assert!(vram::RESERVED >= 64 * 1024);

/// Where a printf ring's header keeps its `limit`: the uapi says.
const RING_LIMIT: Range<usize> = {
    let at = offset_of!(uapi::PrintfRing, limit);
    at..at + size_of::<u32>()
};

/// LAUNCH: the launch block, read out of its host BO and built anew in the
/// device's dialect in a staging page, with the printf buffer's DMA address
/// set here (a process never names a DMA address). False if no staging page
/// is free.
pub(super) fn launch(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
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
    let Some(slot) = t.slot()? else {
        return Ok(false);
    };
    let mut old = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    bo.read_host(offset, &mut old)?;
    // A 1.x block: its head (`uapi::LaunchBlock`), the binary, the params,
    // then the printf ring.
    let (head, _) = uapi::LaunchBlock::from_bytes_copy_prefix(&old).ok_or(EINVAL)?;
    let binary = size_of::<uapi::LaunchBlock>();
    let params = binary
        .checked_add(usize::try_from(head.binary_size)?)
        .ok_or(EINVAL)?;
    let ring = params
        .checked_add(usize::try_from(head.params_size)?)
        .ok_or(EINVAL)?;
    let tail = old.get(ring..).ok_or(EINVAL)?;
    let printf_addr = if printf == 0 {
        if printf_offset != 0 || printf_size != 0 {
            return Err(EINVAL);
        }
        0
    } else {
        let limit = printf_ring_limit(tail).ok_or(EINVAL)?;
        if printf_size < 4 + u64::from(limit) {
            return Err(EINVAL);
        }
        printf_buffer(t, out, printf, printf_offset, printf_size)?
    };
    let header = Launch {
        start_pc: head.entry_pc,
        kernel_pc: head.entry_pc,
        params_size: head.params_size,
        binary_size: head.binary_size,
        grid: head.grid.map(u32::from),
        block: head.block.map(u32::from),
        printf_host_addr: printf_addr,
        regs_per_thread: head.regs_per_thread,
        shmem_per_block: head.shmem_per_block,
        flags: head.flags,
        ..Default::default()
    };
    let parts = [
        Piece::Bytes(old.get(params..ring).ok_or(EINVAL)?),
        Piece::Bytes(old.get(binary..params).ok_or(EINVAL)?),
        Piece::Bytes(tail),
    ];
    stage_launch(t, out, slot, &header, &parts)?;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(true)
}

/// LAUNCH_DESC: a [`uapi::LaunchDesc`] from a host BO, built into the
/// device's launch block in a staging page: its params copied in, the
/// stack and TLS ranges turned into VRAM addresses, a printf ring of its
/// own when the packet names a printf buffer. False if no staging page is
/// free.
pub(super) fn launch_desc(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
    let (desc_bo, pad, offset, size) = (lo(body[0]), hi(body[0]), body[1], body[2]);
    let (printf, pad2, printf_offset, printf_size) = (lo(body[3]), hi(body[3]), body[4], body[5]);
    if pad != 0 || pad2 != 0 || size != size_of::<uapi::LaunchDesc>() as u64 {
        return Err(EINVAL);
    }
    zero_from(body, 6)?;
    let bo = t.objects.bo(desc_bo)?;
    bo.check_range(offset, size)?;
    let mut raw = [0u8; size_of::<uapi::LaunchDesc>()];
    bo.read_host(offset, &mut raw)?;
    let d = uapi::LaunchDesc::from_bytes_copy(&raw).ok_or(EINVAL)?;
    let dims = Iterator::chain(d.grid.iter(), d.block.iter());
    if d.pad != 0
        || d.pad1 != 0
        || d.pad2 != 0
        || d.regs_per_thread == 0
        || dims.clone().any(|&n| n == 0)
    {
        return Err(EINVAL);
    }
    let params_bo = if d.params == 0 {
        bo.clone()
    } else {
        t.objects.bo(d.params)?
    };
    let params_len = usize::try_from(d.params_size)?;
    if d.params_size != 0 {
        params_bo.check_range(d.params_offset, d.params_size.into())?;
    }
    // Stacks grow down: the block names the last word.
    let stack_base = match vram_range(t, out, d.stack, d.stack_offset, d.stack_size)? {
        Some((addr, len)) => addr + len - 4,
        None => 0,
    };
    let tls_base = vram_range(t, out, d.tls, d.tls_offset, d.tls_size)?.map_or(0, |(addr, _)| addr);
    // The ring takes what room the page has after the header and params,
    // up to what the printf buffer holds.
    let room = PAGE_SIZE
        .checked_sub(t.hw.dialect.launch_header_size() + params_len)
        .ok_or(EINVAL)?;
    let (ring, printf_host_addr) = match printf {
        0 if printf_offset != 0 || printf_size != 0 => return Err(EINVAL),
        0 => (None, 0),
        _ => (
            Some(new_printf_ring(room, printf_size)?),
            printf_buffer(t, out, printf, printf_offset, printf_size)?,
        ),
    };
    let Some(slot) = t.slot()? else {
        return Ok(false);
    };
    let header = Launch {
        start_pc: d.start_pc,
        kernel_pc: d.kernel_pc,
        params_size: d.params_size,
        binary_size: 0,
        stack_base,
        tls_base,
        grid: d.grid,
        block: d.block,
        printf_host_addr,
        regs_per_thread: d.regs_per_thread,
        shmem_per_block: d.shmem_per_block,
        flags: d.flags,
    };
    let (ring, text) = ring
        .as_ref()
        .map_or((&[][..], 0), |(head, text)| (&head[..], *text));
    let parts = [
        Piece::Host(&params_bo, d.params_offset, params_len),
        Piece::Bytes(ring),
        Piece::Zeros(text),
    ];
    stage_launch(t, out, slot, &header, &parts)?;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    out.completion.bos.push(params_bo, GFP_KERNEL)?;
    Ok(true)
}

/// The VRAM address and length of `[offset, offset + size)` of VRAM BO
/// `handle` (`None` for handle 0, which must come with zeros); the BO stays
/// alive until the launch completes.
fn vram_range(
    t: &Translator<'_>,
    out: &mut Staged,
    handle: u32,
    offset: u64,
    size: u64,
) -> Result<Option<(u32, u32)>> {
    if handle == 0 {
        return if offset == 0 && size == 0 {
            Ok(None)
        } else {
            Err(EINVAL)
        };
    }
    let bo = t.objects.bo(handle)?;
    bo.check_range(offset, size)?;
    if size < 4 {
        return Err(EINVAL);
    }
    let range = (vram_addr(&bo, offset)?, u32::try_from(size)?);
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(Some(range))
}

/// Checks printf buffer `[offset, offset + size)` of host BO `handle`, hands
/// it to the device and to the packet's completion; its DMA address.
fn printf_buffer(
    t: &Translator<'_>,
    out: &mut Staged,
    handle: u32,
    offset: u64,
    size: u64,
) -> Result<u32> {
    let ring = t.objects.bo(handle)?;
    ring.check_range(offset, size)?;
    let addr = single_dma_address(&ring, offset, size)?;
    // The device writes only the text it has: the bytes after it must reach
    // the CPU as they were, so they go to the device first.
    ring.sync(offset, size, Handover::ToDevice)?;
    out.completion
        .written
        .push((ring.clone(), offset, size), GFP_KERNEL)?;
    out.completion.bos.push(ring, GFP_KERNEL)?;
    Ok(addr)
}

/// A piece of a launch block after its header.
enum Piece<'a> {
    Bytes(&'a [u8]),
    /// `len` bytes at `offset` of a host BO, read straight into the slot.
    Host(&'a Bo, u64, usize),
    Zeros(usize),
}

impl Piece<'_> {
    fn len(&self) -> usize {
        match *self {
            Piece::Bytes(bytes) => bytes.len(),
            Piece::Host(_, _, len) | Piece::Zeros(len) => len,
        }
    }
}

/// What a launch block passes through the stack in at a time, on its way
/// into its slot: a launch allocates nothing for its block.
const STAGED_AT_ONCE: usize = 256;
const _: () = assert!(crate::gluon::LAUNCH_HEADER_SIZE <= STAGED_AT_ONCE);

/// Builds the launch block, `header` in the device's dialect and then
/// `parts`, zero-padded to whole words, in `slot`, and pushes the command
/// that runs it.
fn stage_launch(
    t: &Translator<'_>,
    out: &mut Staged,
    slot: Arc<Slot>,
    header: &Launch,
    parts: &[Piece<'_>],
) -> Result {
    let dialect = t.hw.dialect;
    let head = dialect.launch_header_size();
    let end = parts.iter().fold(head, |n, p| n + p.len());
    let len = end.next_multiple_of(4);
    if len > PAGE_SIZE {
        return Err(EINVAL);
    }
    let mut buf = [0u8; STAGED_AT_ONCE];
    let encoded = buf.get_mut(..head).ok_or(EINVAL)?;
    dialect.encode_launch(header, encoded).map_err(|_| EINVAL)?;
    slot.write(0, encoded)?;
    let mut at = head;
    for part in Iterator::chain(parts.iter(), [&Piece::Zeros(len - end)]) {
        match *part {
            Piece::Bytes(bytes) if !bytes.is_empty() => slot.write(at, bytes)?,
            Piece::Bytes(_) => {}
            // Through `buf`, a piece at a time.
            Piece::Host(..) | Piece::Zeros(_) => {
                for done in (0..part.len()).step_by(STAGED_AT_ONCE) {
                    let piece = buf
                        .get_mut(..(part.len() - done).min(STAGED_AT_ONCE))
                        .ok_or(EINVAL)?;
                    match *part {
                        Piece::Host(bo, offset, _) => bo.read_host(offset + done as u64, piece)?,
                        _ => piece.fill(0),
                    }
                    slot.write(at + done, piece)?;
                }
            }
        }
        at += part.len();
    }
    let host_addr = slot.dma_address().into();
    out.threads = header.threads();
    out.push(Command::Kernel {
        host_addr,
        size: len as u32,
        gpu_addr: LAUNCH_SLOT,
    })?;
    out.completion.staging = Some(slot);
    Ok(())
}

/// An empty printf ring for a printf buffer of `size` bytes, in the
/// `room` a launch block has left: its header, and how many bytes of text
/// (zeros) follow it, `limit`: the most both take, in whole words (the
/// buffer starts with the 4-byte count the device drains).
fn new_printf_ring(room: usize, size: u64) -> Result<([u8; size_of::<uapi::PrintfRing>()], usize)> {
    let mut header = [0u8; size_of::<uapi::PrintfRing>()];
    let most = room.checked_sub(header.len() + 4).ok_or(EINVAL)?;
    let limit = (size.checked_sub(4).ok_or(EINVAL)? as usize).min(most) & !3;
    header
        .get_mut(RING_LIMIT)
        .ok_or(EINVAL)?
        .copy_from_slice(&(limit as u32).to_le_bytes());
    Ok((header, limit))
}

/// The `limit` of a printf ring at the start of `ring` (the ring's header,
/// then `limit` bytes of text), if it holds them.
fn printf_ring_limit(ring: &[u8]) -> Option<u32> {
    let limit = u32::from_le_bytes(ring.get(RING_LIMIT)?.try_into().ok()?);
    (size_of::<uapi::PrintfRing>() + limit as usize <= ring.len()).then_some(limit)
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
