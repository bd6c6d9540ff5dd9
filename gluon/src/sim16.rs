// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `gluon-sim-16`: the 16-byte frames of gluon-sim (Sh-Anand/gluon at
//! e554ff7), the only executable Gluon today.
//!
//! | bytes | field |
//! |---|---|
//! | 0 | stream (gluon-sim has 4) |
//! | 1 | opcode: 0 KERNEL, 1 MEM, 2 CSR, 3 FENCE |
//! | KERNEL 2..6, 6..10, 10..14 | launch block host address, size, GPU address |
//! | MEM 2 | sub-op: 0 COPY, 1 SET |
//! | COPY 3..7, 7..11, 11..15, 15 | src, dst, length, flags (bit 0 device to host) |
//! | SET 3..7, 7..11, 11..15 | dst, value, length |
//!
//! Not from gluon-sim, and so never sent to a device that does not say it
//! implements them: COPY flags bit 1 (device to device), and CSR as a
//! counter read (2..6 counter, 6..10 VRAM address; a CSR command never
//! completes in gluon-sim). gluon-sim's SET and FENCE exist in its format
//! but not in its engine. There is no WAIT.

use super::{
    copy_dir,
    copy_flags,
    mem,
    u32_at,
    u8_at,
    Command,
    Dialect,
    Error,
    Frame, //
};

mod opcode {
    pub(super) const KERNEL: u8 = 0;
    pub(super) const MEM: u8 = 1;
    pub(super) const CSR: u8 = 2;
    pub(super) const FENCE: u8 = 3;
}

/// Its frame size.
const FRAME: usize = 16;

/// The `gluon-sim-16` dialect.
pub struct Sim16;

fn addr32(a: u64) -> Result<u32, Error> {
    u32::try_from(a).map_err(|_| Error::OutOfRange)
}

impl Dialect for Sim16 {
    fn name(&self) -> &'static str {
        "gluon-sim-16"
    }

    fn id(&self) -> u32 {
        1
    }

    fn frame_size(&self) -> usize {
        FRAME
    }

    fn max_streams(&self) -> u8 {
        4
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
                f.put_u8(1, opcode::KERNEL);
                f.put_u32(2, addr32(host_addr)?);
                f.put_u32(6, size);
                f.put_u32(10, gpu_addr);
            }
            Command::Copy { src, dst, len, dir } => {
                f.put_u8(1, opcode::MEM);
                f.put_u8(2, mem::COPY);
                f.put_u32(3, addr32(src)?);
                f.put_u32(7, addr32(dst)?);
                f.put_u32(11, len);
                f.put_u8(15, copy_flags(dir));
            }
            Command::Set { dst, value, len } => {
                f.put_u8(1, opcode::MEM);
                f.put_u8(2, mem::SET);
                f.put_u32(3, dst);
                f.put_u32(7, value);
                f.put_u32(11, len);
            }
            Command::Fence => f.put_u8(1, opcode::FENCE),
            Command::ReadCounter { counter, dst } => {
                f.put_u8(1, opcode::CSR);
                f.put_u32(2, counter);
                f.put_u32(6, dst);
            }
            Command::Wait { .. } => return Err(Error::Unrepresentable),
        }
        Ok(f)
    }

    fn decode(&self, b: &[u8]) -> Result<(u8, Command), Error> {
        if b.len() != FRAME {
            return Err(Error::Malformed);
        }
        let cmd = match u8_at(b, 1)? {
            opcode::KERNEL => Command::Kernel {
                host_addr: u32_at(b, 2)?.into(),
                size: u32_at(b, 6)?,
                gpu_addr: u32_at(b, 10)?,
            },
            opcode::MEM => match u8_at(b, 2)? {
                mem::COPY => Command::Copy {
                    src: u32_at(b, 3)?.into(),
                    dst: u32_at(b, 7)?.into(),
                    len: u32_at(b, 11)?,
                    dir: copy_dir(u8_at(b, 15)?)?,
                },
                mem::SET => Command::Set {
                    dst: u32_at(b, 3)?,
                    value: u32_at(b, 7)?,
                    len: u32_at(b, 11)?,
                },
                _ => return Err(Error::Malformed),
            },
            opcode::CSR => Command::ReadCounter {
                counter: u32_at(b, 2)?,
                dst: u32_at(b, 6)?,
            },
            opcode::FENCE => Command::Fence,
            _ => return Err(Error::Malformed),
        };
        Ok((u8_at(b, 0)?, cmd))
    }
}

// Only its own bits: the flags byte has no others.
const _: () = assert!(copy_flags::D2H | copy_flags::D2D == 3);
