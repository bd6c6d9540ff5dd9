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
    bindings,
    new_condvar,
    new_mutex,
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
        atomic::Atomic,
        CondVar,
        CondVarTimeoutResult,
        Mutex, //
    },
    time::msecs_to_jiffies,
};

use crate::uapi::{
    self,
    SemWaitPoint, //
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
}

struct Table {
    sems: RBTree<u32, Sem>,
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
        let (word, bits) = self.slots.iter_mut().enumerate().find(|(_, w)| **w != u64::MAX).ok_or(ENOSPC)?;
        let bit = bits.trailing_ones() as usize;
        *bits |= 1 << bit;
        Ok(word * 64 + bit)
    }

    fn put_slot(&mut self, slot: usize) {
        self.slots[slot / 64] &= !(1 << (slot % 64));
    }
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
#[pin_data]
pub(crate) struct Semaphores {
    #[pin]
    table: Mutex<Table>,
    /// Notified on every signal, failure and destruction.
    #[pin]
    changed: CondVar,
    /// Slot `i` holds the value of the semaphore in slot `i`.
    page: Page,
}

impl Semaphores {
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let page = Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?;
        let table = Table { sems: RBTree::new(), next_handle: 1, slots: [0; SLOTS / 64] };
        Ok(try_pin_init!(Self {
            table <- new_mutex!(table, "Semaphores::table"),
            changed <- new_condvar!("Semaphores::changed"),
            page,
        }? Error))
    }

    /// The page userspace maps read-only to read values.
    pub(crate) fn page(&self) -> &Page {
        &self.page
    }

    /// Writes a semaphore's value where userspace reads it.
    fn publish(&self, slot: usize, value: u64) {
        // A slot is 8-aligned and inside the page; userspace reads it with
        // an atomic load, so it never sees a torn value.
        // SAFETY: the page is ours and stays mapped until `kunmap_local`.
        unsafe {
            let base = bindings::kmap_local_page(self.page.as_ptr()).cast::<u64>();
            Atomic::from_ptr(base.add(slot)).store(value, kernel::sync::atomic::Release);
            bindings::kunmap_local(base.cast());
        }
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
        table.sems.insert(node.into_node(handle, Sem { value: initial, error: 0, slot }));
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
        sem.value = value;
        let slot = sem.slot;
        self.publish(slot, value);
        self.changed.notify_all();
        Ok(())
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
            sem.error = error;
            sem.value = uapi::SEM_FAILED_VALUE;
            let slot = sem.slot;
            self.publish(slot, uapi::SEM_FAILED_VALUE);
            self.changed.notify_all();
        }
        Ok(())
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
    pub(crate) fn wait(&self, points: &[SemWaitPoint], any: bool, deadline_ns: i64, index: &mut u32) -> Result {
        let mut table = self.table.lock();
        // Every handle must be valid when the wait starts.
        for p in points {
            table.get(p.handle)?;
        }
        loop {
            match Self::check(&table, points, any) {
                Check::Done(i) => {
                    *index = i;
                    return Ok(());
                }
                Check::Failed(i, error) => {
                    *index = i;
                    return Err(Error::from_errno(-(error as i32)));
                }
                Check::Pending => {}
            }
            // SAFETY: `ktime_get` has no preconditions.
            let remaining = deadline_ns.saturating_sub(unsafe { bindings::ktime_get() });
            if remaining <= 0 {
                return Err(ETIME);
            }
            // Rounded up, so a wake-up by timeout is never early; the loop
            // rechecks the clock anyway.
            let ms = u32::try_from((remaining as u64).div_ceil(1_000_000)).unwrap_or(u32::MAX);
            if let CondVarTimeoutResult::Signal { .. } =
                self.changed.wait_interruptible_timeout(&mut table, msecs_to_jiffies(ms))
            {
                return Err(ERESTARTSYS);
            }
        }
    }

    /// Live semaphores, for debugfs.
    pub(crate) fn count(&self) -> usize {
        self.table.lock().sems.iter().count()
    }
}
