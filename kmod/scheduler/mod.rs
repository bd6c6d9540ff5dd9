// SPDX-License-Identifier: GPL-2.0

//! The scheduler: every queue of every file of a device, multiplexed onto
//! the device's command FIFO and its hardware streams. It queues, completes
//! and watches; what a packet turns into is [`translate`]'s business, and
//! the watchdog and reset are [`watchdog`]'s.
//!
//! Each queue runs on one stream, so its packets complete in order; a
//! response completes its stream's oldest command. A pass takes responses
//! first, then visits the queues round-robin, one packet each per turn. It
//! runs in a work item, or right in the system call that brings the work
//! (a doorbell, a server's answer) when no other pass holds the scheduler.
//! Documentation/design/scheduler.md tells the whole story: streams and
//! order, passes, the doorbell and `needs_kick`, hand-over between devices,
//! retired streams. Its locks' place in the one hierarchy of the module is
//! in Documentation/design/locking.md.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Full,
            Relaxed, //
        },
        lock::{
            mutex::MutexBackend,
            Guard, //
        },
        Arc, Mutex,
    },
    time::{
        Instant,
        Monotonic, //
    },
    workqueue::{
        impl_has_delayed_work,
        impl_has_work,
        new_delayed_work,
        new_work,
        DelayedWork,
        Work,
        WorkItem, //
    },
};

mod watchdog;

use watchdog::CommandSize;

use crate::{
    fifo::Fifo,
    gluon::Command,
    hw::{
        in_streams,
        Gluon,
        Interrupt, //
    },
    queue::Queue,
    raw::{
        flush_delayed_work,
        flush_work, //
    },
    ring::Ring,
    semaphore::{
        SlotHint,
        Wake, //
    },
    staging::{
        Slot,
        Staging, //
    },
    trace,
    translate::{
        self,
        Completion,
        HostStep,
        SemUpdate,
        Staged,
        Step,
        Translated,
        Translator, //
    },
    uapi::packet_kind,
};

/// Device commands in flight at most, over all streams: within the
/// device's command FIFO depth.
pub(crate) const MAX_IN_FLIGHT: usize = 64;

/// Other devices' passes one pass runs after its own, at most (see
/// [`Scheduler::run_passes`]): past it, one worker wake-up per this many passes
/// of a chain between two devices (a pass of one device takes a chain
/// between its own queues to its end with none). Each of the two devices
/// is woken then, and two workers run their passes at once, one spinning
/// on the lock the other holds, until one runs out of work: at 64, a
/// chain between two devices did so every 32 edges.
const PEER_PASSES: usize = 1024;

/// The other devices' schedulers a pass runs after its own (see
/// [`Scheduler::run_passes`]), each marked if it handed over. Each is there once
/// at most (one woken again while there is not added again): room for
/// eight devices; past that, the rest are woken through their work items.
type Peers = Ring<(Arc<Scheduler>, bool), 8>;

/// Entries one stream's FIFO holds at most: its commands in flight and the
/// markers between them.
const STREAM_ENTRIES: usize = 64;

/// The stream in service (not in `retired`) with the fewest queues.
fn least_loaded(state: &State, retired: u32) -> u8 {
    let load = |s: u8| state.queues.iter().filter(|q| q.stream == s).count();
    (0..state.streams.len() as u8)
        .filter(|&s| !in_streams(retired, s.into()))
        .min_by_key(|&s| load(s))
        .unwrap_or(0)
}

/// A queue as the scheduler keeps it.
struct Scheduled {
    queue: Arc<Queue>,
    /// The hardware stream its packets run on.
    stream: u8,
    /// Its packet whose commands did not all fit in the device yet.
    staged: Option<Staged>,
    /// The packet of its last launch given to the device, until a command
    /// of a later packet finds it completed. A launch may fault, and the
    /// device runs what it was given after a fault: so nothing of a later
    /// packet goes to the device before the launch has completed, or the
    /// queue would not stop at the fault.
    launch: Option<u64>,
    /// The pass's last turn found its next packet unable to go until
    /// something brings another pass: a WAIT_SEMAPHORE not reached (with
    /// `blocked` set first, so the semaphore's change wakes the
    /// scheduler), or a packet short of a staging page (the completion
    /// that frees one brings the pass). A pass that ends need not look at
    /// it again.
    stalled: bool,
    /// Its control block's `needs_kick`, which only passes write (under
    /// `State`'s lock): set, the process rings the doorbell for what it
    /// publishes, and a pass looks at the queue only once it has. Kept here
    /// so that a pass writes the page only to change it.
    asks_kick: bool,
    /// Where its last WAIT_SEMAPHORE found its semaphore's value.
    sem_hint: SlotHint,
}

impl Scheduled {
    /// Sets or clears the queue's `needs_kick`, writing the page only if
    /// that changes it.
    fn ask_for_kicks(&mut self, on: bool) {
        if self.asks_kick != on {
            self.queue.set_needs_kick(on);
            self.asks_kick = on;
        }
    }
}

/// A command in a stream, or a marker.
struct InFlight {
    /// What the device was given, kept to give it again after a reset;
    /// `None` for a marker, which the device never sees.
    cmd: Option<Command>,
    /// A marker's CPU work, done when it reaches the head of its stream.
    host: Option<(HostStep, Arc<Slot>)>,
    queue: Arc<Queue>,
    packet: u64,
    /// The command's id, the device's count of commands issued before it
    /// (0 for a marker), for tracing.
    id: u64,
    /// On the packet's last entry, until it completes: what completing the
    /// packet does, and what the packet holds until then.
    completion: Option<Completion>,
    /// How much the command does (nothing, for a marker).
    size: CommandSize,
}

/// One hardware stream.
struct Stream {
    /// In order: the stream's commands in the device, and markers.
    fifo: Fifo<InFlight>,
    /// Commands of `fifo` in the device.
    sent: usize,
    /// Host steps of `fifo` not run yet. The device takes no more of the
    /// stream's commands until they have: the command after a step reads
    /// the page the step writes.
    host_steps: usize,
    /// When its oldest entry last moved: became the oldest, or did more of
    /// its work (the device's progress count for the stream changed).
    moved_at: Instant<Monotonic>,
    /// The device's progress count for the stream at `moved_at`.
    seen: u64,
    /// The device's progress count for the stream when its oldest entry
    /// became the oldest: what that entry did since, for debugfs.
    head_start: u64,
    /// What it did, for `radctl top`: nanoseconds with a command in the
    /// device (up to `busy_since`), commands answered, and the bytes and
    /// threads of those that completed.
    busy_ns: u64,
    busy_since: Instant<Monotonic>,
    answered: u64,
    bytes: u64,
    threads: u64,
}

impl Stream {
    /// Counts the time since the last tick as busy if the device holds a
    /// command of the stream: called before `sent` changes.
    fn tick(&mut self) {
        let now = Instant::now();
        if self.sent > 0 {
            self.busy_ns = self
                .busy_ns
                .wrapping_add((now - self.busy_since).as_nanos() as u64);
        }
        self.busy_since = now;
    }

    /// Its oldest entry changed (to `progress`, the device's count for it,
    /// if the device has one): it is watched from now.
    fn new_head(&mut self, progress: Option<u64>) {
        let p = progress.unwrap_or(0);
        self.moved_at = Instant::now();
        self.seen = p;
        self.head_start = p;
    }
}

struct State {
    queues: KVec<Scheduled>,
    cursor: usize,
    streams: KVec<Stream>,
    /// Commands in the device, over all streams.
    sent: usize,
    /// Device resets so far.
    resets: u64,
    /// The device is gone for good: nothing is scheduled any more.
    lost: bool,
    /// Other devices' schedulers with a queue waiting on a semaphore that
    /// a packet completed here changed (through an alias): woken once the
    /// lock is dropped (see [`Scheduler::run_passes`]).
    woken: KVec<Arc<Scheduler>>,
}

/// One device's scheduler.
#[pin_data]
pub(crate) struct Scheduler {
    hw: Arc<dyn Gluon>,
    /// The device's index, for tracing.
    dev: u32,
    /// Where launch blocks are copied for the device to read.
    staging: Arc<Staging>,
    /// 1 while a queue waits on a semaphore: only then do semaphore
    /// changes wake the scheduler (host-only semaphores cost no pass).
    blocked: Atomic<i32>,
    /// 1 while a pass runs. A semaphore change then only sets `missed`
    /// instead of queueing another pass: the running pass looks at every
    /// queue again after clearing `missed`, and queues another pass itself
    /// if `missed` is set when it ends. Its own completions' signals so
    /// cost no pass (and no worker woken to find the work running).
    passing: Atomic<i32>,
    missed: Atomic<i32>,
    /// Commands given to the device since it was created, not counting
    /// those given again after a reset; for debugfs: what packets cost.
    issued: Atomic<i64>,
    /// Passes run, and those queued as a work item (a worker woken), since
    /// the device was created; for debugfs: what edges cost.
    passes: Atomic<i64>,
    wakeups: Atomic<i64>,
    /// Lock order: level 4 (Documentation/design/locking.md).
    #[pin]
    state: Mutex<State>,
    #[pin]
    work: Work<Scheduler>,
    #[pin]
    watchdog: DelayedWork<Scheduler, 1>,
    timeout_ms: u32,
}

impl_has_work! {
    impl HasWork<Self> for Scheduler { self.work }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 1> for Scheduler { self.watchdog }
}

/// The device interrupt, routed to the scheduler.
struct Irq(Arc<Scheduler>);

impl Interrupt for Irq {
    fn raise(&self) {
        Scheduler::kick(&self.0);
    }

    fn raise_here(&self) {
        Scheduler::run_or_kick(&self.0);
    }
}

impl Scheduler {
    /// A scheduler for `hw`, device `dev`, that resets it when a command
    /// takes longer than `timeout_ms`.
    pub(crate) fn new(hw: Arc<dyn Gluon>, dev: u32, timeout_ms: u32) -> Result<Arc<Self>> {
        let count = hw.desc().streams.max(1);
        let mut streams = KVec::with_capacity(count.into(), GFP_KERNEL)?;
        for _ in 0..count {
            let stream = Stream {
                fifo: Fifo::with_capacity(STREAM_ENTRIES)?,
                sent: 0,
                host_steps: 0,
                moved_at: Instant::now(),
                seen: 0,
                head_start: 0,
                busy_ns: 0,
                busy_since: Instant::now(),
                answered: 0,
                bytes: 0,
                threads: 0,
            };
            streams.push(stream, GFP_KERNEL)?;
        }
        let state = State {
            queues: KVec::new(),
            cursor: 0,
            streams,
            sent: 0,
            resets: 0,
            lost: false,
            woken: KVec::new(),
        };
        let staging = Staging::new(&*hw)?;
        let device_hw = hw.clone();
        let this = Arc::pin_init(
            pin_init!(Self {
                hw: device_hw,
                dev,
                staging,
                blocked: Atomic::new(0),
                passing: Atomic::new(0),
                missed: Atomic::new(0),
                issued: Atomic::new(0),
                passes: Atomic::new(0),
                wakeups: Atomic::new(0),
                state <- new_mutex!(state, "Scheduler::state"),
                work <- new_work!("Scheduler::work"),
                watchdog <- new_delayed_work!("Scheduler::watchdog"),
                timeout_ms,
            }),
            GFP_KERNEL,
        )?;
        hw.set_interrupt(Some(Arc::new(Irq(this.clone()), GFP_KERNEL)?));
        Ok(this)
    }

    /// Takes the scheduler off the hardware's interrupt, which holds it:
    /// the end of the cycle between the two.
    pub(crate) fn disconnect(&self) {
        self.hw.set_interrupt(None);
    }

    /// Wakes the scheduler (doorbell, interrupt, new queue).
    pub(crate) fn kick(this: &Arc<Self>) {
        // Already queued: that run will see what this kick is for.
        if crate::raw::system_dfl()
            .enqueue::<_, 0>(this.clone())
            .is_ok()
        {
            this.wakeups.add(1, Relaxed);
        }
    }

    /// A doorbell (QUEUE_KICK): left to the device if it takes it, which
    /// saves the ringing process a wake-up of the device's thread (the
    /// pass would push frames to a server that fell asleep meanwhile); else
    /// as [`Scheduler::run_or_kick`] or, for a burst, [`Scheduler::kick`].
    pub(crate) fn doorbell(this: &Arc<Self>, burst: bool) {
        if this.hw.take_doorbell() {
            return;
        }
        if burst {
            Self::kick(this);
        } else {
            Self::run_or_kick(this);
        }
    }

    /// A doorbell (QUEUE_KICK) or a server's answers, in process context
    /// with no lock held: runs the pass right here unless another holds the
    /// scheduler, which saves waking a worker on the way to the device and
    /// again on the way back. Held: woken as by [`Scheduler::kick`], as
    /// before, so the pass that holds it or the next one sees the work.
    pub(crate) fn run_or_kick(this: &Arc<Self>) {
        match this.state.try_lock() {
            Some(state) => Self::run_passes_locked(this, state),
            None => Self::kick(this),
        }
    }

    /// A semaphore changed: wake the scheduler if a queue waits on one.
    /// The caller changed it under the semaphore lock, which the scheduler
    /// takes to look at a semaphore after setting `blocked`: so either the
    /// scheduler sees the change or this sees the flag.
    ///
    /// While a pass runs, the change is left to it (see `passing`): this
    /// sets `missed`, then looks at `passing` again; the pass clears
    /// `passing`, then looks at `missed`. With full barriers between each
    /// store and load, at least one of the two sees the other's store and
    /// queues a pass.
    pub(crate) fn semaphore_changed(this: &Arc<Self>) {
        if !this.waits() {
            return;
        }
        if this.passing.load(Relaxed) != 0 {
            this.missed.xchg(1, Full);
            if this.passing.load(Relaxed) != 0 {
                return;
            }
        }
        Self::kick(this);
    }

    /// A packet completed under this scheduler's lock changed a semaphore.
    /// In a pass, nothing to do: the pass progressed, so it turns again and
    /// looks at every queue. Outside one (the watchdog, a queue's removal)
    /// it is any other change.
    pub(crate) fn changed_under_lock(this: &Arc<Self>) {
        // Written only under the lock this caller holds: set, the caller
        // is the pass.
        if this.passing.load(Relaxed) == 0 {
            Self::semaphore_changed(this);
        }
    }

    /// Whether a queue waits on a semaphore: only then must a semaphore's
    /// change wake the scheduler (see [`Scheduler::semaphore_changed`]).
    pub(crate) fn waits(&self) -> bool {
        self.blocked.load(Acquire) != 0
    }

    /// Outside a pass: drops the lock, then wakes each scheduler a packet
    /// completed under it woke (see [`State::woken`]) through its work item.
    fn unlock_and_wake(mut state: Guard<'_, State, MutexBackend>) {
        let woken = core::mem::take(&mut state.woken);
        drop(state);
        for scheduler in woken.iter() {
            Self::semaphore_changed(scheduler);
        }
    }

    /// Schedules a new queue, on the stream with fewest queues; ENOSPC past
    /// the device's queue limit.
    pub(crate) fn add(this: &Arc<Self>, queue: Arc<Queue>) -> Result {
        let mut state = this.state.lock();
        if state.lost {
            return Err(ENODEV);
        }
        if state.queues.len() >= crate::device::MAX_QUEUES as usize {
            return Err(ENOSPC);
        }
        let stream = least_loaded(&state, this.hw.retired_streams());
        state.queues.push(
            Scheduled {
                queue,
                stream,
                staged: None,
                launch: None,
                stalled: false,
                asks_kick: false,
                sem_hint: SlotHint::default(),
            },
            GFP_KERNEL,
        )?;
        drop(state);
        Self::kick(this);
        Ok(())
    }

    /// Stops scheduling a queue: the semaphores its packets not yet
    /// completed were to signal fail with ECANCELED. Its commands in flight
    /// still complete, except a launch the device is running, which may
    /// never end and which nobody waits for any more: the device is reset
    /// at once (see [`Scheduler::watchdog`]).
    pub(crate) fn remove(this: &Arc<Self>, queue: &Arc<Queue>) {
        queue.destroy();
        queue.cancel_signals();
        let mut state = this.state.lock();
        state.queues.retain(|q| !Arc::ptr_eq(&q.queue, queue));
        Self::watchdog(this, &mut state);
        Self::unlock_and_wake(state);
    }

    /// The device is gone for good: every queue faults with `error` at its
    /// first packet not completed (failing the semaphores it was to
    /// signal), and nothing is scheduled any more. What is in flight is
    /// dropped by [`Scheduler::shutdown`].
    pub(crate) fn device_lost(&self, error: u32) {
        let mut state = self.state.lock();
        state.lost = true;
        for q in state.queues.iter() {
            let completed = q.queue.state().completed;
            q.queue.fault(completed, error, 0, 0, 0);
        }
    }

    /// debugfs `queues`: one line of `key=value` pairs per queue.
    pub(crate) fn write_queues(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let state = self.state.lock();
        for entry in state.queues.iter() {
            let (q, s) = (&entry.queue, entry.queue.state());
            writeln!(
                f,
                "pid={} queue={} stream={} ring={} submitted={} completed={} bytes={} status={} \
                 error={} fault_index={} err_code={} err_pc={:#x} err_thread={}",
                q.tgid,
                q.id,
                entry.stream,
                q.ring_packets(),
                s.submitted,
                s.completed,
                s.bytes,
                if s.faulted { "faulted" } else { "active" },
                s.error,
                s.fault_index,
                s.err_code,
                s.err_pc,
                s.err_thread,
            )?;
        }
        Ok(())
    }

    /// Scheduled queues, commands in flight and resets, for debugfs.
    pub(crate) fn counts(&self) -> (usize, usize, u64) {
        let state = self.state.lock();
        (state.queues.len(), state.sent, state.resets)
    }

    /// Commands given to the device so far, for debugfs.
    pub(crate) fn issued(&self) -> i64 {
        self.issued.load(Relaxed)
    }

    /// Passes run so far, and how many of them a worker was woken for; for
    /// debugfs.
    pub(crate) fn activity(&self) -> (i64, i64) {
        (self.passes.load(Relaxed), self.wakeups.load(Relaxed))
    }

    /// Device teardown: disconnects the interrupt (breaking the cycle
    /// through it), stops the device, forgets the commands it was running,
    /// and waits for passes that may still be running.
    ///
    /// No file is open any more, but a command can still be in flight (a
    /// launch that never ends, from a file already closed). Its entry holds
    /// the queue, the file's context and through it the device: dropped
    /// here, or the device would outlive the module, and the watchdog,
    /// re-armed for it, would run after the module is gone.
    pub(crate) fn shutdown(&self) {
        self.disconnect();
        self.hw.reset();
        // Dropped after the lock: the last reference to a context frees
        // its objects, which takes other locks.
        let mut dropped = KVec::new();
        {
            let mut state = self.state.lock();
            state.sent = 0;
            for stream in state.streams.iter_mut() {
                stream.tick();
                stream.sent = 0;
                stream.host_steps = 0;
                // An empty FIFO allocates nothing, so the fallback (dropping
                // under the lock) never runs in practice.
                match Fifo::with_capacity(0) {
                    Ok(empty) => {
                        let _ =
                            dropped.push(core::mem::replace(&mut stream.fifo, empty), GFP_KERNEL);
                    }
                    Err(_) => stream.fifo.clear(),
                }
            }
        }
        drop(dropped);
        flush_delayed_work(&self.watchdog);
        flush_work(&self.work);
    }

    /// What completing a packet does: hands back what the device wrote,
    /// updates its semaphore (unless its queue faulted at or before it;
    /// other devices' schedulers it wakes go on `woken`), moves the queue's
    /// read index.
    fn complete(
        &self,
        woken: &mut KVec<Arc<Scheduler>>,
        queue: &Queue,
        packet: u64,
        completion: &Completion,
    ) {
        completion.hand_back();
        // Before the read index moves: a process that sees the packet
        // completed sees what it did to its semaphore.
        if let Some(update) = completion.update {
            let s = queue.state();
            let faulted = s.faulted && packet >= s.fault_index;
            // Its semaphore was there when it was taken.
            let _ = self.update_semaphore(woken, queue, packet, update, faulted);
        }
        queue.complete(packet);
    }

    /// Takes and completes at once packet `index` of `queue`, translated in
    /// this turn under this lock (so its queue has not faulted): it has no
    /// command and nothing is before it on its stream. A NOP or a
    /// semaphore packet so costs no entry in the stream to settle. A
    /// signal of a handle that names nothing (translation left that to
    /// this lookup, see [`Translator::at_once`]) faults the queue there.
    fn complete_taken(
        &self,
        woken: &mut KVec<Arc<Scheduler>>,
        queue: &Queue,
        index: u64,
        completion: &Completion,
    ) {
        completion.hand_back();
        if let Some(update) = completion.update {
            if let Err(e) = self.update_semaphore(woken, queue, index, update, false) {
                queue.fault(index, e.to_errno().unsigned_abs(), 0, 0, 0);
                return;
            }
        }
        queue.take_completed(index);
    }

    /// Completed packet `index`'s semaphore update, unless its queue
    /// `faulted` at or before it; ENOENT if a signal's handle names nothing.
    fn update_semaphore(
        &self,
        woken: &mut KVec<Arc<Scheduler>>,
        queue: &Queue,
        index: u64,
        update: SemUpdate,
        faulted: bool,
    ) -> Result {
        let sems = queue.objects().semaphores();
        let mut wake = Wake::Later {
            this: self,
            later: woken,
        };
        let (handle, value, error) = match (update, faulted) {
            (SemUpdate::Signal { handle, value }, false) => {
                sems.signal_from_queue(handle, value, &mut wake)?;
                (handle, value, 0)
            }
            (
                SemUpdate::Fail {
                    handle,
                    value,
                    error,
                },
                false,
            ) => {
                sems.fail_from_queue(handle, value, error, &mut wake);
                (handle, value, error)
            }
            _ => return Ok(()),
        };
        let at = Some((queue, index));
        trace::sem_signal(self.dev, queue.tgid, at, sems, handle, value, error);
        Ok(())
    }

    /// Completes the markers at the head of stream `i`, doing their CPU
    /// work: everything before them on the stream has completed.
    fn settle(&self, state: &mut State, i: usize) {
        let State { streams, woken, .. } = state;
        let Some(stream) = streams.get_mut(i) else {
            return;
        };
        let mut settled = false;
        while let Some(head) = stream.fifo.front_mut() {
            if head.cmd.is_some() {
                break;
            }
            let completion = head.completion.take();
            if let Some((step, bounce)) = head.host.take() {
                stream.host_steps = stream.host_steps.saturating_sub(1);
                if let Err(e) = step.run(&bounce) {
                    head.queue
                        .fault(head.packet, e.to_errno().unsigned_abs(), 0, 0, 0);
                }
            }
            if let Some(completion) = completion {
                self.complete(woken, &head.queue, head.packet, &completion);
            }
            stream.fifo.advance();
            settled = true;
        }
        // What is at the head now (a command, or nothing) ages from here:
        // one clock read however many markers went.
        if settled {
            stream.new_head(self.hw.progress(i as u8));
        }
    }

    /// Takes every response: completes packets, records device faults.
    fn take_responses(&self, state: &mut State) {
        let desc = self.hw.desc();
        while let Some(raw) = self.hw.pop_response() {
            let response = desc.dialect.decode_response(&raw);
            let i = usize::from(response.stream);
            let Some(stream) = state.streams.get_mut(i) else {
                dev_err!(
                    self.hw.dma_device(),
                    "response on stream {i}, which does not exist\n"
                );
                continue;
            };
            let Some(done) = stream.fifo.front_mut().filter(|e| e.cmd.is_some()) else {
                dev_err!(
                    self.hw.dma_device(),
                    "response on stream {i}, which runs nothing\n"
                );
                continue;
            };
            // Dropped at the end of this turn: the packet's BOs and staging
            // page are free once its last command is done.
            let completion = done.completion.take();
            let (status, pc, warp) = (response.status.into(), response.pc, response.warp);
            trace::cmd_done(
                self.dev,
                response.stream,
                done.id,
                &done.queue,
                done.packet,
                status,
                pc,
                warp,
            );
            if response.status != 0 {
                done.queue
                    .fault(done.packet, EIO.to_errno().unsigned_abs(), status, pc, warp);
            } else if let Some(completion) = &completion {
                self.complete(&mut state.woken, &done.queue, done.packet, completion);
            }
            stream.answered += 1;
            if response.status == 0 {
                let size = done.size;
                if size.threads {
                    stream.threads = stream.threads.wrapping_add(size.units);
                } else {
                    stream.bytes = stream.bytes.wrapping_add(size.units);
                    done.queue.count_bytes(size.units);
                }
            }
            // Once all are taken, the finished entries are dropped: their
            // queues may go then.
            stream.fifo.advance();
            stream.tick();
            stream.sent -= 1;
            stream.new_head(self.hw.progress(i as u8));
            state.sent -= 1;
            self.settle(state, i);
        }
    }

    /// Pushes as many commands of queue `q`'s staged packet as its stream
    /// and the device take, or its marker. True if anything was pushed.
    /// `fresh`: the packet was translated in this turn, under this lock,
    /// so its queue cannot have faulted since.
    fn push_staged(&self, state: &mut State, q: usize, fresh: bool) -> bool {
        let State {
            queues,
            streams,
            sent,
            ..
        } = state;
        let Some(entry) = queues.get_mut(q) else {
            return false;
        };
        let i = usize::from(entry.stream);
        let Some(stream) = streams.get_mut(i) else {
            return false;
        };
        if !fresh && entry.queue.state().faulted {
            // The rest of a faulted packet never runs.
            entry.staged = None;
        }
        let mut pushed = false;
        while self.push_step(entry, stream, sent) {
            pushed = true;
        }
        if pushed {
            self.settle(state, i);
        }
        pushed
    }

    /// Pushes the next step of `entry`'s staged packet into `stream`, its
    /// stream: a command, if the stream and the device take it, or a
    /// marker. `sent` counts the commands in the device. True if it pushed
    /// one.
    fn push_step(&self, entry: &mut Scheduled, stream: &mut Stream, sent: &mut usize) -> bool {
        let Some(staged) = &mut entry.staged else {
            return false;
        };
        if stream.fifo.len() >= STREAM_ENTRIES {
            return false;
        }
        let step = staged.commands.get(staged.next).cloned();
        let (mut cmd, mut host, mut id) = (None, None, 0);
        match step {
            Some(Step::Host(work, bounce)) => {
                host = Some((work, bounce));
                staged.next += 1;
            }
            Some(Step::Device(c)) => cmd = Some(c),
            None => {}
        }
        if let Some(cmd) = cmd {
            if let Some(launch) = entry.launch.filter(|&l| l != staged.packet) {
                // Faulted there, this packet is dropped at the next turn.
                if entry.queue.state().completed <= launch {
                    return false;
                }
                entry.launch = None;
            }
            match self.issue(entry.stream, stream, sent, &cmd) {
                Ok(Some(issued)) => {
                    id = issued;
                    let units = CommandSize::of(&cmd, staged.threads).units;
                    trace::cmd_issue(
                        self.dev,
                        entry.stream,
                        id,
                        &entry.queue,
                        staged.packet,
                        &cmd,
                        units,
                    );
                    staged.next += 1;
                    if matches!(cmd, Command::Kernel { .. }) {
                        entry.launch = Some(staged.packet);
                    }
                }
                Ok(None) => return false,
                Err(e) => {
                    // Translation checked it could be said; if not, the
                    // packet cannot run here.
                    entry
                        .queue
                        .fault(staged.packet, e.to_errno().unsigned_abs(), 0, 0, 0);
                    entry.staged = None;
                    return false;
                }
            }
        }
        let packet = staged.packet;
        let size = cmd.map_or(CommandSize::default(), |c| {
            CommandSize::of(&c, staged.threads)
        });
        // The packet is all in the device (or a marker): what completing
        // it does goes with its last entry.
        let last = staged.next >= staged.commands.len();
        let completion = if last {
            entry.staged.take().map(|s| s.completion)
        } else {
            None
        };
        // A marker never stays at the head (`settle` sets the time then).
        if stream.fifo.is_empty() && cmd.is_some() {
            stream.new_head(self.hw.progress(entry.stream));
        }
        // Room for STREAM_ENTRIES was reserved and checked above: this
        // cannot fail.
        stream.host_steps += usize::from(host.is_some());
        let _ = stream.fifo.push(InFlight {
            cmd,
            host,
            queue: entry.queue.clone(),
            packet,
            id,
            completion,
            size,
        });
        true
    }

    /// Gives the device `cmd` for stream `id` (`stream`) if the stream, the
    /// device (`sent` commands in it) and its FIFO take it now: its command
    /// id (see [`InFlight::id`]), or None if not. EINVAL if the device's
    /// dialect cannot say it.
    fn issue(
        &self,
        id: u8,
        stream: &mut Stream,
        sent: &mut usize,
        cmd: &Command,
    ) -> Result<Option<u64>> {
        let desc = self.hw.desc();
        if stream.sent >= desc.stream_depth.into()
            || *sent >= MAX_IN_FLIGHT
            || stream.host_steps > 0
        {
            return Ok(None);
        }
        let frame = desc.dialect.encode(id, cmd).map_err(|_| EINVAL)?;
        if self.hw.push_command(frame.as_bytes()).is_err() {
            return Ok(None);
        }
        stream.tick();
        stream.sent += 1;
        *sent += 1;
        Ok(Some(self.issued.fetch_add(1, Relaxed) as u64))
    }

    /// Moves the queues on the streams in `retired` (the device's
    /// [`Gluon::retired_streams`]) to the streams in service with fewest
    /// queues, each once its stream holds nothing more (what it held fails
    /// as the stream is retired, and completes in order).
    fn rebind(state: &mut State, retired: u32) {
        if retired == 0 {
            return;
        }
        for i in 0..state.queues.len() {
            let Some(from) = state.queues.get(i).map(|q| q.stream) else {
                break;
            };
            let drained = state
                .streams
                .get(usize::from(from))
                .is_some_and(|s| s.fifo.is_empty());
            if !in_streams(retired, from.into()) || !drained {
                continue;
            }
            let to = least_loaded(state, retired);
            if let Some(q) = state.queues.get_mut(i) {
                q.stream = to;
            }
        }
    }

    /// One round-robin turn: every queue may submit one packet.
    fn submit(&self, state: &mut State) -> bool {
        // Asked once a pass: a user device answers under its channel's lock.
        let retired = self.hw.retired_streams();
        Self::rebind(state, retired);
        let mut progressed = false;
        let n = state.queues.len();
        for turn in 0..n {
            let i = (state.cursor + turn) % n;
            let Some(entry) = state.queues.get_mut(i) else {
                break;
            };
            entry.stalled = false;
            // Its stream is retired and still holds its work: it moves
            // once that work has failed and completed.
            if in_streams(retired, entry.stream.into()) {
                continue;
            }
            let fresh = entry.staged.is_none();
            // Asking for kicks, it is looked at only once its doorbell
            // rang: its process kicks for what it publishes, and an idle
            // queue costs a pass's turns nothing.
            if fresh && entry.asks_kick && !entry.queue.take_doorbell() {
                continue;
            }
            if fresh {
                let Some((index, skip)) = entry.queue.pending() else {
                    continue;
                };
                // Busy with it now: the process need not kick.
                entry.ask_for_kicks(false);
                let queue = &entry.queue;
                let at_once = state
                    .streams
                    .get(usize::from(entry.stream))
                    .is_some_and(|s| s.fifo.is_empty());
                match self.translate(entry, index, skip, at_once) {
                    Ok(Translated::Run(staged)) if staged.commands.is_empty() && at_once => {
                        self.complete_taken(&mut state.woken, queue, index, &staged.completion);
                        progressed = true;
                        continue;
                    }
                    Ok(Translated::Run(staged)) => {
                        queue.mark_submitted(index);
                        entry.staged = Some(staged);
                    }
                    // Waiting on a semaphore (its signal wakes us), or for
                    // a packet in flight to give back its staging page
                    // (its completion brings us).
                    Ok(Translated::Blocked | Translated::Busy) => {
                        entry.stalled = true;
                        continue;
                    }
                    // Translated again next turn, as the first packet skipped.
                    Ok(Translated::Skip { count, error }) => {
                        queue.start_skip(index, count, error);
                        progressed = true;
                        continue;
                    }
                    Err(e) => {
                        queue.fault(index, e.to_errno().unsigned_abs(), 0, 0, 0);
                        continue;
                    }
                }
            }
            progressed |= self.push_staged(state, i, fresh);
        }
        // The next turn starts at the next queue that may have work: one
        // that asks for kicks is skipped as a start, so the queues at work
        // take turns going first as they would alone on the device (a
        // chain between two queues keeps the phase in which neither finds
        // the other's signal missing, whatever idle queues are beside).
        // `checked_rem`: no division-by-zero panic path, though with no
        // queue (`n` zero) the range is empty.
        state.cursor = (1..=n)
            .filter_map(|k| (state.cursor + k).checked_rem(n))
            .find(|&c| state.queues.get(c).is_some_and(|q| !q.asks_kick))
            .unwrap_or(0);
        progressed
    }

    fn translator<'a>(&'a self, entry: &'a Scheduled, at_once: bool) -> Translator<'a> {
        Translator {
            objects: entry.queue.objects(),
            hw: self.hw.desc(),
            staging: &self.staging,
            at_once,
            sem_hint: &entry.sem_hint,
        }
    }

    /// Translates packet `index` of `queue`, which completes as it is
    /// taken if it has no command and `at_once` (nothing is before it on
    /// its stream). A WAIT_SEMAPHORE sets `blocked` first, so that it is
    /// woken by the semaphore's change.
    fn translate(
        &self,
        entry: &Scheduled,
        index: u64,
        skip: Option<u32>,
        at_once: bool,
    ) -> Result<Translated> {
        let packet = entry.queue.packet(index)?;
        self.mark_if_wait(&packet);
        let translated =
            translate::translate(&self.translator(entry, at_once), index, &packet, skip)?;
        if let Translated::Run(staged) = &translated {
            let (queue, kind) = (&entry.queue, packet.header.kind);
            trace::packet(
                self.dev,
                queue,
                index,
                kind,
                entry.stream,
                staged.commands.len(),
            );
            if kind == packet_kind::WAIT_SEMAPHORE && skip.is_none() {
                let [handle_and_skip, value, ..] = packet.body;
                trace::wait_done(self.dev, queue, index, handle_and_skip as u32, value);
            }
        }
        Ok(translated)
    }

    /// What a queue's next packet lets the scheduler do.
    fn head(&self, entry: &Scheduled) -> Head {
        let Some((index, skip)) = entry.queue.pending() else {
            return Head::Empty;
        };
        let Ok(packet) = entry.queue.packet(index) else {
            return Head::Runnable;
        };
        self.mark_if_wait(&packet);
        if translate::blocks(&self.translator(entry, false), &packet, skip) {
            Head::Waiting
        } else {
            Head::Runnable
        }
    }

    /// Sets `blocked` before a WAIT_SEMAPHORE's semaphore is looked at (see
    /// [`Scheduler::semaphore_changed`]).
    fn mark_if_wait(&self, packet: &crate::uapi::Packet) {
        // Set already in this pass (only passes write it, under `state`):
        // the full barrier after that store orders this look too.
        if packet.header.kind == packet_kind::WAIT_SEMAPHORE && self.blocked.load(Relaxed) == 0 {
            self.blocked.xchg(1, Full);
        }
    }
}

impl WorkItem for Scheduler {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        crate::kcov::work(|| Self::run_passes(&this));
    }
}

impl Scheduler {
    /// One pass of the work item, then the passes of the other devices'
    /// schedulers it woke (a queue of theirs waits on a semaphore it
    /// signalled, through an alias), in this worker, in the order they
    /// were woken, each once the pass before has dropped its lock: no
    /// scheduler lock is ever held while another is taken. A pass that
    /// woke one hands over to it and passes again after it (see
    /// [`Scheduler::serve_queues`]). A scheduler whose lock is held (its own
    /// pass runs, or an ioctl) is woken as before; so are those past
    /// [`PEER_PASSES`], which keeps two devices signalling each other from
    /// holding one worker.
    fn run_passes(this: &Arc<Self>) {
        Self::run_passes_locked(this, this.state.lock());
    }

    /// [`Scheduler::run_passes`], with its own lock already taken.
    fn run_passes_locked(this: &Arc<Self>, state: Guard<'_, State, MutexBackend>) {
        let mut next = Ring::new();
        if Self::pass_and_note_peers(this, state, &mut next) {
            Self::pass_after_peers(this.clone(), &mut next);
        }
        let mut budget = PEER_PASSES;
        while let Some((peer, handed_over)) = next.pop() {
            let Some(state) = (if budget > 0 {
                peer.state.try_lock()
            } else {
                None
            }) else {
                // One that handed over passes again even if no queue of
                // its waits: what it left is not looked at yet.
                if handed_over {
                    Self::kick(&peer);
                } else {
                    Self::semaphore_changed(&peer);
                }
                continue;
            };
            budget -= 1;
            if Self::pass_and_note_peers(&peer, state, &mut next) {
                Self::pass_after_peers(peer, &mut next);
            }
        }
    }

    /// One that handed over passes again after the others; with no room
    /// left on `next`, in its work item.
    fn pass_after_peers(this: Arc<Self>, next: &mut Peers) {
        if let Err((this, _)) = next.push((this, true)) {
            Self::kick(&this);
        }
    }

    /// One pass under `state`; another is queued if a semaphore changed
    /// after it last looked (see `passing`). The other schedulers it woke
    /// go on `next`, once each, moved out of [`State::woken`], which
    /// keeps its memory: a chain between two devices allocates nothing per
    /// edge. True if it handed over to them: it is to pass again after
    /// them (see [`Scheduler::pass_after_peers`]), and that pass sees what
    /// `missed` says.
    fn pass_and_note_peers(
        this: &Arc<Self>,
        mut state: Guard<'_, State, MutexBackend>,
        next: &mut Peers,
    ) -> bool {
        if state.lost {
            return false;
        }
        this.passes.add(1, Relaxed);
        this.passing.xchg(1, Full);
        let handed_over = Self::serve_queues(this, &mut state);
        this.passing.xchg(0, Full);
        // The full barrier above orders this load after the store (see
        // [`Scheduler::semaphore_changed`]); most passes find it clear.
        let missed = this.missed.load(Relaxed) != 0 && this.missed.xchg(0, Full) != 0;
        for woken in state.woken.drain_all() {
            if next.iter().any(|(w, _)| Arc::ptr_eq(w, &woken)) {
                continue;
            }
            // No room left: woken through its work item instead.
            if let Err((woken, _)) = next.push((woken, false)) {
                Self::semaphore_changed(&woken);
            }
        }
        drop(state);
        this.hw.pass_done();
        if missed && !handed_over {
            Self::kick(this);
        }
        handed_over
    }

    /// The pass itself, under the state lock. True if it handed over: a
    /// packet it completed woke another device's scheduler, and it ended
    /// there, to pass again after that one.
    ///
    /// Across devices, a chain's queue waits for the other device's answer
    /// right after the signal that asks for it: looked at now, that wait
    /// would be blocked, and looked at again in the pass the answer brings.
    /// Handed over, the next look is that pass's, and the chain takes two
    /// looks per edge, as between two queues of one device.
    fn serve_queues(this: &Arc<Self>, state: &mut State) -> bool {
        // Set again below by any queue still waiting on a semaphore.
        this.blocked.store(0, Relaxed);
        loop {
            // With nothing in the device there is nothing to answer: the
            // devices take no response for a stream running nothing.
            if state.sent > 0 {
                this.take_responses(state);
            }
            // Every queue is looked at below, under the semaphores' locks:
            // changes before this are seen there. Most turns find it clear
            // (this pass's own changes do not set it): no locked
            // instruction then; one set after this load is seen by the
            // pass's last look at it, fully ordered after `passing` drops.
            if this.missed.load(Relaxed) != 0 {
                this.missed.xchg(0, Full);
            }
            if this.submit(state) {
                if state.woken.is_empty() {
                    continue;
                }
                // The pass after the others sees to the rest, the
                // watchdog included.
                return true;
            }
            // The pass ends: each queue that nothing else brings a pass
            // for asks for kicks, then is looked at once more (a packet
            // published before the flag was set is seen here).
            // - One stalled needs none. A queue stopped at a
            //   WAIT_SEMAPHORE is woken by the semaphore's change
            //   (`blocked` is set), and nothing behind the wait can run
            //   before it, so a busy process submits behind it without
            //   system calls; it is left as it is: across devices, every
            //   edge of a chain ends a pass so. One short of a staging page
            //   goes at the completion that frees one.
            // - One that asked for kicks all along (this pass took nothing
            //   from it) needs no look either: the look after the flag was
            //   set, or this pass's, saw what was published before, and
            //   the process kicks for what came after.
            // - One part-way into the device, or whose stream runs
            //   commands, needs none: that stream's next answer brings the
            //   pass that looks at it, and a process that keeps its queue
            //   busy submits without system calls. One on an idle stream
            //   asks even while other streams run: nothing else would look
            //   at it before their next answer, which a long launch may
            //   hold back for seconds.
            let mut runnable = false;
            for q in state.queues.iter_mut() {
                let stream_runs = state
                    .streams
                    .get(usize::from(q.stream))
                    .is_some_and(|s| !s.fifo.is_empty());
                if q.stalled || q.asks_kick || q.staged.is_some() || stream_runs {
                    continue;
                }
                q.ask_for_kicks(true);
                match this.head(q) {
                    // Published before the flag was set: the process may
                    // not kick for it, and a queue that asks for kicks is
                    // looked at only when it does.
                    Head::Runnable => {
                        runnable = true;
                        q.ask_for_kicks(false);
                    }
                    Head::Waiting => q.ask_for_kicks(false),
                    Head::Empty => {}
                }
            }
            if !runnable {
                if state.sent > 0 {
                    // The interrupt brings the scheduler back; the
                    // watchdog makes sure it does.
                    Self::watchdog(this, state);
                }
                return false;
            }
        }
    }
}

/// What a queue's next packet lets the scheduler do.
enum Head {
    /// No packet published.
    Empty,
    /// A WAIT_SEMAPHORE that is not reached.
    Waiting,
    /// Something to take (or a packet that faults the queue).
    Runnable,
}
