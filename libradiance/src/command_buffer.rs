// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queue commands (fill, copy, update, dispatch, barrier) and command
//! buffers: commands recorded once and executed on queues many times, each
//! time with its own wait and signal semaphores.

use crate::{Buffer, BufferRef, BufferUsage, Device, Error, Result};
use std::sync::Arc;

/// A fill value, repeated over the target range. The target offset and
/// length must be multiples of its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    U8(u8),
    U16(u16),
    U32(u32),
}

impl Pattern {
    /// Bytes in one repetition.
    pub fn size(self) -> u64 {
        match self {
            Self::U8(_) => 1,
            Self::U16(_) => 2,
            Self::U32(_) => 4,
        }
    }

    /// The pattern repeated to four little-endian bytes: byte `i` of a
    /// filled range gets byte `i % 4` of this.
    pub fn le_bytes(self) -> [u8; 4] {
        match self {
            Self::U8(v) => [v; 4],
            Self::U16(v) => {
                let [a, b] = v.to_le_bytes();
                [a, b, a, b]
            }
            Self::U32(v) => v.to_le_bytes(),
        }
    }
}

/// A kernel launch, as Gluon's LAUNCH_KERNEL takes it: the library's one
/// launch record. The C ABI's launch structs become one at the ABI, and the
/// kmod backend turns it into the uapi's `LaunchDesc`. Its fields keep their
/// names across those layers; only the released `radiance_launch_t` calls
/// `start_pc` `entry_pc`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Launch {
    /// The PC the device starts each thread at: start code, or the kernel
    /// itself (a `radiance_uapi::builtin` PC runs that built-in where the
    /// device has them).
    pub start_pc: u32,
    /// The kernel the start code at `start_pc` calls; 0 when there is no
    /// start code (the kernel is at `start_pc`). The built-in `START` runs
    /// the built-in at `kernel_pc`.
    pub kernel_pc: u32,
    /// Blocks per grid, x y z; each at least 1.
    pub grid: [u32; 3],
    /// Threads per block, x y z; each at least 1.
    pub block: [u32; 3],
    pub regs_per_thread: u8,
    pub shmem_per_block: u32,
    /// The kernel's parameter block (the built-ins read little-endian u32s).
    pub params: Vec<u8>,
    /// Device memory for the start code's stacks, and for thread-local
    /// storage; on the kmod backend, ranges of its own device buffers. The
    /// backends that run the built-ins themselves (host, cuda) have no
    /// start code and ignore them.
    pub stack: Option<DeviceRange>,
    pub tls: Option<DeviceRange>,
}

/// A range of a device buffer that a launch is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRange {
    pub buffer: Buffer,
    pub offset: u64,
    pub size: u64,
}

impl Launch {
    /// Fails a launch with an empty grid or block. The error is built out of
    /// line: every dispatch makes the check.
    #[inline]
    pub(crate) fn check_dimensions(&self) -> Result<()> {
        #[cold]
        fn empty(launch: &Launch) -> Error {
            Error::InvalidArgument(format!(
                "grid {:?} and block {:?} dimensions must be at least 1",
                launch.grid, launch.block
            ))
        }
        // One test of the smallest: `contains` tests and branches six times.
        let ([gx, gy, gz], [bx, by, bz]) = (self.grid, self.block);
        if gx.min(gy).min(gz).min(bx).min(by).min(bz) == 0 {
            return Err(empty(self));
        }
        Ok(())
    }

    /// `kernel_pc` as the device gets it: `start_pc` when there is no start
    /// code.
    pub fn kernel_pc(&self) -> u32 {
        if self.kernel_pc == 0 {
            self.start_pc
        } else {
            self.kernel_pc
        }
    }

    /// The kernel that runs: the one the built-in start code calls, else
    /// the one at `start_pc`. For backends that run the built-ins
    /// themselves.
    pub fn kernel(&self) -> u32 {
        if self.start_pc == radiance_uapi::builtin::START {
            self.kernel_pc()
        } else {
            self.start_pc
        }
    }

    /// Threads in the whole grid (saturating: six u32 factors can overflow
    /// a u64).
    pub fn threads(&self) -> u64 {
        // Unrolled: an iterator chain costs a launch measurably more. Each
        // product of two u32s fits.
        let ([gx, gy, gz], [bx, by, bz]) = (self.grid.map(u64::from), self.block.map(u64::from));
        (gx * gy).saturating_mul(gz * bx).saturating_mul(by * bz)
    }
}

/// One queue command, checked when it is made. Made by the queue methods and
/// by [`CommandBufferBuilder`]; a backend runs it.
pub struct Command(pub(crate) Op);

/// What a command does. Ranges are inside their buffers, fills are aligned to
/// their pattern, and copies do not overlap.
pub(crate) enum Op {
    Fill {
        target: Buffer,
        offset: u64,
        length: u64,
        pattern: Pattern,
    },
    Copy {
        source: Buffer,
        source_offset: u64,
        target: Buffer,
        target_offset: u64,
        length: u64,
    },
    Update {
        data: Box<[u8]>,
        target: Buffer,
        offset: u64,
    },
    Dispatch(Launch),
    /// Commands after it start only when those before it have finished.
    Barrier,
}

impl Command {
    /// Fills `length` bytes from `target` with `pattern`.
    pub fn fill(target: BufferRef<'_>, length: u64, pattern: Pattern) -> Result<Self> {
        let BufferRef { buffer, offset } = target;
        buffer.check_usage(BufferUsage::TRANSFER, "fill")?;
        buffer.check_range(offset, length)?;
        if offset % pattern.size() != 0 || length % pattern.size() != 0 {
            return Err(Error::InvalidArgument(format!(
                "fill offset {offset} and length {length} must be multiples of the {}-byte pattern",
                pattern.size()
            )));
        }
        Ok(Self(Op::Fill { target: buffer.clone(), offset, length, pattern }))
    }

    /// Copies `length` bytes from `source` to `target` (ranges must not
    /// overlap).
    pub fn copy(source: BufferRef<'_>, target: BufferRef<'_>, length: u64) -> Result<Self> {
        source.buffer.check_usage(BufferUsage::TRANSFER, "copy")?;
        target.buffer.check_usage(BufferUsage::TRANSFER, "copy")?;
        source.buffer.device().check_same(target.buffer.device(), "the copy target")?;
        source.buffer.check_range(source.offset, length)?;
        target.buffer.check_range(target.offset, length)?;
        if source.buffer.is(target.buffer)
            && source.offset < target.offset + length
            && target.offset < source.offset + length
        {
            return Err(Error::InvalidArgument("copy source and target overlap".into()));
        }
        Ok(Self(Op::Copy {
            source: source.buffer.clone(),
            source_offset: source.offset,
            target: target.buffer.clone(),
            target_offset: target.offset,
            length,
        }))
    }

    /// Writes `data` (captured now) to `target`.
    pub fn update(data: &[u8], target: BufferRef<'_>) -> Result<Self> {
        let BufferRef { buffer, offset } = target;
        buffer.check_usage(BufferUsage::TRANSFER, "update")?;
        buffer.check_range(offset, data.len() as u64)?;
        Ok(Self(Op::Update { data: data.into(), target: buffer.clone(), offset }))
    }

    /// Launches a kernel.
    #[inline]
    pub fn dispatch(launch: Launch) -> Result<Self> {
        launch.check_dimensions()?;
        Ok(Self(Op::Dispatch(launch)))
    }

    /// Orders the commands of one submission: everything after it waits for
    /// everything before it.
    pub fn barrier() -> Self {
        Self(Op::Barrier)
    }

    /// Fails unless every buffer of the command belongs to `device`.
    pub(crate) fn check_device(&self, device: &Device) -> Result<()> {
        match &self.0 {
            Op::Fill { target, .. } | Op::Update { target, .. } | Op::Copy { target, .. } => {
                device.check_same(target.device(), "a command's buffer")
            }
            Op::Dispatch(_) | Op::Barrier => Ok(()),
        }
    }
}

/// Records commands for a [`CommandBuffer`].
pub struct CommandBufferBuilder {
    device: Device,
    commands: Vec<Command>,
}

impl CommandBufferBuilder {
    pub(crate) fn new(device: Device) -> Self {
        Self { device, commands: Vec::new() }
    }

    /// Appends a command made by one of [`Command`]'s constructors.
    pub fn record(&mut self, command: Command) -> Result<&mut Self> {
        command.check_device(&self.device)?;
        self.commands.push(command);
        Ok(self)
    }

    /// Ends recording.
    pub fn finish(self) -> CommandBuffer {
        CommandBuffer { device: self.device, commands: self.commands.into() }
    }
}

/// Recorded commands, immutable; execute them with [`crate::Queue::execute`]
/// as often as wanted. Clones share the recording.
#[derive(Clone)]
pub struct CommandBuffer {
    device: Device,
    commands: Arc<[Command]>,
}

impl CommandBuffer {
    /// The device whose queues can execute it.
    pub fn device(&self) -> &Device {
        &self.device
    }

    pub(crate) fn commands(&self) -> &Arc<[Command]> {
        &self.commands
    }

    /// Number of recorded commands.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_count_saturates() {
        let launch = |d| Launch { grid: [d; 3], block: [d; 3], ..Default::default() };
        assert_eq!(launch(2).threads(), 64);
        assert_eq!(launch(u32::MAX).threads(), u64::MAX);
    }
}
