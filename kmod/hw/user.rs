// SPDX-License-Identifier: GPL-2.0

//! A Gluon served by a process: the device behind a control file
//! ([`crate::control`]), the way VDUSE and ublk put devices in userspace.
//! Today's real Gluons are processes (gluon-sim, RTL simulations, a
//! bring-up link's TSI client); this is how the driver reaches them.
//!
//! The channel between the scheduler and the server:
//! - Frames the scheduler pushes wait in `pending` until the server reads
//!   them; each read frame is outstanding on its stream until the server
//!   writes its response, which is checked against what is outstanding (a
//!   response for a stream running nothing is the server's bug: EPROTO,
//!   `dev_err!`) and handed to the scheduler with an interrupt.
//! - The server reaches host memory only through the kernel, at DMA
//!   addresses mapped for this device ([`HostWindows`]): the kernel is the
//!   device's IOMMU.
//! - The CPU cannot map this VRAM (it lives in the server's process), so
//!   freed VRAM is scrubbed by commands of the kernel's own, [`SCRUB`]
//!   bytes each after a first of [`FIRST_SCRUB`]: MEM SET where the
//!   device has it, else copies from a block of zeros. A scrub is a
//!   barrier in `pending`: it starts once nothing read before it is
//!   outstanding, so it does not race the range's last user; its
//!   commands go one at a time, and until the last is answered
//!   only a frame right behind it whose command keeps off what is not
//!   zeroed yet (a copy, a fill, a counter elsewhere, or on the part whose
//!   commands were answered) may go before it: ahead of its first command
//!   and between two of them (up to [`BESIDE_SCRUB`] of such frames
//!   between two). So the range's next user waits for the commands over
//!   its part, and any other for at most the one running.
//!   The next command also waits until the scheduler has taken the
//!   answers given before it (a pass ended: [`Gluon::pass_done`]). The
//!   pass usually runs in the server's write() itself; where another held
//!   the scheduler, it runs in a work item, and the server would otherwise
//!   keep its CPU busy with the whole scrub while that work item waits for
//!   the CPU.
//!   A frame waiting behind scrubs is not yet the device's: the watchdog
//!   ages it only while the server stands still, and from when the server
//!   reads it ([`Gluon::ages_from`]), or a backlog of scrubs (megabytes
//!   freed, each command a round trip through the server) would reset the
//!   device for a command it was never given, or the moment it is given.
//! - A reset (the watchdog's) drops what was not read and forgets what was
//!   outstanding; until the server acknowledges it (`USER_RESET`, after
//!   POLLPRI), reads and writes fail with ECONNRESET, so no answer to a
//!   command from before the reset can complete one from after it. Scrubs
//!   survive a reset and start again.
//! - A server that takes doorbells (USER_DECLARE's `TAKES_DOORBELLS`) is
//!   left one rung while it answers or is on its way back to read(): its
//!   write() or read() runs the pass ([`Gluon::take_doorbell`]).
//! - A server that declared `INLINE_BLOCKS` reads each KERNEL frame's
//!   launch block right after it ([`User::inline_block`]): a launch then
//!   costs it no USER_HOST_READ, one system call fewer per launch.
//! - When the server goes, everything fails with ENODEV.

use kernel::{
    device::Device,
    new_mutex, new_poll_condvar,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    str::CString,
    sync::{
        poll::PollCondVar,
        Arc,
        Mutex, //
    },
    time::{
        Instant,
        Monotonic, //
    },
    transmute::AsBytes,
    uaccess::{
        UserPtr,
        UserSlice, //
    },
};

use super::{
    dma_device::DmaDevice,
    host_map::HostMap,
    host_windows::{
        HostWindows,
        Window, //
    },
    stream_of,
    Gluon,
    HwDesc,
    Interrupt, //
};
use crate::{
    fifo::Fifo,
    gluon::{
        Command,
        CopyDir,
        Dialect,
        Frame,
        Response,
        RESPONSE_SIZE, //
    },
    host_mem::HostMem,
    uapi::{
        self,
        caps,
        gluon_err, //
    },
};

/// Most bytes one scrub command zeroes: few commands per free, and short
/// enough that a command waiting for one is not held up long (a frame
/// that keeps off the range waits for at most one, see the file's
/// comment).
const SCRUB: u64 = 256 * 1024;

/// Most bytes a scrub's first command zeroes. The free wakes the server,
/// which reads that command before the free's caller can publish its next
/// operation; one that keeps off the range then waits for that command
/// alone, and short, that wait is short (one command more per free).
const FIRST_SCRUB: u64 = 32 * 1024;

/// Bytes of zeros a scrub copies from on a device without MEM SET: one
/// command's worth where host memory's first block is whole ([`HostMem`];
/// a smaller one only makes more commands).
const ZEROS: usize = SCRUB as usize;

/// Most frames that go beside a scrub between two of its commands: enough
/// for an operation of a few commands (a fill by pattern copies, a copy's
/// sub-word ends) to go whole, few enough that neither side starves the
/// other.
const BESIDE_SCRUB: u32 = 16;

/// The header before an inline block in read() (`INLINE_BLOCKS`).
const INLINE_HEADER: usize = core::mem::size_of::<uapi::UserInlineBlock>();

/// `len` bytes of an inline block with the zeros after it: the next frame
/// begins 8-aligned.
fn padded(len: usize) -> usize {
    len.next_multiple_of(8)
}

/// Appends `bytes` to `out` as one copy (`extend_from_slice` clones byte
/// by byte: a few hundred instructions per frame read).
fn append(out: &mut KVVec<u8>, bytes: &[u8]) -> Result {
    let at = out.len();
    out.resize(at + bytes.len(), 0, GFP_KERNEL)?;
    out.get_mut(at..).ok_or(EINVAL)?.copy_from_slice(bytes);
    Ok(())
}

/// An inline block: `len` bytes of host memory at DMA address `addr` (0:
/// only the header goes).
struct Block {
    addr: u64,
    len: u32,
}

/// Whether a frame goes into a read() ([`User::fit`]).
enum Fit {
    /// It waits for the next read().
    Waits,
    /// It goes, with the block to put after it, if any.
    Goes(Option<Block>),
}

/// Most commands one stream may take at once.
const MAX_STREAM_DEPTH: u32 = 16;

/// What waits for the server to read it, in order.
enum Pending {
    /// A frame the scheduler pushed.
    Frame(Frame),
    /// VRAM to zero (see [`Scrub`]).
    Scrub(Scrub),
}

/// VRAM to zero by commands.
struct Scrub {
    addr: u64,
    len: u64,
    /// Nothing read before it is outstanding any more.
    started: bool,
    /// Bytes handed out as commands.
    issued: u64,
    /// Bytes whose commands were answered: zeroed.
    done: u64,
    /// Frames that went before it since its last command.
    beside: u32,
}

impl Scrub {
    fn new(addr: u64, len: u64) -> Self {
        Self {
            addr,
            len,
            started: false,
            issued: 0,
            done: 0,
            beside: 0,
        }
    }

    /// The most bytes its next command zeroes: at most [`FIRST_SCRUB`] for
    /// the first, [`SCRUB`] for each after it.
    fn next_len(&self) -> u64 {
        let most = if self.issued == 0 { FIRST_SCRUB } else { SCRUB };
        (self.len - self.issued).min(most)
    }

    /// From the start again (a reset: its commands may never have run).
    fn restart(&mut self) {
        *self = Self::new(self.addr, self.len);
    }
}

/// Between the scheduler and the server.
struct Channel {
    pending: Fifo<Pending>,
    /// Per stream: the scheduler's frames read and not answered.
    outstanding: KVec<u32>,
    /// Per stream: when the server read its oldest outstanding frame (the
    /// count left 0), so that the watchdog ages a frame that waited
    /// behind scrubs from then (see [`Gluon::ages_from`]).
    taken: KVec<Instant<Monotonic>>,
    /// Per stream: scrub commands read and not answered.
    scrubbing: KVec<u32>,
    /// Answers for the scheduler.
    responses: Fifo<[u8; RESPONSE_SIZE]>,
    /// Answers were given to the scheduler and no pass has ended since
    /// (see [`Gluon::pass_done`]): the next scrub command waits.
    unseen: bool,
    /// When the server last read or answered anything (see
    /// [`Gluon::ages_from`]).
    progress: Instant<Monotonic>,
    /// The kernel reset the device and the server has not acknowledged it.
    reset_pending: bool,
    /// The server is gone.
    gone: bool,
    /// Server threads in write() past taking answers.
    answering: u32,
    /// The server answered everything it read and has not read since:
    /// one that takes doorbells is on its way back to read().
    returning: bool,
    /// A doorbell the server took and has not run the pass for.
    doorbell: bool,
    /// Bit `i` set: the server retired stream `i` (USER_RETIRE).
    retired: u32,
}

/// The stream of `frame` if its command may run beside a scrub of
/// `[addr, addr + len)`: it names the VRAM it reaches, all of it off that
/// range. A launch may reach any VRAM, and a fence or a wait orders what
/// does: never.
fn beside_scrub(dialect: &dyn Dialect, frame: &Frame, addr: u64, len: u64) -> Option<u8> {
    let (stream, cmd) = dialect.decode(frame.as_bytes()).ok()?;
    let off = |at: u64, n: u64| at.saturating_add(n) <= addr || addr.saturating_add(len) <= at;
    let beside = match cmd {
        Command::Set { dst, len: n, .. } => off(dst.into(), n.into()),
        Command::Copy {
            src,
            dst,
            len: n,
            dir,
        } => match dir {
            CopyDir::HostToDevice => off(dst, n.into()),
            CopyDir::DeviceToHost => off(src, n.into()),
            CopyDir::DeviceToDevice => off(src, n.into()) && off(dst, n.into()),
        },
        Command::ReadCounter { dst, .. } => off(dst.into(), 8),
        Command::Kernel { .. } | Command::Fence | Command::Wait { .. } => false,
    };
    beside.then_some(stream)
}

/// What the server may read next.
enum Next {
    /// The frame at the front of `pending`, on this stream.
    Frame(u8),
    /// The frame right behind the scrub at the front, on this stream,
    /// before the scrub's next command.
    BesideScrub(u8),
    /// The next command of the scrub at the front.
    ScrubCommand,
    /// Nothing: the scrub at the front is done, and leaves.
    ScrubDone,
}

impl Channel {
    /// A reset: drops the frames not read from `pending` (calling `each`
    /// with them), and starts every scrub again, since its commands handed
    /// out (counted in `scrubbing`) may never have run. Over the fields, so
    /// that `each` may use the others.
    fn drop_unread(
        pending: &mut Fifo<Pending>,
        scrubbing: &mut [u32],
        mut each: impl FnMut(&Frame),
    ) {
        pending.retain_pending(|p| match p {
            Pending::Frame(frame) => {
                each(frame);
                false
            }
            Pending::Scrub(scrub) => {
                scrub.restart();
                true
            }
        });
        scrubbing.iter_mut().for_each(|n| *n = 0);
    }

    fn busy(counts: &[u32]) -> bool {
        counts.iter().any(|&n| n > 0)
    }

    /// The stream scrubs run on: the first in service (USER_RETIRE never
    /// retires them all).
    fn scrub_stream(&self) -> u8 {
        (!self.retired).trailing_zeros() as u8
    }

    /// Commands on `stream`, of the scheduler's and of scrubs.
    fn on_stream(&self, stream: u8) -> u32 {
        let s = usize::from(stream);
        self.outstanding.get(s).copied().unwrap_or(0) + self.scrubbing.get(s).copied().unwrap_or(0)
    }

    /// What the server may read now, if anything (see the file's comment
    /// for scrubs); `depth`: commands a stream takes at once.
    fn next(&self, dialect: &dyn Dialect, depth: u32) -> Option<Next> {
        let scrub = match self.pending.front()? {
            Pending::Frame(frame) => {
                return (!Self::busy(&self.scrubbing))
                    .then(|| Next::Frame(stream_of(dialect, frame)));
            }
            Pending::Scrub(scrub) => scrub,
        };
        // What was read before it is done (a frame that went beside it
        // since does not hold it back: `started` is set then).
        if !scrub.started && (Self::busy(&self.outstanding) || Self::busy(&self.scrubbing)) {
            return None;
        }
        if let Some(Pending::Frame(frame)) = self
            .pending
            .second()
            .filter(|_| scrub.beside < BESIDE_SCRUB)
        {
            let (at, left) = (scrub.addr + scrub.done, scrub.len - scrub.done);
            if let Some(stream) = beside_scrub(dialect, frame, at, left) {
                if self.on_stream(stream) < depth {
                    return Some(Next::BesideScrub(stream));
                }
            }
        }
        // Its stream free of the scheduler's commands, so that its answers
        // come in the order `write_responses` takes them.
        if scrub.issued < scrub.len {
            (!Self::busy(&self.scrubbing)
                && self.on_stream(self.scrub_stream()) == 0
                && !self.unseen)
                .then_some(Next::ScrubCommand)
        } else {
            (!Self::busy(&self.scrubbing)).then_some(Next::ScrubDone)
        }
    }
}

/// A page of zeros mapped for the device, for scrubs by copy.
struct Zeros {
    /// Closed before the memory is unmapped.
    _window: Option<Window>,
    _mem: HostMem,
    /// Its first segment: DMA address and length.
    dma: u64,
    len: u32,
}

/// A Gluon served by a process.
#[pin_data]
pub(crate) struct User {
    desc: HwDesc,
    dev: DmaDevice,
    windows: Arc<HostWindows>,
    zeros: Zeros,
    /// USER_DECLARE's `TAKES_DOORBELLS`.
    takes_doorbells: bool,
    /// USER_DECLARE's `INLINE_BLOCKS`.
    inline_blocks: bool,
    /// Lock order: level 6 (Documentation/design/locking.md).
    #[pin]
    channel: Mutex<Channel>,
    /// Woken when the server may read, or has a reset to acknowledge.
    #[pin]
    ready: PollCondVar,
    /// Lock order: level 7 (Documentation/design/locking.md).
    #[pin]
    irq: Mutex<Option<Arc<dyn Interrupt>>>,
}

/// What a server declares its device to be (USER_DECLARE, checked here).
pub(crate) fn describe(decl: &uapi::UserDeclare) -> Result<HwDesc> {
    let dialect = crate::gluon::by_id(decl.dialect).ok_or(EINVAL)?;
    let known_caps = caps::SET
        | caps::FENCE
        | caps::WAIT
        | caps::COPY_D2D
        | caps::COUNTERS
        | caps::SUBWORD
        | caps::VRAM_MAPPABLE;
    let builtins = (1u32 << uapi::builtin::ALL.len()) - 1;
    let page = PAGE_SIZE as u64;
    if decl.flags & !uapi::user_declare_flags::ALL != 0
        || decl.pad != 0
        || decl.caps & !known_caps != 0
        || decl.builtins & !builtins != 0
        || decl.streams == 0
        || decl.streams > dialect.max_streams().into()
        || decl.stream_depth == 0
        || decl.stream_depth > MAX_STREAM_DEPTH
        || decl.vram_size == 0
        || decl.vram_size % page != 0
        || decl.vram_size > 1 << 32
        || !decl.name.contains(&0)
    {
        return Err(EINVAL);
    }
    // The VRAM is in the server's process: the kernel has no pages to map.
    if decl.caps & caps::VRAM_MAPPABLE != 0 {
        return Err(EOPNOTSUPP);
    }
    Ok(HwDesc {
        backend: uapi::backend::USER,
        name: super::name_field(&decl.name),
        cores: decl.cores,
        warps_per_core: decl.warps_per_core,
        threads_per_warp: decl.threads_per_warp,
        vram_size: decl.vram_size,
        builtins: decl.builtins,
        dialect,
        streams: decl.streams as u8,
        stream_depth: decl.stream_depth as u8,
        caps: decl.caps,
    })
}

impl User {
    /// A device served by a process, described by `desc`, with the
    /// USER_DECLARE `flags` [`describe`] checked; its `struct device` is
    /// `radiance-user<id>`.
    pub(crate) fn new(desc: HwDesc, flags: u32, id: u32) -> Result<Arc<Self>> {
        let name = CString::try_from_fmt(fmt!("radiance-user{id}"))?;
        let dev = DmaDevice::new(&name)?;
        let windows = HostWindows::new()?;
        let mem = HostMem::new(dev.device(), ZEROS as u64)?;
        let (dma, len) = mem.segments().next().ok_or(ENOMEM)?;
        let zeros = Zeros {
            _window: Some(HostWindows::open(&windows, mem.segments())?),
            dma,
            len: u32::try_from(len)?,
            _mem: mem,
        };
        let streams = desc.streams.into();
        let channel = Channel {
            pending: Fifo::with_capacity(crate::scheduler::MAX_IN_FLIGHT)?,
            outstanding: KVec::from_elem(0, streams, GFP_KERNEL)?,
            taken: KVec::from_elem(Instant::now(), streams, GFP_KERNEL)?,
            scrubbing: KVec::from_elem(0, streams, GFP_KERNEL)?,
            responses: Fifo::with_capacity(crate::scheduler::MAX_IN_FLIGHT)?,
            unseen: false,
            progress: Instant::now(),
            reset_pending: false,
            gone: false,
            answering: 0,
            returning: false,
            doorbell: false,
            retired: 0,
        };
        Arc::pin_init(
            try_pin_init!(Self {
                desc,
                dev,
                windows,
                zeros,
                takes_doorbells: flags & uapi::user_declare_flags::TAKES_DOORBELLS != 0,
                inline_blocks: flags & uapi::user_declare_flags::INLINE_BLOCKS != 0,
                channel <- new_mutex!(channel, "User::channel"),
                ready <- new_poll_condvar!("User::ready"),
                irq <- new_mutex!(None, "User::irq"),
            }),
            GFP_KERNEL,
        )
    }

    /// Commands one stream takes at once.
    fn depth(&self) -> u32 {
        self.desc.stream_depth.into()
    }

    /// The command that zeroes up to `most` bytes of VRAM at `addr` (the
    /// next piece of a scrub), and its length.
    fn scrub_command(&self, addr: u64, most: u64) -> (Command, u64) {
        if self.desc.caps & caps::SET != 0 {
            // Whole words, which every device takes.
            let cmd = Command::Set {
                dst: addr as u32,
                value: 0,
                len: most as u32,
            };
            (cmd, most)
        } else {
            let len = most.min(self.zeros.len.into());
            let cmd = Command::Copy {
                src: self.zeros.dma,
                dst: addr,
                len: len as u32,
                dir: CopyDir::HostToDevice,
            };
            (cmd, len)
        }
    }

    /// read(): into `out` (emptied first), as many whole frames as fit in
    /// `max` bytes, in order (with `INLINE_BLOCKS`, each KERNEL frame
    /// followed by its block). EINVAL if not even one fits. If none may be
    /// read now: EAGAIN, or with `wait`, sleeps until one may, a reset is
    /// pending (ECONNRESET) or a signal comes (ERESTARTSYS). Runs the pass
    /// of a doorbell the device took first, which may give it frames.
    pub(crate) fn read_frames(&self, out: &mut KVVec<u8>, max: usize, wait: bool) -> Result {
        out.clear();
        let header = if self.inline_blocks { INLINE_HEADER } else { 0 };
        if max < self.desc.dialect.frame_size() + header {
            return Err(EINVAL);
        }
        let mut ch = self.channel.lock();
        ch.returning = false;
        loop {
            if ch.gone {
                return Err(ENODEV);
            }
            if ch.reset_pending {
                return Err(ECONNRESET);
            }
            self.take_frames(&mut ch, max, out)?;
            if !out.is_empty() {
                ch.progress = Instant::now();
                return Ok(());
            }
            if core::mem::take(&mut ch.doorbell) {
                drop(ch);
                self.raise();
                ch = self.channel.lock();
                continue;
            }
            if !wait {
                return Err(EAGAIN);
            }
            // Every change that lets a frame be read notifies `ready` after
            // making it under `channel`, which the wait drops only once it
            // is on `ready`'s queue.
            if self.ready.wait_interruptible(&mut ch) {
                return Err(ERESTARTSYS);
            }
        }
    }

    /// Moves to `out` as many whole frames as fit in `max` bytes, each
    /// KERNEL frame with its block if the server declared `INLINE_BLOCKS`.
    fn take_frames(&self, ch: &mut Channel, max: usize, out: &mut KVVec<u8>) -> Result {
        let dialect = self.desc.dialect;
        let size = dialect.frame_size();
        while out.len() + size <= max {
            let Some(next) = ch.next(dialect, self.depth()) else {
                break;
            };
            let scrub_stream = ch.scrub_stream();
            let Channel {
                pending,
                outstanding,
                taken,
                scrubbing,
                ..
            } = &mut *ch;
            // A frame the scheduler pushed, and what follows it.
            let queued = match next {
                Next::Frame(_) => pending.front(),
                Next::BesideScrub(_) => pending.second(),
                Next::ScrubCommand | Next::ScrubDone => None,
            };
            let block = match queued {
                Some(Pending::Frame(frame)) => match self.fit(frame, max, out.len()) {
                    Fit::Waits => break,
                    Fit::Goes(block) => block,
                },
                _ => None,
            };
            let frame = match next {
                Next::Frame(stream) => {
                    let frame = match pending.front() {
                        Some(Pending::Frame(frame)) => *frame,
                        _ => break,
                    };
                    pending.advance();
                    Some((stream, frame))
                }
                Next::BesideScrub(stream) => {
                    if let Some(Pending::Scrub(scrub)) = pending.front_mut() {
                        scrub.started = true;
                        scrub.beside += 1;
                    }
                    match pending.take_second() {
                        Some(Pending::Frame(frame)) => Some((stream, frame)),
                        _ => break,
                    }
                }
                Next::ScrubCommand => {
                    if let Some(Pending::Scrub(scrub)) = pending.front_mut() {
                        let addr = scrub.addr + scrub.issued;
                        let (cmd, n) = self.scrub_command(addr, scrub.next_len());
                        scrub.started = true;
                        (scrub.issued, scrub.beside) = (scrub.issued + n, 0);
                        match dialect.encode(scrub_stream, &cmd) {
                            Ok(frame) => {
                                append(out, frame.as_bytes())?;
                                if let Some(n) = scrubbing.get_mut(usize::from(scrub_stream)) {
                                    *n += 1;
                                }
                            }
                            Err(_) => dev_err!(
                                self.dev.device(),
                                "cannot encode a scrub of VRAM at {addr:#x}: left as it is\n"
                            ),
                        }
                    }
                    None
                }
                Next::ScrubDone => {
                    pending.advance();
                    None
                }
            };
            // The scheduler encoded it: it names a stream we have.
            if let Some((stream, frame)) = frame {
                append(out, frame.as_bytes())?;
                if let Some(block) = block {
                    self.inline_block(out, block)?;
                }
                let s = usize::from(stream);
                if let Some(n) = outstanding.get_mut(s) {
                    if *n == 0 {
                        if let Some(t) = taken.get_mut(s) {
                            *t = Instant::now();
                        }
                    }
                    *n += 1;
                }
            }
        }
        Ok(())
    }

    /// How `frame` goes into a read() of `max` bytes with `used` of them
    /// filled: with `INLINE_BLOCKS`, a KERNEL frame takes its block after
    /// it, whole where it fits; one that would fit an empty read waits for
    /// the next read rather than go without it.
    fn fit(&self, frame: &Frame, max: usize, used: usize) -> Fit {
        if !self.inline_blocks {
            return Fit::Goes(None);
        }
        let Ok((_, cmd)) = self.desc.dialect.decode(frame.as_bytes()) else {
            return Fit::Goes(None);
        };
        let Command::Kernel {
            host_addr, size, ..
        } = cmd
        else {
            return Fit::Goes(None);
        };
        let head = self.desc.dialect.frame_size() + INLINE_HEADER;
        let len = padded(size as usize);
        let inline = size <= uapi::USER_INLINE_BLOCK_MAX && head + len <= max;
        if used + head + if inline { len } else { 0 } > max {
            return Fit::Waits;
        }
        Fit::Goes(Some(Block {
            addr: host_addr,
            len: if inline { size } else { 0 },
        }))
    }

    /// Appends what follows a KERNEL frame (`INLINE_BLOCKS`): the header,
    /// then `block.len` bytes of host memory and zeros up to 8 bytes; the
    /// header alone, saying 0, where no window holds the block (the server
    /// then gets USER_HOST_READ's EFAULT, as without the flag).
    fn inline_block(&self, out: &mut KVVec<u8>, block: Block) -> Result {
        let at = out.len();
        let body = at + INLINE_HEADER;
        let len = block.len as usize;
        out.resize(body + padded(len), 0, GFP_KERNEL)?;
        let read = match out.get_mut(body..body + len) {
            Some(dst) => self.read_host(block.addr, dst),
            None => Err(EINVAL),
        };
        let header = uapi::UserInlineBlock {
            len: if read.is_ok() { block.len } else { 0 },
            pad: 0,
        };
        if read.is_err() {
            out.truncate(body);
        }
        if let Some(h) = out.get_mut(at..body) {
            h.copy_from_slice(header.as_bytes());
        }
        Ok(())
    }

    /// Reads host memory at DMA address `addr` into `dst`, run by run of
    /// the windows that hold it; EFAULT where none does.
    fn read_host(&self, addr: u64, dst: &mut [u8]) -> Result {
        let mut done = 0;
        while done < dst.len() {
            let at = addr.checked_add(done as u64).ok_or(EFAULT)?;
            let rest = dst.get_mut(done..).ok_or(EINVAL)?;
            done += self.windows.with_run(at, rest.len() as u64, |n| {
                // At most the block's length.
                let chunk = rest.get_mut(..n as usize).ok_or(EINVAL)?;
                HostMap::new(at, u32::try_from(n)?)?.read(0, chunk)?;
                Ok(chunk.len())
            })?;
        }
        Ok(())
    }

    /// write(): takes whole responses, in order; how many bytes it took.
    /// EPROTO (and nothing taken from there on) for a response on a stream
    /// with nothing outstanding.
    pub(crate) fn write_responses(&self, bytes: &[u8]) -> Result<usize> {
        if bytes.len() < RESPONSE_SIZE || bytes.len() % RESPONSE_SIZE != 0 {
            return Err(EINVAL);
        }
        let dialect = self.desc.dialect;
        let mut taken = 0;
        let mut raise = false;
        {
            let mut ch = self.channel.lock();
            if ch.gone {
                return Err(ENODEV);
            }
            if ch.reset_pending {
                return Err(ECONNRESET);
            }
            for raw in bytes.chunks_exact(RESPONSE_SIZE) {
                let mut r = [0u8; RESPONSE_SIZE];
                r.copy_from_slice(raw);
                let response = dialect.decode_response(&r);
                let s = usize::from(response.stream);
                if let Some(n) = ch.scrubbing.get_mut(s).filter(|n| **n > 0) {
                    *n -= 1;
                    // One at a time, of the scrub at the front.
                    if let Some(Pending::Scrub(scrub)) = ch.pending.front_mut() {
                        scrub.done = scrub.issued;
                    }
                    if response.status != 0 {
                        dev_err!(
                            self.dev.device(),
                            "a VRAM scrub failed (status {}): freed VRAM may keep old data\n",
                            response.status
                        );
                    }
                } else if let Some(n) = ch.outstanding.get_mut(s).filter(|n| **n > 0) {
                    *n -= 1;
                    ch.responses.push(r)?;
                    ch.unseen = true;
                    raise = true;
                } else {
                    dev_err!(
                        self.dev.device(),
                        "server answered stream {s}, which runs nothing: response dropped\n"
                    );
                    break;
                }
                taken += RESPONSE_SIZE;
            }
            if taken > 0 {
                ch.progress = Instant::now();
            }
            ch.answering += 1;
        }
        if raise {
            self.raise();
        }
        self.run_doorbells();
        // An answered scrub lets frames behind it be read.
        self.ready.notify_all();
        if taken == 0 {
            return Err(EPROTO);
        }
        Ok(taken)
    }

    /// USER_RESET: acknowledges the kernel's reset; with none pending, the
    /// server reset itself, so everything outstanding or not read
    /// completes with `gluon_err::RESET`.
    pub(crate) fn server_reset(&self) -> Result {
        let dialect = self.desc.dialect;
        {
            let mut ch = self.channel.lock();
            if ch.reset_pending {
                ch.reset_pending = false;
                drop(ch);
                self.ready.notify_all();
                return Ok(());
            }
            let failed = |stream: u8| {
                dialect.encode_response(&Response {
                    stream,
                    status: gluon_err::RESET,
                    ..Default::default()
                })
            };
            let Channel {
                pending,
                outstanding,
                scrubbing,
                responses,
                ..
            } = &mut *ch;
            for (s, n) in outstanding.iter_mut().enumerate() {
                for _ in 0..*n {
                    responses.push(failed(s as u8))?;
                }
                *n = 0;
            }
            let mut unread = Ok(());
            Channel::drop_unread(pending, scrubbing, |frame| {
                unread = unread.and(responses.push(failed(stream_of(dialect, frame))));
            });
            unread?;
        }
        dev_warn!(self.dev.device(), "the server reset the device\n");
        self.raise();
        self.ready.notify_all();
        Ok(())
    }

    /// USER_RETIRE: the streams in `streams` take no command from now on,
    /// the others are in service. What a newly retired stream holds (read
    /// and not answered, or not read) completes with `gluon_err::RESET`, as
    /// at the server's own reset; a scrub whose command it held starts
    /// again on a stream in service. EINVAL for a stream the device does
    /// not have, EBUSY if none would be left in service.
    pub(crate) fn retire(&self, streams: u32) -> Result {
        let all = u32::MAX >> (32 - u32::from(self.desc.streams.clamp(1, 32)));
        if streams & !all != 0 {
            return Err(EINVAL);
        }
        if streams == all {
            return Err(EBUSY);
        }
        let dialect = self.desc.dialect;
        let newly = {
            let mut ch = self.channel.lock();
            if ch.gone {
                return Err(ENODEV);
            }
            let newly = streams & !ch.retired;
            ch.retired = streams;
            let failed = |stream: u8| {
                dialect.encode_response(&Response {
                    stream,
                    status: gluon_err::RESET,
                    ..Default::default()
                })
            };
            let on = |s: usize| s < 32 && newly & (1 << s) != 0;
            let Channel {
                pending,
                outstanding,
                scrubbing,
                responses,
                ..
            } = &mut *ch;
            for (s, n) in outstanding.iter_mut().enumerate().filter(|(s, _)| on(*s)) {
                for _ in 0..*n {
                    responses.push(failed(s as u8))?;
                }
                *n = 0;
            }
            let mut unread = Ok(());
            pending.retain_pending(|p| match p {
                Pending::Frame(frame) if on(stream_of(dialect, frame).into()) => {
                    unread = unread.and(responses.push(failed(stream_of(dialect, frame))));
                    false
                }
                _ => true,
            });
            unread?;
            let scrub_lost = scrubbing
                .iter_mut()
                .enumerate()
                .filter(|(s, n)| on(*s) && **n > 0)
                .fold(false, |_, (_, n)| {
                    *n = 0;
                    true
                });
            if scrub_lost {
                if let Some(Pending::Scrub(scrub)) = pending.front_mut() {
                    scrub.restart();
                }
            }
            newly
        };
        if newly != 0 {
            dev_warn!(
                self.dev.device(),
                "the server retired streams {newly:#x} (retired now: {streams:#x})\n"
            );
            self.raise();
        }
        self.ready.notify_all();
        Ok(())
    }

    /// The server is gone: nothing reaches it any more.
    pub(crate) fn disconnect(&self) {
        {
            let mut ch = self.channel.lock();
            ch.gone = true;
            ch.pending.clear();
            ch.responses.clear();
        }
        self.ready.notify_all();
    }

    /// poll(): POLLIN when a frame may be read or a doorbell waits for
    /// read() to run its pass, POLLPRI while a reset waits to be
    /// acknowledged; writes never block.
    pub(crate) fn poll_mask(&self) -> u32 {
        let ch = self.channel.lock();
        let mut mask = kernel::bindings::POLLOUT | kernel::bindings::POLLWRNORM;
        if ch.reset_pending {
            mask |= kernel::bindings::POLLPRI;
        } else if ch.doorbell || ch.next(self.desc.dialect, self.depth()).is_some() {
            mask |= kernel::bindings::POLLIN | kernel::bindings::POLLRDNORM;
        }
        mask
    }

    pub(crate) fn ready(&self) -> &PollCondVar {
        &self.ready
    }

    /// USER_HOST_READ / USER_HOST_WRITE: moves `len` bytes between host
    /// memory at DMA address `addr` and the server's buffer at `user_ptr`,
    /// each run that lies inside one window mapped for the device at once:
    /// straight between the two under the windows' lock, with page faults
    /// off; where a page of the server's buffer is not there (not touched
    /// yet, swapped out), through [`User::bounce`].
    pub(crate) fn host_access(&self, args: &uapi::UserHostAccess, to_host: bool) -> Result {
        if args.flags != 0 || args.len > uapi::USER_HOST_ACCESS_MAX {
            return Err(EINVAL);
        }
        let len = u64::from(args.len);
        let mut done = 0u64;
        while done < len {
            let addr = args.addr.checked_add(done).ok_or(EFAULT)?;
            let user = usize::try_from(args.user_ptr.checked_add(done).ok_or(EFAULT)?)?;
            let (n, copied) = self.windows.with_run(addr, len - done, |n| {
                // At most `USER_HOST_ACCESS_MAX`.
                let map = HostMap::new(addr, u32::try_from(n)?)?;
                let copied = if to_host {
                    map.from_user_nofault(0, user, n as usize)?
                } else {
                    map.to_user_nofault(0, user, n as usize)?
                };
                Ok((n, copied))
            })?;
            if !copied {
                self.bounce(addr, user, n, to_host)?;
            }
            done += n;
        }
        Ok(())
    }

    /// Moves `len` bytes between host memory at `addr` and the server's
    /// buffer at `user` a page at a time through a buffer, the server's
    /// side outside the windows' lock: a fault on the server's buffer may
    /// take locks (mmap_lock) under which mappings of host memory are
    /// dropped.
    fn bounce(&self, addr: u64, user: usize, len: u64, to_host: bool) -> Result {
        let (mut reader, mut writer) =
            UserSlice::new(UserPtr::from_addr(user), usize::try_from(len)?).reader_writer();
        let mut buf = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(PAGE_SIZE as u64);
            let addr = addr + done;
            let chunk = buf.get_mut(..n as usize).ok_or(EINVAL)?;
            // The window may have closed while the lock was not held.
            let whole = |m: u64| if m == n { Ok(()) } else { Err(EFAULT) };
            if to_host {
                reader.read_slice(chunk)?;
                self.windows.with_run(addr, n, |m| {
                    whole(m)?;
                    HostMap::new(addr, n as u32)?.write(0, chunk)
                })?;
            } else {
                self.windows.with_run(addr, n, |m| {
                    whole(m)?;
                    HostMap::new(addr, n as u32)?.read(0, chunk)
                })?;
                writer.write_slice(chunk)?;
            }
            done += n;
        }
        Ok(())
    }

    /// The end of a write(): runs the passes of doorbells the device took
    /// while it answered, which come before the server is back in read().
    fn run_doorbells(&self) {
        loop {
            let mut ch = self.channel.lock();
            if !core::mem::take(&mut ch.doorbell) {
                ch.answering -= 1;
                ch.returning = !Channel::busy(&ch.outstanding) && !Channel::busy(&ch.scrubbing);
                return;
            }
            drop(ch);
            self.raise();
        }
    }

    /// Called from the server's own system calls once no lock is held: the
    /// scheduler may take the answers right in them (see
    /// [`Interrupt::raise_here`]), outside `irq`'s lock.
    fn raise(&self) {
        let irq = self.irq.lock().clone();
        if let Some(irq) = irq {
            irq.raise_here();
        }
    }
}

impl Gluon for User {
    fn desc(&self) -> &HwDesc {
        &self.desc
    }

    /// Queues a scrub by commands (see the file's comment); the range may be
    /// handed out again at once, since whatever uses it next comes after
    /// the scrub.
    fn vram_zero(&self, addr: u64, len: u64) {
        let queued = {
            let mut ch = self.channel.lock();
            if ch.gone {
                return;
            }
            ch.pending.push(Pending::Scrub(Scrub::new(addr, len)))
        };
        if queued.is_err() {
            dev_err!(
                self.dev.device(),
                "no memory to scrub VRAM at {addr:#x}: freed VRAM may keep old data\n"
            );
        }
        self.ready.notify_all();
    }

    fn vram_pages(&self, _addr: u64, _len: u64, _each: &mut dyn FnMut(&Page) -> Result) -> Result {
        Err(EOPNOTSUPP)
    }

    fn dma_device(&self) -> &Device {
        self.dev.device()
    }

    fn push_command(&self, frame: &[u8]) -> Result {
        let frame = Frame::from_bytes(frame).ok_or(EINVAL)?;
        {
            let mut ch = self.channel.lock();
            if ch.gone {
                return Err(ENODEV);
            }
            ch.pending.push(Pending::Frame(frame))?;
        }
        self.ready.notify_all();
        Ok(())
    }

    /// Taken while the server is in write() past its answers, or has
    /// answered all it read and not read since: it declared it comes back
    /// to read() then. Not while a reset waits, nor while the server
    /// sleeps in read(): the ringer's CPU runs the pass faster than the
    /// server's, just woken, would (under QEMU, 5 to 10 µs against 25 to 28
    /// after a 200 µs idle). Outside write(), `ready` is notified at once,
    /// taken or not: a server asleep in read() or poll() wakes while the
    /// ringer builds its frame rather than after it (a CPU idle for long
    /// takes tens of µs to run again), at the cost of going back to sleep
    /// if the frame is not there yet or the pass makes none; one on its
    /// way back to read() is not on the queue yet.
    fn take_doorbell(&self) -> bool {
        if !self.takes_doorbells {
            return false;
        }
        let (taken, in_write) = {
            let mut ch = self.channel.lock();
            if ch.gone || ch.reset_pending {
                return false;
            }
            let in_write = ch.answering > 0;
            let taken = in_write || ch.returning;
            ch.doorbell |= taken;
            (taken, in_write)
        };
        if !in_write {
            self.ready.notify_all();
        }
        taken
    }

    fn pop_response(&self) -> Option<[u8; RESPONSE_SIZE]> {
        self.channel.lock().responses.pop()
    }

    /// Lets the next scrub command go once the answers are all taken.
    fn pass_done(&self) {
        {
            let mut ch = self.channel.lock();
            if !ch.unseen || !ch.responses.is_empty() {
                return;
            }
            ch.unseen = false;
        }
        self.ready.notify_all();
    }

    fn set_interrupt(&self, irq: Option<Arc<dyn Interrupt>>) {
        *self.irq.lock() = irq;
    }

    /// A frame the server has not read waits behind what it has: scrubs
    /// (which hold everything after them), or frames of other streams; one
    /// it has read is the device's from then, not from when it was queued.
    fn ages_from(&self, stream: u8) -> Option<Instant<Monotonic>> {
        let ch = self.channel.lock();
        let s = usize::from(stream);
        match ch.outstanding.get(s) {
            Some(&n) if n > 0 => ch.taken.get(s).copied(),
            _ => Some(ch.progress),
        }
    }

    /// Returns at once: the server is told by POLLPRI, and nothing it says
    /// counts until it acknowledges.
    fn reset(&self) {
        {
            let mut ch = self.channel.lock();
            if ch.gone {
                return;
            }
            let ch = &mut *ch;
            Channel::drop_unread(&mut ch.pending, &mut ch.scrubbing, |_| {});
            ch.outstanding.iter_mut().for_each(|n| *n = 0);
            ch.responses.clear();
            ch.unseen = false;
            ch.progress = Instant::now();
            ch.reset_pending = true;
        }
        dev_err!(
            self.dev.device(),
            "device reset: waiting for the server to acknowledge\n"
        );
        self.ready.notify_all();
    }

    fn retired_streams(&self) -> u32 {
        self.channel.lock().retired
    }

    fn host_windows(&self) -> Option<&Arc<HostWindows>> {
        Some(&self.windows)
    }
}
