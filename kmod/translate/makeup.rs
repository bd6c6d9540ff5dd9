// SPDX-License-Identifier: GPL-2.0

//! What a checked fill, copy or counter read becomes on this device: its
//! own commands where it has the capability ([`HwDesc::caps`]), else a
//! make-up from what it has, so every device takes the same packets. Every
//! capability's make-up, and every refusal for one missing, is here:
//!
//! - no MEM SET: a fill copies from host memory full of its pattern
//!   ([`PatternSource`]), a command per MiB;
//! - no COPY_D2D: a VRAM-to-VRAM copy bounces through a host page;
//! - no SUBWORD (gluon-sim moves whole 4-byte words only): the words
//!   around a range's partial ends are read into a host page, the bytes
//!   between them moved on the CPU ([`HostStep`], run by the scheduler in
//!   stream order) and the words written back; a copy whose two sides are
//!   in the same phase in their words does only its ends so and the whole
//!   words between directly; anything else not in whole words is refused
//!   ([`check_words`]);
//! - no COUNTERS: READ_COUNTER and TIMESTAMP are refused with EOPNOTSUPP.
//!
//! [`HwDesc::caps`]: crate::hw::HwDesc::caps
//! [`PatternSource`]: crate::staging::PatternSource

use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc, //
};

use super::{
    split,
    vram_addr,
    Staged,
    Step,
    Translator,
    MAX_COMMAND_BYTES, //
};
use crate::{
    bo::Bo,
    gluon::{
        Command,
        CopyDir, //
    },
    sg_table::Handover,
    staging::{
        PatternSource,
        Slot,
        Staging,
        PATTERN_SOURCE_BYTES, //
    },
    uapi::{
        self,
        caps, //
    },
};

/// Bytes a sub-word copy moves per piece: a piece's whole words, one more
/// at each end, fit in half a page.
const BOUNCE_PIECE: u64 = (PAGE_SIZE / 2 - 8) as u64;

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

/// On a device without sub-word accesses, EOPNOTSUPP unless every address
/// and length in `commands` is a multiple of 4 (gluon-sim aborts on any
/// other access).
pub(super) fn check_words(t: &Translator<'_>, commands: &[Step]) -> Result {
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

/// A fill of VRAM `[start, end)` with `pattern` (little-endian, in phase
/// with address 0). MEM SET where the device has it, else copies from a
/// pattern source. On a device without sub-word accesses, the range's
/// partial words at either end are read into a staging page, filled on the
/// CPU and written back. False if the source or page this needs is not to
/// be had now.
pub(super) fn fill(
    t: &Translator<'_>,
    out: &mut Staged,
    start: u32,
    end: u32,
    pattern: u32,
) -> Result<bool> {
    // The whole words in the range, and its partial words at either end.
    let (whole, edges) = if t.has(caps::SUBWORD) {
        ((start, end), Edges::default())
    } else {
        words(start, end)
    };
    let (whole_start, whole_end) = whole;
    let slot = if edges.is_empty() {
        None
    } else {
        let Some(slot) = t.slot()? else {
            return Ok(false);
        };
        Some(slot)
    };
    if whole_start < whole_end {
        let len = u64::from(whole_end - whole_start);
        if t.has(caps::SET) {
            split(len, MAX_COMMAND_BYTES, |done, n| {
                out.push(Command::Set {
                    dst: whole_start + done as u32,
                    value: pattern,
                    len: n,
                })
            })?;
        } else {
            let Some(source) = Staging::pattern(t.staging, pattern, len)? else {
                return Ok(false);
            };
            pattern_copies(out, &source, whole_start, len)?;
            out.completion.pattern = Some(source);
        }
    }
    if let Some(slot) = &slot {
        edge_fills(out, slot, &edges, pattern)?;
    }
    out.completion.staging = slot;
    Ok(true)
}

/// A fill of the `len` bytes of whole words at VRAM `dst` without MEM SET:
/// copies from `source`, a command per piece of it.
fn pattern_copies(out: &mut Staged, source: &PatternSource, dst: u32, len: u64) -> Result {
    // The source is whole words: every copy starts in phase.
    split(len, PATTERN_SOURCE_BYTES, |done, n| {
        let mut at = u64::from(dst) + done;
        source.pieces(n.into(), &mut |src, piece| {
            out.push(Command::Copy {
                src,
                dst: at,
                len: u32::try_from(piece)?,
                dir: CopyDir::HostToDevice,
            })?;
            at += piece;
            Ok(())
        })
    })
}

/// A fill's partial words on a device without sub-word accesses: each
/// word is read into `slot`, filled on the CPU where the range covers it,
/// and written back.
fn edge_fills(out: &mut Staged, slot: &Arc<Slot>, edges: &Edges, pattern: u32) -> Result {
    for (k, &(word, from, to)) in edges.iter().enumerate() {
        let at = 4 * k;
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
    Ok(())
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

/// A copy of `size` bytes from `src` to `dst` (a BO and an offset each,
/// one of them in VRAM at least). VRAM to VRAM bounces through a host page
/// where the device cannot copy it itself ([`d2d_bounce`]). On a device
/// without sub-word accesses, a copy that is not all whole words moves its
/// partial words at either end through a host page ([`bounced_copy`]) and
/// the whole words between directly, where both sides are in the same
/// phase in their words; else all of it through the page. False if that
/// page is not to be had now.
pub(super) fn copy(
    t: &Translator<'_>,
    out: &mut Staged,
    src: (&Arc<Bo>, u64),
    dst: (&Arc<Bo>, u64),
    size: u64,
) -> Result<bool> {
    let ((s, src_off), (d, dst_off)) = (src, dst);
    let vram = uapi::placement::VRAM;
    let direct = !(s.placement() == vram && d.placement() == vram) || t.has(caps::COPY_D2D);
    // VRAM BOs start on a 256-byte granule and host BOs on a page, so an
    // offset's alignment is its address's.
    let (head, middle) = if t.has(caps::SUBWORD) {
        (0, size)
    } else {
        whole_words(src_off, dst_off, size)
    };
    if direct && middle == size {
        direct_copy(out, src, dst, size)?;
        return Ok(true);
    }
    let Some(slot) = t.slot()? else {
        return Ok(false);
    };
    if !direct && middle == size {
        d2d_bounce(out, &slot, src, dst, size)?;
    } else if direct && middle > 0 {
        // The ends through the page, the words between directly: the
        // stream runs them in order.
        let (tail_src, tail_dst) = ((s, src_off + head + middle), (d, dst_off + head + middle));
        bounced_copy(out, &slot, src, dst, head)?;
        direct_copy(out, (s, src_off + head), (d, dst_off + head), middle)?;
        bounced_copy(out, &slot, tail_src, tail_dst, size - head - middle)?;
    } else {
        bounced_copy(out, &slot, src, dst, size)?;
    }
    out.completion.staging = Some(slot);
    Ok(true)
}

/// Of a copy of `size` bytes from offset `src` to offset `dst`: the bytes
/// before the first whole word of both sides, and the whole words after
/// them; `(0, 0)` if the two sides are in different phases in their words.
fn whole_words(src: u64, dst: u64, size: u64) -> (u64, u64) {
    if src % 4 != dst % 4 {
        return (0, 0);
    }
    let head = ((4 - src % 4) % 4).min(size);
    (head, (size - head) & !3)
}

/// A copy the device makes itself: VRAM to VRAM, or between host memory
/// and VRAM.
fn direct_copy(out: &mut Staged, src: (&Arc<Bo>, u64), dst: (&Arc<Bo>, u64), size: u64) -> Result {
    let ((s, src_off), (d, dst_off)) = (src, dst);
    let vram = uapi::placement::VRAM;
    match (s.placement() == vram, d.placement() == vram) {
        (true, true) => split(size, MAX_COMMAND_BYTES, |done, len| {
            let (src, dst) = (
                vram_addr(s, src_off + done)?.into(),
                vram_addr(d, dst_off + done)?.into(),
            );
            out.push(Command::Copy {
                src,
                dst,
                len,
                dir: CopyDir::DeviceToDevice,
            })
        }),
        (false, _) => host_copy(out, s, src_off, d, dst_off, size, CopyDir::HostToDevice),
        (_, false) => host_copy(out, d, dst_off, s, src_off, size, CopyDir::DeviceToHost),
    }
}

/// A VRAM-to-VRAM copy on a device without COPY_D2D: to page `bounce` and
/// back, a page at a time.
fn d2d_bounce(
    out: &mut Staged,
    bounce: &Slot,
    src: (&Arc<Bo>, u64),
    dst: (&Arc<Bo>, u64),
    size: u64,
) -> Result {
    let ((s, src_off), (d, dst_off)) = (src, dst);
    let page = u64::from(bounce.dma_address());
    // Each piece lands in the page and leaves it before the next comes:
    // the stream runs them in order.
    split(size, PAGE_SIZE as u64, |done, len| {
        let (from, to) = (
            vram_addr(s, src_off + done)?.into(),
            vram_addr(d, dst_off + done)?.into(),
        );
        out.push(Command::Copy {
            src: from,
            dst: page,
            len,
            dir: CopyDir::DeviceToHost,
        })?;
        out.push(Command::Copy {
            src: page,
            dst: to,
            len,
            dir: CopyDir::HostToDevice,
        })
    })
}

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
/// `dir`): one per run of the host side that is contiguous in DMA
/// addresses, however many segments or pages it spans, up to
/// [`MAX_COMMAND_BYTES`]. What the device will read is handed to it now;
/// what it will write is handed back to the CPU when the packet completes.
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
    // The run not yet issued: its DMA address, length, and offset in the
    // copy (the VRAM side is contiguous throughout).
    let mut run = (0u64, 0u64, 0u64);
    let mut issue = |(dma, len, at): (u64, u64, u64)| {
        split(len, MAX_COMMAND_BYTES, |done, n| {
            let host_addr = dma + done;
            let dev = vram_addr(vram, vram_off + at + done)?.into();
            let (src, dst) = if dir == CopyDir::HostToDevice {
                (host_addr, dev)
            } else {
                (dev, host_addr)
            };
            out.push(Command::Copy {
                src,
                dst,
                len: n,
                dir,
            })
        })
    };
    let mut at = 0;
    host.host_pieces(host_off, size, &mut |dma, piece| {
        let (start, len, _) = run;
        if len > 0 && start + len == dma && len + piece <= MAX_COMMAND_BYTES {
            run.1 += piece;
        } else {
            if len > 0 {
                issue(run)?;
            }
            run = (dma, piece, at);
        }
        at += piece;
        Ok(())
    })?;
    issue(run)
}

/// A READ_COUNTER of `counter` into VRAM `dst`; EOPNOTSUPP on a device
/// without counters (a valid packet this device cannot run).
pub(super) fn read_counter(t: &Translator<'_>, out: &mut Staged, counter: u32, dst: u32) -> Result {
    if !t.has(caps::COUNTERS) {
        return Err(EOPNOTSUPP);
    }
    out.push(Command::ReadCounter { counter, dst })
}
