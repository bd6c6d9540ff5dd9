// SPDX-License-Identifier: GPL-2.0

//! Packet translation: a queue packet in, Gluon commands out.
//!
//! Every handle a packet names must be an object of the queue's file (found
//! through [`FileObjects`]), every range must lie inside its BO, and every
//! word a packet kind does not use must be zero; anything else is the
//! queue's fault, with the errno returned here. Commands are dialect-neutral
//! [`Command`]s that the scheduler encodes. This file holds what
//! translation gives the scheduler and the checks every packet shares;
//! `packets` checks each kind, `launch` builds launch blocks, and `makeup`
//! makes up what a device lacks. It runs under the scheduler's lock, so it
//! never pins or maps memory: staging memory was mapped with the device
//! ([`Staging`]). Documentation/design/gluon.md tells the make-ups.

mod launch;
mod makeup;
mod packets;

use kernel::{
    prelude::*,
    sync::Arc, //
};

pub(crate) use self::makeup::HostStep;
use self::packets::Wait;
use crate::{
    bo::Bo,
    gluon::Command,
    hw::HwDesc,
    lazy_vec::LazyVec,
    queue::FileObjects,
    semaphore::SlotHint,
    sg_table::Handover,
    staging::{
        PatternSource,
        Slot, //
        Staging,
    },
    uapi::{
        self,
        packet_flags,
        packet_kind, //
    },
};

/// The largest single COPY or MEM SET: lengths are 32-bit.
const MAX_COMMAND_BYTES: u64 = 1 << 30;

/// What a packet's completion does to a semaphore.
#[derive(Clone, Copy)]
pub(crate) enum SemUpdate {
    /// A SIGNAL_SEMAPHORE: raise `handle` to `value`.
    Signal { handle: u32, value: u64 },
    /// A skipped SIGNAL_SEMAPHORE: fail `handle` (unless it reached
    /// `value`) with the positive errno.
    Fail { handle: u32, value: u64, error: u32 },
}

/// What a packet holds until it completes, and what completing it does.
pub(crate) struct Completion {
    /// BOs the commands use, alive while the device may touch them.
    bos: LazyVec<Arc<Bo>>,
    /// Host ranges the device writes: `(BO, offset, length)`, handed back
    /// to the CPU when the packet completes.
    written: LazyVec<(Arc<Bo>, u64, u64)>,
    /// A staging page (launch block, a fill's edges or bounce), the
    /// device's until the packet completes.
    staging: Option<Arc<Slot>>,
    /// The source a fill without MEM SET copies from, until it completes.
    pattern: Option<PatternSource>,
    pub(crate) update: Option<SemUpdate>,
}

impl Completion {
    fn new() -> Self {
        Self {
            bos: LazyVec::new(),
            written: LazyVec::new(),
            staging: None,
            pattern: None,
            update: None,
        }
    }

    /// The device finished the packet: what it wrote goes back to the CPU.
    pub(crate) fn hand_back(&self) {
        for (bo, offset, len) in self.written.iter() {
            // Checked when the packet was translated, so this cannot fail.
            let _ = bo.sync(*offset, *len, Handover::ToCpu);
        }
    }
}

/// One step of a packet.
#[derive(Clone)]
pub(crate) enum Step {
    /// A command for the device.
    Device(Command),
    /// Work the scheduler does on the CPU once everything before it on the
    /// stream has completed, on the packet's staging page.
    Host(HostStep, Arc<Slot>),
}

/// One packet's steps, some perhaps not yet in the device; none for a
/// packet that only marks a point in its stream.
pub(crate) struct Staged {
    pub(crate) packet: u64,
    pub(crate) commands: LazyVec<Step>,
    /// The first command not yet pushed.
    pub(crate) next: usize,
    /// Goes with the packet's last command.
    pub(crate) completion: Completion,
    /// Threads its launch runs, if it has one: what a deadline scales
    /// with on a device that cannot report progress.
    pub(crate) threads: u64,
}

impl Staged {
    fn push(&mut self, command: Command) -> Result {
        Ok(self.commands.push(Step::Device(command), GFP_KERNEL)?)
    }

    fn host(&mut self, step: HostStep, bounce: &Arc<Slot>) -> Result {
        Ok(self
            .commands
            .push(Step::Host(step, bounce.clone()), GFP_KERNEL)?)
    }
}

/// What a packet turned into.
pub(crate) enum Translated {
    /// Commands to run.
    Run(Staged),
    /// A WAIT_SEMAPHORE that is not satisfied yet.
    Blocked,
    /// It needs a staging page or a pattern source, but launches, fills or
    /// copies in flight hold them all: it is translated again once one
    /// completes.
    Busy,
    /// A WAIT_SEMAPHORE with SKIP_ON_FAILURE on a semaphore that failed
    /// with the positive errno `error`: skip it and `count` more packets.
    Skip { count: u32, error: u32 },
}

/// What translation works with.
pub(crate) struct Translator<'a> {
    /// The objects of the queue's file.
    pub(crate) objects: &'a dyn FileObjects,
    /// The device: its dialect and what it implements.
    pub(crate) hw: &'a HwDesc,
    /// The device's staging pages.
    pub(crate) staging: &'a Arc<Staging>,
    /// A packet with no command completes as it is taken (nothing is
    /// before it on its stream): a SIGNAL_SEMAPHORE's semaphore is then
    /// looked up once, as it completes, where a handle that names nothing
    /// faults the queue at the same packet.
    pub(crate) at_once: bool,
    /// The queue's last WAIT_SEMAPHORE's semaphore, for the next.
    pub(crate) sem_hint: &'a SlotHint,
}

impl Translator<'_> {
    fn has(&self, cap: u64) -> bool {
        self.hw.caps & cap != 0
    }

    /// A staging page, or `None` when all are in use.
    fn slot(&self) -> Result<Option<Arc<Slot>>> {
        match Staging::take(self.staging) {
            Some(slot) => Ok(Some(Arc::new(slot, GFP_KERNEL)?)),
            None => Ok(None),
        }
    }
}

/// Translates packet `index`, or skips it with the positive errno in
/// `skipping` (a failed wait's SKIP_ON_FAILURE covers it). An error is the
/// queue's fault.
pub(crate) fn translate(
    t: &Translator<'_>,
    index: u64,
    packet: &uapi::Packet,
    skipping: Option<u32>,
) -> Result<Translated> {
    let h = packet.header;
    check_header(&h)?;
    let body = &packet.body;
    let mut out = Staged {
        packet: index,
        commands: LazyVec::new(),
        next: 0,
        completion: Completion::new(),
        threads: 0,
    };
    if let Some(error) = skipping {
        // Skipped packets run nothing but still complete in order; a
        // skipped signal fails its semaphore then.
        if h.kind == packet_kind::SIGNAL_SEMAPHORE {
            out.completion.update = Some(SemUpdate::Fail {
                handle: lo(body[0]),
                value: body[1],
                error,
            });
        }
        return Ok(Translated::Run(out));
    }
    // A BARRIER needs nothing more: the queue's packets run in order on one
    // stream.
    let done = match h.kind {
        packet_kind::NOP | packet_kind::FENCE => zero_from(body, 0).map(|()| true)?,
        packet_kind::FILL => packets::fill(t, body, &mut out)?,
        packet_kind::COPY => packets::copy(t, body, &mut out)?,
        packet_kind::LAUNCH => launch::launch(t, body, &mut out)?,
        packet_kind::LAUNCH_DESC => launch::launch_desc(t, body, &mut out)?,
        packet_kind::WAIT_SEMAPHORE => match packets::wait(t, &h, body)? {
            Wait::Reached => true,
            Wait::Pending => return Ok(Translated::Blocked),
            Wait::Skip { count, error } => return Ok(Translated::Skip { count, error }),
        },
        packet_kind::SIGNAL_SEMAPHORE => packets::signal(t, body, &mut out).map(|()| true)?,
        packet_kind::READ_COUNTER | packet_kind::TIMESTAMP => {
            packets::counter(t, h.kind, body, &mut out).map(|()| true)?
        }
        _ => return Err(EINVAL),
    };
    if !done {
        return Ok(Translated::Busy);
    }
    makeup::check_words(t, &out.commands)?;
    Ok(Translated::Run(out))
}

/// Whether [`translate`] would find the packet a WAIT_SEMAPHORE that is
/// not satisfied yet; without translating anything else.
pub(crate) fn blocks(t: &Translator<'_>, packet: &uapi::Packet, skipping: Option<u32>) -> bool {
    let h = packet.header;
    skipping.is_none()
        && h.kind == packet_kind::WAIT_SEMAPHORE
        && check_header(&h).is_ok()
        && matches!(packets::wait(t, &h, &packet.body), Ok(Wait::Pending))
}

fn lo(word: u64) -> u32 {
    word as u32
}

fn hi(word: u64) -> u32 {
    (word >> 32) as u32
}

/// EINVAL unless the body's words from `word` on are zero: words a packet
/// kind does not use.
fn zero_from(body: &[u64; 7], word: usize) -> Result {
    match body.get(word..) {
        Some(rest) if rest.iter().all(|&w| w == 0) => Ok(()),
        _ => Err(EINVAL),
    }
}

fn check_header(h: &uapi::PacketHeader) -> Result {
    if h.reserved != 0 || h.pad != 0 || h.flags & !packet_flags::ALL != 0 {
        return Err(EINVAL);
    }
    if h.flags & packet_flags::SKIP_ON_FAILURE != 0 && h.kind != packet_kind::WAIT_SEMAPHORE {
        return Err(EINVAL);
    }
    Ok(())
}

/// Calls `each(done, n)` over `[0, size)` in pieces of at most `max` bytes.
fn split(size: u64, max: u64, mut each: impl FnMut(u64, u32) -> Result) -> Result {
    let mut done = 0;
    while done < size {
        let n = (size - done).min(max);
        each(done, n as u32)?;
        done += n;
    }
    Ok(())
}

/// The raw VRAM address of byte `offset` of a VRAM BO.
fn vram_addr(bo: &Bo, offset: u64) -> Result<u32> {
    if bo.placement() != uapi::placement::VRAM {
        return Err(EINVAL);
    }
    u32::try_from(bo.device_address() + offset).map_err(|_| EINVAL)
}
