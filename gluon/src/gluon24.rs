// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `gluon-24`: the 24-byte frames of gluon-sim from 013add5 on (Merlin pins
//! ae76d19), as gluon-sim itself decodes them, checked against Merlin's
//! `packet_layout.h` where that gives a layout.
//!
//! | bytes | field | gluon-sim 013add5 |
//! |---|---|---|
//! | 0 | stream (gluon-sim has 4) | `base.rs` `Command::sid` |
//! | 1 | type: 0 KERNEL, 1 MEM, 2 CSR, 3 WAIT | `base.rs` `Command::cmd_type` |
//! | KERNEL 2..10, 10..14, 14..18 | launch block host address (u64), size, GPU address | `kernel_engine.rs` `KernelCommand::from_engine_cmd` |
//! | MEM 2 | sub-op: 0 COPY, 1 SET | `mem_engine.rs` `MemCommand::from_engine_cmd` |
//! | COPY 3..11, 11..19, 19..23, 23 | src (u64), dst (u64), length, flags (bit 0 device to host) | `CopyCommand::from_bytes` |
//! | SET 3..7, 7..11, 11..15, 15 | dst, value, length (u32 each), flags (unused, 0) | `SetCommand::from_bytes` |
//! | WAIT 2, 3..11 | stream waited on, how many of its commands must have completed (u64) | `base.rs` `Command::get_wait_ids` |
//!
//! An engine sees the frame from byte 2 on (KERNEL's host address is its
//! bytes 0..8), and MEM's fields from byte 3. SET's layout is not COPY's:
//! its fields are 32-bit and packed from byte 3.
//!
//! Where the sources disagree or say nothing:
//! - `packet_layout.h` gives no SET or WAIT layout; the ones above are
//!   gluon-sim's.
//! - WAIT's count, in gluon-sim, is the waited stream's number of
//!   *completed* commands since the sim started (its stream stage adds one
//!   per completion, failed ones included, and never resets it), not of
//!   submitted ones; the WAIT is met when that number reaches the count.
//!   gluon-sim consumes a met WAIT without a response; our model (the
//!   emulated device) answers it like any command, and counts from its
//!   last reset. The driver emits no WAIT (Documentation/design/gluon.md says why).
//! - CSR as a counter read (2..6 counter, 6..10 VRAM address) and COPY's
//!   flags bit 1 (device to device) are ours: gluon-sim's CSR engine does
//!   something else and it copies only between host and VRAM, so a device
//!   that does not say it implements them never gets them.
//! - There is no FENCE: streams run in order.

use super::{
    copy_dir,
    copy_flags,
    mem,
    u32_at,
    u64_at,
    u8_at,
    Command,
    Dialect,
    Error,
    Frame, //
};

mod kind {
    pub(super) const KERNEL: u8 = 0;
    pub(super) const MEM: u8 = 1;
    pub(super) const CSR: u8 = 2;
    pub(super) const WAIT: u8 = 3;
}

/// Its frame size.
const FRAME: usize = 24;

/// The `gluon-24` dialect.
pub struct Gluon24;

impl Dialect for Gluon24 {
    fn name(&self) -> &'static str {
        "gluon-24"
    }

    fn id(&self) -> u32 {
        2
    }

    fn frame_size(&self) -> usize {
        FRAME
    }

    fn max_streams(&self) -> u8 {
        u8::MAX
    }

    fn encode(&self, stream: u8, cmd: &Command) -> Result<Frame, Error> {
        let mut f = Frame::zeroed(FRAME);
        f.put_u8(0, stream);
        match *cmd {
            Command::Kernel {
                host_addr,
                size,
                gpu_addr,
            } => {
                f.put_u8(1, kind::KERNEL);
                f.put_u64(2, host_addr);
                f.put_u32(10, size);
                f.put_u32(14, gpu_addr);
            }
            Command::Copy { src, dst, len, dir } => {
                f.put_u8(1, kind::MEM);
                f.put_u8(2, mem::COPY);
                f.put_u64(3, src);
                f.put_u64(11, dst);
                f.put_u32(19, len);
                f.put_u8(23, copy_flags(dir));
            }
            Command::Set { dst, value, len } => {
                f.put_u8(1, kind::MEM);
                f.put_u8(2, mem::SET);
                f.put_u32(3, dst);
                f.put_u32(7, value);
                f.put_u32(11, len);
            }
            Command::Wait {
                stream: waited,
                count,
            } => {
                f.put_u8(1, kind::WAIT);
                f.put_u8(2, waited);
                f.put_u64(3, count);
            }
            Command::ReadCounter { counter, dst } => {
                f.put_u8(1, kind::CSR);
                f.put_u32(2, counter);
                f.put_u32(6, dst);
            }
            Command::Fence => return Err(Error::Unrepresentable),
        }
        Ok(f)
    }

    fn decode(&self, b: &[u8]) -> Result<(u8, Command), Error> {
        if b.len() != FRAME {
            return Err(Error::Malformed);
        }
        let cmd = match u8_at(b, 1)? {
            kind::KERNEL => Command::Kernel {
                host_addr: u64_at(b, 2)?,
                size: u32_at(b, 10)?,
                gpu_addr: u32_at(b, 14)?,
            },
            kind::MEM => match u8_at(b, 2)? {
                mem::COPY => Command::Copy {
                    src: u64_at(b, 3)?,
                    dst: u64_at(b, 11)?,
                    len: u32_at(b, 19)?,
                    dir: copy_dir(u8_at(b, 23)?)?,
                },
                // SET's flags byte has no meaning yet: only 0 is a SET.
                mem::SET if u8_at(b, 15)? == 0 => Command::Set {
                    dst: u32_at(b, 3)?,
                    value: u32_at(b, 7)?,
                    len: u32_at(b, 11)?,
                },
                _ => return Err(Error::Malformed),
            },
            kind::CSR => Command::ReadCounter {
                counter: u32_at(b, 2)?,
                dst: u32_at(b, 6)?,
            },
            kind::WAIT => Command::Wait {
                stream: u8_at(b, 2)?,
                count: u64_at(b, 3)?,
            },
            _ => return Err(Error::Malformed),
        };
        Ok((u8_at(b, 0)?, cmd))
    }
}
