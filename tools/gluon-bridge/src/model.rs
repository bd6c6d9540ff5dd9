// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Model mode: the device is the software Gluon of `radiance_gluon::model`,
//! the command core the kernel's emulated device runs too, hosted here over
//! VRAM in this process and host memory reached through the control node.

use crate::{
    control::{declaration, Control},
    error::Result,
    vram::Vram,
};
use radiance_gluon::{
    model::{self, MemError, Memory, Model},
    Dialect,
};
use std::cell::Cell;

/// The compute shape the model reports, the emulated device's.
const CORES: u32 = 4;
const WARPS_PER_CORE: u32 = 8;
const THREADS_PER_WARP: u32 = 16;
const STREAMS: u8 = 4;

/// What the model is declared to be.
pub struct ModelOptions {
    pub dialect: &'static dyn Dialect,
    /// Only what gluon-sim e554ff7 implements: no SET, FENCE, WAIT,
    /// device-to-device copies or counters, whole words, one command per
    /// stream.
    pub gluon_sim: bool,
    pub vram_mib: u32,
}

/// VRAM here, host memory through the kernel.
struct Mem<'a> {
    control: &'a Control,
    vram: Vram,
    /// A reset was seen while a command ran.
    aborted: Cell<bool>,
}

impl Memory for Mem<'_> {
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError> {
        self.vram.with(addr, dst.len(), |v| dst.copy_from_slice(v))
    }

    fn write_vram(&self, addr: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.vram.with_mut(addr, src.len(), |v| v.copy_from_slice(src))
    }

    fn host_to_vram(&self, host: u64, vram: u64, len: u32) -> std::result::Result<(), MemError> {
        self.vram.with_mut(vram, len as usize, |v| self.control.host_read(host, v).map_err(|_| MemError::Host))?
    }

    fn vram_to_host(&self, vram: u64, host: u64, len: u32) -> std::result::Result<(), MemError> {
        self.vram.with(vram, len as usize, |v| self.control.host_write(host, v).map_err(|_| MemError::Host))?
    }

    fn write_host(&self, host: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.control.host_write(host, src).map_err(|_| MemError::Host)
    }

    fn clock_ns(&self) -> i64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    /// Looks at the control file without waiting: a reset pending means the
    /// running command was given up.
    fn aborted(&self) -> bool {
        if !self.aborted.get() {
            let reset = self.control.wait(Some(0)).is_ok_and(|r| r.reset);
            self.aborted.set(reset);
        }
        self.aborted.get()
    }

    fn pause(&self) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Declares the model's device and serves it until the control file fails.
pub fn serve(mut control: Control, opts: &ModelOptions) -> Result<()> {
    // Its VRAM is in this process: never VRAM_MAPPABLE.
    let device_caps = model::caps(opts.dialect, opts.gluon_sim);
    let streams = STREAMS.min(opts.dialect.max_streams());
    let vram_size = u64::from(opts.vram_mib) << 20;
    let mut decl = declaration("Radiance (gluon-bridge model)");
    decl.dialect = opts.dialect.id();
    decl.streams = streams.into();
    decl.stream_depth = if opts.gluon_sim { 1 } else { 16 };
    decl.cores = CORES;
    decl.warps_per_core = WARPS_PER_CORE;
    decl.threads_per_warp = THREADS_PER_WARP;
    decl.builtins = model::BUILTINS;
    decl.vram_size = vram_size;
    decl.caps = device_caps;
    let index = control.declare(&mut decl)?;
    crate::announce(index, &format!("the Gluon model speaking {}", opts.dialect.name()));

    let mut model = Model::new(opts.dialect, device_caps, streams, vram_size);
    let mem = Mem { control: &control, vram: Vram::new(vram_size as usize), aborted: Cell::new(false) };
    loop {
        let ready = control.wait(None)?;
        if ready.reset || mem.aborted.get() {
            control.ack_reset()?;
            model.reset();
            mem.aborted.set(false);
            continue;
        }
        for frame in control.read_frames()? {
            // None: a reset came while it ran; the frames after it are gone
            // too.
            let Some(response) = model.run(&mem, &frame) else { break };
            control.respond(&response)?;
        }
    }
}
