// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores of the host backend, and the one place that waits on
//! them.
//!
//! All semaphores of a device share one [`Hub`]: a mutex held across every
//! payload change and a condvar notified after it. A waiter checks its
//! semaphores with the hub locked and sleeps on the condvar, so a wait on any
//! mix of semaphores never misses a change. Lock order: hub, then one
//! semaphore's state.

use crate::{
    backend::BackendSemaphore, lock::lock, semaphore::decide, Error, Result, Semaphore, SemaphoreList, WaitMode,
};
use std::{
    any::Any,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Condvar, Mutex, PoisonError,
    },
    time::Instant,
};

/// The device-wide wait/notify point.
#[derive(Default)]
pub(super) struct Hub {
    lock: Mutex<()>,
    changed: Condvar,
}

impl Hub {
    /// Runs `change` with the hub locked, then wakes every waiter.
    pub(super) fn change<R>(&self, change: impl FnOnce() -> R) -> R {
        let r = {
            let _hub = lock(&self.lock);
            change()
        };
        self.changed.notify_all();
        r
    }

    /// Wakes every waiter, e.g. to let it see that its queue is closing.
    pub(super) fn wake(&self) {
        self.change(|| ())
    }

    /// Blocks until `abort` is set and [`Hub::wake`] called: how a launch
    /// that never ends (SPIN) waits for its queue to go away.
    pub(super) fn park_until(&self, abort: &AtomicBool) {
        let mut hub = lock(&self.lock);
        while !abort.load(Ordering::Acquire) {
            hub = self.changed.wait(hub).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Waits until `points` are reached (all or any), one fails, `deadline`
    /// passes, or `abort` is set (a closing queue).
    pub(super) fn wait(
        &self,
        mode: WaitMode,
        points: &SemaphoreList,
        deadline: Option<Instant>,
        abort: Option<&AtomicBool>,
    ) -> Result<()> {
        let points = points.iter().map(|(s, v)| Ok((host_semaphore(s)?, *v))).collect::<Result<Vec<_>>>()?;
        let mut hub = lock(&self.lock);
        loop {
            if let Some(done) = resolve(mode, &points) {
                return done;
            }
            if abort.is_some_and(|a| a.load(Ordering::Acquire)) {
                return Err(Error::Cancelled("the queue was destroyed before its wait was reached".into()));
            }
            hub = match deadline {
                None => self.changed.wait(hub).unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    // Re-checked on every wake-up, so early (spurious) wake-ups
                    // never end a wait before its deadline.
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(Error::DeadlineExceeded);
                    }
                    self.changed.wait_timeout(hub, left).unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }
}

/// The outcome of a wait if it is decided now.
fn resolve(mode: WaitMode, points: &[(&HostSemaphore, u64)]) -> Option<Result<()>> {
    decide(
        mode,
        points.iter().map(|(s, value)| {
            let state = lock(&s.state);
            match &state.failure {
                Some(e) => Err(e.clone()),
                None => Ok(state.value >= *value),
            }
        }),
    )
}

/// The host backend's object behind a [`Semaphore`] of a host device.
pub(super) fn host_semaphore(s: &Semaphore) -> Result<&HostSemaphore> {
    s.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a semaphore"))
}

struct State {
    value: u64,
    failure: Option<Error>,
}

pub(super) struct HostSemaphore {
    hub: Arc<Hub>,
    state: Mutex<State>,
}

impl HostSemaphore {
    pub(super) fn new(hub: Arc<Hub>, initial: u64) -> Self {
        Self { hub, state: Mutex::new(State { value: initial, failure: None }) }
    }

    /// A queue's signal: raises the payload to `value`; a lower value leaves
    /// it as it is (the payload never goes down), and a failed semaphore
    /// stays failed.
    pub(super) fn advance(&self, value: u64) {
        self.hub.change(|| {
            let mut state = lock(&self.state);
            state.value = state.value.max(value);
        })
    }
}

impl BackendSemaphore for HostSemaphore {
    fn query(&self) -> Result<u64> {
        let state = lock(&self.state);
        match &state.failure {
            Some(e) => Err(e.clone()),
            None => Ok(state.value),
        }
    }

    fn signal(&self, value: u64) -> Result<()> {
        self.hub.change(|| {
            let mut state = lock(&self.state);
            if let Some(e) = &state.failure {
                return Err(e.clone());
            }
            if value <= state.value {
                return Err(Error::OutOfRange(format!(
                    "semaphore payload {} cannot be signalled to {value}: it only goes up",
                    state.value
                )));
            }
            state.value = value;
            Ok(())
        })
    }

    fn fail(&self, error: Error) {
        self.hub.change(|| {
            let mut state = lock(&self.state);
            state.failure.get_or_insert(error);
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
