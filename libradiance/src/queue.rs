// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queues: every operation waits for its wait semaphores, runs, then signals
//! its signal semaphores, asynchronously. Only semaphores order operations:
//! two operations with no semaphore between them may run in either order or
//! at once, even on one queue. A queue may also stop at an operation whose
//! wait is not yet reached (a device queue does), so what an operation waits
//! for must be signalled by the host or by another queue, never by a later
//! operation of the same queue.
//!
//! Errors: what can be checked at the call (ranges, devices, usage) is
//! returned by the call and nothing is queued. What goes wrong later (a
//! failed wait semaphore, a device fault) fails the operation's signal
//! semaphores with that error, and nothing of the operation runs after it.
//! A command that fails (a device fault, not a failed wait) also stops its
//! queue, as a faulted device queue stops: every later operation on it fails
//! its signal semaphores with the same error. Other queues go on.

use crate::{
    backend::{BackendQueue, Commands, Submission},
    bridge::local_buffer,
    command_buffer::Op,
    semaphore::{owned_list, signal_list},
    timeline, BufferRef, Command, CommandBuffer, Device, Launch, Pattern, Result, Semaphore,
};
use std::sync::Arc;

/// A queue of one device. Clones share it. When the last clone is dropped,
/// the queue is destroyed: work it has not finished is cancelled (a running
/// launch is stopped) and its signal semaphores fail with
/// [`crate::Error::Cancelled`].
#[derive(Clone)]
pub struct Queue {
    device: Device,
    inner: Arc<dyn BackendQueue>,
}

/// Semaphores to wait for before an operation and to signal after it.
pub type Points<'a> = &'a [(&'a Semaphore, u64)];

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("device", &self.device).finish_non_exhaustive()
    }
}

impl Queue {
    pub(crate) fn new(device: Device, inner: Arc<dyn BackendQueue>) -> Self {
        Self { device, inner }
    }

    /// The device the queue belongs to.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Its identity while it lives, for the timeline.
    pub(crate) fn key(&self) -> usize {
        Arc::as_ptr(&self.inner) as *const () as usize
    }

    /// Fills `length` bytes at `target` with `pattern`.
    pub fn fill(
        &self,
        waits: Points<'_>,
        signals: Points<'_>,
        target: BufferRef<'_>,
        length: u64,
        pattern: Pattern,
    ) -> Result<()> {
        self.submit_command(waits, signals, Command::fill(target, length, pattern)?)
    }

    /// Copies `length` bytes from `source` to `target` (non-overlapping).
    /// Either may be a buffer of another device of the queue's group, where
    /// the group's topology has a buffer route from it to this device.
    pub fn copy(
        &self,
        waits: Points<'_>,
        signals: Points<'_>,
        source: BufferRef<'_>,
        target: BufferRef<'_>,
        length: u64,
    ) -> Result<()> {
        let (from, to) = (local_buffer(&self.device, source.buffer)?, local_buffer(&self.device, target.buffer)?);
        self.submit_command(waits, signals, Command::copy(from.at(source.offset), to.at(target.offset), length)?)
    }

    /// Writes `data`, captured at the call, to `target`.
    pub fn update(&self, waits: Points<'_>, signals: Points<'_>, data: &[u8], target: BufferRef<'_>) -> Result<()> {
        self.submit_command(waits, signals, Command::update(data, target)?)
    }

    /// Launches a kernel. [`Queue::dispatch_borrowed`] launches one that
    /// the caller keeps.
    pub fn dispatch(&self, waits: Points<'_>, signals: Points<'_>, launch: Launch) -> Result<()> {
        // Built in place: a launch has no buffer to check the device of, and
        // each move of one through a `Result` is a copy of the whole command.
        launch.check_dimensions()?;
        if waits.is_empty() && signals.is_empty() && !timeline::on() && self.inner.dispatch_alone(&launch) {
            return Ok(());
        }
        self.submit(waits, signals, Commands::One(Command(Op::Dispatch(launch))))
    }

    /// Launches a kernel from a launch the caller keeps, as
    /// [`Queue::dispatch`] does: for a caller that builds a launch once and
    /// changes it between dispatches (writing its `params` in place, say),
    /// as a runtime that lends its dispatch descriptions does (IREE's HAL
    /// lends a dispatch its constants and bindings). Where the backend
    /// queues the launch at once (cuda, with no waits and no signals),
    /// nothing of it is copied, moved or dropped; elsewhere the queued
    /// command holds a clone of it.
    pub fn dispatch_borrowed(&self, waits: Points<'_>, signals: Points<'_>, launch: &Launch) -> Result<()> {
        launch.check_dimensions()?;
        if waits.is_empty() && signals.is_empty() {
            // Only the queue and the launch are kept across the backend's
            // call: the lists are known empty.
            if !timeline::on() && self.inner.dispatch_alone(launch) {
                return Ok(());
            }
            return self.submit_clone(&[], &[], launch);
        }
        self.submit_clone(waits, signals, launch)
    }

    /// [`Queue::dispatch_borrowed`] of a launch that goes as a command. Out
    /// of line: inlined, the whole submission made every lone launch set up
    /// its stack.
    #[inline(never)]
    fn submit_clone(&self, waits: Points<'_>, signals: Points<'_>, launch: &Launch) -> Result<()> {
        self.submit(waits, signals, Commands::One(Command(Op::Dispatch(launch.clone()))))
    }

    /// Does nothing but wait and signal: joins and forks semaphore timelines.
    pub fn barrier(&self, waits: Points<'_>, signals: Points<'_>) -> Result<()> {
        self.submit(waits, signals, Commands::None)
    }

    /// Runs a recorded command buffer.
    pub fn execute(&self, waits: Points<'_>, signals: Points<'_>, commands: &CommandBuffer) -> Result<()> {
        self.device.check_same(commands.device(), "the command buffer")?;
        self.submit(waits, signals, Commands::Recorded(Arc::clone(commands.commands())))
    }

    /// Queues one command (how the C ABI queues the commands it builds).
    #[inline]
    pub(crate) fn submit_command(&self, waits: Points<'_>, signals: Points<'_>, command: Command) -> Result<()> {
        command.check_device(&self.device)?;
        self.submit(waits, signals, Commands::One(command))
    }

    /// Inlined into each operation for work on the queue's own device, the
    /// common case; the rest goes out of line.
    #[inline(always)]
    fn submit(&self, waits: Points<'_>, signals: Points<'_>, mut commands: Commands) -> Result<()> {
        if timeline::on() {
            timeline::submitted(self, waits, &commands, signals);
        }
        let local = |points: Points<'_>| points.iter().all(|(s, _)| s.device().is(&self.device));
        if local(waits) && local(signals) {
            return self.inner.submit_local(waits, &mut commands, signals);
        }
        self.submit_linked(waits, signals, commands)
    }

    /// [`Queue::submit`] of work with another device's semaphores.
    #[inline(never)]
    fn submit_linked(&self, waits: Points<'_>, signals: Points<'_>, commands: Commands) -> Result<()> {
        let waits = owned_list(&self.device, waits)?;
        let (signals, outbound) = signal_list(&self.device, signals)?;
        self.inner.submit(Submission { waits, commands, signals })?;
        // Points of other devices' semaphores, signalled through their
        // proxies: handed on only now, so that a call that failed leaves
        // them untouched.
        outbound.into_iter().try_for_each(|o| o.start())
    }
}
