// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Epochs: how one HSA signal per queue tells which submissions are done,
//! and what each done submission signals, as IREE's AMDGPU HAL keeps it.
//!
//! Documentation/design/libradiance.md (`hsa/epoch.rs`) has the rest of its story.

use super::sys::HSA_SIGNAL_CONDITION_LT;
use std::collections::VecDeque;

/// An epoch signal's initial value: far from both ends of an i64, so that
/// no count of submissions and no comparison value overflows.
pub(super) const INITIAL: i64 = 1 << 62;

/// Epochs done, given the epoch signal's value.
pub(super) fn completed(signal_value: i64) -> u64 {
    INITIAL.saturating_sub(signal_value).max(0) as u64
}

/// The condition and value of a barrier-value packet (mask all ones) that
/// waits until `epoch` is done.
pub(super) fn wait_condition(epoch: u64) -> (u32, i64) {
    (HSA_SIGNAL_CONDITION_LT, INITIAL - epoch as i64 + 1)
}

/// What a queue's submissions signal when done, by epoch, oldest first.
pub(super) struct NotificationRing<T> {
    entries: VecDeque<(u64, T)>,
}

impl<T> Default for NotificationRing<T> {
    fn default() -> Self {
        Self { entries: VecDeque::new() }
    }
}

impl<T> NotificationRing<T> {
    /// Notes that `epoch` signals `what`. Epochs come in ascending order
    /// (a queue numbers its submissions as it submits them).
    pub(super) fn push(&mut self, epoch: u64, what: T) {
        debug_assert!(self.entries.back().is_none_or(|(e, _)| *e <= epoch), "epochs out of order");
        self.entries.push_back((epoch, what));
    }

    /// Takes what every epoch up to `done` signals, oldest first.
    pub(super) fn drain_through(&mut self, done: u64) -> Vec<T> {
        let n = self.entries.partition_point(|(e, _)| *e <= done);
        self.entries.drain(..n).map(|(_, t)| t).collect()
    }

    /// Takes everything: the queue failed or went away.
    pub(super) fn drain_all(&mut self) -> Vec<T> {
        self.entries.drain(..).map(|(_, t)| t).collect()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A device signal of a semaphore not yet reached: `epoch` of queue `queue`
/// raises the payload to `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Timepoint<Q> {
    pub(super) value: u64,
    pub(super) queue: Q,
    pub(super) epoch: u64,
}

/// A semaphore's pending device signals, ascending by value.
pub(super) struct Timeline<Q> {
    points: VecDeque<Timepoint<Q>>,
}

impl<Q> Default for Timeline<Q> {
    fn default() -> Self {
        Self { points: VecDeque::new() }
    }
}

impl<Q: Copy> Timeline<Q> {
    /// Notes a device signal. Signals mostly come in ascending order.
    pub(super) fn promise(&mut self, point: Timepoint<Q>) {
        let at = self.points.partition_point(|t| t.value <= point.value);
        self.points.insert(at, point);
    }

    /// The highest value promised, if any.
    pub(super) fn promised(&self) -> Option<u64> {
        self.points.back().map(|t| t.value)
    }

    /// The first device signal that reaches `value`: what a device wait
    /// for `value` waits on.
    pub(super) fn first_at_or_above(&self, value: u64) -> Option<Timepoint<Q>> {
        let at = self.points.partition_point(|t| t.value < value);
        self.points.get(at).copied()
    }

    /// Forgets the signals the payload `value` covers.
    pub(super) fn reached(&mut self, value: u64) {
        let n = self.points.partition_point(|t| t.value <= value);
        self.points.drain(..n);
    }

    /// Forgets every signal of `queue` (it failed or went away).
    pub(super) fn forget_queue(&mut self, queue: Q)
    where
        Q: PartialEq,
    {
        self.points.retain(|t| t.queue != queue);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signal_counts_epochs_down_and_waits_compare_below() {
        assert_eq!(completed(INITIAL), 0);
        assert_eq!(completed(INITIAL - 3), 3);
        // A signal someone raised past INITIAL means nothing is done.
        assert_eq!(completed(INITIAL + 5), 0);
        let (cond, value) = wait_condition(3);
        assert_eq!(cond, HSA_SIGNAL_CONDITION_LT);
        // The packet processor's test, for the signal after 2, 3, 4 epochs.
        let passes = |signal: i64| signal < value;
        assert!(!passes(INITIAL - 2));
        assert!(passes(INITIAL - 3));
        assert!(passes(INITIAL - 4));
        // Epoch 0 (nothing) is done at once.
        assert!(INITIAL < wait_condition(0).1);
    }

    #[test]
    fn the_ring_hands_out_what_each_done_epoch_signals_in_order() {
        let mut ring = NotificationRing::default();
        ring.push(1, "a");
        ring.push(2, "b");
        ring.push(2, "c");
        ring.push(5, "d");
        assert_eq!(ring.drain_through(0), Vec::<&str>::new());
        assert_eq!(ring.drain_through(2), ["a", "b", "c"]);
        // Done-ness only grows; draining again changes nothing.
        assert_eq!(ring.drain_through(2), Vec::<&str>::new());
        assert!(!ring.is_empty());
        assert_eq!(ring.drain_through(4), Vec::<&str>::new());
        ring.push(6, "e");
        assert_eq!(ring.drain_all(), ["d", "e"]);
        assert!(ring.is_empty());
    }

    #[test]
    fn a_device_wait_takes_the_first_epoch_that_reaches_the_value() {
        let mut t = Timeline::default();
        t.promise(Timepoint { value: 10, queue: 'a', epoch: 1 });
        t.promise(Timepoint { value: 30, queue: 'b', epoch: 7 });
        // Out of order: a racing program signalled 20 after 30.
        t.promise(Timepoint { value: 20, queue: 'a', epoch: 2 });
        assert_eq!(t.promised(), Some(30));
        assert_eq!(t.first_at_or_above(1).map(|p| p.epoch), Some(1));
        assert_eq!(t.first_at_or_above(11), Some(Timepoint { value: 20, queue: 'a', epoch: 2 }));
        assert_eq!(t.first_at_or_above(30).map(|p| p.queue), Some('b'));
        assert_eq!(t.first_at_or_above(31), None);
        t.reached(20);
        // Only 30 is left.
        assert_eq!(t.first_at_or_above(5).map(|p| p.value), Some(30));
        t.forget_queue('b');
        assert_eq!(t.promised(), None);
    }
}
