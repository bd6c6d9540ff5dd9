// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores of the cuda backend, and host waits on them.
//!
//! Documentation/design/libradiance.md (`cuda/semaphore.rs`) has the rest of its story.

use super::{
    context::Context,
    device::Shared,
    queue::{HELD, SCHEDULER},
    result::Api,
    sys::{CUevent, CUstream},
};
use crate::{
    backend::BackendSemaphore,
    host_waits::{HostPayload, Hub},
    lock::lock,
    spin_lock::{SpinGuard, SpinLock},
    Error, Result, Semaphore, SemaphoreList, StatusCode, WaitMode,
};
use std::{
    any::Any,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex, PoisonError,
    },
    time::{Duration, Instant},
};

/// Where host waiters of every cuda device sleep: a semaphore that queues
/// of several devices signal (`SemaphoreRoute::CudaEvent`) wakes its
/// waiters whichever device they wait through.
pub(super) static HUB: Hub = Hub::new();

/// How long a host wait polls before it sleeps.
const POLL: Duration = Duration::from_millis(5);
/// The first and the longest sleep between polls of the payloads.
const FIRST_SLEEP: Duration = Duration::from_micros(50);
const MAX_SLEEP: Duration = Duration::from_millis(1);
/// Every this many timepoints pending, a device signal first folds the
/// older half if the device has passed it: a semaphore signalled on the
/// device and never waited on from the host would otherwise hold events
/// without bound. One driver query per prune, not a bisection: each is a
/// driver call on the submission path (about 6 in 64 edges cost 4% of an
/// edge's time on the H100 machine).
const PRUNE_EVERY: usize = 64;

/// A device's idle events: creating an event costs more than recording it.
/// An event goes back while a stream may still be about to pass it; that is
/// harmless, since a stream waits for what the event captured when the wait
/// was queued, not for later recordings.
#[derive(Default)]
pub(super) struct EventPool {
    free: Mutex<Vec<CUevent>>,
}

// SAFETY: events may be used from any thread; the list is locked.
unsafe impl Send for EventPool {}
// SAFETY: as above.
unsafe impl Sync for EventPool {}

/// How many idle events a queue or a semaphore takes from its device's pool
/// at once, into its own stash: the pool's lock is taken once per that many
/// recordings, not once per signal.
const EVENTS_TAKEN: usize = 16;
/// How many idle events a semaphore keeps for its next device signals.
const IDLE_KEPT: usize = PRUNE_EVERY;

impl EventPool {
    /// An idle event recorded on `stream`: from `stash`, a queue's, refilled
    /// from the pool when empty, or new if both are.
    ///
    /// # Safety
    /// `stream` is a live stream of the device, whose context is `ctx`.
    pub(super) unsafe fn record(&self, stash: &mut Vec<CUevent>, ctx: &Context, stream: CUstream) -> Result<CUevent> {
        let event = self.take(stash, ctx)?;
        if let Err(e) = ctx.api().event_record(event, stream) {
            stash.push(event);
            return Err(e);
        }
        Ok(event)
    }

    /// An idle event, not yet recorded: see [`EventPool::record`]. `ctx` is
    /// the device's context, made current only to create one.
    #[inline(always)]
    fn take(&self, stash: &mut Vec<CUevent>, ctx: &Context) -> Result<CUevent> {
        if stash.is_empty() {
            let mut free = lock(&self.free);
            let from = free.len().saturating_sub(EVENTS_TAKEN);
            stash.extend(free.drain(from..));
        }
        match stash.pop() {
            Some(event) => Ok(event),
            None => Self::create(ctx),
        }
    }

    /// One idle event from the pool, or a new one: see [`EventPool::take`].
    fn take_one(&self, ctx: &Context) -> Result<CUevent> {
        match lock(&self.free).pop() {
            Some(event) => Ok(event),
            None => Self::create(ctx),
        }
    }

    /// A new event: the submission path may run with no context current
    /// (`Context::enter_for_streams`), and an event is made in the current
    /// one.
    #[cold]
    fn create(ctx: &Context) -> Result<CUevent> {
        let _current = ctx.enter()?;
        ctx.api().event_create()
    }

    pub(super) fn give_back(&self, events: impl IntoIterator<Item = CUevent>) {
        lock(&self.free).extend(events);
    }

    /// # Safety
    /// No queued work or semaphore uses the events, and the device's context
    /// is current.
    pub(super) unsafe fn destroy(&self, api: Api) {
        for event in std::mem::take(&mut *lock(&self.free)) {
            let _ = api.event_destroy(event);
        }
    }
}

/// A device signal not yet folded into the payload. Plain data, so that a
/// fold moves the rest of the timeline down in one copy and takes the
/// events of a run of this device's timepoints at once.
#[derive(Clone, Copy)]
struct Timepoint {
    value: u64,
    event: CUevent,
    stream: CUstream,
    /// Recorded by another device of the group: the event is of that
    /// device's context and pool (`CudaSemaphore::recorders`).
    foreign: bool,
}

/// A semaphore's device signals not yet folded, and idle events for its
/// next ones.
#[derive(Default)]
struct Timeline {
    /// Ascending by value. A vector, not a deque: folding takes the done
    /// ones from the front, mostly all of them, and a deque's indexing and
    /// push cost more on every edge.
    points: Vec<Timepoint>,
    /// Events of the semaphore's device: folded timepoints' come back here
    /// (up to [`IDLE_KEPT`]), so that a device signal needs neither the
    /// pool's lock nor a queue's stash (`signal_on`).
    idle: Vec<CUevent>,
}

/// Laid out so that `promised` and the timeline (its lock, vectors) fill
/// one cache line of their own: a submission reads `promised` first
/// (`readiness` in queue.rs), which brings in the lock it takes next; a
/// locked instruction on a line not in the cache waits for it.
#[repr(C, align(64))]
pub(super) struct CudaSemaphore {
    /// The highest value that device work already queued will signal: the
    /// device may wait for values up to it. Raised by `signal_on`.
    promised: AtomicU64,
    /// A spin lock (`spin_lock.rs`): every edge between queues takes it.
    timeline: SpinLock<Timeline>,
    pub(super) payload: HostPayload,
    shared: Arc<Shared>,
    /// The device that recorded each foreign timepoint pending, by its
    /// event (device groups only): off the line of the timeline, which
    /// every edge reads. Locked inside the timeline's lock.
    recorders: Mutex<Vec<(CUevent, Arc<Shared>)>>,
    /// How many foreign timepoints are pending: a fold looks for them only
    /// if some are. Changed and read under the timeline's lock.
    foreign: AtomicUsize,
}

const _: () = assert!(std::mem::offset_of!(CudaSemaphore, payload) <= 64);

// SAFETY: the events and streams are only handles, usable from any thread;
// the timeline is locked.
unsafe impl Send for CudaSemaphore {}
// SAFETY: as above.
unsafe impl Sync for CudaSemaphore {}

impl CudaSemaphore {
    pub(super) fn new(shared: &Arc<Shared>, initial: u64) -> Self {
        Self {
            shared: Arc::clone(shared),
            payload: HostPayload::new(initial),
            promised: AtomicU64::new(initial),
            timeline: SpinLock::new(Timeline::default()),
            recorders: Mutex::default(),
            foreign: AtomicUsize::new(0),
        }
    }

    pub(super) fn promised(&self) -> u64 {
        self.promised.load(Ordering::Acquire)
    }

    /// [`CudaSemaphore::promised`] read under the timeline's lock: a
    /// submission about to be held reads it so, after counting itself in
    /// [`HELD`], to hear of promises made without the scheduler's lock
    /// (`signal_on`).
    pub(super) fn promised_locked(&self) -> u64 {
        let _timeline = self.timeline.lock();
        self.promised()
    }

    /// Signals `value` from `stream`, a stream of `recorder` (this
    /// semaphore's device or another of its group), once the work queued on
    /// it so far is done, and promises it; the event comes from the
    /// semaphore's idle ones, or `recorder`'s pool. Called with
    /// `recorder`'s context entered for streams
    /// (`Context::enter_for_streams`), under the scheduler lock or with
    /// nothing held (`submit_unlocked` in queue.rs). Returns whether the
    /// scheduler held work when the promise was made, read under the
    /// timeline's lock: a submission being held counts itself in [`HELD`]
    /// before it reads the promise under the same lock
    /// (`promised_locked`), so either it sees the promise or the caller
    /// sees it counted and settles held work.
    ///
    /// `held` is a timeline the caller has locked (`queue_wait`): used if it
    /// is this semaphore's, let go of before locking this one's otherwise,
    /// so that no two timelines are ever locked together.
    ///
    /// # Safety
    /// `stream` is a live stream of `recorder`.
    #[inline(always)]
    pub(super) unsafe fn signal_on(
        &self,
        held: Option<Locked<'_>>,
        recorder: &Arc<Shared>,
        stream: CUstream,
        value: u64,
    ) -> Result<bool> {
        let mut timeline = match held {
            Some(held) if std::ptr::eq(held.of, self) => held.timeline,
            other => {
                drop(other);
                self.timeline.lock()
            }
        };
        let pending = timeline.points.len();
        if pending >= PRUNE_EVERY && pending % PRUNE_EVERY == 0 && self.done(&timeline, pending / 2 - 1)? {
            self.fold(&mut timeline, pending / 2);
        }
        let api = recorder.ctx.api();
        let own = Arc::ptr_eq(recorder, &self.shared);
        let event = match own {
            true => recorder.events.take(&mut timeline.idle, &recorder.ctx)?,
            false => recorder.events.take_one(&recorder.ctx)?,
        };
        // Built before the driver call, not after: moved into the vector
        // right after its fields were stored, it is copied by wide loads of
        // narrow stores still in flight, a stall on every edge.
        let timepoint = Timepoint { value, event, stream, foreign: !own };
        if let Err(e) = api.event_record(event, stream) {
            match own {
                true => timeline.idle.push(event),
                false => recorder.events.give_back([event]),
            }
            return Err(e);
        }
        if !own {
            lock(&self.recorders).push((event, Arc::clone(recorder)));
            self.foreign.fetch_add(1, Ordering::Relaxed);
        }
        // Signals come in ascending order but for programs that race them.
        let points = &mut timeline.points;
        if points.last().is_none_or(|t| t.value <= value) {
            points.push(timepoint);
        } else {
            let at = points.partition_point(|t| t.value <= value);
            points.insert(at, timepoint);
        }
        // Raised only here, under the timeline's lock: no read-modify-write.
        if value > self.promised.load(Ordering::Relaxed) {
            self.promised.store(value, Ordering::Release);
        }
        Ok(HELD.load(Ordering::Relaxed) != 0)
    }

    /// Makes `stream` wait on the device until the payload reaches `value`:
    /// for the first timepoint at or above it, unless that is on `stream`
    /// itself (passed in order) or the value is reached. The timeline stays
    /// locked until the wait is queued, so that the event cannot go back to
    /// the pool and be recorded again first. Called with the device's
    /// context entered for streams, for values reached or promised. The timeline comes
    /// back still locked, for a signal of the same semaphore in the same
    /// submission (`signal_on`): a timeline handed from queue to queue then
    /// costs one lock per edge, not two.
    ///
    /// # Safety
    /// `stream` is a live stream of the device.
    #[inline(always)]
    pub(super) unsafe fn queue_wait(&self, stream: CUstream, value: u64) -> Result<Locked<'_>> {
        let timeline = self.timeline.lock();
        if self.payload.value() < value {
            match first_at_or_above(&timeline.points, value).map(|at| &timeline.points[at]) {
                Some(t) if t.stream == stream => {}
                Some(t) => self.shared.ctx.api().stream_wait_event(stream, t.event)?,
                // The scheduler queues only waits that are reached or promised.
                None => {
                    return Err(Error::Status {
                        code: StatusCode::Internal,
                        message: format!("no queued device signal reaches semaphore value {value}"),
                    })
                }
            }
        }
        Ok(Locked { of: self, timeline })
    }

    /// Whether the payload has reached `value`, asking the driver about the
    /// first timepoint at or above it if the host does not know yet.
    fn reached(&self, value: u64) -> Result<bool> {
        if self.payload.value() >= value {
            return Ok(true);
        }
        let mut timeline = self.timeline.lock();
        let Some(at) = first_at_or_above(&timeline.points, value) else {
            return Ok(self.payload.value() >= value);
        };
        if self.done(&timeline, at)? {
            self.fold(&mut timeline, at + 1);
            return Ok(true);
        }
        Ok(false)
    }

    /// Whether the device has passed the timepoint at `at`, asked in the
    /// context of the device that recorded it.
    fn done(&self, timeline: &Timeline, at: usize) -> Result<bool> {
        let timepoint = &timeline.points[at];
        let foreign = timepoint.foreign.then(|| {
            let recorders = lock(&self.recorders);
            recorders.iter().find(|(e, _)| *e == timepoint.event).map(|(_, r)| Arc::clone(r))
        });
        let foreign = foreign.flatten();
        let recorder = foreign.as_deref().unwrap_or(&self.shared);
        let _current = recorder.ctx.enter_for_streams()?;
        // SAFETY: the pool's events live as long as its device, held here.
        unsafe { recorder.ctx.api().event_query(timepoint.event) }
    }

    /// The payload now: folds the timepoints found done.
    fn refresh(&self) -> Result<u64> {
        let mut timeline = self.timeline.lock();
        if !timeline.points.is_empty() {
            self.fold_done(&mut timeline)?;
        }
        Ok(self.payload.value())
    }

    /// Folds the timepoints found done, finding the last by bisection: device
    /// signals mostly finish in the order of their values. One that finishes
    /// out of order is folded later, or by a wait for it.
    fn fold_done(&self, timeline: &mut Timeline) -> Result<()> {
        let (mut done, mut pending) = (0, timeline.points.len());
        while done < pending {
            let mid = (done + pending) / 2;
            if self.done(timeline, mid)? {
                done = mid + 1;
            } else {
                pending = mid;
            }
        }
        self.fold(timeline, done);
        Ok(())
    }

    /// Folds the first `n` timepoints, the last of which is done, into the
    /// payload. The ones before it may still be pending on the device, but
    /// nothing needs them: the payload covers their values. Their events
    /// become the semaphore's idle ones, as many as it keeps; the rest go
    /// back to the pools they came from.
    fn fold(&self, timeline: &mut Timeline, n: usize) {
        let Some(last) = n.checked_sub(1).and_then(|i| timeline.points.get(i)) else { return };
        self.payload.raise(last.value);
        let Timeline { points, idle } = timeline;
        let folded = &points[..n];
        let room = IDLE_KEPT.saturating_sub(idle.len());
        if self.foreign.load(Ordering::Relaxed) == 0 {
            // All this device's: one run kept, one given back.
            let kept = room.min(n);
            idle.extend(folded[..kept].iter().map(|t| t.event));
            if kept < n {
                self.shared.events.give_back(folded[kept..].iter().map(|t| t.event));
            }
        } else {
            let mut recorders = lock(&self.recorders);
            let mut spilled = Vec::new();
            for t in folded {
                if t.foreign {
                    if let Some(i) = recorders.iter().position(|(e, _)| *e == t.event) {
                        let (event, recorder) = recorders.swap_remove(i);
                        recorder.events.give_back([event]);
                    }
                    self.foreign.fetch_sub(1, Ordering::Relaxed);
                } else if idle.len() < IDLE_KEPT {
                    idle.push(t.event);
                } else {
                    spilled.push(t.event);
                }
            }
            if !spilled.is_empty() {
                self.shared.events.give_back(spilled);
            }
        }
        points.drain(..n);
    }
}

/// A semaphore's timeline, locked by `queue_wait` for `signal_on`.
pub(super) struct Locked<'a> {
    pub(super) of: &'a CudaSemaphore,
    timeline: SpinGuard<'a, Timeline>,
}

/// The index of the first timepoint at or above `value`, if any. Mostly the
/// last: work waits for what was signalled most recently.
#[inline]
fn first_at_or_above(timeline: &[Timepoint], value: u64) -> Option<usize> {
    let last = timeline.len().checked_sub(1)?;
    if timeline[last].value < value {
        return None;
    }
    if last == 0 || timeline[last - 1].value < value {
        return Some(last);
    }
    Some(timeline.partition_point(|t| t.value < value))
}

impl Drop for CudaSemaphore {
    fn drop(&mut self) {
        let Timeline { points, mut idle } = std::mem::take(self.timeline.get_mut());
        idle.extend(points.iter().filter(|t| !t.foreign).map(|t| t.event));
        for (event, recorder) in std::mem::take(self.recorders.get_mut().unwrap_or_else(PoisonError::into_inner)) {
            recorder.events.give_back([event]);
        }
        self.shared.events.give_back(idle);
    }
}

/// The cuda backend's object behind a [`Semaphore`] of a cuda device.
#[inline]
pub(super) fn cuda_semaphore(s: &Semaphore) -> Result<&CudaSemaphore> {
    s.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a semaphore"))
}

impl BackendSemaphore for CudaSemaphore {
    fn query(&self) -> Result<u64> {
        match self.payload.failure() {
            Some(e) => Err(e),
            None => self.refresh(),
        }
    }

    fn signal(&self, value: u64) -> Result<()> {
        // A device signal may still fold in a lower value after this.
        let raise = || self.payload.raise(value);
        self.payload.signal(&SCHEDULER, &HUB, value, || self.refresh(), raise)
    }

    fn fail(&self, error: Error) {
        self.payload.fail(&SCHEDULER, &HUB, error)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The outcome of a host wait if it is decided now. A failure decides it in
/// both modes, as on the host backend.
fn decided(mode: WaitMode, points: &[(&CudaSemaphore, u64)]) -> Option<Result<()>> {
    if let Some(e) = points.iter().find_map(|(s, _)| s.payload.failure()) {
        return Some(Err(e));
    }
    let any = mode == WaitMode::Any;
    for (s, v) in points {
        match s.reached(*v) {
            Err(e) => return Some(Err(e)),
            Ok(true) if any => return Some(Ok(())),
            Ok(false) if !any => return None,
            Ok(_) => {}
        }
    }
    // Every point is reached (all), or none of them (any, unless there are
    // none).
    (!any || points.is_empty()).then_some(Ok(()))
}

/// Blocks until `points` are reached (all or any), one fails, or `deadline`
/// passes.
pub(super) fn wait(mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
    let hub = &HUB;
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
