// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores: a u64 payload that only goes up, signalled and waited
//! on by the host and by queue work, and a failure that sticks (IREE's
//! `iree_hal_semaphore_t`, Vulkan's timeline semaphores).

use crate::{
    backend::BackendSemaphore,
    bridge::{self, Direction, Link, Outbound},
    device_group::SemaphoreRoute,
    lock::lock,
    Device, Error, Result,
};
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// A timeline semaphore of one device. Clones share the semaphore.
#[derive(Clone)]
pub struct Semaphore(Arc<Shared>);

/// Behind one reference count, so that putting a semaphore in a queue
/// operation's lists costs one atomic increment, not two.
struct Shared {
    device: Device,
    inner: Arc<dyn BackendSemaphore>,
    /// Its stand-ins on the other devices of its group (`bridge.rs`), made
    /// on first use and kept as long as it lives.
    links: Mutex<Vec<Link>>,
}

/// Semaphores with the payload values to wait for or signal. Owned, because
/// queue work keeps its semaphores alive until it has run.
pub type SemaphoreList = Vec<(Semaphore, u64)>;

/// Whether a wait on many semaphores needs all of them or any one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    All,
    Any,
}

/// How long a wait may block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// Until the semaphores are reached or fail.
    Infinite,
    /// Relative to the start of the wait. `Duration::ZERO` only polls.
    After(Duration),
    /// An absolute deadline.
    At(Instant),
}

impl Timeout {
    /// The absolute deadline, `None` for ever.
    pub fn deadline(self) -> Option<Instant> {
        match self {
            Self::Infinite => None,
            // A duration too long for `Instant` is as good as for ever.
            Self::After(d) => Instant::now().checked_add(d),
            Self::At(t) => Some(t),
        }
    }
}

impl From<Duration> for Timeout {
    fn from(d: Duration) -> Self {
        Self::After(d)
    }
}

impl From<Instant> for Timeout {
    fn from(t: Instant) -> Self {
        Self::At(t)
    }
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("payload", &self.query()).finish()
    }
}

impl Semaphore {
    pub(crate) fn new(device: Device, inner: Arc<dyn BackendSemaphore>) -> Self {
        Self(Arc::new(Shared { device, inner, links: Mutex::new(Vec::new()) }))
    }

    /// The backend's object, shared: what a stand-in on another device
    /// asks for the error when a failure crossed to it.
    pub(crate) fn backend_arc(&self) -> Arc<dyn BackendSemaphore> {
        Arc::clone(&self.0.inner)
    }

    /// Its stand-in on `device` (another device of its group), which
    /// reaches it by `route`.
    pub(crate) fn link(&self, device: &Device, direction: Direction, route: SemaphoreRoute) -> Result<Semaphore> {
        let mut links = lock(&self.0.links);
        let found = links.iter().find(|l| l.direction == direction && l.semaphore.device().is(device));
        if let Some(link) = found {
            return Ok(link.semaphore.clone());
        }
        let link = bridge::new_link(device, direction, self, route)?;
        let semaphore = link.semaphore.clone();
        links.push(link);
        Ok(semaphore)
    }

    /// The device this semaphore belongs to.
    pub fn device(&self) -> &Device {
        &self.0.device
    }

    /// The backend's object, for backends.
    pub(crate) fn backend(&self) -> &dyn BackendSemaphore {
        &*self.0.inner
    }

    /// The current payload, or the error the semaphore failed with.
    pub fn query(&self) -> Result<u64> {
        self.backend().query()
    }

    /// Raises the payload to `value` (which must be above it) from the host.
    pub fn signal(&self, value: u64) -> Result<()> {
        self.backend().signal(value)?;
        if crate::timeline::on() {
            crate::timeline::host_signal(self, value);
        }
        Ok(())
    }

    /// Its identity while it lives, for the timeline.
    pub(crate) fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// Fails the semaphore with `error`: every current and future waiter, and
    /// every queue operation that waits on it, gets `error`. Sticky: only the
    /// first failure counts.
    pub fn fail(&self, error: Error) {
        self.backend().fail(error)
    }

    /// Blocks until the payload reaches `value`.
    pub fn wait(&self, value: u64, timeout: impl Into<Timeout>) -> Result<()> {
        self.device().wait_semaphores(WaitMode::All, &[(self, value)], timeout)
    }
}

/// The outcome of a wait on all or any of some points, if it is decided
/// now, from each point's state: reached or not, or its semaphore's
/// failure. Any failure decides it, in both modes: a failure is never
/// hidden behind another semaphore, so every point is looked at.
pub(crate) fn decide(mode: WaitMode, points: impl ExactSizeIterator<Item = Result<bool>>) -> Option<Result<()>> {
    let count = points.len();
    let mut reached = 0;
    for point in points {
        match point {
            Err(e) => return Some(Err(e)),
            Ok(r) => reached += usize::from(r),
        }
    }
    let done = match mode {
        WaitMode::All => reached == count,
        WaitMode::Any => reached > 0 || count == 0,
    };
    done.then_some(Ok(()))
}

/// Turns borrowed (semaphore, value) pairs to wait on into a list owned by
/// queue work, of `device`'s semaphores: another device's semaphore in its
/// group stands there as its mirror (`bridge.rs`).
#[inline]
pub(crate) fn owned_list(device: &Device, points: &[(&Semaphore, u64)]) -> Result<SemaphoreList> {
    // A plain loop: collecting into a Result costs a submission measurably
    // more, even for the usual empty list.
    if points.is_empty() {
        return Ok(Vec::new());
    }
    let mut list = Vec::with_capacity(points.len());
    for &(s, v) in points {
        if s.device().is(device) {
            list.push((s.clone(), v));
        } else {
            list.push(bridge::wait_point(device, s, v)?);
        }
    }
    Ok(list)
}

/// Turns borrowed (semaphore, value) pairs to signal into a list owned by
/// queue work, of `device`'s semaphores: another device's semaphore in its
/// group stands there as its proxy, whose points are handed on by the
/// returned [`Outbound`]s once the work is queued.
#[inline]
pub(crate) fn signal_list(device: &Device, points: &[(&Semaphore, u64)]) -> Result<(SemaphoreList, Vec<Outbound>)> {
    if points.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let (mut list, mut outbound) = (Vec::with_capacity(points.len()), Vec::new());
    for &(s, v) in points {
        if s.device().is(device) {
            list.push((s.clone(), v));
        } else {
            let (proxy, out) = bridge::signal_point(device, s, v)?;
            list.push((proxy, v));
            outbound.push(out);
        }
    }
    Ok((list, outbound))
}
