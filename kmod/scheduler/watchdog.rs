// SPDX-License-Identifier: GPL-2.0

//! The scheduler's watchdog and the device reset: a delayed work item
//! watches the command at the head of each stream. One that has made no
//! progress within the launch timeout, or a launch of a destroyed queue,
//! resets the device; its queue faults (ETIMEDOUT or ECANCELED), and the
//! other queues' commands that the reset dropped are issued again, each
//! stream in order (Documentation/design/scheduler.md).

use kernel::{
    prelude::*,
    sync::Arc,
    time::{
        msecs_to_jiffies,
        Delta,
        Instant, //
    },
    workqueue::WorkItem,
};

use super::{
    Scheduler,
    State, //
};
use crate::{gluon::Command, queue::Queue};

impl Scheduler {
    /// The watchdog's work item.
    fn check_overdue(this: &Arc<Self>) {
        let mut state = this.state.lock();
        if state.lost {
            return;
        }
        this.take_responses(&mut state);
        Self::watchdog(this, &mut state);
        Self::unlock_and_wake(state);
    }

    /// Resets the device if the command at the head of a stream is overdue,
    /// or is a launch of a destroyed queue (it may never end, and nobody
    /// waits for it); else looks again when the first would be overdue.
    pub(super) fn watchdog(this: &Arc<Self>, state: &mut State) {
        match this.watch(state) {
            Watch::Idle => {}
            Watch::Due(left) => {
                let ms = u32::try_from(left.as_millis() + 1).unwrap_or(this.timeout_ms);
                let _ = crate::raw::system_dfl()
                    .enqueue_delayed::<_, 1>(this.clone(), msecs_to_jiffies(ms));
            }
            Watch::Reset { stream, abandoned } => Self::reset(this, state, stream, abandoned),
        }
    }

    /// What the watchdog finds at the heads of the streams.
    fn watch(&self, state: &State) -> Watch {
        let timeout = Delta::from_millis(self.timeout_ms.into());
        let mut next: Option<Delta> = None;
        for (i, stream) in state.streams.iter().enumerate() {
            // Markers never stay at a head (see `settle`).
            let Some(head) = stream.fifo.front() else {
                continue;
            };
            let abandoned =
                matches!(head.cmd, Some(Command::Kernel { .. })) && head.queue.state().destroyed;
            let mut age = stream.head_since.elapsed();
            // Held back behind the device's own work: the device is slow
            // only if it stands still, and a command it took late ages
            // from then.
            if let Some(since) = self.hw.ages_from(i as u8) {
                age = age.min(since.elapsed());
            }
            if age >= timeout || abandoned {
                return Watch::Reset {
                    stream: i,
                    abandoned,
                };
            }
            let left = timeout - age;
            next = Some(next.map_or(left, |n| if left < n { left } else { n }));
        }
        next.map_or(Watch::Idle, Watch::Due)
    }

    /// Resets the device for the command at the head of stream
    /// `guilty_stream` (overdue, or `abandoned`): its queue faults, and the
    /// other queues' commands are issued again.
    fn reset(this: &Arc<Self>, state: &mut State, guilty_stream: usize, abandoned: bool) {
        this.hw.reset();
        state.resets += 1;
        let why = if abandoned {
            "a launch of a destroyed queue"
        } else {
            "overdue"
        };
        dev_warn!(
            this.hw.dma_device(),
            "stream {guilty_stream}: {why}: device reset {}\n",
            state.resets
        );
        let error = if abandoned { ECANCELED } else { ETIMEDOUT };
        // The reset dropped every command: the head's queue is guilty and
        // loses its commands; the others' are issued again, each stream in
        // order.
        let Some(head) = state
            .streams
            .get(guilty_stream)
            .and_then(|s| s.fifo.front())
        else {
            return;
        };
        let guilty = head.queue.clone();
        guilty.fault(head.packet, error.to_errno().unsigned_abs(), 0, 0, 0);
        this.reissue(state, &guilty);
        for i in 0..state.streams.len() {
            this.settle(state, i);
        }
        Self::kick(this);
    }

    /// After a reset: issues every stream's commands again, in order, but
    /// `guilty`'s, and but those behind a host step still to run (their
    /// packets fault with EIO).
    fn reissue(&self, state: &mut State, guilty: &Arc<Queue>) {
        let dialect = self.hw.desc().dialect;
        let mut sent = 0;
        for (i, stream) in state.streams.iter_mut().enumerate() {
            stream.sent = 0;
            stream.host_steps = 0;
            stream.fifo.retain_pending(|e| {
                if Arc::ptr_eq(&e.queue, guilty) {
                    return false;
                }
                let Some(cmd) = e.cmd else {
                    stream.host_steps += usize::from(e.host.is_some());
                    return true;
                };
                if stream.host_steps > 0 {
                    // It would read a page before the CPU wrote it: its
                    // packet cannot run whole any more.
                    e.queue
                        .fault(e.packet, EIO.to_errno().unsigned_abs(), 0, 0, 0);
                    return false;
                }
                // The device was emptied and takes at most MAX_IN_FLIGHT.
                let issued = dialect
                    .encode(i as u8, &cmd)
                    .is_ok_and(|frame| self.hw.push_command(frame.as_bytes()).is_ok());
                stream.sent += usize::from(issued);
                issued
            });
            sent += stream.sent;
            stream.head_since = Instant::now();
        }
        state.sent = sent;
    }
}

impl WorkItem<1> for Scheduler {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        crate::kcov::work(|| Self::check_overdue(&this));
    }
}

/// What the watchdog finds at the heads of the streams.
enum Watch {
    /// No stream runs anything.
    Idle,
    /// Nothing is overdue; the first head will be in this long.
    Due(Delta),
    /// Stream `stream`'s head is overdue, or `abandoned`: a launch of a
    /// destroyed queue.
    Reset { stream: usize, abandoned: bool },
}
