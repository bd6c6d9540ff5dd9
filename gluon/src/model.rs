// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Gluon's command semantics: what a device does with each command frame.
//! The kernel's emulated device and userspace's gluon-bridge both run this
//! model over memory their host gives it ([`Memory`]), so the two cannot
//! disagree about a fault, a status or a built-in.
//!
//! It implements what its `caps` (`uapi::caps`) say and answers anything
//! else as a device that lacks it would: without `SET`, `COPY_D2D`,
//! `COUNTERS`, `FENCE` or `WAIT` those commands are `BAD_COMMAND`; without
//! `SUBWORD` an address or length that is not a multiple of 4 is
//! `BAD_ADDRESS` (gluon-sim aborts on such an access).
//!
//! It cannot run Radiance machine code: a launch whose start PC is a
//! built-in (`uapi::builtin`) runs that kernel over the grid, reading its
//! params from the launch block in VRAM as the hardware would (`START` runs
//! the built-in at the block's `kernel_pc`, as start code calls the kernel);
//! any other PC is answered with an execution error at that PC. `SPIN` runs
//! until the host aborts it.
//!
//! A long command reports its progress to its host as it goes
//! ([`Memory::progress`]), a step of [`STEP_BYTES`] bytes or
//! [`STEP_THREADS`] threads at a time, and stops between steps when the
//! host aborts it: a watchdog tells a slow command from a hung one by it.
//!
//! Plain `core`: no allocation, and no more than a few hundred bytes of
//! stack (kernel stacks are small).

use core::{
    fmt::Write,
    mem::{
        offset_of,
        size_of, //
    },
};

use super::{
    status,
    Command,
    CopyDir,
    Dialect,
    Response,
    LAUNCH_HEADER_SIZE,
    RESPONSE_SIZE, //
};
use crate::uapi::{
    builtin,
    caps,
    counter,
    gluon_err as err,
    PrintfRing, //
};

/// Largest launch block a device DMAs in.
pub const MAX_LAUNCH_BLOCK: u32 = 64 * 1024;

/// Every built-in kernel the model runs (GET_INFO's `builtins` bits).
pub const BUILTINS: u32 = (1 << builtin::ALL.len()) - 1;

/// The `uapi::caps` a model over `dialect` implements: MEM SET,
/// VRAM-to-VRAM copies, counters, sub-word accesses and the dialect's
/// FENCE or WAIT; or, as gluon-sim e554ff7, none of them. (Whether the CPU
/// can map its VRAM is its host's business.)
pub fn caps(dialect: &dyn Dialect, gluon_sim: bool) -> u64 {
    if gluon_sim {
        return 0;
    }
    let ordering = match dialect.id() {
        crate::uapi::dialect::GLUON_SIM_16 => caps::FENCE,
        crate::uapi::dialect::GLUON_24 => caps::WAIT,
        _ => 0,
    };
    caps::SET | caps::COPY_D2D | caps::COUNTERS | caps::SUBWORD | ordering
}

/// Bytes copied through the stack at once; a multiple of 4, so SET's
/// pattern starts every chunk in phase.
const CHUNK: usize = 256;

/// Bytes a copy or fill moves between two progress reports.
pub const STEP_BYTES: u32 = 64 * 1024;

/// Threads a launch runs between two progress reports.
pub const STEP_THREADS: u64 = 1024;

/// Stream numbers a frame can carry.
const STREAM_IDS: usize = u8::MAX as usize + 1;

/// Where a model's memory access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemError {
    Host,
    Vram,
}

/// What a host gives the model.
pub trait Memory {
    /// Copies VRAM at `addr` into `dst`; Err(MemError::Vram) outside VRAM.
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> Result<(), MemError>;
    /// Copies `src` into VRAM at `addr`.
    fn write_vram(&self, addr: u64, src: &[u8]) -> Result<(), MemError>;
    /// DMA `len` bytes of host memory at DMA address `host` into VRAM at `vram`.
    fn host_to_vram(&self, host: u64, vram: u64, len: u32) -> Result<(), MemError>;
    /// DMA `len` bytes of VRAM at `vram` to host memory at `host`.
    fn vram_to_host(&self, vram: u64, host: u64, len: u32) -> Result<(), MemError>;
    /// Writes `src` to host memory at `host` (the printf drain's byte count).
    fn write_host(&self, host: u64, src: &[u8]) -> Result<(), MemError>;
    /// The device clock, in ns (READ_COUNTER CLOCK_NS).
    fn clock_ns(&self) -> i64;
    /// True while a reset is under way: a running SPIN kernel stops, and the command gets no response.
    fn aborted(&self) -> bool;
    /// Sleeps about a millisecond (SPIN's poll interval).
    fn pause(&self);
    /// The running command did `units` more of its work (bytes for a copy
    /// or fill, threads for a launch): a host with a watchdog counts it; a
    /// throttled one may sleep here, where nothing is locked.
    fn progress(&self, _units: u64) {}
}

/// A device-side failure: the response's status, PC and warp.
struct Fault {
    status: u8,
    pc: u32,
    warp: u32,
}

impl Fault {
    /// A failure of the command as a whole, not of a warp.
    const fn of(status: u8) -> Self {
        Self {
            status,
            pc: 0,
            warp: 0,
        }
    }
}

impl From<MemError> for Fault {
    /// A command's memory access: the host side is the DMA's, the VRAM side
    /// an address.
    fn from(e: MemError) -> Self {
        Self::of(match e {
            MemError::Host => err::DMA,
            MemError::Vram => err::BAD_ADDRESS,
        })
    }
}

/// A launch being run: which kernel, and where its params and printf ring
/// are (the launch block's header is a `Launch`).
struct Running {
    /// The kernel that runs: the launch block's `start_pc`, or its
    /// `kernel_pc` under the built-in start code. Faults name it.
    kernel_pc: u32,
    threads: u64,
    /// VRAM address of the params.
    params: u64,
    params_size: u32,
    /// VRAM address of the printf ring header.
    ring: u64,
    /// VRAM address just past the launch block.
    end: u64,
}

/// One line of printf text.
struct LineBuf {
    bytes: [u8; 64],
    len: usize,
}

impl LineBuf {
    fn new() -> Self {
        Self {
            bytes: [0; 64],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

impl Write for LineBuf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        self.bytes
            .get_mut(self.len..end)
            .ok_or(core::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The little-endian u32 at VRAM `addr`, which must be 4-aligned.
fn read_u32(mem: &dyn Memory, addr: u64) -> Result<u32, MemError> {
    let mut v = [0u8; 4];
    if addr % 4 != 0 {
        return Err(MemError::Vram);
    }
    mem.read_vram(addr, &mut v)?;
    Ok(u32::from_le_bytes(v))
}

/// Writes `value` at VRAM `addr`, which must be 4-aligned.
fn write_u32(mem: &dyn Memory, addr: u64, value: u32) -> Result<(), MemError> {
    if addr % 4 != 0 {
        return Err(MemError::Vram);
    }
    mem.write_vram(addr, &value.to_le_bytes())
}

/// `(offset, bytes)` of each [`CHUNK`] of `len` bytes.
fn chunks(len: u32) -> impl Iterator<Item = (u64, usize)> {
    (0..len)
        .step_by(CHUNK)
        .map(move |done| (u64::from(done), (len - done).min(CHUNK as u32) as usize))
}

/// `(offset, bytes)` of each [`STEP_BYTES`] step of `len` bytes.
fn steps(len: u32) -> impl Iterator<Item = (u32, u32)> {
    (0..len)
        .step_by(STEP_BYTES as usize)
        .map(move |done| (done, (len - done).min(STEP_BYTES)))
}

/// Reports `units` of progress, then stops the command if a reset aborted
/// it (its fault is never answered: see [`Model::run`]).
fn step(mem: &dyn Memory, units: u64) -> Result<(), Fault> {
    mem.progress(units);
    if mem.aborted() {
        return Err(Fault::of(err::RESET));
    }
    Ok(())
}

/// A Gluon command processor: executes frames one at a time, in order.
pub struct Model {
    dialect: &'static dyn Dialect,
    /// `uapi::caps` it implements.
    caps: u64,
    streams: u8,
    vram_size: u64,
    /// Commands each stream completed since the last reset, for WAIT.
    completed: [u64; STREAM_IDS],
    /// READ_COUNTER's counters: commands executed, threads run.
    commands: i64,
    threads: i64,
}

impl Model {
    /// A device speaking `dialect` with `streams` streams (at most the dialect's) implementing `caps` (uapi caps bits), `vram_size` bytes of VRAM.
    pub fn new(dialect: &'static dyn Dialect, caps: u64, streams: u8, vram_size: u64) -> Self {
        Self {
            dialect,
            caps,
            streams: streams.min(dialect.max_streams()),
            vram_size,
            completed: [0; STREAM_IDS],
            commands: 0,
            threads: 0,
        }
    }

    /// Executes one command frame; the encoded response, or None if a reset aborted it (`Memory::aborted`), in which case it never completed.
    pub fn run(&mut self, mem: &dyn Memory, frame: &[u8]) -> Option<[u8; RESPONSE_SIZE]> {
        let bad_command = Fault::of(err::BAD_COMMAND);
        let (stream, result) = match self.dialect.decode(frame) {
            Ok((stream, _)) if stream >= self.streams => (stream, Err(bad_command)),
            Ok((stream, cmd)) => (stream, self.execute(mem, cmd)),
            // Its stream, if the frame is long enough to have one.
            Err(_) => (frame.first().copied().unwrap_or(0), Err(bad_command)),
        };
        self.commands = self.commands.wrapping_add(1);
        if mem.aborted() {
            return None;
        }
        if let Some(done) = self.completed.get_mut(usize::from(stream)) {
            *done = done.wrapping_add(1);
        }
        let response = match result {
            Ok(()) => Response {
                stream,
                status: status::OK,
                ..Default::default()
            },
            Err(Fault { status, pc, warp }) => Response {
                stream,
                status,
                pc,
                warp,
            },
        };
        Some(self.dialect.encode_response(&response))
    }

    /// A reset: per-stream completion counts start again from zero.
    pub fn reset(&mut self) {
        self.completed = [0; STREAM_IDS];
    }

    /// A fault unless the device implements `cap`.
    fn require(&self, cap: u64) -> Result<(), Fault> {
        if self.caps & cap == 0 {
            return Err(Fault::of(err::BAD_COMMAND));
        }
        Ok(())
    }

    /// A fault unless `values` are all multiples of 4 on a device without
    /// sub-word accesses.
    fn aligned(&self, values: &[u64]) -> Result<(), Fault> {
        if self.caps & caps::SUBWORD == 0 && values.iter().any(|v| v % 4 != 0) {
            return Err(Fault::of(err::BAD_ADDRESS));
        }
        Ok(())
    }

    /// A fault unless `[addr, addr + len)` lies in VRAM: a command the
    /// model splits into chunks either writes all of them or none.
    fn in_vram(&self, addr: u64, len: u32) -> Result<(), Fault> {
        if addr
            .checked_add(len.into())
            .is_none_or(|end| end > self.vram_size)
        {
            return Err(Fault::of(err::BAD_ADDRESS));
        }
        Ok(())
    }

    fn execute(&mut self, mem: &dyn Memory, cmd: Command) -> Result<(), Fault> {
        match cmd {
            Command::Fence => self.require(caps::FENCE),
            Command::Wait { stream, count } => {
                self.require(caps::WAIT)?;
                // Commands run one at a time, in the order they came: what
                // a WAIT can name has completed, or never will.
                let done = self
                    .completed
                    .get(..usize::from(self.streams))
                    .and_then(|c| c.get(usize::from(stream)))
                    .ok_or(Fault::of(err::BAD_COMMAND))?;
                if count > *done {
                    return Err(Fault::of(err::BAD_COMMAND));
                }
                Ok(())
            }
            Command::Set { dst, value, len } => {
                self.require(caps::SET)?;
                self.aligned(&[dst.into(), len.into()])?;
                self.in_vram(dst.into(), len)?;
                let mut chunk = [0u8; CHUNK];
                for (b, v) in chunk.iter_mut().zip(value.to_le_bytes().iter().cycle()) {
                    *b = *v;
                }
                for (start, len) in steps(len) {
                    for (at, n) in chunks(len) {
                        let chunk = chunk.get(..n).ok_or(Fault::of(err::BAD_COMMAND))?;
                        mem.write_vram(u64::from(dst) + u64::from(start) + at, chunk)?;
                    }
                    step(mem, len.into())?;
                }
                Ok(())
            }
            Command::Copy { src, dst, len, dir } => {
                self.aligned(&[src, dst, len.into()])?;
                if dir == CopyDir::DeviceToDevice {
                    self.require(caps::COPY_D2D)?;
                    self.in_vram(src, len)?;
                    self.in_vram(dst, len)?;
                }
                for (at, n) in steps(len) {
                    let (src, dst) = (src + u64::from(at), dst + u64::from(at));
                    match dir {
                        CopyDir::HostToDevice => mem.host_to_vram(src, dst, n)?,
                        CopyDir::DeviceToHost => mem.vram_to_host(src, dst, n)?,
                        CopyDir::DeviceToDevice => copy_vram(mem, src, dst, n)?,
                    }
                    step(mem, n.into())?;
                }
                Ok(())
            }
            Command::Kernel {
                host_addr,
                size,
                gpu_addr,
            } => {
                self.aligned(&[host_addr, size.into(), gpu_addr.into()])?;
                self.launch(mem, host_addr, size, gpu_addr)
            }
            Command::ReadCounter { counter, dst } => {
                self.require(caps::COUNTERS)?;
                let value = match counter {
                    counter::COMMANDS => self.commands,
                    counter::THREADS => self.threads,
                    counter::CLOCK_NS => mem.clock_ns(),
                    _ => return Err(Fault::of(err::BAD_COMMAND)),
                };
                if dst % 8 != 0 {
                    return Err(Fault::of(err::BAD_ADDRESS));
                }
                Ok(mem.write_vram(dst.into(), &value.to_le_bytes())?)
            }
        }
    }

    /// KERNEL: DMA the launch block into VRAM, run it, then drain its
    /// printf ring to the host.
    fn launch(
        &mut self,
        mem: &dyn Memory,
        host_addr: u64,
        size: u32,
        gpu_addr: u32,
    ) -> Result<(), Fault> {
        let bad_launch = |pc| Fault {
            status: err::BAD_LAUNCH,
            pc,
            warp: 0,
        };
        let head = self.dialect.launch_header_size();
        if (size as usize) < head || size > MAX_LAUNCH_BLOCK {
            return Err(bad_launch(0));
        }
        mem.host_to_vram(host_addr, gpu_addr.into(), size)?;
        // From here on the device reads its VRAM copy, as hardware does.
        let mut header = [0u8; LAUNCH_HEADER_SIZE];
        let header = header.get_mut(..head).ok_or(bad_launch(0))?;
        mem.read_vram(gpu_addr.into(), header)
            .map_err(|_| bad_launch(0))?;
        let block = self
            .dialect
            .decode_launch(header)
            .map_err(|_| bad_launch(0))?;
        let kernel_pc = match block.start_pc {
            // The start code calls the kernel at `kernel_pc`.
            builtin::START => block.kernel_pc,
            pc => pc,
        };
        let threads = block.threads();
        // The params, then the binary, then (our runtime's convention) the
        // printf ring.
        let params = u64::from(gpu_addr) + head as u64;
        let ring = params + u64::from(block.params_size) + u64::from(block.binary_size);
        let end = u64::from(gpu_addr) + u64::from(size);
        if ring > end {
            return Err(bad_launch(block.start_pc));
        }
        let launch = Running {
            kernel_pc,
            threads,
            params,
            params_size: block.params_size,
            ring,
            end,
        };
        self.threads = self
            .threads
            .wrapping_add(i64::try_from(threads).unwrap_or(i64::MAX));
        let result = run_builtin(mem, &launch);
        // What the kernel printed reaches the host even if it faulted.
        if block.printf_host_addr != 0 {
            drain_printf(mem, &launch, block.printf_host_addr).map_err(|_| Fault {
                status: err::DMA,
                pc: kernel_pc,
                warp: 0,
            })?;
        }
        result
    }
}

/// COPY from VRAM to VRAM, through the stack.
fn copy_vram(mem: &dyn Memory, src: u64, dst: u64, len: u32) -> Result<(), Fault> {
    let mut buf = [0u8; CHUNK];
    for (at, n) in chunks(len) {
        let buf = buf.get_mut(..n).ok_or(Fault::of(err::BAD_COMMAND))?;
        mem.read_vram(src + at, buf)?;
        mem.write_vram(dst + at, buf)?;
    }
    Ok(())
}

/// Runs `body` for each of the first `count` threads, reporting progress
/// every [`STEP_THREADS`] threads.
fn each_thread(
    mem: &dyn Memory,
    count: u64,
    mut body: impl FnMut(u64) -> Result<(), Fault>,
) -> Result<(), Fault> {
    for t in 0..count {
        body(t)?;
        if (t + 1) % STEP_THREADS == 0 {
            step(mem, STEP_THREADS)?;
        }
    }
    step(mem, count % STEP_THREADS)
}

/// Runs a built-in kernel over its grid.
fn run_builtin(mem: &dyn Memory, l: &Running) -> Result<(), Fault> {
    let param = |i: u32| {
        let bad_launch = Fault {
            status: err::BAD_LAUNCH,
            pc: l.kernel_pc,
            warp: 0,
        };
        if (i + 1) * 4 > l.params_size {
            return Err(bad_launch);
        }
        read_u32(mem, l.params + u64::from(i) * 4).map_err(|_| bad_launch)
    };
    // A thread's fault names the PC and the thread, as hardware does.
    let at = |t: u64| {
        move |_| Fault {
            status: err::BAD_ADDRESS,
            pc: l.kernel_pc,
            warp: t as u32,
        }
    };
    // Thread `t`'s element of the array at `base` (addresses wrap at 32
    // bits, as the device's do).
    let elem = |base: u32, t: u64| u64::from(base.wrapping_add((t as u32).wrapping_mul(4)));
    let threads = l.threads;
    match l.kernel_pc {
        builtin::FILL_U32 => {
            let (dst, value, count) = (param(0)?, param(1)?, param(2)?);
            each_thread(mem, threads.min(count.into()), |t| {
                write_u32(mem, elem(dst, t), value).map_err(at(t))
            })?;
        }
        builtin::COPY_U32 => {
            let (dst, src, count) = (param(0)?, param(1)?, param(2)?);
            each_thread(mem, threads.min(count.into()), |t| {
                let v = read_u32(mem, elem(src, t)).map_err(at(t))?;
                write_u32(mem, elem(dst, t), v).map_err(at(t))
            })?;
        }
        builtin::VECADD_U32 => {
            let (a, b, c, count) = (param(0)?, param(1)?, param(2)?, param(3)?);
            each_thread(mem, threads.min(count.into()), |t| {
                let x = read_u32(mem, elem(a, t)).map_err(at(t))?;
                let y = read_u32(mem, elem(b, t)).map_err(at(t))?;
                write_u32(mem, elem(c, t), x.wrapping_add(y)).map_err(at(t))
            })?;
        }
        builtin::PRINTF_U32 => {
            let (value, count) = (param(0)?, param(1)?);
            each_thread(mem, threads.min(count.into()), |t| {
                let mut line = LineBuf::new();
                // A 64-byte line always holds this text.
                let _ = writeln!(line, "thread {t}: {}", value.wrapping_add(t as u32));
                printf(mem, l, line.as_bytes()).map_err(at(t))
            })?;
        }
        builtin::SPIN => {
            // Runs until a reset; its response never comes.
            while !mem.aborted() {
                mem.pause();
            }
        }
        // Gluon's execution error at the PC where no kernel is (also start
        // code whose `kernel_pc` is the start code itself).
        pc => {
            return Err(Fault {
                status: status::EXECUTION,
                pc,
                warp: 0,
            })
        }
    }
    Ok(())
}

/// VRAM address of field `offset` of a launch's printf ring header.
fn ring_field(l: &Running, offset: usize) -> u64 {
    l.ring + offset as u64
}

/// A kernel's printf: appends `text` to the launch's ring (dropping what
/// does not fit, as the ring's limit says).
fn printf(mem: &dyn Memory, l: &Running, text: &[u8]) -> Result<(), MemError> {
    let head_at = ring_field(l, offset_of!(PrintfRing, head));
    let head = read_u32(mem, head_at)?;
    let limit = read_u32(mem, ring_field(l, offset_of!(PrintfRing, limit)))?;
    let data = ring_field(l, size_of::<PrintfRing>());
    if data + u64::from(limit) > l.end {
        return Err(MemError::Vram);
    }
    let n = (text.len() as u32).min(limit.saturating_sub(head));
    let text = text.get(..n as usize).ok_or(MemError::Vram)?;
    mem.write_vram(data + u64::from(head), text)?;
    write_u32(mem, head_at, head + n)
}

/// Drains a launch's printf ring to host `addr`: a little-endian u32 byte
/// count, then the text.
fn drain_printf(mem: &dyn Memory, l: &Running, addr: u32) -> Result<(), MemError> {
    let tail_at = ring_field(l, offset_of!(PrintfRing, tail));
    let head = read_u32(mem, ring_field(l, offset_of!(PrintfRing, head)))?;
    let tail = read_u32(mem, tail_at)?;
    let limit = read_u32(mem, ring_field(l, offset_of!(PrintfRing, limit)))?;
    let len = head.min(limit).saturating_sub(tail);
    let data = ring_field(l, size_of::<PrintfRing>()) + u64::from(tail);
    mem.write_host(addr.into(), &len.to_le_bytes())?;
    // Nothing printed is no DMA (a host may refuse an empty one).
    if len > 0 {
        mem.vram_to_host(data, u64::from(addr) + 4, len)?;
    }
    write_u32(mem, tail_at, tail + len)
}
