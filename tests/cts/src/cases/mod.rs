// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The cases, one file per HAL concept, and what they share.

mod buffer;
mod command_buffer;
mod dispatch;
mod group;
mod queue;
mod semaphore;
mod transfer;

use crate::{check::ensure, Case, GroupCase, Outcome};
use radiance::{Buffer, BufferParams, BufferUsage, Device, Launch, MemoryType, Queue, Result, Semaphore};
use std::time::Duration;

/// Every case, in the order they run.
pub(crate) fn all() -> Vec<Case> {
    [semaphore::CASES, queue::CASES, transfer::CASES, dispatch::CASES, command_buffer::CASES, buffer::CASES].concat()
}

/// Every device-group case, in the order they run.
pub(crate) fn group() -> Vec<GroupCase> {
    group::CASES.to_vec()
}

/// Long enough for any backend to finish a small operation; a wait that
/// takes longer is a failure, not a hang.
const PATIENCE: Duration = Duration::from_secs(10);

/// Skips the case on devices without the built-in kernels: a device that
/// runs only real machine code faults at their entry PCs.
fn needs_builtins(device: &Device) -> Outcome {
    if device.info().builtin_kernels {
        Ok(())
    } else {
        Err(crate::Stop::Skip(format!("{} does not run the radiance_uapi::builtin kernels", device.info().backend)))
    }
}

/// A host-visible buffer usable for everything.
fn mappable(device: &Device, size: u64) -> Result<Buffer> {
    device.allocate_buffer(BufferParams {
        size,
        memory: MemoryType::HostVisible,
        usage: BufferUsage::TRANSFER | BufferUsage::DISPATCH | BufferUsage::MAPPING,
    })
}

/// A device-memory buffer for transfers and kernels.
fn device_buffer(device: &Device, size: u64) -> Result<Buffer> {
    device.allocate_buffer(BufferParams {
        size,
        memory: MemoryType::Device,
        usage: BufferUsage::TRANSFER | BufferUsage::DISPATCH,
    })
}

/// Waits for `semaphore` to reach `value`, failing the case after
/// [`PATIENCE`].
fn reach(semaphore: &Semaphore, value: u64) -> Outcome {
    Ok(semaphore.wait(value, PATIENCE)?)
}

/// The whole contents of `buffer`: mapped when it is mappable, else copied
/// into a mappable buffer on `queue` first.
fn contents(queue: &Queue, buffer: &Buffer) -> std::result::Result<Vec<u8>, crate::Stop> {
    let mut bytes = vec![0; buffer.size() as usize];
    if buffer.params().usage.contains(BufferUsage::MAPPING) {
        buffer.map()?.read(0, &mut bytes)?;
        return Ok(bytes);
    }
    let staging = mappable(queue.device(), buffer.size())?;
    let done = queue.device().create_semaphore(0)?;
    queue.copy(&[], &[(&done, 1)], buffer.at(0), staging.at(0), buffer.size())?;
    reach(&done, 1)?;
    staging.map()?.read(0, &mut bytes)?;
    Ok(bytes)
}

/// Deterministic bytes that differ from position to position and seed to
/// seed (xorshift).
fn noise(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// A launch of `start_pc` with u32 parameters.
fn launch(start_pc: u32, grid: [u32; 3], block: [u32; 3], params: &[u32]) -> Launch {
    Launch {
        start_pc,
        grid,
        block,
        regs_per_thread: 16,
        params: params.iter().flat_map(|p| p.to_le_bytes()).collect(),
        ..Default::default()
    }
}

/// A buffer's device address as the u32 the built-ins take.
fn address(buffer: &Buffer) -> std::result::Result<u32, crate::Stop> {
    let a = buffer.device_address();
    ensure!(a != 0 && a <= u64::from(u32::MAX), "device address {a:#x} is not a non-zero 32-bit address");
    Ok(a as u32)
}
