// SPDX-License-Identifier: GPL-2.0

//! Scrubbing freed VRAM of a device served by a process, whose VRAM the CPU
//! cannot reach: by commands of the kernel's own, [`SCRUB`] bytes each after
//! a first of [`FIRST_SCRUB`], MEM SET where the device has it, else copies
//! from a block of zeros. A scrub is a barrier in the channel's pending
//! frames: it starts once nothing read before it is outstanding; its
//! commands go one at a time, and only a frame whose command keeps off what
//! is not zeroed yet may go before one of them ([`BESIDE_SCRUB`] at most
//! between two). A frame waiting behind scrubs ages only while the server
//! stands still (Documentation/design/user-devices.md).

use super::User;
use crate::{
    gluon::{
        Command,
        CopyDir,
        Dialect,
        Frame, //
    },
    host_mem::HostMem,
    hw::host_windows::Window,
    uapi::caps,
};

/// Most bytes one scrub command zeroes: few commands per free, and short
/// enough that a command waiting for one is not held up long (a frame
/// that keeps off the range waits for at most one, see the file's
/// comment).
pub(super) const SCRUB: u64 = 256 * 1024;

/// Most bytes a scrub's first command zeroes. The free wakes the server,
/// which reads that command before the free's caller can publish its next
/// operation; one that keeps off the range then waits for that command
/// alone, and short, that wait is short (one command more per free).
pub(super) const FIRST_SCRUB: u64 = 32 * 1024;

/// Bytes of zeros a scrub copies from on a device without MEM SET: one
/// command's worth where host memory's first block is whole ([`HostMem`];
/// a smaller one only makes more commands).
pub(super) const ZEROS: usize = SCRUB as usize;

/// Most frames that go beside a scrub between two of its commands: enough
/// for an operation of a few commands (a fill by pattern copies, a copy's
/// sub-word ends) to go whole, few enough that neither side starves the
/// other.
pub(super) const BESIDE_SCRUB: u32 = 16;

/// VRAM to zero by commands.
pub(super) struct Scrub {
    pub(super) addr: u64,
    pub(super) len: u64,
    /// Nothing read before it is outstanding any more.
    pub(super) started: bool,
    /// Bytes handed out as commands.
    pub(super) issued: u64,
    /// Bytes whose commands were answered: zeroed.
    pub(super) done: u64,
    /// Frames that went before it since its last command.
    pub(super) beside: u32,
}

impl Scrub {
    pub(super) fn new(addr: u64, len: u64) -> Self {
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
    pub(super) fn next_len(&self) -> u64 {
        let most = if self.issued == 0 { FIRST_SCRUB } else { SCRUB };
        (self.len - self.issued).min(most)
    }

    /// From the start again (a reset: its commands may never have run).
    pub(super) fn restart(&mut self) {
        *self = Self::new(self.addr, self.len);
    }
}

/// The stream of `frame` if its command may run beside a scrub of
/// `[addr, addr + len)`: it names the VRAM it reaches, all of it off that
/// range. A launch may reach any VRAM, and a fence or a wait orders what
/// does: never.
pub(super) fn beside_scrub(
    dialect: &dyn Dialect,
    frame: &Frame,
    addr: u64,
    len: u64,
) -> Option<u8> {
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

/// A page of zeros mapped for the device, for scrubs by copy.
pub(super) struct Zeros {
    /// Closed before the memory is unmapped.
    pub(super) _window: Option<Window>,
    pub(super) _mem: HostMem,
    /// Its first segment: DMA address and length.
    pub(super) dma: u64,
    pub(super) len: u32,
}

impl User {
    /// The command that zeroes up to `most` bytes of VRAM at `addr` (the
    /// next piece of a scrub), and its length.
    pub(super) fn scrub_command(&self, addr: u64, most: u64) -> (Command, u64) {
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
}
