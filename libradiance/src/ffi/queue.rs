// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance_queue_*` and `radiance_command_buffer_*`.

use super::{
    command::{self, LaunchDesc, SemaphoreList},
    handle::{self, get, put, retain_release},
    status::{call, StatusPtr},
};
use crate::{
    lock::lock, //
    Buffer,
    Command,
    CommandBuffer,
    CommandBufferBuilder,
    Device,
    Error,
    Points,
    Queue,
    Result,
};
use std::{ffi::c_void, sync::Mutex};

/// `radiance_queue_create`.
#[no_mangle]
pub extern "C" fn radiance_queue_create(device: *const Device, out_queue: *mut *mut Queue) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let queue = unsafe { get(device, "device") }?.create_queue()?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_queue, handle::new(queue)) }
    })
}

retain_release!(Queue, radiance_queue_retain, radiance_queue_release);

/// Runs a queue operation on C arguments.
fn with_queue(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
    op: impl FnOnce(&Queue, Points<'_>, Points<'_>) -> Result<()>,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes live handles and valid lists.
        let (queue, waits, signals) = unsafe { (get(queue, "queue")?, waits.points()?, signals.points()?) };
        op(queue, &waits, &signals)
    })
}

/// Queues a command made from C arguments.
fn submit(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
    command: impl FnOnce() -> Result<Command>,
) -> StatusPtr {
    with_queue(queue, waits, signals, |queue, waits, signals| queue.submit_command(waits, signals, command()?))
}

/// `radiance_queue_fill`: fills `length` bytes at `offset` with a 1, 2 or
/// 4-byte pattern.
#[no_mangle]
pub extern "C" fn radiance_queue_fill(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
    buffer: *const Buffer,
    offset: u64,
    length: u64,
    pattern: *const c_void,
    pattern_length: usize,
) -> StatusPtr {
    // SAFETY: the caller passes a live handle and a pattern of that length.
    submit(queue, waits, signals, || unsafe { command::fill(buffer, offset, length, pattern, pattern_length) })
}

/// `radiance_queue_copy`: copies between non-overlapping buffer ranges.
#[no_mangle]
pub extern "C" fn radiance_queue_copy(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
    source: *const Buffer,
    source_offset: u64,
    target: *const Buffer,
    target_offset: u64,
    length: u64,
) -> StatusPtr {
    // SAFETY: the caller passes live handles.
    submit(queue, waits, signals, || unsafe { command::copy(source, source_offset, target, target_offset, length) })
}

/// `radiance_queue_update`: writes `length` host bytes (copied before the
/// call returns) to a buffer.
#[no_mangle]
pub extern "C" fn radiance_queue_update(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
    source: *const c_void,
    target: *const Buffer,
    target_offset: u64,
    length: usize,
) -> StatusPtr {
    // SAFETY: the caller passes `length` readable bytes and a live handle.
    submit(queue, waits, signals, || unsafe { command::update(source, target, target_offset, length) })
}

/// `radiance_queue_dispatch`: launches a kernel.
#[no_mangle]
pub extern "C" fn radiance_queue_dispatch(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
    launch: *const LaunchDesc,
) -> StatusPtr {
    // Through `Queue::dispatch`: a launch with no waits and no signals goes
    // straight to a backend that queues it at once (cuda), not as a command.
    with_queue(queue, waits, signals, |queue, waits, signals| {
        // SAFETY: the caller passes a valid launch description.
        queue.dispatch(waits, signals, unsafe { command::launch(launch) }?)
    })
}

/// `radiance_queue_barrier`: waits, then signals.
#[no_mangle]
pub extern "C" fn radiance_queue_barrier(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
) -> StatusPtr {
    with_queue(queue, waits, signals, |queue, waits, signals| queue.barrier(waits, signals))
}

/// A command buffer handle: recording until `radiance_command_buffer_end`,
/// then executable.
pub enum CommandBufferHandle {
    Recording(CommandBufferBuilder),
    Ended(CommandBuffer),
    /// Only while `end` swaps the state.
    Empty,
}

/// `radiance_command_buffer_create`: starts recording.
#[no_mangle]
pub extern "C" fn radiance_command_buffer_create(
    device: *const Device,
    out_command_buffer: *mut *mut Mutex<CommandBufferHandle>,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let builder = unsafe { get(device, "device") }?.command_buffer();
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_command_buffer, handle::new(Mutex::new(CommandBufferHandle::Recording(builder)))) }
    })
}

retain_release!(Mutex<CommandBufferHandle>, radiance_command_buffer_retain, radiance_command_buffer_release);

/// Records a command made from C arguments.
fn record(command_buffer: *const Mutex<CommandBufferHandle>, command: impl FnOnce() -> Result<Command>) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let mut state = lock(unsafe { get(command_buffer, "command buffer") }?);
        match &mut *state {
            CommandBufferHandle::Recording(builder) => builder.record(command()?).map(|_| ()),
            _ => Err(Error::InvalidArgument("the command buffer has ended recording".into())),
        }
    })
}

/// `radiance_command_buffer_fill`: records a fill (as `radiance_queue_fill`).
#[no_mangle]
pub extern "C" fn radiance_command_buffer_fill(
    command_buffer: *const Mutex<CommandBufferHandle>,
    buffer: *const Buffer,
    offset: u64,
    length: u64,
    pattern: *const c_void,
    pattern_length: usize,
) -> StatusPtr {
    // SAFETY: as `radiance_queue_fill`.
    record(command_buffer, || unsafe { command::fill(buffer, offset, length, pattern, pattern_length) })
}

/// `radiance_command_buffer_copy`: records a copy.
#[no_mangle]
pub extern "C" fn radiance_command_buffer_copy(
    command_buffer: *const Mutex<CommandBufferHandle>,
    source: *const Buffer,
    source_offset: u64,
    target: *const Buffer,
    target_offset: u64,
    length: u64,
) -> StatusPtr {
    // SAFETY: as `radiance_queue_copy`.
    record(command_buffer, || unsafe { command::copy(source, source_offset, target, target_offset, length) })
}

/// `radiance_command_buffer_update`: records an update; the bytes are copied
/// now.
#[no_mangle]
pub extern "C" fn radiance_command_buffer_update(
    command_buffer: *const Mutex<CommandBufferHandle>,
    source: *const c_void,
    target: *const Buffer,
    target_offset: u64,
    length: usize,
) -> StatusPtr {
    // SAFETY: as `radiance_queue_update`.
    record(command_buffer, || unsafe { command::update(source, target, target_offset, length) })
}

/// `radiance_command_buffer_dispatch`: records a launch.
#[no_mangle]
pub extern "C" fn radiance_command_buffer_dispatch(
    command_buffer: *const Mutex<CommandBufferHandle>,
    launch: *const LaunchDesc,
) -> StatusPtr {
    // SAFETY: as `radiance_queue_dispatch`.
    record(command_buffer, || unsafe { command::dispatch(launch) })
}

/// `radiance_command_buffer_barrier`: records an execution barrier.
#[no_mangle]
pub extern "C" fn radiance_command_buffer_barrier(command_buffer: *const Mutex<CommandBufferHandle>) -> StatusPtr {
    record(command_buffer, || Ok(Command::barrier()))
}

/// `radiance_command_buffer_end`: ends recording; the command buffer can
/// now be executed any number of times.
#[no_mangle]
pub extern "C" fn radiance_command_buffer_end(command_buffer: *const Mutex<CommandBufferHandle>) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let mut state = lock(unsafe { get(command_buffer, "command buffer") }?);
        match std::mem::replace(&mut *state, CommandBufferHandle::Empty) {
            CommandBufferHandle::Recording(builder) => {
                *state = CommandBufferHandle::Ended(builder.finish());
                Ok(())
            }
            other => {
                *state = other;
                Err(Error::InvalidArgument("the command buffer has already ended recording".into()))
            }
        }
    })
}

/// `radiance_queue_execute`: runs an ended command buffer.
#[no_mangle]
pub extern "C" fn radiance_queue_execute(
    queue: *const Queue,
    waits: SemaphoreList,
    signals: SemaphoreList,
    command_buffer: *const Mutex<CommandBufferHandle>,
) -> StatusPtr {
    with_queue(queue, waits, signals, |queue, waits, signals| {
        // SAFETY: the caller passes a live handle.
        let state = unsafe { get(command_buffer, "command buffer") }?;
        // Cloned (a reference count) so the lock is not held while queueing.
        let commands = match &*lock(state) {
            CommandBufferHandle::Ended(commands) => commands.clone(),
            _ => return Err(Error::InvalidArgument("the command buffer is still recording".into())),
        };
        queue.execute(waits, signals, &commands)
    })
}
