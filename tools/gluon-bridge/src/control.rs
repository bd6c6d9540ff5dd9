// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A client of radiance.ko's control node (`uapi::CONTROL_NODE`): declare a
//! device, take its command frames, reach the host memory they name, answer
//! them, acknowledge resets.

use crate::error::{Error, Result};
use radiance_gluon::{Command, Dialect};
use radiance_uapi as uapi;
use rustix::{
    event::{poll, PollFd, PollFlags},
    fs::{open, Mode, OFlags},
    io::{read, write, Errno},
    ioctl::{ioctl, Opcode, Updater},
};
use std::{
    cell::{Cell, RefCell},
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    time::{Duration, Instant},
};

/// How long after the kernel last said no reset was pending
/// [`Control::reset_pending`] takes that answer as still true: asking again
/// is a system call per command. A command that ends sooner is answered
/// anyway, and the kernel refuses that answer if a reset came first
/// ([`Control::respond`]), as it refuses one that ends just after a look.
const RESET_LOOK: Duration = Duration::from_millis(1);

/// USER_DECLARE's flags for a server that waits on nothing but the control
/// file and reads again once it answered what it read (model and soc
/// modes): read() may wait for the frames, and doorbells for that read().
pub const READ_LOOP: u32 = uapi::user_declare_flags::READ_WAITS | uapi::user_declare_flags::TAKES_DOORBELLS;

/// Bytes one read() takes at most: every frame the device may have
/// outstanding (4 streams of 16), and room for any inline block.
const READ_BYTES: usize = 16 << 10;

/// Runs a control-node ioctl on `arg` (every one is `_IOWR`).
macro_rules! control_ioctl {
    ($name:ident, $opcode:expr, $ty:ty) => {
        fn $name(fd: BorrowedFd<'_>, arg: &mut $ty) -> rustix::io::Result<()> {
            // SAFETY: the opcode's argument is a `$ty` of exactly the size
            // the opcode encodes, which the kernel reads and writes back.
            unsafe { ioctl(fd, Updater::<{ $opcode as Opcode }, $ty>::new(arg)) }
        }
    };
}

control_ioctl!(declare_ioctl, uapi::IOCTL_USER_DECLARE, uapi::UserDeclare);
control_ioctl!(host_read_ioctl, uapi::IOCTL_USER_HOST_READ, uapi::UserHostAccess);
control_ioctl!(host_write_ioctl, uapi::IOCTL_USER_HOST_WRITE, uapi::UserHostAccess);
control_ioctl!(reset_ioctl, uapi::IOCTL_USER_RESET, uapi::UserReset);
control_ioctl!(retire_ioctl, uapi::IOCTL_USER_RETIRE, uapi::UserRetire);
control_ioctl!(progress_ioctl, uapi::IOCTL_USER_PROGRESS, uapi::UserProgress);

/// USER_DECLARE with the struct as ABI 1.9 released it (88 bytes): a module
/// before ABI 1.15 takes no other size, and its fields are the first ones.
fn declare_1_9_ioctl(fd: BorrowedFd<'_>, arg: &mut uapi::UserDeclare) -> rustix::io::Result<()> {
    const SIZE: usize = uapi::sizes::USER_DECLARE[0];
    const OPCODE: u32 = uapi::ioc(uapi::IOC_READ | uapi::IOC_WRITE, uapi::nr::USER_DECLARE, SIZE);
    const _: () = assert!(SIZE <= std::mem::size_of::<uapi::UserDeclare>());
    // SAFETY: the opcode encodes SIZE bytes, and `arg` is a `UserDeclare`,
    // which is larger (checked above): the kernel reads and writes only its
    // first SIZE bytes, whose layout ABI 1.9 released.
    unsafe { ioctl(fd, Updater::<{ OPCODE as Opcode }, uapi::UserDeclare>::new(arg)) }
}

/// What poll says about the control file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ready {
    /// Frames may be read.
    pub frames: bool,
    /// The kernel reset the device: acknowledge with [`Control::ack_reset`].
    pub reset: bool,
}

impl Ready {
    pub fn from_revents(r: PollFlags) -> Self {
        Self { frames: r.contains(PollFlags::IN), reset: r.contains(PollFlags::PRI) }
    }
}

/// A command frame read from the control file.
pub struct Frame {
    /// The dialect's frame.
    pub bytes: Vec<u8>,
    /// A KERNEL frame's launch block, as the kernel read it when the frame
    /// was read (`INLINE_BLOCKS`); None where it did not: read it with
    /// [`Control::host_read`].
    pub block: Option<Block>,
}

/// A launch block the kernel inlined after its KERNEL frame.
pub struct Block {
    /// Its DMA address, as the frame names it.
    pub addr: u64,
    pub bytes: Vec<u8>,
}

impl Block {
    /// Fills `dst` with host memory at DMA address `addr`: from `inlined`
    /// if it is those bytes, else by `read`.
    pub fn read_or<E>(
        inlined: Option<&Block>,
        addr: u64,
        dst: &mut [u8],
        read: impl FnOnce(&mut [u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        match inlined.filter(|b| b.addr == addr && b.bytes.len() == dst.len()) {
            Some(b) => {
                dst.copy_from_slice(&b.bytes);
                Ok(())
            }
            None => read(dst),
        }
    }
}

/// What [`Control::next`] found.
pub enum Incoming {
    /// Frames to run (none after a signal).
    Frames(Vec<Frame>),
    /// The kernel reset the device: acknowledge with [`Control::ack_reset`].
    Reset,
}

/// An open control file; the device it declared lives as long as it.
pub struct Control {
    fd: OwnedFd,
    /// The declared device's (none before [`Control::declare`]).
    dialect: Option<&'static dyn Dialect>,
    /// The kernel took `READ_WAITS`: read() waits for frames.
    read_waits: bool,
    /// The kernel took `INLINE_BLOCKS`: a KERNEL frame's block follows it.
    inline_blocks: bool,
    /// The kernel took `REPORTS_PROGRESS`: [`Control::progress`] reaches it.
    reports_progress: bool,
    /// What read() fills, kept from read to read.
    buf: RefCell<Vec<u8>>,
    /// When a poll or a read last found no reset pending.
    no_reset_at: Cell<Instant>,
}

impl Control {
    /// Opens `path` (normally `/dev/radiance-control`).
    pub fn open(path: &str) -> Result<Self> {
        let fd = open(path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| Error::os(format!("open {path} (radiance.ko loaded? CAP_SYS_ADMIN?)"), e))?;
        Ok(Self {
            fd,
            dialect: None,
            read_waits: false,
            inline_blocks: false,
            reports_progress: false,
            buf: RefCell::new(vec![0; READ_BYTES]),
            no_reset_at: Cell::new(Instant::now()),
        })
    }

    /// Declares the device, asking for `INLINE_BLOCKS` besides `decl`'s
    /// flags (this reads them); returns N of `/dev/radianceN`. A module
    /// that refuses a flag (EINVAL: `REPORTS_PROGRESS` before ABI 1.15,
    /// `INLINE_BLOCKS` before 1.13, `TAKES_DOORBELLS` before 1.12,
    /// `READ_WAITS` before 1.11) is asked again without the newest one it
    /// was given, and one before 1.15 with the struct's first size (its
    /// rates unsaid); without `READ_WAITS`, [`Control::next`] polls before
    /// it reads.
    pub fn declare(&mut self, decl: &mut uapi::UserDeclare) -> Result<u32> {
        use uapi::user_declare_flags::{INLINE_BLOCKS, READ_WAITS, REPORTS_PROGRESS, TAKES_DOORBELLS};
        let dialect = radiance_gluon::by_id(decl.dialect)
            .ok_or_else(|| Error::Usage(format!("dialect {} is not known", decl.dialect)))?;
        decl.flags |= INLINE_BLOCKS;
        let mut declared = declare_ioctl(self.fd.as_fd(), decl);
        if declared == Err(Errno::INVAL) {
            decl.flags &= !REPORTS_PROGRESS;
            declared = declare_1_9_ioctl(self.fd.as_fd(), decl);
        }
        for newest in [INLINE_BLOCKS, TAKES_DOORBELLS, READ_WAITS] {
            if declared == Err(Errno::INVAL) && decl.flags & newest != 0 {
                decl.flags &= !newest;
                declared = declare_1_9_ioctl(self.fd.as_fd(), decl);
            }
        }
        declared.map_err(|e| Error::os("USER_DECLARE", e))?;
        self.dialect = Some(dialect);
        self.read_waits = decl.flags & READ_WAITS != 0;
        self.inline_blocks = decl.flags & INLINE_BLOCKS != 0;
        self.reports_progress = decl.flags & REPORTS_PROGRESS != 0;
        Ok(decl.device_index)
    }

    /// Tells the kernel that the command `stream` runs did `units` more of
    /// its work (USER_PROGRESS, ABI 1.15), so that its watchdog does not
    /// take a slow command for a hung one. Nothing on a device declared
    /// without `REPORTS_PROGRESS`, or for no work; a report the kernel
    /// refuses (the command was given up at a reset, or answered) is
    /// dropped: it only ever keeps a command alive.
    pub fn progress(&self, stream: u8, units: u64) {
        if self.reports_progress && units > 0 {
            let mut p = uapi::UserProgress { stream: stream.into(), flags: 0, units };
            let _ = progress_ioctl(self.fd.as_fd(), &mut p);
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Waits up to `timeout_ms` (forever if `None`) for frames or a reset.
    pub fn wait(&self, timeout_ms: Option<i32>) -> Result<Ready> {
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN | PollFlags::PRI)];
        let timeout = timeout_ms
            .map(|ms| rustix::time::Timespec { tv_sec: (ms / 1000).into(), tv_nsec: ((ms % 1000) * 1_000_000).into() });
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {
                let ready = Ready::from_revents(fds[0].revents());
                if !ready.reset {
                    self.no_reset_at.set(Instant::now());
                }
                Ok(ready)
            }
            Err(Errno::INTR) => Ok(Ready::from_revents(fds[0].revents())),
            Err(e) => Err(Error::os("poll the control file", e)),
        }
    }

    /// Whether the kernel reset the device, for a command that runs: asked
    /// without waiting, unless a poll found none pending less than
    /// [`RESET_LOOK`] ago.
    pub fn reset_pending(&self) -> bool {
        self.no_reset_at.get().elapsed() >= RESET_LOOK && self.wait(Some(0)).is_ok_and(|r| r.reset)
    }

    /// Waits for frames or a reset: in read() itself where the kernel took
    /// `READ_WAITS` (one system call), else in poll() first.
    pub fn next(&self) -> Result<Incoming> {
        if !self.read_waits {
            if self.wait(None)?.reset {
                return Ok(Incoming::Reset);
            }
            return self.read_frames().map(Incoming::Frames);
        }
        match self.read() {
            Ok(frames) => {
                self.no_reset_at.set(Instant::now());
                Ok(Incoming::Frames(frames))
            }
            Err(Errno::CONNRESET) => Ok(Incoming::Reset),
            Err(Errno::INTR) => Ok(Incoming::Frames(Vec::new())),
            Err(e) => Err(Error::os("read frames", e)),
        }
    }

    /// Frames that may be read now (none after a reset not yet
    /// acknowledged); for a server that polls (not `READ_WAITS`).
    pub fn read_frames(&self) -> Result<Vec<Frame>> {
        match self.read() {
            Ok(frames) => Ok(frames),
            Err(Errno::AGAIN | Errno::CONNRESET) => Ok(Vec::new()),
            Err(e) => Err(Error::os("read frames", e)),
        }
    }

    fn read(&self) -> rustix::io::Result<Vec<Frame>> {
        let dialect = self.dialect.ok_or(Errno::NXIO)?;
        let mut buf = self.buf.borrow_mut();
        let n = read(&self.fd, &mut buf[..])?;
        let mut bytes = &buf[..n];
        let mut frames = Vec::new();
        while let Some((frame, rest)) = bytes.split_at_checked(dialect.frame_size()) {
            bytes = rest;
            let mut block = None;
            if self.inline_blocks {
                if let Ok((_, Command::Kernel { host_addr, .. })) = dialect.decode(frame) {
                    (block, bytes) = inline_block(host_addr, bytes).ok_or(Errno::PROTO)?;
                }
            }
            frames.push(Frame { bytes: frame.to_vec(), block });
        }
        Ok(frames)
    }

    /// Answers the oldest command of the response's stream. A response the
    /// kernel no longer expects (a reset came in between) is dropped.
    pub fn respond(&self, response: &[u8; radiance_gluon::RESPONSE_SIZE]) -> Result<()> {
        match write(&self.fd, response) {
            Ok(_) | Err(Errno::CONNRESET) => Ok(()),
            Err(e) => Err(Error::os("write a response", e)),
        }
    }

    /// Acknowledges the kernel's reset, or (none pending) says the device
    /// reset itself.
    pub fn ack_reset(&self) -> Result<()> {
        reset_ioctl(self.fd.as_fd(), &mut uapi::UserReset::default()).map_err(|e| Error::os("USER_RESET", e))
    }

    /// Says which streams take no command from now on (bit `i`: stream
    /// `i`), the others being in service (USER_RETIRE, ABI 1.14): what a
    /// newly retired stream held fails with GLUON_ERR_RESET and its queues
    /// move. EBUSY if none would be left; ENOTTY on an older module.
    pub fn retire(&self, streams: u32) -> rustix::io::Result<()> {
        retire_ioctl(self.fd.as_fd(), &mut uapi::UserRetire { streams, flags: 0 })
    }

    /// Reads the launch block at DMA address `addr` into `dst`: from
    /// `inlined` if it is that block, else through the kernel.
    pub fn read_block(&self, inlined: Option<&Block>, addr: u64, dst: &mut [u8]) -> rustix::io::Result<()> {
        Block::read_or(inlined, addr, dst, |dst| self.host_read(addr, dst))
    }

    /// Reads host memory at DMA address `addr` into `dst`.
    pub fn host_read(&self, addr: u64, dst: &mut [u8]) -> rustix::io::Result<()> {
        self.host_access(host_read_ioctl, addr, dst.as_mut_ptr(), dst.len())
    }

    /// Writes `src` to host memory at DMA address `addr`.
    pub fn host_write(&self, addr: u64, src: &[u8]) -> rustix::io::Result<()> {
        self.host_access(host_write_ioctl, addr, src.as_ptr().cast_mut(), src.len())
    }

    /// Runs `access` over `len` bytes at `ptr`, at most
    /// `USER_HOST_ACCESS_MAX` at a time.
    fn host_access(
        &self,
        access: fn(BorrowedFd<'_>, &mut uapi::UserHostAccess) -> rustix::io::Result<()>,
        addr: u64,
        ptr: *mut u8,
        len: usize,
    ) -> rustix::io::Result<()> {
        let max = uapi::USER_HOST_ACCESS_MAX as usize;
        for done in (0..len).step_by(max) {
            let mut a = uapi::UserHostAccess {
                addr: addr + done as u64,
                user_ptr: ptr as u64 + done as u64,
                len: (len - done).min(max) as u32,
                flags: 0,
            };
            access(self.fd.as_fd(), &mut a)?;
        }
        Ok(())
    }
}

/// What follows a KERNEL frame at `addr` in `bytes` (`INLINE_BLOCKS`): its
/// block, if the kernel inlined it, and what comes after; None if `bytes`
/// is cut short.
fn inline_block(addr: u64, bytes: &[u8]) -> Option<(Option<Block>, &[u8])> {
    let (header, rest) = bytes.split_at_checked(std::mem::size_of::<uapi::UserInlineBlock>())?;
    let len = u32::from_ne_bytes(header[..4].try_into().ok()?) as usize;
    if len == 0 {
        return Some((None, rest));
    }
    let (block, rest) = rest.split_at_checked(len.next_multiple_of(8))?;
    Some((Some(Block { addr, bytes: block[..len].to_vec() }), rest))
}

/// A declaration with `name` filled in.
pub fn declaration(name: &str) -> uapi::UserDeclare {
    let mut decl = uapi::UserDeclare::default();
    for (d, s) in decl.name.iter_mut().zip(name.bytes().take(uapi::NAME_LEN - 1)) {
        *d = s;
    }
    decl
}
