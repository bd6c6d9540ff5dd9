// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `model` link: the Radiance SoC's address map (`soc_map`) in this
//! process, for CI. GPU DRAM, cluster shared memory and printBuf are memory;
//! the reset aggregator, the finished bits and the L0 flush registers are
//! registers; the tocpu mailbox is a word in DRAM.
//!
//! It runs no Muon code. Its GPU, once released, plays a [`Gpu`] script
//! in one of the launch protocols (`soc_map::Protocol`): with the nightly
//! one it waits for LAUNCH in each cluster's printBuf first; it prints
//! through the mailbox (one HTIF word at a time, the next when the host
//! wrote 0 back), then finishes after some polls, by raising the finished
//! bits, or by posting the epilogue's DONE or the nightly END slots (and
//! then leaving finished low, so that only those slots tell the end); or it
//! never finishes. As on the chip, a host store into cluster memory smaller
//! than an aligned 8 bytes is dropped, and the L2's flush register takes
//! line addresses. It records the order of the accesses that matter to the
//! launch protocol ([`Event`]), so that tests can assert it.

use crate::{
    link::{Link, LinkError, LinkResult},
    soc_map::*,
};
use std::collections::HashMap;

/// What the model's GPU does once released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gpu {
    /// Prints `prints` through the mailbox, then finishes once the host
    /// polled `after_polls` times, as `protocol` says.
    Finishes { after_polls: u32, prints: Vec<u8>, protocol: Protocol },
    /// Never finishes.
    Hangs,
}

impl Default for Gpu {
    fn default() -> Self {
        Self::Finishes { after_polls: 2, prints: Vec::new(), protocol: Protocol::Reset }
    }
}

/// An access the launch protocol orders.
// Read by the protocol-order tests only.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Reset written nonzero.
    Hold,
    /// Reset written 0 while held: the cores start.
    Release,
    /// Core `n`'s L0I invalidated.
    L0iInvalidate(u32),
    /// Core `n`'s L0D flushed (which wedges the taped-out L0D).
    L0dFlush(u32),
    /// Bytes written to GPU DRAM (host physical address, length).
    DramWrite { addr: u64, len: usize },
    /// A finished poll (all-finished, or every DONE or END slot) that saw
    /// the GPU done after it ran.
    SawFinished,
    /// The L2 line at this link address flushed.
    L2Flush(u64),
    /// A store into cluster memory dropped: less than an aligned 8 bytes.
    Dropped { addr: u64, len: usize },
}

/// Bytes in one page of the sparse memory.
const PAGE: u64 = 4096;

/// What the GPU is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Held,
    /// Released; `began`: the kernel started (with the nightly protocol,
    /// once LAUNCH came).
    Running {
        polls: u32,
        began: bool,
    },
    Finished,
}

/// The SoC.
pub struct SocModel {
    geometry: Geometry,
    gpu: Gpu,
    state: State,
    /// What of `Gpu::Finishes::prints` was posted.
    printed: usize,
    /// Every memory byte written, by page.
    pages: HashMap<u64, Box<[u8; PAGE as usize]>>,
    #[cfg(test)]
    events: Vec<Event>,
}

impl Default for SocModel {
    fn default() -> Self {
        Self::new(Geometry::default(), Gpu::default())
    }
}

/// What lies at an address.
enum Target {
    Memory,
    Reset,
    AllFinished,
    CoreFinished,
    L0i(u32),
    L0d(u32),
    L2Flush,
}

impl SocModel {
    /// A SoC of `geometry` whose GPU plays `gpu`, held in reset as at power
    /// on.
    pub fn new(geometry: Geometry, gpu: Gpu) -> Self {
        Self {
            geometry,
            gpu,
            state: State::Held,
            printed: 0,
            pages: HashMap::new(),
            #[cfg(test)]
            events: Vec::new(),
        }
    }

    /// The SoC's model named by `spec`, what follows `model` in a link's
    /// name: `` (its GPU finishes at the second poll), `:hang` (never),
    /// `:epilogue` (as the tapeout epilogue: DONE slots, no finished),
    /// `:nightly` (the nightly protocol: LAUNCH, then END slots) or
    /// `:print=TEXT` (prints TEXT through the mailbox first).
    pub fn from_spec(spec: &str, geometry: Geometry) -> Option<Self> {
        let finishes = |protocol| Gpu::Finishes { after_polls: 2, prints: Vec::new(), protocol };
        let gpu = match spec {
            "" => Gpu::default(),
            ":hang" => Gpu::Hangs,
            ":epilogue" => finishes(Protocol::Epilogue),
            ":nightly" => finishes(Protocol::Nightly),
            _ => {
                let text = spec.strip_prefix(":print=")?;
                Gpu::Finishes { after_polls: 2, prints: text.as_bytes().to_vec(), protocol: Protocol::Reset }
            }
        };
        Some(Self::new(geometry, gpu))
    }

    #[cfg(test)]
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    fn record(&mut self, _e: Event) {
        #[cfg(test)]
        self.events.push(_e);
    }

    /// What lies at `[addr, addr + len)`, if it is one thing.
    fn target(&self, addr: u64, len: usize) -> LinkResult<Target> {
        let end = addr.checked_add(len as u64).ok_or(LinkError::Address(addr))?;
        let inside = |base: u64, size: u64| addr >= base && end <= base + size;
        let cores = self.geometry.cores();
        let register = |at: u64| len == 4 && addr == at;
        if inside(DRAM_BASE, DRAM_SIZE) {
            return Ok(Target::Memory);
        }
        if register(RESET) {
            return Ok(Target::Reset);
        }
        if register(ALL_FINISHED) {
            return Ok(Target::AllFinished);
        }
        if (0..cores).any(|c| register(CORE_FINISHED + 4 * u64::from(c))) {
            return Ok(Target::CoreFinished);
        }
        if let Some(core) = (0..cores).find(|&c| register(self.geometry.l0i_flush(c))) {
            return Ok(Target::L0i(core));
        }
        if let Some(core) = (0..cores).find(|&c| register(self.geometry.l0d_flush(c))) {
            return Ok(Target::L0d(core));
        }
        if register(L2_FLUSH32) {
            return Ok(Target::L2Flush);
        }
        let in_cluster = (0..u64::from(self.geometry.clusters)).any(|c| {
            let base = CLUSTER_BASE + c * CLUSTER_STRIDE;
            inside(base, SHARED_MEM_SIZE) || inside(base + PRINTBUF, 8 * PRINTBUF_SLOTS)
        });
        if in_cluster {
            return Ok(Target::Memory);
        }
        Err(LinkError::Address(addr))
    }

    /// `(page, offset in it, bytes)` of each page piece of `len` bytes at
    /// `addr`.
    fn pieces(addr: u64, len: usize) -> impl Iterator<Item = (u64, usize, std::ops::Range<usize>)> {
        let mut done = 0;
        std::iter::from_fn(move || {
            let a = addr + done as u64;
            let at = (a % PAGE) as usize;
            let n = (len - done).min(PAGE as usize - at);
            let piece = (n > 0).then(|| (a / PAGE, at, done..done + n));
            done += n;
            piece
        })
    }

    fn load(&self, addr: u64, dst: &mut [u8]) {
        for (page, at, range) in Self::pieces(addr, dst.len()) {
            let n = range.len();
            match self.pages.get(&page) {
                Some(p) => dst[range].copy_from_slice(&p[at..at + n]),
                None => dst[range].fill(0),
            }
        }
    }

    fn store(&mut self, addr: u64, src: &[u8]) {
        for (page, at, range) in Self::pieces(addr, src.len()) {
            let n = range.len();
            let p = self.pages.entry(page).or_insert_with(|| Box::new([0; PAGE as usize]));
            p[at..at + n].copy_from_slice(&src[range]);
        }
    }

    fn word(&self, addr: u64) -> u64 {
        let mut b = [0; 8];
        self.load(addr, &mut b);
        u64::from_le_bytes(b)
    }

    /// The slot each core posts its end in, as its protocol says (None: it
    /// raises finished).
    fn end_slot(&self) -> Option<EndSlot> {
        match self.gpu {
            Gpu::Finishes { protocol, .. } => protocol.end_slot(),
            Gpu::Hangs => None,
        }
    }

    /// Whether every core posted its end in `slot`.
    fn all_posted(&self, (slot, done): EndSlot) -> bool {
        (0..self.geometry.cores()).all(|c| done(self.word(self.geometry.printbuf_slot(c, slot, true)) as u32))
    }

    /// Posts `value` in `slot + core` of every core, both halves, as the
    /// kernels do.
    fn post(&mut self, slot: u64, value: impl Fn(u64) -> u32) {
        for c in 0..self.geometry.cores() {
            let at = self.geometry.printbuf_slot(c, slot, true);
            let v = u64::from(value(self.word(at)));
            self.store(at, &(v << 32 | v).to_le_bytes());
        }
    }

    /// The GPU's step at each host poll: wait for LAUNCH (nightly), begin,
    /// post the next character once the mailbox is empty, then finish.
    fn step(&mut self) {
        let State::Running { polls, began } = self.state else { return };
        let Gpu::Finishes { after_polls, protocol, .. } = self.gpu else { return };
        let g = self.geometry;
        let launched = |m: &Self| {
            (0..g.clusters).all(|c| m.word(g.printbuf_slot(g.first_core(c), LAUNCH_SLOT, false)) as u32 == LAUNCH_MAGIC)
        };
        if !began {
            match protocol {
                Protocol::Nightly if !launched(self) => return,
                Protocol::Nightly => self.post(START_SLOT, |_| 1),
                Protocol::Epilogue => self.post(GENERATION_SLOT, |g| (g as u32).wrapping_add(1)),
                Protocol::Reset => {}
            }
            self.state = State::Running { polls, began: true };
        }
        let next = match &self.gpu {
            Gpu::Finishes { prints, .. } => prints.get(self.printed).copied(),
            Gpu::Hangs => None,
        };
        if let Some(ch) = next {
            if self.word(TOCPU) == 0 {
                self.printed += 1;
                self.store(TOCPU, &(HTIF_PUTCHAR | u64::from(ch)).to_le_bytes());
            }
            return;
        }
        if polls + 1 < after_polls {
            self.state = State::Running { polls: polls + 1, began: true };
            return;
        }
        match self.end_slot() {
            // DONE or END posted, finished never raised.
            Some((slot, _)) => {
                let magic = if protocol == Protocol::Epilogue { DONE_MAGIC } else { 2 };
                self.post(slot, |_| magic);
                self.state = State::Running { polls: polls + 1, began: true };
            }
            None => self.state = State::Finished,
        }
    }

    /// Whether a store into memory at `addr` is one the chip drops: into
    /// cluster memory, and not whole aligned 8-byte words.
    fn drops(&self, addr: u64, len: usize) -> bool {
        addr < DRAM_BASE && (addr % 8 != 0 || len % 8 != 0)
    }

    /// Whether the finished bits read 1.
    fn finished(&self) -> bool {
        matches!(self.state, State::Held | State::Finished)
    }
}

impl Link for SocModel {
    fn read(&mut self, addr: u64, dst: &mut [u8]) -> LinkResult<()> {
        let target = self.target(addr, dst.len())?;
        let ran = self.state != State::Held;
        match target {
            Target::Memory => {
                let end = self.end_slot();
                let end_read = end.is_some_and(|(slot, _)| {
                    ran && (0..self.geometry.cores()).any(|c| addr == self.geometry.printbuf_slot(c, slot, true))
                });
                self.step();
                self.load(addr, dst);
                if end_read && end.is_some_and(|e| self.all_posted(e)) {
                    self.record(Event::SawFinished);
                }
                return Ok(());
            }
            Target::AllFinished => {
                self.step();
                if ran && self.finished() {
                    self.record(Event::SawFinished);
                }
                dst.copy_from_slice(&u32::from(self.finished()).to_le_bytes());
            }
            Target::CoreFinished => dst.copy_from_slice(&u32::from(self.finished()).to_le_bytes()),
            Target::Reset => dst.copy_from_slice(&u32::from(self.state == State::Held).to_le_bytes()),
            Target::L0i(_) | Target::L0d(_) | Target::L2Flush => dst.fill(0),
        }
        Ok(())
    }

    fn write(&mut self, addr: u64, src: &[u8]) -> LinkResult<()> {
        let value = || u32::from_le_bytes([src[0], src[1], src[2], src[3]]);
        match self.target(addr, src.len())? {
            Target::Memory if self.drops(addr, src.len()) => self.record(Event::Dropped { addr, len: src.len() }),
            Target::Memory => {
                if (DRAM_BASE..DRAM_BASE + DRAM_SIZE).contains(&addr) {
                    self.record(Event::DramWrite { addr, len: src.len() });
                }
                self.store(addr, src);
            }
            Target::Reset if value() != 0 => {
                self.state = State::Held;
                self.record(Event::Hold);
            }
            Target::Reset => {
                if self.state == State::Held {
                    self.state = State::Running { polls: 0, began: false };
                    self.printed = 0;
                    self.record(Event::Release);
                }
            }
            Target::L0i(core) => self.record(Event::L0iInvalidate(core)),
            Target::L0d(core) => self.record(Event::L0dFlush(core)),
            Target::L2Flush => self.record(Event::L2Flush(u64::from(value()) << 4)),
            // Read-only: the write is dropped, as TileLink registers do.
            Target::AllFinished | Target::CoreFinished => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_answers_where_the_soc_has_something() {
        let mut soc = SocModel::default();
        assert_eq!(soc.read32(ALL_FINISHED), Ok(1), "held in reset reads finished");
        assert_eq!(soc.read32(CORE_FINISHED + 4), Ok(1));
        // Two cores: a third core's bit is not there.
        assert_eq!(soc.read32(CORE_FINISHED + 8), Err(LinkError::Address(CORE_FINISHED + 8)));
        // A register is one 32-bit access.
        assert_eq!(soc.read64(ALL_FINISHED), Err(LinkError::Address(ALL_FINISHED)));
        soc.write64(CLUSTER_BASE + PRINTBUF + 8 * 63, 7).unwrap();
        // Across pages, and zeros where nothing was written.
        let bytes: Vec<u8> = (0..9000u32).map(|i| i as u8).collect();
        soc.write(DRAM_BASE + 4090, &bytes).unwrap();
        let mut back = vec![0xff; 9010];
        soc.read(DRAM_BASE + 4090, &mut back).unwrap();
        assert_eq!(back[..9000], bytes[..]);
        assert_eq!(back[9000..], [0; 10]);
        assert_eq!(soc.read64(CLUSTER_BASE + PRINTBUF + 8 * 63), Ok(7));
        assert!(soc.read64(CLUSTER_BASE + PRINTBUF + 8 * 64).is_err());
        assert!(soc.read32(DRAM_BASE + DRAM_SIZE).is_err());
        assert_eq!(soc.geometry.l0i_flush(1), 0x4008_0400);
        assert_eq!(soc.geometry.l0d_flush(0), 0x4008_0300);
    }

    #[test]
    fn a_store_into_cluster_memory_under_8_aligned_bytes_is_dropped() {
        let mut soc = SocModel::default();
        let slot = CLUSTER_BASE + PRINTBUF + 8;
        soc.write32(slot, 5).unwrap();
        soc.write(slot + 4, &[1; 8]).unwrap();
        assert_eq!(soc.read64(slot), Ok(0));
        soc.write64(slot, 6).unwrap();
        assert_eq!(soc.read64(slot), Ok(6));
        // GPU DRAM takes any store.
        soc.write32(DRAM_BASE + 4, 9).unwrap();
        assert_eq!(soc.read32(DRAM_BASE + 4), Ok(9));
        let dropped = |addr, len| Event::Dropped { addr, len };
        assert_eq!(soc.events()[..2], [dropped(slot, 4), dropped(slot + 4, 8)]);
        soc.write32(L2_FLUSH32, 0x1000_0002).unwrap();
        assert_eq!(soc.events().last(), Some(&Event::L2Flush(0x1_0000_0020)));
    }

    #[test]
    fn the_gpu_runs_only_between_release_and_hold() {
        let mut soc = SocModel::default();
        soc.write32(RESET, 0).unwrap();
        assert_eq!(soc.read32(ALL_FINISHED), Ok(0));
        assert_eq!(soc.read32(ALL_FINISHED), Ok(1), "finishes at the second poll");
        soc.write32(RESET, 1).unwrap();
        assert_eq!(soc.events(), &[Event::Release, Event::SawFinished, Event::Hold]);
    }

    #[test]
    fn the_gpu_prints_one_character_per_empty_mailbox() {
        let gpu = Gpu::Finishes { after_polls: 1, prints: b"ok".to_vec(), protocol: Protocol::Reset };
        let mut soc = SocModel::new(Geometry::default(), gpu);
        soc.write32(RESET, 0).unwrap();
        assert_eq!(soc.read64(TOCPU), Ok(HTIF_PUTCHAR | u64::from(b'o')));
        // Not taken yet: the same word again.
        assert_eq!(soc.read64(TOCPU), Ok(HTIF_PUTCHAR | u64::from(b'o')));
        assert_eq!(soc.read32(ALL_FINISHED), Ok(0));
        soc.write64(TOCPU, 0).unwrap();
        assert_eq!(soc.read64(TOCPU), Ok(HTIF_PUTCHAR | u64::from(b'k')));
        soc.write64(TOCPU, 0).unwrap();
        assert_eq!(soc.read32(ALL_FINISHED), Ok(1));
    }
}
