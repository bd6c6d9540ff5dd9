// SPDX-License-Identifier: GPL-2.0

//! The module's tracepoints, each through its function in
//! `kmod/radiance_trace.c` (a tracepoint's `trace_*()` is a C inline that
//! Rust cannot expand, and `kernel::tracepoint::declare_trace!` needs the
//! tracepoint in the kernel's own bindings, which a module cannot add to).
//! The events and their fields are in `kmod/radiance_trace.h`; what they
//! mean is the driver's business (`crate::trace`).

extern "C" {
    fn radiance_trace_packet(
        dev: u32,
        pid: i32,
        queue: u32,
        index: u64,
        kind: u32,
        stream: u32,
        commands: u32,
    );
    fn radiance_trace_packet_done(dev: u32, pid: i32, queue: u32, index: u64, error: u32);
    fn radiance_trace_cmd_issue(
        dev: u32,
        stream: u32,
        id: u64,
        pid: i32,
        queue: u32,
        index: u64,
        op: u32,
        units: u64,
    );
    fn radiance_trace_cmd_done(
        dev: u32,
        stream: u32,
        id: u64,
        pid: i32,
        queue: u32,
        index: u64,
        status: u32,
        pc: u32,
        warp: u32,
    );
    fn radiance_trace_sem_enabled() -> bool;
    fn radiance_trace_sem_signal(
        dev: u32,
        pid: i32,
        queue: u32,
        index: u64,
        handle: u32,
        sem: u64,
        value: u64,
        error: u32,
    );
    fn radiance_trace_wait_done(
        dev: u32,
        pid: i32,
        queue: u32,
        index: u64,
        handle: u32,
        sem: u64,
        value: u64,
    );
    fn radiance_trace_reset(dev: u32, stream: u32, resets: u64);
    fn radiance_trace_user_io(dev: u32, read: bool, bytes: u32);
}

// SAFETY (every function below): each C function takes only integers,
// copies them into the trace buffer if its event is on, and may be called
// from any context, atomic ones included, as a tracepoint may.

/// `radiance_packet`: a packet taken from its queue.
pub(crate) fn packet(
    dev: u32,
    pid: i32,
    queue: u32,
    index: u64,
    kind: u32,
    stream: u32,
    commands: u32,
) {
    // SAFETY: see above.
    unsafe { radiance_trace_packet(dev, pid, queue, index, kind, stream, commands) }
}

/// `radiance_packet_done`: a packet completed, or its queue faulted there.
pub(crate) fn packet_done(dev: u32, pid: i32, queue: u32, index: u64, error: u32) {
    // SAFETY: see above.
    unsafe { radiance_trace_packet_done(dev, pid, queue, index, error) }
}

/// `radiance_cmd_issue`: a device command given to the device.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cmd_issue(
    dev: u32,
    stream: u32,
    id: u64,
    pid: i32,
    queue: u32,
    index: u64,
    op: u32,
    units: u64,
) {
    // SAFETY: see above.
    unsafe { radiance_trace_cmd_issue(dev, stream, id, pid, queue, index, op, units) }
}

/// `radiance_cmd_done`: a device command's response.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cmd_done(
    dev: u32,
    stream: u32,
    id: u64,
    pid: i32,
    queue: u32,
    index: u64,
    status: u32,
    pc: u32,
    warp: u32,
) {
    // SAFETY: see above.
    unsafe { radiance_trace_cmd_done(dev, stream, id, pid, queue, index, status, pc, warp) }
}

/// Whether a semaphore event is on (its semaphore's id costs a lookup).
pub(crate) fn sem_enabled() -> bool {
    // SAFETY: see above; it takes nothing.
    unsafe { radiance_trace_sem_enabled() }
}

/// `radiance_sem_signal`: a semaphore raised or failed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sem_signal(
    dev: u32,
    pid: i32,
    queue: u32,
    index: u64,
    handle: u32,
    sem: u64,
    value: u64,
    error: u32,
) {
    // SAFETY: see above.
    unsafe { radiance_trace_sem_signal(dev, pid, queue, index, handle, sem, value, error) }
}

/// `radiance_wait_done`: a queue's wait satisfied.
pub(crate) fn wait_done(
    dev: u32,
    pid: i32,
    queue: u32,
    index: u64,
    handle: u32,
    sem: u64,
    value: u64,
) {
    // SAFETY: see above.
    unsafe { radiance_trace_wait_done(dev, pid, queue, index, handle, sem, value) }
}

/// `radiance_reset`: the device reset.
pub(crate) fn reset(dev: u32, stream: u32, resets: u64) {
    // SAFETY: see above.
    unsafe { radiance_trace_reset(dev, stream, resets) }
}

/// `radiance_user_io`: a served device's server read frames or answered.
pub(crate) fn user_io(dev: u32, read: bool, bytes: u32) {
    // SAFETY: see above.
    unsafe { radiance_trace_user_io(dev, read, bytes) }
}
