// SPDX-License-Identifier: GPL-2.0

//! Remote KCOV coverage of the driver's work items: the scheduler's passes
//! and watchdog, the emulated device's engine, fence callbacks. KCOV sees
//! only what runs in the task that enabled it, so a fuzzer (tools/fuzz)
//! enables remote coverage with a common handle (KCOV_REMOTE_ENABLE),
//! which the tasks it then creates inherit, and each work item runs as a
//! remote section of the handle of the process that called the driver
//! last: attribution between processes is approximate, the coverage is
//! not. Without CONFIG_KCOV (the test kernel) both functions only call
//! through.
//!
//! 7.3's bindings do not include `linux/kcov.h`: its three exported
//! functions are declared here.

#[cfg(CONFIG_KCOV)]
use kernel::{
    bindings,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
};

#[cfg(CONFIG_KCOV)]
extern "C" {
    fn kcov_common_handle() -> bindings::kcov_common_handle_id;
    fn kcov_remote_start(handle: u64);
    fn kcov_remote_stop();
}

/// The common handle of the last process that called the driver with one
/// (0: none yet).
#[cfg(CONFIG_KCOV)]
static CALLER: Atomic<u64> = Atomic::new(0);

/// Notes the calling task's common handle, if it has one.
pub(crate) fn note_caller() {
    #[cfg(CONFIG_KCOV)]
    {
        // SAFETY: reads the current task's handle (0 outside task context);
        // callable anywhere.
        let handle = unsafe { kcov_common_handle() }.val;
        if handle != 0 {
            CALLER.store(handle, Relaxed);
        }
    }
}

/// Runs a work item's `f` as a remote section of the last caller's handle.
/// Only from a work item: KCOV warns when a task with coverage enabled
/// starts a section.
pub(crate) fn work<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(CONFIG_KCOV)]
    {
        // A common handle is KCOV_SUBSYSTEM_COMMON (0) in its top byte and
        // the process's instance below: the value itself.
        let handle = CALLER.load(Relaxed);
        if handle != 0 {
            // SAFETY: a kworker, not in a section (work items do not nest);
            // KCOV ignores a handle nobody enabled.
            unsafe { kcov_remote_start(handle) };
            let out = f();
            // SAFETY: ends the section started above, in the same context.
            unsafe { kcov_remote_stop() };
            return out;
        }
    }
    f()
}
