// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queues of the host backend: one worker thread per queue takes submissions
//! in order, blocks at an unsatisfied wait (as the kmod scheduler does not
//! run a queue past one), runs the commands one after another, then signals.
//! Callers may rely on none of that order: only semaphores order work. A
//! command that fails (a device fault) stops the queue.

use super::{
    buffer::{host_buffer, AddressSpace},
    kernels,
    semaphore::{host_semaphore, Hub},
};
use crate::{
    backend::{BackendQueue, Submission},
    command_buffer::Op,
    Command, Error, Result, WaitMode,
};
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc, Arc,
    },
    thread::JoinHandle,
};

pub(super) struct HostQueue {
    shared: Arc<Shared>,
    /// `None` only while dropping: closing the channel ends the worker.
    sender: Option<mpsc::Sender<Submission>>,
    worker: Option<JoinHandle<()>>,
}

/// What the worker shares with the queue handle.
struct Shared {
    hub: Arc<Hub>,
    space: Arc<AddressSpace>,
    /// Set when the queue is destroyed: the worker cancels what is left.
    closing: AtomicBool,
}

fn cancelled() -> Error {
    Error::Cancelled("the queue was destroyed before this work ran".into())
}

impl HostQueue {
    pub(super) fn new(hub: Arc<Hub>, space: Arc<AddressSpace>) -> Result<Self> {
        let shared = Arc::new(Shared { hub, space, closing: AtomicBool::new(false) });
        let (sender, receiver) = mpsc::channel();
        let worker_shared = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("radiance-host-queue".into())
            .spawn(move || worker_shared.serve(receiver))
            .map_err(|e| Error::ResourceExhausted(format!("starting a queue worker thread: {e}")))?;
        Ok(Self { shared, sender: Some(sender), worker: Some(worker) })
    }
}

impl BackendQueue for HostQueue {
    fn submit(&self, submission: Submission) -> Result<()> {
        let sender = self.sender.as_ref().ok_or_else(cancelled)?;
        sender.send(submission).map_err(|_| cancelled())
    }
}

impl Drop for HostQueue {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        // Wakes a worker blocked in a semaphore wait or a SPIN launch.
        self.shared.hub.wake();
        self.sender = None;
        if let Some(worker) = self.worker.take() {
            // The worker never panics; if it somehow did, there is nothing
            // left to clean up.
            let _ = worker.join();
        }
    }
}

impl Shared {
    /// The worker: runs submissions until the queue is dropped, then fails
    /// the signals of everything still queued.
    fn serve(&self, receiver: mpsc::Receiver<Submission>) {
        // The first command error stops the queue, as a faulted device queue
        // stops: everything after it fails with that error.
        let mut fault: Option<Error> = None;
        while let Ok(submission) = receiver.recv() {
            let outcome = self.hub.wait(WaitMode::All, &submission.waits, None, Some(&self.closing)).and_then(|()| {
                if let Some(e) = &fault {
                    return Err(e.clone());
                }
                self.execute(&submission.commands).inspect_err(|e| fault = Some(e.clone()))
            });
            for (semaphore, value) in &submission.signals {
                match (&outcome, host_semaphore(semaphore)) {
                    (Ok(()), Ok(s)) => s.advance(*value),
                    (Err(e), _) => semaphore.fail(e.clone()),
                    (Ok(()), Err(e)) => semaphore.fail(e),
                }
            }
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.closing.load(Ordering::Acquire) {
            Err(cancelled())
        } else {
            Ok(())
        }
    }

    fn execute(&self, commands: &[Command]) -> Result<()> {
        let cx = kernels::Context { space: &self.space, hub: &self.hub, closing: &self.closing };
        self.check_open()?;
        for command in commands {
            self.check_open()?;
            match &command.0 {
                Op::Fill { target, offset, length, pattern } => {
                    let len =
                        usize::try_from(*length).map_err(|_| Error::OutOfRange(format!("fill of {length} bytes")))?;
                    let pattern = pattern.le_bytes();
                    // The range starts at a multiple of the pattern size, so
                    // byte i of it is byte i % 4 of the repeated pattern.
                    host_buffer(target)?.with_bytes(*offset, len, |bytes| {
                        for (i, b) in bytes.iter_mut().enumerate() {
                            *b = pattern[i % 4];
                        }
                    })?;
                }
                Op::Copy { source, source_offset, target, target_offset, length } => {
                    let len =
                        usize::try_from(*length).map_err(|_| Error::OutOfRange(format!("copy of {length} bytes")))?;
                    // Through a bounce buffer: never two buffer locks at once.
                    let mut bounce = vec![0; len];
                    source.backend().read(*source_offset, &mut bounce)?;
                    target.backend().write(*target_offset, &bounce)?;
                }
                Op::Update { data, target, offset } => target.backend().write(*offset, data)?,
                Op::Dispatch(launch) => kernels::run(&cx, launch)?,
                // Commands already run one at a time, in order.
                Op::Barrier => {}
            }
        }
        Ok(())
    }
}
