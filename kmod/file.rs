// SPDX-License-Identifier: GPL-2.0

//! The per-open-file context: what one process sees of a device through one
//! file descriptor. Everything a file creates belongs to its context and is
//! torn down with it; its handles and mmap offsets mean nothing in another
//! file. Objects are looked up or removed under `Context::objects`, and
//! used or dropped after (Documentation/design/locking.md).

use kernel::{
    mm::virt::VmaNew,
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::{
        Arc,
        ArcBorrow,
        Mutex, //
    },
    uaccess::UserSlice,
    ModuleMetadata,
};

use crate::{
    bo::Bo,
    device::Device,
    dma_buf::{
        self,
        Import, //
    },
    ioctl,
    misc_node::{
        FileKind,
        NodeFile, //
    },
    pending_fd::PendingFd,
    queue::{
        FileObjects,
        Queue, //
    },
    scheduler::Scheduler,
    semaphore::{
        Semaphores,
        WaitPoint, //
    },
    sync_file,
    trace,
    uapi, //
};

/// A BO as one file sees it.
struct BoEntry {
    bo: Arc<Bo>,
    /// The BO's fake mmap offset in this file, in pages (0: not mappable).
    pgoff: u64,
}

/// What an mmap offset of the file maps.
#[derive(Clone, Copy)]
enum MapTarget {
    /// A mappable BO, by handle.
    Bo(u32),
    /// A queue's ring, by queue id.
    Ring(u32),
    /// A queue's control block, by queue id.
    Control(u32),
}

/// A queue as its file sees it.
struct QueueEntry {
    queue: Arc<Queue>,
    ring_pgoff: u64,
    control_pgoff: u64,
}

/// Everything a file has created.
struct Objects {
    /// Handle -> BO.
    bos: RBTree<u32, BoEntry>,
    /// Queue id -> queue.
    queues: RBTree<u32, QueueEntry>,
    /// Mmap page offset -> what it maps.
    mmap: RBTree<u64, MapTarget>,
    /// Handles and ids are never reused within a file, so a stale one
    /// cannot name a newer object.
    next_handle: u32,
    next_queue_id: u32,
    next_pgoff: u64,
}

impl Objects {
    /// Reserves `pages` of mmap offset space; ENOSPC when exhausted.
    fn take_pgoff(&mut self, pages: u64) -> Result<u64> {
        let pgoff = self.next_pgoff;
        if pgoff + pages > MAX_PGOFF {
            return Err(ENOSPC);
        }
        self.next_pgoff += pages;
        Ok(pgoff)
    }
}

/// Largest mmap page offset: byte offsets must fit in `off_t`.
const MAX_PGOFF: u64 = (i64::MAX as u64) / PAGE_SIZE as u64;

/// The mmap page offset of the file's semaphore value page; BOs come after.
const SEM_PAGE_PGOFF: u64 = 1;

/// The most packets a doorbell runs in its own call (see
/// [`Context::queue_kick`]); more go to the scheduler's worker.
const KICK_RUNS_PACKETS: u64 = 4;

/// One open file of `/dev/radianceN`.
#[pin_data(PinnedDrop)]
pub(crate) struct Context {
    device: Arc<Device>,
    /// The process that opened it, for debugfs.
    pub(crate) tgid: i32,
    /// Lock order: level 5 (Documentation/design/locking.md).
    #[pin]
    objects: Mutex<Objects>,
    /// Shared with imports in flight, which `Semaphores::close` ends.
    pub(crate) sems: Arc<Semaphores>,
    /// Recognises other device files (SEM_IMPORT_HANDLE).
    kind: FileKind<Context>,
}

impl Context {
    /// GET_INFO.
    pub(crate) fn get_info(&self, info: &mut uapi::GetInfo) -> Result {
        if info.flags != 0 || info.pad0 != 0 {
            return Err(EINVAL);
        }
        self.device.describe(info);
        Ok(())
    }

    /// BO_CREATE.
    pub(crate) fn bo_create(&self, args: &mut uapi::BoCreate) -> Result {
        if args.pad != 0 || args.flags & !uapi::bo_flags::ALL != 0 || args.size == 0 {
            return Err(EINVAL);
        }
        let device = self.device.clone();
        let fixed = args.flags & uapi::bo_flags::FIXED_ADDRESS != 0;
        let mappable = args.flags & uapi::bo_flags::MAPPABLE != 0;
        let vram_mappable = device.hw().desc().caps & uapi::caps::VRAM_MAPPABLE != 0;
        let bo = match args.placement {
            // The CPU cannot reach this device's VRAM (e.g. it lives in a
            // userspace process): a valid request this device cannot serve.
            uapi::placement::VRAM if mappable && !vram_mappable => return Err(EOPNOTSUPP),
            // Beyond all of VRAM can never work: EINVAL, not ENOMEM.
            uapi::placement::VRAM if args.size <= device.vram().stats().total => Bo::new_vram(
                device,
                args.size,
                args.flags,
                fixed.then_some(args.device_address),
            )?,
            uapi::placement::HOST if !fixed => Bo::new_host(device, args.size, args.flags)?,
            _ => return Err(EINVAL),
        };
        let (handle, pgoff) = self.add_bo(bo.clone())?;
        args.handle = handle;
        args.device_address = bo.device_address();
        args.mmap_offset = pgoff * PAGE_SIZE as u64;
        Ok(())
    }

    /// Gives `bo` a handle in this file, and an mmap offset if it is
    /// mappable (else offset 0).
    fn add_bo(&self, bo: Arc<Bo>) -> Result<(u32, u64)> {
        let pages = bo.size().div_ceil(PAGE_SIZE as u64);
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mmap_node = RBTreeNodeReservation::new(GFP_KERNEL)?;

        let mut objects = self.objects.lock();
        let handle = objects.next_handle;
        if handle == u32::MAX {
            return Err(ENOSPC);
        }
        let pgoff = if bo.mappable() {
            objects.take_pgoff(pages)?
        } else {
            0
        };
        objects.next_handle += 1;
        if pgoff != 0 {
            objects
                .mmap
                .insert(mmap_node.into_node(pgoff, MapTarget::Bo(handle)));
        }
        objects
            .bos
            .insert(node.into_node(handle, BoEntry { bo, pgoff }));
        Ok((handle, pgoff))
    }

    /// The BO behind a handle of this file.
    pub(crate) fn bo(&self, handle: u32) -> Result<Arc<Bo>> {
        Ok(self
            .objects
            .lock()
            .bos
            .get(&handle)
            .ok_or(ENOENT)?
            .bo
            .clone())
    }

    /// BO_DESTROY.
    pub(crate) fn bo_destroy(&self, args: &mut uapi::BoDestroy) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        let entry = {
            let mut objects = self.objects.lock();
            let entry = objects.bos.remove(&args.handle).ok_or(ENOENT)?;
            objects.mmap.remove(&entry.pgoff);
            entry
        };
        // The VRAM is scrubbed and freed here, outside the lock.
        drop(entry);
        Ok(())
    }

    /// BO_INFO.
    pub(crate) fn bo_info(&self, args: &mut uapi::BoInfo) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        let objects = self.objects.lock();
        let entry = objects.bos.get(&args.handle).ok_or(ENOENT)?;
        args.size = entry.bo.size();
        args.placement = entry.bo.placement();
        args.flags = entry.bo.flags();
        args.device_address = entry.bo.device_address();
        args.mmap_offset = entry.pgoff * PAGE_SIZE as u64;
        Ok(())
    }

    /// BO_EXPORT.
    pub(crate) fn bo_export(&self, args: &mut uapi::BoExport) -> Result<PendingFd> {
        if args.pad != 0 || args.flags & !uapi::export_flags::ALL != 0 {
            return Err(EINVAL);
        }
        let bo = self.bo(args.handle)?;
        // Only mappable BOs own whole pages.
        if !bo.mappable() {
            return Err(EINVAL);
        }
        let owner = &<crate::driver::Radiance as ModuleMetadata>::THIS_MODULE;
        let fd = dma_buf::export(bo, owner, args.flags & uapi::export_flags::CLOEXEC != 0)?;
        args.fd = fd.number();
        Ok(fd)
    }

    /// BO_IMPORT.
    pub(crate) fn bo_import(&self, args: &mut uapi::BoImport) -> Result {
        if args.pad != 0 || args.flags != 0 {
            return Err(EINVAL);
        }
        let import = Import::new(self.device.hw().dma_device(), args.fd)?;
        let bo = Bo::new_imported(self.device.clone(), import)?;
        args.size = bo.size();
        (args.handle, _) = self.add_bo(bo)?;
        Ok(())
    }

    /// SEM_CREATE.
    pub(crate) fn sem_create(&self, args: &mut uapi::SemCreate) -> Result {
        if args.flags != 0 {
            return Err(EINVAL);
        }
        let (handle, slot) = self.sems.create(args.initial)?;
        self.device.count_sems(1);
        args.handle = handle;
        args.value_offset = SEM_PAGE_PGOFF * PAGE_SIZE as u64 + (slot * size_of::<u64>()) as u64;
        Ok(())
    }

    /// SEM_DESTROY.
    pub(crate) fn sem_destroy(&self, args: &mut uapi::SemDestroy) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        self.sems.destroy(args.handle)?;
        self.device.count_sems(-1);
        Ok(())
    }

    /// SEM_SIGNAL.
    pub(crate) fn sem_signal(&self, args: &mut uapi::SemSignal) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        self.sems.signal(args.handle, args.value)?;
        let dev = self.device.index();
        trace::sem_signal(dev, self.tgid, None, &self.sems, args.handle, args.value, 0);
        Ok(())
    }

    /// SEM_QUERY.
    pub(crate) fn sem_query(&self, args: &mut uapi::SemQuery) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        (args.value, args.error) = self.sems.query(args.handle)?;
        args.pad1 = 0;
        Ok(())
    }

    /// SEM_FAIL.
    pub(crate) fn sem_fail(&self, args: &mut uapi::SemFail) -> Result {
        self.sems.fail(args.handle, args.error)?;
        let (dev, failed) = (self.device.index(), uapi::SEM_FAILED_VALUE);
        trace::sem_signal(
            dev,
            self.tgid,
            None,
            &self.sems,
            args.handle,
            failed,
            args.error,
        );
        Ok(())
    }

    /// SEM_WAIT.
    pub(crate) fn sem_wait(&self, args: &mut uapi::SemWait) -> Result {
        let any = match args.flags {
            0 => false,
            uapi::sem_wait_flags::ANY => true,
            _ => return Err(EINVAL),
        };
        if args.pad != 0 || args.count == 0 || args.count > uapi::SEM_WAIT_MAX_POINTS {
            return Err(EINVAL);
        }
        let count = args.count as usize;
        // Most waits have a few points: those are read onto the stack, with
        // no allocation to make and free around a sleep. `many` is made
        // only for more: even an empty KVec calls the allocator when dropped.
        let mut few = [WaitPoint::default(); 4];
        let mut many;
        let points = match few.get_mut(..count) {
            Some(points) => points,
            None => {
                many = KVec::new();
                many.resize(count, WaitPoint::default(), GFP_KERNEL)?;
                &mut many[..]
            }
        };
        let mut reader = UserSlice::new(
            UserPtr::from_addr(args.points as usize),
            count * size_of::<uapi::SemWaitPoint>(),
        )
        .reader();
        for point in points.iter_mut() {
            let read: uapi::SemWaitPoint = reader.read()?;
            if read.pad != 0 {
                return Err(EINVAL);
            }
            *point = read.into();
        }
        self.sems
            .wait(points, any, args.deadline_ns, &mut args.index)
    }

    /// SEM_EXPORT_SYNC_FILE.
    pub(crate) fn sem_export_sync_file(
        &self,
        args: &mut uapi::SemExportSyncFile,
    ) -> Result<PendingFd> {
        if args.pad != 0 || args.flags & !uapi::export_flags::ALL != 0 {
            return Err(EINVAL);
        }
        let fence = self.sems.fence(args.handle, args.value)?;
        let fd = sync_file::export(&fence, args.flags & uapi::export_flags::CLOEXEC != 0)?;
        args.fd = fd.number();
        Ok(fd)
    }

    /// SEM_IMPORT_SYNC_FILE.
    pub(crate) fn sem_import_sync_file(&self, args: &mut uapi::SemImportSyncFile) -> Result {
        if args.flags != 0 || args.pad != 0 {
            return Err(EINVAL);
        }
        let fence = sync_file::fence_of(args.fd)?;
        self.sems.import(args.handle, args.value, fence)
    }

    /// SEM_IMPORT_HANDLE.
    pub(crate) fn sem_import_handle(&self, args: &mut uapi::SemImportHandle) -> Result {
        if args.flags != 0 {
            return Err(EINVAL);
        }
        let other = self.kind.file_of(args.fd)?;
        let (handle, slot) = self.sems.import_handle(&other.sems, args.handle)?;
        self.device.count_sems(1);
        args.new_handle = handle;
        args.value_offset = SEM_PAGE_PGOFF * PAGE_SIZE as u64 + (slot * size_of::<u64>()) as u64;
        Ok(())
    }

    /// QUEUE_CREATE.
    pub(crate) fn queue_create(self: &Arc<Self>, args: &mut uapi::QueueCreate) -> Result {
        let n = args.ring_packets;
        if !n.is_power_of_two() || !(uapi::QUEUE_MIN_PACKETS..=uapi::QUEUE_MAX_PACKETS).contains(&n)
        {
            return Err(EINVAL);
        }
        if args.priority != 0 || args.flags != 0 {
            return Err(EINVAL);
        }
        let ring_pages = (n as usize * uapi::PACKET_SIZE).div_ceil(PAGE_SIZE) as u64;
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let ring_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let control_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        // Scheduled before the file lists it: a listed queue is one that
        // QUEUE_DESTROY or the file's release takes out of the scheduler.
        // Listed first, a destroy from another thread guessing its id could
        // come before the scheduler has it, and the queue, scheduled for
        // ever, would hold the file open for ever.
        let (queue, ring_pgoff, control_pgoff) = {
            let mut objects = self.objects.lock();
            let queue = Queue::new(
                self.clone(),
                self.device.index(),
                self.tgid,
                objects.next_queue_id,
                n,
            )?;
            let ring_pgoff = objects.take_pgoff(ring_pages)?;
            let control_pgoff = objects.take_pgoff(1)?;
            objects.next_queue_id += 1;
            (queue, ring_pgoff, control_pgoff)
        };
        Scheduler::add(self.device.scheduler(), queue.clone())?;
        let id = queue.id;
        let mut objects = self.objects.lock();
        objects
            .mmap
            .insert(ring_node.into_node(ring_pgoff, MapTarget::Ring(id)));
        objects
            .mmap
            .insert(control_node.into_node(control_pgoff, MapTarget::Control(id)));
        objects.queues.insert(node.into_node(
            id,
            QueueEntry {
                queue,
                ring_pgoff,
                control_pgoff,
            },
        ));
        args.queue_id = id;
        args.ring_offset = ring_pgoff * PAGE_SIZE as u64;
        args.control_offset = control_pgoff * PAGE_SIZE as u64;
        Ok(())
    }

    /// Takes a queue out of the file and the scheduler.
    fn remove_queue(&self, id: u32) -> Result {
        let entry = {
            let mut objects = self.objects.lock();
            let entry = objects.queues.remove(&id).ok_or(ENOENT)?;
            objects.mmap.remove(&entry.ring_pgoff);
            objects.mmap.remove(&entry.control_pgoff);
            entry
        };
        Scheduler::remove(self.device.scheduler(), &entry.queue);
        Ok(())
    }

    /// QUEUE_DESTROY.
    pub(crate) fn queue_destroy(&self, args: &mut uapi::QueueDestroy) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        self.remove_queue(args.queue_id)
    }

    fn queue(&self, id: u32) -> Result<Arc<Queue>> {
        Ok(self
            .objects
            .lock()
            .queues
            .get(&id)
            .ok_or(ENOENT)?
            .queue
            .clone())
    }

    /// QUEUE_KICK: the doorbell.
    pub(crate) fn queue_kick(&self, args: &mut uapi::QueueKick) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        let queue = self.queue(args.queue_id)?;
        queue.ring_doorbell();
        // A few packets (one submission: its waits, command and signals) run
        // right in this call, which saves waking the worker; a burst goes
        // to the worker, which takes it while the process writes more.
        let burst = queue.backlog() > KICK_RUNS_PACKETS;
        Scheduler::doorbell(self.device.scheduler(), burst);
        Ok(())
    }

    /// QUEUE_QUERY.
    pub(crate) fn queue_query(&self, args: &mut uapi::QueueQuery) -> Result {
        if args.pad != 0 {
            return Err(EINVAL);
        }
        let s = self.queue(args.queue_id)?.state();
        args.read_index = s.completed;
        args.submit_index = s.submitted;
        args.status = if s.faulted {
            uapi::queue_status::FAULTED
        } else {
            uapi::queue_status::ACTIVE
        };
        args.error = s.error;
        args.fault_index = s.fault_index;
        args.err_code = s.err_code;
        args.err_pc = s.err_pc;
        args.err_thread = s.err_thread;
        args.pad1 = 0;
        Ok(())
    }

    /// The file is closing: its queues stop first (what they have not
    /// completed is cancelled; copies in flight finish, a running launch is
    /// reset), then its semaphores cancel their waiters. Memory goes with
    /// the last reference, after in-flight commands.
    fn shutdown(&self) {
        // One at a time, allocating nothing: a queue left here would keep
        // the file's context, and with it the device, alive for good.
        loop {
            let first = self.objects.lock().queues.keys().next().copied();
            let Some(id) = first else {
                break;
            };
            let _ = self.remove_queue(id);
        }
        self.device.count_sems(-(self.sems.count() as i64));
        self.device.untrack_semaphores(&self.sems);
        self.sems.close();
    }

    /// What mmap offset `pgoff` maps.
    fn map_target(&self, pgoff: u64) -> Result<MapTarget> {
        self.objects.lock().mmap.get(&pgoff).copied().ok_or(EINVAL)
    }
}

impl FileObjects for Context {
    fn bo(&self, handle: u32) -> Result<Arc<Bo>> {
        Context::bo(self, handle)
    }

    fn semaphores(&self) -> &Semaphores {
        &self.sems
    }
}

impl NodeFile for Context {
    type Data = Arc<Device>;

    fn open(device: &Arc<Device>, kind: FileKind<Self>) -> Result<Arc<Self>> {
        device.open_file()?;
        let objects = Objects {
            bos: RBTree::new(),
            queues: RBTree::new(),
            mmap: RBTree::new(),
            next_handle: 1,
            next_queue_id: 1,
            next_pgoff: SEM_PAGE_PGOFF + 1,
        };
        // Until the context exists (its drop closes the file), a failure
        // below must undo the count itself.
        let counted = device.clone();
        let undo = kernel::types::ScopeGuard::new(move || counted.close_file());
        let tgid = kernel::current!().tgid_nr_ns(None);
        let sems = Arc::pin_init(
            Semaphores::new(device.scheduler().clone(), tgid)?,
            GFP_KERNEL,
        )?;
        let ctx = Arc::pin_init(
            try_pin_init!(Self {
                device: device.clone(),
                tgid,
                objects <- new_mutex!(objects, "Context::objects"),
                sems,
                kind,
            }),
            GFP_KERNEL,
        )?;
        undo.dismiss();
        ctx.device.track_semaphores(ctx.sems.clone())?;
        Ok(ctx)
    }

    fn ioctl(ctx: ArcBorrow<'_, Self>, cmd: u32, arg: usize) -> Result<isize> {
        ctx.device.check_present()?;
        ioctl::dispatch(ctx, cmd, arg)
    }

    fn mmap(ctx: ArcBorrow<'_, Self>, vma: &VmaNew) -> Result {
        ctx.device.check_present()?;
        // Device memory is data, never code.
        if vma.executable() {
            return Err(EPERM);
        }
        vma.try_clear_mayexec()?;
        vma.set_dontexpand();
        vma.set_dontdump();
        let pgoff = crate::raw::vma_pgoff(vma) as u64;
        if pgoff == SEM_PAGE_PGOFF {
            // Semaphore values are the kernel's to change.
            if vma.writable() || vma.end() - vma.start() != PAGE_SIZE {
                return Err(EPERM);
            }
            vma.try_clear_maywrite()?;
            return vma
                .set_mixedmap()
                .vm_insert_page(vma.start(), ctx.sems.page());
        }
        match ctx.map_target(pgoff)? {
            MapTarget::Bo(handle) => ctx
                .bo(handle)
                .map_err(|_| EINVAL)?
                .map(vma.set_mixedmap(), 0),
            MapTarget::Ring(id) => map_pages(vma, ctx.queue(id).map_err(|_| EINVAL)?.ring_pages()),
            MapTarget::Control(id) => {
                let queue = ctx.queue(id).map_err(|_| EINVAL)?;
                map_pages(vma, core::slice::from_ref(queue.control_page()))
            }
        }
    }

    fn release(ctx: Arc<Self>) {
        // Queues hold their file: break that cycle before the last
        // reference from the file table goes.
        ctx.shutdown();
    }
}

/// Maps all of `pages` (exactly) into `vma`.
fn map_pages(vma: &VmaNew, pages: &[kernel::page::Page]) -> Result {
    if vma.end() - vma.start() != pages.len() * PAGE_SIZE {
        return Err(EINVAL);
    }
    let map = vma.set_mixedmap();
    for (i, page) in pages.iter().enumerate() {
        map.vm_insert_page(vma.start() + i * PAGE_SIZE, page)?;
    }
    Ok(())
}

#[pinned_drop]
impl PinnedDrop for Context {
    fn drop(self: Pin<&mut Self>) {
        self.device.close_file();
    }
}
