// SPDX-License-Identifier: GPL-2.0

//! The channel between the scheduler and the server of a user device.
//! Frames the scheduler pushes wait in `pending`, with the scrubs of freed
//! VRAM ([`super::scrub`]), until the server reads them; each read frame is
//! outstanding on its stream until the server writes its response, which
//! is checked against what is outstanding and handed to the scheduler. A
//! reset drops what was not read and forgets what was outstanding; a
//! retired stream takes nothing (USER_RETIRE).

use crate::{
    fifo::Fifo,
    gluon::{
        Dialect,
        Frame,
        Response,
        RESPONSE_SIZE, //
    },
    uapi::gluon_err,
};
use kernel::{
    prelude::*,
    time::{
        Instant,
        Monotonic, //
    },
};

use super::{
    scrub::{
        beside_scrub,
        Scrub,
        BESIDE_SCRUB, //
    },
    stream_of,
};

/// What waits for the server to read it, in order.
pub(super) enum Pending {
    /// A frame the scheduler pushed.
    Frame(Frame),
    /// VRAM to zero (see [`Scrub`]).
    Scrub(Scrub),
}

/// Between the scheduler and the server.
pub(super) struct Channel {
    pub(super) pending: Fifo<Pending>,
    /// Per stream: the scheduler's frames read and not answered.
    pub(super) outstanding: KVec<u32>,
    /// Per stream: when the server read its oldest outstanding frame (the
    /// count left 0), so that the watchdog ages a frame that waited
    /// behind scrubs from then (see [`Gluon::ages_from`]).
    pub(super) taken: KVec<Instant<Monotonic>>,
    /// Per stream: scrub commands read and not answered.
    pub(super) scrubbing: KVec<u32>,
    /// Per stream: the units of work the server reported (USER_PROGRESS),
    /// wrapping.
    pub(super) done: KVec<u64>,
    /// Answers for the scheduler.
    pub(super) responses: Fifo<[u8; RESPONSE_SIZE]>,
    /// Answers were given to the scheduler and no pass has ended since
    /// (see [`Gluon::pass_done`]): the next scrub command waits.
    pub(super) unseen: bool,
    /// When the server last read, answered or reported progress on
    /// anything (see [`Gluon::ages_from`]).
    pub(super) progress: Instant<Monotonic>,
    /// The kernel reset the device and the server has not acknowledged it.
    pub(super) reset_pending: bool,
    /// The server is gone.
    pub(super) gone: bool,
    /// Server threads in write() past taking answers.
    pub(super) answering: u32,
    /// The server answered everything it read and has not read since:
    /// one that takes doorbells is on its way back to read().
    pub(super) returning: bool,
    /// A doorbell the server took and has not run the pass for.
    pub(super) doorbell: bool,
    /// Bit `i` set: the server retired stream `i` (USER_RETIRE).
    pub(super) retired: u32,
}

/// What the server may read next.
pub(super) enum Next {
    /// The frame at the front of `pending`, on this stream.
    Frame(u8),
    /// The frame right behind the scrub at the front, on this stream,
    /// before the scrub's next command.
    BesideScrub(u8),
    /// The next command of the scrub at the front.
    ScrubCommand,
    /// Nothing: the scrub at the front is done, and leaves.
    ScrubDone,
}

impl Channel {
    /// A reset: drops the frames not read from `pending` (calling `each`
    /// with them), and starts every scrub again, since its commands handed
    /// out (counted in `scrubbing`) may never have run. Over the fields, so
    /// that `each` may use the others.
    pub(super) fn drop_unread(
        pending: &mut Fifo<Pending>,
        scrubbing: &mut [u32],
        mut each: impl FnMut(&Frame),
    ) {
        pending.retain_pending(|p| match p {
            Pending::Frame(frame) => {
                each(frame);
                false
            }
            Pending::Scrub(scrub) => {
                scrub.restart();
                true
            }
        });
        scrubbing.iter_mut().for_each(|n| *n = 0);
    }

    /// Completes with `gluon_err::RESET` every command read and not
    /// answered on the streams `on` names, and every frame for them not
    /// read, as a device that reset those streams would.
    pub(super) fn fail_streams(
        &mut self,
        dialect: &dyn Dialect,
        on: impl Fn(usize) -> bool,
    ) -> Result {
        let failed = |stream: u8| {
            dialect.encode_response(&Response {
                stream,
                status: gluon_err::RESET,
                ..Default::default()
            })
        };
        let Self {
            pending,
            outstanding,
            responses,
            ..
        } = self;
        for (s, n) in outstanding.iter_mut().enumerate().filter(|(s, _)| on(*s)) {
            for _ in 0..*n {
                responses.push(failed(s as u8))?;
            }
            *n = 0;
        }
        let mut unread = Ok(());
        pending.retain_pending(|p| {
            let Pending::Frame(frame) = p else {
                return true;
            };
            let stream = stream_of(dialect, frame);
            if !on(stream.into()) {
                return true;
            }
            unread = unread.and(responses.push(failed(stream)));
            false
        });
        unread
    }

    pub(super) fn busy(counts: &[u32]) -> bool {
        counts.iter().any(|&n| n > 0)
    }

    /// The stream scrubs run on: the first in service (USER_RETIRE never
    /// retires them all).
    pub(super) fn scrub_stream(&self) -> u8 {
        (!self.retired).trailing_zeros() as u8
    }

    /// Commands on `stream`, of the scheduler's and of scrubs.
    pub(super) fn on_stream(&self, stream: u8) -> u32 {
        let s = usize::from(stream);
        self.outstanding.get(s).copied().unwrap_or(0) + self.scrubbing.get(s).copied().unwrap_or(0)
    }

    /// What the server may read now, if anything (see the file's comment
    /// for scrubs); `depth`: commands a stream takes at once.
    pub(super) fn next(&self, dialect: &dyn Dialect, depth: u32) -> Option<Next> {
        let scrub = match self.pending.front()? {
            Pending::Frame(frame) => {
                return (!Self::busy(&self.scrubbing))
                    .then(|| Next::Frame(stream_of(dialect, frame)));
            }
            Pending::Scrub(scrub) => scrub,
        };
        // What was read before it is done (a frame that went beside it
        // since does not hold it back: `started` is set then).
        if !scrub.started && (Self::busy(&self.outstanding) || Self::busy(&self.scrubbing)) {
            return None;
        }
        if let Some(Pending::Frame(frame)) = self
            .pending
            .second()
            .filter(|_| scrub.beside < BESIDE_SCRUB)
        {
            let (at, left) = (scrub.addr + scrub.done, scrub.len - scrub.done);
            if let Some(stream) = beside_scrub(dialect, frame, at, left) {
                if self.on_stream(stream) < depth {
                    return Some(Next::BesideScrub(stream));
                }
            }
        }
        // Its stream free of the scheduler's commands, so that its answers
        // come in the order `write_responses` takes them.
        if scrub.issued < scrub.len {
            (!Self::busy(&self.scrubbing)
                && self.on_stream(self.scrub_stream()) == 0
                && !self.unseen)
                .then_some(Next::ScrubCommand)
        } else {
            (!Self::busy(&self.scrubbing)).then_some(Next::ScrubDone)
        }
    }
}
