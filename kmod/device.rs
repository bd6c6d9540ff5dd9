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
        Arc,
        Mutex, //
    },
};

use crate::{
    context::Context,
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

/// One Radiance device. Open files hold a reference, so it outlives its node.
#[pin_data]
pub(crate) struct Device {
    index: u32,
    hw: Arc<dyn Gluon>,
    scheduler: Arc<Scheduler>,
    #[pin]
    vram: Vram,
    /// Exclusive mode: at most one open file (the hardware cannot keep one
    /// process's kernels out of another's VRAM).
    exclusive: bool,
    /// Most bytes of host memory pinned for HOST BOs at once.
    pinned_limit: u64,
    #[pin]
    counters: Mutex<Counters>,
    /// Every open file's semaphores, for debugfs. Lock order: before a
    /// file's `Semaphores::table`.
    #[pin]
    sem_tables: Mutex<KVec<Arc<Semaphores>>>,
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

    pub(crate) fn vram(&self) -> &Vram {
        &self.vram
    }

    pub(crate) fn scheduler(&self) -> &Arc<Scheduler> {
        &self.scheduler
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
        info.name = hw.name_field();
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
    semaphores: debugfs::File<Arc<Device>>,
    _debugfs: debugfs::Dir,
}

impl DeviceNode {
    /// Creates device `index` over `hw`, registers `/dev/radiance<index>`
    /// and its debugfs directory under `debugfs_root`.
    pub(crate) fn new(
        index: u32,
        hw: Arc<dyn Gluon>,
        exclusive: bool,
        pinned_limit: u64,
        timeout_ms: u32,
        debugfs_root: &debugfs::Dir,
    ) -> Result<Pin<KBox<Self>>> {
        let name = *NODE_NAMES.get(index as usize).ok_or(EINVAL)?;
        let vram = Vram::new(hw.desc().vram_size)?;
        let scheduler = Scheduler::new(hw.clone(), timeout_ms)?;
        let device = Arc::pin_init(
            try_pin_init!(Device {
                index,
                hw,
                scheduler,
                vram <- vram,
                exclusive,
                pinned_limit,
                counters <- new_mutex!(Counters::default(), "Device::counters"),
                sem_tables <- new_mutex!(KVec::new(), "Device::sem_tables"),
            }),
            GFP_KERNEL,
        )?;
        let dir = debugfs_root.subdir(name);
        KBox::try_pin_init(
            try_pin_init!(Self {
                mem_stats <- dir.read_callback_file(c"mem", device.clone(), &|d: &Arc<Device>, f| {
                    d.write_mem_stats(f)
                }),
                queues <- dir.read_callback_file(c"queues", device.clone(), &|d: &Arc<Device>, f| {
                    d.scheduler.write_queues(f)
                }),
                semaphores <- dir.read_callback_file(c"semaphores", device.clone(), &|d: &Arc<Device>, f| {
                    d.write_semaphores(f)
                }),
                _debugfs: dir,
                // Last: an open that comes at once finds everything.
                node <- Node::new(MiscDeviceOptions { name }, device),
            }? Error),
            GFP_KERNEL,
        )
    }
}

#[pinned_drop]
impl PinnedDrop for DeviceNode {
    /// Module unload: no file is open any more (each holds a module
    /// reference), so no queue is left; stop the scheduler's interrupt and
    /// wait out a pass that may still run.
    fn drop(self: Pin<&mut Self>) {
        self.node.data().scheduler.shutdown();
    }
}
