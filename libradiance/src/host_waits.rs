// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What the backends that keep semaphore payloads on the host (cuda, hsa)
//! share: where host waiters sleep, a semaphore's payload and sticky
//! failure, and what a host signal or failure does. Each backend keeps what
//! its device adds (timepoints, promises) in its own `semaphore.rs`.

use crate::{lock::lock, Error, Result};
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Condvar, Mutex,
};

/// A backend's scheduler of queue work: it holds submissions back until the
/// semaphore values they wait for are reached or promised, or fail.
pub(crate) trait Settle {
    /// Queues or fails the held work that a change (a signal, a failure,
    /// new promises) has decided.
    fn settle(&mut self);
}

/// Where host waiters sleep; host signals and failures (and on hsa the
/// completion thread) wake them.
#[derive(Default)]
pub(crate) struct Hub {
    pub(crate) lock: Mutex<()>,
    pub(crate) changed: Condvar,
}

impl Hub {
    pub(crate) const fn new() -> Self {
        Self { lock: Mutex::new(()), changed: Condvar::new() }
    }

    /// Wakes every sleeping waiter. Taking the lock first means a waiter
    /// that checked its semaphores before the change is already asleep.
    pub(crate) fn notify(&self) {
        drop(lock(&self.lock));
        self.changed.notify_all();
    }
}

/// A semaphore's payload as far as the host knows, and its failure (the
/// first one sticks).
pub(crate) struct HostPayload {
    value: AtomicU64,
    error: Mutex<Option<Error>>,
    /// Whether `error` is set: every submission asks, and a lock costs more
    /// than a load.
    failed: AtomicBool,
}

impl HostPayload {
    pub(crate) fn new(initial: u64) -> Self {
        Self { value: AtomicU64::new(initial), error: Mutex::default(), failed: AtomicBool::new(false) }
    }

    /// The payload as far as the host knows, with no driver call.
    pub(crate) fn value(&self) -> u64 {
        self.value.load(Ordering::Acquire)
    }

    /// Raises the payload to `value` if it is below.
    pub(crate) fn raise(&self, value: u64) {
        self.value.fetch_max(value, Ordering::AcqRel);
    }

    #[inline]
    pub(crate) fn failure(&self) -> Option<Error> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        self.stored_failure()
    }

    /// Out of line, so that the check above inlines where every submission
    /// makes it.
    #[cold]
    fn stored_failure(&self) -> Option<Error> {
        lock(&self.error).clone()
    }

    /// Fails the semaphore unless it already failed; whether it did now.
    pub(crate) fn mark_failed(&self, error: Error) -> bool {
        let mut failure = lock(&self.error);
        let first = failure.is_none();
        failure.get_or_insert(error);
        self.failed.store(true, Ordering::Release);
        first
    }

    /// A host signal of `value`, under the lock of the backend's `scheduler`:
    /// refused if the semaphore failed or `current()` (the payload now) is
    /// not below `value`; else `raise()` raises the payload (with what the
    /// backend keeps beside it), the work held back for the value goes to
    /// the device, and host waiters wake.
    pub(crate) fn signal<S: Settle>(
        &self,
        scheduler: &Mutex<S>,
        hub: &Hub,
        value: u64,
        current: impl FnOnce() -> Result<u64>,
        raise: impl FnOnce(),
    ) -> Result<()> {
        let mut scheduler = lock(scheduler);
        if let Some(e) = self.failure() {
            return Err(e);
        }
        let payload = current()?;
        if value <= payload {
            return Err(Error::OutOfRange(format!(
                "semaphore payload {payload} cannot be signalled to {value}: it only goes up"
            )));
        }
        raise();
        scheduler.settle();
        drop(scheduler);
        hub.notify();
        Ok(())
    }

    /// A failure from the host: the first one sticks, fails the work held
    /// back for the semaphore, and wakes host waiters.
    pub(crate) fn fail<S: Settle>(&self, scheduler: &Mutex<S>, hub: &Hub, error: Error) {
        let mut scheduler = lock(scheduler);
        if self.mark_failed(error) {
            scheduler.settle();
        }
        drop(scheduler);
        hub.notify();
    }
}
