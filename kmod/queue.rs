// SPDX-License-Identifier: GPL-2.0

//! User-mode queues: a ring of 64-byte packets and a control block, in pages
//! the process maps read-write. The process writes packets and publishes
//! its write index; the scheduler reads, validates and translates them and
//! publishes the read index and any fault.
//!
//! Nothing in these pages is trusted: the kernel keeps its own indices and
//! state here and rewrites the control block from them, and reads only the
//! write index and packet bytes, which it checks.
//!
//! A queue reaches its file only through [`FileObjects`]: the objects its
//! packets may name.

use core::mem::offset_of;
use kernel::{
    new_spinlock,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Full,
            Relaxed,
            Release, //
        },
        barrier::smp_mb,
        Arc, SpinLock,
    },
    transmute::FromBytes,
};

use crate::{
    bo::Bo,
    raw::{
        page_atomic,
        read_user_page, //
    },
    semaphore::{
        Semaphores,
        Wake, //
    },
    trace,
    uapi::{
        self,
        QueueControl, //
    },
};

/// What a queue's packets may reach of the file that created it: its
/// objects, by handle, and nothing else.
pub(crate) trait FileObjects: Send + Sync {
    /// The BO behind a handle of the file; ENOENT if there is none.
    fn bo(&self, handle: u32) -> Result<Arc<Bo>>;

    /// The file's semaphores.
    fn semaphores(&self) -> &Semaphores;
}

/// The kernel's record of a queue; the control block mirrors it.
#[derive(Clone, Copy, Default)]
pub(crate) struct QueueState {
    /// Packets taken from the ring (completed or in flight).
    pub(crate) submitted: u64,
    /// Packets completed.
    pub(crate) completed: u64,
    /// Set once: `uapi::queue_status::FAULTED` and what went wrong.
    pub(crate) faulted: bool,
    pub(crate) error: u32,
    pub(crate) fault_index: u64,
    pub(crate) err_code: u32,
    pub(crate) err_pc: u32,
    pub(crate) err_thread: u32,
    /// QUEUE_DESTROY or close: the scheduler drops it.
    pub(crate) destroyed: bool,
    /// Bytes its completed copies and fills moved, for `radctl top`.
    pub(crate) bytes: u64,
    /// Packets before this one are skipped with `skip_error` (a failed
    /// WAIT_SEMAPHORE with SKIP_ON_FAILURE); see [`Queue::pending`].
    skip_until: u64,
    skip_error: u32,
}

/// One user-mode queue.
#[pin_data]
pub(crate) struct Queue {
    pub(crate) id: u32,
    /// Its device's index, for tracing.
    dev: u32,
    /// The process that created it, for debugfs.
    pub(crate) tgid: i32,
    /// Its file's objects: the only ones its packets may name.
    objects: Arc<dyn FileObjects>,
    ring: KVec<Page>,
    ring_packets: u32,
    control: Page,
    /// 1 once the process rang the doorbell (QUEUE_KICK), until the
    /// scheduler looks (see [`Queue::take_doorbell`]).
    doorbell: Atomic<i32>,
    /// Innermost lock (see the scheduler), held for a few loads and
    /// stores and never across a sleep: a spinlock, which every packet of
    /// every pass takes twice (on a lockdep kernel a mutex costs more).
    /// Lock order: level 8, the innermost (Documentation/design/locking.md).
    #[pin]
    state: SpinLock<QueueState>,
}

impl Queue {
    /// A queue of `ring_packets` packets (checked by the caller).
    pub(crate) fn new(
        objects: Arc<dyn FileObjects>,
        dev: u32,
        tgid: i32,
        id: u32,
        ring_packets: u32,
    ) -> Result<Arc<Self>> {
        let pages = (ring_packets as usize * uapi::PACKET_SIZE).div_ceil(PAGE_SIZE);
        let mut ring = KVec::with_capacity(pages, GFP_KERNEL)?;
        for _ in 0..pages {
            ring.push(Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?, GFP_KERNEL)?;
        }
        let control = Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?;
        Arc::pin_init(
            try_pin_init!(Self {
                id,
                dev,
                tgid,
                objects,
                ring,
                ring_packets,
                control,
                doorbell: Atomic::new(0),
                state <- new_spinlock!(QueueState::default(), "Queue::state"),
            }),
            GFP_KERNEL,
        )
    }

    pub(crate) fn objects(&self) -> &dyn FileObjects {
        &*self.objects
    }

    pub(crate) fn ring_packets(&self) -> u32 {
        self.ring_packets
    }

    pub(crate) fn ring_pages(&self) -> &[Page] {
        &self.ring
    }

    pub(crate) fn control_page(&self) -> &Page {
        &self.control
    }

    pub(crate) fn state(&self) -> QueueState {
        *self.state.lock()
    }

    /// The index of the process's next packet the kernel has not taken,
    /// if it published one, with the error it is skipped with if it is
    /// (see [`Queue::start_skip`]), read under one lock; a write index that
    /// runs ahead of the ring faults the queue.
    pub(crate) fn pending(&self) -> Option<(u64, Option<u32>)> {
        let state = self.state();
        if state.faulted || state.destroyed {
            return None;
        }
        let write = self.write_index().ok()?;
        if write.wrapping_sub(state.completed) > u64::from(self.ring_packets) {
            self.fault(state.submitted, EINVAL.to_errno().unsigned_abs(), 0, 0, 0);
            return None;
        }
        let index = state.submitted;
        let skip = (index < state.skip_until).then_some(state.skip_error);
        (write != index).then_some((index, skip))
    }

    /// How many published packets the kernel has not taken yet (as the
    /// process set its write index; not checked, only a hint).
    pub(crate) fn backlog(&self) -> u64 {
        let write = self.write_index().unwrap_or(0);
        write.saturating_sub(self.state().submitted)
    }

    /// The write index the process published, as it set it.
    fn write_index(&self) -> Result<u64> {
        page_atomic::<i64, _>(&self.control, offset_of!(QueueControl, write_index), |w| {
            w.load(Acquire) as u64
        })
    }

    /// Packet `index` from the ring. The process may be writing it as we
    /// read: the copy is of plain bytes, checked afterwards.
    pub(crate) fn packet(&self, index: u64) -> Result<uapi::Packet> {
        let slot = index
            .checked_rem(u64::from(self.ring_packets))
            .ok_or(EINVAL)? as usize
            * uapi::PACKET_SIZE;
        let page = self.ring.get(slot / PAGE_SIZE).ok_or(EINVAL)?;
        // A packet never crosses a page: 64 divides the page size.
        let mut bytes = [0u8; uapi::PACKET_SIZE];
        read_user_page(page, slot % PAGE_SIZE, &mut bytes)?;
        uapi::Packet::from_bytes_copy(&bytes).ok_or(EINVAL)
    }

    /// The scheduler took packet `index`.
    pub(crate) fn mark_submitted(&self, index: u64) {
        self.state.lock().submitted = index + 1;
    }

    /// One of its copies or fills moved `bytes`.
    pub(crate) fn count_bytes(&self, bytes: u64) {
        let mut state = self.state.lock();
        state.bytes = state.bytes.wrapping_add(bytes);
    }

    /// Packet `index` completed. Packets before a fault still complete;
    /// none from the faulting one on.
    pub(crate) fn complete(&self, index: u64) {
        let mut state = self.state.lock();
        if index < state.completed || (state.faulted && index >= state.fault_index) {
            return;
        }
        state.completed = index + 1;
        // Only the read index moved: the rest was published when it last
        // changed (a fault).
        self.put64(offset_of!(QueueControl, read_index), state.completed);
        drop(state);
        trace::packet_done(self.dev, self, index, 0);
    }

    /// Packet `index`, the next one to take, was taken and completed in one
    /// step (see `Scheduler::complete_taken`), under one lock.
    pub(crate) fn take_completed(&self, index: u64) {
        let mut state = self.state.lock();
        state.submitted = index + 1;
        state.completed = index + 1;
        self.put64(offset_of!(QueueControl, read_index), state.completed);
        drop(state);
        trace::packet_done(self.dev, self, index, 0);
    }

    /// Stops the queue at packet `index` with a positive errno (and the
    /// device's error for a device fault). The first fault sticks. Every
    /// semaphore the queue still had to signal fails with the same error.
    pub(crate) fn fault(
        &self,
        index: u64,
        error: u32,
        err_code: u32,
        err_pc: u32,
        err_thread: u32,
    ) {
        {
            let mut state = self.state.lock();
            if state.faulted {
                return;
            }
            state.faulted = true;
            state.error = error;
            state.fault_index = index;
            state.err_code = err_code;
            state.err_pc = err_pc;
            state.err_thread = err_thread;
            self.publish(&state);
        }
        trace::packet_done(self.dev, self, index, error);
        // Pairs with the process's store of its write index before it reads
        // the status: either we see packets it wrote after this fault and
        // fail their signals, or it sees the fault and fails them itself.
        smp_mb(Full);
        self.fail_signals(index, error);
    }

    /// Destroyed: nothing that has not completed counts any more, not even
    /// packets in flight (a launch that never ends is still cancelled).
    /// Their signals may still complete later; a failure sticks.
    pub(crate) fn cancel_signals(&self) {
        let state = self.state();
        if !state.faulted {
            self.fail_signals(state.completed, ECANCELED.to_errno().unsigned_abs());
        }
    }

    /// A WAIT_SEMAPHORE at `index` with SKIP_ON_FAILURE found its semaphore
    /// failed with `error`: it and the `count` packets after it are
    /// skipped.
    pub(crate) fn start_skip(&self, index: u64, count: u32, error: u32) {
        let mut state = self.state.lock();
        state.skip_until = index + 1 + u64::from(count);
        state.skip_error = error;
    }

    /// Fails the semaphores of the SIGNAL_SEMAPHORE packets from `index`
    /// to the process's write index (at most one ring's worth).
    fn fail_signals(&self, index: u64, error: u32) {
        let Ok(write) = self.write_index() else {
            return;
        };
        let end = write.min(index + u64::from(self.ring_packets));
        for i in index..end {
            let Ok(packet) = self.packet(i) else { continue };
            if packet.header.kind == uapi::packet_kind::SIGNAL_SEMAPHORE {
                self.objects.semaphores().fail_from_queue(
                    packet.body[0] as u32,
                    packet.body[1],
                    error,
                    &mut Wake::Now,
                );
            }
        }
    }

    /// QUEUE_DESTROY: the scheduler stops taking packets.
    pub(crate) fn destroy(&self) {
        self.state.lock().destroyed = true;
    }

    /// QUEUE_KICK: the process published packets while the queue asked
    /// for kicks. After its store of the write index, so the scheduler that
    /// takes the doorbell sees them.
    pub(crate) fn ring_doorbell(&self) {
        self.doorbell.store(1, Release);
    }

    /// Whether the doorbell rang since the last call: a queue that asks
    /// for kicks is looked at only then (see `Scheduler::submit`).
    pub(crate) fn take_doorbell(&self) -> bool {
        // Most turns find it clear: no locked instruction then.
        self.doorbell.load(Relaxed) != 0 && self.doorbell.xchg(0, Full) != 0
    }

    /// Sets or clears `needs_kick`; the scheduler calls it only to change
    /// it. Setting is fully ordered against the next `pending()`, so a
    /// packet published meanwhile is either seen by the scheduler or finds
    /// the flag set (and the process kicks). Clearing needs no order (a
    /// stale flag costs one kick).
    pub(crate) fn set_needs_kick(&self, on: bool) {
        let _ = page_atomic::<i32, _>(&self.control, offset_of!(QueueControl, needs_kick), |k| {
            k.xchg(i32::from(on), Full);
        });
    }

    /// Rewrites the kernel's fields of the control block.
    fn publish(&self, state: &QueueState) {
        let put32 = |offset, v: u32| {
            let _ = page_atomic::<i32, _>(&self.control, offset, |w| w.store(v as i32, Release));
        };
        put32(offset_of!(QueueControl, error), state.error);
        put32(offset_of!(QueueControl, err_code), state.err_code);
        self.put64(offset_of!(QueueControl, fault_index), state.fault_index);
        put32(offset_of!(QueueControl, err_pc), state.err_pc);
        put32(offset_of!(QueueControl, err_thread), state.err_thread);
        let status = if state.faulted {
            uapi::queue_status::FAULTED
        } else {
            uapi::queue_status::ACTIVE
        };
        put32(offset_of!(QueueControl, status), status);
        // Last: a process that sees the read index move sees the rest too.
        self.put64(offset_of!(QueueControl, read_index), state.completed);
    }

    /// Stores a u64 of the control block, released.
    fn put64(&self, offset: usize, v: u64) {
        // Every field's offset is in the page and aligned.
        let _ = page_atomic::<i64, _>(&self.control, offset, |w| w.store(v as i64, Release));
    }
}
