// SPDX-License-Identifier: GPL-2.0

//! The module's tracepoints, each through its function in
//! `kmod/radiance_trace.c` (a tracepoint's `trace_*()` is a C inline that
//! Rust cannot expand, and `kernel::tracepoint::declare_trace!` needs the
//! tracepoint in the kernel's own bindings, which a module cannot add to).
//! The events and their fields are in `kmod/radiance_trace.h`; what they
//! mean is the driver's business (`crate::trace`).
//!
//! Built with `RADIANCE_NO_TRACE=y` (cfg `radiance_no_trace`) the module
//! has no tracepoints and these functions do nothing: the benchmark that
//! prices a tracepoint that is off compares the two builds.

/// Each event: its function here, its C function, its fields.
macro_rules! events {
    ($($(#[$doc:meta])* fn $name:ident => $c:ident($($arg:ident: $ty:ty),*);)*) => {
        // Each takes only integers, copies them into the trace buffer if its
        // event is on, and may be called from any context, atomic ones
        // included, as a tracepoint may.
        #[cfg(not(radiance_no_trace))]
        extern "C" {
            $(fn $c($($arg: $ty),*);)*
        }
        $(
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            pub(crate) fn $name($($arg: $ty),*) {
                #[cfg(not(radiance_no_trace))]
                {
                    // SAFETY: integers only, callable from any context.
                    unsafe { $c($($arg),*) }
                }
                #[cfg(radiance_no_trace)]
                let _ = ($($arg),*);
            }
        )*
    };
}

events! {
    /// `radiance_packet`: a packet taken from its queue.
    fn packet => radiance_trace_packet(
        dev: u32, pid: i32, queue: u32, index: u64, kind: u32, stream: u32, commands: u32
    );
    /// `radiance_packet_done`: a packet completed, or its queue faulted there.
    fn packet_done => radiance_trace_packet_done(dev: u32, pid: i32, queue: u32, index: u64, error: u32);
    /// `radiance_cmd_issue`: a device command given to the device.
    fn cmd_issue => radiance_trace_cmd_issue(
        dev: u32, stream: u32, id: u64, pid: i32, queue: u32, index: u64, op: u32, units: u64
    );
    /// `radiance_cmd_done`: a device command's response.
    fn cmd_done => radiance_trace_cmd_done(
        dev: u32, stream: u32, id: u64, pid: i32, queue: u32, index: u64, status: u32, pc: u32, warp: u32
    );
    /// `radiance_sem_signal`: a semaphore raised or failed.
    fn sem_signal => radiance_trace_sem_signal(
        dev: u32, pid: i32, queue: u32, index: u64, handle: u32, sem: u64, value: u64, error: u32
    );
    /// `radiance_wait_done`: a queue's wait satisfied.
    fn wait_done => radiance_trace_wait_done(
        dev: u32, pid: i32, queue: u32, index: u64, handle: u32, sem: u64, value: u64
    );
    /// `radiance_reset`: the device reset.
    fn reset => radiance_trace_reset(dev: u32, stream: u32, resets: u64);
    /// `radiance_user_io`: a served device's server read frames or answered.
    fn user_io => radiance_trace_user_io(dev: u32, read: bool, bytes: u32);
}

#[cfg(not(radiance_no_trace))]
extern "C" {
    fn radiance_trace_sem_enabled() -> bool;
}

/// Whether a semaphore event is on (its semaphore's id costs a lookup).
pub(crate) fn sem_enabled() -> bool {
    #[cfg(not(radiance_no_trace))]
    // SAFETY: the C function takes nothing and only reads two static keys.
    unsafe {
        radiance_trace_sem_enabled()
    }
    #[cfg(radiance_no_trace)]
    false
}
