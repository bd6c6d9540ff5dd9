// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What makes a device group's edges work: semaphores and buffers of one
//! device standing in another device's queue operations, by the route the
//! topology gives (`device_group.rs`).
//!
//! Documentation/design/libradiance.md (`bridge.rs`) has the rest of its story.

use crate::{
    device_group::{edge, BufferRoute, SemaphoreRoute},
    lock::lock,
    Buffer, BufferParams, BufferUsage, Device, Error, MemoryType, Result, Semaphore, Timeout, WaitMode,
};
use std::{
    borrow::Cow,
    os::fd::AsFd,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    thread::JoinHandle,
};

/// The most points a relay waits on at once (kmod's SEM_WAIT takes 256),
/// its doorbell included.
const RELAY_POINTS: usize = 256;

/// A group's relays, one per device whose semaphores are waited on through
/// the host, started on first use.
pub(crate) struct Bridge {
    relays: Mutex<Vec<Relay>>,
}

/// Hands points of one device's semaphores on to semaphores of other
/// devices, from a thread of its own.
struct Relay {
    state: Arc<RelayState>,
    worker: Option<JoinHandle<()>>,
}

struct RelayState {
    device: Device,
    /// Signalled by the host to wake the worker: a new forward, or closing.
    doorbell: Semaphore,
    rung: AtomicU64,
    pending: Mutex<Vec<Forward>>,
    closing: AtomicBool,
}

/// When `from` reaches `value`, signal `to` to it; when `from` fails, fail
/// `to` with its error.
struct Forward {
    from: Semaphore,
    value: u64,
    to: Semaphore,
}

impl Bridge {
    pub(crate) fn new() -> Self {
        Self { relays: Mutex::new(Vec::new()) }
    }

    /// Hands `from`'s point `value` on to `to` through the host.
    fn forward(&self, from: &Semaphore, value: u64, to: &Semaphore) -> Result<()> {
        let state = {
            let mut relays = lock(&self.relays);
            match relays.iter().find(|r| r.state.device.is(from.device())) {
                Some(relay) => Arc::clone(&relay.state),
                None => {
                    let relay = Relay::start(from.device())?;
                    let state = Arc::clone(&relay.state);
                    relays.push(relay);
                    state
                }
            }
        };
        lock(&state.pending).push(Forward { from: from.clone(), value, to: to.clone() });
        state.ring()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for relay in lock(&self.relays).iter_mut() {
            relay.state.closing.store(true, Ordering::Release);
            // A failed ring leaves the worker asleep: join it only when woken.
            if relay.state.ring().is_ok() {
                if let Some(worker) = relay.worker.take() {
                    let _ = worker.join();
                }
            }
        }
    }
}

impl Relay {
    fn start(device: &Device) -> Result<Self> {
        let state = Arc::new(RelayState {
            device: device.clone(),
            doorbell: device.create_semaphore(0)?,
            rung: AtomicU64::new(0),
            pending: Mutex::new(Vec::new()),
            closing: AtomicBool::new(false),
        });
        let worker_state = Arc::clone(&state);
        let worker = std::thread::Builder::new()
            .name("radiance-relay".into())
            .spawn(move || worker_state.serve())
            .map_err(|e| Error::ResourceExhausted(format!("starting a device group relay thread: {e}")))?;
        Ok(Self { state, worker: Some(worker) })
    }
}

impl RelayState {
    /// Wakes the worker.
    fn ring(&self) -> Result<()> {
        let value = self.rung.fetch_add(1, Ordering::AcqRel) + 1;
        match self.doorbell.signal(value) {
            // Another ring got in first with a higher value: awake anyway.
            Err(Error::OutOfRange(_)) => Ok(()),
            done => done,
        }
    }

    /// The worker: waits for any pending point or the doorbell, hands on
    /// what is decided; when the group goes, cancels the rest.
    fn serve(&self) {
        loop {
            let (points, rung) = {
                let pending = lock(&self.pending);
                if self.closing.load(Ordering::Acquire) {
                    break;
                }
                let rung = self.doorbell.query().unwrap_or(0);
                let points: Vec<(Semaphore, u64)> =
                    pending.iter().take(RELAY_POINTS - 1).map(|f| (f.from.clone(), f.value)).collect();
                (points, rung)
            };
            let mut wait: Vec<(&Semaphore, u64)> = vec![(&self.doorbell, rung + 1)];
            wait.extend(points.iter().map(|(s, v)| (s, *v)));
            // A failure ends the wait like a signal: both are decided below.
            let _ = self.device.wait_semaphores(WaitMode::Any, &wait, Timeout::Infinite);
            let decided: Vec<Forward> = {
                let mut pending = lock(&self.pending);
                let (decided, waiting) = std::mem::take(&mut *pending)
                    .into_iter()
                    .partition(|f| f.from.query().map_or(true, |v| v >= f.value));
                *pending = waiting;
                decided
            };
            for f in decided {
                match f.from.query() {
                    Err(e) => f.to.fail(e),
                    // Already there (another point got it further), or
                    // failed meanwhile: either way nothing to do.
                    Ok(_) => drop(f.to.signal(f.value)),
                }
            }
        }
        for f in std::mem::take(&mut *lock(&self.pending)) {
            f.to.fail(Error::Cancelled(format!(
                "the device group was released while a semaphore of {} was still awaited by {}",
                f.from.device().info().uri,
                f.to.device().info().uri
            )));
        }
    }
}

/// A point of `semaphore` (another device's) as a point of `device`: its
/// mirror on `device`, fed by the topology's route.
pub(crate) fn wait_point(device: &Device, semaphore: &Semaphore, value: u64) -> Result<(Semaphore, u64)> {
    let (edge, bridge) = edge(device, semaphore.device(), "a semaphore")?;
    if edge.semaphore == SemaphoreRoute::Local {
        return Ok((semaphore.clone(), value));
    }
    let mirror = semaphore.link(device, Direction::Mirror, edge.semaphore)?;
    match edge.semaphore {
        SemaphoreRoute::Local | SemaphoreRoute::KernelAlias | SemaphoreRoute::CudaEvent => {}
        SemaphoreRoute::SyncFile => {
            let fence = semaphore.backend().export_sync_file(value)?;
            mirror.backend().import_sync_file(fence.as_fd(), value, semaphore.backend_arc())?;
        }
        SemaphoreRoute::HostHop => bridge.forward(semaphore, value, &mirror)?,
    }
    Ok((mirror, value))
}

/// A point of `semaphore` (another device's) that a queue of `device` is
/// to signal: the point of its proxy on `device` to signal instead, and
/// what hands it on once the submission is queued.
pub(crate) fn signal_point(device: &Device, semaphore: &Semaphore, value: u64) -> Result<(Semaphore, Outbound)> {
    let (edge, bridge) = edge(device, semaphore.device(), "a semaphore")?;
    let proxy = semaphore.link(device, Direction::Proxy, edge.semaphore)?;
    let outbound = Outbound { proxy: proxy.clone(), value, target: semaphore.clone(), route: edge.semaphore, bridge };
    Ok((proxy, outbound))
}

/// Hands a proxy's point on to the semaphore it stands for.
pub(crate) struct Outbound {
    proxy: Semaphore,
    value: u64,
    target: Semaphore,
    route: SemaphoreRoute,
    bridge: Arc<crate::bridge::Bridge>,
}

impl Outbound {
    /// Starts handing the point on. If that fails, the target fails with
    /// the error (its waiters must not hang), which is also returned.
    pub(crate) fn start(self) -> Result<()> {
        let started = match self.route {
            // The queue signals the target itself.
            SemaphoreRoute::Local | SemaphoreRoute::KernelAlias | SemaphoreRoute::CudaEvent => Ok(()),
            SemaphoreRoute::SyncFile => self.proxy.backend().export_sync_file(self.value).and_then(|fence| {
                self.target.backend().import_sync_file(fence.as_fd(), self.value, self.proxy.backend_arc())
            }),
            SemaphoreRoute::HostHop => self.bridge.forward(&self.proxy, self.value, &self.target),
        };
        started.inspect_err(|e| self.target.fail(e.clone()))
    }
}

/// Which stand-in of a semaphore on another device.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Follows the semaphore: what the other device's queues wait on.
    Mirror,
    /// Leads the semaphore: what the other device's queues signal.
    Proxy,
}

/// A stand-in of a semaphore on another device.
pub(crate) struct Link {
    pub direction: Direction,
    pub semaphore: Semaphore,
}

/// A new stand-in on `device` for `semaphore`, reached by `route`. An
/// alias (kernel or CUDA) is the semaphore itself; a kernel alias's mirror
/// explains its failure by asking `semaphore`, and `semaphore` by asking
/// the proxy that its signaller failed (a CUDA alias is the very object,
/// and keeps its error itself). Otherwise a mirror starts at the payload, a
/// proxy at 0 (it only leads).
pub(crate) fn new_link(
    device: &Device,
    direction: Direction,
    semaphore: &Semaphore,
    route: SemaphoreRoute,
) -> Result<Link> {
    if matches!(route, SemaphoreRoute::KernelAlias | SemaphoreRoute::CudaEvent) {
        let alias = Semaphore::new(device.clone(), device.backend().alias_semaphore(&semaphore.backend_arc())?);
        match direction {
            Direction::Mirror => alias.backend().follow(semaphore.backend_arc()),
            Direction::Proxy => semaphore.backend().follow(alias.backend_arc()),
        }
        return Ok(Link { direction, semaphore: alias });
    }
    let initial = match direction {
        Direction::Mirror => semaphore.query().unwrap_or(0),
        Direction::Proxy => 0,
    };
    Ok(Link { direction, semaphore: device.create_semaphore(initial)? })
}

/// `buffer` (another device's) as a buffer that `device`'s queues copy, by
/// the topology's route.
pub(crate) fn local_buffer<'a>(device: &Device, buffer: &'a Buffer) -> Result<Cow<'a, Buffer>> {
    if buffer.device().is(device) {
        return Ok(Cow::Borrowed(buffer));
    }
    let (edge, _) = edge(device, buffer.device(), "a buffer")?;
    let (from, to) = (&buffer.device().info().uri, &device.info().uri);
    match edge.buffer {
        BufferRoute::Local => Ok(Cow::Borrowed(buffer)),
        BufferRoute::DmaBuf => buffer.twin(device, || {
            let fd = buffer.export_dma_buf()?;
            let params = BufferParams { size: buffer.size(), memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
            device.import_dma_buf(fd.as_fd(), params)
        }),
        // j's queues address i's memory itself.
        BufferRoute::Peer => Ok(Cow::Owned(buffer.on(device))),
        BufferRoute::Host if buffer.params().memory == MemoryType::HostVisible => Ok(Cow::Owned(buffer.on(device))),
        BufferRoute::Host => Err(Error::Unsupported(format!(
            "{to} reaches buffers of {from} through the host, and this one is device memory: allocate it HostVisible"
        ))),
        BufferRoute::None => Err(Error::Unsupported(format!(
            "{to}'s queues cannot reach buffers of {from}: the group's topology has no buffer route from it to them"
        ))),
    }
}
