// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Gluon's wire formats: the one place that knows a byte offset of what
//! crosses between the driver and a Gluon command processor.
//!
//! Glossary:
//! - Stream: one of a device's in-order hardware command streams. Every
//!   frame names its stream; a response names the stream whose oldest
//!   command it completes (responses carry no command id).
//! - Frame: one fixed-size command written into Gluon's command FIFO.
//! - Response: 16 bytes per command: stream, status, PC, warp.
//! - Launch block: what a KERNEL command DMAs into VRAM before it starts the
//!   grid: a header (gluon-sim's `KernelPayload`), then the params, then the
//!   binary (none when the executable already lives in VRAM).
//! - Dialect: one wire format for all of these. A backend says which one
//!   its device speaks; [`DIALECTS`] lists them.
//!
//! It also holds Gluon's command semantics ([`model`]), which the kernel's
//! emulated device and userspace's gluon-bridge both run.
//!
//! The kernel module includes this file (`#[path = ...] mod gluon;`), so it
//! stays `no_std` and depends on nothing but the uapi; userspace tests and
//! tools use it as the `radiance-gluon` crate.
//!
//! Adding a dialect: a file implementing [`Dialect`] (the response and launch
//! block methods have gluon-sim's layouts as defaults), and its entry in
//! [`DIALECTS`].

#![no_std]

pub mod gluon24;
pub mod model;
pub mod sim16;

// The ABI's constants as `crate::uapi` in both builds: the kernel module's
// root includes the uapi as that module (and builds with `--cfg MODULE`);
// userspace has it as a crate.
#[cfg(not(MODULE))]
use radiance_uapi as uapi;

/// Every dialect, by id: GET_INFO's `dialect` field and the emulated
/// device's module parameter name one of these.
pub static DIALECTS: [&dyn Dialect; 2] = [&sim16::Sim16, &gluon24::Gluon24];

/// The dialect named `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Dialect> {
    DIALECTS.iter().copied().find(|d| d.name() == name)
}

/// The dialect whose [`Dialect::id`] is `id`.
pub fn by_id(id: u32) -> Option<&'static dyn Dialect> {
    DIALECTS.iter().copied().find(|d| d.id() == id)
}

/// The largest frame of any dialect.
pub const MAX_FRAME: usize = 24;

/// Bytes of a response, in every dialect so far.
pub const RESPONSE_SIZE: usize = 16;

/// Where a MEM COPY's source and destination are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyDir {
    /// `src` is a host address, `dst` a VRAM address.
    HostToDevice,
    /// `src` is a VRAM address, `dst` a host address.
    DeviceToHost,
    /// Both are VRAM addresses.
    DeviceToDevice,
}

/// A command as the driver means it, whatever its dialect's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// DMA `size` bytes of launch block from host `host_addr` to VRAM
    /// `gpu_addr`, then run the grid it describes.
    Kernel {
        host_addr: u64,
        size: u32,
        gpu_addr: u32,
    },
    /// Copy `len` bytes.
    Copy {
        src: u64,
        dst: u64,
        len: u32,
        dir: CopyDir,
    },
    /// Fill `len` bytes of VRAM at `dst` with the little-endian `value`,
    /// phase-aligned to `dst`.
    Set { dst: u32, value: u32, len: u32 },
    /// Wait for every earlier command of the stream.
    Fence,
    /// Wait until stream `stream` has completed `count` commands (counted
    /// from the last reset).
    Wait { stream: u8, count: u64 },
    /// Write device counter `counter` (a little-endian u64) to VRAM `dst`.
    ReadCounter { counter: u32, dst: u32 },
}

/// Response statuses.
pub mod status {
    /// The command completed.
    pub const OK: u8 = 0;
    /// A warp faulted (gluon-sim's `EXECUTION`): the response's PC and warp
    /// say where. Other non-zero values are finer causes only the emulated
    /// device reports.
    pub const EXECUTION: u8 = 1;
}

/// A response, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Response {
    pub stream: u8,
    /// [`status::OK`], or why the command failed.
    pub status: u8,
    /// Where the failing warp was.
    pub pc: u32,
    /// The failing warp, within its core.
    pub warp: u32,
}

/// A launch block's header (gluon-sim's `KernelPayload`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Launch {
    /// Where warps start: the start code.
    pub start_pc: u32,
    /// The kernel the start code calls.
    pub kernel_pc: u32,
    /// Bytes of params after the header.
    pub params_size: u32,
    /// Bytes of binary after the params (0: the executable is in VRAM).
    pub binary_size: u32,
    pub stack_base: u32,
    pub tls_base: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Host address the device drains the launch's printf output to (0:
    /// none).
    pub printf_host_addr: u32,
    /// At least 1.
    pub regs_per_thread: u8,
    /// Encoded as at least 1 (see [`Dialect::encode_launch`]).
    pub shmem_per_block: u32,
    pub flags: u8,
}

impl Launch {
    /// The threads it runs: the grid's blocks times each block's threads,
    /// saturating. Six u32 dimensions overflow a u64, and a process picks
    /// them: an overflow check would panic the kernel.
    pub fn threads(&self) -> u64 {
        Iterator::chain(self.grid.iter(), self.block.iter())
            .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)))
    }
}

/// What cannot be encoded or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The dialect has no encoding for this command.
    Unrepresentable,
    /// An address or size does not fit the dialect's field.
    OutOfRange,
    /// Bytes that are no command, response or launch block of the dialect
    /// (wrong length, unknown opcode or sub-op, bad flags).
    Malformed,
}

/// One encoded frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    bytes: [u8; MAX_FRAME],
    len: usize,
}

impl Frame {
    /// A zeroed frame of `len` bytes (at most [`MAX_FRAME`]).
    pub fn zeroed(len: usize) -> Self {
        Self {
            bytes: [0; MAX_FRAME],
            len: len.min(MAX_FRAME),
        }
    }

    /// A frame holding `bytes`; `None` if they are more than [`MAX_FRAME`].
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut f = Self::zeroed(bytes.len());
        f.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(f)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn put_u8(&mut self, at: usize, v: u8) {
        self.bytes[at] = v;
    }

    fn put_u32(&mut self, at: usize, v: u32) {
        self.bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn put_u64(&mut self, at: usize, v: u64) {
        self.bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// The little-endian u32 at `at`; `Malformed` past the end.
fn u32_at(b: &[u8], at: usize) -> Result<u32, Error> {
    let word = b.get(at..at + 4).ok_or(Error::Malformed)?;
    Ok(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
}

/// The little-endian u64 at `at`; `Malformed` past the end.
fn u64_at(b: &[u8], at: usize) -> Result<u64, Error> {
    Ok(u64::from(u32_at(b, at)?) | (u64::from(u32_at(b, at + 4)?) << 32))
}

fn u8_at(b: &[u8], at: usize) -> Result<u8, Error> {
    b.get(at).copied().ok_or(Error::Malformed)
}

/// MEM's sub-ops, in every dialect so far.
mod mem {
    pub(crate) const COPY: u8 = 0;
    pub(crate) const SET: u8 = 1;
}

/// A MEM COPY's flags byte: bit 0 device to host (gluon-sim); bit 1 device
/// to device, which no public Gluon defines: only devices that say they
/// copy VRAM to VRAM (`caps::COPY_D2D`) get it.
mod copy_flags {
    pub(crate) const D2H: u8 = 1 << 0;
    pub(crate) const D2D: u8 = 1 << 1;
}

fn copy_flags(dir: CopyDir) -> u8 {
    match dir {
        CopyDir::HostToDevice => 0,
        CopyDir::DeviceToHost => copy_flags::D2H,
        CopyDir::DeviceToDevice => copy_flags::D2D,
    }
}

fn copy_dir(flags: u8) -> Result<CopyDir, Error> {
    match flags {
        0 => Ok(CopyDir::HostToDevice),
        copy_flags::D2H => Ok(CopyDir::DeviceToHost),
        copy_flags::D2D => Ok(CopyDir::DeviceToDevice),
        _ => Err(Error::Malformed),
    }
}

/// Bytes of gluon-sim's launch block header before the params: the
/// 60-byte `KernelPayload`, padded to 64 (gluon-sim's driver pads it to
/// `KERNEL_HEADER_MEM_END`, whose header is not public; 64 is the padded
/// size its payload implies).
pub const LAUNCH_HEADER_SIZE: usize = 64;

/// A wire format.
pub trait Dialect: Sync {
    /// Its name, as the emulated device's module parameter takes it.
    fn name(&self) -> &'static str;

    /// Its number in GET_INFO (`uapi::dialect`).
    fn id(&self) -> u32;

    /// Bytes per command frame.
    fn frame_size(&self) -> usize;

    /// Hardware streams a frame can name.
    fn max_streams(&self) -> u8;

    /// The frame for `cmd` on `stream`.
    fn encode(&self, stream: u8, cmd: &Command) -> Result<Frame, Error>;

    /// A frame's stream and command: the device's side.
    fn decode(&self, frame: &[u8]) -> Result<(u8, Command), Error>;

    /// A response's bytes: the device's side.
    fn encode_response(&self, r: &Response) -> [u8; RESPONSE_SIZE] {
        let mut b = [0u8; RESPONSE_SIZE];
        b[0] = r.stream;
        b[1] = r.status;
        b[2..6].copy_from_slice(&r.pc.to_le_bytes());
        b[6..10].copy_from_slice(&r.warp.to_le_bytes());
        b
    }

    fn decode_response(&self, b: &[u8; RESPONSE_SIZE]) -> Response {
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        Response {
            stream: b[0],
            status: b[1],
            pc: word(2),
            warp: word(6),
        }
    }

    /// Bytes of launch block before the params.
    fn launch_header_size(&self) -> usize {
        LAUNCH_HEADER_SIZE
    }

    /// Writes `l` as the launch block header into the start of `out`
    /// (zeroing its padding).
    fn encode_launch(&self, l: &Launch, out: &mut [u8]) -> Result<(), Error> {
        let out = out.get_mut(..LAUNCH_HEADER_SIZE).ok_or(Error::OutOfRange)?;
        out.fill(0);
        let mut put = |at: usize, v: u32| out[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(0, l.start_pc);
        put(4, l.kernel_pc);
        put(8, l.params_size);
        put(12, l.binary_size);
        put(16, l.stack_base);
        put(20, l.tls_base);
        for i in 0..3 {
            put(24 + 4 * i, l.grid[i]);
            put(36 + 4 * i, l.block[i]);
        }
        put(48, l.printf_host_addr);
        // gluon-sim divides its shared memory by this (and panics on 0): a
        // launch without shared memory asks for the least it can.
        put(53, l.shmem_per_block.max(1));
        out[52] = l.regs_per_thread;
        out[57] = l.flags;
        Ok(())
    }

    /// A launch block's header, from at least its first
    /// [`Dialect::launch_header_size`] bytes.
    fn decode_launch(&self, b: &[u8]) -> Result<Launch, Error> {
        if b.len() < LAUNCH_HEADER_SIZE {
            return Err(Error::Malformed);
        }
        let three = |at: usize| -> Result<[u32; 3], Error> {
            Ok([u32_at(b, at)?, u32_at(b, at + 4)?, u32_at(b, at + 8)?])
        };
        Ok(Launch {
            start_pc: u32_at(b, 0)?,
            kernel_pc: u32_at(b, 4)?,
            params_size: u32_at(b, 8)?,
            binary_size: u32_at(b, 12)?,
            stack_base: u32_at(b, 16)?,
            tls_base: u32_at(b, 20)?,
            grid: three(24)?,
            block: three(36)?,
            printf_host_addr: u32_at(b, 48)?,
            regs_per_thread: u8_at(b, 52)?,
            shmem_per_block: u32_at(b, 53)?,
            flags: u8_at(b, 57)?,
        })
    }
}
