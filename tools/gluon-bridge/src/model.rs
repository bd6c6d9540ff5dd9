// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Model mode: the device is the software Gluon of `radiance_gluon::model`,
//! the command core the kernel's emulated device runs too, hosted here over
//! VRAM in this process and host memory reached through the control node.

use crate::{
    control::{self, declaration, Block, Control, Incoming},
    error::Result,
    vram::Vram,
};
use radiance_gluon::{
    model::{self, MemError, Memory, Model},
    Dialect,
};
use std::{
    cell::{Cell, RefCell},
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

/// The compute shape the model reports, the emulated device's.
const CORES: u32 = 4;
const WARPS_PER_CORE: u32 = 8;
const THREADS_PER_WARP: u32 = 16;
const STREAMS: u8 = 4;

/// What the model is declared to be.
#[derive(Clone, Copy)]
pub struct ModelOptions {
    pub dialect: &'static dyn Dialect,
    /// Only what gluon-sim e554ff7 implements: no SET, FENCE, WAIT,
    /// device-to-device copies or counters, whole words, one command per
    /// stream.
    pub gluon_sim: bool,
    pub vram_mib: u32,
}

/// Host memory as the model reaches it: through the kernel when it serves a
/// device, or a buffer of this process (`bench-launch`'s straight side).
pub trait Host {
    fn read(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError>;
    fn write(&self, addr: u64, src: &[u8]) -> std::result::Result<(), MemError>;
    /// Whether a reset is pending, looked at without waiting.
    fn reset_pending(&self) -> bool;
    /// The command `stream` runs did `units` more of its work.
    fn progress(&self, stream: u8, units: u64);
}

impl Host for Control {
    fn read(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError> {
        self.host_read(addr, dst).map_err(|_| MemError::Host)
    }

    fn write(&self, addr: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.host_write(addr, src).map_err(|_| MemError::Host)
    }

    fn reset_pending(&self) -> bool {
        Control::reset_pending(self)
    }

    fn progress(&self, stream: u8, units: u64) {
        Control::progress(self, stream, units)
    }
}

impl<H: Host> Host for &H {
    fn read(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError> {
        (**self).read(addr, dst)
    }

    fn write(&self, addr: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        (**self).write(addr, src)
    }

    fn reset_pending(&self) -> bool {
        (**self).reset_pending()
    }

    fn progress(&self, stream: u8, units: u64) {
        (**self).progress(stream, units)
    }
}

/// VRAM here, host memory through `H`.
pub struct Mem<H> {
    host: H,
    vram: Vram,
    /// A reset was seen while a command ran.
    aborted: Cell<bool>,
    /// The running KERNEL frame's launch block, as the kernel inlined it:
    /// host memory there needs no read through the kernel.
    block: RefCell<Option<Block>>,
    /// The running frame's stream, where its progress counts.
    stream: Cell<u8>,
}

impl<H: Host> Mem<H> {
    /// `vram_size` bytes of zeroed VRAM, host memory through `host`.
    pub fn new(host: H, vram_size: u64) -> Self {
        Self {
            host,
            vram: Vram::new(vram_size as usize),
            aborted: Cell::new(false),
            block: RefCell::new(None),
            stream: Cell::new(0),
        }
    }

    /// Runs `f` for a frame on `stream` with `block`, the frame's inline
    /// block, standing in for the host memory it was read from.
    fn with_block<T>(&self, stream: u8, block: Option<Block>, f: impl FnOnce() -> T) -> T {
        self.stream.set(stream);
        *self.block.borrow_mut() = block;
        let result = f();
        *self.block.borrow_mut() = None;
        result
    }
}

impl<H: Host> Memory for Mem<H> {
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError> {
        self.vram.with(addr, dst.len(), |v| dst.copy_from_slice(v))
    }

    fn write_vram(&self, addr: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.vram.with_mut(addr, src.len(), |v| v.copy_from_slice(src))
    }

    fn host_to_vram(&self, host: u64, vram: u64, len: u32) -> std::result::Result<(), MemError> {
        self.vram.with_mut(vram, len as usize, |v| {
            Block::read_or(self.block.borrow().as_ref(), host, v, |v| self.host.read(host, v))
        })?
    }

    fn vram_to_host(&self, vram: u64, host: u64, len: u32) -> std::result::Result<(), MemError> {
        self.vram.with(vram, len as usize, |v| self.host.write(host, v))?
    }

    fn write_host(&self, host: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.host.write(host, src)
    }

    fn clock_ns(&self) -> i64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    /// A reset pending means the running command was given up.
    fn aborted(&self) -> bool {
        if !self.aborted.get() {
            self.aborted.set(self.host.reset_pending());
        }
        self.aborted.get()
    }

    fn pause(&self) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }

    fn progress(&self, units: u64) {
        self.host.progress(self.stream.get(), units);
    }
}

/// The model a device of `opts` runs: its caps, streams and VRAM size.
pub fn model(opts: &ModelOptions) -> Model {
    let caps = model::caps(opts.dialect, opts.gluon_sim);
    Model::new(opts.dialect, caps, streams(opts), vram_size(opts))
}

fn streams(opts: &ModelOptions) -> u8 {
    STREAMS.min(opts.dialect.max_streams())
}

fn vram_size(opts: &ModelOptions) -> u64 {
    u64::from(opts.vram_mib) << 20
}

/// Declares the model's device on `control`; returns N of
/// `/dev/radianceN`.
pub fn declare(control: &mut Control, opts: &ModelOptions) -> Result<u32> {
    // Its VRAM is in this process: never VRAM_MAPPABLE.
    let mut decl = declaration("Radiance (gluon-bridge model)");
    decl.dialect = opts.dialect.id();
    decl.streams = streams(opts).into();
    decl.stream_depth = if opts.gluon_sim { 1 } else { 16 };
    decl.cores = CORES;
    decl.warps_per_core = WARPS_PER_CORE;
    decl.threads_per_warp = THREADS_PER_WARP;
    decl.builtins = model::BUILTINS;
    decl.vram_size = vram_size(opts);
    decl.caps = model::caps(opts.dialect, opts.gluon_sim);
    // It says how far each command got, a step at a time.
    decl.flags = control::READ_LOOP | radiance_uapi::user_declare_flags::REPORTS_PROGRESS;
    let index = control.declare(&mut decl)?;
    crate::announce(index, &format!("the Gluon model speaking {}", opts.dialect.name()));
    Ok(index)
}

/// What the serving loop tells the bridge's benchmarks: the commands it
/// ran and, if it keeps time (`epoch`), when it last returned from reading
/// frames and last began to write an answer, in ns since `epoch`.
#[derive(Default)]
pub struct Served {
    pub ran: AtomicU64,
    pub epoch: Option<Instant>,
    pub read_ns: AtomicU64,
    pub answering_ns: AtomicU64,
}

impl Served {
    fn stamp(&self, at: &AtomicU64) {
        if let Some(epoch) = self.epoch {
            at.store(epoch.elapsed().as_nanos() as u64, Ordering::Release);
        }
    }
}

/// Declares the model's device and serves it until the control file fails.
pub fn serve(mut control: Control, opts: &ModelOptions) -> Result<()> {
    declare(&mut control, opts)?;
    serve_declared(&control, opts, &Served::default())
}

/// Serves the device `control` declared ([`declare`]) until the control
/// file fails, telling `served` what it did.
pub fn serve_declared(control: &Control, opts: &ModelOptions, served: &Served) -> Result<()> {
    let mut model = model(opts);
    let mem = Mem::new(control, vram_size(opts));
    loop {
        if !mem.aborted.get() {
            if let Incoming::Frames(frames) = control.next()? {
                served.stamp(&served.read_ns);
                for frame in frames {
                    // None: a reset came while it ran; the frames after it
                    // are gone too.
                    let stream = opts.dialect.decode(&frame.bytes).map_or(0, |(s, _)| s);
                    let Some(response) = mem.with_block(stream, frame.block, || model.run(&mem, &frame.bytes)) else {
                        break;
                    };
                    served.ran.fetch_add(1, Ordering::Relaxed);
                    served.stamp(&served.answering_ns);
                    control.respond(&response)?;
                }
                continue;
            }
        }
        control.ack_reset()?;
        model.reset();
        mem.aborted.set(false);
    }
}
