// SPDX-License-Identifier: GPL-2.0

//! The scheduler: every queue of every file of a device, multiplexed onto
//! the device's one command FIFO.
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
//! Lock order: `Scheduler::state`, then `Queue::staged`, then a file's
//! `Context::objects` (BO lookups) or `Semaphores::table`, then VRAM and
//! backend locks. `Queue::state` is innermost: taken under any of these,
//! it is never held while taking another.

use kernel::{
    bindings,
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Full,
            Relaxed, //
        },
        Arc,
        Mutex,
    },
    time::msecs_to_jiffies,
    workqueue::{
        self,
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
    bo::Bo,
    fifo::Fifo,
    hw::{
        command::{
            Command,
            CopyDir,
            Response, //
        },
        Gluon,
        Interrupt,
    },
    queue::{
        Queue,
        SemUpdate,
        Staged, //
    },
    semaphore::WaitState,
    sg_table::{
        sync_for_cpu,
        sync_for_device, //
    },
    uapi::{
        self,
        packet_kind, //
    },
    vram,
};

/// Commands in flight at most: within the device's FIFO depth and the
/// 256 one-byte command IDs.
const MAX_IN_FLIGHT: usize = 64;

/// The largest single COPY or MEMSET: lengths are 32-bit.
const MAX_COMMAND_BYTES: u64 = 1 << 30;

/// Where launch blocks land in VRAM: the start of the reserved region.
/// Launches run one at a time, so one slot serves all of them.
const LAUNCH_SLOT: u32 = 0;
const _: () = assert!(vram::RESERVED >= 64 * 1024);

struct InFlight {
    id: u8,
    /// Kept to issue again after a reset.
    cmd: Command,
    queue: Arc<Queue>,
    packet: u64,
    /// The packet's last command: its response completes the packet.
    last: bool,
    /// What the packet's commands touch, alive until it completes.
    _bos: KVec<Arc<Bo>>,
    /// Host memory the packet's commands write (DMA ranges), handed back
    /// to the CPU when it completes; on the last command.
    written: KVec<(u64, u64)>,
    /// The packet's semaphore update, on the last command.
    update: Option<SemUpdate>,
}

struct State {
    queues: KVec<Arc<Queue>>,
    cursor: usize,
    in_flight: Fifo<InFlight>,
    next_id: u8,
    /// When the oldest command in flight became the oldest (ns, monotonic).
    head_since: i64,
    /// Device resets so far.
    resets: u64,
}

/// Monotonic nanoseconds.
fn now_ns() -> i64 {
    // SAFETY: no preconditions.
    unsafe { bindings::ktime_get() }
}

/// One device's scheduler.
#[pin_data]
pub(crate) struct Scheduler {
    hw: Arc<dyn Gluon>,
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
            head_since: 0,
            resets: 0,
        };
        let device_hw = hw.clone();
        let this = Arc::pin_init(
            pin_init!(Self {
                hw: device_hw,
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
        let _ = workqueue::system_unbound().enqueue::<_, 0>(this.clone());
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
        state.queues.push(queue, GFP_KERNEL)?;
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
        state.queues.retain(|q| !Arc::ptr_eq(q, queue));
        *queue.staged.lock() = None;
        Self::watchdog(this, &mut state);
    }

    /// debugfs `queues`: one line of `key=value` pairs per queue.
    pub(crate) fn write_queues(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let state = self.state.lock();
        for q in state.queues.iter() {
            let s = q.state();
            writeln!(
                f,
                "pid={} queue={} ring={} submitted={} completed={} status={} error={} fault_index={} \
                 err_code={} err_pc={:#x} err_thread={}",
                q.ctx.tgid,
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
        // SAFETY: both work items are initialised and live as long as
        // `self`; flushing a delayed work runs a pending one now.
        unsafe {
            bindings::flush_delayed_work(DelayedWork::raw_as_work(&self.watchdog).cast());
            bindings::flush_work(Work::raw_get(&self.work));
        }
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
        let Some(head) = state.in_flight.front() else { return };
        let abandoned = matches!(head.cmd, Command::LaunchKernel { .. }) && head.queue.state().destroyed;
        let timeout = i64::from(this.timeout_ms) * 1_000_000;
        let age = now_ns() - state.head_since;
        if age < timeout && !abandoned {
            let left = u32::try_from((timeout - age).div_euclid(1_000_000) + 1).unwrap_or(this.timeout_ms);
            let _ = workqueue::system_unbound().enqueue_delayed::<_, 1>(this.clone(), msecs_to_jiffies(left));
            return;
        }
        this.hw.reset();
        state.resets += 1;
        let why = if abandoned { "of a destroyed queue" } else { "overdue" };
        pr_warn!("command {} {why}: device reset {}\n", head.id, state.resets);
        let error = if abandoned { ECANCELED } else { ETIMEDOUT };
        // The reset dropped every command in flight: the oldest's queue is
        // guilty and loses its commands; the others' are issued again.
        let State { in_flight, next_id, .. } = state;
        let mut guilty: Option<Arc<Queue>> = None;
        in_flight.retain_pending(|e| match &guilty {
            None => {
                e.queue.fault(e.packet, error.to_errno().unsigned_abs(), 0, 0, 0);
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
        state.head_since = now_ns();
        Self::kick(this);
    }

    /// Takes every response: completes packets, records device faults.
    fn take_responses(&self, state: &mut State) {
        while let Some(raw) = self.hw.pop_response() {
            let response = Response::decode(&raw);
            let Some(done) = state.in_flight.front() else {
                pr_err!("response {} with nothing in flight\n", response.id);
                continue;
            };
            if done.id != response.id {
                pr_err!("response {} out of order (expected {})\n", response.id, done.id);
            }
            if response.err_code != 0 {
                done.queue.fault(
                    done.packet,
                    EIO.to_errno().unsigned_abs(),
                    response.err_code.into(),
                    response.err_pc,
                    response.err_thread,
                );
            } else if done.last {
                for &(addr, len) in done.written.iter() {
                    // SAFETY: the range lies in the bidirectional mapping
                    // of a BO in `done._bos`, alive until the entry goes.
                    unsafe { sync_for_cpu(self.hw.dma_device(), addr, len) };
                }
                // Not from the fault on: `fault` failed this semaphore.
                // Before the read index moves: a process that sees the
                // packet completed sees what it did to its semaphore.
                let s = done.queue.state();
                let sems = &done.queue.ctx.sems;
                match (done.update, s.faulted && done.packet >= s.fault_index) {
                    (Some(SemUpdate::Signal { handle, value }), false) => sems.signal_from_queue(handle, value),
                    (Some(SemUpdate::Fail { handle, value, error }), false) => sems.fail_from_queue(handle, value, error),
                    _ => {}
                }
                done.queue.complete(done.packet);
            }
            // Once all are taken, the finished entries are dropped: their
            // queues and BOs may go then.
            state.in_flight.advance();
            state.head_since = now_ns();
        }
    }

    /// Pushes as many commands of `queue`'s staged packet as fit. True if
    /// anything was pushed.
    fn push_staged(&self, state: &mut State, queue: &Arc<Queue>) -> bool {
        let mut slot = queue.staged.lock();
        if queue.state().faulted {
            // The rest of a faulted packet never runs.
            *slot = None;
        }
        let Some(staged) = &mut *slot else { return false };
        let mut pushed = false;
        while staged.next < staged.commands.len() && state.in_flight.len() < MAX_IN_FLIGHT {
            let id = state.next_id;
            let last = staged.next + 1 == staged.commands.len();
            if self.hw.push_command(&staged.commands[staged.next].encode(id)).is_err() {
                break;
            }
            let bos = if last { core::mem::take(&mut staged.bos) } else { KVec::new() };
            let written = if last { core::mem::take(&mut staged.written) } else { KVec::new() };
            let update = if last { staged.update } else { None };
            let cmd = staged.commands[staged.next];
            let entry = InFlight { id, cmd, queue: queue.clone(), packet: staged.packet, last, _bos: bos, written, update };
            if state.in_flight.is_empty() {
                state.head_since = now_ns();
            }
            // Capacity for MAX_IN_FLIGHT was reserved: this cannot fail.
            let _ = state.in_flight.push(entry);
            state.next_id = id.wrapping_add(1);
            staged.next += 1;
            pushed = true;
        }
        if staged.next == staged.commands.len() {
            *slot = None;
        }
        pushed
    }

    /// One round-robin turn: every queue may submit one packet.
    fn submit(&self, state: &mut State) -> bool {
        let mut progressed = false;
        let n = state.queues.len();
        for i in 0..n {
            let Some(queue) = state.queues.get((state.cursor + i) % n).cloned() else { break };
            if queue.staged.lock().is_none() {
                let Some(index) = queue.pending() else { continue };
                match translate_marking_waits(self, &queue, index) {
                    Ok(Translated::Run(staged)) => {
                        queue.mark_submitted(index);
                        *queue.staged.lock() = Some(staged);
                    }
                    // Waiting on a semaphore: its signal wakes us.
                    Ok(Translated::Blocked) => continue,
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
            progressed |= self.push_staged(state, &queue);
        }
        state.cursor = if n == 0 { 0 } else { (state.cursor + 1) % n };
        progressed
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
            q.set_needs_kick(false);
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
                q.set_needs_kick(true);
            }
            let mut runnable = false;
            for q in state.queues.iter() {
                match this.head(q) {
                    Head::Runnable => runnable = true,
                    Head::Waiting => q.set_needs_kick(false),
                    Head::Empty => {}
                }
            }
            if !runnable {
                return;
            }
            for q in state.queues.iter() {
                q.set_needs_kick(false);
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

impl Scheduler {
    fn head(&self, queue: &Queue) -> Head {
        match queue.pending() {
            None => Head::Empty,
            Some(index) => match translate_marking_waits(self, queue, index) {
                Ok(Translated::Blocked) => Head::Waiting,
                _ => Head::Runnable,
            },
        }
    }
}

/// [`translate`], with `blocked` set first: a packet that turns out to
/// wait on a semaphore is then woken by the semaphore's change.
fn translate_marking_waits(scheduler: &Scheduler, queue: &Queue, index: u64) -> Result<Translated> {
    let is_wait = queue.packet(index).is_ok_and(|p| p.header.kind == packet_kind::WAIT_SEMAPHORE);
    if is_wait {
        scheduler.blocked.xchg(1, Full);
    }
    translate(queue, index)
}

fn vram_addr(bo: &Bo, offset: u64) -> Result<u32> {
    if bo.placement() != uapi::placement::VRAM {
        return Err(EINVAL);
    }
    u32::try_from(bo.device_address() + offset).map_err(|_| EINVAL)
}

/// The one DMA address of `[offset, offset + size)` of a host BO: Gluon
/// reaches launch blocks and printf output in one piece.
fn single_dma_address(bo: &Bo, offset: u64, size: u64) -> Result<u32> {
    let mut pieces = KVec::new();
    bo.host_pieces(offset, size, &mut |dma, _| Ok(pieces.push(dma, GFP_KERNEL)?))?;
    let [addr] = pieces[..] else { return Err(EINVAL) };
    u32::try_from(addr).map_err(|_| EINVAL)
}

/// The `limit` of a launch block's printf ring (right after the params),
/// if the block holds the ring header and `limit` bytes after it.
fn printf_ring_limit(block: &[u8]) -> Option<u32> {
    let word = |at: usize| Some(u32::from_le_bytes(block.get(at..at + 4)?.try_into().ok()?));
    let ring = size_of::<uapi::LaunchBlock>()
        .checked_add(usize::try_from(word(28)?).ok()?)?
        .checked_add(usize::try_from(word(32)?).ok()?)?;
    let limit = word(ring + 12)?;
    (ring + size_of::<uapi::PrintfRing>() + limit as usize <= block.len()).then_some(limit)
}

/// COPY commands between host BO `host` and VRAM BO `vram` (direction
/// `dir`), split where the host side's DMA segments end. What the device
/// will read is handed to it now; what it will write goes into `written`,
/// to be handed back to the CPU when the packet completes.
#[expect(clippy::too_many_arguments, reason = "one copy, both sides and where its DMA ranges go")]
fn host_copy(
    commands: &mut KVec<Command>,
    written: &mut KVec<(u64, u64)>,
    dma_dev: &kernel::device::Device,
    host: &Bo,
    host_off: u64,
    vram: &Bo,
    vram_off: u64,
    size: u64,
    dir: CopyDir,
) -> Result {
    let mut done = 0;
    host.host_pieces(host_off, size, &mut |dma, len| {
        let host_addr = u32::try_from(dma).map_err(|_| EINVAL)?;
        let dev = vram_addr(vram, vram_off + done)?;
        let (src, dst) = if dir == CopyDir::HostToDevice {
            // SAFETY: the piece lies in `host`'s bidirectional mapping,
            // which the packet keeps alive.
            unsafe { sync_for_device(dma_dev, dma, len) };
            (host_addr, dev)
        } else {
            written.push((dma, len), GFP_KERNEL)?;
            (dev, host_addr)
        };
        commands.push(Command::Copy { src, dst, len: len as u32, dir }, GFP_KERNEL)?;
        done += len;
        Ok(())
    })
}

/// What a packet of a queue turned into.
enum Translated {
    /// Commands to run.
    Run(Staged),
    /// A WAIT_SEMAPHORE that is not satisfied yet.
    Blocked,
    /// A WAIT_SEMAPHORE with SKIP_ON_FAILURE on a semaphore that failed
    /// with the positive errno `error`: skip it and `count` more packets.
    Skip { count: u32, error: u32 },
}

/// Translates packet `index` of `queue` into Gluon commands: every handle
/// must be an object of the queue's file and every range inside its BO.
/// An error is the queue's fault.
fn translate(queue: &Queue, index: u64) -> Result<Translated> {
    let packet = queue.packet(index)?;
    let h = packet.header;
    let skip_flag = h.flags & uapi::packet_flags::SKIP_ON_FAILURE != 0;
    if h.reserved != 0 || h.pad != 0 || h.flags & !uapi::packet_flags::ALL != 0 {
        return Err(EINVAL);
    }
    if skip_flag && h.kind != packet_kind::WAIT_SEMAPHORE {
        return Err(EINVAL);
    }
    let mut commands = KVec::new();
    let mut bos = KVec::new();
    let mut written = KVec::new();
    let mut update = None;
    let dma_dev = queue.ctx.device().hw().dma_device();
    let body = packet.body;
    let lo = |w: u64| w as u32;
    let hi = |w: u64| (w >> 32) as u32;
    if let Some(error) = queue.skipping(index) {
        // Skipped packets run nothing but still complete in order; a
        // skipped signal fails its semaphore then.
        if h.kind == packet_kind::SIGNAL_SEMAPHORE {
            update = Some(SemUpdate::Fail { handle: lo(body[0]), value: body[1], error });
        }
        commands.push(Command::Fence, GFP_KERNEL)?;
        return Ok(Translated::Run(Staged { packet: index, commands, next: 0, bos, written: KVec::new(), update }));
    }
    if h.flags & uapi::packet_flags::BARRIER != 0 {
        commands.push(Command::Fence, GFP_KERNEL)?;
    }
    // Words of the body a packet kind does not use must be zero.
    let zero_from = |word: usize| body.get(word..).is_some_and(|rest| rest.iter().all(|&w| w == 0));
    match h.kind {
        packet_kind::NOP | packet_kind::FENCE => {
            if !zero_from(0) {
                return Err(EINVAL);
            }
            // A FENCE keeps the packet in order and gives it a response.
            commands.push(Command::Fence, GFP_KERNEL)?;
        }
        packet_kind::FILL => {
            let (dst, pattern_size, offset, size) = (lo(body[0]), hi(body[0]), body[1], body[2]);
            let (pattern, pad) = (lo(body[3]), hi(body[3]));
            if pad != 0 || !zero_from(4) {
                return Err(EINVAL);
            }
            let bo = queue.ctx.bo(dst)?;
            bo.check_range(offset, size)?;
            let pattern = match pattern_size {
                1 if pattern <= 0xff => pattern * 0x0101_0101,
                2 if pattern <= 0xffff => pattern * 0x0001_0001,
                4 => pattern,
                _ => return Err(EINVAL),
            };
            if offset % u64::from(pattern_size) != 0 || size % u64::from(pattern_size) != 0 {
                return Err(EINVAL);
            }
            let mut done = 0;
            while done < size {
                let n = (size - done).min(MAX_COMMAND_BYTES);
                commands.push(Command::Memset { dst: vram_addr(&bo, offset + done)?, pattern, len: n as u32 }, GFP_KERNEL)?;
                done += n;
            }
            bos.push(bo, GFP_KERNEL)?;
        }
        packet_kind::COPY => {
            let (src, dst, src_off, dst_off, size) = (lo(body[0]), hi(body[0]), body[1], body[2], body[3]);
            if !zero_from(4) {
                return Err(EINVAL);
            }
            let (s, d) = (queue.ctx.bo(src)?, queue.ctx.bo(dst)?);
            s.check_range(src_off, size)?;
            d.check_range(dst_off, size)?;
            if Arc::ptr_eq(&s, &d) && src_off < dst_off + size && dst_off < src_off + size {
                return Err(EINVAL);
            }
            let vram = uapi::placement::VRAM;
            match (s.placement() == vram, d.placement() == vram) {
                (true, true) => {
                    let mut done = 0;
                    while done < size {
                        let n = (size - done).min(MAX_COMMAND_BYTES);
                        let (a, b) = (vram_addr(&s, src_off + done)?, vram_addr(&d, dst_off + done)?);
                        commands.push(Command::Copy { src: a, dst: b, len: n as u32, dir: CopyDir::DeviceToDevice }, GFP_KERNEL)?;
                        done += n;
                    }
                }
                (false, true) => {
                    host_copy(&mut commands, &mut written, dma_dev, &s, src_off, &d, dst_off, size, CopyDir::HostToDevice)?
                }
                (true, false) => {
                    host_copy(&mut commands, &mut written, dma_dev, &d, dst_off, &s, src_off, size, CopyDir::DeviceToHost)?
                }
                // Gluon copies to or from VRAM only.
                (false, false) => return Err(EINVAL),
            }
            bos.push(s, GFP_KERNEL)?;
            bos.push(d, GFP_KERNEL)?;
        }
        packet_kind::LAUNCH => {
            let (block, pad, offset, size) = (lo(body[0]), hi(body[0]), body[1], body[2]);
            let (printf, pad2, printf_offset, printf_size) = (lo(body[3]), hi(body[3]), body[4], body[5]);
            if pad != 0 || pad2 != 0 || !zero_from(6) {
                return Err(EINVAL);
            }
            let bo = queue.ctx.bo(block)?;
            bo.check_range(offset, size)?;
            let size = usize::try_from(size)?;
            if size < size_of::<uapi::LaunchBlock>() || offset as usize % PAGE_SIZE + size > PAGE_SIZE {
                return Err(EINVAL);
            }
            // The device reads a copy the process can no longer change, with
            // the printf address set here: a process never names a DMA
            // address itself.
            let mut copy = KVec::from_elem(0u8, size, GFP_KERNEL)?;
            bo.read_host(offset, &mut copy)?;
            let printf_addr = if printf == 0 {
                if printf_offset != 0 || printf_size != 0 {
                    return Err(EINVAL);
                }
                0
            } else {
                let out = queue.ctx.bo(printf)?;
                out.check_range(printf_offset, printf_size)?;
                let limit = printf_ring_limit(&copy).ok_or(EINVAL)?;
                if printf_size < 4 + u64::from(limit) {
                    return Err(EINVAL);
                }
                let addr = single_dma_address(&out, printf_offset, printf_size)?;
                // The device writes only the text it has: the bytes after
                // it must reach the CPU as they were, so they go to the
                // device first.
                // SAFETY: the range lies in `out`'s bidirectional mapping,
                // which the packet keeps alive.
                unsafe { sync_for_device(dma_dev, addr.into(), printf_size) };
                written.push((addr.into(), printf_size), GFP_KERNEL)?;
                bos.push(out, GFP_KERNEL)?;
                addr
            };
            copy.get_mut(24..28).ok_or(EINVAL)?.copy_from_slice(&printf_addr.to_le_bytes());
            let staging = Bo::new_host(queue.ctx.device().clone(), PAGE_SIZE as u64, uapi::bo_flags::MAPPABLE)?;
            staging.write_host(0, &copy)?;
            let host_addr = single_dma_address(&staging, 0, size as u64)?;
            // SAFETY: the block lies in the staging BO's bidirectional
            // mapping, which the packet keeps alive.
            unsafe { sync_for_device(dma_dev, host_addr.into(), size as u64) };
            commands.push(Command::LaunchKernel { host_addr, size: size as u32, gpu_addr: LAUNCH_SLOT }, GFP_KERNEL)?;
            bos.push(bo, GFP_KERNEL)?;
            bos.push(staging, GFP_KERNEL)?;
        }
        packet_kind::WAIT_SEMAPHORE | packet_kind::SIGNAL_SEMAPHORE => {
            let (handle, skip, value) = (lo(body[0]), hi(body[0]), body[1]);
            if (skip != 0 && !skip_flag) || !zero_from(2) {
                return Err(EINVAL);
            }
            let state = queue.ctx.sems.wait_state(handle, value)?;
            if h.kind == packet_kind::WAIT_SEMAPHORE {
                match state {
                    WaitState::Pending => return Ok(Translated::Blocked),
                    WaitState::Failed(error) if skip_flag => return Ok(Translated::Skip { count: skip, error }),
                    WaitState::Failed(error) => return Err(Error::from_errno(-(error as i32))),
                    WaitState::Reached => {}
                }
            } else {
                update = Some(SemUpdate::Signal { handle, value });
            }
            // In order after everything before it on the queue.
            commands.push(Command::Fence, GFP_KERNEL)?;
        }
        packet_kind::READ_COUNTER | packet_kind::TIMESTAMP => {
            let (dst, counter, offset) = (lo(body[0]), hi(body[0]), body[1]);
            if !zero_from(2) || offset % 8 != 0 {
                return Err(EINVAL);
            }
            let counter = match (h.kind, counter) {
                (packet_kind::TIMESTAMP, 0) => uapi::counter::CLOCK_NS,
                (packet_kind::READ_COUNTER, c) if c < uapi::counter::COUNT => c,
                _ => return Err(EINVAL),
            };
            let bo = queue.ctx.bo(dst)?;
            bo.check_range(offset, 8)?;
            // Counts everything before it, even on a device that executes
            // out of order.
            commands.push(Command::Fence, GFP_KERNEL)?;
            commands.push(Command::ReadCounter { counter, dst: vram_addr(&bo, offset)? }, GFP_KERNEL)?;
            bos.push(bo, GFP_KERNEL)?;
        }
        _ => return Err(EINVAL),
    }
    Ok(Translated::Run(Staged { packet: index, commands, next: 0, bos, written, update }))
}
