// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queues of the hsa backend: one AQL queue each, the packets a submission
//! becomes, and the device-wide scheduler that decides when a submission
//! may go to its queue.
//!
//! Documentation/design/libradiance.md (`hsa/queue.rs`) has the rest of its story.

use super::{
    buffer::{hsa_buffer, HsaBuffer, PoolMemory},
    device::{Shared, HAL_COPY, HAL_FILL},
    epoch::{self, NotificationRing},
    packet::{self, KernelObject, RingSlot, Words},
    result::Api,
    semaphore::{hsa_semaphore, QueueKey},
    sys::*,
};
use crate::{
    backend::{BackendQueue, Submission},
    command_buffer::Op,
    host_waits::Settle,
    lock::lock,
    native_launch::{Addressed, NativeLaunch, SPIN},
    Error, Launch, Result, SemaphoreList, StatusCode,
};
use std::{
    ffi::c_void,
    sync::{
        atomic::{AtomicU32, AtomicU64, Ordering},
        Arc, Mutex,
    },
};

/// Packets per AQL queue (a power of two).
const RING_PACKETS: u32 = 4096;
/// Work-items per workgroup of the HAL's fill and copy.
const HAL_WORKGROUP: u16 = 256;
/// Bytes per fill or copy dispatch: AQL grids count work-items in a u32.
const HAL_CHUNK: u64 = 1 << 30;
/// ROCr's limit on work-items per workgroup.
const MAX_WORKGROUP: u64 = 1024;

/// Submissions held on the host until their waits are reached or promised.
#[derive(Default)]
pub(super) struct Scheduler {
    held: Vec<(Arc<QueueShared>, Submission)>,
}

/// Where a submission's waits stand: `Err` if one failed, `Ok(true)` if
/// every one is reached or promised.
fn ready(waits: &SemaphoreList) -> Result<bool> {
    let mut ready = true;
    for (semaphore, value) in waits {
        let s = hsa_semaphore(semaphore)?;
        if let Some(e) = s.payload.failure() {
            return Err(e);
        }
        ready &= s.reached_or_promised(*value);
    }
    Ok(ready)
}

/// Fails every signal semaphore of a submission that will not run.
fn fail_signals(signals: &SemaphoreList, error: &Error) {
    for (semaphore, _) in signals {
        if let Ok(s) = hsa_semaphore(semaphore) {
            s.payload.mark_failed(error.clone());
        }
    }
}

impl Scheduler {
    fn submit(&mut self, queue: &Arc<QueueShared>, submission: Submission) {
        match ready(&submission.waits) {
            Ok(false) => return self.held.push((Arc::clone(queue), submission)),
            Err(e) => fail_signals(&submission.signals, &e),
            Ok(true) => queue.enqueue(submission),
        }
        // New promises may make held work ready.
        self.settle();
    }
}

impl Settle for Scheduler {
    /// In submission order, until nothing changes.
    fn settle(&mut self) {
        while let Some(i) = self.held.iter().position(|(_, s)| !matches!(ready(&s.waits), Ok(false))) {
            let (queue, submission) = self.held.remove(i);
            match ready(&submission.waits) {
                Err(e) => fail_signals(&submission.signals, &e),
                _ => queue.enqueue(submission),
            }
        }
    }
}

/// What the device still holds of a submission: the submission (its
/// buffers and semaphores) and what its packets use.
struct InFlight {
    submission: Submission,
    uses: Uses,
}

/// What a submission's packets use besides the submission.
#[derive(Default)]
struct Uses {
    /// Kernargs and update staging.
    memory: Vec<PoolMemory>,
    /// What its launches touch.
    buffers: Vec<Arc<HsaBuffer>>,
    /// A SPIN launch: it ends only when the queue goes, failing its signals.
    spins: bool,
}

struct QueueState {
    /// The epoch of the next submission queued.
    next_epoch: u64,
    /// Epochs seen done.
    done: u64,
    /// Set by a fault: every later submission fails with it.
    fault: Option<Error>,
    closed: bool,
    ring: NotificationRing<InFlight>,
}

/// What ROCr's error callback writes to: a fault, and how to wake the
/// completion thread about it.
struct FaultCell {
    api: Api,
    fault: Mutex<Option<Error>>,
    wake: Box<dyn Fn() + Send + Sync>,
}

/// ROCr's queue error callback (a kernel faulted; the queue is dead).
unsafe extern "C" fn on_queue_error(status: hsa_status_t, _queue: *mut hsa_queue_t, data: *mut c_void) {
    // SAFETY: `data` is the queue's FaultCell, which outlives the queue.
    let cell = unsafe { &*data.cast::<FaultCell>() };
    let e = Error::from(cell.api.error("AQL queue", status));
    lock(&cell.fault).get_or_insert(e);
    (cell.wake)();
}

pub(super) struct QueueShared {
    shared: Arc<Shared>,
    queue: *mut hsa_queue_t,
    key: QueueKey,
    /// A u32 that stops the queue's SPIN launches when set.
    closing: PoolMemory,
    fault: Box<FaultCell>,
    state: Mutex<QueueState>,
}

// SAFETY: ROCr's queues and signals may be used from any thread; the state
// is locked.
unsafe impl Send for QueueShared {}
// SAFETY: as above.
unsafe impl Sync for QueueShared {}

impl QueueShared {
    pub(super) fn key(&self) -> QueueKey {
        self.key
    }

    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// What the completion thread waits for: the next epoch done.
    pub(super) fn next_done_condition(&self) -> (u32, i64) {
        epoch::wait_condition(lock(&self.state).done + 1)
    }

    /// Raises what the epochs found done signal, and fails everything in
    /// flight if the queue faulted; whether anything changed.
    pub(super) fn drain(&self) -> bool {
        let api = self.shared.api;
        // SAFETY: the epoch signal lives as long as the queue.
        let done = epoch::completed(unsafe { api.signal_load(self.key.epoch_signal) });
        let mut state = lock(&self.state);
        let mut finished = state.ring.drain_through(done);
        let moved = done > state.done;
        state.done = state.done.max(done);
        let fault = lock(&self.fault.fault).clone();
        let failed = match fault {
            Some(e) if !state.ring.is_empty() || state.fault.is_none() => {
                state.fault = Some(e.clone());
                Some((e, state.ring.drain_all()))
            }
            _ => None,
        };
        let closed = state.closed;
        drop(state);
        let changed = moved || failed.is_some();
        let stopped = Error::Cancelled("the queue was destroyed while a launch was running".into());
        for work in finished.drain(..) {
            if work.uses.spins {
                fail_signals(&work.submission.signals, &stopped);
                continue;
            }
            for (semaphore, value) in &work.submission.signals {
                if let Ok(s) = hsa_semaphore(semaphore) {
                    s.reach(*value);
                }
            }
        }
        if let Some((e, work)) = failed {
            for w in work {
                fail_signals(&w.submission.signals, if w.uses.spins && closed { &stopped } else { &e });
            }
        }
        changed
    }

    /// Queues a ready submission, or fails its signals. Called with the
    /// scheduler locked, unless the submission has no waits and no signals.
    fn enqueue(&self, submission: Submission) {
        let mut state = lock(&self.state);
        let refused = if state.closed {
            Some(Error::Cancelled("the queue was destroyed before this work ran".into()))
        } else {
            state.fault.clone()
        };
        if let Some(e) = refused {
            return fail_signals(&submission.signals, &e);
        }
        let mut uses = Uses::default();
        let packets = match self.encode(&submission, &mut uses) {
            Ok(packets) => packets,
            // Found on the host before anything was queued (a fault of a
            // built-in): the queue stops, as on the host backend.
            Err(e) => {
                fail_signals(&submission.signals, &e);
                state.fault = Some(e);
                return;
            }
        };
        let epoch = state.next_epoch;
        state.next_epoch += 1;
        if !uses.spins {
            for (semaphore, value) in &submission.signals {
                if let Ok(s) = hsa_semaphore(semaphore) {
                    s.promise(*value, self.key, epoch);
                }
            }
        }
        state.ring.push(epoch, InFlight { submission, uses });
        // SAFETY: the queue is live; packets are published in epoch order
        // (the state stays locked).
        unsafe { self.publish(&packets) };
    }

    /// The packets of a submission: device waits, one dispatch per
    /// command, the epoch's completion last.
    fn encode(&self, submission: &Submission, work: &mut Uses) -> Result<Vec<Words>> {
        let none = hsa_signal_t::default();
        let mut packets = Vec::new();
        for (semaphore, value) in &submission.waits {
            // Work of this queue is ahead of us already (barrier bits).
            if let Some(t) = hsa_semaphore(semaphore)?.device_wait(*value).filter(|t| t.queue != self.key) {
                let (cond, value) = epoch::wait_condition(t.epoch);
                packets.push(packet::barrier_value(t.queue.epoch_signal, cond, value, -1, none));
            }
        }
        for command in submission.commands.iter() {
            match &command.0 {
                Op::Fill { target, offset, length, pattern } => {
                    let dst = hsa_buffer(target)?.native(*offset);
                    let value = match *pattern {
                        crate::Pattern::U8(v) => u64::from(v),
                        crate::Pattern::U16(v) => u64::from(v),
                        crate::Pattern::U32(v) => u64::from(v),
                    };
                    // Chunks are multiples of every pattern width.
                    for at in (0..*length).step_by(HAL_CHUNK as usize) {
                        let n = (*length - at).min(HAL_CHUNK);
                        packets.push(self.hal_dispatch(work, HAL_FILL, [dst + at, value, pattern.size(), n], n)?);
                    }
                }
                Op::Copy { source, source_offset, target, target_offset, length } => {
                    let (src, dst) =
                        (hsa_buffer(source)?.native(*source_offset), hsa_buffer(target)?.native(*target_offset));
                    self.copy(work, &mut packets, dst, src, *length)?;
                }
                Op::Update { data, target, offset } if !data.is_empty() => {
                    let staging = PoolMemory::host(&self.shared, data.len(), false)?;
                    staging.write(0, data);
                    let src = staging.address();
                    work.memory.push(staging);
                    self.copy(work, &mut packets, hsa_buffer(target)?.native(*offset), src, data.len() as u64)?;
                }
                Op::Dispatch(launch) => packets.push(self.launch(work, launch)?),
                // Packets run in order: every command is behind a barrier.
                Op::Barrier | Op::Update { .. } => {}
            }
        }
        if packets.is_empty() {
            packets.push(packet::barrier(true, [none; 5], none));
        }
        // The epoch is done when the last packet is.
        let last = packets.len() - 1;
        let completion = self.key.epoch_signal.handle;
        packets[last][14] = completion as u32;
        packets[last][15] = (completion >> 32) as u32;
        Ok(packets)
    }

    fn copy(&self, work: &mut Uses, packets: &mut Vec<Words>, dst: u64, src: u64, length: u64) -> Result<()> {
        for at in (0..length).step_by(HAL_CHUNK as usize) {
            let n = (length - at).min(HAL_CHUNK);
            packets.push(self.hal_dispatch(work, HAL_COPY, [dst + at, src + at, n, 0], n)?);
        }
        Ok(())
    }

    /// A dispatch of one of the HAL's byte kernels over `bytes` bytes.
    fn hal_dispatch(&self, work: &mut Uses, kernel: usize, args: [u64; 4], bytes: u64) -> Result<Words> {
        let kernarg = self.kernargs(work, &self.shared.kernels[kernel], &args)?;
        let grid = bytes.next_multiple_of(HAL_WORKGROUP.into()) as u32;
        Ok(packet::dispatch(
            &self.shared.kernels[kernel],
            [grid, 1, 1],
            [HAL_WORKGROUP, 1, 1],
            kernarg,
            hsa_signal_t::default(),
        ))
    }

    /// A launch of a built-in, checked on the host as Radiance would run it.
    fn launch(&self, work: &mut Uses, launch: &Launch) -> Result<Words> {
        let native = NativeLaunch::translate(&self.shared.space, self.closing.address(), launch)?;
        let fault = |why: String| Error::DeviceFault { pc: launch.kernel(), thread: 0, why };
        let threads: u64 = launch.block.iter().map(|&b| u64::from(b)).product();
        if threads > MAX_WORKGROUP {
            return Err(fault(format!(
                "a block of {threads} threads: ROCr runs at most {MAX_WORKGROUP} per workgroup"
            )));
        }
        let mut grid = [0u32; 3];
        for (g, (&blocks, &block)) in grid.iter_mut().zip(launch.grid.iter().zip(&launch.block)) {
            *g = blocks.checked_mul(block).ok_or_else(|| {
                fault(format!("{blocks} blocks of {block}: an AQL grid counts work-items in 32 bits"))
            })?;
        }
        // At most 1024 each, so they fit.
        let workgroup = launch.block.map(|b| b as u16);
        let kernel = self.shared.kernels[native.kernel];
        let kernarg = self.kernargs(work, &kernel, &native.args[..native.count])?;
        work.spins |= native.kernel == SPIN;
        work.buffers.extend(native.buffers);
        Ok(packet::dispatch(&kernel, grid, workgroup, kernarg, hsa_signal_t::default()))
    }

    /// A kernarg allocation holding `args` as 64-bit slots (the built-ins'
    /// parameters are all 64-bit), kept with the submission.
    fn kernargs(&self, work: &mut Uses, kernel: &KernelObject, args: &[u64]) -> Result<u64> {
        let size = (kernel.kernarg_size as usize).max(8 * args.len());
        let memory = PoolMemory::host(&self.shared, size, true)?;
        let bytes: Vec<u8> = args.iter().flat_map(|a| a.to_le_bytes()).collect();
        memory.write(0, &bytes);
        let address = memory.address();
        work.memory.push(memory);
        Ok(address)
    }

    /// Writes `packets` to the ring and rings the doorbell.
    ///
    /// # Safety
    /// The queue is live, and the caller holds the queue's state lock.
    unsafe fn publish(&self, packets: &[Words]) {
        let api = self.shared.api;
        let n = packets.len() as u64;
        let (base, size, doorbell) = {
            let q = &*self.queue;
            (q.base_address.cast::<u32>(), q.size, q.doorbell_signal)
        };
        let first = api.queue_reserve(self.queue, n);
        // Wait for the packet processor to free the slots.
        while !packet::fits(first, api.queue_read_index(self.queue), n, size) {
            std::thread::yield_now();
        }
        for (i, p) in packets.iter().enumerate() {
            let words = base.add(packet::slot_of(first + i as u64, size) * 16);
            packet::publish(&mut RingSlot { words }, p);
        }
        api.signal_store(doorbell, (first + n - 1) as i64);
    }
}

impl Drop for QueueShared {
    fn drop(&mut self) {
        let api = self.shared.api;
        // SAFETY: the queue is idle (its work done, or dead after a fault)
        // and nothing uses it or its signal again; the fault cell outlives
        // the queue.
        unsafe {
            api.queue_destroy(self.queue);
            api.signal_destroy(self.key.epoch_signal);
        }
    }
}

/// A queue of the hsa backend.
pub(super) struct HsaQueue {
    queue: Arc<QueueShared>,
}

impl HsaQueue {
    pub(super) fn new(shared: &Arc<Shared>) -> Result<Self> {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let api = shared.api;
        let closing = PoolMemory::host(shared, 4, false)?;
        let weak = Arc::downgrade(shared);
        let fault = Box::new(FaultCell {
            api,
            fault: Mutex::new(None),
            wake: Box::new(move || {
                if let Some(shared) = weak.upgrade() {
                    shared.completion.wake(shared.api);
                }
            }),
        });
        let epoch_signal = api.signal_create(epoch::INITIAL)?;
        let data = (&*fault as *const FaultCell).cast_mut().cast();
        let queue = match api.queue_create(shared.gpu, RING_PACKETS, on_queue_error, data) {
            Ok(queue) => queue,
            Err(e) => {
                // SAFETY: never used.
                unsafe { api.signal_destroy(epoch_signal) };
                return Err(e);
            }
        };
        let key = QueueKey { id: IDS.fetch_add(1, Ordering::Relaxed), epoch_signal };
        let state = Mutex::new(QueueState {
            next_epoch: 1,
            done: 0,
            fault: None,
            closed: false,
            ring: NotificationRing::default(),
        });
        let queue = Arc::new(QueueShared { shared: Arc::clone(shared), queue, key, closing, fault, state });
        shared.completion.watch(api, &queue);
        Ok(Self { queue })
    }
}

impl BackendQueue for HsaQueue {
    fn submit(&self, submission: Submission) -> Result<()> {
        let shared = &self.queue.shared;
        // With nothing to wait for and nothing to signal, the submission
        // neither waits for the scheduler nor changes what it holds.
        if submission.waits.is_empty() && submission.signals.is_empty() {
            self.queue.enqueue(submission);
        } else {
            lock(&shared.scheduler).submit(&self.queue, submission);
        }
        shared.hub.notify();
        Ok(())
    }
}

impl Drop for HsaQueue {
    fn drop(&mut self) {
        let shared = &self.queue.shared;
        let api = shared.api;
        let mut scheduler = lock(&shared.scheduler);
        // Work held on the host never reaches the device.
        let (mine, others) =
            std::mem::take(&mut scheduler.held).into_iter().partition(|(q, _)| Arc::ptr_eq(q, &self.queue));
        scheduler.held = others;
        let cancelled = Error::Cancelled("the queue was destroyed before this work ran".into());
        for (_, submission) in mine {
            fail_signals(&submission.signals, &cancelled);
        }
        let (last, dead) = {
            let mut state = lock(&self.queue.state);
            state.closed = true;
            (state.next_epoch - 1, state.fault.is_some() || lock(&self.queue.fault.fault).is_some())
        };
        // Ends SPIN launches.
        // SAFETY: the word is 4 bytes of live host memory, aligned.
        unsafe { AtomicU32::from_ptr(self.queue.closing.address() as *mut u32) }.store(1, Ordering::SeqCst);
        scheduler.settle();
        drop(scheduler);
        // What the device has cannot be recalled: wait for it (a dead queue
        // runs nothing more), then let its memory go.
        let (cond, value) = epoch::wait_condition(last);
        while !dead && lock(&self.queue.fault.fault).is_none() {
            let mut signals = [self.queue.key.epoch_signal];
            // SAFETY: the signal lives as long as the queue.
            if unsafe { api.signal_wait_any(&mut signals, &mut [cond], &mut [value], 100_000_000) }.is_some() {
                break;
            }
        }
        self.queue.drain();
        // Promises of this queue that were not kept never will be.
        let leftover = lock(&self.queue.state).ring.drain_all();
        let gone = Error::Status {
            code: StatusCode::Cancelled,
            message: "the queue was destroyed before this work ran".into(),
        };
        for work in leftover {
            for (semaphore, _) in &work.submission.signals {
                if let Ok(s) = hsa_semaphore(semaphore) {
                    s.forget_queue(self.queue.key);
                    s.payload.mark_failed(gone.clone());
                }
            }
        }
        shared.hub.notify();
    }
}
