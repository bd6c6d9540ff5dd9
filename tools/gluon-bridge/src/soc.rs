// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Soc mode: the device is a Radiance SoC reached over a memory link
//! (`link`). The SoC has no Gluon: its host drives the GPU through the reset
//! aggregator (`soc_map`). So the kernel keeps speaking Gluon to the bridge
//! and the bridge carries each command out as link accesses:
//! - COPY, SET and FENCE run in Gluon's model (`radiance_gluon::model`)
//!   over GPU DRAM at `DRAM_BASE + device address`;
//! - KERNEL runs the image already in GPU DRAM (a loader such as `radctl
//!   run` copied its segments to their link addresses) by one of the
//!   protocols of radiance-kernels' hosts (`soc_map::Protocol`): the params
//!   to the argument page, L0I invalidated, reset released, the end polled
//!   while the tocpu mailbox is served, reset held again ([`Soc::launch`]).
//!
//! Over a link that bypasses the chip's L2 (a bring-up FPGA's TSI), each
//! line of GPU DRAM is flushed from the L2 before the link touches it (`l2`).
//!
//! Copies and fills report their progress to the kernel a link block at a
//! time (`Link::block`), so that a large copy over a slow link is not
//! taken for a hung one; a launch reports none (the SoC says nothing until
//! it finishes), so the launch timeout bounds it.
//!
//! Reset stays held whenever no launch runs, so that copies never race a
//! running GPU; a device reset from the kernel (its watchdog) holds it too.
//! A link that fails ends the bridge, and with it the device.

use crate::{
    control::{self, declaration, Block, Control, Incoming},
    error::{Error, Result},
    l2::Lines,
    link::{self, Link, LinkError, LinkResult},
    soc_map::*,
};
use radiance_gluon::{
    model::{MemError, Memory, Model, MAX_LAUNCH_BLOCK},
    sim16::Sim16,
    status, Command, Dialect, Response, RESPONSE_SIZE,
};
use radiance_uapi::{caps, gluon_err, PrintfRing};
use std::{
    cell::{Cell, RefCell},
    fmt::Write as _,
    time::{Duration, Instant},
};

/// The compute shape declared: the SoC's own is not readable over the link.
const WARPS_PER_CORE: u32 = 8;
const THREADS_PER_WARP: u32 = 16;
const STREAMS: u8 = 4;
/// Gluon's model implements these over the link; no WAIT (its counts would
/// miss the launches run here), no counters, no built-ins.
const CAPS: u64 = caps::SET | caps::COPY_D2D | caps::SUBWORD | caps::FENCE;

/// What the SoC is and how to reach it.
pub struct SocOptions {
    /// `model` or `unix:PATH`.
    pub link: String,
    pub geometry: Geometry,
    /// GPU DRAM to declare, in MiB (at most 2048).
    pub vram_mib: u32,
    /// How a launch starts and ends.
    pub protocol: Protocol,
    /// Flush each line of GPU DRAM from the chip's L2 before the link
    /// touches it (`l2`).
    pub l2_flush: bool,
    /// How long a launch may run before the bridge resets the GPU.
    pub timeout: Duration,
    /// Time between two polls of finished.
    pub poll: Duration,
}

/// How a launch ended, when it ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Launched {
    /// `status::OK`, or the execution error's status, PC and warp (the
    /// response's stream is the caller's).
    pub fault: Option<(u8, u32, u32)>,
    /// What the device printed through the mailbox, and the bridge's report
    /// of a timeout.
    pub printed: Vec<u8>,
}

impl Launched {
    fn failed(status: u8, pc: u32, warp: u32) -> Self {
        Self { fault: Some((status, pc, warp)), printed: Vec::new() }
    }
}

/// A SoC behind a link.
pub struct Soc<L: Link> {
    link: RefCell<L>,
    geometry: Geometry,
    protocol: Protocol,
    /// The lines flushed from the L2 since the last launch; None: the link
    /// does not bypass the L2.
    l2: Option<RefCell<Lines>>,
    timeout: Duration,
    poll: Duration,
    /// The first link failure: the bridge stops after the command it broke.
    failed: RefCell<Option<LinkError>>,
}

impl<L: Link> Soc<L> {
    pub fn new(link: L, opts: &SocOptions) -> Self {
        Self {
            link: RefCell::new(link),
            geometry: opts.geometry,
            protocol: opts.protocol,
            l2: opts.l2_flush.then(RefCell::default),
            timeout: opts.timeout,
            poll: opts.poll,
            failed: RefCell::new(None),
        }
    }

    pub fn into_link(self) -> L {
        self.link.into_inner()
    }

    /// Holds every core in reset.
    pub fn hold(&self) -> LinkResult<()> {
        self.link.borrow_mut().write32(RESET, 1)
    }

    /// Flushes from the L2 the lines of GPU DRAM `[addr, addr + len)` not
    /// flushed since the last launch, or all of them (`again`: a line the
    /// running GPU may write at any time).
    fn flush(&self, addr: u64, len: usize, again: bool) -> LinkResult<()> {
        let Some(l2) = &self.l2 else { return Ok(()) };
        let lines = if again { Lines::default().take(addr, len) } else { l2.borrow_mut().take(addr, len) };
        let mut link = self.link.borrow_mut();
        for line in lines {
            // The line's address over 16 fits: GPU DRAM ends below 2^36.
            link.write32(L2_FLUSH32, (line >> 4) as u32)?;
        }
        Ok(())
    }

    /// Reads `dst.len()` bytes of GPU DRAM at link address `addr`, a link
    /// block at a time, telling `moved` each block's bytes.
    fn read_block(&self, addr: u64, dst: &mut [u8], moved: &dyn Fn(u64)) -> LinkResult<()> {
        let block = self.link.borrow().block();
        for (i, chunk) in dst.chunks_mut(block).enumerate() {
            let at = addr + (i * block) as u64;
            self.flush(at, chunk.len(), false)?;
            self.link.borrow_mut().read(at, chunk)?;
            moved(chunk.len() as u64);
        }
        Ok(())
    }

    /// Writes `src` to GPU DRAM at link address `addr`, a link block at a
    /// time, telling `moved` each block's bytes.
    fn write_block(&self, addr: u64, src: &[u8], moved: &dyn Fn(u64)) -> LinkResult<()> {
        let block = self.link.borrow().block();
        for (i, chunk) in src.chunks(block).enumerate() {
            let at = addr + (i * block) as u64;
            self.flush(at, chunk.len(), false)?;
            self.link.borrow_mut().write(at, chunk)?;
            moved(chunk.len() as u64);
        }
        Ok(())
    }

    /// Writes `value` into printBuf slot `addr` as the kernels' hosts do:
    /// one aligned 8-byte store, the value in both halves (`soc_map`).
    fn put_slot(&self, addr: u64, value: u32) -> LinkResult<()> {
        self.link.borrow_mut().write64(addr, u64::from(value) << 32 | u64::from(value))
    }

    /// The low half of printBuf slot `addr`, where the kernels post.
    fn slot(&self, addr: u64) -> LinkResult<u32> {
        Ok(self.link.borrow_mut().read64(addr)? as u32)
    }

    /// Notes a link failure for the serve loop and gives the model its
    /// memory error.
    fn note(&self, e: LinkError) -> MemError {
        self.failed.borrow_mut().get_or_insert(e);
        MemError::Vram
    }

    /// Runs the image in GPU DRAM for the launch block `block` (its header,
    /// params and the rest, in `dialect`'s layout). None when `aborted` said
    /// a reset came first (the GPU is held again; there is no response).
    pub fn launch(
        &self,
        dialect: &dyn Dialect,
        block: &[u8],
        aborted: &dyn Fn() -> bool,
    ) -> LinkResult<Option<Launched>> {
        let head = dialect.launch_header_size();
        let Ok(l) = dialect.decode_launch(block) else {
            return Ok(Some(Launched::failed(gluon_err::BAD_LAUNCH, 0, 0)));
        };
        // Warps start where the image is linked; the SoC has no start PC
        // register, so any other PC cannot be run.
        if l.start_pc != START_PC {
            return Ok(Some(Launched::failed(status::EXECUTION, l.start_pc, 0)));
        }
        let params = block.get(head..head + l.params_size as usize).filter(|p| p.len() as u64 <= ARG_SIZE);
        let Some(params) = params else { return Ok(Some(Launched::failed(gluon_err::BAD_LAUNCH, l.start_pc, 0))) };

        self.hold()?;
        self.write_block(ARG_BASE, params, &|_| {})?;
        // An empty mailbox.
        self.flush(TOCPU, 8, true)?;
        self.link.borrow_mut().write64(TOCPU, 0)?;
        // Nothing left in the slots the end is seen by from the last run.
        let g = self.geometry;
        for core in 0..g.cores() {
            match self.protocol {
                Protocol::Reset => {}
                Protocol::Epilogue => self.put_slot(g.printbuf_slot(core, DONE_SLOT, true), 0)?,
                Protocol::Nightly => {
                    self.put_slot(g.printbuf_slot(core, START_SLOT, true), 0)?;
                    self.put_slot(g.printbuf_slot(core, END_SLOT, true), 0)?;
                }
            }
        }
        if self.protocol == Protocol::Nightly {
            // nightly_host_launch: STATUS and ARG, then LAUNCH once the
            // cores run.
            for cluster in 0..g.clusters {
                let core = g.first_core(cluster);
                self.put_slot(g.printbuf_slot(core, LAUNCH_SLOT, false), 0)?;
                self.put_slot(g.printbuf_slot(core, STATUS_SLOT, false), 0)?;
                self.put_slot(g.printbuf_slot(core, ARG_SLOT, false), ARG_DEVICE)?;
            }
        }
        let mut link = self.link.borrow_mut();
        // Soft reset keeps stale instructions in L0I (rad_host.h aed22f7,
        // rad_tapeout.h 0108517): a store of 0 invalidates it.
        for core in 0..g.cores() {
            link.write32(g.l0i_flush(core), 0)?;
        }
        link.write32(RESET, 0)?;
        drop(link);
        // The GPU may now fill the L2 with any line.
        if let Some(l2) = &self.l2 {
            l2.borrow_mut().forget();
        }
        if self.protocol == Protocol::Nightly {
            for cluster in 0..g.clusters {
                self.put_slot(g.printbuf_slot(g.first_core(cluster), LAUNCH_SLOT, false), LAUNCH_MAGIC)?;
            }
        }

        let started = Instant::now();
        let mut printed = Vec::new();
        let outcome = loop {
            self.serve_mailbox(&mut printed)?;
            if self.finished()? {
                // What was posted just before the end.
                self.serve_mailbox(&mut printed)?;
                break Some(None);
            }
            if aborted() {
                break None;
            }
            if started.elapsed() > self.timeout {
                let (warp, report) = self.timeout_report(started.elapsed())?;
                eprint!("gluon-bridge: {report}");
                printed.extend_from_slice(report.as_bytes());
                break Some(Some((status::EXECUTION, l.start_pc, warp)));
            }
            std::thread::sleep(self.poll);
        };
        self.hold()?;
        Ok(outcome.map(|fault| Launched { fault, printed }))
    }

    /// Takes what the GPU posted in the tocpu mailbox, as the SoC's host
    /// does (radiance.h 08b0e8a `SYNC_GPU`): a putchar is the device's
    /// printf; other HTIF words are reported.
    fn serve_mailbox(&self, printed: &mut Vec<u8>) -> LinkResult<()> {
        self.flush(TOCPU, 8, true)?;
        let mut link = self.link.borrow_mut();
        let word = link.read64(TOCPU)?;
        if word == 0 {
            return Ok(());
        }
        if word & !0xff == HTIF_PUTCHAR {
            printed.push(word as u8);
        } else {
            let _ = writeln!(Bytes(printed), "[soc: HTIF word {word:#x} from the GPU]");
        }
        link.write64(TOCPU, 0)
    }

    /// Whether every core finished, as the protocol sees it: the
    /// all-finished register, every DONE slot (the tapeout epilogue's cores
    /// never raise finished) or every END slot (nightly).
    fn finished(&self) -> LinkResult<bool> {
        let Some((slot, done)) = self.protocol.end_slot() else {
            return Ok(self.link.borrow_mut().read32(ALL_FINISHED)? != 0);
        };
        for core in 0..self.geometry.cores() {
            if !done(self.slot(self.geometry.printbuf_slot(core, slot, true))?) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The first core not finished, and a report of what the SoC shows of
    /// how far a launch got: every core's finished bit and its protocol's
    /// slots, then cluster 0's kernel beacons (the epilogue's; the nightly
    /// kernels' STATUS and HEARTBEAT).
    fn timeout_report(&self, after: Duration) -> LinkResult<(u32, String)> {
        let g = self.geometry;
        let mut report = format!("[soc: no finish after {} ms ({} protocol);", after.as_millis(), self.protocol.name());
        let mut first = None;
        for core in 0..g.cores() {
            let bit = self.link.borrow_mut().read32(CORE_FINISHED + 4 * u64::from(core))?;
            let slot = |s| self.slot(g.printbuf_slot(core, s, true));
            let finished = match self.protocol.end_slot() {
                None => bit != 0,
                Some((s, done)) => done(slot(s)?),
            };
            if !finished && first.is_none() {
                first = Some(core);
            }
            let _ = write!(report, " core {core} finished {bit}");
            let shown: &[(&str, u64)] = match self.protocol {
                Protocol::Nightly => &[("start", START_SLOT), ("end", END_SLOT)],
                _ => &[("generation", GENERATION_SLOT), ("done", DONE_SLOT), ("trace", TRACE_SLOT)],
            };
            for &(name, s) in shown {
                let _ = write!(report, " {name} {:#x}", slot(s)?);
            }
            report.push(';');
        }
        let slot = |s| self.slot(g.printbuf_slot(0, s, false));
        if self.protocol == Protocol::Nightly {
            let _ = write!(report, " status {:#x} heartbeat {:#x}", slot(STATUS_SLOT)?, slot(HEARTBEAT_SLOT)?);
        } else {
            report.push_str(" beacons");
            for s in 0..BEACON_SLOTS {
                let _ = write!(report, " {:#x}", slot(s)?);
            }
        }
        report.push_str("]\n");
        Ok((first.unwrap_or(0), report))
    }
}

/// `fmt::Write` into a byte vector.
struct Bytes<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// GPU DRAM over the link, host memory through the kernel: what Gluon's
/// model runs COPY and SET over.
struct SocMem<'a, L: Link> {
    control: &'a Control,
    soc: &'a Soc<L>,
    vram_size: u64,
    /// A reset was seen while a command ran.
    aborted: Cell<bool>,
    /// The running command's stream, where its progress counts.
    stream: Cell<u8>,
}

impl<L: Link> SocMem<'_, L> {
    /// The running command moved `bytes` over the link.
    fn moved(&self, bytes: u64) {
        self.control.progress(self.stream.get(), bytes);
    }

    /// The link address of `[addr, addr + len)` of VRAM.
    fn dram(&self, addr: u64, len: usize) -> std::result::Result<u64, MemError> {
        match addr.checked_add(len as u64) {
            Some(end) if end <= self.vram_size => Ok(DRAM_BASE + addr),
            _ => Err(MemError::Vram),
        }
    }
}

impl<L: Link> Memory for SocMem<'_, L> {
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError> {
        let at = self.dram(addr, dst.len())?;
        self.soc.read_block(at, dst, &|n| self.moved(n)).map_err(|e| self.soc.note(e))
    }

    fn write_vram(&self, addr: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        let at = self.dram(addr, src.len())?;
        self.soc.write_block(at, src, &|n| self.moved(n)).map_err(|e| self.soc.note(e))
    }

    fn host_to_vram(&self, host: u64, vram: u64, len: u32) -> std::result::Result<(), MemError> {
        let at = self.dram(vram, len as usize)?;
        let mut buf = vec![0; len as usize];
        self.control.host_read(host, &mut buf).map_err(|_| MemError::Host)?;
        self.soc.write_block(at, &buf, &|n| self.moved(n)).map_err(|e| self.soc.note(e))
    }

    fn vram_to_host(&self, vram: u64, host: u64, len: u32) -> std::result::Result<(), MemError> {
        let mut buf = vec![0; len as usize];
        self.read_vram(vram, &mut buf)?;
        self.control.host_write(host, &buf).map_err(|_| MemError::Host)
    }

    fn write_host(&self, host: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.control.host_write(host, src).map_err(|_| MemError::Host)
    }

    /// Never asked: the device declares no counters.
    fn clock_ns(&self) -> i64 {
        0
    }

    /// A reset pending means the running command was given up.
    fn aborted(&self) -> bool {
        if !self.aborted.get() {
            self.aborted.set(self.control.reset_pending());
        }
        self.aborted.get()
    }

    fn pause(&self) {
        std::thread::sleep(Duration::from_millis(1));
    }

    // The model's own steps are not reported: every link block is
    // (`moved`), so that a copy on a slow link shows it moves.
}

/// KERNEL: the launch block from host memory (or as the kernel inlined
/// it), the launch on the SoC, what it printed to the launch's printf
/// buffer. None if a reset aborted it.
fn kernel<L: Link>(
    mem: &SocMem<'_, L>,
    stream: u8,
    inlined: Option<&Block>,
    host_addr: u64,
    size: u32,
) -> LinkResult<Option<[u8; RESPONSE_SIZE]>> {
    let respond = |status, pc, warp| Some(Sim16.encode_response(&Response { stream, status, pc, warp }));
    if (size as usize) < Sim16.launch_header_size() || size > MAX_LAUNCH_BLOCK {
        return Ok(respond(gluon_err::BAD_LAUNCH, 0, 0));
    }
    // The SoC's kernels read their arguments from the argument page, not
    // from a launch block in VRAM: the block stays in the bridge.
    let mut block = vec![0; size as usize];
    if mem.control.read_block(inlined, host_addr, &mut block).is_err() {
        return Ok(respond(gluon_err::DMA, 0, 0));
    }
    let Some(launched) = mem.soc.launch(&Sim16, &block, &|| mem.aborted())? else { return Ok(None) };
    let (status, pc, warp) = launched.fault.unwrap_or((status::OK, 0, 0));
    let header = Sim16.decode_launch(&block).ok();
    if let Some(l) = header.filter(|l| l.printf_host_addr != 0) {
        // The launch's printf ring (after the params and binary) says how
        // many bytes its buffer takes.
        let ring = Sim16.launch_header_size() + l.params_size as usize + l.binary_size as usize;
        let limit_at = ring + std::mem::offset_of!(PrintfRing, limit);
        let limit = block.get(limit_at..limit_at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let text = &launched.printed[..launched.printed.len().min(limit as usize)];
        let host = u64::from(l.printf_host_addr);
        let drained =
            mem.write_host(host, &(text.len() as u32).to_le_bytes()).and_then(|()| mem.write_host(host + 4, text));
        if drained.is_err() {
            return Ok(respond(gluon_err::DMA, pc, warp));
        }
    }
    Ok(respond(status, pc, warp))
}

/// Declares the SoC's device and serves it until the control file or the
/// link fails.
pub fn serve(mut control: Control, opts: &SocOptions) -> Result<()> {
    let vram_size = u64::from(opts.vram_mib) << 20;
    if vram_size == 0 || vram_size > DRAM_SIZE {
        return Err(Error::Usage(format!("--vram-mib {}: 1 to 2048", opts.vram_mib)));
    }
    if opts.geometry.clusters == 0 || opts.geometry.cores_per_cluster == 0 {
        return Err(Error::Usage("--clusters and --cores-per-cluster: at least 1".into()));
    }
    let link = link::open(&opts.link, opts.geometry)?;
    let soc = Soc::new(link, opts);
    soc.hold()?;
    // The name says how it launches: `radctl info` shows it.
    let mut decl = declaration(&format!("Radiance SoC, launch: {}", opts.protocol.name()));
    decl.dialect = Sim16.id();
    decl.streams = STREAMS.into();
    decl.stream_depth = 16;
    decl.cores = opts.geometry.cores();
    decl.warps_per_core = WARPS_PER_CORE;
    decl.threads_per_warp = THREADS_PER_WARP;
    decl.vram_size = vram_size;
    decl.caps = CAPS;
    decl.flags = control::READ_LOOP | radiance_uapi::user_declare_flags::REPORTS_PROGRESS;
    let index = control.declare(&mut decl)?;
    let how = format!("a Radiance SoC over the {} link, the {} launch protocol", opts.link, opts.protocol.name());
    crate::announce(index, &how);

    let mut model = Model::new(&Sim16, CAPS, STREAMS, vram_size);
    let mem = SocMem { control: &control, soc: &soc, vram_size, aborted: Cell::new(false), stream: Cell::new(0) };
    loop {
        if !mem.aborted.get() {
            if let Incoming::Frames(frames) = control.next()? {
                for frame in frames {
                    mem.stream.set(Sim16.decode(&frame.bytes).map_or(0, |(s, _)| s));
                    let response = match Sim16.decode(&frame.bytes) {
                        Ok((stream, Command::Kernel { host_addr, size, .. })) if stream < STREAMS => {
                            kernel(&mem, stream, frame.block.as_ref(), host_addr, size)?
                        }
                        _ => model.run(&mem, &frame.bytes),
                    };
                    if let Some(e) = soc.failed.borrow_mut().take() {
                        return Err(e.into());
                    }
                    // None: a reset came while it ran; the frames after it
                    // are gone too.
                    let Some(response) = response else { break };
                    control.respond(&response)?;
                }
                continue;
            }
        }
        soc.hold()?;
        control.ack_reset()?;
        model.reset();
        mem.aborted.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soc_model::{Event, Gpu, SocModel};
    use radiance_gluon::Launch;

    /// The launch timeout of a test whose launch never finishes.
    const HANG: Duration = Duration::from_millis(50);
    /// The launch timeout of a test whose launch finishes or is reset:
    /// never reached, however long a loaded machine keeps the test off a CPU.
    const PATIENCE: Duration = Duration::from_secs(60);

    fn options(protocol: Protocol, timeout: Duration) -> SocOptions {
        SocOptions {
            link: "model".into(),
            geometry: Geometry::default(),
            vram_mib: 64,
            protocol,
            l2_flush: false,
            timeout,
            poll: Duration::ZERO,
        }
    }

    fn finishes(after_polls: u32, protocol: Protocol) -> Gpu {
        Gpu::Finishes { after_polls, prints: Vec::new(), protocol }
    }

    /// A launch block starting at `start_pc` with `params`.
    fn block(start_pc: u32, params: &[u8]) -> Vec<u8> {
        let l = Launch { start_pc, params_size: params.len() as u32, regs_per_thread: 1, ..Default::default() };
        let mut b = vec![0; Sim16.launch_header_size()];
        Sim16.encode_launch(&l, &mut b).unwrap();
        b.extend_from_slice(params);
        b
    }

    /// An image written to GPU DRAM, then one launch of it on a SoC whose
    /// GPU plays `gpu`, given `timeout`: how it ended and the SoC's record.
    fn run(gpu: Gpu, protocol: Protocol, timeout: Duration, params: &[u8]) -> (Option<Launched>, SocModel) {
        let soc = Soc::new(SocModel::new(Geometry::default(), gpu), &options(protocol, timeout));
        soc.write_block(DRAM_BASE + u64::from(START_PC), &[0x13; 64], &|_| {}).unwrap();
        let launched = soc.launch(&Sim16, &block(START_PC, params), &|| false).unwrap();
        (launched, soc.into_link())
    }

    fn position(events: &[Event], e: Event) -> usize {
        events.iter().position(|&x| x == e).unwrap_or_else(|| panic!("no {e:?} in {events:?}"))
    }

    #[test]
    fn the_image_and_arguments_are_written_before_release() {
        let (launched, soc) = run(Gpu::default(), Protocol::Reset, PATIENCE, &[1, 2, 3, 4]);
        assert_eq!(launched, Some(Launched { fault: None, printed: Vec::new() }));
        let events = soc.events();
        let release = position(events, Event::Release);
        let image = Event::DramWrite { addr: DRAM_BASE + u64::from(START_PC), len: 64 };
        let args = Event::DramWrite { addr: ARG_BASE, len: 4 };
        assert!(position(events, image) < release);
        assert!(position(events, args) < release);
        // Nothing reaches DRAM while the GPU runs but the mailbox's ack.
        assert!(events[release..].iter().all(|e| !matches!(e, Event::DramWrite { addr, .. } if *addr != TOCPU)));
        let mut link = soc;
        assert_eq!(link.read32(ARG_BASE), Ok(0x0403_0201));
    }

    #[test]
    fn every_l0i_is_invalidated_while_held_and_no_l0d_is_flushed() {
        let (_, soc) = run(Gpu::default(), Protocol::Reset, PATIENCE, &[]);
        let events = soc.events();
        let release = position(events, Event::Release);
        let hold = position(events, Event::Hold);
        for core in 0..2 {
            let inv = position(events, Event::L0iInvalidate(core));
            assert!(hold < inv && inv < release, "{events:?}");
        }
        assert!(!events.iter().any(|e| matches!(e, Event::L0dFlush(_))), "the L0D flush wedges the taped-out L0D");
    }

    #[test]
    fn reset_is_held_again_after_finish() {
        for protocol in [Protocol::Reset, Protocol::Epilogue, Protocol::Nightly] {
            let (launched, soc) = run(finishes(3, protocol), protocol, PATIENCE, &[]);
            assert_eq!(launched.unwrap().fault, None);
            let events = soc.events();
            let finished = events.iter().rposition(|&e| e == Event::SawFinished).unwrap();
            assert_eq!(events[finished + 1..], [Event::Hold], "{protocol:?}: {events:?}");
            // Every slot was written whole: none was dropped.
            assert!(!events.iter().any(|e| matches!(e, Event::Dropped { .. })), "{events:?}");
            assert!(position(events, Event::Release) < finished);
        }
    }

    #[test]
    fn a_launch_that_never_finishes_times_out_and_resets_the_device() {
        let (launched, soc) = run(Gpu::Hangs, Protocol::Reset, HANG, &[]);
        let launched = launched.unwrap();
        // The first core not finished is named.
        assert_eq!(launched.fault, Some((status::EXECUTION, START_PC, 0)));
        let report = String::from_utf8(launched.printed).unwrap();
        assert!(report.starts_with("[soc: no finish after"), "{report}");
        assert!(report.contains("core 1 finished 0"), "{report}");
        assert_eq!(soc.events().last(), Some(&Event::Hold));
        assert!(!soc.events().contains(&Event::SawFinished));
    }

    #[test]
    fn the_tapeout_and_nightly_protocols_wait_for_their_slots() {
        for protocol in [Protocol::Epilogue, Protocol::Nightly] {
            // Its GPU never raises finished: polling finished would time out.
            let (launched, _) = run(finishes(1, protocol), Protocol::Reset, HANG, &[]);
            assert_eq!(launched.unwrap().fault, Some((status::EXECUTION, START_PC, 0)), "{protocol:?}");
            let (launched, _) = run(finishes(1, protocol), protocol, PATIENCE, &[]);
            assert_eq!(launched.unwrap().fault, None, "{protocol:?}");
        }
        // The nightly cores spin until LAUNCH: without it they never begin.
        let (launched, _) = run(finishes(1, Protocol::Nightly), Protocol::Epilogue, HANG, &[]);
        let report = String::from_utf8(launched.unwrap().printed).unwrap();
        assert!(report.contains("(epilogue protocol)"), "{report}");
    }

    #[test]
    fn a_nightly_launch_writes_launch_and_arg_in_both_halves_after_release() {
        let (launched, mut soc) = run(finishes(2, Protocol::Nightly), Protocol::Nightly, PATIENCE, &[]);
        assert_eq!(launched.unwrap().fault, None);
        let g = Geometry::default();
        let magic = u64::from(LAUNCH_MAGIC);
        assert_eq!(soc.read64(g.printbuf_slot(0, LAUNCH_SLOT, false)), Ok(magic << 32 | magic));
        let arg = u64::from(ARG_DEVICE);
        assert_eq!(soc.read64(g.printbuf_slot(0, ARG_SLOT, false)), Ok(arg << 32 | arg));
        assert_eq!(soc.read64(g.printbuf_slot(1, START_SLOT, true)), Ok(1 << 32 | 1));
        assert_eq!(soc.read64(g.printbuf_slot(1, END_SLOT, true)), Ok(2 << 32 | 2));
    }

    #[test]
    fn a_nightly_timeout_reports_each_cores_start_and_end() {
        // Never launched: no START.
        let (launched, _) = run(Gpu::Hangs, Protocol::Nightly, HANG, &[]);
        let report = String::from_utf8(launched.unwrap().printed).unwrap();
        assert!(report.contains("(nightly protocol); core 0 finished 0 start 0x0 end 0x0;"), "{report}");
        assert!(report.contains("status 0x0 heartbeat 0x0]"), "{report}");
    }

    #[test]
    fn over_a_link_behind_the_l2_each_line_is_flushed_before_it_is_touched() {
        let opts = SocOptions { l2_flush: true, ..options(Protocol::Reset, PATIENCE) };
        let soc = Soc::new(SocModel::default(), &opts);
        let at = DRAM_BASE + 0x2010;
        soc.write_block(at, &[7; 40], &|_| {}).unwrap();
        // Flushed since: no flush again.
        let mut back = [0; 40];
        soc.read_block(at, &mut back, &|_| {}).unwrap();
        assert_eq!(back, [7; 40]);
        soc.launch(&Sim16, &block(START_PC, &[]), &|| false).unwrap();
        // A launch ran: the lines may be in the L2 again.
        soc.read_block(at, &mut back, &|_| {}).unwrap();
        let events = soc.into_link().events().to_vec();
        let flushes = |from: usize, to: usize| -> Vec<u64> {
            events[from..to].iter().filter_map(|e| if let Event::L2Flush(l) = e { Some(*l) } else { None }).collect()
        };
        let write = position(&events, Event::DramWrite { addr: at, len: 40 });
        assert_eq!(flushes(0, write), [DRAM_BASE + 0x2000, DRAM_BASE + 0x2020]);
        let release = position(&events, Event::Release);
        // The mailbox's line, before each of its reads and writes.
        assert!(flushes(write, release).iter().all(|&l| l == TOCPU), "{events:?}");
        let end = events.len();
        assert_eq!(
            flushes(events.len() - 1 - events.iter().rev().position(|e| *e == Event::Hold).unwrap(), end),
            [DRAM_BASE + 0x2000, DRAM_BASE + 0x2020]
        );
    }

    #[test]
    fn device_printf_comes_through_the_mailbox() {
        let gpu = Gpu::Finishes { after_polls: 1, prints: b"hello\n".to_vec(), protocol: Protocol::Reset };
        let (launched, soc) = run(gpu, Protocol::Reset, PATIENCE, &[]);
        assert_eq!(launched.unwrap().printed, b"hello\n");
        let acks = soc.events().iter().filter(|e| matches!(e, Event::DramWrite { addr: TOCPU, len: 8 })).count();
        // One before release, one per character.
        assert_eq!(acks, 1 + 6);
    }

    #[test]
    fn a_start_pc_the_soc_cannot_run_never_releases_reset() {
        let soc = Soc::new(SocModel::default(), &options(Protocol::Reset, PATIENCE));
        let launched = soc.launch(&Sim16, &block(0xFFFF_0500, &[]), &|| false).unwrap();
        assert_eq!(launched.unwrap().fault, Some((status::EXECUTION, 0xFFFF_0500, 0)));
        assert_eq!(soc.into_link().events(), &[]);
    }

    #[test]
    fn params_larger_than_the_argument_page_are_a_bad_launch() {
        let soc = Soc::new(SocModel::default(), &options(Protocol::Reset, PATIENCE));
        let big = vec![0; ARG_SIZE as usize + 4];
        let launched = soc.launch(&Sim16, &block(START_PC, &big), &|| false).unwrap();
        assert_eq!(launched.unwrap().fault, Some((gluon_err::BAD_LAUNCH, START_PC, 0)));
        // Short of the params it names.
        let mut short = block(START_PC, &[0; 8]);
        short.truncate(short.len() - 4);
        let launched = soc.launch(&Sim16, &short, &|| false).unwrap();
        assert_eq!(launched.unwrap().fault, Some((gluon_err::BAD_LAUNCH, START_PC, 0)));
        assert_eq!(soc.into_link().events(), &[]);
    }

    #[test]
    fn a_reset_during_a_launch_holds_the_gpu_and_answers_nothing() {
        let soc = Soc::new(SocModel::new(Geometry::default(), Gpu::Hangs), &options(Protocol::Reset, PATIENCE));
        let polls = Cell::new(0);
        let aborted = || {
            polls.set(polls.get() + 1);
            polls.get() > 3
        };
        assert_eq!(soc.launch(&Sim16, &block(START_PC, &[]), &aborted).unwrap(), None);
        assert_eq!(soc.into_link().events().last(), Some(&Event::Hold));
    }

    #[test]
    fn a_launch_over_the_unix_link_follows_the_same_protocol() {
        use std::os::unix::net::UnixListener;
        let path = format!("{}/gluon-bridge-soc-{}.sock", std::env::temp_dir().display(), std::process::id());
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let gpu = Gpu::Finishes { after_polls: 2, prints: b"hi".to_vec(), protocol: Protocol::Reset };
            let mut model = SocModel::new(Geometry::default(), gpu);
            link::tests::serve(listener.accept().unwrap().0, &mut model);
            model
        });
        let soc = Soc::new(
            link::open(&format!("unix:{path}"), Geometry::default()).unwrap(),
            &options(Protocol::Reset, PATIENCE),
        );
        // Connected: the name is no longer needed, and a failure below leaves none behind.
        std::fs::remove_file(&path).unwrap();
        soc.hold().unwrap();
        let launched = soc.launch(&Sim16, &block(START_PC, &[9; 8]), &|| false).unwrap().unwrap();
        assert_eq!(launched, Launched { fault: None, printed: b"hi".to_vec() });
        drop(soc);
        let events = server.join().unwrap().events().to_vec();
        let release = position(&events, Event::Release);
        assert!(position(&events, Event::DramWrite { addr: ARG_BASE, len: 8 }) < release);
        assert_eq!(events.last(), Some(&Event::Hold));
    }
}
