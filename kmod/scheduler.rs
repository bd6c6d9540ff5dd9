// SPDX-License-Identifier: GPL-2.0

//! The scheduler: every queue of every file of a device, multiplexed onto
//! the device's one command FIFO. It queues, completes and watches; what a
//! packet turns into is [`translate`]'s business.
//!
//! It runs as a work item, woken by a doorbell (QUEUE_KICK), a new queue or
//! the device's interrupt. Each pass takes responses first (completing
//! packets in order), then visits the queues round-robin, translating at
//! most one packet per queue per turn into Gluon commands, with a bounded
//! number of command IDs in flight. When nothing moves and nothing is in
//! flight, it sets `needs_kick` on every queue not stopped at a semaphore
//! wait (a semaphore's change wakes it), looks once more, and sleeps.
//!
//! A watchdog (a delayed work item) resets the device when the oldest
//! command in flight has not completed within the launch timeout: the
//! guilty queue faults with ETIMEDOUT, and the other queues' commands that
//! the reset dropped are issued again, in order. A launch of a destroyed
//! queue at the head is reset at once, the same way.
//!
//! Lock order: `Scheduler::state`, then a file's `Context::objects` (BO
//! lookups) or `Semaphores::table`, then `LaunchStaging::pages`, VRAM and
//! backend locks. `Queue::state` is innermost: taken under any of these,
//! it is never held while taking another.

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
        Arc, Mutex,
    },
    time::{
        msecs_to_jiffies,
        Delta,
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

use crate::{
    fifo::Fifo,
    hw::{
        command::{
            Command,
            Response, //
        },
        Gluon, Interrupt,
    },
    queue::Queue,
    raw::{
        flush_delayed_work,
        flush_work, //
    },
    staging::LaunchStaging,
    translate::{
        self,
        Completion,
        SemUpdate,
        Staged,
        Translated,
        Translator, //
    },
    uapi::packet_kind,
};

/// Commands in flight at most: within the device's FIFO depth and the
/// 256 one-byte command IDs.
const MAX_IN_FLIGHT: usize = 64;

/// A queue as the scheduler keeps it.
struct Scheduled {
    queue: Arc<Queue>,
    /// Its packet whose commands did not all fit in the device yet.
    staged: Option<Staged>,
}

struct InFlight {
    id: u8,
    /// Kept to issue again after a reset.
    cmd: Command,
    queue: Arc<Queue>,
    packet: u64,
    /// On the packet's last command, until its response: what completing
    /// the packet does, and what the packet holds until then.
    completion: Option<Completion>,
}

struct State {
    queues: KVec<Scheduled>,
    cursor: usize,
    in_flight: Fifo<InFlight>,
    next_id: u8,
    /// When the oldest command in flight became the oldest.
    head_since: Instant<Monotonic>,
    /// Device resets so far.
    resets: u64,
}

/// One device's scheduler.
#[pin_data]
pub(crate) struct Scheduler {
    hw: Arc<dyn Gluon>,
    /// Where launch blocks are copied for the device to read.
    staging: Arc<LaunchStaging>,
    /// 1 while a queue waits on a semaphore: only then do semaphore
    /// changes wake the scheduler (host-only semaphores cost no pass).
    blocked: Atomic<i32>,
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
}

impl Scheduler {
    /// A scheduler for `hw` that resets it when a command takes longer than
    /// `timeout_ms`.
    pub(crate) fn new(hw: Arc<dyn Gluon>, timeout_ms: u32) -> Result<Arc<Self>> {
        let state = State {
            queues: KVec::new(),
            cursor: 0,
            in_flight: Fifo::with_capacity(MAX_IN_FLIGHT)?,
            next_id: 0,
            head_since: Instant::now(),
            resets: 0,
        };
        let staging = LaunchStaging::new(hw.dma_device())?;
        let device_hw = hw.clone();
        let this = Arc::pin_init(
            pin_init!(Self {
                hw: device_hw,
                staging,
                blocked: Atomic::new(0),
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

    /// Wakes the scheduler (doorbell, interrupt, new queue).
    pub(crate) fn kick(this: &Arc<Self>) {
        // Already queued: that run will see what this kick is for.
        let _ = crate::raw::system_dfl().enqueue::<_, 0>(this.clone());
    }

    /// A semaphore changed: wake the scheduler if a queue waits on one.
    /// The caller changed it under the semaphore lock, which the scheduler
    /// takes to look at a semaphore after setting `blocked`: so either the
    /// scheduler sees the change or this sees the flag.
    pub(crate) fn semaphore_changed(this: &Arc<Self>) {
        if this.blocked.load(Acquire) != 0 {
            Self::kick(this);
        }
    }

    /// Schedules a new queue; ENOSPC past the device's queue limit.
    pub(crate) fn add(this: &Arc<Self>, queue: Arc<Queue>) -> Result {
        let mut state = this.state.lock();
        if state.queues.len() >= crate::device::MAX_QUEUES as usize {
            return Err(ENOSPC);
        }
        state.queues.push(
            Scheduled {
                queue,
                staged: None,
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
    }

    /// debugfs `queues`: one line of `key=value` pairs per queue.
    pub(crate) fn write_queues(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let state = self.state.lock();
        for q in state.queues.iter().map(|s| &s.queue) {
            let s = q.state();
            writeln!(
                f,
                "pid={} queue={} ring={} submitted={} completed={} status={} error={} fault_index={} \
                 err_code={} err_pc={:#x} err_thread={}",
                q.tgid,
                q.id,
                q.ring_packets(),
                s.submitted,
                s.completed,
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
        (state.queues.len(), state.in_flight.len(), state.resets)
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
        self.hw.set_interrupt(None);
        self.hw.reset();
        // Dropped after the lock: the last reference to a context frees
        // its objects, which takes other locks. An empty FIFO allocates
        // nothing, so the fallback never runs in practice.
        let in_flight = match Fifo::with_capacity(0) {
            Ok(empty) => Some(core::mem::replace(&mut self.state.lock().in_flight, empty)),
            Err(_) => {
                self.state.lock().in_flight.clear();
                None
            }
        };
        drop(in_flight);
        flush_delayed_work(&self.watchdog);
        flush_work(&self.work);
    }

    /// The watchdog's work item.
    fn check_overdue(this: &Arc<Self>) {
        let mut state = this.state.lock();
        this.take_responses(&mut state);
        Self::watchdog(this, &mut state);
    }

    /// Resets the device if the oldest command in flight is overdue, or is
    /// a launch of a destroyed queue (it may never end, and nobody waits for
    /// it); else looks again when it would be overdue.
    fn watchdog(this: &Arc<Self>, state: &mut State) {
        let Some(head) = state.in_flight.front() else {
            return;
        };
        let abandoned =
            matches!(head.cmd, Command::LaunchKernel { .. }) && head.queue.state().destroyed;
        let timeout = Delta::from_millis(this.timeout_ms.into());
        let age = state.head_since.elapsed();
        if age < timeout && !abandoned {
            let left = u32::try_from((timeout - age).as_millis() + 1).unwrap_or(this.timeout_ms);
            let _ = crate::raw::system_dfl()
                .enqueue_delayed::<_, 1>(this.clone(), msecs_to_jiffies(left));
            return;
        }
        this.hw.reset();
        state.resets += 1;
        let why = if abandoned {
            "of a destroyed queue"
        } else {
            "overdue"
        };
        dev_warn!(
            this.hw.dma_device(),
            "command {} {why}: device reset {}\n",
            head.id,
            state.resets
        );
        let error = if abandoned { ECANCELED } else { ETIMEDOUT };
        // The reset dropped every command in flight: the oldest's queue is
        // guilty and loses its commands; the others' are issued again.
        let State {
            in_flight, next_id, ..
        } = state;
        let mut guilty: Option<Arc<Queue>> = None;
        in_flight.retain_pending(|e| match &guilty {
            None => {
                e.queue
                    .fault(e.packet, error.to_errno().unsigned_abs(), 0, 0, 0);
                guilty = Some(e.queue.clone());
                false
            }
            Some(q) if Arc::ptr_eq(q, &e.queue) => false,
            Some(_) => {
                // The FIFO was emptied and takes at most MAX_IN_FLIGHT.
                let issued = this.hw.push_command(&e.cmd.encode(*next_id)).is_ok();
                if issued {
                    e.id = *next_id;
                    *next_id = next_id.wrapping_add(1);
                }
                issued
            }
        });
        state.head_since = Instant::now();
        Self::kick(this);
    }

    /// Takes every response: completes packets, records device faults.
    fn take_responses(&self, state: &mut State) {
        while let Some(raw) = self.hw.pop_response() {
            let response = Response::decode(&raw);
            let Some(done) = state.in_flight.front_mut() else {
                dev_err!(
                    self.hw.dma_device(),
                    "response {} with nothing in flight\n",
                    response.id
                );
                continue;
            };
            if done.id != response.id {
                dev_err!(
                    self.hw.dma_device(),
                    "response {} out of order (expected {})\n",
                    response.id,
                    done.id
                );
            }
            // Dropped at the end of this turn: the packet's BOs and launch
            // slot are free once its last command is done.
            let completion = done.completion.take();
            if response.err_code != 0 {
                done.queue.fault(
                    done.packet,
                    EIO.to_errno().unsigned_abs(),
                    response.err_code.into(),
                    response.err_pc,
                    response.err_thread,
                );
            } else if let Some(completion) = completion {
                completion.hand_back();
                // Not from the fault on: `fault` failed this semaphore.
                // Before the read index moves: a process that sees the
                // packet completed sees what it did to its semaphore.
                let s = done.queue.state();
                let sems = done.queue.objects().semaphores();
                match (completion.update, s.faulted && done.packet >= s.fault_index) {
                    (Some(SemUpdate::Signal { handle, value }), false) => {
                        sems.signal_from_queue(handle, value)
                    }
                    (
                        Some(SemUpdate::Fail {
                            handle,
                            value,
                            error,
                        }),
                        false,
                    ) => sems.fail_from_queue(handle, value, error),
                    _ => {}
                }
                done.queue.complete(done.packet);
            }
            // Once all are taken, the finished entries are dropped: their
            // queues may go then.
            state.in_flight.advance();
            state.head_since = Instant::now();
        }
    }

    /// Pushes as many commands of queue `i`'s staged packet as fit. True if
    /// anything was pushed.
    fn push_staged(&self, state: &mut State, i: usize) -> bool {
        let State {
            queues,
            in_flight,
            next_id,
            head_since,
            ..
        } = state;
        let Some(entry) = queues.get_mut(i) else {
            return false;
        };
        if entry.queue.state().faulted {
            // The rest of a faulted packet never runs.
            entry.staged = None;
        }
        let mut pushed = false;
        while let Some(staged) = &mut entry.staged {
            let Some(&cmd) = staged.commands.get(staged.next) else {
                entry.staged = None;
                break;
            };
            if in_flight.len() >= MAX_IN_FLIGHT
                || self.hw.push_command(&cmd.encode(*next_id)).is_err()
            {
                break;
            }
            staged.next += 1;
            let packet = staged.packet;
            // The packet is all in the device: what completing it does goes
            // with its last command.
            let completion = if staged.next == staged.commands.len() {
                entry.staged.take().map(|s| s.completion)
            } else {
                None
            };
            if in_flight.is_empty() {
                *head_since = Instant::now();
            }
            let entry_in_flight = InFlight {
                id: *next_id,
                cmd,
                queue: entry.queue.clone(),
                packet,
                completion,
            };
            // Capacity for MAX_IN_FLIGHT was reserved: this cannot fail.
            let _ = in_flight.push(entry_in_flight);
            *next_id = next_id.wrapping_add(1);
            pushed = true;
        }
        pushed
    }

    /// One round-robin turn: every queue may submit one packet.
    fn submit(&self, state: &mut State) -> bool {
        let mut progressed = false;
        let n = state.queues.len();
        for turn in 0..n {
            let i = (state.cursor + turn) % n;
            let Some(entry) = state.queues.get_mut(i) else {
                break;
            };
            if entry.staged.is_none() {
                let queue = entry.queue.clone();
                let Some(index) = queue.pending() else {
                    continue;
                };
                match self.translate(&queue, index) {
                    Ok(Translated::Run(staged)) => {
                        queue.mark_submitted(index);
                        entry.staged = Some(staged);
                    }
                    // Waiting on a semaphore (its signal wakes us), or for
                    // a launch in flight to give back its staging slot.
                    Ok(Translated::Blocked | Translated::Busy) => continue,
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
            progressed |= self.push_staged(state, i);
        }
        state.cursor = if n == 0 { 0 } else { (state.cursor + 1) % n };
        progressed
    }

    /// Translates packet `index` of `queue`. A WAIT_SEMAPHORE sets
    /// `blocked` first, so that it is woken by the semaphore's change.
    fn translate(&self, queue: &Queue, index: u64) -> Result<Translated> {
        let packet = queue.packet(index)?;
        self.mark_if_wait(&packet);
        let t = Translator {
            objects: queue.objects(),
            staging: &self.staging,
        };
        translate::translate(&t, index, &packet, queue.skipping(index))
    }

    /// What a queue's next packet lets the scheduler do.
    fn head(&self, queue: &Queue) -> Head {
        let Some(index) = queue.pending() else {
            return Head::Empty;
        };
        let Ok(packet) = queue.packet(index) else {
            return Head::Runnable;
        };
        self.mark_if_wait(&packet);
        let t = Translator {
            objects: queue.objects(),
            staging: &self.staging,
        };
        if translate::blocks(&t, &packet, queue.skipping(index)) {
            Head::Waiting
        } else {
            Head::Runnable
        }
    }

    /// Sets `blocked` before a WAIT_SEMAPHORE's semaphore is looked at (see
    /// [`Scheduler::semaphore_changed`]).
    fn mark_if_wait(&self, packet: &crate::uapi::Packet) {
        if packet.header.kind == packet_kind::WAIT_SEMAPHORE {
            self.blocked.xchg(1, Full);
        }
    }
}

impl WorkItem<1> for Scheduler {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        Self::check_overdue(&this);
    }
}

impl WorkItem for Scheduler {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        let mut state = this.state.lock();
        // Set again below by any queue still waiting on a semaphore.
        this.blocked.store(0, Relaxed);
        // Busy now: processes need not kick.
        for q in state.queues.iter() {
            q.queue.set_needs_kick(false);
        }
        loop {
            this.take_responses(&mut state);
            if this.submit(&mut state) {
                continue;
            }
            if !state.in_flight.is_empty() {
                // The interrupt brings the scheduler back; the watchdog
                // makes sure it does.
                Self::watchdog(&this, &mut state);
                return;
            }
            // Idle: ask for kicks, then look once more (a packet published
            // before the flag was set is seen here). A queue stopped at a
            // WAIT_SEMAPHORE needs none: the semaphore's change wakes us
            // (`blocked` is set), and nothing behind the wait can run
            // before it, so a busy process submits behind it without
            // system calls.
            for q in state.queues.iter() {
                q.queue.set_needs_kick(true);
            }
            let mut runnable = false;
            for q in state.queues.iter() {
                match this.head(&q.queue) {
                    Head::Runnable => runnable = true,
                    Head::Waiting => q.queue.set_needs_kick(false),
                    Head::Empty => {}
                }
            }
            if !runnable {
                return;
            }
            for q in state.queues.iter() {
                q.queue.set_needs_kick(false);
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
