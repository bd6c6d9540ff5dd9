// SPDX-License-Identifier: GPL-2.0

//! Timeline semaphores: a monotonically increasing u64 per semaphore,
//! signalled and waited on from the host, with sticky failure.
//!
//! Each file has its own semaphores. Their values are also published in one
//! page per file that userspace maps read-only, so a value can be read
//! without a syscall. One condition variable per file wakes every waiter on
//! any change; a waiter rechecks its own points. Waits cover several
//! semaphores of one file (all or any), so a per-file wake-up is the simplest
//! thing that never misses one.

use kernel::{
    new_condvar, new_mutex,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::{
        Arc,
        CondVar,
        CondVarTimeoutResult,
        Mutex, //
    },
    time::{
        msecs_to_jiffies,
        ClockSource,
        Monotonic, //
    },
};

use crate::{
    dma_fence::Fence,
    scheduler::Scheduler,
    sem_import::{
        self,
        FenceImport, //
    },
    uapi::{
        self,
        SemWaitPoint, //
    },
};

/// Value slots in the page: the most semaphores one file can have.
const SLOTS: usize = PAGE_SIZE / size_of::<u64>();

/// Largest errno a semaphore can fail with (`MAX_ERRNO`).
const MAX_ERROR: u32 = 4095;

struct Sem {
    value: u64,
    /// 0, or the positive errno it failed with.
    error: u32,
    /// Its u64 in the value page.
    slot: usize,
    /// The semaphore's dma_fence timeline.
    fence_context: u64,
    /// Exported fences waiting for their value, unordered.
    pending: KVec<(u64, Fence)>,
    /// Host SEM_WAITs sleeping on it, for debugfs.
    waiters: u32,
}

impl Sem {
    /// The error of a failed semaphore.
    fn failure(&self) -> Option<Error> {
        (self.error != 0).then(|| Error::from_errno(-(self.error as i32)))
    }

    /// Signals the pending fences the value has reached, or all of them
    /// with the failure.
    fn signal_fences(&mut self) {
        let (value, failure) = (self.value, self.failure());
        self.pending.retain(|(point, fence)| {
            let done = failure.is_some() || *point <= value;
            if done {
                fence.signal(failure);
            }
            !done
        });
    }
}

impl Drop for Sem {
    /// Destroyed, or its file closed: exported fences will never be
    /// reached, and their waiters must not hang.
    fn drop(&mut self) {
        for (_, fence) in self.pending.iter() {
            fence.signal(Some(ECANCELED));
        }
    }
}

struct Table {
    sems: RBTree<u32, Sem>,
    /// The file is closing: nothing new starts.
    closed: bool,
    /// Handles are never reused within a file.
    next_handle: u32,
    /// Bit `i` set: slot `i` is in use.
    slots: [u64; SLOTS / 64],
}

impl Table {
    fn get(&self, handle: u32) -> Result<&Sem> {
        self.sems.get(&handle).ok_or(ENOENT)
    }

    fn get_mut(&mut self, handle: u32) -> Result<&mut Sem> {
        self.sems.get_mut(&handle).ok_or(ENOENT)
    }

    fn take_slot(&mut self) -> Result<usize> {
        let (word, bits) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, w)| **w != u64::MAX)
            .ok_or(ENOSPC)?;
        let bit = bits.trailing_ones() as usize;
        *bits |= 1 << bit;
        Ok(word * 64 + bit)
    }

    fn put_slot(&mut self, slot: usize) {
        self.slots[slot / 64] &= !(1 << (slot % 64));
    }
}

/// Where a semaphore stands against a value a queue waits for.
pub(crate) enum WaitState {
    Reached,
    Pending,
    /// Failed with this positive errno.
    Failed(u32),
}

/// The outcome of checking a wait's points once.
enum Check {
    /// Satisfied; the index for an ANY wait (0 for ALL).
    Done(u32),
    /// A point's semaphore failed with this errno.
    Failed(u32, u32),
    Pending,
}

/// The semaphores of one file.
///
/// Lock order: `imports` and `table` are never held together.
#[pin_data]
pub(crate) struct Semaphores {
    #[pin]
    table: Mutex<Table>,
    /// Notified on every signal, failure and destruction.
    #[pin]
    changed: CondVar,
    /// Imports whose fence has not been handled yet.
    #[pin]
    imports: Mutex<KVec<Arc<FenceImport>>>,
    /// Slot `i` holds the value of the semaphore in slot `i`.
    page: Page,
    /// Woken on every change: queues may wait on these semaphores.
    scheduler: Arc<Scheduler>,
    /// The process that opened the file, for debugfs.
    tgid: i32,
}

impl Semaphores {
    pub(crate) fn new(scheduler: Arc<Scheduler>, tgid: i32) -> Result<impl PinInit<Self, Error>> {
        let page = Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?;
        let table = Table {
            sems: RBTree::new(),
            closed: false,
            next_handle: 1,
            slots: [0; SLOTS / 64],
        };
        Ok(try_pin_init!(Self {
            table <- new_mutex!(table, "Semaphores::table"),
            changed <- new_condvar!("Semaphores::changed"),
            imports <- new_mutex!(KVec::new(), "Semaphores::imports"),
            page,
            scheduler,
            tgid,
        }? Error))
    }

    /// The page userspace maps read-only to read values.
    pub(crate) fn page(&self) -> &Page {
        &self.page
    }

    /// Writes a semaphore's value where userspace reads it (atomically, so
    /// a reader never sees a torn value).
    fn publish(&self, slot: usize, value: u64) {
        // A slot is always an aligned word of the page.
        let _ = crate::raw::page_atomic::<u64, _>(&self.page, slot * size_of::<u64>(), |v| {
            v.store(value, kernel::sync::atomic::Release)
        });
    }

    /// SEM_CREATE: a new semaphore; its handle and its slot in the page.
    pub(crate) fn create(&self, initial: u64) -> Result<(u32, usize)> {
        if initial == uapi::SEM_FAILED_VALUE {
            return Err(EINVAL);
        }
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut table = self.table.lock();
        let handle = table.next_handle;
        if handle == u32::MAX {
            return Err(ENOSPC);
        }
        let slot = table.take_slot()?;
        table.next_handle += 1;
        let sem = Sem {
            value: initial,
            error: 0,
            slot,
            fence_context: Fence::new_context(),
            pending: KVec::new(),
            waiters: 0,
        };
        table.sems.insert(node.into_node(handle, sem));
        self.publish(slot, initial);
        Ok((handle, slot))
    }

    /// SEM_DESTROY: its waiters get ECANCELED.
    pub(crate) fn destroy(&self, handle: u32) -> Result {
        let mut table = self.table.lock();
        let sem = table.sems.remove(&handle).ok_or(ENOENT)?;
        table.put_slot(sem.slot);
        self.publish(sem.slot, 0);
        self.changed.notify_all();
        Ok(())
    }

    /// SEM_SIGNAL.
    pub(crate) fn signal(&self, handle: u32, value: u64) -> Result {
        let mut table = self.table.lock();
        let sem = table.get_mut(handle)?;
        if sem.error != 0 {
            return Err(Error::from_errno(-(sem.error as i32)));
        }
        if value <= sem.value || value == uapi::SEM_FAILED_VALUE {
            return Err(EINVAL);
        }
        self.raise(sem, value);
        Ok(())
    }

    /// Sets a new, higher value: wakes waiters, signals reached fences.
    fn raise(&self, sem: &mut Sem, value: u64) {
        sem.value = value;
        sem.signal_fences();
        self.publish(sem.slot, value);
        self.changed.notify_all();
        Scheduler::semaphore_changed(&self.scheduler);
    }

    /// For a queue packet: where `handle` stands against `value`; ENOENT if
    /// there is no such semaphore.
    pub(crate) fn wait_state(&self, handle: u32, value: u64) -> Result<WaitState> {
        let table = self.table.lock();
        let sem = table.get(handle)?;
        Ok(match sem.error {
            0 if sem.value >= value => WaitState::Reached,
            0 => WaitState::Pending,
            error => WaitState::Failed(error),
        })
    }

    /// A SIGNAL_SEMAPHORE packet completed. A value at or below the current
    /// one changes nothing: queue signals only ever raise.
    pub(crate) fn signal_from_queue(&self, handle: u32, value: u64) {
        let mut table = self.table.lock();
        if let Ok(sem) = table.get_mut(handle) {
            if sem.error == 0 && value > sem.value && value != uapi::SEM_FAILED_VALUE {
                self.raise(sem, value);
            }
        }
    }

    /// A queue that was to signal `handle` to `value` faulted, was
    /// destroyed or skipped the signal, with `error`. A value already
    /// reached is not failed: that promise was kept (its signal may have
    /// landed just before the queue stopped), and failing it would fail
    /// waiters that are already satisfied.
    pub(crate) fn fail_from_queue(&self, handle: u32, value: u64, error: u32) {
        let mut table = self.table.lock();
        if let Ok(sem) = table.get_mut(handle) {
            if sem.error == 0 && sem.value < value {
                self.mark_failed(sem, error);
            }
        }
    }

    /// The device is gone: every semaphore not failed yet fails with
    /// `error`, which wakes its waiters.
    pub(crate) fn fail_all(&self, error: u32) {
        let mut table = self.table.lock();
        for (_, sem) in table.sems.iter_mut() {
            if sem.error == 0 {
                self.mark_failed(sem, error);
            }
        }
    }

    /// Fails a semaphore that has not failed yet.
    fn mark_failed(&self, sem: &mut Sem, error: u32) {
        sem.error = error;
        self.raise(sem, uapi::SEM_FAILED_VALUE);
    }

    /// SEM_QUERY: the value and the failure errno (0 if none).
    pub(crate) fn query(&self, handle: u32) -> Result<(u64, u32)> {
        let table = self.table.lock();
        let sem = table.get(handle)?;
        Ok((sem.value, sem.error))
    }

    /// SEM_FAIL: the first failure sticks.
    pub(crate) fn fail(&self, handle: u32, error: u32) -> Result {
        if error == 0 || error > MAX_ERROR {
            return Err(EINVAL);
        }
        let mut table = self.table.lock();
        let sem = table.get_mut(handle)?;
        if sem.error == 0 {
            self.mark_failed(sem, error);
        }
        Ok(())
    }

    /// SEM_IMPORT_SYNC_FILE: `handle` advances to `value` when `fence`
    /// signals (or fails with its error).
    pub(crate) fn import(self: &Arc<Self>, handle: u32, value: u64, fence: Fence) -> Result {
        {
            let table = self.table.lock();
            let sem = table.get(handle)?;
            if value == uapi::SEM_FAILED_VALUE {
                return Err(EINVAL);
            }
            if let Some(e) = sem.failure() {
                return Err(e);
            }
        }
        sem_import::start(self, handle, value, fence)
    }

    /// An import's fence signalled (`error` if it failed).
    pub(crate) fn complete_import(&self, handle: u32, value: u64, error: Option<Error>) {
        let mut table = self.table.lock();
        if table.closed {
            return;
        }
        // Destroyed meanwhile: nothing to advance.
        let Ok(sem) = table.get_mut(handle) else {
            return;
        };
        if sem.error != 0 {
            return;
        }
        match error {
            Some(e) => self.mark_failed(sem, e.to_errno().unsigned_abs()),
            None if value > sem.value => self.raise(sem, value),
            // Already there: an import never lowers a value.
            None => {}
        }
    }

    pub(crate) fn track_import(&self, import: Arc<FenceImport>) -> Result {
        self.imports.lock().push(import, GFP_KERNEL)?;
        Ok(())
    }

    pub(crate) fn untrack_import(&self, import: &Arc<FenceImport>) {
        self.imports.lock().retain(|i| !Arc::ptr_eq(i, import));
    }

    /// The file is closing: stop imports (waiting for any already handed to
    /// the workqueue, which must not outlive the module), then drop every
    /// semaphore, which cancels their exported fences with ECANCELED.
    pub(crate) fn close(&self) {
        self.table.lock().closed = true;
        // Cancelled ones are dropped here. The rest have fired: their work
        // untracks them, and is waited for until its function has returned
        // (not only until it untracked itself), so that none of its code
        // runs after the module may be gone. Flushed without the lock,
        // which the work takes.
        self.imports.lock().retain(|i| !FenceImport::cancel(i));
        loop {
            let Some(fired) = self.imports.lock().first().cloned() else {
                break;
            };
            FenceImport::flush(&fired);
        }
        let sems = core::mem::take(&mut self.table.lock().sems);
        drop(sems);
    }

    /// A fence that signals when the semaphore reaches `value` (at once if
    /// it has), with its error if it fails, and ECANCELED if it is
    /// destroyed or its file closes first.
    pub(crate) fn fence(&self, handle: u32, value: u64) -> Result<Fence> {
        let mut table = self.table.lock();
        let sem = table.get_mut(handle)?;
        let fence = Fence::new(sem.fence_context, value)?;
        if let Some(e) = sem.failure() {
            fence.signal(Some(e));
        } else if sem.value >= value {
            fence.signal(None);
        } else {
            sem.pending.push((value, fence.clone()), GFP_KERNEL)?;
        }
        Ok(fence)
    }

    /// One look at a wait's points.
    fn check(table: &Table, points: &[SemWaitPoint], any: bool) -> Check {
        let mut all_done = true;
        for (i, p) in (0u32..).zip(points) {
            let Some(sem) = table.sems.get(&p.handle) else {
                return Check::Failed(i, ECANCELED.to_errno().unsigned_abs());
            };
            if sem.error != 0 {
                return Check::Failed(i, sem.error);
            }
            let done = sem.value >= p.value;
            if done && any {
                return Check::Done(i);
            }
            all_done &= done;
        }
        if all_done && !any {
            Check::Done(0)
        } else {
            Check::Pending
        }
    }

    /// SEM_WAIT: blocks until all (or any) points are reached, a semaphore
    /// fails or goes, the absolute CLOCK_MONOTONIC `deadline_ns` passes
    /// (ETIME), or a signal comes (ERESTARTSYS: the deadline is absolute, so
    /// a restart is exact). Returns the index for `ANY`, and on failure sets
    /// `*index` to the failed point.
    pub(crate) fn wait(
        &self,
        points: &[SemWaitPoint],
        any: bool,
        deadline_ns: i64,
        index: &mut u32,
    ) -> Result {
        let mut table = self.table.lock();
        // Every handle must be valid when the wait starts.
        for p in points {
            table.get(p.handle)?;
        }
        // Counted as waiters while here, for debugfs.
        let count = |table: &mut Table, up: bool| {
            for p in points {
                if let Ok(sem) = table.get_mut(p.handle) {
                    sem.waiters = if up {
                        sem.waiters + 1
                    } else {
                        sem.waiters.saturating_sub(1)
                    };
                }
            }
        };
        count(&mut table, true);
        let result = loop {
            match Self::check(&table, points, any) {
                Check::Done(i) => {
                    *index = i;
                    break Ok(());
                }
                Check::Failed(i, error) => {
                    *index = i;
                    break Err(Error::from_errno(-(error as i32)));
                }
                Check::Pending => {}
            }
            // The deadline is CLOCK_MONOTONIC nanoseconds, as the ABI says.
            let remaining = deadline_ns.saturating_sub(Monotonic::ktime_get());
            if remaining <= 0 {
                break Err(ETIME);
            }
            // Rounded up, so a wake-up by timeout is never early; the loop
            // rechecks the clock anyway.
            let ms = u32::try_from((remaining as u64).div_ceil(1_000_000)).unwrap_or(u32::MAX);
            if let CondVarTimeoutResult::Signal { .. } = self
                .changed
                .wait_interruptible_timeout(&mut table, msecs_to_jiffies(ms))
            {
                break Err(ERESTARTSYS);
            }
        };
        count(&mut table, false);
        result
    }

    /// debugfs `semaphores`: one line of `key=value` pairs per semaphore.
    pub(crate) fn write_list(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let table = self.table.lock();
        for (handle, sem) in table.sems.iter() {
            writeln!(
                f,
                "pid={} sem={handle} value={} error={} waiters={} fences={}",
                self.tgid,
                sem.value,
                sem.error,
                sem.waiters,
                sem.pending.len()
            )?;
        }
        Ok(())
    }

    /// Live semaphores, for debugfs.
    pub(crate) fn count(&self) -> usize {
        self.table.lock().sems.iter().count()
    }
}
