// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Gluon's command semantics (`radiance_gluon::model`) over memory held in
//! vectors: every command, the faults a device without a capability gives,
//! built-in launches through encoded KERNEL frames and launch blocks.

use std::cell::{Cell, RefCell};

use radiance_gluon::{
    gluon24::Gluon24,
    model::{MemError, Memory, Model, MAX_LAUNCH_BLOCK, STEP_BYTES, STEP_THREADS},
    sim16::Sim16,
    status,
    Command,
    CopyDir,
    Dialect,
    Error,
    Launch,
    Response,
    RESPONSE_SIZE, //
};
use radiance_uapi::{builtin, caps, counter, gluon_err as err, PrintfRing};

const VRAM: usize = 256 * 1024;
/// Host memory lies at DMA addresses `[HOST, HOST + HOST_SIZE)`.
const HOST: u64 = 0x1000_0000;
const HOST_SIZE: usize = 16 * 1024;
const CLOCK: i64 = 123_456_789;

const GLUON_SIM: u64 = caps::VRAM_MAPPABLE;
const FULL: u64 = caps::SET | caps::COPY_D2D | caps::COUNTERS | caps::SUBWORD | caps::VRAM_MAPPABLE;

/// A host: VRAM and host memory as vectors.
struct Mem {
    vram: RefCell<Vec<u8>>,
    host: RefCell<Vec<u8>>,
    aborted: Cell<bool>,
    /// Each progress report, in order.
    progress: RefCell<Vec<u64>>,
    /// Aborts the command at this many progress reports.
    abort_at: Cell<Option<usize>>,
}

impl Mem {
    fn new() -> Self {
        Self {
            vram: RefCell::new(vec![0; VRAM]),
            host: RefCell::new(vec![0; HOST_SIZE]),
            aborted: Cell::new(false),
            progress: RefCell::new(Vec::new()),
            abort_at: Cell::new(None),
        }
    }

    fn vram(&self, addr: u64, len: usize) -> Vec<u8> {
        self.vram.borrow()[addr as usize..addr as usize + len].to_vec()
    }

    fn host(&self, addr: u64, len: usize) -> Vec<u8> {
        let at = (addr - HOST) as usize;
        self.host.borrow()[at..at + len].to_vec()
    }

    fn put_vram(&self, addr: u64, bytes: &[u8]) {
        self.vram.borrow_mut()[addr as usize..addr as usize + bytes.len()].copy_from_slice(bytes);
    }

    fn put_host(&self, addr: u64, bytes: &[u8]) {
        let at = (addr - HOST) as usize;
        self.host.borrow_mut()[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

/// `[addr, addr + len)` of a region of `size` bytes starting at `base`.
fn range(base: u64, size: usize, addr: u64, len: usize) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(addr.checked_sub(base)?).ok()?;
    let end = start.checked_add(len)?;
    (end <= size).then_some(start..end)
}

impl Memory for Mem {
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> Result<(), MemError> {
        let r = range(0, VRAM, addr, dst.len()).ok_or(MemError::Vram)?;
        dst.copy_from_slice(&self.vram.borrow()[r]);
        Ok(())
    }

    fn write_vram(&self, addr: u64, src: &[u8]) -> Result<(), MemError> {
        let r = range(0, VRAM, addr, src.len()).ok_or(MemError::Vram)?;
        self.vram.borrow_mut()[r].copy_from_slice(src);
        Ok(())
    }

    fn host_to_vram(&self, host: u64, vram: u64, len: u32) -> Result<(), MemError> {
        let h = range(HOST, HOST_SIZE, host, len as usize).ok_or(MemError::Host)?;
        let v = range(0, VRAM, vram, len as usize).ok_or(MemError::Vram)?;
        self.vram.borrow_mut()[v].copy_from_slice(&self.host.borrow()[h]);
        Ok(())
    }

    fn vram_to_host(&self, vram: u64, host: u64, len: u32) -> Result<(), MemError> {
        // A host may refuse an empty DMA (the kernel cannot map 0 bytes).
        if len == 0 {
            return Err(MemError::Host);
        }
        let h = range(HOST, HOST_SIZE, host, len as usize).ok_or(MemError::Host)?;
        let v = range(0, VRAM, vram, len as usize).ok_or(MemError::Vram)?;
        self.host.borrow_mut()[h].copy_from_slice(&self.vram.borrow()[v]);
        Ok(())
    }

    fn write_host(&self, host: u64, src: &[u8]) -> Result<(), MemError> {
        let h = range(HOST, HOST_SIZE, host, src.len()).ok_or(MemError::Host)?;
        self.host.borrow_mut()[h].copy_from_slice(src);
        Ok(())
    }

    fn clock_ns(&self) -> i64 {
        CLOCK
    }

    fn aborted(&self) -> bool {
        self.aborted.get()
    }

    fn pause(&self) {
        // A SPIN only stops when aborted: abort it on its first poll.
        self.aborted.set(true);
    }

    fn progress(&self, units: u64) {
        let mut reports = self.progress.borrow_mut();
        reports.push(units);
        if self.abort_at.get() == Some(reports.len()) {
            self.aborted.set(true);
        }
    }
}

/// A model, its memory and its dialect.
struct Dev {
    d: &'static dyn Dialect,
    model: Model,
    mem: Mem,
}

impl Dev {
    fn new(d: &'static dyn Dialect, caps: u64) -> Self {
        Self {
            d,
            model: Model::new(d, caps, 4, VRAM as u64),
            mem: Mem::new(),
        }
    }

    /// Runs `cmd` on `stream`; its response.
    fn on(&mut self, stream: u8, cmd: Command) -> Result<Response, Error> {
        let frame = self.d.encode(stream, &cmd)?;
        let r = self.model.run(&self.mem, frame.as_bytes());
        assert!(r.is_some(), "no reset, so every command is answered");
        Ok(self.d.decode_response(&r.unwrap_or_default()))
    }

    fn cmd(&mut self, cmd: Command) -> Result<Response, Error> {
        self.on(0, cmd)
    }
}

fn ok(stream: u8) -> Response {
    Response {
        stream,
        ..Default::default()
    }
}

fn fault(status: u8, pc: u32, warp: u32) -> Response {
    Response {
        stream: 0,
        status,
        pc,
        warp,
    }
}

fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[test]
fn set_fills_in_phase_with_its_destination() -> Result<(), Error> {
    let mut dev = Dev::new(&Sim16, FULL);
    assert_eq!(
        dev.cmd(Command::Set {
            dst: 0x101,
            value: 0x4433_2211,
            len: 7
        })?,
        ok(0)
    );
    assert_eq!(
        dev.mem.vram(0x100, 9),
        [0, 0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33, 0]
    );
    // Longer than a chunk: the pattern goes on across chunks.
    assert_eq!(
        dev.cmd(Command::Set {
            dst: 0x1000,
            value: 0xdead_beef,
            len: 1000
        })?,
        ok(0)
    );
    let filled = dev.mem.vram(0x1000, 1004);
    assert!(filled[..1000].chunks(4).all(|w| word(w) == 0xdead_beef));
    assert_eq!(filled[1000..], [0; 4]);
    // Past the end of VRAM: a fault, and nothing written.
    let end = VRAM as u32 - 256;
    assert_eq!(
        dev.cmd(Command::Set {
            dst: end,
            value: 1,
            len: 512
        })?,
        fault(err::BAD_ADDRESS, 0, 0)
    );
    assert_eq!(dev.mem.vram(end.into(), 256), [0; 256]);
    Ok(())
}

#[test]
fn copies_each_way() -> Result<(), Error> {
    for d in [&Sim16 as &'static dyn Dialect, &Gluon24] {
        let mut dev = Dev::new(d, FULL);
        let data: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
        dev.mem.put_host(HOST + 8, &data);
        let h2d = Command::Copy {
            src: HOST + 8,
            dst: 0x200,
            len: 600,
            dir: CopyDir::HostToDevice,
        };
        assert_eq!(dev.cmd(h2d)?, ok(0));
        assert_eq!(dev.mem.vram(0x200, 600), data);
        let d2d = Command::Copy {
            src: 0x200,
            dst: 0x1003,
            len: 600,
            dir: CopyDir::DeviceToDevice,
        };
        assert_eq!(dev.cmd(d2d)?, ok(0));
        assert_eq!(dev.mem.vram(0x1003, 600), data);
        let d2h = Command::Copy {
            src: 0x1003,
            dst: HOST + 0x1001,
            len: 600,
            dir: CopyDir::DeviceToHost,
        };
        assert_eq!(dev.cmd(d2h)?, ok(0));
        assert_eq!(dev.mem.host(HOST + 0x1001, 600), data);
        // The host side failing is the DMA's fault, the VRAM side an address.
        let bad_host = Command::Copy {
            src: 8,
            dst: 0,
            len: 4,
            dir: CopyDir::HostToDevice,
        };
        assert_eq!(dev.cmd(bad_host)?, fault(err::DMA, 0, 0));
        let bad_vram = Command::Copy {
            src: HOST,
            dst: VRAM as u64,
            len: 4,
            dir: CopyDir::HostToDevice,
        };
        assert_eq!(dev.cmd(bad_vram)?, fault(err::BAD_ADDRESS, 0, 0));
        let bad_d2d = Command::Copy {
            src: 0,
            dst: VRAM as u64 - 2,
            len: 4,
            dir: CopyDir::DeviceToDevice,
        };
        assert_eq!(dev.cmd(bad_d2d)?, fault(err::BAD_ADDRESS, 0, 0));
    }
    Ok(())
}

#[test]
fn without_subword_unaligned_accesses_fault() -> Result<(), Error> {
    let mut dev = Dev::new(&Sim16, GLUON_SIM);
    dev.mem.put_host(HOST, &[7; 8]);
    for (src, dst, len) in [(HOST + 2, 0, 4), (HOST, 2, 4), (HOST, 0, 6)] {
        let c = Command::Copy {
            src,
            dst,
            len,
            dir: CopyDir::HostToDevice,
        };
        assert_eq!(dev.cmd(c)?, fault(err::BAD_ADDRESS, 0, 0), "{c:?}");
    }
    assert_eq!(dev.mem.vram(0, 8), [0; 8]);
    let c = Command::Copy {
        src: HOST,
        dst: 4,
        len: 8,
        dir: CopyDir::HostToDevice,
    };
    assert_eq!(dev.cmd(c)?, ok(0));
    assert_eq!(dev.mem.vram(4, 8), [7; 8]);
    let k = Command::Kernel {
        host_addr: HOST,
        size: 66,
        gpu_addr: 0,
    };
    assert_eq!(dev.cmd(k)?, fault(err::BAD_ADDRESS, 0, 0));
    Ok(())
}

#[test]
fn missing_caps_are_bad_commands() -> Result<(), Error> {
    let commands = [
        Command::Set {
            dst: 0,
            value: 1,
            len: 4,
        },
        Command::Copy {
            src: 0,
            dst: 4,
            len: 4,
            dir: CopyDir::DeviceToDevice,
        },
        Command::ReadCounter {
            counter: counter::COMMANDS,
            dst: 0,
        },
        Command::Fence,
        Command::Wait {
            stream: 0,
            count: 0,
        },
    ];
    for d in [&Sim16 as &'static dyn Dialect, &Gluon24] {
        let mut dev = Dev::new(d, GLUON_SIM);
        for c in commands {
            match dev.cmd(c) {
                Ok(r) => assert_eq!(r, fault(err::BAD_COMMAND, 0, 0), "{} {c:?}", d.name()),
                Err(e) => assert_eq!(e, Error::Unrepresentable, "{} {c:?}", d.name()),
            }
        }
    }
    // With the caps, they complete.
    let mut sim = Dev::new(&Sim16, FULL | caps::FENCE);
    assert_eq!(sim.cmd(Command::Fence)?, ok(0));
    let mut g24 = Dev::new(&Gluon24, FULL | caps::WAIT);
    assert_eq!(
        g24.cmd(Command::Wait {
            stream: 0,
            count: 0
        })?,
        ok(0)
    );
    Ok(())
}

#[test]
fn frames_on_missing_streams_or_malformed_are_bad_commands() -> Result<(), Error> {
    let mut dev = Dev::new(&Gluon24, FULL);
    let mut r = dev.on(
        4,
        Command::Set {
            dst: 0,
            value: 1,
            len: 4,
        },
    )?;
    assert_eq!((r.stream, r.status), (4, err::BAD_COMMAND));
    assert_eq!(dev.mem.vram(0, 4), [0; 4]);
    let garbage = dev.model.run(&dev.mem, &[2, 0xee, 0, 0]);
    assert!(garbage.is_some(), "a malformed frame is answered too");
    r = dev.d.decode_response(&garbage.unwrap_or_default());
    assert_eq!((r.stream, r.status), (2, err::BAD_COMMAND));
    Ok(())
}

/// Where the test launch blocks go, in host memory and VRAM.
const BLOCK_HOST: u64 = HOST + 0x100;
const BLOCK_VRAM: u32 = 0x8000;
const PRINTF_HOST: u64 = HOST + 0x2000;
const RING_LIMIT: u32 = 256;

/// Writes a launch block (header, `params`, an empty printf ring of
/// [`RING_LIMIT`] bytes) to host memory; its KERNEL command.
fn launch_block(
    dev: &Dev,
    start_pc: u32,
    kernel_pc: u32,
    threads: u32,
    params: &[u32],
    printf: bool,
) -> Command {
    let d = dev.d;
    let head = d.launch_header_size();
    let params: Vec<u8> = params.iter().flat_map(|p| p.to_le_bytes()).collect();
    let ring = PrintfRing {
        limit: RING_LIMIT,
        ..Default::default()
    };
    let size = head + params.len() + size_of::<PrintfRing>() + RING_LIMIT as usize;
    let mut block = vec![0u8; size];
    let l = Launch {
        start_pc,
        kernel_pc,
        params_size: params.len() as u32,
        grid: [threads.div_ceil(4), 1, 1],
        block: [4, 1, 1],
        printf_host_addr: if printf { PRINTF_HOST as u32 } else { 0 },
        regs_per_thread: 1,
        ..Default::default()
    };
    assert_eq!(d.encode_launch(&l, &mut block), Ok(()));
    block[head..head + params.len()].copy_from_slice(&params);
    let r = head + params.len();
    for (i, v) in [ring.lock, ring.head, ring.tail, ring.limit]
        .into_iter()
        .enumerate()
    {
        block[r + 4 * i..r + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    dev.mem.put_host(BLOCK_HOST, &block);
    Command::Kernel {
        host_addr: BLOCK_HOST,
        size: size as u32,
        gpu_addr: BLOCK_VRAM,
    }
}

#[test]
fn built_in_launches() -> Result<(), Error> {
    for d in [&Sim16 as &'static dyn Dialect, &Gluon24] {
        for caps in [GLUON_SIM, FULL] {
            let mut dev = Dev::new(d, caps);
            let fill = launch_block(&dev, builtin::FILL_U32, 0, 8, &[0x100, 0xabcd, 6], false);
            assert_eq!(dev.cmd(fill)?, ok(0));
            let v = dev.mem.vram(0x100, 32);
            assert!(v[..24].chunks(4).all(|w| word(w) == 0xabcd), "{v:?}");
            assert_eq!(v[24..], [0; 8]);
            // VECADD through the start code, which calls the kernel at `kernel_pc`.
            let b: Vec<u8> = (0..6u32).flat_map(|i| (i * 10).to_le_bytes()).collect();
            dev.mem.put_vram(0x200, &b);
            let add = launch_block(
                &dev,
                builtin::START,
                builtin::VECADD_U32,
                6,
                &[0x100, 0x200, 0x300, 6],
                false,
            );
            assert_eq!(dev.cmd(add)?, ok(0));
            let c: Vec<u32> = dev.mem.vram(0x300, 24).chunks(4).map(word).collect();
            assert_eq!(
                c,
                [
                    0xabcd,
                    0xabcd + 10,
                    0xabcd + 20,
                    0xabcd + 30,
                    0xabcd + 40,
                    0xabcd + 50
                ]
            );
            // A thread past VRAM faults at the kernel's PC, naming the thread.
            let past = VRAM as u32 - 8;
            let fill = launch_block(&dev, builtin::FILL_U32, 0, 4, &[past, 1, 4], false);
            assert_eq!(
                dev.cmd(fill)?,
                fault(err::BAD_ADDRESS, builtin::FILL_U32, 2)
            );
            // Too few params.
            let fill = launch_block(&dev, builtin::FILL_U32, 0, 4, &[0x100, 1], false);
            assert_eq!(dev.cmd(fill)?, fault(err::BAD_LAUNCH, builtin::FILL_U32, 0));
        }
    }
    Ok(())
}

#[test]
fn a_pc_with_no_kernel_is_an_execution_error_there() -> Result<(), Error> {
    let mut dev = Dev::new(&Sim16, GLUON_SIM);
    let k = launch_block(&dev, 0x8000_1000, 0, 4, &[], false);
    assert_eq!(dev.cmd(k)?, fault(status::EXECUTION, 0x8000_1000, 0));
    let k = launch_block(&dev, builtin::START, 0x8000_2000, 4, &[], false);
    assert_eq!(dev.cmd(k)?, fault(status::EXECUTION, 0x8000_2000, 0));
    Ok(())
}

#[test]
fn printf_reaches_the_host() -> Result<(), Error> {
    let mut dev = Dev::new(&Gluon24, GLUON_SIM);
    let k = launch_block(&dev, builtin::PRINTF_U32, 0, 2, &[40, 2], true);
    assert_eq!(dev.cmd(k)?, ok(0));
    let text = b"thread 0: 40\nthread 1: 41\n";
    assert_eq!(word(&dev.mem.host(PRINTF_HOST, 4)), text.len() as u32);
    assert_eq!(dev.mem.host(PRINTF_HOST + 4, text.len()), text);
    // Nothing printed: a count of 0.
    let k = launch_block(&dev, builtin::PRINTF_U32, 0, 2, &[40, 0], true);
    assert_eq!(dev.cmd(k)?, ok(0));
    assert_eq!(word(&dev.mem.host(PRINTF_HOST, 4)), 0);
    Ok(())
}

#[test]
fn launch_block_limits() -> Result<(), Error> {
    let mut dev = Dev::new(&Sim16, FULL);
    let short = Command::Kernel {
        host_addr: BLOCK_HOST,
        size: 60,
        gpu_addr: BLOCK_VRAM,
    };
    assert_eq!(dev.cmd(short)?, fault(err::BAD_LAUNCH, 0, 0));
    let long = Command::Kernel {
        host_addr: BLOCK_HOST,
        size: MAX_LAUNCH_BLOCK + 4,
        gpu_addr: BLOCK_VRAM,
    };
    assert_eq!(dev.cmd(long)?, fault(err::BAD_LAUNCH, 0, 0));
    let off_host = Command::Kernel {
        host_addr: 0x100,
        size: 64,
        gpu_addr: BLOCK_VRAM,
    };
    assert_eq!(dev.cmd(off_host)?, fault(err::DMA, 0, 0));
    Ok(())
}

#[test]
fn wait_counts_completed_commands_since_reset() -> Result<(), Error> {
    let mut dev = Dev::new(&Gluon24, FULL | caps::WAIT);
    let set = Command::Set {
        dst: 0,
        value: 1,
        len: 4,
    };
    assert_eq!(dev.on(1, set)?, ok(1));
    // A failed command completes too.
    assert_eq!(
        dev.on(
            1,
            Command::ReadCounter {
                counter: 99,
                dst: 0
            }
        )?
        .status,
        err::BAD_COMMAND
    );
    assert_eq!(
        dev.on(
            2,
            Command::Wait {
                stream: 1,
                count: 2
            }
        )?,
        ok(2)
    );
    assert_eq!(
        dev.on(
            2,
            Command::Wait {
                stream: 1,
                count: 3
            }
        )?
        .status,
        err::BAD_COMMAND
    );
    // Counts wrap: a count behind the stream's is met.
    assert_eq!(
        dev.on(
            2,
            Command::Wait {
                stream: 1,
                count: 0
            }
        )?,
        ok(2)
    );
    assert_eq!(
        dev.on(
            0,
            Command::Wait {
                stream: 4,
                count: 0
            }
        )?
        .status,
        err::BAD_COMMAND
    );
    dev.model.reset();
    assert_eq!(
        dev.on(
            2,
            Command::Wait {
                stream: 1,
                count: 1
            }
        )?
        .status,
        err::BAD_COMMAND
    );
    assert_eq!(
        dev.on(
            2,
            Command::Wait {
                stream: 1,
                count: 0
            }
        )?,
        ok(2)
    );
    Ok(())
}

#[test]
fn read_counter() -> Result<(), Error> {
    let mut dev = Dev::new(&Sim16, FULL);
    let read = |dev: &mut Dev, counter, dst: u32| -> Result<i64, Error> {
        assert_eq!(dev.cmd(Command::ReadCounter { counter, dst })?, ok(0));
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&dev.mem.vram(dst.into(), 8));
        Ok(i64::from_le_bytes(bytes))
    };
    assert_eq!(read(&mut dev, counter::COMMANDS, 0x10)?, 0);
    assert_eq!(read(&mut dev, counter::COMMANDS, 0x10)?, 1);
    assert_eq!(read(&mut dev, counter::CLOCK_NS, 0x18)?, CLOCK);
    let k = launch_block(&dev, builtin::FILL_U32, 0, 8, &[0x100, 1, 8], false);
    assert_eq!(dev.cmd(k)?, ok(0));
    assert_eq!(read(&mut dev, counter::THREADS, 0x20)?, 8);
    assert_eq!(
        dev.cmd(Command::ReadCounter {
            counter: counter::COMMANDS,
            dst: 0x14
        })?,
        fault(err::BAD_ADDRESS, 0, 0)
    );
    assert_eq!(
        dev.cmd(Command::ReadCounter {
            counter: counter::COUNT,
            dst: 0x10
        })?,
        fault(err::BAD_COMMAND, 0, 0)
    );
    Ok(())
}

#[test]
fn an_aborted_command_gets_no_response() -> Result<(), Error> {
    let mut dev = Dev::new(&Sim16, GLUON_SIM);
    let spin = launch_block(&dev, builtin::SPIN, 0, 1, &[], false);
    let frame = dev.d.encode(0, &spin)?;
    assert_eq!(
        dev.model.run(&dev.mem, frame.as_bytes()),
        None::<[u8; RESPONSE_SIZE]>
    );
    Ok(())
}

#[test]
fn long_commands_report_progress_a_step_at_a_time() -> Result<(), Error> {
    let mut dev = Dev::new(&Gluon24, FULL);
    let len = 2 * STEP_BYTES + 12;
    let set = Command::Set {
        dst: 0,
        value: 7,
        len,
    };
    assert_eq!(dev.cmd(set)?, ok(0));
    assert_eq!(
        *dev.mem.progress.borrow(),
        [STEP_BYTES.into(), STEP_BYTES.into(), 12]
    );
    dev.mem.progress.borrow_mut().clear();
    let threads = 2 * STEP_THREADS as u32 + 100;
    let fill = launch_block(&dev, builtin::FILL_U32, 0, threads, &[0, 1, threads], false);
    assert_eq!(dev.cmd(fill)?, ok(0));
    assert_eq!(
        *dev.mem.progress.borrow(),
        [STEP_THREADS, STEP_THREADS, 100]
    );
    Ok(())
}

#[test]
fn a_reset_stops_a_long_command_between_steps() -> Result<(), Error> {
    let mut dev = Dev::new(&Gluon24, FULL);
    dev.mem.abort_at.set(Some(1));
    let set = Command::Set {
        dst: 0,
        value: 0x0101_0101,
        len: 3 * STEP_BYTES,
    };
    let frame = dev.d.encode(0, &set)?;
    assert_eq!(
        dev.model.run(&dev.mem, frame.as_bytes()),
        None::<[u8; RESPONSE_SIZE]>
    );
    // The first step ran; nothing after it did.
    let step = STEP_BYTES as usize;
    assert!(dev.mem.vram(0, step).iter().all(|&b| b == 1));
    assert!(dev.mem.vram(step as u64, step).iter().all(|&b| b == 0));
    Ok(())
}

/// radiance-fuzz found the kernel panicking on a launch whose six
/// dimensions multiply past a u64: the count saturates.
#[test]
fn a_launch_counts_its_threads_without_overflowing() {
    let huge = Launch {
        grid: [u32::MAX; 3],
        block: [u32::MAX; 3],
        ..Default::default()
    };
    assert_eq!(huge.threads(), u64::MAX);
    let some = Launch {
        grid: [2, 3, 1],
        block: [4, 1, 5],
        ..Default::default()
    };
    assert_eq!(some.threads(), 120);
}
