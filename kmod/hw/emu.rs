// SPDX-License-Identifier: GPL-2.0

//! The emulated Gluon: a software command processor for machines without a
//! Radiance board (QEMU, CI). It has a `struct device` of its own (a faux
//! device) so that it looks like any other device to the driver core.
//!
//! Its VRAM is an array of pages allocated on first use: a page nobody has
//! touched reads as zeros and costs nothing, and scrubbing a whole page just
//! frees it.
//!
//! Commands go through a bounded FIFO to a worker that executes them one at
//! a time (so in order, which the in-order completion rule allows), posts a
//! response for each and raises the interrupt. Host memory is reached the
//! way the device reaches it, by DMA address: the emulated device has no
//! IOMMU (dma-direct), so a DMA address is a physical address, which the
//! worker maps with `memremap`.
//!
//! What it does with each command is [`crate::gluon::model`], which the
//! userspace gluon-bridge runs too; this file is the model's kernel host:
//! VRAM pages, host memory by DMA address, the FIFOs, the worker, resets.
//! The model reports each step of a long command; the engine counts them
//! per stream for the watchdog ([`Gluon::progress`]), and with a throttle
//! (a debug knob) sleeps after each, to stand for a slow device.
//! In gluon-sim mode it implements only what gluon-sim e554ff7 does, so the
//! tests show the driver never sends more.

use kernel::{
    device::Device,
    new_mutex,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    str::CString,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Relaxed,
            Release, //
        },
        Arc, Mutex,
    },
    time::{
        delay::fsleep,
        ClockSource,
        Delta,
        Instant,
        Monotonic, //
    },
    workqueue::{
        impl_has_work,
        new_work,
        Work,
        WorkItem, //
    },
};

use super::{
    dma_device::DmaDevice,
    host_map::HostMap,
    stream_of,
    Gluon,
    HwDesc,
    Interrupt,
    Rates, //
};
use crate::{
    fifo::Fifo,
    gluon::{
        model::{
            self,
            MemError,
            Memory,
            Model, //
        },
        Dialect,
        Frame,
        RESPONSE_SIZE, //
    },
    raw::flush_work,
    uapi::{
        self,
        caps, //
    },
};

/// The emulated compute shape, a small Radiance configuration.
const CORES: u32 = 4;
const WARPS_PER_CORE: u32 = 8;
const THREADS_PER_WARP: u32 = 16;

/// Command FIFO depth, as a board's would be.
const FIFO_DEPTH: usize = 64;

/// Hardware streams.
const STREAMS: u8 = 4;

/// Commands one stream takes at once: gluon-sim's one, or a deeper FIFO.
const GLUON_SIM_DEPTH: u8 = 1;
const DEPTH: u8 = 16;

/// The FIFOs between the driver and the command processor.
struct Fifos {
    commands: Fifo<Frame>,
    responses: Fifo<[u8; RESPONSE_SIZE]>,
    /// The stream whose command runs, and since when: the commands of the
    /// other streams wait behind it (see [`Gluon::ages_from`]).
    running: Option<(u8, Instant<Monotonic>)>,
    /// When the worker last took or finished a command: a command queued
    /// while none runs waits for the worker's next turn, and ages from
    /// here.
    moved: Instant<Monotonic>,
}

/// The command processor and its memory.
#[pin_data]
struct Engine {
    vram_size: u64,
    dialect: &'static dyn Dialect,
    /// What the commands do.
    /// Lock order: level 6 (Documentation/design/locking.md).
    #[pin]
    model: Mutex<Model>,
    /// VRAM page `i` holds bytes `[i * PAGE_SIZE, (i + 1) * PAGE_SIZE)`;
    /// `None` reads as zeros.
    /// Lock order: level 7 (Documentation/design/locking.md).
    #[pin]
    vram: Mutex<KVVec<Option<Page>>>,
    /// Lock order: level 6 (Documentation/design/locking.md).
    #[pin]
    fifos: Mutex<Fifos>,
    /// Lock order: level 7 (Documentation/design/locking.md).
    #[pin]
    irq: Mutex<Option<Arc<dyn Interrupt>>>,
    /// 1 while a reset is under way: the running kernel stops and the rest
    /// of the FIFO is dropped.
    abort: Atomic<i32>,
    /// The stream of the command that runs (see `Fifos::running`), where
    /// its progress counts; written only by the worker.
    current: Atomic<i32>,
    /// Per stream: work done so far (bytes and threads), for the watchdog.
    done: [Atomic<i64>; STREAMS as usize],
    /// Microseconds slept after each step of a command (0: none).
    throttle_us: u32,
    #[pin]
    work: Work<Engine>,
}

impl_has_work! {
    impl HasWork<Self> for Engine { self.work }
}

/// A software Gluon.
pub(crate) struct Emu {
    desc: HwDesc,
    engine: Arc<Engine>,
    /// Gives the emulated device its `struct device`; removed on drop.
    faux: DmaDevice,
}

impl Emu {
    /// Largest emulated VRAM: Gluon addresses are 32-bit.
    pub(crate) const MAX_VRAM: u64 = 1 << 32;

    /// Creates emulated device `index` with `vram_size` bytes of VRAM (a
    /// multiple of the page size), speaking `dialect`; with `gluon_sim`, it
    /// implements only what gluon-sim e554ff7 does. It sleeps `throttle_us`
    /// after each step of a command.
    pub(crate) fn new(
        index: u32,
        vram_size: u64,
        dialect: &'static dyn Dialect,
        gluon_sim: bool,
        throttle_us: u32,
    ) -> Result<Arc<Self>> {
        // What the model implements; the CPU maps this VRAM (kernel pages),
        // except in gluon-sim mode, whose VRAM lives in the sim's process.
        let caps =
            model::caps(dialect, gluon_sim) | if gluon_sim { 0 } else { caps::VRAM_MAPPABLE };
        let name = CString::try_from_fmt(fmt!("radiance-emu{index}"))?;
        let faux = DmaDevice::new(&name)?;
        let pages = usize::try_from(vram_size / PAGE_SIZE as u64)?;
        let mut vram = KVVec::with_capacity(pages, GFP_KERNEL)?;
        for _ in 0..pages {
            vram.push(None, GFP_KERNEL)?;
        }
        let fifos = Fifos {
            commands: Fifo::with_capacity(FIFO_DEPTH)?,
            responses: Fifo::with_capacity(FIFO_DEPTH)?,
            running: None,
            moved: Instant::now(),
        };
        let streams = STREAMS.min(dialect.max_streams());
        let model = Model::new(dialect, caps, streams, vram_size);
        let engine = Arc::pin_init(
            pin_init!(Engine {
                vram_size,
                dialect,
                model <- new_mutex!(model, "Emu::model"),
                vram <- new_mutex!(vram, "Emu::vram"),
                fifos <- new_mutex!(fifos, "Emu::fifos"),
                irq <- new_mutex!(None, "Emu::irq"),
                abort: Atomic::new(0),
                current: Atomic::new(0),
                done: [const { Atomic::new(0) }; STREAMS as usize],
                throttle_us,
                work <- new_work!("Emu::work"),
            }),
            GFP_KERNEL,
        )?;
        let desc = HwDesc {
            backend: uapi::backend::EMULATED,
            name: super::name_field(b"Radiance (emulated Gluon)"),
            cores: CORES,
            warps_per_core: WARPS_PER_CORE,
            threads_per_warp: THREADS_PER_WARP,
            vram_size,
            // All of them.
            builtins: model::BUILTINS,
            dialect,
            streams,
            stream_depth: if gluon_sim { GLUON_SIM_DEPTH } else { DEPTH },
            caps,
            // It reports progress instead.
            rates: Rates::default(),
        };
        Ok(Arc::new(Self { desc, engine, faux }, GFP_KERNEL)?)
    }
}

impl Engine {
    /// Calls `each(page, offset in page, bytes, offset in the range)` for
    /// the VRAM pages behind `[addr, addr + len)`, allocating untouched ones.
    fn vram_chunks(
        &self,
        addr: u64,
        len: u64,
        mut each: impl FnMut(&Page, usize, usize, usize) -> Result,
    ) -> Result {
        if addr.checked_add(len).is_none_or(|end| end > self.vram_size) {
            return Err(EINVAL);
        }
        let page = PAGE_SIZE as u64;
        let mut vram = self.vram.lock();
        let mut done = 0u64;
        while done < len {
            let at = addr + done;
            let n = (page - at % page).min(len - done);
            let slot = vram.get_mut((at / page) as usize).ok_or(EINVAL)?;
            let p = match slot {
                Some(p) => p,
                None => slot.insert(Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?),
            };
            each(p, (at % page) as usize, n as usize, done as usize)?;
            done += n;
        }
        Ok(())
    }

    /// The next command frame, if any, which runs from now.
    fn next_command(&self) -> Option<Frame> {
        let mut f = self.fifos.lock();
        let frame = f.commands.pop()?;
        let stream = stream_of(self.dialect, &frame);
        f.moved = Instant::now();
        f.running = Some((stream, f.moved));
        self.current.store(stream.into(), Relaxed);
        Some(frame)
    }

    fn post(&self, response: [u8; RESPONSE_SIZE]) {
        {
            let mut f = self.fifos.lock();
            // The driver keeps at most FIFO_DEPTH commands in flight, so
            // this never grows past the capacity reserved in `new`.
            let _ = f.responses.push(response);
            f.running = None;
            f.moved = Instant::now();
        }
        if let Some(irq) = &*self.irq.lock() {
            irq.raise();
        }
    }
}

impl Memory for Engine {
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> Result<(), MemError> {
        self.vram_chunks(addr, dst.len() as u64, |p, off, n, done| {
            let dst = dst.get_mut(done..done + n).ok_or(EINVAL)?;
            // SAFETY: `dst` is valid for `n` writable bytes. VRAM pages are
            // read and written only under `vram`, which `vram_chunks` holds.
            unsafe { p.read_raw(dst.as_mut_ptr(), off, n) }
        })
        .map_err(|_| MemError::Vram)
    }

    fn write_vram(&self, addr: u64, src: &[u8]) -> Result<(), MemError> {
        self.vram_chunks(addr, src.len() as u64, |p, off, n, done| {
            let src = src.get(done..done + n).ok_or(EINVAL)?;
            // SAFETY: `src` is valid for `n` bytes. VRAM pages are read and
            // written only under `vram`, which `vram_chunks` holds.
            unsafe { p.write_raw(src.as_ptr(), off, n) }
        })
        .map_err(|_| MemError::Vram)
    }

    fn host_to_vram(&self, host: u64, vram: u64, len: u32) -> Result<(), MemError> {
        // One mapping for the whole copy, then a page copy per VRAM page.
        let host = HostMap::new(host, len).map_err(|_| MemError::Host)?;
        self.vram_chunks(vram, len.into(), |p, off, n, done| {
            // SAFETY: `host` maps `len` >= `done + n` bytes (invariant; `vram_chunks`), VRAM pages
            // are touched only under `vram` (held), and the host bytes are the device's now.
            unsafe { p.write_raw(host.as_ptr().add(done), off, n) }
        })
        .map_err(|_| MemError::Vram)
    }

    fn vram_to_host(&self, vram: u64, host: u64, len: u32) -> Result<(), MemError> {
        let host = HostMap::new(host, len).map_err(|_| MemError::Host)?;
        self.vram_chunks(vram, len.into(), |p, off, n, done| {
            // SAFETY: `host` maps `len` >= `done + n` bytes (invariant; `vram_chunks`), VRAM pages
            // are touched only under `vram` (held), and the host bytes are the device's now.
            unsafe { p.read_raw(host.as_ptr().add(done), off, n) }
        })
        .map_err(|_| MemError::Vram)
    }

    fn write_host(&self, host: u64, src: &[u8]) -> Result<(), MemError> {
        let len = u32::try_from(src.len()).map_err(|_| MemError::Host)?;
        HostMap::new(host, len)
            .and_then(|map| map.write(0, src))
            .map_err(|_| MemError::Host)
    }

    fn clock_ns(&self) -> i64 {
        // The device's clock is the host's monotonic clock.
        Monotonic::ktime_get()
    }

    fn aborted(&self) -> bool {
        self.abort.load(Acquire) != 0
    }

    fn pause(&self) {
        fsleep(Delta::from_millis(1));
    }

    fn progress(&self, units: u64) {
        let stream = self.current.load(Relaxed) as usize;
        if let Some(done) = self.done.get(stream) {
            done.add(i64::try_from(units).unwrap_or(i64::MAX), Relaxed);
        }
        if self.throttle_us > 0 && units > 0 {
            fsleep(Delta::from_micros(self.throttle_us.into()));
        }
    }
}

impl WorkItem for Engine {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        crate::kcov::work(|| this.serve());
    }
}

impl Engine {
    /// Runs the commands there are, until a reset.
    fn serve(&self) {
        while let Some(frame) = self.next_command() {
            if self.aborted() {
                break;
            }
            let Some(response) = self.model.lock().run(self, frame.as_bytes()) else {
                // Reset while it ran: it never completed.
                break;
            };
            self.post(response);
        }
    }
}

impl Gluon for Emu {
    fn desc(&self) -> &HwDesc {
        &self.desc
    }

    fn vram_zero(&self, addr: u64, len: u64) {
        let page = PAGE_SIZE as u64;
        let mut vram = self.engine.vram.lock();
        let mut at = addr;
        while at < addr + len {
            let offset = at % page;
            let n = (page - offset).min(addr + len - at);
            let slot = vram.get_mut((at / page) as usize);
            match slot {
                // A whole page: give it back; it reads as zeros from now on.
                Some(slot) if n == page => *slot = None,
                Some(Some(p)) => {
                    // Other bytes of the page may be in use, but none of these:
                    // no overlap. The bounds lie inside the page, so the
                    // bounds check cannot fail.
                    // SAFETY: the caller owns `[addr, addr + len)`.
                    let _ = unsafe { p.fill_zero_raw(offset as usize, n as usize) };
                }
                // Never touched, or past the end (the allocator never hands
                // that out): nothing to scrub.
                Some(None) | None => {}
            }
            at += n;
        }
    }

    fn vram_pages(&self, addr: u64, len: u64, each: &mut dyn FnMut(&Page) -> Result) -> Result {
        self.engine.vram_chunks(addr, len, |p, _, _, _| each(p))
    }

    fn dma_device(&self) -> &Device {
        self.faux.device()
    }

    fn push_command(&self, frame: &[u8]) -> Result {
        let copy = Frame::from_bytes(frame).ok_or(EINVAL)?;
        {
            let mut f = self.engine.fifos.lock();
            if f.commands.len() >= FIFO_DEPTH {
                return Err(EBUSY);
            }
            f.commands.push(copy)?;
        }
        // Already queued or running: it will see the new command.
        let _ = crate::raw::system_dfl().enqueue(self.engine.clone());
        Ok(())
    }

    fn pop_response(&self) -> Option<[u8; RESPONSE_SIZE]> {
        self.engine.fifos.lock().responses.pop()
    }

    /// One command runs at a time, over all streams: the running one ages
    /// from when it started, and one that waits behind it does not age (a
    /// long command on one stream must not time out a queue of another).
    /// Between two commands, what waits ages from when the last one ended:
    /// the worker is on its way to the next.
    fn ages_from(&self, stream: u8) -> Option<Instant<Monotonic>> {
        let f = self.engine.fifos.lock();
        match f.running {
            Some((running, since)) if running == stream => Some(since),
            Some(_) => Some(Instant::now()),
            None => Some(f.moved),
        }
    }

    /// What the model reported for `stream`'s commands (bytes and
    /// threads); it wraps, and only its changes matter.
    fn progress(&self, stream: u8) -> Option<u64> {
        let done = self.engine.done.get(usize::from(stream))?;
        Some(done.load(Relaxed) as u64)
    }

    fn set_interrupt(&self, irq: Option<Arc<dyn Interrupt>>) {
        *self.engine.irq.lock() = irq;
    }

    fn reset(&self) {
        let engine = &self.engine;
        engine.abort.store(1, Release);
        flush_work(&engine.work);
        {
            let mut f = engine.fifos.lock();
            f.commands.clear();
            f.responses.clear();
            f.running = None;
            f.moved = Instant::now();
        }
        engine.model.lock().reset();
        engine.abort.store(0, Release);
    }
}
