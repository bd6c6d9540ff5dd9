// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queues of the cuda backend: one non-blocking CUDA stream each, and the
//! scheduler that decides when a submission may go to one. There is one
//! scheduler for every cuda device of the process, as there is one driver:
//! a submission held for a semaphore of another device of its group (whose
//! events its stream waits on, `SemaphoreRoute::CudaEvent`) is decided by
//! the same pass as one held for its own device's, whichever device's
//! signal, failure or promise decides it.
//!
//! Documentation/design/libradiance.md (`cuda/queue.rs`) has the rest of its story.

use super::{
    buffer::{cuda_buffer, spin_started, spins_stopped, CudaBuffer, Pinned},
    device::Shared,
    graph::{self, Captured, Graphs},
    module::Prepared,
    semaphore::{cuda_semaphore, Locked, HUB},
    sys::{CUevent, CUstream},
};
use crate::{
    backend::{BackendQueue, Commands, Submission},
    command_buffer::Op,
    host_waits::Settle,
    lock::lock,
    spin_lock::SpinLock,
    Command, Error, Launch, Points, Result, Semaphore, SemaphoreList,
};
use std::{
    borrow::Borrow,
    collections::VecDeque,
    sync::{
        atomic::{fence, AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

/// How often (in submissions) a queue records and checks its progress: an
/// event per submission would cost as much as the rest of a small one.
const PROGRESS_EVERY: u64 = 128;

/// Submissions held on the host until their waits are ready.
pub(super) struct Scheduler {
    held: Vec<Held>,
}

/// The process's scheduler, for every cuda device.
pub(super) static SCHEDULER: Mutex<Scheduler> = Mutex::new(Scheduler { held: Vec::new() });

/// How many submissions the scheduler holds, readable without its lock: a
/// submission that finds none held and its waits ready goes to its stream
/// without taking the lock (`submit_unlocked`). Written under the lock.
pub(super) static HELD: AtomicUsize = AtomicUsize::new(0);

struct Held {
    queue: Arc<QueueShared>,
    submission: Submission,
}

/// Where a submission's waits stand.
enum Readiness {
    /// One of them failed: the submission fails with its error.
    Failed(Error),
    /// Every one is reached or promised: it can go to the device.
    Ready,
    /// Some wait is neither.
    Held,
}

/// `locked`: promises are read under each timeline's lock (a submission
/// about to be held: see `submit_unlocked`).
fn readiness<S: Borrow<Semaphore>>(waits: &[(S, u64)], locked: bool) -> Readiness {
    let mut ready = true;
    for (semaphore, value) in waits {
        let s = match cuda_semaphore(semaphore.borrow()) {
            Ok(s) => s,
            Err(e) => return Readiness::Failed(e),
        };
        if let Some(e) = s.payload.failure() {
            return Readiness::Failed(e);
        }
        let promised = if locked { s.promised_locked() } else { s.promised() };
        ready &= s.payload.value() >= *value || promised >= *value;
    }
    if ready {
        Readiness::Ready
    } else {
        Readiness::Held
    }
}

/// Fails every signal semaphore of a submission that will not run; whether
/// there were any (host waiters must hear of it).
fn fail_signals<S: Borrow<Semaphore>>(signals: &[(S, u64)], error: &Error) -> bool {
    for (semaphore, _) in signals {
        if let Ok(s) = cuda_semaphore(semaphore.borrow()) {
            s.payload.mark_failed(error.clone());
        }
    }
    !signals.is_empty()
}

/// Queues or fails a submission whose waits are decided, without the
/// scheduler's lock, if the scheduler holds nothing; whether any semaphore
/// failed, or `None` if it must go through the lock.
///
/// What the lock otherwise orders: a submission held because its waits
/// were not ready must hear of promises and failures that come after its
/// check. The holder counts itself in [`HELD`] and then checks again; this
/// changes promises and failures and then reads [`HELD`], settling under
/// the lock if anything is held. A promise is read and made under its
/// timeline's lock, [`HELD`] read with it (`CudaSemaphore::signal_on`), so
/// whichever side takes the lock second sees the other's write. Failures
/// (rare) are ordered by a full fence between each side's write and read.
fn submit_unlocked<S: Borrow<Semaphore>>(
    queue: &QueueShared,
    waits: &[(S, u64)],
    commands: &mut Commands,
    signals: &[(S, u64)],
) -> Option<bool> {
    if HELD.load(Ordering::SeqCst) != 0 {
        return None;
    }
    let Queued { mut failed, held_work } = match readiness(waits, false) {
        Readiness::Held => return None,
        Readiness::Failed(e) => Queued { failed: fail_signals(signals, &e), held_work: false },
        Readiness::Ready => queue.enqueue(waits, commands, signals),
    };
    // Only signals change promises and failures (a failed wait or command
    // fails them): without any, held work has nothing to hear.
    let settle = held_work
        || failed && {
            fence(Ordering::SeqCst);
            HELD.load(Ordering::SeqCst) != 0
        };
    if settle {
        failed |= lock(&SCHEDULER).settle_held();
    }
    Some(failed)
}

/// What queueing a submission did.
struct Queued {
    /// Some semaphore failed.
    failed: bool,
    /// The scheduler held work when a signal promised its value: the work
    /// may be ready now.
    held_work: bool,
}

impl Scheduler {
    /// Queues, holds or fails a submission; whether any semaphore failed.
    fn submit(&mut self, queue: &Arc<QueueShared>, submission: Submission) -> bool {
        let mut decision = readiness(&submission.waits, false);
        if matches!(decision, Readiness::Held) {
            // Counted before checking again: see `submit_unlocked`.
            HELD.store(self.held.len() + 1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            decision = readiness(&submission.waits, true);
            if matches!(decision, Readiness::Held) {
                self.held.push(Held { queue: Arc::clone(queue), submission });
                return false;
            }
            HELD.store(self.held.len(), Ordering::SeqCst);
        }
        let Submission { waits, mut commands, signals } = submission;
        let failed = match decision {
            Readiness::Failed(e) => fail_signals(&signals, &e),
            _ => queue.enqueue(&waits, &mut commands, &signals).failed,
        };
        // New promises may make held work ready.
        failed | (!self.held.is_empty() && self.settle_held())
    }

    /// [`Settle::settle`]; whether any semaphore failed.
    fn settle_held(&mut self) -> bool {
        let mut failed = false;
        loop {
            let mut changed = false;
            let mut i = 0;
            while i < self.held.len() {
                let decision = readiness(&self.held[i].submission.waits, false);
                if matches!(decision, Readiness::Held) {
                    i += 1;
                    continue;
                }
                // In submission order, so that work ready together is queued
                // as it was submitted.
                let Held { queue, submission: Submission { waits, mut commands, signals } } = self.held.remove(i);
                HELD.store(self.held.len(), Ordering::SeqCst);
                failed |= match decision {
                    Readiness::Failed(e) => fail_signals(&signals, &e),
                    _ => queue.enqueue(&waits, &mut commands, &signals).failed,
                };
                changed = true;
            }
            if !changed {
                return failed;
            }
        }
    }
}

impl Settle for Scheduler {
    fn settle(&mut self) {
        // Host waiters hear of failures from the caller, which wakes them
        // whatever changed.
        self.settle_held();
    }
}

/// What the device still holds of a submission.
struct InFlight {
    seq: u64,
    /// Its commands, held for the buffers they hold; never read.
    _commands: Commands,
    /// Its signals where it spins: they fail when the queue goes.
    signals: SemaphoreList,
    uses: Uses,
}

/// What a submission's queued device work uses, besides the submission.
#[derive(Default)]
struct Uses {
    /// What its launches touch, and its update staging.
    buffers: Vec<Arc<CudaBuffer>>,
    staged: Vec<Pinned>,
    /// SPIN launches it queued.
    spinning: usize,
    /// Whether queued device work addresses its memory (buffers, staging).
    holds_memory: bool,
}

struct QueueState {
    /// Sequence number of the next submission queued.
    next: u64,
    /// Set by a command that failed: every later submission fails with it.
    fault: Option<Error>,
    closed: bool,
    in_flight: VecDeque<InFlight>,
    /// Events recorded after the submission of each sequence number, oldest
    /// first; from the device's pool.
    marks: VecDeque<(u64, CUevent)>,
    /// Idle events of the device's pool, taken a few at a time for its
    /// marks (`EventPool::record`).
    events: Vec<CUevent>,
    /// The command buffers it ran, as graphs once run again.
    graphs: Graphs,
    /// The stream graphs are captured on, made on first use (null before):
    /// not the queue's, whose work would be captured too (`queue_edge`).
    capture: CUstream,
}

pub(super) struct QueueShared {
    shared: Arc<Shared>,
    stream: CUstream,
    /// A u32 that stops the queue's SPIN launches when set.
    closing: Pinned,
    /// A spin lock (`spin_lock.rs`): every submission with commands takes
    /// it.
    state: SpinLock<QueueState>,
    /// Whether a submission of no commands may skip the state's lock
    /// (`queue_edge`): no fault, not closed, and no work in flight, which
    /// only the locked way lets go of (every [`PROGRESS_EVERY`]
    /// submissions). Stored under the lock after each change.
    unlocked_edges: AtomicBool,
}

// SAFETY: streams and events may be used from any thread; the state is
// locked.
unsafe impl Send for QueueShared {}
// SAFETY: as above.
unsafe impl Sync for QueueShared {}

impl QueueShared {
    /// Queues a ready submission on the stream, or fails its signals (and
    /// says so). Called with the scheduler locked, or by `submit_unlocked`.
    /// The commands are taken only if the device keeps them: lent, they are
    /// not copied.
    fn enqueue<S: Borrow<Semaphore>>(
        &self,
        waits: &[(S, u64)],
        commands: &mut Commands,
        signals: &[(S, u64)],
    ) -> Queued {
        if matches!(commands, Commands::None) && self.unlocked_edges.load(Ordering::Acquire) {
            let e = match self.queue_edge(waits, signals) {
                Ok(held_work) => return Queued { failed: false, held_work },
                Err(e) => e,
            };
            // As a failed command does, the failure stops the queue; held
            // work hears of the failed signals (`submit_unlocked`).
            let mut state = self.state.lock();
            if state.fault.is_none() && !state.closed {
                state.fault = Some(e.clone());
                self.unlocked_edges.store(false, Ordering::Release);
            }
            return Queued { failed: fail_signals(signals, &e), held_work: false };
        }
        let mut state = self.state.lock();
        if state.closed || state.fault.is_some() {
            let refused = match &state.fault {
                Some(e) if !state.closed => e.clone(),
                _ => Error::Cancelled("the queue was destroyed before this work ran".into()),
            };
            return Queued { failed: fail_signals(signals, &refused), held_work: false };
        }
        let seq = state.next;
        state.next += 1;
        let mut uses = Uses::default();
        let mut held_work = false;
        let queued = self.queue_work(seq, waits, commands, signals, &mut uses, &mut held_work, &mut state);
        let failed = queued.err().is_some_and(|e| {
            let failed = fail_signals(signals, &e);
            state.fault = Some(e);
            failed
        });
        // Kept even after a failure: the device may hold part of it. What the
        // device does not address (an empty launch, say) goes at once, while
        // its memory is still in the cache.
        if uses.holds_memory || uses.spinning > 0 {
            let signals = match uses.spinning {
                0 => Vec::new(),
                _ => signals.iter().map(|(s, v)| (s.borrow().clone(), *v)).collect(),
            };
            let commands = std::mem::replace(commands, Commands::None);
            state.in_flight.push_back(InFlight { seq, _commands: commands, signals, uses });
        } else {
            // Nothing to free (what keeps memory sets `holds_memory`): its
            // drop glue, called out of line, costs as much as a lock.
            debug_assert!(uses.buffers.is_empty() && uses.staged.is_empty());
            std::mem::forget(uses);
        }
        let unlocked = state.fault.is_none() && state.in_flight.is_empty();
        self.unlocked_edges.store(unlocked, Ordering::Release);
        Queued { failed, held_work }
    }

    /// Queues the device waits, the commands, the signals and maybe a
    /// progress report. A command that fails (a fault of a built-in, found
    /// on the host before its launch) leaves the commands before it queued,
    /// as the host backend has run them, and nothing after it. `held_work`
    /// is set if a signal's promise found work held (`signal_on`).
    #[allow(clippy::too_many_arguments)]
    fn queue_work<S: Borrow<Semaphore>>(
        &self,
        seq: u64,
        waits: &[(S, u64)],
        commands: &Commands,
        signals: &[(S, u64)],
        uses: &mut Uses,
        held_work: &mut bool,
        state: &mut QueueState,
    ) -> Result<()> {
        // Launches and the waits and signals around them name their stream
        // and events; graphs and update staging need the context current.
        let _current = match commands {
            Commands::None | Commands::One(Command(Op::Dispatch(_))) => self.shared.ctx.enter_for_streams()?,
            _ => self.shared.ctx.enter()?,
        };
        let mut locked = self.queue_waits(waits)?;
        // No timeline stays locked across commands.
        if !commands.is_empty() {
            locked = None;
        }
        let as_graph = match commands {
            Commands::Recorded(recording) => self.replay(recording, uses, state)?,
            _ => false,
        };
        if !as_graph {
            for command in commands.iter() {
                self.queue_command(self.stream, command, None, uses)?;
            }
        }
        // A SPIN launch ends only when its queue goes, failing its signals:
        // they get no timepoint, so nothing waits for them on the device.
        if uses.spinning == 0 {
            *held_work |= self.queue_signals(locked, signals)?;
        }
        if seq % PROGRESS_EVERY == 0 {
            self.mark_progress(seq, state)?;
        }
        Ok(())
    }

    /// Queues a launch that has no waits and no signals (`dispatch_alone`)
    /// the short way: checked and translated before the queue's state is
    /// locked, no timelines, and nothing kept unless it addresses buffers.
    /// Whether it did (or failed the queue with it, as a failed command
    /// does); if not (the scheduler holds work, the launch faults on the
    /// host or is SPIN, the queue is stopped), the general way queues or
    /// refuses it as it does any submission.
    #[inline(always)]
    fn dispatch_alone(&self, launch: &Launch) -> bool {
        // Nothing held can wait on it (it signals nothing), but the general
        // way is the one that orders with held work.
        if HELD.load(Ordering::SeqCst) != 0 {
            return false;
        }
        // Used where it was made: moved out of the `Result`, the launch is
        // copied field by field.
        let mut made = Prepared::new(&self.shared, self.closing.device(), launch);
        let Ok(prepared) = &mut made else { return general_way(made) };
        if prepared.spins() {
            return general_way(made);
        }
        let mut state = self.state.lock();
        if state.closed || state.fault.is_some() {
            drop(state);
            return general_way(made);
        }
        let seq = state.next;
        state.next += 1;
        if let Err(e) = self.launch_alone(seq, prepared, &mut state) {
            fail_queue(&mut state, e);
        }
        // Both read, no branch: the way on stays one straight line.
        self.unlocked_edges.store(state.fault.is_none() & state.in_flight.is_empty(), Ordering::Release);
        drop(state);
        // Its buffers went in flight with it, unless the driver refused it:
        // most launches leave nothing to drop, and the drop glue, called out
        // of line, costs more than this test.
        if prepared.buffers().capacity() == 0 {
            std::mem::forget(made);
        }
        true
    }

    /// [`QueueShared::dispatch_alone`]'s launch, its buffers kept in flight
    /// and its progress mark.
    #[inline(always)]
    fn launch_alone(&self, seq: u64, prepared: &mut Prepared, state: &mut QueueState) -> Result<()> {
        let _current = self.shared.ctx.enter_for_streams()?;
        // SAFETY: the stream is ours and live; the buffers the launch
        // addresses are kept in flight until the device has passed it.
        unsafe { prepared.launch(self.shared.ctx.api(), self.stream)? };
        if !prepared.buffers().is_empty() {
            keep_in_flight(seq, prepared, state);
        }
        if seq % PROGRESS_EVERY == 0 {
            self.mark_progress(seq, state)?;
        }
        Ok(())
    }

    /// Records the event that tells when the device has passed submission
    /// `seq`, after letting go of what earlier marks found done. The
    /// device's context is entered for streams. Out of line: one
    /// submission in [`PROGRESS_EVERY`] calls it.
    #[inline(never)]
    fn mark_progress(&self, seq: u64, state: &mut QueueState) -> Result<()> {
        self.note_progress(state)?;
        // SAFETY: the stream is ours and live; the event is the pool's.
        let event = unsafe { self.shared.events.record(&mut state.events, &self.shared.ctx, self.stream)? };
        state.marks.push_back((seq, event));
        Ok(())
    }

    /// Queues a submission of no commands, without the queue's state: its
    /// waits and signals use only the stream and the semaphores' timelines
    /// (and their idle events), and it holds nothing for the device to
    /// pass. Calls of another thread's submission to this queue may come
    /// between its driver calls: that only orders the stream's work more
    /// than asked, and a graph is captured on a stream of its own
    /// (`replay`). Whether a signal's promise found work held.
    #[inline(always)]
    fn queue_edge<S: Borrow<Semaphore>>(&self, waits: &[(S, u64)], signals: &[(S, u64)]) -> Result<bool> {
        let _current = self.shared.ctx.enter_for_streams()?;
        let locked = self.queue_waits(waits)?;
        self.queue_signals(locked, signals)
    }

    /// Makes the stream wait for `waits` on the device. The last wait's
    /// timeline comes back locked, for a signal of the same semaphore;
    /// taken before the next is locked: never two together. The device's
    /// context is entered for streams (`Context::enter_for_streams`).
    #[inline(always)]
    fn queue_waits<'a, S: Borrow<Semaphore>>(&self, waits: &'a [(S, u64)]) -> Result<Option<Locked<'a>>> {
        let mut locked = None;
        for (semaphore, value) in waits {
            drop(locked.take());
            // SAFETY: the stream is ours and live.
            locked = Some(unsafe { cuda_semaphore(semaphore.borrow())?.queue_wait(self.stream, *value)? });
        }
        Ok(locked)
    }

    /// Signals `signals` from the stream, once what is queued on it is done
    /// (`signal_on`; `locked`: see `queue_waits`); whether a promise found
    /// work held. The device's context is entered for streams.
    #[inline(always)]
    fn queue_signals<S: Borrow<Semaphore>>(
        &self,
        mut locked: Option<Locked<'_>>,
        signals: &[(S, u64)],
    ) -> Result<bool> {
        let mut held_work = false;
        for (semaphore, value) in signals {
            let s = match &locked {
                // The last wait's, cast already: an edge from queue to queue
                // then casts its semaphore once here, not twice.
                Some(held) if std::ptr::addr_eq(semaphore.borrow().backend(), held.of) => held.of,
                _ => cuda_semaphore(semaphore.borrow())?,
            };
            // SAFETY: the stream is ours and live.
            held_work |= unsafe { s.signal_on(locked.take(), &self.shared, self.stream, *value)? };
        }
        Ok(held_work)
    }

    /// Queues one command on `stream`, the queue's or its capture stream; a
    /// dispatch checked and translated already comes as `prepared`. The
    /// device's context is current, or entered for streams for a dispatch.
    fn queue_command(
        &self,
        stream: CUstream,
        command: &Command,
        prepared: Option<Prepared>,
        uses: &mut Uses,
    ) -> Result<()> {
        let (shared, api) = (&self.shared, self.shared.ctx.api());
        uses.holds_memory |= !matches!(command.0, Op::Dispatch(_) | Op::Barrier);
        // SAFETY (every call below): the stream is ours and live; the memory
        // it touches belongs to buffers and staging kept in flight until the
        // device has passed them.
        match &command.0 {
            Op::Fill { target, offset, length, pattern } => {
                let count = (length / pattern.size()) as usize;
                if count > 0 {
                    unsafe { api.memset_async(stream, cuda_buffer(target)?.ptr(*offset), *pattern, count)? };
                }
            }
            Op::Copy { source, source_offset, target, target_offset, length } if *length > 0 => {
                let (src, dst) = (cuda_buffer(source)?.ptr(*source_offset), cuda_buffer(target)?.ptr(*target_offset));
                unsafe { api.memcpy_async(stream, dst, src, *length as usize)? };
            }
            Op::Update { data, target, offset } if !data.is_empty() => {
                let staging = Pinned::new(shared, data.len())?;
                staging.write(0, data);
                unsafe { api.memcpy_async(stream, cuda_buffer(target)?.ptr(*offset), staging.device(), data.len())? };
                uses.staged.push(staging);
            }
            Op::Dispatch(launch) => {
                let mut prepared = match prepared {
                    Some(prepared) => prepared,
                    None => Prepared::new(shared, self.closing.device(), launch)?,
                };
                unsafe { prepared.launch(api, stream)? };
                if prepared.spins() {
                    spin_started();
                    uses.spinning += 1;
                }
                uses.holds_memory |= !prepared.buffers().is_empty();
                uses.buffers.append(prepared.buffers());
            }
            // One stream runs its work in order: every command is behind a
            // barrier already. Empty copies and updates do nothing.
            Op::Barrier | Op::Copy { .. } | Op::Update { .. } => {}
        }
        Ok(())
    }

    /// Runs a recording as a graph (`graph.rs`) where it can: from its
    /// second execution on this queue, when every launch passes the host's
    /// checks. Whether it did; if not, the caller runs it command by
    /// command. The device's context is current.
    fn replay(&self, recording: &Arc<[Command]>, uses: &mut Uses, state: &mut QueueState) -> Result<bool> {
        if !graph::capturable(recording) {
            return Ok(false);
        }
        let QueueState { graphs, capture, .. } = state;
        let Some(captured) = graphs.seen(recording) else { return Ok(false) };
        // Every execution checks its launches; one that fails runs command
        // by command, which queues what comes before it and fails there.
        let mut prepared = Vec::new();
        let mut key = Vec::new();
        for command in recording.iter() {
            match &command.0 {
                Op::Dispatch(launch) => match Prepared::new(&self.shared, self.closing.device(), launch) {
                    Ok(p) if !p.spins() => {
                        p.key(&mut key);
                        prepared.push(p);
                    }
                    _ => return Ok(false),
                },
                Op::Fill { target, offset, .. } => key.push(cuda_buffer(target)?.ptr(*offset)),
                Op::Copy { source, source_offset, target, target_offset, .. } => {
                    key.extend([cuda_buffer(source)?.ptr(*source_offset), cuda_buffer(target)?.ptr(*target_offset)])
                }
                Op::Barrier | Op::Update { .. } => {}
            }
        }
        let (api, stream) = (self.shared.ctx.api(), self.stream);
        let graph: &Captured = match captured {
            Some(graph) if graph.matches(&key) => {
                for mut p in prepared {
                    uses.holds_memory |= !p.buffers().is_empty();
                    uses.buffers.append(p.buffers());
                }
                uses.holds_memory |= recording.iter().any(|c| !matches!(c.0, Op::Dispatch(_) | Op::Barrier));
                graph
            }
            slot => {
                if let Some(stale) = slot.take() {
                    // SAFETY: the context is current; runs still queued
                    // keep what they need until they are done.
                    unsafe { stale.destroy(api) };
                }
                if capture.is_null() {
                    match api.stream_create() {
                        Ok(made) => *capture = made,
                        Err(_) => return Ok(false),
                    }
                }
                let on = *capture;
                let mut launches = prepared.into_iter();
                let queue_all = || -> Result<()> {
                    for command in recording.iter() {
                        let p = matches!(command.0, Op::Dispatch(_)).then(|| launches.next()).flatten();
                        self.queue_command(on, command, p, uses)?;
                    }
                    Ok(())
                };
                // SAFETY: the capture stream is ours, live and not capturing.
                match unsafe { Captured::capture(api, on, key, queue_all) } {
                    Ok(graph) => slot.insert(graph),
                    // Nothing ran: command by command, the failure is its own.
                    Err(_) => return Ok(false),
                }
            }
        };
        // SAFETY: the stream is ours and live; the buffers the graph
        // addresses are kept in flight with the submission.
        unsafe { graph.launch(api, stream)? };
        Ok(true)
    }

    /// Lets go of the work that the device has passed, as far as the marks
    /// found done say. The device's context is entered for streams.
    fn note_progress(&self, state: &mut QueueState) -> Result<()> {
        let api = self.shared.ctx.api();
        let mut done = None;
        while let Some(&(seq, event)) = state.marks.front() {
            // SAFETY: the pool's events are live.
            if !unsafe { api.event_query(event)? } {
                break;
            }
            done = Some(seq);
            state.marks.pop_front();
            self.shared.events.give_back([event]);
        }
        if let Some(done) = done {
            while state.in_flight.front().is_some_and(|f| f.seq <= done) {
                state.in_flight.pop_front();
            }
        }
        Ok(())
    }
}

// What `dispatch_alone` does off its way, out of line: a lone launch runs
// straight through the instructions it needs, which the H100 machine's CPU
// finds in fewer cache lines after each driver call.

/// A lone launch that goes the general way after all: drops what
/// `dispatch_alone` translated.
#[cold]
#[inline(never)]
fn general_way(_made: Result<Prepared<'_>>) -> bool {
    false
}

/// A lone launch that failed on its queue's stream stops the queue.
#[cold]
#[inline(never)]
fn fail_queue(state: &mut QueueState, e: Error) {
    state.fault = Some(e);
}

/// Keeps a queued lone launch's buffers until the device has passed it.
#[inline(never)]
fn keep_in_flight(seq: u64, prepared: &mut Prepared<'_>, state: &mut QueueState) {
    let uses = Uses { buffers: std::mem::take(prepared.buffers()), holds_memory: true, ..Uses::default() };
    state.in_flight.push_back(InFlight { seq, _commands: Commands::None, signals: SemaphoreList::new(), uses });
}

impl Drop for QueueShared {
    fn drop(&mut self) {
        if let Ok(_current) = self.shared.ctx.enter() {
            let api = self.shared.ctx.api();
            // SAFETY: the stream is ours, idle (synchronised when the queue
            // was destroyed) and not used again, nor are its graphs.
            unsafe {
                let state = self.state.get_mut();
                state.graphs.clear(api);
                if !state.capture.is_null() {
                    let _ = api.stream_destroy(state.capture);
                }
                let _ = api.stream_destroy(self.stream);
            }
        }
    }
}

/// A queue of the cuda backend.
pub(super) struct CudaQueue {
    queue: Arc<QueueShared>,
}

impl CudaQueue {
    pub(super) fn new(shared: &Arc<Shared>) -> Result<Self> {
        let closing = Pinned::new(shared, 4)?;
        let stream = {
            let _current = shared.ctx.enter()?;
            shared.ctx.api().stream_create()?
        };
        let state = SpinLock::new(QueueState {
            next: 1,
            fault: None,
            closed: false,
            in_flight: VecDeque::new(),
            marks: VecDeque::new(),
            events: Vec::new(),
            graphs: Graphs::default(),
            capture: std::ptr::null_mut(),
        });
        let unlocked_edges = AtomicBool::new(true);
        Ok(Self { queue: Arc::new(QueueShared { shared: Arc::clone(shared), stream, closing, state, unlocked_edges }) })
    }
}

impl BackendQueue for CudaQueue {
    fn dispatch_alone(&self, launch: &Launch) -> bool {
        self.queue.dispatch_alone(launch)
    }

    fn submit(&self, submission: Submission) -> Result<()> {
        let Submission { waits, mut commands, signals } = submission;
        let failed = match submit_unlocked(&self.queue, &waits, &mut commands, &signals) {
            Some(failed) => failed,
            None => lock(&SCHEDULER).submit(&self.queue, Submission { waits, commands, signals }),
        };
        if failed {
            HUB.notify();
        }
        Ok(())
    }

    /// The semaphores stay lent unless the work is held.
    fn submit_local(&self, waits: Points<'_>, commands: &mut Commands, signals: Points<'_>) -> Result<()> {
        let failed = match submit_unlocked(&self.queue, waits, commands, signals) {
            Some(failed) => failed,
            None => {
                let commands = std::mem::replace(commands, Commands::None);
                lock(&SCHEDULER).submit(&self.queue, Submission::owning(waits, commands, signals))
            }
        };
        if failed {
            HUB.notify();
        }
        Ok(())
    }
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        let shared = &self.queue.shared;
        let mut scheduler = lock(&SCHEDULER);
        // Work held on the host never reaches the device.
        let (mine, others) =
            std::mem::take(&mut scheduler.held).into_iter().partition(|h| Arc::ptr_eq(&h.queue, &self.queue));
        scheduler.held = others;
        HELD.store(scheduler.held.len(), Ordering::SeqCst);
        let cancelled = Error::Cancelled("the queue was destroyed before this work ran".into());
        for held in mine {
            fail_signals(&held.submission.signals, &cancelled);
        }
        {
            let mut state = self.queue.state.lock();
            state.closed = true;
            self.queue.unlocked_edges.store(false, Ordering::Release);
            let stopped = Error::Cancelled("the queue was destroyed while a launch was running".into());
            for work in state.in_flight.iter().filter(|w| w.uses.spinning > 0) {
                fail_signals(&work.signals, &stopped);
            }
        }
        // Ends SPIN launches.
        self.queue.closing.u32_at(0).store(1, Ordering::SeqCst);
        scheduler.settle();
        drop(scheduler);
        HUB.notify();
        // What the device has cannot be recalled: wait for it, then let go of
        // its memory.
        if let Ok(_current) = shared.ctx.enter() {
            // SAFETY: the stream is ours and live.
            let _ = unsafe { shared.ctx.api().stream_synchronize(self.queue.stream) };
        }
        let (in_flight, marks, events) = {
            let mut state = self.queue.state.lock();
            (std::mem::take(&mut state.in_flight), std::mem::take(&mut state.marks), std::mem::take(&mut state.events))
        };
        shared.events.give_back(marks.into_iter().map(|(_, event)| event).chain(events));
        spins_stopped(in_flight.iter().map(|w| w.uses.spinning).sum());
    }
}
