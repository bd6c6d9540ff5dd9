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
    lock::lock,
    node::{self, Device, QueueStatus},
    semaphore::decide,
    Error, Result, Semaphore, SemaphoreList, WaitMode,
};
use radiance_uapi as uapi;
use rustix::io::Errno;
use std::{
    any::Any,
    cell::Cell,
    collections::VecDeque,
    os::fd::{BorrowedFd, OwnedFd},
    sync::{Arc, Mutex, Weak},
    time::Instant,
};

/// How many semaphores deep a failure is traced (a chain of submissions,
/// each waiting on the one before).
const TRACE_DEPTH: usize = 64;

pub(super) struct KmodSemaphore {
    sem: node::Semaphore,
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
    /// The semaphores whose failures reach this one through the kernel (a
    /// device group's edges: their sync_files imported into this one, or
    /// the semaphore this one is an alias of, or an alias this one is
    /// signalled through): a failure that came through one of them is
    /// theirs.
    origins: Vec<Arc<dyn BackendSemaphore>>,
}

thread_local! {
    /// How many origins deep the failure being explained on this thread
    /// is: two devices' semaphores may name each other as origins.
    static ORIGIN_DEPTH: Cell<usize> = const { Cell::new(0) };
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
        Ok(Self::wrap(device.create_semaphore(initial)?))
    }

    /// A handle on `device` for `semaphore`, a kmod semaphore of another
    /// device: see [`node::Device::import_semaphore`].
    pub(super) fn alias(device: &Device, semaphore: &KmodSemaphore) -> Result<Arc<Self>> {
        Ok(Self::wrap(device.import_semaphore(&semaphore.sem)?))
    }

    fn wrap(sem: node::Semaphore) -> Arc<Self> {
        Arc::new_cyclic(|me| Self { sem, record: Mutex::default(), me: me.clone() })
    }

    pub(super) fn kernel(&self) -> &node::Semaphore {
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

    /// The value, or the error if the semaphore has failed. The value page
    /// is read once: a failure landing between two reads would make
    /// `SEM_FAILED_VALUE` pass for a value reached.
    fn state(&self) -> Result<u64> {
        match self.sem.value() {
            uapi::SEM_FAILED_VALUE => Err(match self.sem.error() {
                Ok(errno) => self.explain(errno.unwrap_or(Errno::PROTO), 0),
                Err(e) => e,
            }),
            value => Ok(value),
        }
    }

    /// The error of the semaphore if it has failed.
    fn failure(&self) -> Option<Error> {
        self.state().err()
    }

    /// The error the HAL reports for this semaphore's failure with `errno`.
    fn explain(&self, errno: Errno, depth: usize) -> Error {
        let (producers, origins) = {
            let record = lock(&self.record);
            match &record.known {
                Some((known, error)) if *known == errno => return error.clone(),
                _ => (Vec::from(record.producers.clone()), record.origins.clone()),
            }
        };
        let error =
            self.trace(&producers, depth).or_else(|| from_origins(errno, &origins)).unwrap_or_else(|| match errno {
                Errno::CANCELED => Error::Cancelled(
                    "the work that was to signal this semaphore was cancelled: its queue was destroyed".into(),
                ),
                errno => Error::os("the semaphore failed", errno),
            });
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

    /// What failed this semaphore, from the submissions that
    /// were to signal it: a fault of their queue first, then a failed
    /// semaphore they waited on. A timeline that one queue both waits on
    /// and signals names itself among those waits: that is no cause.
    fn trace(&self, producers: &[Producer], depth: usize) -> Option<Error> {
        if let Some(fault) = producers.iter().find_map(|p| p.queue.fault().filter(|f| f.packet <= p.signal)) {
            return Some(fault.error());
        }
        if depth < TRACE_DEPTH {
            let waits = producers.iter().flat_map(|p| p.waits.iter().filter_map(Weak::upgrade));
            for wait in waits.filter(|w| !std::ptr::eq(Arc::as_ptr(w), self)) {
                if let Ok(Some(e)) = wait.sem.error() {
                    return Some(wait.explain(e, depth + 1));
                }
            }
        }
        None
    }
}

/// The error of the origin (a semaphore of another device whose sync_file
/// was imported) that failed with `errno`, if one did: the failure crossed
/// from it, code and message.
fn from_origins(errno: Errno, origins: &[Arc<dyn BackendSemaphore>]) -> Option<Error> {
    let depth = ORIGIN_DEPTH.get();
    if depth >= TRACE_DEPTH {
        return None;
    }
    ORIGIN_DEPTH.set(depth + 1);
    let found = origins.iter().find_map(|o| o.query().err().filter(|e| e.status().errno() == errno));
    ORIGIN_DEPTH.set(depth);
    found
}

/// The kmod backend's object behind a [`Semaphore`] of a kmod device.
pub(super) fn kmod_semaphore(s: &Semaphore) -> Result<&KmodSemaphore> {
    s.backend().as_any().downcast_ref().ok_or(Error::WrongDevice("a semaphore"))
}

impl BackendSemaphore for KmodSemaphore {
    fn query(&self) -> Result<u64> {
        self.state()
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

    fn export_sync_file(&self, value: u64) -> Result<OwnedFd> {
        self.sem.export_sync_file(value)
    }

    fn import_sync_file(&self, sync_file: BorrowedFd<'_>, value: u64, origin: Arc<dyn BackendSemaphore>) -> Result<()> {
        self.follow(origin);
        self.sem.import_sync_file(sync_file, value)
    }

    fn follow(&self, origin: Arc<dyn BackendSemaphore>) {
        let mut record = lock(&self.record);
        if !record.origins.iter().any(|o| Arc::ptr_eq(o, &origin)) {
            record.origins.push(origin);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The outcome of a wait if the value page decides it now.
fn resolve(mode: WaitMode, points: &[(&KmodSemaphore, u64)]) -> Option<Result<()>> {
    decide(mode, points.iter().map(|(s, value)| s.state().map(|reached| reached >= *value)))
}

/// Blocks until all (or any) of `points` are reached, one fails, or
/// `deadline` passes: decided from the value page when it can be, else in
/// SEM_WAIT.
pub(super) fn wait(device: &Device, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
    let points = points.iter().map(|(s, v)| Ok((kmod_semaphore(s)?, *v))).collect::<Result<Vec<_>>>()?;
    if let Some(done) = resolve(mode, &points) {
        return done;
    }
    let raw: Vec<(&node::Semaphore, u64)> = points.iter().map(|(s, v)| (&s.sem, *v)).collect();
    match device.wait_semaphores(&raw, mode == WaitMode::Any, deadline) {
        Ok(_) => Ok(()),
        Err(Error::DeadlineExceeded) => Err(Error::DeadlineExceeded),
        // A failed semaphore ended it: report that one's error.
        Err(e) => Err(points.iter().find_map(|(s, _)| s.failure()).unwrap_or(e)),
    }
}
