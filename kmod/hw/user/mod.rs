// SPDX-License-Identifier: GPL-2.0

//! A Gluon served by a process: the device behind a control file
//! ([`crate::control`]), the way VDUSE and ublk put devices in userspace.
//! Today's real Gluons are processes (gluon-sim, RTL simulations, a
//! bring-up link's TSI client); this is how the driver reaches them.
//!
//! The server reads command frames through the [`channel`], reaches host
//! memory only through the kernel, at DMA addresses mapped for this device
//! ([`HostWindows`]: the kernel is the device's IOMMU), and answers each
//! frame with a response. Freed VRAM is zeroed by [`scrub`] commands;
//! doorbells may be left to the server ([`doorbell`]). A reset waits for
//! the server's USER_RESET; a stream the server cannot reset it retires
//! (USER_RETIRE). When the server goes, everything fails with ENODEV.
//! Documentation/design/user-devices.md tells the whole story.

mod channel;
mod doorbell;
mod scrub;

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

use self::{
    channel::{
        Channel,
        Next,
        Pending, //
    },
    scrub::{
        Scrub,
        Zeros,
        ZEROS, //
    },
};
use super::{
    dma_device::DmaDevice,
    host_map::HostMap,
    host_windows::HostWindows,
    in_streams,
    stream_of,
    Gluon,
    HwDesc,
    Interrupt,
    Rates, //
};
use crate::{
    fifo::Fifo,
    gluon::{
        Command,
        Frame,
        RESPONSE_SIZE, //
    },
    host_mem::HostMem,
    uapi::{
        self,
        caps, //
    },
};

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
    /// USER_DECLARE's `REPORTS_PROGRESS`.
    reports_progress: bool,
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
        rates: Rates {
            bytes_per_s: decl.bytes_per_s,
            threads_per_s: decl.threads_per_s,
        },
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
            done: KVec::from_elem(0, streams, GFP_KERNEL)?,
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
                reports_progress: flags & uapi::user_declare_flags::REPORTS_PROGRESS != 0,
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
            ch.fail_streams(dialect, |_| true)?;
            // Scrub commands it held may never have run: from the start.
            let ch = &mut *ch;
            Channel::drop_unread(&mut ch.pending, &mut ch.scrubbing, |_| {});
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
            ch.fail_streams(dialect, |s| in_streams(newly, s))?;
            let Channel {
                pending, scrubbing, ..
            } = &mut *ch;
            let mut scrub_lost = false;
            for (s, n) in scrubbing.iter_mut().enumerate() {
                if in_streams(newly, s) && *n > 0 {
                    *n = 0;
                    scrub_lost = true;
                }
            }
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

    /// USER_PROGRESS: the command the server runs on `stream` did `units`
    /// more of its work. ENXIO on a device declared without
    /// `REPORTS_PROGRESS`, EINVAL for a stream it lacks, EPROTO for one
    /// that runs nothing the server read, ECONNRESET while a reset waits
    /// to be acknowledged.
    pub(crate) fn report_progress(&self, stream: u32, units: u64) -> Result {
        if !self.reports_progress {
            return Err(ENXIO);
        }
        let s = usize::try_from(stream)?;
        let mut ch = self.channel.lock();
        if s >= ch.done.len() {
            return Err(EINVAL);
        }
        if ch.gone {
            return Err(ENODEV);
        }
        if ch.reset_pending {
            return Err(ECONNRESET);
        }
        let runs = |counts: &KVec<u32>| counts.get(s).is_some_and(|&n| n > 0);
        if !runs(&ch.outstanding) && !runs(&ch.scrubbing) {
            return Err(EPROTO);
        }
        if let Some(done) = ch.done.get_mut(s) {
            *done = done.wrapping_add(units);
        }
        // The server works: what waits behind it ages from here.
        ch.progress = Instant::now();
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

    fn take_doorbell(&self) -> bool {
        self.doorbell_taken()
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

    /// What the server reported for `stream`, if it reports progress.
    fn progress(&self, stream: u8) -> Option<u64> {
        if !self.reports_progress {
            return None;
        }
        self.channel.lock().done.get(usize::from(stream)).copied()
    }

    fn retired_streams(&self) -> u32 {
        self.channel.lock().retired
    }

    fn host_windows(&self) -> Option<&Arc<HostWindows>> {
        Some(&self.windows)
    }
}
