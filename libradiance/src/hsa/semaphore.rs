// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores of the hsa backend, the device's completion thread,
//! and host waits.
//!
//! As IREE's AMDGPU HAL keeps them, the payload lives on the host: a host
//! signal raises it at once. A device signal is a [`Timepoint`]: epoch k of
//! some queue will raise the payload to v (`epoch.rs`). Another queue waits
//! for v on the device with a barrier-value packet on that queue's epoch
//! signal (`queue.rs`). The device's one completion thread blocks in
//! `hsa_amd_signal_wait_any` on every queue's epoch signal (for the next
//! epoch it has not seen done) and on a wake signal; when an epoch is done
//! it drains the queue's notification ring, raising the payloads its
//! submissions signal, and wakes host waiters through the device's [`Hub`].
//! So host waits make no runtime call: they sleep on the hub.

use super::{
    device::Shared,
    epoch::{Timeline, Timepoint},
    queue::QueueShared,
    result::Api,
    sys::*,
};
use crate::{
    backend::BackendSemaphore,
    host_waits::{HostPayload, Hub, Settle},
    lock::lock,
    semaphore::decide,
    Error, Result, Semaphore, SemaphoreList, WaitMode,
};
use std::{
    any::Any,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, PoisonError, Weak,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

/// How long the completion thread sleeps at most: a backstop, since every
/// change it waits for also sets a signal it waits on.
const BACKSTOP_NS: u64 = 100_000_000;

/// A queue as a semaphore's timepoints name it: its id and epoch signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct QueueKey {
    pub(super) id: u64,
    pub(super) epoch_signal: hsa_signal_t,
}

/// The device's completion thread and what it watches.
pub(super) struct Completion {
    /// Set to 0 to wake the thread; it sets it back to 1.
    wake: hsa_signal_t,
    stop: AtomicBool,
    queues: Mutex<Vec<Weak<QueueShared>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Completion {
    pub(super) fn new(api: Api) -> Result<Self> {
        Ok(Self {
            wake: api.signal_create(1)?,
            stop: AtomicBool::new(false),
            queues: Mutex::default(),
            thread: Mutex::default(),
        })
    }

    /// Wakes the thread: a queue came, faulted or went, or it must stop.
    pub(super) fn wake(&self, api: Api) {
        // SAFETY: the wake signal lives as long as the device.
        unsafe { api.signal_store(self.wake, 0) };
    }

    pub(super) fn watch(&self, api: Api, queue: &Arc<QueueShared>) {
        lock(&self.queues).push(Arc::downgrade(queue));
        self.wake(api);
    }

    /// Stops the thread and waits for it, unless this is the thread (it
    /// dropped the last reference to its device while draining).
    pub(super) fn stop(&self, api: Api) {
        self.stop.store(true, Ordering::Release);
        self.wake(api);
        let thread = lock(&self.thread).take();
        if let Some(thread) = thread.filter(|t| t.thread().id() != std::thread::current().id()) {
            let _ = thread.join();
        }
    }

    /// Frees the wake signal; the thread has stopped.
    pub(super) fn destroy(&self, api: Api) {
        // SAFETY: nothing waits on it any more.
        unsafe { api.signal_destroy(self.wake) };
    }
}

/// Starts the device's completion thread. It holds the device only while it
/// drains, so that dropping the device stops it.
pub(super) fn start_completion_thread(shared: &Arc<Shared>) -> Result<()> {
    let weak = Arc::downgrade(shared);
    let thread = std::thread::Builder::new()
        .name("radiance-hsa-completion".into())
        .spawn(move || {
            while let Some(shared) = weak.upgrade().filter(|s| !s.completion.stop.load(Ordering::Acquire)) {
                complete_once(shared)
            }
        })
        .map_err(|e| Error::io("starting the hsa completion thread", &e))?;
    *lock(&shared.completion.thread) = Some(thread);
    Ok(())
}

/// Waits for the next change and handles it.
fn complete_once(shared: Arc<Shared>) {
    let api = shared.api;
    let completion = &shared.completion;
    let queues: Vec<Arc<QueueShared>> = {
        let mut watched = lock(&completion.queues);
        watched.retain(|q| q.strong_count() > 0);
        watched.iter().filter_map(Weak::upgrade).collect()
    };
    let mut signals = vec![completion.wake];
    let mut conds = vec![HSA_SIGNAL_CONDITION_EQ];
    let mut values = vec![0];
    for q in &queues {
        let (cond, value) = q.next_done_condition();
        signals.push(q.key().epoch_signal);
        conds.push(cond);
        values.push(value);
    }
    let wake = completion.wake;
    // The queues keep their signals alive across the wait; the device is
    // let go, so that dropping it stops this thread.
    drop(shared);
    // SAFETY: every signal is live (held above, or the device's wake signal,
    // destroyed only after this thread stops).
    unsafe {
        api.signal_wait_any(&mut signals, &mut conds, &mut values, BACKSTOP_NS);
        api.signal_store(wake, 1);
    }
    // Each queue that finished or faulted raises or fails what it signals.
    let mut changed = false;
    for q in &queues {
        changed |= q.drain();
    }
    if let Some(shared) = queues.first().map(|q| q.shared()) {
        if changed {
            lock(&shared.scheduler).settle();
            shared.hub.notify();
        }
    }
}

pub(super) struct HsaSemaphore {
    shared: Arc<Shared>,
    pub(super) payload: HostPayload,
    /// Pending device signals; promised under the scheduler lock.
    timeline: Mutex<Timeline<QueueKey>>,
}

impl HsaSemaphore {
    pub(super) fn new(shared: &Arc<Shared>, initial: u64) -> Self {
        Self { shared: Arc::clone(shared), payload: HostPayload::new(initial), timeline: Mutex::default() }
    }

    /// Whether `value` is reached, or queued device work will reach it.
    pub(super) fn reached_or_promised(&self, value: u64) -> bool {
        self.payload.value() >= value || lock(&self.timeline).promised().is_some_and(|p| p >= value)
    }

    /// Notes that `epoch` of `queue` will signal `value`.
    pub(super) fn promise(&self, value: u64, queue: QueueKey, epoch: u64) {
        lock(&self.timeline).promise(Timepoint { value, queue, epoch });
    }

    /// The device signal a device wait for `value` waits on; `None` when
    /// the value is reached already.
    pub(super) fn device_wait(&self, value: u64) -> Option<Timepoint<QueueKey>> {
        let timeline = lock(&self.timeline);
        (self.payload.value() < value).then(|| timeline.first_at_or_above(value)).flatten()
    }

    /// A device signal of `value` is done.
    pub(super) fn reach(&self, value: u64) {
        let mut timeline = lock(&self.timeline);
        self.payload.raise(value);
        timeline.reached(value);
    }

    /// A queue failed or went away: its promises will never be kept.
    pub(super) fn forget_queue(&self, queue: QueueKey) {
        lock(&self.timeline).forget_queue(queue);
    }
}

/// The hsa backend's object behind a [`Semaphore`] of an hsa device.
pub(super) fn hsa_semaphore(s: &Semaphore) -> Result<&HsaSemaphore> {
    s.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a semaphore"))
}

impl BackendSemaphore for HsaSemaphore {
    fn query(&self) -> Result<u64> {
        self.payload.failure().map_or(Ok(self.payload.value()), Err)
    }

    fn signal(&self, value: u64) -> Result<()> {
        let current = || Ok(self.payload.value());
        self.payload.signal(&self.shared.scheduler, &self.shared.hub, value, current, || self.reach(value))
    }

    fn fail(&self, error: Error) {
        self.payload.fail(&self.shared.scheduler, &self.shared.hub, error)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Blocks until `points` are reached (all or any), one fails, or `deadline`
/// passes.
pub(super) fn wait(hub: &Hub, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
    let points = points.iter().map(|(s, v)| Ok((hsa_semaphore(s)?, *v))).collect::<Result<Vec<_>>>()?;
    let mut guard = lock(&hub.lock);
    loop {
        if let Some(done) =
            decide(mode, points.iter().map(|(s, v)| s.payload.failure().map_or(Ok(s.payload.value() >= *v), Err)))
        {
            return done;
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Err(Error::DeadlineExceeded);
        }
        // Every change notifies; the timeout only bounds a missed one.
        let nap = left.map_or(Duration::from_millis(100), |l| l.min(Duration::from_millis(100)));
        guard = hub.changed.wait_timeout(guard, nap).unwrap_or_else(PoisonError::into_inner).0;
    }
}
