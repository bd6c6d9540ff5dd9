// SPDX-License-Identifier: GPL-2.0

//! A Radiance device (its hardware backend and per-device state) and the
//! `/dev/radianceN` node that opens it.

use core::fmt;
use kernel::{
    debugfs,
    miscdevice::MiscDeviceOptions,
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Release, //
        },
        Arc,
        Mutex, //
    },
};

use crate::{
    file::Context,
    hw::Gluon,
    misc_node::Node,
    scheduler::Scheduler,
    semaphore::Semaphores,
    uapi,
    vram::Vram, //
};

/// Most user-mode queues one device schedules at once.
pub(crate) const MAX_QUEUES: u32 = 64;
/// Bytes per user queue packet.
const PACKET_SIZE: u32 = 64;

/// Misc device names must be `'static`: one per possible device index.
const NODE_NAMES: [&CStr; uapi::MAX_DEVICES as usize] = [
    c"radiance0",
    c"radiance1",
    c"radiance2",
    c"radiance3",
    c"radiance4",
    c"radiance5",
    c"radiance6",
    c"radiance7",
];

/// What a device counts: for its limits, and for leak checks (debugfs).
#[derive(Clone, Copy, Default)]
struct Counters {
    open_files: u32,
    /// Live semaphores of all files.
    sems: i64,
    /// Bytes of host memory pinned for HOST BOs.
    pinned: u64,
}

/// What every device of the module is created with (module parameters).
#[derive(Clone, Copy)]
pub(crate) struct Settings {
    /// Exclusive mode (see [`Device`]).
    pub(crate) exclusive: bool,
    /// Most bytes of host memory pinned for HOST BOs at once, per device.
    pub(crate) pinned_limit: u64,
    /// A command that takes longer resets its device.
    pub(crate) timeout_ms: u32,
}

/// Which device indices are taken.
struct Slots {
    taken: [bool; uapi::MAX_DEVICES as usize],
    /// Devices alive, whether or not their node still is (files keep
    /// them): back to the number of nodes once every file closed.
    live: u32,
    /// Devices ever created, to name their `struct device`s uniquely.
    created: u32,
}

/// Every device of the module: indices, and what new ones get.
#[pin_data]
pub(crate) struct Registry {
    settings: Settings,
    /// Lock order: level 2 (Documentation/design/locking.md).
    #[pin]
    slots: Mutex<Slots>,
    /// `radiance/` in debugfs, one directory per device below it.
    debugfs: debugfs::Dir,
}

impl Registry {
    pub(crate) fn new(settings: Settings, debugfs: debugfs::Dir) -> Result<Arc<Self>> {
        let slots = Slots {
            taken: [false; uapi::MAX_DEVICES as usize],
            live: 0,
            created: 0,
        };
        Arc::pin_init(
            pin_init!(Self {
                settings,
                slots <- new_mutex!(slots, "Registry::slots"),
                debugfs,
            }),
            GFP_KERNEL,
        )
    }

    /// Creates a device at the lowest free index over the hardware that
    /// `hw` makes, given a serial number no other device had; ENOSPC when
    /// every index is taken.
    pub(crate) fn create(
        this: &Arc<Self>,
        hw: impl FnOnce(u32) -> Result<Arc<dyn Gluon>>,
    ) -> Result<Pin<KBox<DeviceNode>>> {
        let (index, serial) = {
            let mut slots = this.slots.lock();
            let (index, slot) = slots
                .taken
                .iter_mut()
                .enumerate()
                .find(|(_, t)| !**t)
                .ok_or(ENOSPC)?;
            *slot = true;
            let serial = slots.created;
            slots.created += 1;
            (index as u32, serial)
        };
        let claim = IndexClaim {
            registry: this.clone(),
            index,
        };
        DeviceNode::new(claim, hw(serial)?)
    }

    /// debugfs `radiance/devices`.
    pub(crate) fn write_stats(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slots = self.slots.lock();
        let nodes = slots.taken.iter().filter(|&&t| t).count();
        writeln!(f, "nodes {nodes}")?;
        writeln!(f, "devices_live {}", slots.live)
    }
}

/// A device index taken until dropped.
struct IndexClaim {
    registry: Arc<Registry>,
    index: u32,
}

impl Drop for IndexClaim {
    fn drop(&mut self) {
        if let Some(t) = self
            .registry
            .slots
            .lock()
            .taken
            .get_mut(self.index as usize)
        {
            *t = false;
        }
    }
}

/// Counts a device as alive in its registry until dropped.
struct Alive(Arc<Registry>);

impl Alive {
    fn new(registry: &Arc<Registry>) -> Self {
        registry.slots.lock().live += 1;
        Self(registry.clone())
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.slots.lock().live -= 1;
    }
}

/// One Radiance device. Open files hold a reference, so it outlives its node.
#[pin_data]
pub(crate) struct Device {
    index: u32,
    hw: Arc<dyn Gluon>,
    /// 1 once the hardware is gone for good (a user device's server went):
    /// every ioctl answers ENODEV.
    lost: Atomic<i32>,
    scheduler: Arc<Scheduler>,
    #[pin]
    vram: Vram,
    /// Exclusive mode: at most one open file (the hardware cannot keep one
    /// process's kernels out of another's VRAM).
    exclusive: bool,
    /// Most bytes of host memory pinned for HOST BOs at once.
    pinned_limit: u64,
    /// Lock order: a leaf (Documentation/design/locking.md).
    #[pin]
    counters: Mutex<Counters>,
    /// Every open file's semaphores, for debugfs.
    /// Lock order: level 3 (Documentation/design/locking.md).
    #[pin]
    sem_tables: Mutex<KVec<Arc<Semaphores>>>,
    _alive: Alive,
}

/// Host memory pinned for a HOST BO, counted against its device's limit
/// until dropped.
pub(crate) struct PinCharge {
    device: Arc<Device>,
    bytes: u64,
}

impl Drop for PinCharge {
    fn drop(&mut self) {
        self.device.counters.lock().pinned -= self.bytes;
    }
}

impl Device {
    pub(crate) fn hw(&self) -> &dyn Gluon {
        &*self.hw
    }

    /// N of `/dev/radianceN`.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    pub(crate) fn vram(&self) -> &Vram {
        &self.vram
    }

    pub(crate) fn scheduler(&self) -> &Arc<Scheduler> {
        &self.scheduler
    }

    /// ENODEV once the hardware is gone.
    pub(crate) fn check_present(&self) -> Result {
        if self.lost.load(Acquire) != 0 {
            return Err(ENODEV);
        }
        Ok(())
    }

    /// The hardware is gone for good: every queue faults and every
    /// semaphore fails with ENODEV (waking whoever waits), and every ioctl
    /// answers ENODEV from now on. Files stay open until their owners
    /// close them, freeing what they hold as usual.
    pub(crate) fn lose(&self) {
        self.lost.store(1, Release);
        let enodev = ENODEV.to_errno().unsigned_abs();
        self.scheduler.device_lost(enodev);
        for sems in self.sem_tables.lock().iter() {
            sems.fail_all(enodev);
        }
    }

    /// Counts a new open file; EBUSY if exclusive and already open.
    pub(crate) fn open_file(&self) -> Result {
        let mut counters = self.counters.lock();
        if self.exclusive && counters.open_files > 0 {
            return Err(EBUSY);
        }
        counters.open_files += 1;
        Ok(())
    }

    /// Undoes [`Device::open_file`] when the file's context goes.
    pub(crate) fn close_file(&self) {
        self.counters.lock().open_files -= 1;
    }

    /// Lists a new file's semaphores in debugfs.
    pub(crate) fn track_semaphores(&self, sems: Arc<Semaphores>) -> Result {
        self.sem_tables.lock().push(sems, GFP_KERNEL)?;
        Ok(())
    }

    /// Undoes [`Device::track_semaphores`] when the file closes.
    pub(crate) fn untrack_semaphores(&self, sems: &Arc<Semaphores>) {
        self.sem_tables.lock().retain(|s| !Arc::ptr_eq(s, sems));
    }

    /// debugfs `semaphores`: every open file's semaphores.
    fn write_semaphores(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.sem_tables
            .lock()
            .iter()
            .try_for_each(|s| s.write_list(f))
    }

    /// Counts semaphores created (`delta` > 0) or gone.
    pub(crate) fn count_sems(&self, delta: i64) {
        self.counters.lock().sems += delta;
    }

    /// Counts `bytes` more of pinned host memory until the charge is
    /// dropped; ENOMEM past the limit.
    pub(crate) fn pin_host(self: &Arc<Self>, bytes: u64) -> Result<PinCharge> {
        let mut counters = self.counters.lock();
        counters.pinned = counters
            .pinned
            .checked_add(bytes)
            .filter(|&t| t <= self.pinned_limit)
            .ok_or(ENOMEM)?;
        Ok(PinCharge {
            device: self.clone(),
            bytes,
        })
    }

    /// Fills GET_INFO's output fields.
    pub(crate) fn describe(&self, info: &mut uapi::GetInfo) {
        let hw = self.hw.desc();
        info.abi_major = uapi::ABI_MAJOR;
        info.abi_minor = uapi::ABI_MINOR;
        info.device_index = self.index;
        info.backend = hw.backend;
        info.pad1 = 0;
        info.name = hw.name;
        info.cores = hw.cores;
        info.warps_per_core = hw.warps_per_core;
        info.threads_per_warp = hw.threads_per_warp;
        info.max_queues = MAX_QUEUES;
        info.vram_size = hw.vram_size;
        info.packet_size = PACKET_SIZE;
        info.doorbell_page_size = PAGE_SIZE as u32;
        info.features = 0;
        info.builtins = hw.builtins;
        info.pad2 = 0;
        info.dialect = hw.dialect.id();
        info.streams = hw.streams.into();
        info.caps = hw.caps;
        info.retired_streams = self.hw.retired_streams();
        info.pad3 = 0;
    }

    /// debugfs `mem`: one `key value` pair a line, for `radctl mem`.
    /// (`queues` comes from the scheduler.)
    fn write_mem_stats(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.vram.stats();
        let counters = *self.counters.lock();
        writeln!(f, "vram_total {}", s.total)?;
        writeln!(f, "vram_used {}", s.used)?;
        writeln!(f, "vram_free {}", s.total - s.used)?;
        writeln!(f, "vram_largest_free {}", s.largest_free)?;
        writeln!(f, "vram_free_blocks {}", s.free_blocks)?;
        writeln!(f, "vram_bos {}", s.allocations)?;
        writeln!(f, "host_pinned {}", counters.pinned)?;
        writeln!(f, "host_pinned_limit {}", self.pinned_limit)?;
        writeln!(f, "semaphores {}", counters.sems)?;
        let (queues, in_flight, resets) = self.scheduler.counts();
        writeln!(f, "queues {queues}")?;
        writeln!(f, "commands_in_flight {in_flight}")?;
        writeln!(f, "device_resets {resets}")?;
        writeln!(f, "commands_issued {}", self.scheduler.issued())?;
        let (passes, wakeups) = self.scheduler.activity();
        writeln!(f, "scheduler_passes {passes}")?;
        writeln!(f, "scheduler_wakeups {wakeups}")?;
        writeln!(f, "open_files {}", counters.open_files)
    }
}

/// `/dev/radianceN`: a misc device whose files are [`Context`]s of one
/// [`Device`], and the device's debugfs directory.
#[pin_data(PinnedDrop)]
pub(crate) struct DeviceNode {
    // Fields drop in declaration order: the node disappears (no new opens)
    // before the debugfs files and the node's reference to the device go.
    #[pin]
    node: Node<Context>,
    #[pin]
    mem_stats: debugfs::File<Arc<Device>>,
    #[pin]
    queues: debugfs::File<Arc<Device>>,
    #[pin]
    streams: debugfs::File<Arc<Device>>,
    #[pin]
    semaphores: debugfs::File<Arc<Device>>,
    _debugfs: debugfs::Dir,
    /// Last: the index is free once the node is gone.
    _index: IndexClaim,
}

impl DeviceNode {
    /// Creates the device of index `claim` over `hw`, registers
    /// `/dev/radiance<index>` and its debugfs directory.
    fn new(claim: IndexClaim, hw: Arc<dyn Gluon>) -> Result<Pin<KBox<Self>>> {
        let settings = claim.registry.settings;
        let name = *NODE_NAMES.get(claim.index as usize).ok_or(EINVAL)?;
        let vram = Vram::new(hw.desc().vram_size)?;
        let scheduler = Scheduler::new(hw.clone(), claim.index, settings.timeout_ms)?;
        // From here `hw`'s interrupt holds the scheduler, which holds `hw`:
        // if the rest fails, that cycle must be broken or both leak (with a
        // user device's pages; the fail-nth sweep found it).
        let interrupt = scheduler.clone();
        let node = Self::build(claim, name, vram, hw, scheduler);
        if node.is_err() {
            interrupt.disconnect();
        }
        node
    }

    /// The device over `hw` and `scheduler`, its debugfs files and node.
    fn build(
        claim: IndexClaim,
        name: &'static CStr,
        vram: impl PinInit<Vram, Error>,
        hw: Arc<dyn Gluon>,
        scheduler: Arc<Scheduler>,
    ) -> Result<Pin<KBox<Self>>> {
        let (index, registry) = (claim.index, &claim.registry);
        let settings = registry.settings;
        let device = Arc::pin_init(
            try_pin_init!(Device {
                index,
                hw,
                lost: Atomic::new(0),
                scheduler,
                vram <- vram,
                exclusive: settings.exclusive,
                pinned_limit: settings.pinned_limit,
                counters <- new_mutex!(Counters::default(), "Device::counters"),
                sem_tables <- new_mutex!(KVec::new(), "Device::sem_tables"),
                _alive: Alive::new(registry),
            }),
            GFP_KERNEL,
        )?;
        let dir = registry.debugfs.subdir(name);
        KBox::try_pin_init(
            try_pin_init!(Self {
                mem_stats <- dir.read_callback_file(c"mem", device.clone(), &|d: &Arc<Device>, f| {
                    d.write_mem_stats(f)
                }),
                queues <- dir.read_callback_file(c"queues", device.clone(), &|d: &Arc<Device>, f| {
                    d.scheduler.write_queues(f)
                }),
                streams <- dir.read_callback_file(c"streams", device.clone(), &|d: &Arc<Device>, f| {
                    d.scheduler.write_streams(f)
                }),
                semaphores <- dir.read_callback_file(c"semaphores", device.clone(), &|d: &Arc<Device>, f| {
                    d.write_semaphores(f)
                }),
                _debugfs: dir,
                _index: claim,
                // Last: an open that comes at once finds everything.
                node <- Node::new(MiscDeviceOptions { name }, device),
            }? Error),
            GFP_KERNEL,
        )
    }

    pub(crate) fn device(&self) -> &Arc<Device> {
        self.node.data()
    }
}

#[pinned_drop]
impl PinnedDrop for DeviceNode {
    /// Module unload (no file is open any more: each holds a module
    /// reference, so no queue is left), or a user device whose server went
    /// (its files answer ENODEV, see [`Device::lose`]): stop the
    /// scheduler's interrupt, drop what is in flight and wait out a pass
    /// that may still run.
    fn drop(self: Pin<&mut Self>) {
        self.node.data().scheduler.shutdown();
    }
}
