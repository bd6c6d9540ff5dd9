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
//! It speaks either dialect ([`crate::gluon`]): it decodes exactly the
//! frames and launch blocks a real Gluon of that dialect would get, and
//! answers on the stream each frame names. It implements what its `caps`
//! say and answers anything else with an error, as a device that lacks it
//! would fail: in gluon-sim mode it implements only what gluon-sim e554ff7
//! does, so the tests show the driver never sends more.
//!
//! The emulator cannot run Radiance machine code: a launch whose start PC is
//! a built-in (`uapi::builtin`) runs that kernel over the grid, reading its
//! params from the launch block as the hardware would (`START` runs the
//! built-in at the block's `kernel_pc`, as start code calls the kernel); any
//! other PC is answered with an execution error at that PC. `SPIN` runs
//! until the device is reset.

use core::fmt::Write;
use kernel::{
    bindings,
    device::{
        Bound,
        Device, //
    },
    error::to_result,
    faux, new_mutex,
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
    Gluon,
    HwDesc,
    Interrupt, //
};
use crate::{
    fifo::Fifo,
    gluon::{
        self,
        Command,
        CopyDir,
        Dialect,
        Frame,
        Response,
        RESPONSE_SIZE, //
    },
    raw::flush_work,
    uapi::{
        self,
        caps,
        gluon_err as err, //
    },
};

/// The emulated compute shape, a small Radiance configuration.
const CORES: u32 = 4;
const WARPS_PER_CORE: u32 = 8;
const THREADS_PER_WARP: u32 = 16;

/// Command FIFO depth, as a board's would be.
const FIFO_DEPTH: usize = 64;

/// Largest launch block the emulator DMAs in.
const MAX_LAUNCH_BLOCK: u32 = 64 * 1024;

/// Hardware streams.
const STREAMS: u8 = 4;

/// Commands one stream takes at once: gluon-sim's one, or a deeper FIFO.
const GLUON_SIM_DEPTH: u8 = 1;
const DEPTH: u8 = 16;

/// What it implements in gluon-sim mode, and otherwise (with the
/// dialect-specific FENCE or WAIT added). gluon-sim keeps VRAM in its own
/// process, so the CPU cannot map it: not VRAM_MAPPABLE.
const GLUON_SIM_CAPS: u64 = 0;
const FULL_CAPS: u64 =
    caps::SET | caps::COPY_D2D | caps::COUNTERS | caps::SUBWORD | caps::VRAM_MAPPABLE;

/// The FIFOs between the driver and the command processor.
struct Fifos {
    commands: Fifo<Frame>,
    responses: Fifo<[u8; RESPONSE_SIZE]>,
}

/// The command processor and its memory.
#[pin_data]
struct Engine {
    vram_size: u64,
    dialect: &'static dyn Dialect,
    /// `uapi::caps` it implements.
    caps: u64,
    /// Commands each stream completed since the last reset, for WAIT.
    #[pin]
    completed: Mutex<[u32; STREAMS as usize]>,
    /// VRAM page `i` holds bytes `[i * PAGE_SIZE, (i + 1) * PAGE_SIZE)`;
    /// `None` reads as zeros.
    #[pin]
    vram: Mutex<KVVec<Option<Page>>>,
    #[pin]
    fifos: Mutex<Fifos>,
    /// Lock order: `fifos` before `irq`.
    #[pin]
    irq: Mutex<Option<Arc<dyn Interrupt>>>,
    /// 1 while a reset is under way: the running kernel stops and the rest
    /// of the FIFO is dropped.
    abort: Atomic<i32>,
    /// READ_COUNTER's counters: commands executed, threads run.
    commands: Atomic<i64>,
    threads: Atomic<i64>,
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
    faux: faux::Registration,
}

impl Emu {
    /// Largest emulated VRAM: Gluon addresses are 32-bit.
    pub(crate) const MAX_VRAM: u64 = 1 << 32;

    /// Creates emulated device `index` with `vram_size` bytes of VRAM (a
    /// multiple of the page size), speaking `dialect`; with `gluon_sim`, it
    /// implements only what gluon-sim e554ff7 does.
    pub(crate) fn new(
        index: u32,
        vram_size: u64,
        dialect: &'static dyn Dialect,
        gluon_sim: bool,
    ) -> Result<Arc<Self>> {
        let dialect_caps = match dialect.id() {
            uapi::dialect::GLUON_SIM_16 => caps::FENCE,
            uapi::dialect::GLUON_24 => caps::WAIT,
            _ => 0,
        };
        let caps = if gluon_sim {
            GLUON_SIM_CAPS
        } else {
            FULL_CAPS | dialect_caps
        };
        let name = CString::try_from_fmt(fmt!("radiance-emu{index}"))?;
        let faux = faux::Registration::new(&name, None)?;
        set_dma_mask_32(device_of(&faux))?;
        let pages = usize::try_from(vram_size / PAGE_SIZE as u64)?;
        let mut vram = KVVec::with_capacity(pages, GFP_KERNEL)?;
        for _ in 0..pages {
            vram.push(None, GFP_KERNEL)?;
        }
        let fifos = Fifos {
            commands: Fifo::with_capacity(FIFO_DEPTH)?,
            responses: Fifo::with_capacity(FIFO_DEPTH)?,
        };
        let engine = Arc::pin_init(
            pin_init!(Engine {
                vram_size,
                dialect,
                caps,
                completed <- new_mutex!([0; STREAMS as usize], "Emu::completed"),
                vram <- new_mutex!(vram, "Emu::vram"),
                fifos <- new_mutex!(fifos, "Emu::fifos"),
                irq <- new_mutex!(None, "Emu::irq"),
                abort: Atomic::new(0),
                commands: Atomic::new(0),
                threads: Atomic::new(0),
                work <- new_work!("Emu::work"),
            }),
            GFP_KERNEL,
        )?;
        let desc = HwDesc {
            backend: uapi::backend::EMULATED,
            name: "Radiance (emulated Gluon)",
            cores: CORES,
            warps_per_core: WARPS_PER_CORE,
            threads_per_warp: THREADS_PER_WARP,
            vram_size,
            // All of them.
            builtins: (1 << uapi::builtin::ALL.len()) - 1,
            dialect,
            streams: STREAMS.min(dialect.max_streams()),
            stream_depth: if gluon_sim { GLUON_SIM_DEPTH } else { DEPTH },
            caps,
        };
        Ok(Arc::new(Self { desc, engine, faux }, GFP_KERNEL)?)
    }
}

/// The emulated device's `struct device`.
fn device_of(faux: &faux::Registration) -> &Device {
    let faux: &faux::Device<Bound> = faux.as_ref();
    let dev: &Device<Bound> = faux.as_ref();
    dev
}

/// Gives the emulated device a 32-bit DMA mask: the emulator reaches host
/// memory as a board would, through 32-bit DMA addresses. A faux device has
/// no bus code to do this (`dma_coerce_mask_and_coherent` is inline C).
fn set_dma_mask_32(dev: &Device) -> Result {
    let dev = crate::raw::device(dev);
    // Pointing `dma_mask` at the device's own `coherent_dma_mask` is what
    // `dma_coerce_mask_and_coherent` does; both live as long as `dev`.
    // SAFETY: `dev` is a live, registered device that nobody else uses yet.
    unsafe {
        (*dev).dma_mask = &raw mut (*dev).coherent_dma_mask;
        to_result(bindings::dma_set_mask(dev, u64::from(u32::MAX)))?;
        to_result(bindings::dma_set_coherent_mask(dev, u64::from(u32::MAX)))
    }
}

/// A launch being run: where its params and printf ring are.
struct Launch {
    /// The PC a fault is reported at.
    entry_pc: u32,
    threads: u64,
    /// VRAM address of the params.
    params: u32,
    params_size: u32,
    /// VRAM address of the printf ring header.
    ring: u32,
    /// VRAM address just past the launch block.
    end: u32,
}

/// One line of printf text.
struct LineBuf {
    bytes: [u8; 64],
    len: usize,
}

impl Default for LineBuf {
    fn default() -> Self {
        Self {
            bytes: [0; 64],
            len: 0,
        }
    }
}

impl LineBuf {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl core::fmt::Write for LineBuf {
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

/// A device-side failure: the response's status, PC and warp.
struct Fault(u8, u32, u32);

/// Host memory at a DMA address, mapped for the worker.
///
/// # Invariants
///
/// `ptr` maps `len` bytes of host memory until `self` is dropped.
struct HostMap {
    ptr: *mut u8,
    len: usize,
}

impl HostMap {
    /// Maps `len` bytes at DMA address `addr` (a physical address on the
    /// IOMMU-less emulated device).
    fn new(addr: u64, len: u32) -> Result<Self, Fault> {
        let write_back = bindings::MEMREMAP_WB as c_ulong;
        // SAFETY: `memremap` accepts any range and fails cleanly for one that is not RAM; a mapping
        // is valid until `memunmap`.
        let ptr = unsafe { bindings::memremap(addr, len as usize, write_back) };
        if ptr.is_null() {
            return Err(Fault(err::DMA, 0, 0));
        }
        // INVARIANT: mapped above for `len` bytes.
        Ok(Self {
            ptr: ptr.cast(),
            len: len as usize,
        })
    }

    /// Writes `src` at byte `at` of the mapping; EINVAL past its end.
    fn write(&self, at: usize, src: &[u8]) -> Result {
        if at.checked_add(src.len()).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: `[at, at + src.len())` lies in the mapping (checked on entry; type invariant), and
        // the host memory is the device's to write while it runs the command: no Rust code reads it.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(at), src.len()) };
        Ok(())
    }
}

impl Drop for HostMap {
    fn drop(&mut self) {
        // SAFETY: mapped by `memremap` in `new`.
        unsafe { bindings::memunmap(self.ptr.cast()) };
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

    /// Copies VRAM at `addr` into `dst`.
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> Result {
        self.vram_chunks(addr, dst.len() as u64, |p, off, n, done| {
            let dst = dst.get_mut(done..done + n).ok_or(EINVAL)?;
            // SAFETY: `dst` is valid for `n` writable bytes. VRAM pages are
            // read and written only under `vram`, which `vram_chunks` holds.
            unsafe { p.read_raw(dst.as_mut_ptr(), off, n) }
        })
    }

    /// Copies `src` into VRAM at `addr`.
    fn write_vram(&self, addr: u64, src: &[u8]) -> Result {
        self.vram_chunks(addr, src.len() as u64, |p, off, n, done| {
            let src = src.get(done..done + n).ok_or(EINVAL)?;
            // SAFETY: `src` is valid for `n` bytes. VRAM pages are read and
            // written only under `vram`, which `vram_chunks` holds.
            unsafe { p.write_raw(src.as_ptr(), off, n) }
        })
    }

    /// DMA: all of `host` into VRAM at `addr`.
    fn host_to_vram(&self, host: &HostMap, addr: u64) -> Result {
        self.vram_chunks(addr, host.len as u64, |p, off, n, done| {
            // SAFETY: `host` maps `host.len` >= `done + n` bytes (invariant; `vram_chunks`), VRAM
            // pages are touched only under `vram` (held), and the host bytes are the device's now.
            unsafe { p.write_raw(host.ptr.add(done), off, n) }
        })
    }

    /// DMA: `len` bytes of VRAM at `addr` into `host` from byte `at`.
    fn vram_to_host(&self, addr: u64, host: &HostMap, at: usize, len: usize) -> Result {
        if at.checked_add(len).is_none_or(|end| end > host.len) {
            return Err(EINVAL);
        }
        self.vram_chunks(addr, len as u64, |p, off, n, done| {
            // SAFETY: `[at + done, at + done + n)` lies in the mapping (checked on entry; invariant), VRAM
            // pages are touched only under `vram` (held), and the host bytes are the device's now.
            unsafe { p.read_raw(host.ptr.add(at + done), off, n) }
        })
    }

    fn read_u32(&self, addr: u32) -> Result<u32> {
        let mut v = [0u8; 4];
        if addr % 4 != 0 {
            return Err(EINVAL);
        }
        self.read_vram(addr.into(), &mut v)?;
        Ok(u32::from_le_bytes(v))
    }

    fn write_u32(&self, addr: u32, value: u32) -> Result {
        if addr % 4 != 0 {
            return Err(EINVAL);
        }
        self.write_vram(addr.into(), &value.to_le_bytes())
    }

    /// A fault unless the device implements `cap`.
    fn require(&self, cap: u64) -> Result<(), Fault> {
        if self.caps & cap == 0 {
            return Err(Fault(err::BAD_COMMAND, 0, 0));
        }
        Ok(())
    }

    /// A fault unless `values` are all multiples of 4 on a device without
    /// sub-word accesses (gluon-sim aborts on such an access).
    fn aligned(&self, values: &[u64]) -> Result<(), Fault> {
        if self.caps & caps::SUBWORD == 0 && values.iter().any(|v| v % 4 != 0) {
            return Err(Fault(err::BAD_ADDRESS, 0, 0));
        }
        Ok(())
    }

    fn execute(&self, stream: u8, cmd: Command) -> Result<(), Fault> {
        let bad_address = |_| Fault(err::BAD_ADDRESS, 0, 0);
        let vram = |a: u64| u32::try_from(a).map_err(|_| Fault(err::BAD_ADDRESS, 0, 0));
        match cmd {
            Command::Fence => self.require(caps::FENCE),
            Command::Wait {
                stream: waited,
                count,
            } => {
                self.require(caps::WAIT)?;
                // Commands run one at a time, in the order they came: what
                // a WAIT can name has completed, or never will.
                let done = *self.completed.lock().get(waited as usize).ok_or(Fault(
                    err::BAD_COMMAND,
                    0,
                    0,
                ))?;
                if count.wrapping_sub(done) as i32 > 0 {
                    return Err(Fault(err::BAD_COMMAND, 0, 0));
                }
                let _ = stream;
                Ok(())
            }
            Command::Set { dst, value, len } => {
                self.require(caps::SET)?;
                self.aligned(&[dst.into(), len.into()])?;
                let bytes = value.to_le_bytes();
                let mut chunk = [0u8; 256];
                for (i, b) in chunk.iter_mut().enumerate() {
                    *b = bytes[i % 4];
                }
                // 256 is a multiple of 4, so every chunk starts in phase.
                let mut done = 0;
                while done < len {
                    let n = (len - done).min(chunk.len() as u32);
                    let chunk = chunk
                        .get(..n as usize)
                        .ok_or(Fault(err::BAD_COMMAND, 0, 0))?;
                    self.write_vram(u64::from(dst) + u64::from(done), chunk)
                        .map_err(bad_address)?;
                    done += n;
                }
                Ok(())
            }
            Command::Copy { src, dst, len, dir } => {
                self.aligned(&[src, dst, len.into()])?;
                match dir {
                    CopyDir::HostToDevice => {
                        let host = HostMap::new(src, len)?;
                        self.host_to_vram(&host, vram(dst)?.into())
                            .map_err(bad_address)
                    }
                    CopyDir::DeviceToHost => {
                        let host = HostMap::new(dst, len)?;
                        self.vram_to_host(vram(src)?.into(), &host, 0, len as usize)
                            .map_err(bad_address)
                    }
                    CopyDir::DeviceToDevice => {
                        self.require(caps::COPY_D2D)?;
                        let (src, dst) = (vram(src)?, vram(dst)?);
                        let mut buf = KVec::<u8>::from_elem(0, PAGE_SIZE, GFP_KERNEL)
                            .map_err(|_| Fault(err::DMA, 0, 0))?;
                        let mut done = 0u32;
                        while done < len {
                            let n = (len - done).min(PAGE_SIZE as u32);
                            let buf = buf.get_mut(..n as usize).ok_or(Fault(err::DMA, 0, 0))?;
                            self.read_vram(u64::from(src) + u64::from(done), buf)
                                .map_err(bad_address)?;
                            self.write_vram(u64::from(dst) + u64::from(done), buf)
                                .map_err(bad_address)?;
                            done += n;
                        }
                        Ok(())
                    }
                }
            }
            Command::Kernel {
                host_addr,
                size,
                gpu_addr,
            } => {
                self.aligned(&[host_addr, size.into(), gpu_addr.into()])?;
                self.launch(host_addr, size, gpu_addr)
            }
            Command::ReadCounter { counter, dst } => {
                self.require(caps::COUNTERS)?;
                let value = match counter {
                    uapi::counter::COMMANDS => self.commands.load(Relaxed),
                    uapi::counter::THREADS => self.threads.load(Relaxed),
                    // The device's clock is the host's monotonic clock.
                    uapi::counter::CLOCK_NS => Monotonic::ktime_get(),
                    _ => return Err(Fault(err::BAD_COMMAND, 0, 0)),
                };
                if dst % 8 != 0 {
                    return Err(Fault(err::BAD_ADDRESS, 0, 0));
                }
                self.write_vram(dst.into(), &value.to_le_bytes())
                    .map_err(bad_address)
            }
        }
    }

    /// KERNEL: DMA the launch block into VRAM, run it, then drain its
    /// printf ring to the host.
    fn launch(&self, host_addr: u64, size: u32, gpu_addr: u32) -> Result<(), Fault> {
        let head = self.dialect.launch_header_size() as u32;
        if size < head || size > MAX_LAUNCH_BLOCK {
            return Err(Fault(err::BAD_LAUNCH, 0, 0));
        }
        let host = HostMap::new(host_addr, size)?;
        self.host_to_vram(&host, gpu_addr.into())
            .map_err(|_| Fault(err::BAD_ADDRESS, 0, 0))?;
        drop(host);
        // From here on the device reads its VRAM copy, as hardware does.
        let mut header = [0u8; gluon::LAUNCH_HEADER_SIZE];
        let header = header
            .get_mut(..head as usize)
            .ok_or(Fault(err::BAD_LAUNCH, 0, 0))?;
        self.read_vram(gpu_addr.into(), header)
            .map_err(|_| Fault(err::BAD_LAUNCH, 0, 0))?;
        let block = self
            .dialect
            .decode_launch(header)
            .map_err(|_| Fault(err::BAD_LAUNCH, 0, 0))?;
        let entry_pc = match block.start_pc {
            // The start code calls the kernel at `kernel_pc`.
            uapi::builtin::START => block.kernel_pc,
            pc => pc,
        };
        let threads = Iterator::chain(block.grid.iter(), block.block.iter())
            .map(|&d| u64::from(d))
            .product::<u64>();
        // The params, then the binary, then (our runtime's convention) the
        // printf ring.
        let params = gpu_addr + head;
        let ring = u64::from(params) + u64::from(block.params_size) + u64::from(block.binary_size);
        if ring > u64::from(gpu_addr) + u64::from(size) {
            return Err(Fault(err::BAD_LAUNCH, block.start_pc, 0));
        }
        let launch = Launch {
            entry_pc,
            threads,
            params,
            params_size: block.params_size,
            ring: ring as u32,
            end: gpu_addr + size,
        };
        self.threads
            .fetch_add(i64::try_from(threads).unwrap_or(i64::MAX), Relaxed);
        let result = self.run_builtin(&launch);
        // What the kernel printed reaches the host even if it faulted.
        if block.printf_host_addr != 0 {
            self.drain_printf(&launch, block.printf_host_addr)
                .map_err(|_| Fault(err::DMA, entry_pc, 0))?;
        }
        result
    }

    /// Runs a built-in kernel over its grid.
    fn run_builtin(&self, l: &Launch) -> Result<(), Fault> {
        let param = |i: u32| {
            if (i + 1) * 4 > l.params_size {
                return Err(Fault(err::BAD_LAUNCH, l.entry_pc, 0));
            }
            self.read_u32(l.params + i * 4)
                .map_err(|_| Fault(err::BAD_LAUNCH, l.entry_pc, 0))
        };
        // A thread's fault names the PC and the thread, as hardware does.
        let at = |t: u64| move |_| Fault(err::BAD_ADDRESS, l.entry_pc, t as u32);
        let threads = l.threads;
        match l.entry_pc {
            uapi::builtin::FILL_U32 => {
                let (dst, value, count) = (param(0)?, param(1)?, param(2)?);
                for t in 0..threads.min(count.into()) {
                    let addr = dst.wrapping_add(4 * t as u32);
                    self.write_u32(addr, value).map_err(at(t))?;
                }
            }
            uapi::builtin::COPY_U32 => {
                let (dst, src, count) = (param(0)?, param(1)?, param(2)?);
                for t in 0..threads.min(count.into()) {
                    let v = self
                        .read_u32(src.wrapping_add(4 * t as u32))
                        .map_err(at(t))?;
                    self.write_u32(dst.wrapping_add(4 * t as u32), v)
                        .map_err(at(t))?;
                }
            }
            uapi::builtin::VECADD_U32 => {
                let (a, b, c, count) = (param(0)?, param(1)?, param(2)?, param(3)?);
                for t in 0..threads.min(count.into()) {
                    let off = 4 * t as u32;
                    let x = self.read_u32(a.wrapping_add(off)).map_err(at(t))?;
                    let y = self.read_u32(b.wrapping_add(off)).map_err(at(t))?;
                    self.write_u32(c.wrapping_add(off), x.wrapping_add(y))
                        .map_err(at(t))?;
                }
            }
            uapi::builtin::PRINTF_U32 => {
                let (value, count) = (param(0)?, param(1)?);
                for t in 0..threads.min(count.into()) {
                    let mut line = LineBuf::default();
                    // A 64-byte line always holds this text.
                    let _ = writeln!(line, "thread {t}: {}", value.wrapping_add(t as u32));
                    self.printf(l, line.as_bytes()).map_err(at(t))?;
                }
            }
            uapi::builtin::SPIN => {
                // Runs until a reset; its response never comes.
                while self.abort.load(Acquire) == 0 {
                    fsleep(Delta::from_millis(1));
                }
            }
            // Gluon's execution error at the PC where no kernel is (also
            // start code whose `kernel_pc` is the start code itself).
            pc => return Err(Fault(gluon::status::EXECUTION, pc, 0)),
        }
        Ok(())
    }

    /// A kernel's printf: appends `text` to the launch's ring (dropping what
    /// does not fit, as the ring's limit says).
    fn printf(&self, l: &Launch, text: &[u8]) -> Result {
        let ring = l.ring;
        let (head, limit) = (self.read_u32(ring + 4)?, self.read_u32(ring + 12)?);
        let data = ring + size_of::<uapi::PrintfRing>() as u32;
        if u64::from(data) + u64::from(limit) > u64::from(l.end) {
            return Err(EINVAL);
        }
        let n = (text.len() as u32).min(limit.saturating_sub(head));
        self.write_vram(
            u64::from(data + head),
            text.get(..n as usize).ok_or(EINVAL)?,
        )?;
        self.write_u32(ring + 4, head + n)
    }

    /// Drains a launch's printf ring to host `addr`: a little-endian u32
    /// byte count, then the text.
    fn drain_printf(&self, l: &Launch, addr: u32) -> Result {
        let ring = l.ring;
        let (head, tail, limit) = (
            self.read_u32(ring + 4)?,
            self.read_u32(ring + 8)?,
            self.read_u32(ring + 12)?,
        );
        let len = head.min(limit).saturating_sub(tail);
        let data = ring + size_of::<uapi::PrintfRing>() as u32 + tail;
        let host = HostMap::new(addr.into(), 4 + len).map_err(|_| EINVAL)?;
        host.write(0, &len.to_le_bytes())?;
        self.vram_to_host(data.into(), &host, 4, len as usize)?;
        self.write_u32(ring + 8, tail + len)
    }

    /// The next command frame, if any.
    fn next_command(&self) -> Option<Frame> {
        self.fifos.lock().commands.pop()
    }

    fn post(&self, response: Response) {
        {
            let mut f = self.fifos.lock();
            // The driver keeps at most FIFO_DEPTH commands in flight, so
            // this never grows past the capacity reserved in `new`.
            let _ = f.responses.push(self.dialect.encode_response(&response));
        }
        if let Some(irq) = &*self.irq.lock() {
            irq.raise();
        }
    }
}

impl WorkItem for Engine {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        while let Some(frame) = this.next_command() {
            if this.abort.load(Acquire) != 0 {
                break;
            }
            let (stream, result) = match this.dialect.decode(frame.as_bytes()) {
                Ok((stream, _)) if stream >= STREAMS => {
                    (stream, Err(Fault(err::BAD_COMMAND, 0, 0)))
                }
                Ok((stream, cmd)) => (stream, this.execute(stream, cmd)),
                // Its stream, if the frame is long enough to have one.
                Err(_) => (
                    frame.as_bytes().first().copied().unwrap_or(0),
                    Err(Fault(err::BAD_COMMAND, 0, 0)),
                ),
            };
            this.commands.fetch_add(1, Relaxed);
            if this.abort.load(Acquire) != 0 {
                // Reset while it ran: it never completed.
                break;
            }
            if let Some(done) = this.completed.lock().get_mut(stream as usize) {
                *done = done.wrapping_add(1);
            }
            let response = match result {
                Ok(()) => Response {
                    stream,
                    ..Default::default()
                },
                Err(Fault(status, pc, warp)) => Response {
                    stream,
                    status,
                    pc,
                    warp,
                },
            };
            this.post(response);
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
        device_of(&self.faux)
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
        }
        *engine.completed.lock() = [0; STREAMS as usize];
        engine.abort.store(0, Release);
    }
}
