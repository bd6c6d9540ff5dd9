// SPDX-License-Identifier: GPL-2.0

//! Staging memory: launch blocks on their way to the device, and host
//! memory the kernel uses to make up what a device lacks.
//!
//! The kernel copies each launch block into a page of its own, so that the
//! device reads a block the process can no longer change; a VRAM-to-VRAM
//! copy on a device that cannot do one bounces through a page. A [`Slot`]
//! is the device's until dropped; when every slot is taken, launches wait.
//! A fill on a device without MEM SET copies from a [`PatternSource`], a
//! MiB of its pattern ([`PATTERN_SOURCES`] per device, shared by fills of
//! one pattern, written only as far as a fill needs, rewritten when idle). All of it is pinned and mapped
//! when the device is created: the scheduler stages under its lock, where
//! nothing may pin or map memory.

use kernel::{
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use crate::{
    host_mem::HostMem,
    hw::{
        host_windows::Window,
        open_window,
        Gluon, //
    },
    sg_table::{
        pieces,
        Handover, //
    },
    uapi::caps,
};

/// Launch blocks staged at once, at most. The emulated device runs one
/// launch at a time; a few more keep it fed.
const SLOTS: usize = 16;

/// Bytes of one pattern source: as much as a server reads in one
/// USER_HOST_READ, and a command's worth where the allocator gave the
/// pages in one block ([`HostMem`]).
pub(crate) const PATTERN_SOURCE_BYTES: u64 = 1 << 20;

/// Pattern sources of a device without MEM SET: fills of as many patterns
/// run at once (zeros and one other, commonly).
const PATTERN_SOURCES: usize = 2;

/// Host memory full of one fill pattern.
struct Source {
    /// The device's window on `mem` (closed first, while it is mapped).
    _window: Option<Window>,
    mem: HostMem,
    /// The pattern the first `valid` bytes of `mem` hold; `None` while
    /// they are written.
    pattern: Option<u32>,
    /// Bytes from the start that hold `pattern`, whole pages.
    valid: u64,
    /// Fills in flight that copy from it.
    users: usize,
}

/// The pages and which of them are taken.
struct Pages {
    /// The device's window on `mem` (closed first, while it is mapped).
    _window: Option<Window>,
    mem: HostMem,
    /// Bit `i` set: slot `i` is taken.
    taken: u32,
}

/// One device's staging pages.
#[pin_data]
pub(crate) struct Staging {
    /// Lock order: level 6 (Documentation/design/locking.md).
    #[pin]
    pages: Mutex<Pages>,
    /// Slot `i`'s DMA address: one page, one piece, below 4 GiB.
    dma: [u32; SLOTS],
    /// A device without MEM SET: its pattern sources; none otherwise.
    /// Lock order: level 6 (Documentation/design/locking.md).
    #[pin]
    patterns: Mutex<KVec<Source>>,
}

impl Staging {
    /// Pins and maps the pages for `hw`'s device, which DMAs from them.
    pub(crate) fn new(hw: &dyn Gluon) -> Result<Arc<Self>> {
        let mem = HostMem::new(hw.dma_device(), (SLOTS * PAGE_SIZE) as u64)?;
        let mut dma = [0u32; SLOTS];
        for (i, addr) in dma.iter_mut().enumerate() {
            let mut found = None;
            pieces(
                mem.segments(),
                (i * PAGE_SIZE) as u64,
                PAGE_SIZE as u64,
                &mut |piece, len| {
                    // A page is never split between segments; if it were, the
                    // device could not read a block from it in one piece.
                    if found.is_some() || len != PAGE_SIZE as u64 {
                        return Err(EINVAL);
                    }
                    found = Some(u32::try_from(piece)?);
                    Ok(())
                },
            )?;
            *addr = found.ok_or(EINVAL)?;
        }
        let window = open_window(hw, mem.segments())?;
        let mut sources = KVec::new();
        if hw.desc().caps & caps::SET == 0 {
            for _ in 0..PATTERN_SOURCES {
                let mem = HostMem::new(hw.dma_device(), PATTERN_SOURCE_BYTES)?;
                let source = Source {
                    _window: open_window(hw, mem.segments())?,
                    mem,
                    // Zeroed memory: the pattern 0, all of it.
                    pattern: Some(0),
                    valid: PATTERN_SOURCE_BYTES,
                    users: 0,
                };
                sources.push(source, GFP_KERNEL)?;
            }
        }
        Arc::pin_init(
            try_pin_init!(Self {
                pages <- new_mutex!(
                    Pages {
                        _window: window,
                        mem,
                        taken: 0
                    },
                    "Staging::pages"
                ),
                dma,
                patterns <- new_mutex!(sources, "Staging::patterns"),
            }),
            GFP_KERNEL,
        )
    }

    /// A source whose first `len` bytes (at most [`PATTERN_SOURCE_BYTES`])
    /// hold `pattern`, shared with the fills of that pattern in flight, or
    /// `None` while every source holds another pattern that fills in flight
    /// copy from. A source is written only as far as a fill needs: a small
    /// fill of a new pattern costs the CPU a page, not a MiB. EINVAL on a
    /// device with MEM SET.
    pub(crate) fn pattern(
        this: &Arc<Self>,
        pattern: u32,
        len: u64,
    ) -> Result<Option<PatternSource>> {
        let needed = len
            .min(PATTERN_SOURCE_BYTES)
            .next_multiple_of(PAGE_SIZE as u64);
        let mut sources = this.patterns.lock();
        if sources.is_empty() {
            return Err(EINVAL);
        }
        let index = match sources.iter().position(|s| s.pattern == Some(pattern)) {
            // Bytes past `valid` are no fill's in flight: written beside them.
            Some(i) => {
                let source = &mut sources[i];
                if source.valid < needed {
                    fill_with(&source.mem, pattern, source.valid, needed)?;
                    source.valid = needed;
                }
                i
            }
            None => {
                let Some(i) = sources.iter().position(|s| s.users == 0) else {
                    return Ok(None);
                };
                let source = &mut sources[i];
                // Holds no pattern until the bytes needed hold this one.
                source.pattern = None;
                fill_with(&source.mem, pattern, 0, needed)?;
                (source.pattern, source.valid) = (Some(pattern), needed);
                i
            }
        };
        sources[index].users += 1;
        Ok(Some(PatternSource {
            staging: this.clone(),
            index,
        }))
    }

    /// A free slot, or `None` when launches in flight hold them all.
    pub(crate) fn take(this: &Arc<Self>) -> Option<Slot> {
        let mut pages = this.pages.lock();
        let index = pages.taken.trailing_ones() as usize;
        if index >= SLOTS {
            return None;
        }
        pages.taken |= 1 << index;
        Some(Slot {
            staging: this.clone(),
            index,
        })
    }
}

/// A taken slot (one page); given back when dropped.
pub(crate) struct Slot {
    staging: Arc<Staging>,
    index: usize,
}

impl Slot {
    /// The slot's DMA address.
    pub(crate) fn dma_address(&self) -> u32 {
        self.staging.dma[self.index]
    }

    /// The slot's byte range in the staging pages, for `len` bytes at `at`.
    fn range(&self, at: usize, len: usize) -> Result<u64> {
        if at.checked_add(len).is_none_or(|end| end > PAGE_SIZE) || len == 0 {
            return Err(EINVAL);
        }
        Ok((self.index * PAGE_SIZE + at) as u64)
    }

    /// Copies `bytes` into the slot at `at` and hands them to the device.
    pub(crate) fn write(&self, at: usize, bytes: &[u8]) -> Result {
        let offset = self.range(at, bytes.len())?;
        let pages = self.staging.pages.lock();
        pages.mem.write(offset, bytes)?;
        pages
            .mem
            .sync(offset, bytes.len() as u64, Handover::ToDevice)
    }

    /// Takes back what the device wrote at `at` and copies it into `bytes`.
    pub(crate) fn read(&self, at: usize, bytes: &mut [u8]) -> Result {
        let offset = self.range(at, bytes.len())?;
        let pages = self.staging.pages.lock();
        pages
            .mem
            .sync(offset, bytes.len() as u64, Handover::ToCpu)?;
        pages.mem.read(offset, bytes)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.staging.pages.lock().taken &= !(1 << self.index);
    }
}

/// Writes `pattern` into every word of `mem`'s whole pages `[from, to)`
/// and hands them to the device.
fn fill_with(mem: &HostMem, pattern: u32, from: u64, to: u64) -> Result {
    let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
    for word in page.chunks_exact_mut(4) {
        word.copy_from_slice(&pattern.to_le_bytes());
    }
    let mut at = from;
    while at < to {
        mem.write(at, &page)?;
        at += PAGE_SIZE as u64;
    }
    mem.sync(from, to - from, Handover::ToDevice)
}

/// A pattern source a fill copies from, the fill's until dropped: when it
/// completes, or a reset drops it.
pub(crate) struct PatternSource {
    staging: Arc<Staging>,
    index: usize,
}

impl PatternSource {
    /// Calls `each(dma_address, length)` for the pieces of the source's
    /// first `len` bytes (at most [`PATTERN_SOURCE_BYTES`]), in order.
    pub(crate) fn pieces(&self, len: u64, each: &mut dyn FnMut(u64, u64) -> Result) -> Result {
        let sources = self.staging.patterns.lock();
        let source = sources.get(self.index).ok_or(EINVAL)?;
        pieces(source.mem.segments(), 0, len, each)
    }
}

impl Drop for PatternSource {
    fn drop(&mut self) {
        if let Some(source) = self.staging.patterns.lock().get_mut(self.index) {
            source.users = source.users.saturating_sub(1);
        }
    }
}
