// SPDX-License-Identifier: GPL-2.0

//! A wait queue whose sleeper does not take its lock back on waking.
//!
//! 7.3's [`kernel::sync::CondVar`] retakes the lock it was given before it
//! returns. A semaphore wait that finds its point reached on waking (see
//! `Semaphores::wait`) needs no lock then, and on a lockdep kernel that
//! acquisition is a good part of a wake-up's cost. This file is the small
//! wrapper over `kernel::bindings` that sleeps with the lock dropped for good.

use core::{
    marker::PhantomPinned,
    ptr::null_mut, //
};
use kernel::{
    bindings,
    prelude::*,
    sync::LockClassKey,
    task::{
        MAX_SCHEDULE_TIMEOUT,
        TASK_INTERRUPTIBLE,
        TASK_NORMAL, //
    },
    time::Jiffies,
    types::Opaque,
};

/// A new [`WaitQueue`] with a lock class of its own, named `$name`.
macro_rules! new_wait_queue {
    ($name:literal) => {
        $crate::wait_queue::WaitQueue::new(kernel::c_str!($name), kernel::static_lock_class!())
    };
}
pub(crate) use new_wait_queue;

/// Tasks asleep until [`WaitQueue::wake_all`].
#[pin_data]
pub(crate) struct WaitQueue {
    #[pin]
    head: Opaque<bindings::wait_queue_head>,
    /// The head is linked into by the entries of its sleepers.
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: a `wait_queue_head` is used from any task, under its own lock.
unsafe impl Send for WaitQueue {}
// SAFETY: as for `Send`: every access goes through the head's lock.
unsafe impl Sync for WaitQueue {}

impl WaitQueue {
    /// Use [`new_wait_queue!`], which gives it a static lock class.
    pub(crate) fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `slot` is valid for writes and pinned; `name` and `key`
            // are static, so they outlive the head.
            head <- Opaque::ffi_init(|slot| unsafe {
                bindings::__init_waitqueue_head(slot, name.as_char_ptr(), key.as_ptr())
            }),
            _pin: PhantomPinned,
        })
    }

    /// Queues the current task, drops `guard`, and sleeps until woken,
    /// `timeout` passes (None: none) or a signal comes; returns whether a
    /// signal is pending. The lock stays dropped: a waker that changes what
    /// the caller looked at under it, and wakes after, finds it queued.
    #[must_use = "a pending signal must end the wait"]
    pub(crate) fn sleep<G>(&self, guard: G, timeout: Option<Jiffies>) -> bool {
        let timeout = timeout.map_or(MAX_SCHEDULE_TIMEOUT, |j| {
            j.try_into().unwrap_or(MAX_SCHEDULE_TIMEOUT)
        });
        let entry = Opaque::<bindings::wait_queue_entry>::uninit();
        // SAFETY: `entry` is valid for writes; it is not moved until it
        // leaves the queue in `finish_wait` below.
        unsafe { bindings::init_wait(entry.get()) };
        // SAFETY: the head was initialised in `new` and is pinned; `entry`
        // is initialised and stays on this stack frame until `finish_wait`.
        unsafe { bindings::prepare_to_wait(self.head.get(), entry.get(), TASK_INTERRUPTIBLE) };
        drop(guard);
        // SAFETY: it only sleeps, in the state `prepare_to_wait` set; a
        // caller still holding a spinlock would be a bug the kernel reports.
        unsafe { bindings::schedule_timeout(timeout) };
        // SAFETY: `entry` was queued on this head by `prepare_to_wait`.
        unsafe { bindings::finish_wait(self.head.get(), entry.get()) };
        kernel::current!().signal_pending()
    }

    /// Wakes every task asleep in [`WaitQueue::sleep`].
    pub(crate) fn wake_all(&self) {
        // SAFETY: the head was initialised in `new`; a zero count wakes all,
        // and the key is unused by the default wake function.
        unsafe { bindings::__wake_up(self.head.get(), TASK_NORMAL, 0, null_mut()) };
    }
}
