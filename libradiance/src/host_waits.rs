// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What the backends that keep semaphore payloads on the host (cuda, hsa)
//! share: where host waiters sleep, and a semaphore's sticky failure.

use crate::{lock::lock, Error, Result};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Condvar, Mutex,
};

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

/// A semaphore's failure: the first one sticks.
#[derive(Default)]
pub(crate) struct Failure {
    error: Mutex<Option<Error>>,
    /// Whether `error` is set: every submission asks, and a lock costs more
    /// than a load.
    failed: AtomicBool,
}

impl Failure {
    pub(crate) fn get(&self) -> Option<Error> {
        if !self.failed.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.error).clone()
    }

    /// Fails the semaphore unless it already failed; whether it did now.
    pub(crate) fn set(&self, error: Error) -> bool {
        let mut failure = lock(&self.error);
        let first = failure.is_none();
        failure.get_or_insert(error);
        self.failed.store(true, Ordering::Release);
        first
    }
}

/// Whether a host signal may raise `payload` to `value`: not if the
/// semaphore failed (its error), nor downwards.
pub(crate) fn check_raise(failure: &Failure, payload: impl FnOnce() -> Result<u64>, value: u64) -> Result<()> {
    if let Some(e) = failure.get() {
        return Err(e);
    }
    let payload = payload()?;
    if value <= payload {
        return Err(Error::OutOfRange(format!(
            "semaphore payload {payload} cannot be signalled to {value}: it only goes up"
        )));
    }
    Ok(())
}
