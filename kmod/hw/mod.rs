// SPDX-License-Identifier: GPL-2.0

//! The hardware seam: everything the driver core knows about a device comes
//! through [`Gluon`], Radiance's command processor.
//!
//! Glossary:
//! - Gluon: the command processor in front of Radiance's SIMT cores. It takes
//!   fixed-size command frames through one FIFO, runs them on a few in-order
//!   hardware streams, and answers each with a 16-byte response naming its
//!   stream, plus an interrupt. The frames' bytes are a dialect
//!   ([`crate::gluon`]): a backend says which one its device speaks.
//! - VRAM: device memory; device pointers are raw 32-bit VRAM addresses (there
//!   is no GPU virtual memory).
//!
//! One file per backend: `emu` (software Gluon, no hardware) and `user` (a
//! Gluon served by a process through the control node). The PCI FPGA board
//! and device-tree SoC backends implement the same trait; they are not
//! written yet because there is no board to bring them up against.

pub(crate) mod emu;
pub(crate) mod host_windows;
pub(crate) mod user;

// The backends' wrappers over the kernel's bindings (`crate::wrappers`).
use crate::wrappers::{
    dma_device,
    host_map, //
};

use kernel::{
    device::Device,
    page::Page,
    prelude::*,
    sync::Arc,
    time::{
        Instant,
        Monotonic, //
    },
};

use self::host_windows::{
    HostWindows,
    Window, //
};
use crate::{
    gluon::{
        Dialect,
        Frame,
        RESPONSE_SIZE, //
    },
    uapi,
};

/// The stream a frame the scheduler encoded names.
fn stream_of(dialect: &dyn Dialect, frame: &Frame) -> u8 {
    dialect.decode(frame.as_bytes()).map_or(0, |(s, _)| s)
}

/// What a backend says about the hardware behind it (GET_INFO reports it).
pub(crate) struct HwDesc {
    /// One of `uapi::backend`.
    pub(crate) backend: u32,
    /// Human-readable, as GET_INFO gives it (see [`name_field`]).
    pub(crate) name: [u8; uapi::NAME_LEN],
    pub(crate) cores: u32,
    pub(crate) warps_per_core: u32,
    pub(crate) threads_per_warp: u32,
    /// Bytes of VRAM.
    pub(crate) vram_size: u64,
    /// GET_INFO's `builtins`: which `uapi::builtin` kernels it runs.
    pub(crate) builtins: u32,
    /// The wire format it speaks.
    pub(crate) dialect: &'static dyn Dialect,
    /// Its hardware streams (at most the dialect's).
    pub(crate) streams: u8,
    /// Commands one stream takes at once (gluon-sim: one).
    pub(crate) stream_depth: u8,
    /// What it implements: `uapi::caps` bits.
    pub(crate) caps: u64,
    /// How fast it works, for a device that cannot report progress.
    pub(crate) rates: Rates,
}

/// How fast a device that cannot report its progress works, as its server
/// declares it: a command's deadline scales with its size over these, the
/// launch timeout at least. 0: not declared (the timeout only).
#[derive(Clone, Copy, Default)]
pub(crate) struct Rates {
    /// Copies and fills.
    pub(crate) bytes_per_s: u64,
    /// Launches.
    pub(crate) threads_per_s: u64,
}

/// `name` up to its first NUL as GET_INFO's NUL-terminated, zero-padded
/// field, truncated to `uapi::NAME_LEN - 1` bytes.
pub(crate) fn name_field(name: &[u8]) -> [u8; uapi::NAME_LEN] {
    let mut out = [0u8; uapi::NAME_LEN];
    let text = name.iter().take_while(|&&b| b != 0);
    for (o, &b) in out.iter_mut().zip(text.take(uapi::NAME_LEN - 1)) {
        *o = b;
    }
    out
}

/// A Gluon command processor, real or emulated.
pub(crate) trait Gluon: Send + Sync {
    /// The hardware's description.
    fn desc(&self) -> &HwDesc;

    /// Zeroes `len` bytes of VRAM at `addr` (scrubbing freed memory). The
    /// caller owns the range: nobody else reads or writes it meanwhile.
    fn vram_zero(&self, addr: u64, len: u64);

    /// Calls `each` with the pages behind `len` bytes of VRAM at `addr`
    /// (both page-aligned), in order, to map or export them. A page stays
    /// allocated until the range is scrubbed: callers keep it only while
    /// they own the range.
    fn vram_pages(&self, addr: u64, len: u64, each: &mut dyn FnMut(&Page) -> Result) -> Result;

    /// The device that host memory is DMA-mapped for; its DMA mask is 32
    /// bits, Gluon's host address width.
    fn dma_device(&self) -> &Device;

    /// Writes a command frame of the device's dialect into the command
    /// FIFO; EBUSY when the FIFO is full.
    fn push_command(&self, frame: &[u8]) -> Result;

    /// Pops the next response, if one is ready.
    fn pop_response(&self) -> Option<[u8; RESPONSE_SIZE]>;

    /// The scheduler ended a pass: it took every response it found and
    /// pushed what it could. A device whose own work competes with the
    /// scheduler for the CPU (a user device's scrubs) may hold it back
    /// until then.
    fn pass_done(&self) {}

    /// A doorbell rang: true if the device took it, to run the pass in its
    /// own thread (a user device whose server is in `write()` past its
    /// answers or on its way back to `read()`:
    /// [`uapi::user_declare_flags::TAKES_DOORBELLS`]); false if the caller
    /// runs it.
    fn take_doorbell(&self) -> bool {
        false
    }

    /// Routes the device's interrupt (responses ready) to `irq`; `None`
    /// disconnects it, which also breaks the reference cycle between the
    /// device and its handler.
    fn set_interrupt(&self, irq: Option<Arc<dyn Interrupt>>);

    /// Resets the command processor: the running command stops, commands
    /// not completed and responses not taken are dropped. Returns when the
    /// device is idle.
    fn reset(&self);

    /// Where the device may hold a command back behind its own work (a
    /// user device's scrubs, the emulated device's one command at a time):
    /// the instant from which `stream`'s oldest command ages, if later than
    /// when it became the oldest. While it waits, when the device last took
    /// or answered anything (it ages only while the device stands still);
    /// once the device took it, then. `None`: the device takes commands as
    /// they come.
    fn ages_from(&self, _stream: u8) -> Option<Instant<Monotonic>> {
        None
    }

    /// How much work `stream` has done so far (bytes moved, threads run,
    /// or whatever its server counts), read by the watchdog: a command
    /// whose stream's count changed is not hung, however long it takes.
    /// It may wrap; only a change matters. `None`: the device cannot say,
    /// and a command gets a deadline from its size ([`HwDesc::rates`]).
    fn progress(&self, _stream: u8) -> Option<u64> {
        None
    }

    /// Bit `i` set: stream `i` runs nothing (a user device's server
    /// retired it: USER_RETIRE). The scheduler issues nothing to such a
    /// stream and moves its queues once it holds nothing of theirs.
    fn retired_streams(&self) -> u32 {
        0
    }

    /// The windows through which the device reaches host memory, if the
    /// kernel is what confines it (see [`host_windows`]).
    fn host_windows(&self) -> Option<&Arc<HostWindows>> {
        None
    }
}

/// Whether `stream` is in the bit set `streams` (bit `i`: stream `i`), as
/// [`Gluon::retired_streams`] gives one.
pub(crate) fn in_streams(streams: u32, stream: usize) -> bool {
    stream < 32 && streams & (1 << stream) != 0
}

/// Opens a window on `segments` for `hw`'s device if it reaches host memory
/// through the kernel; kept as long as they are mapped for it.
pub(crate) fn open_window(
    hw: &dyn Gluon,
    segments: impl Iterator<Item = (u64, u64)>,
) -> Result<Option<Window>> {
    hw.host_windows()
        .map(|w| HostWindows::open(w, segments))
        .transpose()
}

/// What a device's interrupt calls.
pub(crate) trait Interrupt: Send + Sync {
    /// In any context, even one that cannot sleep: only schedules work.
    fn raise(&self);

    /// In process context with no lock held (a server's answer through the
    /// control node): may do the work right there instead.
    fn raise_here(&self);
}

#[kunit_tests(radiance_dialects)]
mod tests {
    use crate::gluon::{
        Command,
        CopyDir,
        Error,
        Launch,
        Response,
        DIALECTS, //
    };

    /// The dialects, in `DIALECTS`' order: the columns of [`CASES`].
    const NAMES: [&str; 2] = ["gluon-sim-16", "gluon-24"];

    /// `Ok` for a command the dialect must encode (and decode back), else
    /// the error it must refuse it with.
    const YES: Result<(), Error> = Ok(());
    const NO: Result<(), Error> = Err(Error::Unrepresentable);
    const TOO_FAR: Result<(), Error> = Err(Error::OutOfRange);

    /// Every command kind, and what each dialect of [`NAMES`] must do with
    /// it: gluon-sim-16 has no WAIT and 32-bit host addresses, gluon-24 no
    /// FENCE.
    const CASES: [(Command, [Result<(), Error>; 2]); 10] = [
        (
            Command::Kernel {
                host_addr: 0x1000,
                size: 64,
                gpu_addr: 0x100,
            },
            [YES, YES],
        ),
        (
            Command::Kernel {
                host_addr: 0x1_0000_1000,
                size: 64,
                gpu_addr: 0x100,
            },
            [TOO_FAR, YES],
        ),
        (
            Command::Copy {
                src: 0x2000,
                dst: 0x1_0000,
                len: 8,
                dir: CopyDir::HostToDevice,
            },
            [YES, YES],
        ),
        (
            Command::Copy {
                src: 0x1_0000,
                dst: 0x3000,
                len: 4,
                dir: CopyDir::DeviceToHost,
            },
            [YES, YES],
        ),
        (
            Command::Copy {
                src: 0x1_0000,
                dst: 0x1_0000_3000,
                len: 4,
                dir: CopyDir::DeviceToHost,
            },
            [TOO_FAR, YES],
        ),
        (
            Command::Copy {
                src: 0x1_0000,
                dst: 0x2_0000,
                len: 4,
                dir: CopyDir::DeviceToDevice,
            },
            [YES, YES],
        ),
        (
            Command::Set {
                dst: 0x1_0000,
                value: 0x0102_0304,
                len: 12,
            },
            [YES, YES],
        ),
        (
            Command::ReadCounter {
                counter: 1,
                dst: 0x1_0008,
            },
            [YES, YES],
        ),
        (Command::Fence, [YES, NO]),
        (
            Command::Wait {
                stream: 1,
                count: 9,
            },
            [NO, YES],
        ),
    ];

    /// The shared dialect code, built for the kernel, encodes what each
    /// dialect must say and refuses the rest, as the host tests
    /// (gluon/tests) checked byte by byte.
    #[test]
    fn every_dialect_encodes_what_it_must_in_the_kernel() {
        // A column per dialect, in `DIALECTS`' order: a dialect added
        // without one fails here.
        assert_eq!(DIALECTS.len(), NAMES.len());
        for (d, name) in DIALECTS.iter().zip(NAMES) {
            assert_eq!(d.name(), name);
        }
        for (cmd, expected) in CASES {
            for (d, want) in DIALECTS.iter().zip(expected) {
                match d.encode(2, &cmd) {
                    Ok(frame) => {
                        assert_eq!(want, Ok(()));
                        assert_eq!(frame.as_bytes().len(), d.frame_size());
                        assert_eq!(d.decode(frame.as_bytes()), Ok((2, cmd)));
                    }
                    Err(e) => assert_eq!(want, Err(e)),
                }
            }
        }
    }

    /// Responses and launch blocks round-trip in every dialect.
    #[test]
    fn every_dialect_round_trips_responses_and_launches_in_the_kernel() {
        for d in DIALECTS {
            let r = Response {
                stream: 3,
                status: 1,
                pc: 0xffff_0000,
                warp: 7,
            };
            assert_eq!(d.decode_response(&d.encode_response(&r)), r);
            let l = Launch {
                start_pc: 1,
                kernel_pc: 2,
                grid: [3, 4, 5],
                block: [6, 7, 8],
                regs_per_thread: 1,
                // 0 is encoded as 1 (gluon-sim divides by it).
                shmem_per_block: 9,
                ..Default::default()
            };
            let mut block = [0u8; 64];
            assert_eq!(d.encode_launch(&l, &mut block), Ok(()));
            assert_eq!(d.decode_launch(&block), Ok(l));
        }
    }
}
