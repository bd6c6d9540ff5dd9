// SPDX-License-Identifier: GPL-2.0

//! The scheduler's watchdog and the device reset: a delayed work item
//! watches the command at the head of each stream. A command is hung only
//! if it stops moving: on a device that reports progress, one whose
//! stream's count has not changed for the launch timeout; on one that
//! cannot, one past a deadline scaled by its size over the device's
//! declared rates, the timeout at least. A hung command, or a launch of a
//! destroyed queue, resets the device; its queue faults (ETIMEDOUT or
//! ECANCELED), and the other queues' commands that the reset dropped are
//! issued again, each stream in order (Documentation/design/scheduler.md).

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
    State,
    Stream, //
};
use crate::{
    gluon::Command,
    hw::Rates,
    queue::Queue,
    trace, //
};

/// What a command does, in the units a device reports progress in: bytes
/// for a copy or fill, threads for a launch.
#[derive(Clone, Copy, Default)]
pub(super) struct CommandSize {
    /// Its kind, as debugfs and the reset's message name it.
    pub(super) kind: &'static str,
    pub(super) units: u64,
    /// `units` are threads, not bytes.
    pub(super) threads: bool,
}

impl CommandSize {
    /// What `cmd` does; `threads` is its launch's, if it is one.
    pub(super) fn of(cmd: &Command, threads: u64) -> Self {
        let (kind, units, threads) = match *cmd {
            Command::Copy { len, .. } => ("copy", len.into(), false),
            Command::Set { len, .. } => ("fill", len.into(), false),
            Command::Kernel { .. } => ("launch", threads, true),
            Command::ReadCounter { .. } => ("read-counter", 0, false),
            Command::Fence => ("fence", 0, false),
            Command::Wait { .. } => ("wait", 0, false),
        };
        Self {
            kind,
            units,
            threads,
        }
    }

    /// Its unit, as debugfs names it.
    pub(super) fn unit(&self) -> &'static str {
        if self.threads {
            "threads"
        } else {
            "bytes"
        }
    }

    /// How long it may take at the device's declared `rates`: none
    /// declared for its unit, nothing.
    fn duration(&self, rates: &Rates) -> Delta {
        let rate = if self.threads {
            rates.threads_per_s
        } else {
            rates.bytes_per_s
        };
        match rate {
            0 => Delta::ZERO,
            r => Delta::from_millis(
                i64::try_from(self.units.saturating_mul(1000) / r).unwrap_or(i64::MAX),
            ),
        }
    }
}

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
            Watch::Reset {
                stream,
                abandoned,
                still,
            } => Self::reset(this, state, stream, abandoned, still),
        }
    }

    /// What the watchdog finds at the heads of the streams: it notes the
    /// progress each made since it last looked.
    fn watch(&self, state: &mut State) -> Watch {
        let floor = Delta::from_millis(self.timeout_ms.into());
        let rates = &self.hw.desc().rates;
        let mut next: Option<Delta> = None;
        for (i, stream) in state.streams.iter_mut().enumerate() {
            // Markers never stay at a head (see `settle`).
            let Some(head) = stream.fifo.front() else {
                continue;
            };
            let abandoned =
                matches!(head.cmd, Some(Command::Kernel { .. })) && head.queue.state().destroyed;
            let progress = self.hw.progress(i as u8);
            if let Some(p) = progress.filter(|&p| p != stream.seen) {
                stream.seen = p;
                stream.moved_at = Instant::now();
            }
            let still = self.still(stream, i);
            let allowed = match progress {
                Some(_) => floor,
                None => floor.max(head.size.duration(rates)),
            };
            if still >= allowed || abandoned {
                return Watch::Reset {
                    stream: i,
                    abandoned,
                    still,
                };
            }
            let left = allowed - still;
            next = Some(next.map_or(left, |n| if left < n { left } else { n }));
        }
        next.map_or(Watch::Idle, Watch::Due)
    }

    /// How long the head of `stream`, stream `i`, has not moved.
    fn still(&self, stream: &Stream, i: usize) -> Delta {
        let still = stream.moved_at.elapsed();
        // Held back behind the device's own work: the device is slow only
        // if it stands still, and a command it took late ages from then.
        match self.hw.ages_from(i as u8) {
            Some(since) => still.min(since.elapsed()),
            None => still,
        }
    }

    /// Resets the device for the command at the head of stream
    /// `guilty_stream` (`abandoned`, or hung: `still` without moving): its
    /// queue faults, and the other queues' commands are issued again.
    fn reset(
        this: &Arc<Self>,
        state: &mut State,
        guilty_stream: usize,
        abandoned: bool,
        still: Delta,
    ) {
        this.hw.reset();
        state.resets += 1;
        trace::reset(this.dev, Some(guilty_stream), state.resets);
        if let Some(stream) = state.streams.get(guilty_stream) {
            this.tell_reset(stream, guilty_stream, abandoned, still, state.resets);
        }
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
            stream.tick();
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
            stream.new_head(self.hw.progress(i as u8));
        }
        state.sent = sent;
    }
}

impl Scheduler {
    /// debugfs `streams`: one line of `key=value` pairs per stream, with
    /// the command at its head: what it is, what it did so far (`done`,
    /// `-` on a device that reports no progress) and how long since it
    /// last moved (`still_ms`), as the watchdog sees it.
    pub(crate) fn write_streams(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let retired = self.hw.retired_streams();
        let state = self.state.lock();
        for (i, stream) in state.streams.iter().enumerate() {
            let progress = self.hw.progress(i as u8);
            let state = if crate::hw::in_streams(retired, i) {
                "retired"
            } else if stream.fifo.front().is_some() {
                "running"
            } else {
                "idle"
            };
            // Busy up to now, as a tick would count it.
            let busy = match stream.sent {
                0 => stream.busy_ns,
                _ => stream
                    .busy_ns
                    .wrapping_add(stream.busy_since.elapsed().as_nanos() as u64),
            };
            write!(
                f,
                "stream={i} state={state} commands={} busy_ns={busy} answered={} bytes={} threads={}",
                stream.sent, stream.answered, stream.bytes, stream.threads
            )?;
            match stream.fifo.front() {
                Some(head) => {
                    let w = &head.size;
                    write!(
                        f,
                        " pid={} queue={} packet={} command={} units={} unit={}",
                        head.queue.tgid,
                        head.queue.id,
                        head.packet,
                        w.kind,
                        w.units,
                        w.unit()
                    )?;
                    match progress {
                        Some(p) => write!(f, " done={}", p.wrapping_sub(stream.head_start))?,
                        None => write!(f, " done=-")?,
                    }
                    // Moved since the watchdog last looked: just now.
                    let still = match progress {
                        Some(p) if p != stream.seen => 0,
                        _ => self.still(stream, i).as_millis(),
                    };
                    writeln!(f, " still_ms={still}")?;
                }
                None => writeln!(f)?,
            }
        }
        Ok(())
    }

    /// Says in the kernel log why the device was reset (reset number
    /// `resets`) for the head of `stream`, stream `i`: what the command
    /// was and how far it got.
    fn tell_reset(&self, stream: &Stream, i: usize, abandoned: bool, still: Delta, resets: u64) {
        let dev = self.hw.dma_device();
        let Some(head) = stream.fifo.front() else {
            return;
        };
        let w = &head.size;
        if abandoned {
            dev_warn!(
                dev,
                "stream {i}: a launch of a destroyed queue: device reset {resets}\n"
            );
        } else if let Some(p) = self.hw.progress(i as u8) {
            dev_warn!(
                dev,
                "stream {i}: no progress for {} ms ({} of {} {}, {} done): device reset {resets}\n",
                still.as_millis(),
                w.kind,
                w.units,
                w.unit(),
                p.wrapping_sub(stream.head_start)
            );
        } else {
            dev_warn!(
                dev,
                "stream {i}: no answer for {} ms ({} of {} {}; the device reports no progress): \
                 device reset {resets}\n",
                still.as_millis(),
                w.kind,
                w.units,
                w.unit()
            );
        }
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
    /// Stream `stream`'s head is hung (`still` without moving), or
    /// `abandoned`: a launch of a destroyed queue.
    Reset {
        stream: usize,
        abandoned: bool,
        still: Delta,
    },
}
