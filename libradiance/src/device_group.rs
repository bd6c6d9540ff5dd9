// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Device groups: several devices as one topology, as IREE's
//! `iree_hal_device_group_t` has it. A builder takes devices that are
//! already open; finalizing it builds an immutable matrix that says, for
//! every ordered pair (i, j), how device j's queues wait on device i's
//! semaphores, how they copy device i's buffers, and what link lies
//! between them. The group retains its devices, and each device keeps the
//! topology alive as long as it lives.
//!
//! Unlike IREE's group, which only describes the topology, this one makes
//! its edges work (`bridge.rs`): a semaphore or buffer of one device stands
//! in the queue operations of another device of its group.

use crate::{bridge::Bridge, lock::lock, Device, Error, Result, StatusCode};
use std::sync::{Arc, Mutex, Weak};

/// How device j's queues wait on (and signal) device i's semaphores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SemaphoreRoute {
    /// The same device: no bridge.
    Local = 0,
    /// Through the kernel: each point of i's semaphore is exported as a
    /// sync_file and imported into a semaphore of j (and back for
    /// signals); no thread of this process is on the path.
    SyncFile = 1,
    /// Through this process: a relay thread waits on the semaphore on the
    /// host and signals (or fails) j's stand-in.
    HostHop = 2,
    /// In the kernel, with nothing in between: one driver's devices, whose
    /// j holds a handle for i's semaphore itself (kmod's SEM_IMPORT_HANDLE):
    /// j's queues wait on and signal it directly, and i's signal wakes j's
    /// scheduler. The fastest route, where both ends have it.
    KernelAlias = 3,
    /// In the CUDA driver, with nothing in between: two CUDA devices of this
    /// process, whose j uses i's semaphore itself. j's streams wait on the
    /// events of i's signals on the device (cuStreamWaitEvent takes another
    /// device's event) and record their own signals into it; work held for
    /// a value not yet promised is decided by the one scheduler of every
    /// CUDA device.
    CudaEvent = 4,
}

/// How device j's queues copy device i's buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum BufferRoute {
    /// The same device.
    Local = 0,
    /// i exports the buffer as a dma-buf and j imports it: j's copies reach
    /// i's memory by DMA (buffers i can export: host-visible ones on kmod).
    DmaBuf = 1,
    /// j's queues run on the host and read and write i's host-visible
    /// buffers through the host.
    Host = 2,
    /// None: j cannot reach i's buffers.
    None = 3,
    /// j's queues copy i's memory directly, peer to peer over NVLink or
    /// PCIe (CUDA peer access, where `cuDeviceCanAccessPeer` says so).
    Peer = 4,
}

/// What lies between two devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum LinkClass {
    /// The same device.
    Local = 0,
    /// One driver: edges stay in the kernel or the driver.
    Driver = 1,
    /// Different drivers: edges go through this process.
    Host = 2,
}

/// One ordered pair's edge of the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub semaphore: SemaphoreRoute,
    pub buffer: BufferRoute,
    pub link: LinkClass,
}

impl SemaphoreRoute {
    /// The name `radctl topology` and libradiance/README.md use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::SyncFile => "sync-file",
            Self::HostHop => "host-hop",
            Self::KernelAlias => "kernel-alias",
            Self::CudaEvent => "cuda-event",
        }
    }
}

impl BufferRoute {
    /// The name `radctl topology` and libradiance/README.md use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::DmaBuf => "dma-buf",
            Self::Host => "host",
            Self::None => "none",
            Self::Peer => "peer",
        }
    }
}

impl LinkClass {
    /// The name `radctl topology` and libradiance/README.md use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Driver => "driver",
            Self::Host => "host",
        }
    }
}

/// What a backend can share with other devices, from which the topology
/// is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Interop {
    /// Its semaphores' points export as sync_files, and sync_files import
    /// into them.
    pub sync_file: bool,
    /// Its driver's other devices' semaphores alias into it, and its own
    /// into them ([`crate::backend::Backend::alias_semaphore`]): only
    /// devices of one driver say so.
    pub semaphore_aliases: bool,
    /// A CUDA device: another CUDA device's streams wait on and record its
    /// semaphores' events ([`SemaphoreRoute::CudaEvent`]).
    pub cuda_events: bool,
    /// Its buffers export as dma-bufs (those the backend can export).
    pub dma_buf_export: bool,
    /// It imports dma-bufs as buffers its queues copy.
    pub dma_buf_import: bool,
    /// Its queues run on the host and reach any host-visible memory.
    pub host_queues: bool,
}

impl Edge {
    /// The edge from a device that can do `from` to another that can do
    /// `to`; `peer`: the second reaches the first's memory directly.
    fn between(from: Interop, to: Interop, peer: bool) -> Self {
        let semaphore = if from.semaphore_aliases && to.semaphore_aliases {
            SemaphoreRoute::KernelAlias
        } else if from.cuda_events && to.cuda_events {
            SemaphoreRoute::CudaEvent
        } else if from.sync_file && to.sync_file {
            SemaphoreRoute::SyncFile
        } else {
            SemaphoreRoute::HostHop
        };
        let buffer = if peer {
            BufferRoute::Peer
        } else if from.dma_buf_export && to.dma_buf_import {
            BufferRoute::DmaBuf
        } else if to.host_queues {
            BufferRoute::Host
        } else {
            BufferRoute::None
        };
        let link = match semaphore {
            SemaphoreRoute::SyncFile | SemaphoreRoute::KernelAlias | SemaphoreRoute::CudaEvent => LinkClass::Driver,
            _ => LinkClass::Host,
        };
        Self { semaphore, buffer, link }
    }

    const LOCAL: Self = Self { semaphore: SemaphoreRoute::Local, buffer: BufferRoute::Local, link: LinkClass::Local };
}

/// The immutable topology of a group: its devices' URIs and an edge for
/// every ordered pair.
#[derive(Debug, PartialEq, Eq)]
pub struct Topology {
    uris: Vec<String>,
    /// Row-major: the edge from i to j at `i * len + j`.
    edges: Vec<Edge>,
}

impl Topology {
    fn build(devices: &[Device], limit: RouteLimit) -> Self {
        let interop = |d: &Device| {
            let interop = d.backend().interop();
            Interop {
                sync_file: interop.sync_file && limit != RouteLimit::HostHops,
                semaphore_aliases: interop.semaphore_aliases && limit == RouteLimit::None,
                cuda_events: interop.cuda_events && limit != RouteLimit::HostHops,
                ..interop
            }
        };
        let interop: Vec<Interop> = devices.iter().map(interop).collect();
        let edges = (0..devices.len())
            .flat_map(|i| (0..devices.len()).map(move |j| (i, j)))
            .map(|(i, j)| {
                if i == j {
                    return Edge::LOCAL;
                }
                let peer = devices[j].backend().reach_memory_of(devices[i].backend());
                Edge::between(interop[i], interop[j], peer)
            })
            .collect();
        Self { uris: devices.iter().map(|d| d.info().uri.clone()).collect(), edges }
    }

    /// Devices in the group.
    pub fn len(&self) -> usize {
        self.uris.len()
    }

    /// Whether the group has no device (never: a group has at least one).
    pub fn is_empty(&self) -> bool {
        self.uris.is_empty()
    }

    /// The URI device `i` was opened by.
    pub fn uri(&self, i: usize) -> Option<&str> {
        self.uris.get(i).map(String::as_str)
    }

    /// How device `to` reaches device `from`'s semaphores and buffers.
    pub fn edge(&self, from: usize, to: usize) -> Option<Edge> {
        (from < self.len() && to < self.len()).then(|| self.edges[from * self.len() + to])
    }
}

/// A device's place in its group: what every device of a group holds.
pub(crate) struct Membership {
    pub topology: Arc<Topology>,
    pub index: usize,
    /// What makes the edges work; gone once the group is released.
    pub bridge: Weak<Bridge>,
}

/// Collects devices for a group (IREE's `iree_hal_device_group_builder_t`).
#[derive(Debug, Default)]
pub struct DeviceGroupBuilder {
    devices: Vec<Device>,
    limit: RouteLimit,
}

/// Semaphore routes a group is not to take, though its devices could: what
/// `bench-hal group` compares the best route with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum RouteLimit {
    #[default]
    None,
    /// No kernel aliases: sync_files at best.
    SyncFiles,
    /// Host hops only.
    HostHops,
}

/// Devices as one topology. Clones share the group; it retains its devices,
/// and when the last clone goes, cross-device work still waiting in a relay
/// is cancelled.
#[derive(Clone)]
pub struct DeviceGroup {
    shared: Arc<GroupShared>,
}

struct GroupShared {
    /// Only held (devices hold it weakly); first, so that relays stop,
    /// cancelling what waits in them, before the devices are released.
    _bridge: Arc<Bridge>,
    topology: Arc<Topology>,
    devices: Vec<Device>,
}

/// Held while a group's devices are checked and joined, so that two groups
/// finalized at once cannot share a device.
static FINALIZING: Mutex<()> = Mutex::new(());

impl DeviceGroupBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a device: not one added already, nor one in a group.
    pub fn add(&mut self, device: &Device) -> Result<&mut Self> {
        if self.devices.iter().any(|d| d.is(device)) {
            return Err(Error::InvalidArgument(format!("{} was added to the group twice", device.info().uri)));
        }
        if device.membership().is_some() {
            return Err(Device::already_grouped(device.info()));
        }
        self.devices.push(device.clone());
        Ok(self)
    }

    /// Routes semaphores through the host even between devices whose
    /// driver could carry them (sync_files, kernel aliases): what
    /// `bench-hal group` compares the kernel's routes with.
    pub fn route_semaphores_through_host(&mut self) -> &mut Self {
        self.limit = RouteLimit::HostHops;
        self
    }

    /// Routes semaphores through sync_files where the devices could alias
    /// each other's semaphores in the kernel (and through the host where
    /// they could not): what `bench-hal group` compares the kernel alias
    /// with, and how a program keeps kmod devices apart to the fence level.
    pub fn route_semaphores_through_sync_files(&mut self) -> &mut Self {
        self.limit = RouteLimit::SyncFiles;
        self
    }

    /// Devices added so far.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether no device was added.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// Builds the topology and puts every device in the group.
    pub fn finalize(self) -> Result<DeviceGroup> {
        if self.devices.is_empty() {
            return Err(Error::InvalidArgument("a device group needs at least one device".into()));
        }
        let topology = Arc::new(Topology::build(&self.devices, self.limit));
        let bridge = Arc::new(Bridge::new());
        let _finalizing = lock(&FINALIZING);
        if let Some(d) = self.devices.iter().find(|d| d.membership().is_some()) {
            return Err(Device::already_grouped(d.info()));
        }
        for (index, device) in self.devices.iter().enumerate() {
            let membership = Membership { topology: Arc::clone(&topology), index, bridge: Arc::downgrade(&bridge) };
            device.join(membership)?;
        }
        Ok(DeviceGroup { shared: Arc::new(GroupShared { _bridge: bridge, topology, devices: self.devices }) })
    }
}

impl DeviceGroup {
    /// The group of `devices`, in that order.
    pub fn new(devices: &[Device]) -> Result<Self> {
        let mut builder = DeviceGroupBuilder::new();
        for device in devices {
            builder.add(device)?;
        }
        builder.finalize()
    }

    /// The devices, in the order they were added (their topology index).
    pub fn devices(&self) -> &[Device] {
        &self.shared.devices
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        &self.shared.topology
    }
}

impl std::fmt::Debug for DeviceGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGroup").field("devices", &self.shared.topology.uris).finish()
    }
}

/// How `device` reaches `other`'s objects: the edge from `other` to
/// `device` and the bridge that makes it work. `what` names the object for
/// the error when the two are not in one live group.
pub(crate) fn edge(device: &Device, other: &Device, what: &'static str) -> Result<(Edge, Arc<Bridge>)> {
    let (Some(mine), Some(theirs)) = (device.membership(), other.membership()) else {
        return Err(Error::WrongDevice(what));
    };
    if !Arc::ptr_eq(&mine.topology, &theirs.topology) {
        return Err(Error::WrongDevice(what));
    }
    let bridge = mine.bridge.upgrade().ok_or_else(|| Error::Status {
        code: StatusCode::FailedPrecondition,
        message: format!(
            "{what} belongs to {}, and the device group that joined it to {} was released",
            other.info().uri,
            device.info().uri
        ),
    })?;
    let edge = mine.topology.edge(theirs.index, mine.index).ok_or(Error::WrongDevice(what))?;
    Ok((edge, bridge))
}

/// The device's topology and its index in it, if it is in a group.
impl Device {
    pub fn topology(&self) -> Option<(Arc<Topology>, usize)> {
        self.membership().map(|m| (Arc::clone(&m.topology), m.index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KMOD: Interop = Interop {
        sync_file: true,
        semaphore_aliases: true,
        cuda_events: false,
        dma_buf_export: true,
        dma_buf_import: true,
        host_queues: false,
    };
    /// A kmod device of a module older than ABI 1.10.
    const OLD_KMOD: Interop = Interop { semaphore_aliases: false, ..KMOD };
    const NOTHING: Interop = Interop {
        sync_file: false,
        semaphore_aliases: false,
        cuda_events: false,
        dma_buf_export: false,
        dma_buf_import: false,
        host_queues: false,
    };
    const HOST: Interop = Interop { host_queues: true, ..NOTHING };
    const CUDA: Interop = Interop { dma_buf_export: true, cuda_events: true, ..NOTHING };

    #[test]
    fn routes_follow_what_both_ends_can_do() {
        let e = Edge::between(KMOD, KMOD, false);
        assert_eq!(
            (e.semaphore, e.buffer, e.link),
            (SemaphoreRoute::KernelAlias, BufferRoute::DmaBuf, LinkClass::Driver)
        );
        let e = Edge::between(KMOD, OLD_KMOD, false);
        assert_eq!((e.semaphore, e.buffer, e.link), (SemaphoreRoute::SyncFile, BufferRoute::DmaBuf, LinkClass::Driver));
        assert_eq!(Edge::between(OLD_KMOD, KMOD, false).semaphore, SemaphoreRoute::SyncFile);
        let e = Edge::between(KMOD, HOST, false);
        assert_eq!((e.semaphore, e.buffer, e.link), (SemaphoreRoute::HostHop, BufferRoute::Host, LinkClass::Host));
        let e = Edge::between(HOST, KMOD, false);
        assert_eq!((e.semaphore, e.buffer), (SemaphoreRoute::HostHop, BufferRoute::None));
        assert_eq!(Edge::between(CUDA, KMOD, false).buffer, BufferRoute::DmaBuf);
        assert_eq!(Edge::between(KMOD, CUDA, false).buffer, BufferRoute::None);
    }

    #[test]
    fn two_cuda_devices_use_events_and_peer_copies_where_the_hardware_links_them() {
        let e = Edge::between(CUDA, CUDA, true);
        assert_eq!((e.semaphore, e.buffer, e.link), (SemaphoreRoute::CudaEvent, BufferRoute::Peer, LinkClass::Driver));
        // Without peer access the events still work; the copies have no route.
        let e = Edge::between(CUDA, CUDA, false);
        assert_eq!((e.semaphore, e.buffer, e.link), (SemaphoreRoute::CudaEvent, BufferRoute::None, LinkClass::Driver));
        // With any other device, the host is between them.
        for (from, to) in [(CUDA, HOST), (HOST, CUDA), (CUDA, KMOD), (KMOD, CUDA)] {
            let e = Edge::between(from, to, false);
            assert_eq!((e.semaphore, e.link), (SemaphoreRoute::HostHop, LinkClass::Host));
        }
    }

    #[test]
    fn a_group_builds_its_matrix_and_holds_its_devices() {
        let (a, b) = (Device::open("host").unwrap(), Device::open("host").unwrap());
        let group = DeviceGroup::new(&[a.clone(), b.clone()]).unwrap();
        let t = group.topology();
        assert_eq!(t.len(), 2);
        assert_eq!(t.edge(0, 0), Some(Edge::LOCAL));
        assert_eq!(t.edge(0, 1).map(|e| (e.semaphore, e.buffer)), Some((SemaphoreRoute::HostHop, BufferRoute::Host)));
        assert_eq!(t.edge(2, 0), None);
        assert_eq!(b.topology().map(|(_, i)| i), Some(1));
        assert!(group.devices()[0].is(&a));
    }

    #[test]
    fn a_device_joins_one_group_once() {
        let a = Device::open("host").unwrap();
        let mut builder = DeviceGroupBuilder::new();
        builder.add(&a).unwrap();
        assert_eq!(builder.add(&a.clone()).unwrap_err().status(), StatusCode::InvalidArgument);
        let _group = builder.finalize().unwrap();
        let again = DeviceGroup::new(&[a]).unwrap_err();
        assert_eq!(again.status(), StatusCode::FailedPrecondition, "{again}");
        assert_eq!(DeviceGroupBuilder::new().finalize().unwrap_err().status(), StatusCode::InvalidArgument);
    }

    #[test]
    fn devices_keep_the_topology_after_the_group_goes() {
        let (a, b) = (Device::open("host").unwrap(), Device::open("host").unwrap());
        let group = DeviceGroup::new(&[a.clone(), b.clone()]).unwrap();
        let weak = Arc::downgrade(&group.shared.topology);
        drop(group);
        assert!(weak.upgrade().is_some());
        let s = a.create_semaphore(0).unwrap();
        let e = b.create_queue().unwrap().barrier(&[(&s, 1)], &[]).unwrap_err();
        assert_eq!(e.status(), StatusCode::FailedPrecondition, "{e}");
        drop((a, b, s));
        assert!(weak.upgrade().is_none());
    }
}
