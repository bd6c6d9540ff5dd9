// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queues of the cuda backend: one non-blocking CUDA stream each, and the
//! device-wide scheduler that decides when a submission may go to one.
//!
//! A submission goes to its stream as soon as every wait is reached or
//! *promised* (device work already queued will write a value at least as
//! high); the device then waits for the promised ones itself
//! (a 64-bit GEQ stream wait on the semaphore's device-memory mirror), so a
//! dependency between queues costs no host
//! round trip. A submission with a wait nobody has promised yet (a value
//! the host will signal, or work not yet submitted) is held on the host
//! until a host signal or another submission makes it ready, or a failure
//! fails it. So the device only ever waits for work queued before the wait:
//! streams never deadlock, and a failed semaphore never has device waiters,
//! which is how "an operation behind a failed wait does not run" holds
//! without the device knowing about failures. (The one gap: failing from
//! the host a semaphore that queued device work has promised does not stop
//! device work already waiting for that promise.)
//!
//! Waits and signals are 64-bit stream memory operations
//! (`cuStreamBatchMemOp`), batched. Faults of the built-in kernels are found
//! on the host (`module.rs`) before the launch is queued; they fail the
//! submission's signals and stop the queue, as on the host backend. Queued
//! work keeps its buffers, semaphores and staging memory until the device
//! has passed it, which the stream reports every [`PROGRESS_EVERY`]
//! submissions by writing its sequence number.

use super::{
    device::Shared,
    memory::{cuda_buffer, spin_started, spins_stopped, CudaBuffer, Pinned},
    module::Prepared,
    result::Api,
    semaphore::cuda_semaphore,
    sys::{
        CUdeviceptr, CUstream, CUstreamBatchMemOpParams, CU_STREAM_MEM_OP_WAIT_VALUE_64, CU_STREAM_MEM_OP_WRITE_VALUE_64,
        CU_STREAM_WAIT_VALUE_GEQ, CU_STREAM_WRITE_VALUE_DEFAULT,
    },
};
use crate::{
    backend::{BackendQueue, Submission},
    command_buffer::Op,
    lock::lock,
    Error,
    Result,
    SemaphoreList,
};
use std::{
    collections::VecDeque,
    ffi::c_uint,
    sync::{atomic::Ordering, Arc, Mutex},
};

/// How often (in submissions) a stream reports its progress: a write per
/// submission would cost as much as the rest of a small submission.
const PROGRESS_EVERY: u64 = 128;
/// Offsets in a queue's control memory: the u32 that stops SPIN, and the
/// u64 sequence number of the last submission the device reported done.
const CLOSING: usize = 0;
const PROGRESS: usize = 8;

/// Submissions held on the host until their waits are ready.
#[derive(Default)]
pub(super) struct Scheduler {
    held: Vec<Held>,
}

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

fn readiness(waits: &SemaphoreList) -> Readiness {
    let mut ready = true;
    for (semaphore, value) in waits {
        let s = match cuda_semaphore(semaphore) {
            Ok(s) => s,
            Err(e) => return Readiness::Failed(e),
        };
        if let Some(e) = s.failure() {
            return Readiness::Failed(e);
        }
        ready &= s.value() >= *value || s.promised() >= *value;
    }
    if ready {
        Readiness::Ready
    } else {
        Readiness::Held
    }
}

/// Fails every signal semaphore of a submission that will not run; whether
/// there were any (host waiters must hear of it).
fn fail_signals(signals: &SemaphoreList, error: &Error) -> bool {
    for (semaphore, _) in signals {
        if let Ok(s) = cuda_semaphore(semaphore) {
            s.mark_failed(error.clone());
        }
    }
    !signals.is_empty()
}

impl Scheduler {
    /// Queues, holds or fails a submission; whether any semaphore failed.
    fn submit(&mut self, queue: &Arc<QueueShared>, submission: Submission) -> bool {
        let failed = match readiness(&submission.waits) {
            Readiness::Held => {
                self.held.push(Held { queue: Arc::clone(queue), submission });
                return false;
            }
            Readiness::Failed(e) => fail_signals(&submission.signals, &e),
            Readiness::Ready => queue.enqueue(submission),
        };
        // New promises may make held work ready.
        failed | (!self.held.is_empty() && self.settle())
    }

    /// Queues or fails every held submission that a change (a signal, a
    /// failure, new promises) has decided, until nothing changes; whether any
    /// semaphore failed.
    pub(super) fn settle(&mut self) -> bool {
        let mut failed = false;
        loop {
            let mut changed = false;
            let mut i = 0;
            while i < self.held.len() {
                let decision = readiness(&self.held[i].submission.waits);
                if matches!(decision, Readiness::Held) {
                    i += 1;
                    continue;
                }
                // In submission order, so that work ready together is queued
                // as it was submitted.
                let Held { queue, submission } = self.held.remove(i);
                failed |= match decision {
                    Readiness::Failed(e) => fail_signals(&submission.signals, &e),
                    _ => queue.enqueue(submission),
                };
                changed = true;
            }
            if !changed {
                return failed;
            }
        }
    }
}

/// What the device still holds of a submission.
struct InFlight {
    seq: u64,
    submission: Submission,
    /// What its launches touch, and its update staging.
    buffers: Vec<Arc<CudaBuffer>>,
    staged: Vec<Pinned>,
    /// SPIN launches it queued.
    spinning: usize,
    /// Whether queued device work addresses its memory (buffers, staging,
    /// semaphores).
    holds_memory: bool,
}

struct QueueState {
    /// Sequence number of the next submission queued.
    next: u64,
    /// Set by a command that failed: every later submission fails with it.
    fault: Option<Error>,
    closed: bool,
    in_flight: VecDeque<InFlight>,
}

pub(super) struct QueueShared {
    shared: Arc<Shared>,
    stream: CUstream,
    control: Pinned,
    state: Mutex<QueueState>,
}

// SAFETY: streams may be used from any thread; the state is locked.
unsafe impl Send for QueueShared {}
// SAFETY: as above.
unsafe impl Sync for QueueShared {}

impl QueueShared {
    /// Queues a ready submission on the stream, or fails its signals (and
    /// says so). Called with the scheduler locked.
    fn enqueue(&self, submission: Submission) -> bool {
        let mut state = lock(&self.state);
        let done = self.control.u64_at(PROGRESS).load(Ordering::Acquire);
        while state.in_flight.front().is_some_and(|f| f.seq <= done) {
            state.in_flight.pop_front();
        }
        let refused = if state.closed {
            Some(Error::Cancelled("the queue was destroyed before this work ran".into()))
        } else {
            state.fault.clone()
        };
        if let Some(e) = refused {
            return fail_signals(&submission.signals, &e);
        }
        let seq = state.next;
        state.next += 1;
        let mut work = InFlight { seq, submission, buffers: Vec::new(), staged: Vec::new(), spinning: 0, holds_memory: false };
        let failed = self.queue_work(&mut work).err().is_some_and(|e| {
            let failed = fail_signals(&work.submission.signals, &e);
            state.fault = Some(e);
            failed
        });
        // Kept even after a failure: the device may hold part of it. What the
        // device does not address (an empty launch, say) goes at once, while
        // its memory is still in the cache.
        if work.holds_memory || work.spinning > 0 {
            state.in_flight.push_back(work);
        }
        failed
    }

    /// Queues the device waits, the commands, the signals and maybe a
    /// progress report. A command that fails (a fault of a built-in, found
    /// on the host before its launch) leaves the commands before it queued,
    /// as the host backend has run them, and nothing after it.
    fn queue_work(&self, work: &mut InFlight) -> Result<()> {
        let shared = &self.shared;
        let stream = self.stream;
        let closing = self.control.device() + CLOSING as u64;
        let Submission { waits, commands, signals } = &work.submission;
        let api = shared.ctx.api();
        let _current = shared.ctx.enter()?;
        let mut batch = Batch { api, stream, ops: [mem_op(0, 0, 0, 0); BATCH], len: 0 };
        // SAFETY (every call below): the stream is ours and live; the memory
        // it touches belongs to buffers, semaphores and staging that `work`
        // keeps until the device has passed it.
        // The device waits only for values not yet reached.
        for (semaphore, value) in waits {
            let s = cuda_semaphore(semaphore)?;
            if s.value() < *value {
                work.holds_memory = true;
                unsafe { batch.push(mem_op(CU_STREAM_MEM_OP_WAIT_VALUE_64, s.wait_address(), *value, CU_STREAM_WAIT_VALUE_GEQ))? };
            }
        }
        // Waits and signals around no commands (a barrier) go in one call.
        if !commands.is_empty() {
            batch.flush()?;
        }
        for command in commands.iter() {
            work.holds_memory |= !matches!(command.0, Op::Dispatch(_) | Op::Barrier);
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
                    work.staged.push(staging);
                }
                Op::Dispatch(launch) => {
                    let mut prepared = Prepared::new(shared, closing, launch)?;
                    unsafe { prepared.launch(api, stream)? };
                    if prepared.spins {
                        spin_started();
                        work.spinning += 1;
                    }
                    work.holds_memory |= !prepared.buffers.is_empty();
                    work.buffers.append(&mut prepared.buffers);
                }
                // One stream runs its work in order: every command is behind
                // a barrier already. Empty copies and updates do nothing.
                Op::Barrier | Op::Copy { .. } | Op::Update { .. } => {}
            }
        }
        work.holds_memory |= !signals.is_empty();
        for (semaphore, value) in signals {
            for address in cuda_semaphore(semaphore)?.signal_addresses() {
                unsafe { batch.push(mem_op(CU_STREAM_MEM_OP_WRITE_VALUE_64, address, *value, CU_STREAM_WRITE_VALUE_DEFAULT))? };
            }
        }
        if work.seq % PROGRESS_EVERY == 0 {
            let progress = self.control.device() + PROGRESS as u64;
            unsafe { batch.push(mem_op(CU_STREAM_MEM_OP_WRITE_VALUE_64, progress, work.seq, CU_STREAM_WRITE_VALUE_DEFAULT))? };
        }
        batch.flush()?;
        // A SPIN launch ends only when its queue goes, failing its signals:
        // nothing may wait for them on the device.
        if work.spinning == 0 {
            for (semaphore, value) in signals {
                cuda_semaphore(semaphore)?.promise(*value);
            }
        }
        Ok(())
    }
}

/// Stream memory operations per driver call: enough for most submissions'
/// waits or signals, few enough that setting up the batch costs nothing
/// (the driver takes up to 256).
const BATCH: usize = 4;

/// Waits and writes gathered into as few driver calls as possible, in
/// order, without touching the heap.
struct Batch {
    api: Api,
    stream: CUstream,
    ops: [CUstreamBatchMemOpParams; BATCH],
    len: usize,
}

impl Batch {
    /// # Safety
    /// The op's address stays valid until the stream has passed it.
    unsafe fn push(&mut self, op: CUstreamBatchMemOpParams) -> Result<()> {
        if self.len == BATCH {
            self.flush()?;
        }
        self.ops[self.len] = op;
        self.len += 1;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.len > 0 {
            // SAFETY: the stream is live, and `push`'s callers vouch for the
            // addresses.
            unsafe { self.api.stream_mem_ops(self.stream, &mut self.ops[..self.len])? };
            self.len = 0;
        }
        Ok(())
    }
}

/// One 64-bit wait or write of a batch.
fn mem_op(operation: c_uint, address: CUdeviceptr, value: u64, flags: c_uint) -> CUstreamBatchMemOpParams {
    CUstreamBatchMemOpParams { operation, address, value, flags, alias: 0, pad: 0 }
}

impl Drop for QueueShared {
    fn drop(&mut self) {
        if let Ok(_current) = self.shared.ctx.enter() {
            // SAFETY: the stream is ours, idle (synchronised when the queue
            // was destroyed) and not used again.
            let _ = unsafe { self.shared.ctx.api().stream_destroy(self.stream) };
        }
    }
}

/// A queue of the cuda backend.
pub(super) struct CudaQueue {
    queue: Arc<QueueShared>,
}

impl CudaQueue {
    pub(super) fn new(shared: &Arc<Shared>) -> Result<Self> {
        let control = Pinned::new(shared, 16)?;
        let stream = {
            let _current = shared.ctx.enter()?;
            shared.ctx.api().stream_create()?
        };
        let state = Mutex::new(QueueState { next: 1, fault: None, closed: false, in_flight: VecDeque::new() });
        Ok(Self { queue: Arc::new(QueueShared { shared: Arc::clone(shared), stream, control, state }) })
    }
}

impl BackendQueue for CudaQueue {
    fn submit(&self, submission: Submission) -> Result<()> {
        let shared = &self.queue.shared;
        let failed = lock(&shared.scheduler).submit(&self.queue, submission);
        if failed {
            shared.hub.notify();
        }
        Ok(())
    }
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        let shared = &self.queue.shared;
        let mut scheduler = lock(&shared.scheduler);
        // Work held on the host never reaches the device.
        let (mine, others) = std::mem::take(&mut scheduler.held).into_iter().partition(|h| Arc::ptr_eq(&h.queue, &self.queue));
        scheduler.held = others;
        let cancelled = Error::Cancelled("the queue was destroyed before this work ran".into());
        for held in mine {
            fail_signals(&held.submission.signals, &cancelled);
        }
        {
            let mut state = lock(&self.queue.state);
            state.closed = true;
            let stopped = Error::Cancelled("the queue was destroyed while a launch was running".into());
            for work in state.in_flight.iter().filter(|w| w.spinning > 0) {
                fail_signals(&work.submission.signals, &stopped);
            }
        }
        // Ends SPIN launches.
        self.queue.control.u32_at(CLOSING).store(1, Ordering::SeqCst);
        scheduler.settle();
        drop(scheduler);
        shared.hub.notify();
        // What the device has cannot be recalled: wait for it, then let go of
        // its memory.
        if let Ok(_current) = shared.ctx.enter() {
            // SAFETY: the stream is ours and live.
            let _ = unsafe { shared.ctx.api().stream_synchronize(self.queue.stream) };
        }
        let in_flight = std::mem::take(&mut lock(&self.queue.state).in_flight);
        spins_stopped(in_flight.iter().map(|w| w.spinning).sum());
    }
}
