// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `gluon-24`: the 24-byte frames of later Gluon versions, as the Merlin
//! IREE driver lays them out (ucb-bar/merlin `packet_layout.h`): 64-bit host
//! addresses, and WAIT for dependencies between streams.
//!
//! | bytes | field |
//! |---|---|
//! | 0 | stream |
//! | 1 | type: 0 KERNEL, 1 MEM, 2 CSR, 3 WAIT |
//! | KERNEL 2..10, 10..14, 14..18 | launch block host address (u64), size, GPU address |
//! | MEM 2 | sub-op: 0 COPY, 1 SET |
//! | COPY 3..11, 11..19, 19..23, 23 | src (u64), dst (u64), length, flags (bit 0 device to host) |
//!
//! `packet_layout.h` gives no layout for SET, WAIT or CSR; ours, until a
//! public Gluon defines them: SET 3..11 dst (u64), 11..19 value (u64, low 32
//! bits used), 19..23 length (COPY's slots); WAIT 2 the stream waited on,
//! 3..7 how many of its commands must have completed; CSR as a counter read,
//! 2..6 counter, 6..10 VRAM address. COPY flags bit 1 (device to device) is
//! ours too. There is no FENCE: streams run in order.

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
                f.put_u64(3, dst.into());
                f.put_u64(11, value.into());
                f.put_u32(19, len);
            }
            Command::Wait {
                stream: waited,
                count,
            } => {
                f.put_u8(1, kind::WAIT);
                f.put_u8(2, waited);
                f.put_u32(3, count);
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
        let vram = |at: usize| u32::try_from(u64_at(b, at)?).map_err(|_| Error::Malformed);
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
                mem::SET => Command::Set {
                    dst: vram(3)?,
                    value: vram(11)?,
                    len: u32_at(b, 19)?,
                },
                _ => return Err(Error::Malformed),
            },
            kind::CSR => Command::ReadCounter {
                counter: u32_at(b, 2)?,
                dst: u32_at(b, 6)?,
            },
            kind::WAIT => Command::Wait {
                stream: u8_at(b, 2)?,
                count: u32_at(b, 3)?,
            },
            _ => return Err(Error::Malformed),
        };
        Ok((u8_at(b, 0)?, cmd))
    }
}
