// SPDX-License-Identifier: GPL-2.0

//! What the driver tells the kernel's tracing (tracefs `events/radiance/`;
//! the events are defined in `radiance_trace.h`): the life of a packet
//! (taken from its queue, its device commands issued and answered, the
//! packet completed or faulted), semaphores raised and waits satisfied,
//! resets, and a served device's server at work. An event that is off
//! costs a call and a static-key test; a semaphore's id, which needs a
//! lookup, is looked up only while a semaphore event is on.

use crate::{
    gluon::Command,
    queue::Queue,
    semaphore::Semaphores,
    wrappers::trace as tp, //
};

/// A packet or signal with no queue (a process's SEM_SIGNAL or SEM_FAIL):
/// its queue and index in the events.
const NO_QUEUE: (u32, u64) = (u32::MAX, u64::MAX);

/// A device command's op in the events (`radiance_commands` in the header).
fn op(cmd: &Command) -> u32 {
    match cmd {
        Command::Copy { .. } => 0,
        Command::Set { .. } => 1,
        Command::Kernel { .. } => 2,
        Command::Fence => 3,
        Command::Wait { .. } => 4,
        Command::ReadCounter { .. } => 5,
    }
}

/// Packet `index` of `queue`, of `kind`, taken: `commands` device commands
/// on `stream`.
pub(crate) fn packet(dev: u32, queue: &Queue, index: u64, kind: u8, stream: u8, commands: usize) {
    let commands = u32::try_from(commands).unwrap_or(u32::MAX);
    tp::packet(
        dev,
        queue.tgid,
        queue.id,
        index,
        kind.into(),
        stream.into(),
        commands,
    );
}

/// Packet `index` of `queue` completed (`error` 0) or faulted.
pub(crate) fn packet_done(dev: u32, queue: &Queue, index: u64, error: u32) {
    tp::packet_done(dev, queue.tgid, queue.id, index, error);
}

/// Command `id` of packet `index` of `queue` issued on `stream`, `units`
/// bytes or threads.
pub(crate) fn cmd_issue(
    dev: u32,
    stream: u8,
    id: u64,
    queue: &Queue,
    index: u64,
    cmd: &Command,
    units: u64,
) {
    tp::cmd_issue(
        dev,
        stream.into(),
        id,
        queue.tgid,
        queue.id,
        index,
        op(cmd),
        units,
    );
}

/// Command `id` on `stream`, of packet `index` of `queue`, answered.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cmd_done(
    dev: u32,
    stream: u8,
    id: u64,
    queue: &Queue,
    index: u64,
    status: u32,
    pc: u32,
    warp: u32,
) {
    tp::cmd_done(
        dev,
        stream.into(),
        id,
        queue.tgid,
        queue.id,
        index,
        status,
        pc,
        warp,
    );
}

/// Semaphore `handle` of `sems` raised to `value` (`error` 0) or failed,
/// by packet `at` (queue and index) of `pid`, or by `pid` itself (None).
pub(crate) fn sem_signal(
    dev: u32,
    pid: i32,
    at: Option<(&Queue, u64)>,
    sems: &Semaphores,
    handle: u32,
    value: u64,
    error: u32,
) {
    if !tp::sem_enabled() {
        return;
    }
    let (queue, index) = at.map_or(NO_QUEUE, |(q, i)| (q.id, i));
    let sem = sems.id(handle).unwrap_or(0);
    tp::sem_signal(dev, pid, queue, index, handle, sem, value, error);
}

/// Packet `index` of `queue`, a WAIT_SEMAPHORE on `handle` for `value`,
/// found it reached.
pub(crate) fn wait_done(dev: u32, queue: &Queue, index: u64, handle: u32, value: u64) {
    if !tp::sem_enabled() {
        return;
    }
    let sem = queue.objects().semaphores().id(handle).unwrap_or(0);
    tp::wait_done(dev, queue.tgid, queue.id, index, handle, sem, value);
}

/// The device reset, for `stream` (None: asked for), its `resets`th.
pub(crate) fn reset(dev: u32, stream: Option<usize>, resets: u64) {
    let stream = stream
        .and_then(|s| u32::try_from(s).ok())
        .unwrap_or(u32::MAX);
    tp::reset(dev, stream, resets);
}

/// A served device's server read (`read`) or answered `bytes`.
pub(crate) fn user_io(dev: u32, read: bool, bytes: usize) {
    tp::user_io(dev, read, u32::try_from(bytes).unwrap_or(u32::MAX));
}
