// SPDX-License-Identifier: GPL-2.0

//! Packet validation and translation: a queue packet in, Gluon commands out.
//!
//! Every handle a packet names must be an object of the queue's file (found
//! through [`FileObjects`]), every range must lie inside its BO, and every
//! word a packet kind does not use must be zero; anything else is the
//! queue's fault, with the errno returned here. One function per packet
//! kind; commands longer than the device takes are split by [`split`].
//!
//! Commands are the dialect-neutral [`Command`]s; the scheduler encodes
//! them in the device's dialect. A queue's packets run in order on one
//! in-order hardware stream, so no packet needs a FENCE: a packet with
//! nothing for the device (NOP, FENCE, a semaphore packet) translates into
//! no command and completes when everything before it on its stream has.
//!
//! What the device lacks ([`HwDesc::caps`]) is made up here, so every
//! device takes the same packets: a fill without MEM SET copies a pattern
//! page from host memory, a VRAM-to-VRAM copy without COPY_D2D bounces
//! through a host page, and on a device that only moves whole 4-byte words
//! (gluon-sim) the bytes around a range's ends are read, modified and
//! written back through a host page: the device moves whole words, and the
//! scheduler moves the bytes between them on the CPU ([`HostStep`]), in
//! stream order. Refused instead, with EOPNOTSUPP: counter reads on a
//! device without counters.
//!
//! Translation runs under the scheduler's lock: it reads and checks, and
//! syncs memory for DMA, but never pins or maps memory. Launch blocks,
//! patterns and bounces use pages the scheduler mapped when the device was
//! created ([`Staging`]).

use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc,
    transmute::FromBytes, //
};

use crate::{
    bo::Bo,
    gluon::{
        Command,
        CopyDir,
        Launch, //
    },
    hw::HwDesc,
    queue::FileObjects,
    semaphore::WaitState,
    sg_table::Handover,
    staging::{
        Slot, //
        Staging,
    },
    uapi::{
        self,
        caps,
        packet_flags,
        packet_kind, //
    },
    vram,
};

/// The largest single COPY or MEM SET: lengths are 32-bit.
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
    /// A staging page (launch block, fill pattern or bounce), the device's
    /// until the packet completes.
    staging: Option<Arc<Slot>>,
    pub(crate) update: Option<SemUpdate>,
}

impl Completion {
    fn new() -> Self {
        Self {
            bos: KVec::new(),
            written: KVec::new(),
            staging: None,
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

/// One step of a packet.
#[derive(Clone)]
pub(crate) enum Step {
    /// A command for the device.
    Device(Command),
    /// Work the scheduler does on the CPU once everything before it on the
    /// stream has completed, on the packet's staging page.
    Host(HostStep, Arc<Slot>),
}

/// CPU work between a device's whole-word moves, on a staging page (the
/// bounce).
#[derive(Clone)]
pub(crate) enum HostStep {
    /// `len` bytes of host BO `bo` at `offset` into the bounce at `at`.
    HostToBounce {
        bo: Arc<Bo>,
        offset: u64,
        at: usize,
        len: usize,
    },
    /// `len` bytes of the bounce at `at` into host BO `bo` at `offset`.
    BounceToHost {
        at: usize,
        bo: Arc<Bo>,
        offset: u64,
        len: usize,
    },
    /// `len` bytes within the bounce, from `from` to `to`.
    Move { from: usize, to: usize, len: usize },
    /// `len` bytes of a fill into the bounce at `at`: the byte for VRAM
    /// address `x` is byte `x % 4` of the little-endian `pattern`; `addr`
    /// is the address of the first.
    Pattern {
        at: usize,
        len: usize,
        pattern: u32,
        addr: u32,
    },
}

impl HostStep {
    /// Does the step, on `bounce`.
    pub(crate) fn run(&self, bounce: &Slot) -> Result {
        match self {
            Self::HostToBounce {
                bo,
                offset,
                at,
                len,
            } => {
                let mut bytes = KVec::from_elem(0u8, *len, GFP_KERNEL)?;
                bo.read_host(*offset, &mut bytes)?;
                bounce.write(*at, &bytes)
            }
            Self::BounceToHost {
                at,
                bo,
                offset,
                len,
            } => {
                let mut bytes = KVec::from_elem(0u8, *len, GFP_KERNEL)?;
                bounce.read(*at, &mut bytes)?;
                bo.write_host(*offset, &bytes)?;
                // A later copy from it reads what the CPU wrote.
                bo.sync(*offset, *len as u64, Handover::ToDevice)
            }
            Self::Move { from, to, len } => {
                let mut bytes = KVec::from_elem(0u8, *len, GFP_KERNEL)?;
                bounce.read(*from, &mut bytes)?;
                bounce.write(*to, &bytes)
            }
            Self::Pattern {
                at,
                len,
                pattern,
                addr,
            } => {
                let le = pattern.to_le_bytes();
                let mut bytes = KVec::with_capacity(*len, GFP_KERNEL)?;
                for x in *addr as usize..*addr as usize + len {
                    bytes.push(le[x % 4], GFP_KERNEL)?;
                }
                bounce.write(*at, &bytes)
            }
        }
    }
}

/// One packet's steps, some perhaps not yet in the device; none for a
/// packet that only marks a point in its stream.
pub(crate) struct Staged {
    pub(crate) packet: u64,
    pub(crate) commands: KVec<Step>,
    /// The first command not yet pushed.
    pub(crate) next: usize,
    /// Goes with the packet's last command.
    pub(crate) completion: Completion,
}

impl Staged {
    fn push(&mut self, command: Command) -> Result {
        Ok(self.commands.push(Step::Device(command), GFP_KERNEL)?)
    }

    fn host(&mut self, step: HostStep, bounce: &Arc<Slot>) -> Result {
        Ok(self
            .commands
            .push(Step::Host(step, bounce.clone()), GFP_KERNEL)?)
    }
}

/// What a packet turned into.
pub(crate) enum Translated {
    /// Commands to run.
    Run(Staged),
    /// A WAIT_SEMAPHORE that is not satisfied yet.
    Blocked,
    /// It needs a staging page, but launches, fills or copies in flight
    /// hold them all: it is translated again once one completes.
    Busy,
    /// A WAIT_SEMAPHORE with SKIP_ON_FAILURE on a semaphore that failed
    /// with the positive errno `error`: skip it and `count` more packets.
    Skip { count: u32, error: u32 },
}

/// What translation works with.
pub(crate) struct Translator<'a> {
    /// The objects of the queue's file.
    pub(crate) objects: &'a dyn FileObjects,
    /// The device: its dialect and what it implements.
    pub(crate) hw: &'a HwDesc,
    /// The device's staging pages.
    pub(crate) staging: &'a Arc<Staging>,
}

impl Translator<'_> {
    fn has(&self, cap: u64) -> bool {
        self.hw.caps & cap != 0
    }

    /// A staging page, or `None` when all are in use.
    fn slot(&self) -> Result<Option<Arc<Slot>>> {
        match Staging::take(self.staging) {
            Some(slot) => Ok(Some(Arc::new(slot, GFP_KERNEL)?)),
            None => Ok(None),
        }
    }
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
        return Ok(Translated::Run(out));
    }
    // A BARRIER needs nothing more: the queue's packets run in order on one
    // stream.
    let done = match h.kind {
        packet_kind::NOP | packet_kind::FENCE => zero_from(body, 0).map(|()| true)?,
        packet_kind::FILL => fill(t, body, &mut out)?,
        packet_kind::COPY => copy(t, body, &mut out)?,
        packet_kind::LAUNCH => launch(t, body, &mut out)?,
        packet_kind::LAUNCH_DESC => launch_desc(t, body, &mut out)?,
        packet_kind::WAIT_SEMAPHORE => match wait(t, &h, body)? {
            Wait::Reached => true,
            Wait::Pending => return Ok(Translated::Blocked),
            Wait::Skip { count, error } => return Ok(Translated::Skip { count, error }),
        },
        packet_kind::SIGNAL_SEMAPHORE => signal(t, body, &mut out).map(|()| true)?,
        packet_kind::READ_COUNTER | packet_kind::TIMESTAMP => {
            counter(t, h.kind, body, &mut out).map(|()| true)?
        }
        _ => return Err(EINVAL),
    };
    if !done {
        return Ok(Translated::Busy);
    }
    check_words(t, &out.commands)?;
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

/// On a device without sub-word accesses, EOPNOTSUPP unless every address
/// and length in `commands` is a multiple of 4 (gluon-sim aborts on any
/// other access).
fn check_words(t: &Translator<'_>, commands: &[Step]) -> Result {
    if t.has(caps::SUBWORD) {
        return Ok(());
    }
    let whole = |values: &[u64]| values.iter().all(|v| v % 4 == 0);
    let ok = commands.iter().all(|step| match *step {
        Step::Host(..) => true,
        Step::Device(ref c) => match *c {
            Command::Copy { src, dst, len, .. } => whole(&[src, dst, len.into()]),
            Command::Set { dst, len, .. } => whole(&[dst.into(), len.into()]),
            Command::Kernel {
                host_addr,
                size,
                gpu_addr,
            } => whole(&[host_addr, size.into(), gpu_addr.into()]),
            Command::ReadCounter { .. } | Command::Fence | Command::Wait { .. } => true,
        },
    });
    if ok {
        Ok(())
    } else {
        Err(EOPNOTSUPP)
    }
}

/// Calls `each(done, n)` over `[0, size)` in pieces of at most `max` bytes.
fn split(size: u64, max: u64, mut each: impl FnMut(u64, u32) -> Result) -> Result {
    let mut done = 0;
    while done < size {
        let n = (size - done).min(max);
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

/// Bytes of a staging page a fill's pattern copies read; the words after
/// them are scratch for the fill's edges.
const PATTERN_BYTES: usize = PAGE_SIZE - 16;

/// FILL: a VRAM BO with a 1, 2 or 4 byte pattern. MEM SET where the device
/// has it; else copies from a host page full of the pattern. On a device
/// without sub-word accesses, a range's partial words at either end are
/// read, filled on the CPU and written back. False if the staging page this
/// needs is not to be had now.
fn fill(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
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
    let start = vram_addr(&bo, offset)?;
    let end = vram_addr(&bo, offset + size - 1)? + 1;
    // The whole words in the range, and its partial words at either end.
    let (whole, edges) = if t.has(caps::SUBWORD) {
        ((start, end), Edges::default())
    } else {
        words(start, end)
    };
    let (whole_start, whole_end) = whole;
    let need_page = !edges.is_empty() || (!t.has(caps::SET) && whole_start < whole_end);
    let slot = if need_page {
        let Some(slot) = t.slot()? else {
            return Ok(false);
        };
        Some(slot)
    } else {
        None
    };
    if whole_start < whole_end {
        let len = u64::from(whole_end - whole_start);
        match &slot {
            Some(slot) if !t.has(caps::SET) => {
                let mut page = KVec::from_elem(0u8, PATTERN_BYTES, GFP_KERNEL)?;
                for word in page.chunks_exact_mut(4) {
                    word.copy_from_slice(&pattern.to_le_bytes());
                }
                slot.write(0, &page)?;
                let src = u64::from(slot.dma_address());
                // The page is whole words: every copy starts in phase.
                split(len, PATTERN_BYTES as u64, |done, n| {
                    let dst = u64::from(whole_start) + done;
                    out.push(Command::Copy {
                        src,
                        dst,
                        len: n,
                        dir: CopyDir::HostToDevice,
                    })
                })?;
            }
            _ => split(len, MAX_COMMAND_BYTES, |done, n| {
                out.push(Command::Set {
                    dst: whole_start + done as u32,
                    value: pattern,
                    len: n,
                })
            })?,
        }
    }
    if let Some(slot) = &slot {
        for (k, &(word, from, to)) in edges.iter().enumerate() {
            let at = PATTERN_BYTES + 4 * k;
            let bounce = u64::from(slot.dma_address()) + at as u64;
            out.push(Command::Copy {
                src: word.into(),
                dst: bounce,
                len: 4,
                dir: CopyDir::DeviceToHost,
            })?;
            let step = HostStep::Pattern {
                at: at + (from - word) as usize,
                len: (to - from) as usize,
                pattern,
                addr: from,
            };
            out.host(step, slot)?;
            out.push(Command::Copy {
                src: bounce,
                dst: word.into(),
                len: 4,
                dir: CopyDir::HostToDevice,
            })?;
        }
    }
    out.completion.staging = slot;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(true)
}

/// A range's partial words: `(word address, first byte, end)` each.
#[derive(Default)]
struct Edges {
    words: [(u32, u32, u32); 2],
    count: usize,
}

impl Edges {
    fn push(&mut self, word: u32, from: u32, to: u32) {
        if let Some(slot) = self.words.get_mut(self.count) {
            *slot = (word, from, to);
            self.count += 1;
        }
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn iter(&self) -> impl Iterator<Item = &(u32, u32, u32)> {
        self.words.iter().take(self.count)
    }
}

/// Splits VRAM range `[start, end)` into its whole 4-byte words and the
/// partial words at its ends.
fn words(start: u32, end: u32) -> ((u32, u32), Edges) {
    let (first, last) = (start & !3, (end - 1) & !3);
    let mut edges = Edges::default();
    if first == last && (start % 4 != 0 || end % 4 != 0) {
        edges.push(first, start, end);
        return ((start, start), edges);
    }
    let (whole_start, whole_end) = (start.next_multiple_of(4), end & !3);
    if start % 4 != 0 {
        edges.push(first, start, whole_start);
    }
    if end % 4 != 0 {
        edges.push(last, whole_end, end);
    }
    ((whole_start, whole_end.max(whole_start)), edges)
}

/// COPY: between two VRAM BOs, or a host BO and a VRAM BO in either
/// direction (Gluon copies to or from VRAM only). VRAM to VRAM bounces
/// through a host page where the device cannot copy it itself, and on a
/// device without sub-word accesses a copy that is not all whole words
/// goes through a host page in pieces ([`bounced_copy`]). False if that page
/// is not to be had now.
fn copy(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
    let (src, dst, src_off, dst_off, size) = (lo(body[0]), hi(body[0]), body[1], body[2], body[3]);
    zero_from(body, 4)?;
    let (s, d) = (t.objects.bo(src)?, t.objects.bo(dst)?);
    s.check_range(src_off, size)?;
    d.check_range(dst_off, size)?;
    if Arc::ptr_eq(&s, &d) && src_off < dst_off + size && dst_off < src_off + size {
        return Err(EINVAL);
    }
    let vram = uapi::placement::VRAM;
    let (s_vram, d_vram) = (s.placement() == vram, d.placement() == vram);
    if !s_vram && !d_vram {
        return Err(EINVAL);
    }
    // VRAM BOs start on a 256-byte granule and host BOs on a page, so an
    // offset's alignment is its address's.
    let words = src_off % 4 == 0 && dst_off % 4 == 0 && size % 4 == 0;
    let slot = if !t.has(caps::SUBWORD) && !words {
        let Some(slot) = t.slot()? else {
            return Ok(false);
        };
        bounced_copy(out, &slot, (&s, src_off), (&d, dst_off), size)?;
        Some(slot)
    } else if s_vram && d_vram && !t.has(caps::COPY_D2D) {
        let Some(slot) = t.slot()? else {
            return Ok(false);
        };
        let bounce = u64::from(slot.dma_address());
        // Each piece lands in the page and leaves it before the next comes:
        // the stream runs them in order.
        split(size, PAGE_SIZE as u64, |done, len| {
            let (from, to) = (
                vram_addr(&s, src_off + done)?.into(),
                vram_addr(&d, dst_off + done)?.into(),
            );
            out.push(Command::Copy {
                src: from,
                dst: bounce,
                len,
                dir: CopyDir::DeviceToHost,
            })?;
            out.push(Command::Copy {
                src: bounce,
                dst: to,
                len,
                dir: CopyDir::HostToDevice,
            })
        })?;
        Some(slot)
    } else {
        match (s_vram, d_vram) {
            (true, true) => split(size, MAX_COMMAND_BYTES, |done, len| {
                let (src, dst) = (
                    vram_addr(&s, src_off + done)?.into(),
                    vram_addr(&d, dst_off + done)?.into(),
                );
                out.push(Command::Copy {
                    src,
                    dst,
                    len,
                    dir: CopyDir::DeviceToDevice,
                })
            })?,
            (false, _) => host_copy(out, &s, src_off, &d, dst_off, size, CopyDir::HostToDevice)?,
            (_, false) => host_copy(out, &d, dst_off, &s, src_off, size, CopyDir::DeviceToHost)?,
        }
        None
    };
    out.completion.staging = slot;
    out.completion.bos.push(s, GFP_KERNEL)?;
    out.completion.bos.push(d, GFP_KERNEL)?;
    Ok(true)
}

/// Bytes a sub-word copy moves per piece: a piece's whole words, one more
/// at each end, fit in half a page.
const BOUNCE_PIECE: u64 = (PAGE_SIZE / 2 - 8) as u64;

/// A copy of `size` bytes from `src` to `dst` (a BO and an offset each) on
/// a device that moves only whole words, through page `bounce` in pieces:
/// the device moves the whole words around a piece's VRAM side into the
/// page (the source's, and the destination's where its ends are partial
/// words), the CPU moves the piece's bytes (from a host source, to a host
/// destination, or from the source's words to the destination's), and the
/// device writes the destination's words back.
fn bounced_copy(
    out: &mut Staged,
    bounce: &Arc<Slot>,
    src: (&Arc<Bo>, u64),
    dst: (&Arc<Bo>, u64),
    size: u64,
) -> Result {
    let vram = uapi::placement::VRAM;
    let ((s, src_off), (d, dst_off)) = (src, dst);
    let page = u64::from(bounce.dma_address());
    // The destination's words go to the second half.
    let half = PAGE_SIZE / 2;
    split(size, BOUNCE_PIECE, |done, len| {
        let n = len as usize;
        // Where the piece's bytes are in the page, once the device moved
        // the source's words there (or `None`: the CPU reads the host BO).
        let from = if s.placement() == vram {
            let addr = vram_addr(s, src_off + done)?;
            let word = addr & !3;
            let words = (addr + len).next_multiple_of(4) - word;
            out.push(Command::Copy {
                src: word.into(),
                dst: page,
                len: words,
                dir: CopyDir::DeviceToHost,
            })?;
            Some((addr - word) as usize)
        } else {
            None
        };
        if d.placement() == vram {
            let addr = vram_addr(d, dst_off + done)?;
            let word = addr & !3;
            let words = (addr + len).next_multiple_of(4) - word;
            let at = half + (addr - word) as usize;
            let dst_page = page + half as u64;
            if addr % 4 != 0 || (addr + len) % 4 != 0 {
                out.push(Command::Copy {
                    src: word.into(),
                    dst: dst_page,
                    len: words,
                    dir: CopyDir::DeviceToHost,
                })?;
            }
            let step = match from {
                Some(from) => HostStep::Move {
                    from,
                    to: at,
                    len: n,
                },
                None => HostStep::HostToBounce {
                    bo: s.clone(),
                    offset: src_off + done,
                    at,
                    len: n,
                },
            };
            out.host(step, bounce)?;
            out.push(Command::Copy {
                src: dst_page,
                dst: word.into(),
                len: words,
                dir: CopyDir::HostToDevice,
            })
        } else {
            let at = from.ok_or(EINVAL)?;
            out.host(
                HostStep::BounceToHost {
                    at,
                    bo: d.clone(),
                    offset: dst_off + done,
                    len: n,
                },
                bounce,
            )
        }
    })
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
        split(piece, MAX_COMMAND_BYTES, |done, len| {
            let host_addr = dma + done;
            let dev = vram_addr(vram, vram_off + at + done)?.into();
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

/// LAUNCH: the launch block, read out of its host BO and built anew in the
/// device's dialect in a staging page, with the printf buffer's DMA address
/// set here (a process never names a DMA address). False if no staging page
/// is free.
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
        old.get(params..ring).ok_or(EINVAL)?,
        old.get(binary..params).ok_or(EINVAL)?,
        tail,
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
fn launch_desc(t: &Translator<'_>, body: &[u64; 7], out: &mut Staged) -> Result<bool> {
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
    let mut params = KVec::from_elem(0u8, usize::try_from(d.params_size)?, GFP_KERNEL)?;
    if d.params_size != 0 {
        params_bo.check_range(d.params_offset, d.params_size.into())?;
        params_bo.read_host(d.params_offset, &mut params)?;
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
        .checked_sub(t.hw.dialect.launch_header_size() + params.len())
        .ok_or(EINVAL)?;
    let mut ring = KVec::new();
    let printf_host_addr = if printf == 0 {
        if printf_offset != 0 || printf_size != 0 {
            return Err(EINVAL);
        }
        0
    } else {
        let header = size_of::<uapi::PrintfRing>();
        let most = room.checked_sub(header + 4).ok_or(EINVAL)?;
        let limit = (printf_size.checked_sub(4).ok_or(EINVAL)? as usize).min(most) & !3;
        ring.resize(header + limit, 0, GFP_KERNEL)?;
        ring.get_mut(12..16)
            .ok_or(EINVAL)?
            .copy_from_slice(&(limit as u32).to_le_bytes());
        printf_buffer(t, out, printf, printf_offset, printf_size)?
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
    stage_launch(t, out, slot, &header, &[&params, &ring])?;
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

/// Builds the launch block, `header` in the device's dialect and then
/// `parts`, padded to whole words, in `slot`, and pushes the command that
/// runs it.
fn stage_launch(
    t: &Translator<'_>,
    out: &mut Staged,
    slot: Arc<Slot>,
    header: &Launch,
    parts: &[&[u8]],
) -> Result {
    let dialect = t.hw.dialect;
    let head = dialect.launch_header_size();
    let len = parts
        .iter()
        .fold(head, |n, p| n + p.len())
        .next_multiple_of(4);
    if len > PAGE_SIZE {
        return Err(EINVAL);
    }
    let mut block = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    dialect
        .encode_launch(header, &mut block)
        .map_err(|_| EINVAL)?;
    let mut at = head;
    for part in parts {
        block
            .get_mut(at..at + part.len())
            .ok_or(EINVAL)?
            .copy_from_slice(part);
        at += part.len();
    }
    slot.write(0, &block)?;
    let host_addr = slot.dma_address().into();
    out.push(Command::Kernel {
        host_addr,
        size: len as u32,
        gpu_addr: LAUNCH_SLOT,
    })?;
    out.completion.staging = Some(slot);
    Ok(())
}

/// The `limit` of a printf ring at the start of `ring` (the ring's header,
/// then `limit` bytes of text), if it holds them.
fn printf_ring_limit(ring: &[u8]) -> Option<u32> {
    let limit = u32::from_le_bytes(ring.get(12..16)?.try_into().ok()?);
    (size_of::<uapi::PrintfRing>() + limit as usize <= ring.len()).then_some(limit)
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
    Ok(())
}

/// READ_COUNTER and TIMESTAMP: a device counter (or its clock) into VRAM,
/// after everything before it on the queue. EOPNOTSUPP on a device without
/// counters.
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
    let dst = vram_addr(&bo, offset)?;
    // A valid packet this device cannot run.
    if !t.has(caps::COUNTERS) {
        return Err(EOPNOTSUPP);
    }
    out.push(Command::ReadCounter { counter, dst })?;
    out.completion.bos.push(bo, GFP_KERNEL)?;
    Ok(())
}
