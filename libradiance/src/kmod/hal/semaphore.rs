// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores of the kmod backend, and the one place that waits on
//! them.
//!
//! The kernel knows a failed semaphore's errno only. The error the HAL
//! reports is found here, once, and then kept: the failure the host gave
//! [`BackendSemaphore::fail`]; else a device fault of a queue that was to
//! signal the semaphore, at or before its signal; else the failure of a
//! semaphore such a submission waited on (the kernel skipped the submission
//! and failed its signals with that errno), traced the same way; else the
//! errno alone (another process, an imported sync_file, a destroyed queue).
//!
//! Lock order: a queue's lock, then a semaphore's `record`. Tracing a
//! failure takes no queue lock (it reads the queues' control blocks).

use crate::{
    backend::BackendSemaphore,
    kmod::{self, Device, QueueStatus},
    lock::lock,
    semaphore::decide,
    Error,
    Result,
    Semaphore,
    SemaphoreList,
    WaitMode,
};
use radiance_uapi as uapi;
use rustix::io::Errno;
use std::{
    any::Any,
    collections::VecDeque,
    sync::{Arc, Mutex, Weak},
    time::Instant,
};

/// How many semaphores deep a failure is traced (a chain of submissions,
/// each waiting on the one before).
const TRACE_DEPTH: usize = 64;

pub(super) struct KmodSemaphore {
    sem: kmod::Semaphore,
    record: Mutex<Record>,
    /// This semaphore, for the submissions that wait on it.
    me: Weak<KmodSemaphore>,
}

#[derive(Default)]
struct Record {
    /// The failure as the HAL reports it, with the errno the kernel holds
    /// for it; it counts only while the two agree.
    known: Option<(Errno, Error)>,
    /// Queue submissions that are to signal this semaphore, oldest first.
    producers: VecDeque<Producer>,
}

/// A submission that is to signal a semaphore.
#[derive(Clone)]
pub(super) struct Producer {
    /// The control block of its queue.
    pub(super) queue: QueueStatus,
    /// The ring index of its signal packet for this semaphore.
    pub(super) signal: u64,
    /// The semaphores it waits on (shared by its signals).
    pub(super) waits: Arc<[Weak<KmodSemaphore>]>,
}

impl KmodSemaphore {
    pub(super) fn new(device: &Device, initial: u64) -> Result<Arc<Self>> {
        let sem = device.create_semaphore(initial)?;
        Ok(Arc::new_cyclic(|me| Self { sem, record: Mutex::default(), me: me.clone() }))
    }

    pub(super) fn kernel(&self) -> &kmod::Semaphore {
        &self.sem
    }

    pub(super) fn weak(&self) -> Weak<Self> {
        self.me.clone()
    }

    /// Records a submission that is to signal this semaphore.
    pub(super) fn add_producer(&self, producer: Producer) {
        let mut record = lock(&self.record);
        // A completed signal explains nothing unless the semaphore has
        // failed. The kernel applies a packet's semaphore update before
        // the packet counts as completed, so after reading the completion
        // first, an unfailed value means the signal went through. Pruned
        // from the oldest only: O(1) per submission, while what lingers
        // behind a pending one is bounded by the work in flight.
        while record.producers.front().is_some_and(|p| p.queue.completed() > p.signal)
            && self.sem.value() != uapi::SEM_FAILED_VALUE
        {
            record.producers.pop_front();
        }
        record.producers.push_back(producer);
    }

    /// The error of the semaphore if it has failed.
    fn failure(&self) -> Option<Error> {
        (self.sem.value() == uapi::SEM_FAILED_VALUE).then(|| match self.sem.error() {
            Ok(errno) => self.explain(errno.unwrap_or(Errno::PROTO), 0),
            Err(e) => e,
        })
    }

    /// The error the HAL reports for this semaphore's failure with `errno`.
    fn explain(&self, errno: Errno, depth: usize) -> Error {
        let producers = {
            let record = lock(&self.record);
            match &record.known {
                Some((known, error)) if *known == errno => return error.clone(),
                _ => Vec::from(record.producers.clone()),
            }
        };
        let error = self.trace(errno, &producers, depth);
        let mut record = lock(&self.record);
        // The first explanation sticks: every waiter sees the same error.
        match &record.known {
            Some((known, error)) if *known == errno => error.clone(),
            _ => {
                record.known = Some((errno, error.clone()));
                record.producers.clear();
                error
            }
        }
    }

    /// What failed this semaphore with `errno`, from the submissions that
    /// were to signal it: a fault of their queue first, then a failed
    /// semaphore they waited on. A timeline that one queue both waits on
    /// and signals names itself among those waits: that is no cause.
    fn trace(&self, errno: Errno, producers: &[Producer], depth: usize) -> Error {
        if let Some(fault) = producers.iter().find_map(|p| p.queue.fault().filter(|f| f.packet <= p.signal)) {
            return fault.error();
        }
        if depth < TRACE_DEPTH {
            let waits = producers.iter().flat_map(|p| p.waits.iter().filter_map(Weak::upgrade));
            for wait in waits.filter(|w| !std::ptr::eq(Arc::as_ptr(w), self)) {
                if let Ok(Some(e)) = wait.sem.error() {
                    return wait.explain(e, depth + 1);
                }
            }
        }
        match errno {
            Errno::CANCELED => {
                Error::Cancelled("the work that was to signal this semaphore was cancelled: its queue was destroyed".into())
            }
            errno => Error::os("the semaphore failed", errno),
        }
    }
}

/// The kmod backend's object behind a [`Semaphore`] of a kmod device.
pub(super) fn kmod_semaphore(s: &Semaphore) -> Result<&KmodSemaphore> {
    s.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a semaphore"))
}

impl BackendSemaphore for KmodSemaphore {
    fn query(&self) -> Result<u64> {
        match self.failure() {
            Some(e) => Err(e),
            None => Ok(self.sem.value()),
        }
    }

    fn signal(&self, value: u64) -> Result<()> {
        match self.sem.signal(value) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failure().unwrap_or(match e {
                Error::Os { source: Errno::INVAL, .. } => Error::OutOfRange(format!(
                    "semaphore payload {} cannot be signalled to {value}: it only goes up",
                    self.sem.value()
                )),
                e => e,
            })),
        }
    }

    fn fail(&self, error: Error) {
        let errno = error.status().errno();
        let mut record = lock(&self.record);
        // Held across SEM_FAIL so that no explanation runs in between. If
        // a queue fails the semaphore first, the kernel keeps its errno and
        // this record does not count unless the errnos agree.
        if record.known.is_none() && self.sem.value() != uapi::SEM_FAILED_VALUE {
            record.known = Some((errno, error));
        }
        // Only a bad handle can fail, and this one is ours.
        let _ = self.sem.fail(errno);
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The outcome of a wait if the value page decides it now.
fn resolve(mode: WaitMode, points: &[(&KmodSemaphore, u64)]) -> Option<Result<()>> {
    decide(
        mode,
        points.iter().map(|(s, value)| match s.failure() {
            Some(e) => Err(e),
            None => Ok(s.sem.value() >= *value),
        }),
    )
}

/// Blocks until all (or any) of `points` are reached, one fails, or
/// `deadline` passes: decided from the value page when it can be, else in
/// SEM_WAIT.
pub(super) fn wait(device: &Device, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
    let points = points.iter().map(|(s, v)| Ok((kmod_semaphore(s)?, *v))).collect::<Result<Vec<_>>>()?;
    if let Some(done) = resolve(mode, &points) {
        return done;
    }
    let raw: Vec<(&kmod::Semaphore, u64)> = points.iter().map(|(s, v)| (&s.sem, *v)).collect();
    match device.wait_semaphores(&raw, mode == WaitMode::Any, deadline) {
        Ok(_) => Ok(()),
        Err(Error::DeadlineExceeded) => Err(Error::DeadlineExceeded),
        // A failed semaphore ended it: report that one's error.
        Err(e) => Err(points.iter().find_map(|(s, _)| s.failure()).unwrap_or(e)),
    }
}
