// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores of the cuda backend, and host waits on them.
//!
//! The payload is a u64 in pinned host memory mapped for the device: queues
//! write it with 64-bit stream writes, and the host reads and writes it
//! directly. Streams wait (64-bit GEQ stream waits) on a *mirror* of it in
//! device memory, which device signals write too: a stream polling device
//! memory resumes far sooner than one polling host memory across PCIe. The
//! mirror needs no host writes, because the device only ever waits for
//! values that device work already queued will write (see `queue.rs`); it
//! starts at 0, below any such value. A failure is kept on the host: the
//! device never sees one, for the same reason.
//!
//! Host waits poll the payloads, yielding the CPU between polls, for up to
//! [`POLL`] (CUDA's own default, for a thread synchronising with a GPU on a
//! machine with more cores than GPUs, is to poll and yield without limit);
//! then they sleep on the device's [`Hub`], woken at once by host signals
//! and failures and, for device signals, by a timeout that doubles up to
//! [`MAX_SLEEP`].

use super::{device::Shared, memory::Pinned, result::Api, sys::CUdeviceptr};
use crate::{backend::BackendSemaphore, lock::lock, Error, Pattern, Result, Semaphore, SemaphoreList, WaitMode};
use std::{
    any::Any,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Condvar, Mutex, PoisonError,
    },
    time::{Duration, Instant},
};

/// How long a host wait polls before it sleeps.
const POLL: Duration = Duration::from_millis(5);
/// The first and the longest sleep between polls of the payloads.
const FIRST_SLEEP: Duration = Duration::from_micros(50);
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Where host waiters sleep; host signals and failures wake them.
#[derive(Default)]
pub(super) struct Hub {
    lock: Mutex<()>,
    changed: Condvar,
}

impl Hub {
    /// Wakes every sleeping waiter. Taking the lock first means a waiter
    /// that checked its semaphores before the change is already asleep.
    pub(super) fn notify(&self) {
        drop(lock(&self.lock));
        self.changed.notify_all();
    }
}

/// Mirrors a device hands out; later semaphores have none, and their
/// streams wait on the payload itself.
const MIRRORS: usize = 1 << 16;

/// A device's mirror words: zeroed device memory, one u64 per semaphore,
/// never reused (a stale value could satisfy a new semaphore's waits).
pub(super) struct Mirrors {
    base: CUdeviceptr,
    next: AtomicUsize,
}

impl Mirrors {
    /// Allocates and zeroes them in the current context.
    pub(super) fn new(api: Api) -> Result<Self> {
        let base = api.mem_alloc(MIRRORS * 8)?;
        let zeroed = api.stream_create().and_then(|stream| {
            // SAFETY: a fresh stream and allocation, waited for here.
            let done = unsafe { api.memset_async(stream, base, Pattern::U32(0), MIRRORS * 2).and_then(|()| api.stream_synchronize(stream)) };
            // SAFETY: the stream is idle and not used again.
            unsafe { api.stream_destroy(stream) }.and(done)
        });
        match zeroed {
            Ok(()) => Ok(Self { base, next: AtomicUsize::new(0) }),
            Err(e) => {
                // SAFETY: nothing else has seen the allocation.
                let _ = unsafe { api.mem_free(base) };
                Err(e)
            }
        }
    }

    fn take(&self) -> Option<CUdeviceptr> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < MIRRORS).then(|| self.base + 8 * i as u64)
    }

    /// # Safety
    /// No queued work uses the mirrors, and they are not used again.
    pub(super) unsafe fn free(&self, api: Api) {
        let _ = api.mem_free(self.base);
    }
}

pub(super) struct CudaSemaphore {
    shared: Arc<Shared>,
    /// The payload: a u64 at offset 0.
    payload: Pinned,
    /// Its device-memory mirror, if the device had one left.
    mirror: Option<CUdeviceptr>,
    failure: Mutex<Option<Error>>,
    /// The highest value that device work already queued will write: the
    /// device may wait for values up to it. Raised under the scheduler lock.
    promised: AtomicU64,
}

impl CudaSemaphore {
    pub(super) fn new(shared: &Arc<Shared>, initial: u64) -> Result<Self> {
        let payload = Pinned::new(shared, 8)?;
        payload.u64_at(0).store(initial, Ordering::Release);
        Ok(Self {
            shared: Arc::clone(shared),
            payload,
            mirror: shared.mirrors.take(),
            failure: Mutex::new(None),
            promised: AtomicU64::new(initial),
        })
    }

    /// The payload now.
    pub(super) fn value(&self) -> u64 {
        self.payload.u64_at(0).load(Ordering::Acquire)
    }

    /// Where streams wait for the payload.
    pub(super) fn wait_address(&self) -> CUdeviceptr {
        self.mirror.unwrap_or_else(|| self.payload.device())
    }

    /// Where streams write the payload: the mirror (first: waiters watch
    /// it), then the payload for the host.
    pub(super) fn signal_addresses(&self) -> impl Iterator<Item = CUdeviceptr> {
        self.mirror.into_iter().chain([self.payload.device()])
    }

    pub(super) fn failure(&self) -> Option<Error> {
        lock(&self.failure).clone()
    }

    /// Fails the semaphore unless it already failed; whether it did now.
    pub(super) fn mark_failed(&self, error: Error) -> bool {
        let mut failure = lock(&self.failure);
        let first = failure.is_none();
        failure.get_or_insert(error);
        first
    }

    pub(super) fn promised(&self) -> u64 {
        self.promised.load(Ordering::Acquire)
    }

    /// Notes that queued device work will write `value`.
    pub(super) fn promise(&self, value: u64) {
        self.promised.fetch_max(value, Ordering::AcqRel);
    }
}

/// The cuda backend's object behind a [`Semaphore`] of a cuda device.
pub(super) fn cuda_semaphore(s: &Semaphore) -> Result<&CudaSemaphore> {
    s.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a semaphore"))
}

impl BackendSemaphore for CudaSemaphore {
    fn query(&self) -> Result<u64> {
        match self.failure() {
            Some(e) => Err(e),
            None => Ok(self.value()),
        }
    }

    fn signal(&self, value: u64) -> Result<()> {
        let mut scheduler = lock(&self.shared.scheduler);
        if let Some(e) = self.failure() {
            return Err(e);
        }
        let payload = self.value();
        if value <= payload {
            return Err(Error::OutOfRange(format!("semaphore payload {payload} cannot be signalled to {value}: it only goes up")));
        }
        self.payload.u64_at(0).store(value, Ordering::SeqCst);
        // Queue work held back for this value can go to the device now.
        scheduler.settle();
        drop(scheduler);
        self.shared.hub.notify();
        Ok(())
    }

    fn fail(&self, error: Error) {
        let mut scheduler = lock(&self.shared.scheduler);
        if self.mark_failed(error) {
            scheduler.settle();
        }
        drop(scheduler);
        self.shared.hub.notify();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The outcome of a host wait if it is decided now. A failure decides it in
/// both modes, as on the host backend.
fn decided(mode: WaitMode, points: &[(&CudaSemaphore, u64)]) -> Option<Result<()>> {
    if let Some(e) = points.iter().find_map(|(s, _)| s.failure()) {
        return Some(Err(e));
    }
    let mut reached = points.iter().map(|(s, v)| s.value() >= *v);
    let done = match mode {
        WaitMode::All => reached.all(|r| r),
        WaitMode::Any => points.is_empty() || reached.any(|r| r),
    };
    done.then_some(Ok(()))
}

/// Blocks until `points` are reached (all or any), one fails, or `deadline`
/// passes.
pub(super) fn wait(hub: &Hub, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
    let points = points.iter().map(|(s, v)| Ok((cuda_semaphore(s)?, *v))).collect::<Result<Vec<_>>>()?;
    let start = Instant::now();
    let mut sleep = FIRST_SLEEP;
    loop {
        // Polling skips the lock; sleeping holds it from the check on, so
        // that no host signal slips in between.
        let polling = start.elapsed() < POLL;
        let guard = (!polling).then(|| lock(&hub.lock));
        if let Some(done) = decided(mode, &points) {
            return done;
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|l| l.is_zero()) {
            return Err(Error::DeadlineExceeded);
        }
        match guard {
            None => std::thread::yield_now(),
            Some(guard) => {
                let nap = left.map_or(sleep, |l| l.min(sleep));
                drop(hub.changed.wait_timeout(guard, nap).unwrap_or_else(PoisonError::into_inner));
                sleep = (sleep * 2).min(MAX_SLEEP);
            }
        }
    }
}
