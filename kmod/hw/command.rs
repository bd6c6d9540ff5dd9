// SPDX-License-Identifier: GPL-2.0

//! Gluon's command and response formats.
//!
//! - Command header: 16 bytes written to the command FIFO: byte 0 opcode,
//!   byte 1 command ID, bytes 2..16 arguments (little-endian). Headers issue
//!   in order; the device may execute them out of order but completes them
//!   in order; FENCE drains everything before it.
//! - Response: 16 bytes popped from the response FIFO, one per command, in
//!   command order: CMD_ID, ERR_CODE (0: success), ERR_PC, ERR_THREAD.
//! - Addresses are 32-bit: VRAM addresses, or host DMA addresses for the
//!   host side of a COPY and for launch blocks.

/// A command, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// DMA `size` bytes of launch block from host `host_addr` to VRAM
    /// `gpu_addr`, then run the kernel it describes.
    LaunchKernel {
        host_addr: u32,
        size: u32,
        gpu_addr: u32,
    },
    /// Copy `len` bytes.
    Copy {
        src: u32,
        dst: u32,
        len: u32,
        dir: CopyDir,
    },
    /// Fill `len` VRAM bytes at `dst` with the 4-byte little-endian
    /// `pattern`, phase-aligned to `dst`.
    Memset { dst: u32, pattern: u32, len: u32 },
    /// Write device counter `counter` (a little-endian u64) to VRAM `dst`.
    ReadCounter { counter: u32, dst: u32 },
    /// Wait for every earlier command.
    Fence,
}

/// Where a COPY's source and destination live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyDir {
    /// Host DMA address to VRAM.
    HostToDevice = 1,
    /// VRAM to host DMA address.
    DeviceToHost = 2,
    /// VRAM to VRAM.
    DeviceToDevice = 3,
}

mod opcode {
    pub(super) const LAUNCH_KERNEL: u8 = 1;
    pub(super) const COPY: u8 = 2;
    pub(super) const MEMSET: u8 = 3;
    pub(super) const READ_COUNTER: u8 = 4;
    pub(super) const FENCE: u8 = 5;
}

/// `ERR_CODE` values of a response: part of the ABI, since queue faults
/// report them to processes.
pub(crate) use crate::uapi::gluon_err as err;

fn u32_at(b: &[u8; 16], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Command {
    /// The 16-byte header with command ID `id`.
    pub(crate) fn encode(&self, id: u8) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[1] = id;
        let mut put = |at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let op = match *self {
            Self::LaunchKernel {
                host_addr,
                size,
                gpu_addr,
            } => {
                put(4, host_addr);
                put(8, size);
                put(12, gpu_addr);
                opcode::LAUNCH_KERNEL
            }
            Self::Copy { src, dst, len, dir } => {
                put(4, src);
                put(8, dst);
                put(12, len);
                b[2] = dir as u8;
                opcode::COPY
            }
            Self::Memset { dst, pattern, len } => {
                put(4, dst);
                put(8, pattern);
                put(12, len);
                opcode::MEMSET
            }
            Self::ReadCounter { counter, dst } => {
                put(4, counter);
                put(8, dst);
                opcode::READ_COUNTER
            }
            Self::Fence => opcode::FENCE,
        };
        b[0] = op;
        b
    }

    /// Decodes a header (the device's side): the ID and the command, or
    /// `None` for a malformed one.
    pub(crate) fn decode(b: &[u8; 16]) -> (u8, Option<Self>) {
        let cmd = match b[0] {
            opcode::LAUNCH_KERNEL => Some(Self::LaunchKernel {
                host_addr: u32_at(b, 4),
                size: u32_at(b, 8),
                gpu_addr: u32_at(b, 12),
            }),
            opcode::COPY => {
                let dir = match b[2] {
                    1 => Some(CopyDir::HostToDevice),
                    2 => Some(CopyDir::DeviceToHost),
                    3 => Some(CopyDir::DeviceToDevice),
                    _ => None,
                };
                dir.map(|dir| Self::Copy {
                    src: u32_at(b, 4),
                    dst: u32_at(b, 8),
                    len: u32_at(b, 12),
                    dir,
                })
            }
            opcode::MEMSET => Some(Self::Memset {
                dst: u32_at(b, 4),
                pattern: u32_at(b, 8),
                len: u32_at(b, 12),
            }),
            opcode::READ_COUNTER => Some(Self::ReadCounter {
                counter: u32_at(b, 4),
                dst: u32_at(b, 8),
            }),
            opcode::FENCE => Some(Self::Fence),
            _ => None,
        };
        (b[1], cmd)
    }
}

/// A response, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) id: u8,
    /// 0 on success, else one of [`err`].
    pub(crate) err_code: u8,
    pub(crate) err_pc: u32,
    pub(crate) err_thread: u32,
}

impl Response {
    pub(crate) fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0] = self.id;
        b[1] = self.err_code;
        b[4..8].copy_from_slice(&self.err_pc.to_le_bytes());
        b[8..12].copy_from_slice(&self.err_thread.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; 16]) -> Self {
        Self {
            id: b[0],
            err_code: b[1],
            err_pc: u32_at(b, 4),
            err_thread: u32_at(b, 8),
        }
    }
}

#[kernel::prelude::kunit_tests(radiance_command)]
mod tests {
    use super::*;

    const COMMANDS: [Command; 7] = [
        Command::LaunchKernel {
            host_addr: 0x1234_5000,
            size: 0x40,
            gpu_addr: 0x100,
        },
        Command::Copy {
            src: 0x8000_0000,
            dst: 0x1_0000,
            len: 4096,
            dir: CopyDir::HostToDevice,
        },
        Command::Copy {
            src: 0x1_0000,
            dst: 0x8000_1000,
            len: 1,
            dir: CopyDir::DeviceToHost,
        },
        Command::Copy {
            src: 0x2_0000,
            dst: 0x3_0000,
            len: u32::MAX,
            dir: CopyDir::DeviceToDevice,
        },
        Command::Memset {
            dst: 0xffff_ff00,
            pattern: 0xdead_beef,
            len: 256,
        },
        Command::ReadCounter {
            counter: 2,
            dst: 0x1_0008,
        },
        Command::Fence,
    ];

    #[test]
    fn commands_round_trip() {
        for (id, cmd) in (248u8..=254).zip(COMMANDS) {
            assert_eq!(Command::decode(&cmd.encode(id)), (id, Some(cmd)));
        }
    }

    #[test]
    fn encoding_puts_fields_where_the_device_reads_them() {
        let b = Command::Copy {
            src: 0x0403_0201,
            dst: 0x0807_0605,
            len: 0x0c0b_0a09,
            dir: CopyDir::DeviceToHost,
        }
        .encode(7);
        assert_eq!(
            b,
            [opcode::COPY, 7, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        );
    }

    #[test]
    fn malformed_commands_decode_to_none() {
        let mut bad_op = Command::Fence.encode(3);
        bad_op[0] = 0xee;
        assert_eq!(Command::decode(&bad_op), (3, None));
        let mut bad_dir = COMMANDS[1].encode(4);
        bad_dir[2] = 9;
        assert_eq!(Command::decode(&bad_dir), (4, None));
    }

    #[test]
    fn responses_round_trip() {
        let r = Response {
            id: 9,
            err_code: err::BAD_PC,
            err_pc: 0x8000_0010,
            err_thread: 77,
        };
        assert_eq!(Response::decode(&r.encode()), r);
        assert_eq!(Response::decode(&[0; 16]), Response::default());
    }
}
