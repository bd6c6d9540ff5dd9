// SPDX-License-Identifier: GPL-2.0 OR MIT

//! C arguments of queue commands and semaphore lists, turned into the Rust
//! types; shared by the queue calls and the command buffer recording calls.

use super::handle::{get, slice};
use crate::{Buffer, Command, Error, Launch, Pattern, Result, Semaphore};
use std::ffi::c_void;

/// `radiance_semaphore_list_t`.
#[repr(C)]
pub struct SemaphoreList {
    count: usize,
    semaphores: *const *const Semaphore,
    values: *const u64,
}

impl SemaphoreList {
    /// The (semaphore, value) pairs.
    ///
    /// # Safety
    /// The arrays hold `count` elements and every semaphore is a live handle.
    pub(super) unsafe fn points(&self) -> Result<Vec<(&Semaphore, u64)>> {
        // SAFETY: per this function's contract.
        let semaphores = unsafe { slice(self.semaphores, self.count, "semaphore list")? };
        // SAFETY: per this function's contract.
        let values = unsafe { slice(self.values, self.count, "semaphore value list")? };
        semaphores
            .iter()
            .zip(values)
            // SAFETY: per this function's contract.
            .map(|(&s, &v)| Ok((unsafe { get(s, "a semaphore in a list") }?, v)))
            .collect()
    }
}

/// `radiance_launch_t`.
#[repr(C)]
pub struct LaunchDesc {
    entry_pc: u32,
    grid: [u32; 3],
    block: [u32; 3],
    shmem_per_block: u32,
    regs_per_thread: u8,
    params: *const c_void,
    params_length: usize,
    kernel_pc: u32,
}

/// A fill command from C arguments: the pattern is 1, 2 or 4 bytes.
///
/// # Safety
/// `buffer` is NULL or a live handle; `pattern` holds `pattern_length` bytes.
pub(super) unsafe fn fill(
    buffer: *const Buffer,
    offset: u64,
    length: u64,
    pattern: *const c_void,
    pattern_length: usize,
) -> Result<Command> {
    // SAFETY: per this function's contract.
    let (buffer, bytes) =
        unsafe { (get(buffer, "target buffer")?, slice(pattern.cast::<u8>(), pattern_length, "pattern")?) };
    let pattern = match *bytes {
        [a] => Pattern::U8(a),
        [a, b] => Pattern::U16(u16::from_ne_bytes([a, b])),
        [a, b, c, d] => Pattern::U32(u32::from_ne_bytes([a, b, c, d])),
        _ => return Err(Error::InvalidArgument(format!("a fill pattern is 1, 2 or 4 bytes, not {pattern_length}"))),
    };
    Command::fill(buffer.at(offset), length, pattern)
}

/// A copy command from C arguments.
///
/// # Safety
/// Both buffers are NULL or live handles.
pub(super) unsafe fn copy(
    source: *const Buffer,
    source_offset: u64,
    target: *const Buffer,
    target_offset: u64,
    length: u64,
) -> Result<Command> {
    // SAFETY: per this function's contract.
    let (source, target) = unsafe { (get(source, "source buffer")?, get(target, "target buffer")?) };
    Command::copy(source.at(source_offset), target.at(target_offset), length)
}

/// An update command from C arguments (the bytes are copied now).
///
/// # Safety
/// `source` holds `length` bytes; `target` is NULL or a live handle.
pub(super) unsafe fn update(
    source: *const c_void,
    target: *const Buffer,
    target_offset: u64,
    length: usize,
) -> Result<Command> {
    // SAFETY: per this function's contract.
    let (data, target) =
        unsafe { (slice(source.cast::<u8>(), length, "update source")?, get(target, "target buffer")?) };
    Command::update(data, target.at(target_offset))
}

/// A dispatch command from a C launch description.
///
/// # Safety
/// As [`launch`].
pub(super) unsafe fn dispatch(launch: *const LaunchDesc) -> Result<Command> {
    // SAFETY: per this function's contract.
    Command::dispatch(unsafe { self::launch(launch) }?)
}

/// A launch from a C launch description.
///
/// # Safety
/// `launch` is NULL or valid, and its params hold `params_length` bytes.
pub(super) unsafe fn launch(launch: *const LaunchDesc) -> Result<Launch> {
    // SAFETY: per this function's contract.
    let l = unsafe { get(launch, "launch")? };
    // SAFETY: per this function's contract.
    let params = unsafe { slice(l.params.cast::<u8>(), l.params_length, "launch params")? };
    Ok(Launch {
        start_pc: l.entry_pc,
        kernel_pc: l.kernel_pc,
        grid: l.grid,
        block: l.block,
        regs_per_thread: l.regs_per_thread,
        shmem_per_block: l.shmem_per_block,
        params: params.to_vec(),
        ..Default::default()
    })
}
