// SPDX-License-Identifier: GPL-2.0

//! Doorbells left to a server that takes them (USER_DECLARE's
//! `TAKES_DOORBELLS`): one rung while the server answers in write(), or is
//! on its way back to read(), is run by that write() or read() instead of
//! the ringer, which returns at once (Documentation/design/user-devices.md).

use super::{
    channel::Channel,
    User, //
};

impl User {
    /// The end of a write(): runs the passes of doorbells the device took
    /// while it answered, which come before the server is back in read().
    pub(super) fn run_doorbells(&self) {
        loop {
            let mut ch = self.channel.lock();
            if !core::mem::take(&mut ch.doorbell) {
                ch.answering -= 1;
                ch.returning = !Channel::busy(&ch.outstanding) && !Channel::busy(&ch.scrubbing);
                return;
            }
            drop(ch);
            self.raise();
        }
    }

    /// Taken while the server is in write() past its answers, or has
    /// answered all it read and not read since: it declared it comes back
    /// to read() then. Not while a reset waits, nor while the server
    /// sleeps in read(): the ringer's CPU runs the pass faster than the
    /// server's, just woken, would (under QEMU, 5 to 10 µs against 25 to 28
    /// after a 200 µs idle). Outside write(), `ready` is notified at once,
    /// taken or not: a server asleep in read() or poll() wakes while the
    /// ringer builds its frame rather than after it (a CPU idle for long
    /// takes tens of µs to run again), at the cost of going back to sleep
    /// if the frame is not there yet or the pass makes none; one on its
    /// way back to read() is not on the queue yet.
    pub(super) fn doorbell_taken(&self) -> bool {
        if !self.takes_doorbells {
            return false;
        }
        let (taken, in_write) = {
            let mut ch = self.channel.lock();
            if ch.gone || ch.reset_pending {
                return false;
            }
            let in_write = ch.answering > 0;
            let taken = in_write || ch.returning;
            ch.doorbell |= taken;
            (taken, in_write)
        };
        if !in_write {
            self.ready.notify_all();
        }
        taken
    }
}
