// SPDX-License-Identifier: GPL-2.0

//! Timeline semaphores: a monotonically increasing u64 per semaphore,
//! signalled and waited on from the host, with sticky failure.
//!
//! Each file has its own semaphores. Their values are also published in one
//! page per file that userspace maps read-only, so a value can be read
//! without a syscall. A change wakes every host waiter of its file; a
//! waiter rechecks its own points. Waits cover several
//! semaphores of one file (all or any), so a per-file wake-up is the simplest
//! thing that never misses one.
//!
//! A file may also hold aliases (SEM_IMPORT_HANDLE): handles for semaphores
//! of another file of the module, usually another device's. Every operation
//! on an alias acts on the semaphore it names, in its owner's table. The
//! semaphore keeps a watcher per alias: on every change it publishes the
//! value in the alias file's page and wakes that file's waiters and
//! scheduler, so a queue of device B waits on device A's semaphore with no
//! fence in between. When a queue's packet made the change, B's scheduler
//! runs in A's scheduler's worker right after A's pass (see [`Wake`]). An
//! alias keeps its owner's `Semaphores` alive; once the semaphore is
//! destroyed or its file closed, the alias reads as failed with ECANCELED.

use core::cell::Cell;
use kernel::{
    new_mutex, new_spinlock,
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
        atomic::{
            Acquire,
            Atomic,
            Full,
            Relaxed,
            Release, //
        },
        barrier::smp_mb,
        lock::{
            mutex::MutexBackend,
            spinlock::SpinLockBackend,
            Guard, //
        },
        Arc,
        Mutex, //
    },
    time::{
        msecs_to_jiffies,
        ClockSource,
        Jiffies,
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
    sleep_lock::{
        SleepLock,
        Slept, //
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
    /// Host SEM_WAITs that found it short of their point and may sleep on
    /// it: for debugfs, and a change with none wakes no host waiter.
    waiters: u32,
    /// Moves each time a change wakes the host waiters counted on it, which
    /// then no longer count: the change uncounts them, so that a wait woken
    /// with its point reached leaves without taking the table again. A wait
    /// that counted itself when this read another value no longer counts
    /// (see [`WaitPoint::counted`]).
    woken: u64,
    /// The lowest point such a wait looked for since the last wake-up
    /// (`u64::MAX`: none): a change below it wakes no host waiter, so a
    /// wait for a timeline's last point sleeps through the points before
    /// it. Every wait still counted looks again after a wake-up and sets
    /// it anew (see [`Wait::look`]).
    wake_at: u64,
    /// Aliases of it in other files, to publish to and wake.
    watchers: KVec<Watcher>,
}

/// An alias of a semaphore in another file: that file's semaphores, and the
/// slot of its page where the alias's value is published.
struct Watcher {
    sems: Arc<Semaphores>,
    slot: usize,
}

impl Watcher {
    /// The watched semaphore moved to `value`; `host_waiters`: a SEM_WAIT
    /// may sleep on it (see [`Semaphores::raise`]).
    fn changed(&self, value: u64, wake: &mut Wake<'_>, host_waiters: bool) {
        self.sems.publish(self.slot, value);
        // Pairs with the scheduler's `blocked` store before it reads the
        // slot (see [`Semaphores::wait_state`]): it sees the value, or
        // `wake` below sees it blocked.
        smp_mb(Full);
        if host_waiters {
            // Woken at once: the alias's waiters look at their own table
            // first, which is not held here.
            self.sems.wake_aliased();
        }
        wake.scheduler(&self.sems.scheduler);
    }
}

/// How a semaphore's change reaches the schedulers whose queues may wait on
/// it.
pub(crate) enum Wake<'a> {
    /// Each is woken at once.
    Now,
    /// The change comes from a packet completed under `this`'s lock,
    /// usually in a pass, which looks at its own queues again anyway (see
    /// [`Scheduler::changed_under_lock`]): the other schedulers that must
    /// look go on `later`, which the pass runs in its own worker once it has
    /// dropped its lock (see [`Scheduler::run_passes`]), rather than waking
    /// another worker for each.
    Later {
        this: &'a Scheduler,
        later: &'a mut KVec<Arc<Scheduler>>,
    },
}

impl Wake<'_> {
    fn scheduler(&mut self, scheduler: &Arc<Scheduler>) {
        match self {
            Wake::Later { this, .. } if core::ptr::eq(*this, &**scheduler) => {
                Scheduler::changed_under_lock(scheduler)
            }
            Wake::Later { later, .. } => {
                if !scheduler.waits() || later.iter().any(|s| Arc::ptr_eq(s, scheduler)) {
                    return;
                }
                // Out of memory: woken at once instead.
                if later.push(scheduler.clone(), GFP_KERNEL).is_err() {
                    Scheduler::semaphore_changed(scheduler);
                }
            }
            _ => Scheduler::semaphore_changed(scheduler),
        }
    }
}

/// A handle of this file for semaphore `handle` of `owner` (another file).
struct Alias {
    owner: Arc<Semaphores>,
    handle: u32,
    /// This file's slot for its value.
    slot: usize,
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
        // Its aliases now read as failed.
        for watcher in self.watchers.iter() {
            watcher.changed(uapi::SEM_FAILED_VALUE, &mut Wake::Now, true);
        }
    }
}

struct Table {
    sems: RBTree<u32, Sem>,
    /// Handles of this file for other files' semaphores.
    aliases: RBTree<u32, Alias>,
    /// The file is closing: nothing new starts.
    closed: bool,
    /// Handles are never reused within a file.
    next_handle: u32,
    /// Bit `i` set: slot `i` is in use.
    slots: [u64; SLOTS / 64],
}

impl Table {
    fn get_mut(&mut self, handle: u32) -> Result<&mut Sem> {
        self.sems.get_mut(&handle).ok_or(ENOENT)
    }

    /// Runs `f` on semaphore `handle`: how a wait on own semaphores finds
    /// its points.
    fn visit(&mut self, handle: u32, f: &mut dyn FnMut(&mut Sem)) -> Result {
        self.get_mut(handle).map(f)
    }

    /// A new handle and value slot.
    fn take_handle(&mut self) -> Result<(u32, usize)> {
        let handle = self.next_handle;
        if handle == u32::MAX {
            return Err(ENOSPC);
        }
        let slot = self.take_slot()?;
        self.next_handle += 1;
        Ok((handle, slot))
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

impl WaitState {
    fn of(sem: &Sem, value: u64) -> Self {
        match sem.error {
            0 if sem.value >= value => WaitState::Reached,
            0 => WaitState::Pending,
            error => WaitState::Failed(error),
        }
    }
}

/// Where one queue's last WAIT_SEMAPHORE found its semaphore's value: the
/// slot of the file's page for the handle (a semaphore's or an alias's).
/// A later wait on the same handle whose point the slot shows reached is
/// answered there, without the table (see [`Semaphores::wait_state`]).
/// Good while no semaphore or alias of the file has been destroyed since:
/// the slot may have another owner then (handles are never reused). The
/// scheduler keeps one per queue; only its passes, under its lock, use
/// it.
#[derive(Default)]
pub(crate) struct SlotHint(Cell<Option<Hinted>>);

#[derive(Clone, Copy)]
struct Hinted {
    handle: u32,
    slot: usize,
    /// [`Semaphores::destroyed`] when `slot` was looked up.
    destroyed: u64,
}

/// The outcome of checking a wait's points once.
enum Check {
    /// Satisfied; the index for an ANY wait (0 for ALL).
    Done(u32),
    /// A point's semaphore failed with this errno.
    Failed(u32, u32),
    Pending,
}

impl Check {
    /// The wait's result once decided (the index of the point that decided
    /// it in `index`); None while it is pending.
    fn outcome(self, index: &mut u32) -> Option<Result> {
        match self {
            Check::Done(i) => {
                *index = i;
                Some(Ok(()))
            }
            Check::Failed(i, error) => {
                *index = i;
                Some(Err(Error::from_errno(-(error as i32))))
            }
            Check::Pending => None,
        }
    }
}

/// A point of a SEM_WAIT as the wait keeps it: the semaphore and the value
/// it waits for, and whether it is counted there as a waiter.
#[derive(Clone, Copy, Default)]
pub(crate) struct WaitPoint {
    handle: u32,
    value: u64,
    /// Counted on the semaphore since its `woken` read this. It no longer
    /// is once that moved: the change that moved it uncounted the wait.
    counted: Option<u64>,
}

impl From<SemWaitPoint> for WaitPoint {
    fn from(point: SemWaitPoint) -> Self {
        Self {
            handle: point.handle,
            value: point.value,
            counted: None,
        }
    }
}

impl WaitPoint {
    /// Whether the wait is still counted on `sem`; it no longer is.
    fn uncount_from(&mut self, sem: &Sem) -> bool {
        self.counted.take() == Some(sem.woken)
    }
}

/// One SEM_WAIT: its points, all or any of which it waits for, and its
/// deadline.
struct Wait<'a> {
    points: &'a mut [WaitPoint],
    any: bool,
    deadline_ns: i64,
}

impl Wait<'_> {
    /// One look at every point of a wait, each on the semaphore `lookup`
    /// finds for its handle. In the same lock it keeps the wait counted
    /// (`Sem::waiters`) on exactly the points that are not reached, as
    /// [`WaitPoint::counted`] records. The first point in order that
    /// failed, or for ANY that is reached, decides. A handle that names
    /// nothing is ENOENT on the `first` look (nothing stays counted);
    /// later, like an alias whose semaphore is gone, it has failed with
    /// ECANCELED (destroyed meanwhile, with its count).
    fn look(
        &mut self,
        first: bool,
        mut lookup: impl FnMut(u32, &mut dyn FnMut(&mut Sem)) -> Result,
    ) -> Result<Check> {
        let mut decided = None;
        let mut all_done = true;
        let mut missing = false;
        for (i, p) in (0u32..).zip(self.points.iter_mut()) {
            let (handle, value) = (p.handle, p.value);
            let mut state = WaitState::Pending;
            let found = lookup(handle, &mut |sem| {
                state = WaitState::of(sem, value);
                let pending = matches!(state, WaitState::Pending);
                match (p.uncount_from(sem), pending) {
                    (false, true) => sem.waiters = sem.waiters.saturating_add(1),
                    (true, false) => sem.waiters = sem.waiters.saturating_sub(1),
                    _ => {}
                }
                if pending {
                    p.counted = Some(sem.woken);
                    sem.wake_at = sem.wake_at.min(value);
                }
            });
            let state = match found {
                Err(e) if e == ENOENT && first => {
                    missing = true;
                    break;
                }
                Ok(()) => state,
                // Gone with its count.
                Err(_) => {
                    p.counted = None;
                    WaitState::Failed(ecanceled())
                }
            };
            let check = match state {
                WaitState::Failed(error) => Some(Check::Failed(i, error)),
                WaitState::Reached if self.any => Some(Check::Done(i)),
                WaitState::Reached => None,
                WaitState::Pending => {
                    all_done = false;
                    None
                }
            };
            decided = decided.or(check);
        }
        if missing {
            self.uncount(lookup);
            return Err(ENOENT);
        }
        Ok(match decided {
            Some(check) => check,
            None if all_done && !self.any => Check::Done(0),
            None => Check::Pending,
        })
    }

    /// A wait is leaving: uncounts it from the points it is still counted
    /// on (an ANY wait that is done, a failure, a timeout, a signal).
    fn uncount(&mut self, mut lookup: impl FnMut(u32, &mut dyn FnMut(&mut Sem)) -> Result) {
        for p in self.points.iter_mut().filter(|p| p.counted.is_some()) {
            // A semaphore gone meanwhile took its count with it.
            let _ = lookup(p.handle, &mut |sem| {
                if p.uncount_from(sem) {
                    sem.waiters = sem.waiters.saturating_sub(1)
                }
            });
            p.counted = None;
        }
    }

    /// The time left before the deadline, in jiffies (None: no deadline);
    /// ETIME once it has passed.
    fn timeout(&self) -> Result<Option<Jiffies>> {
        if self.deadline_ns == i64::MAX {
            return Ok(None);
        }
        // The deadline is CLOCK_MONOTONIC nanoseconds, as the ABI says.
        let remaining = self.deadline_ns.saturating_sub(Monotonic::ktime_get());
        if remaining <= 0 {
            return Err(ETIME);
        }
        // Rounded up, so a wake-up by timeout is never early; the wait
        // rechecks the clock anyway.
        let ms = (remaining as u64).div_ceil(1_000_000);
        Ok(Some(msecs_to_jiffies(
            u32::try_from(ms).unwrap_or(u32::MAX),
        )))
    }
}

/// ECANCELED as a semaphore's error: what a destroyed one reads as.
fn ecanceled() -> u32 {
    ECANCELED.to_errno().unsigned_abs()
}

/// The semaphores of one file. Its locks' rules (two files' tables never
/// held together, `wake` inside any file's `table`) are in
/// Documentation/design/locking.md.
#[pin_data]
pub(crate) struct Semaphores {
    /// The waits on this file's own semaphores only sleep on it, woken by
    /// a change under it (see [`Semaphores::unlock`]).
    /// Lock order: level 5 (Documentation/design/locking.md).
    #[pin]
    table: SleepLock<Table, MutexBackend>,
    /// Counts changes while `aliased_waits` is not 0; such a wait sleeps on
    /// it only if no change came since it last looked, so that it looks at
    /// its points (in several files' tables) without holding a lock across
    /// them.
    /// Lock order: level 6 (Documentation/design/locking.md).
    #[pin]
    wake: SleepLock<u64, SpinLockBackend>,
    /// Waits of this file in progress with a point on an alias (see
    /// [`Semaphores::wake_aliased`]).
    aliased_waits: Atomic<u32>,
    /// 1 while a change under `table` has its own waits to wake, which
    /// the change's maker does before it drops the table; read and written
    /// only under it.
    wake_own: Atomic<i32>,
    /// Semaphores and aliases of this file destroyed so far (written
    /// under `table`): a wait that reads its point in the page without the
    /// table checks that the slot has had no other owner since it looked.
    destroyed: Atomic<u64>,
    /// Imports whose fence has not been handled yet.
    /// Lock order: a leaf (Documentation/design/locking.md).
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
            aliases: RBTree::new(),
            closed: false,
            next_handle: 1,
            slots: [0; SLOTS / 64],
        };
        Ok(try_pin_init!(Self {
            table <- SleepLock::new(new_mutex!(table, "Semaphores::table")),
            wake <- SleepLock::new(new_spinlock!(0, "Semaphores::wake")),
            aliased_waits: Atomic::new(0),
            wake_own: Atomic::new(0),
            destroyed: Atomic::new(0),
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
            v.store(value, Release)
        });
    }

    /// The value published in `slot`, as userspace reads it.
    fn published(&self, slot: usize) -> u64 {
        // A slot is always an aligned word of the page; never reached.
        crate::raw::page_atomic::<u64, _>(&self.page, slot * size_of::<u64>(), |v| v.load(Acquire))
            .unwrap_or(uapi::SEM_FAILED_VALUE)
    }

    /// Wakes this file's host waiters on a change of one of its own
    /// semaphores, made under its table: the waits on own semaphores only
    /// as the change's maker drops the table (see [`Semaphores::unlock`]),
    /// the aliased ones now.
    fn wake_waiters(&self) {
        self.wake_own.store(1, Relaxed);
        self.wake_aliased();
    }

    /// Wakes this file's waits with a point on an alias, under the table of
    /// the semaphore that changed: moves the count, and wakes them.
    ///
    /// The count is moved only while there is such a wait. None misses a
    /// move: it counts itself before its first look at a point, which
    /// takes the table this change holds; if that look came first, its
    /// count is ordered before this read by that table's unlock and lock
    /// (and stays up until it leaves); if this change came first, the look
    /// sees it.
    fn wake_aliased(&self) {
        if self.aliased_waits.load(Relaxed) != 0 {
            let mut generation = self.wake.lock();
            *generation = generation.wrapping_add(1);
            self.wake.wake_all(&generation);
        }
    }

    /// Drops this file's `table`, waking the waits asleep on it if a change
    /// under it asked to ([`Semaphores::wake_waiters`]): marked woken under
    /// it, they are woken once it is dropped. None is missed: a wait lists
    /// itself before it drops the table it looked under, so a change it did
    /// not see is made, and marks it woken, after that.
    fn unlock(&self, table: Guard<'_, Table, MutexBackend>) {
        if self.wake_own.load(Relaxed) != 0 {
            self.wake_own.store(0, Relaxed);
            self.table.unlock_waking(table);
        }
    }

    /// Runs `f` on the semaphore `handle` names in this file, under the
    /// table of the file that owns it, with that file's `Semaphores`.
    /// ENOENT: no such handle; ECANCELED: an alias whose semaphore is gone.
    fn with_sem<R>(
        &self,
        handle: u32,
        f: impl FnOnce(&Semaphores, &mut Sem) -> Result<R>,
    ) -> Result<R> {
        let (owner, target) = {
            let mut table = self.table.lock();
            if let Some(sem) = table.sems.get_mut(&handle) {
                let result = f(self, sem);
                self.unlock(table);
                return result;
            }
            let alias = table.aliases.get(&handle).ok_or(ENOENT)?;
            (alias.owner.clone(), alias.handle)
        };
        let mut table = owner.table.lock();
        let sem = table.sems.get_mut(&target).ok_or(ECANCELED)?;
        let result = f(&owner, sem);
        owner.unlock(table);
        result
    }

    /// SEM_CREATE: a new semaphore; its handle and its slot in the page.
    pub(crate) fn create(&self, initial: u64) -> Result<(u32, usize)> {
        if initial == uapi::SEM_FAILED_VALUE {
            return Err(EINVAL);
        }
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut table = self.table.lock();
        let (handle, slot) = table.take_handle()?;
        let sem = Sem {
            value: initial,
            error: 0,
            slot,
            fence_context: Fence::new_context(),
            pending: KVec::new(),
            waiters: 0,
            woken: 0,
            wake_at: u64::MAX,
            watchers: KVec::new(),
        };
        table.sems.insert(node.into_node(handle, sem));
        self.publish(slot, initial);
        Ok((handle, slot))
    }

    /// SEM_IMPORT_HANDLE: a handle in this file for semaphore `handle` of
    /// `owner`'s file (an alias in `owner` names the semaphore it aliases);
    /// the new handle and its slot in the page. EINVAL if that semaphore is
    /// this file's own.
    pub(crate) fn import_handle(
        self: &Arc<Self>,
        owner: &Arc<Semaphores>,
        handle: u32,
    ) -> Result<(u32, usize)> {
        let (owner, handle) = {
            let table = owner.table.lock();
            match table.aliases.get(&handle) {
                Some(alias) => (alias.owner.clone(), alias.handle),
                None => {
                    table.sems.get(&handle).ok_or(ENOENT)?;
                    (owner.clone(), handle)
                }
            }
        };
        if Arc::ptr_eq(self, &owner) {
            return Err(EINVAL);
        }
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let (new_handle, slot) = self.table.lock().take_handle()?;
        // Watched before the alias exists: from here on every change of the
        // semaphore is published to the slot.
        let watched = owner.watch(
            handle,
            Watcher {
                sems: self.clone(),
                slot,
            },
        );
        let mut table = self.table.lock();
        if let Err(e) = watched {
            table.put_slot(slot);
            return Err(e);
        }
        table.aliases.insert(node.into_node(
            new_handle,
            Alias {
                owner,
                handle,
                slot,
            },
        ));
        Ok((new_handle, slot))
    }

    /// Adds an alias's watcher to semaphore `handle`, publishing its
    /// current value to the alias's slot.
    fn watch(&self, handle: u32, watcher: Watcher) -> Result {
        let mut table = self.table.lock();
        let sem = table.get_mut(handle)?;
        watcher.sems.publish(watcher.slot, sem.value);
        sem.watchers.push(watcher, GFP_KERNEL)?;
        Ok(())
    }

    /// Removes the watcher of the alias in `sems` at `slot` from semaphore
    /// `handle`, if the semaphore is still there.
    fn unwatch(&self, handle: u32, sems: &Semaphores, slot: usize) {
        let mut table = self.table.lock();
        if let Ok(sem) = table.get_mut(handle) {
            sem.watchers
                .retain(|w| !(core::ptr::eq(&*w.sems, sems) && w.slot == slot));
        }
    }

    /// Frees the slot of a semaphore or alias just destroyed, under
    /// `table`, and zeroes it. The destroy is counted first: a slot hint or
    /// a woken wait that read the slot before sees the count move before
    /// the slot can have another owner (see `destroyed`).
    fn free_slot(&self, table: &mut Table, slot: usize) {
        self.destroyed.fetch_add(1, Relaxed);
        table.put_slot(slot);
        self.publish(slot, 0);
    }

    /// SEM_DESTROY: its waiters get ECANCELED, and so do its aliases'. An
    /// alias's semaphore is left as it is.
    pub(crate) fn destroy(&self, handle: u32) -> Result {
        let alias = {
            let mut table = self.table.lock();
            if let Some(sem) = table.sems.remove(&handle) {
                self.free_slot(&mut table, sem.slot);
                self.wake_waiters();
                self.unlock(table);
                return Ok(());
            }
            table.aliases.remove(&handle).ok_or(ENOENT)?
        };
        // The slot is freed only once nothing publishes to it.
        alias.owner.unwatch(alias.handle, self, alias.slot);
        let mut table = self.table.lock();
        self.free_slot(&mut table, alias.slot);
        // Only a wait with a point on an alias waits on it.
        self.wake_aliased();
        Ok(())
    }

    /// The id of semaphore `handle` (an alias's is its semaphore's): its
    /// dma_fence context, the same in every process, for tracing.
    pub(crate) fn id(&self, handle: u32) -> Result<u64> {
        self.with_sem(handle, |_, sem| Ok(sem.fence_context))
    }

    /// SEM_SIGNAL.
    pub(crate) fn signal(&self, handle: u32, value: u64) -> Result {
        self.with_sem(handle, |owner, sem| {
            if sem.error != 0 {
                return Err(Error::from_errno(-(sem.error as i32)));
            }
            if value <= sem.value || value == uapi::SEM_FAILED_VALUE {
                return Err(EINVAL);
            }
            owner.raise(sem, value, &mut Wake::Now);
            Ok(())
        })
    }

    /// Sets a new, higher value: wakes waiters, signals reached fences,
    /// and tells the semaphore's aliases.
    fn raise(&self, sem: &mut Sem, value: u64, wake: &mut Wake<'_>) {
        sem.value = value;
        // Published first: whoever a fence, a wake-up or an alias tells
        // must find the value page there already. A failure that crosses
        // to another device through a sync_file is explained there by
        // reading this page; read early, it would show no failure.
        self.publish(sem.slot, value);
        sem.signal_fences();
        // A SEM_WAIT counts itself on a point it finds not reached, and
        // lowers `wake_at` to it, under this table, before it sleeps: one
        // not counted here looks after this change and sees it. So with no
        // waiter counted, or none of whose points this change reaches, no
        // host wake (a queue signalling a semaphore nobody waits on on the
        // host costs no wait-queue lock, and one signalling each point of a
        // timeline wakes its waiter once, at the point it waits for). The
        // waiters woken are uncounted here: those still short of their
        // point count themselves and set `wake_at` anew when they look
        // again, and one whose point is reached need not look.
        let host_waiters = sem.waiters > 0 && value >= sem.wake_at;
        if host_waiters {
            sem.waiters = 0;
            sem.woken = sem.woken.wrapping_add(1);
            sem.wake_at = u64::MAX;
            self.wake_waiters();
        }
        wake.scheduler(&self.scheduler);
        for watcher in sem.watchers.iter() {
            watcher.changed(value, wake, host_waiters);
        }
    }

    /// For a queue packet: where `handle` stands against `value`; ENOENT if
    /// there is no such semaphore. An alias whose semaphore is gone has
    /// failed with ECANCELED.
    ///
    /// An alias is answered from its slot of this file's page, under this
    /// file's table alone, unless the slot reads failed (the owner's table
    /// says why). The slot may lag a change in progress, but the scheduler
    /// that looks sets `blocked` (fully ordered) before it looks, and the
    /// watcher publishes with a full barrier before it reads `blocked` (see
    /// [`Watcher::changed`]): it sees the new value here, or the watcher
    /// sees the flag and wakes it.
    ///
    /// With a `hint` (a queue's WAIT), a point on the hinted handle that
    /// its slot shows reached is answered from the page alone, as a woken
    /// host wait's is: each edge of a chain between queues then takes the
    /// table only for its signal, and a wait takes it only to find its
    /// point not reached yet (a signal's raise publishes the value before
    /// anything else). A lookup under the table notes its slot there.
    pub(crate) fn wait_state(
        &self,
        handle: u32,
        value: u64,
        hint: Option<&SlotHint>,
    ) -> Result<WaitState> {
        let hinted = hint.and_then(|h| h.0.get()).filter(|h| h.handle == handle);
        if hinted.is_some_and(|h| self.reached(h.slot, value, h.destroyed)) {
            return Ok(WaitState::Reached);
        }
        {
            let table = self.table.lock();
            let sem = table.sems.get(&handle);
            let slot = match sem {
                Some(sem) => sem.slot,
                None => table.aliases.get(&handle).ok_or(ENOENT)?.slot,
            };
            if let Some(hint) = hint {
                // Read under the table: the slot is the handle's until
                // this count moves.
                let destroyed = self.destroyed.load(Relaxed);
                hint.0.set(Some(Hinted {
                    handle,
                    slot,
                    destroyed,
                }));
            }
            if let Some(sem) = sem {
                return Ok(WaitState::of(sem, value));
            }
            match self.published(slot) {
                uapi::SEM_FAILED_VALUE => {}
                v if v >= value => return Ok(WaitState::Reached),
                _ => return Ok(WaitState::Pending),
            }
        }
        match self.with_sem(handle, |_, sem| Ok(WaitState::of(sem, value))) {
            Err(e) if e == ECANCELED => Ok(WaitState::Failed(ecanceled())),
            state => state,
        }
    }

    /// A SIGNAL_SEMAPHORE packet completed. A value at or below the current
    /// one changes nothing: queue signals only ever raise. ENOENT if the
    /// handle names nothing; an alias whose semaphore is gone is left so.
    pub(crate) fn signal_from_queue(&self, handle: u32, value: u64, wake: &mut Wake<'_>) -> Result {
        let signalled = self.with_sem(handle, |owner, sem| {
            if sem.error == 0 && value > sem.value && value != uapi::SEM_FAILED_VALUE {
                owner.raise(sem, value, wake);
            }
            Ok(())
        });
        match signalled {
            Err(e) if e == ECANCELED => Ok(()),
            result => result,
        }
    }

    /// A queue that was to signal `handle` to `value` faulted, was
    /// destroyed or skipped the signal, with `error`. A value already
    /// reached is not failed: that promise was kept (its signal may have
    /// landed just before the queue stopped), and failing it would fail
    /// waiters that are already satisfied.
    pub(crate) fn fail_from_queue(&self, handle: u32, value: u64, error: u32, wake: &mut Wake<'_>) {
        let _ = self.with_sem(handle, |owner, sem| {
            if sem.error == 0 && sem.value < value {
                owner.mark_failed(sem, error, wake);
            }
            Ok(())
        });
    }

    /// The device is gone: every semaphore not failed yet fails with
    /// `error`, which wakes its waiters. Aliases are other files' to fail.
    pub(crate) fn fail_all(&self, error: u32) {
        let mut table = self.table.lock();
        for (_, sem) in table.sems.iter_mut() {
            if sem.error == 0 {
                self.mark_failed(sem, error, &mut Wake::Now);
            }
        }
        self.unlock(table);
    }

    /// Fails a semaphore that has not failed yet.
    fn mark_failed(&self, sem: &mut Sem, error: u32, wake: &mut Wake<'_>) {
        sem.error = error;
        self.raise(sem, uapi::SEM_FAILED_VALUE, wake);
    }

    /// SEM_QUERY: the value and the failure errno (0 if none).
    pub(crate) fn query(&self, handle: u32) -> Result<(u64, u32)> {
        match self.with_sem(handle, |_, sem| Ok((sem.value, sem.error))) {
            Err(e) if e == ECANCELED => Ok((uapi::SEM_FAILED_VALUE, ecanceled())),
            result => result,
        }
    }

    /// SEM_FAIL: the first failure sticks (an alias whose semaphore is gone
    /// has failed already).
    pub(crate) fn fail(&self, handle: u32, error: u32) -> Result {
        if error == 0 || error > MAX_ERROR {
            return Err(EINVAL);
        }
        let failed = self.with_sem(handle, |owner, sem| {
            if sem.error == 0 {
                owner.mark_failed(sem, error, &mut Wake::Now);
            }
            Ok(())
        });
        match failed {
            Err(e) if e == ECANCELED => Ok(()),
            result => result,
        }
    }

    /// SEM_IMPORT_SYNC_FILE: `handle` advances to `value` when `fence`
    /// signals (or fails with its error).
    pub(crate) fn import(self: &Arc<Self>, handle: u32, value: u64, fence: Fence) -> Result {
        self.with_sem(handle, |_, sem| {
            if value == uapi::SEM_FAILED_VALUE {
                return Err(EINVAL);
            }
            sem.failure().map_or(Ok(()), Err)
        })?;
        sem_import::start(self, handle, value, fence)
    }

    /// An import's fence signalled (`error` if it failed).
    pub(crate) fn complete_import(&self, handle: u32, value: u64, error: Option<Error>) {
        if self.table.lock().closed {
            return;
        }
        // Destroyed meanwhile: nothing to advance.
        let _ = self.with_sem(handle, |owner, sem| {
            if sem.error != 0 {
                return Ok(());
            }
            match error {
                Some(e) => owner.mark_failed(sem, e.to_errno().unsigned_abs(), &mut Wake::Now),
                None if value > sem.value => owner.raise(sem, value, &mut Wake::Now),
                // Already there: an import never lowers a value.
                None => {}
            }
            Ok(())
        });
    }

    pub(crate) fn track_import(&self, import: Arc<FenceImport>) -> Result {
        self.imports.lock().push(import, GFP_KERNEL)?;
        Ok(())
    }

    pub(crate) fn untrack_import(&self, import: &Arc<FenceImport>) {
        self.imports.lock().retain(|i| !Arc::ptr_eq(i, import));
    }

    /// The file is closing: stop imports (waiting for any already handed to
    /// the workqueue, which must not outlive the module), unhook its
    /// aliases, then drop every semaphore, which cancels their exported
    /// fences and their aliases with ECANCELED.
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
        let aliases = core::mem::take(&mut self.table.lock().aliases);
        for (_, alias) in aliases.iter() {
            alias.owner.unwatch(alias.handle, self, alias.slot);
        }
        drop(aliases);
        // Dropped under the lock, as SEM_DESTROY drops one: an alias being
        // destroyed meanwhile then either removes its watcher first or
        // finds the semaphore gone, with its last publish to the alias's
        // slot done, before it frees the slot.
        let mut table = self.table.lock();
        let sems = core::mem::take(&mut table.sems);
        // As SEM_DESTROY counts one: no slot hint outlives them.
        self.destroyed.fetch_add(1, Relaxed);
        drop(sems);
    }

    /// A fence that signals when the semaphore reaches `value` (at once if
    /// it has), with its error if it fails, and ECANCELED if it is
    /// destroyed or its file closes first.
    pub(crate) fn fence(&self, handle: u32, value: u64) -> Result<Fence> {
        self.with_sem(handle, |_, sem| {
            let fence = Fence::new(sem.fence_context, value)?;
            if let Some(e) = sem.failure() {
                fence.signal(Some(e));
            } else if sem.value >= value {
                fence.signal(None);
            } else {
                sem.pending.push((value, fence.clone()), GFP_KERNEL)?;
            }
            Ok(fence)
        })
    }

    /// SEM_WAIT: blocks until all (or any) points are reached, a semaphore
    /// fails or goes, the absolute CLOCK_MONOTONIC `deadline_ns` passes
    /// (ETIME), or a signal comes (ERESTARTSYS: the deadline is absolute, so
    /// a restart is exact). Returns the index for `ANY`, and on failure sets
    /// `*index` to the failed point.
    pub(crate) fn wait(
        &self,
        points: &mut [WaitPoint],
        any: bool,
        deadline_ns: i64,
        index: &mut u32,
    ) -> Result {
        let mut wait = Wait {
            points,
            any,
            deadline_ns,
        };
        let table = self.table.lock();
        if wait
            .points
            .iter()
            .all(|p| table.sems.get(&p.handle).is_some())
        {
            return self.wait_own(table, &mut wait, index);
        }
        drop(table);
        // Counted while it runs: only then do changes move `wake`.
        self.aliased_waits.fetch_add(1, Relaxed);
        let result = self.wait_aliased(&mut wait, index);
        self.aliased_waits.fetch_sub(1, Relaxed);
        result
    }

    /// A wait on this file's own semaphores only: it looks under `table`
    /// alone, and sleeps listed on it. Every change of them is made under
    /// it, so one made after a look finds the wait listed, and wakes it as
    /// it drops the table ([`Semaphores::unlock`]).
    ///
    /// Woken, a wait for one point that reads it reached in the page is done
    /// without taking the table again: the change that reached it uncounted
    /// it (see [`Sem::woken`]). Any other looks again under the table.
    fn wait_own<'a>(
        &'a self,
        mut table: Guard<'a, Table, MutexBackend>,
        wait: &mut Wait<'_>,
        index: &mut u32,
    ) -> Result {
        let mut check = wait.look(true, |h, f| table.visit(h, f))?;
        let result = loop {
            if let Some(result) = check.outcome(index) {
                break result;
            }
            let timeout = match wait.timeout() {
                Ok(timeout) => timeout,
                Err(e) => break Err(e),
            };
            let lone = match &*wait.points {
                [p] => table.sems.get(&p.handle).map(|sem| (sem.slot, p.value)),
                _ => None,
            };
            // Written under the table.
            let destroyed = self.destroyed.load(Relaxed);
            table = match self.table.sleep(table, timeout) {
                Slept::Woken => {
                    if lone.is_some_and(|(slot, value)| self.reached(slot, value, destroyed)) {
                        *index = 0;
                        return Ok(());
                    }
                    self.table.lock()
                }
                Slept::Awake(table) => table,
            };
            if kernel::current!().signal_pending() {
                break Err(ERESTARTSYS);
            }
            check = wait.look(false, |h, f| table.visit(h, f))?;
        };
        wait.uncount(|h, f| table.visit(h, f));
        result
    }

    /// Whether the value published in `slot` reached `value` without
    /// failing, as long as no semaphore was destroyed since `destroyed`
    /// was read: the slot may have a new owner then. Its value was read
    /// with Acquire; one a new owner published comes after the destroy
    /// that freed the slot, so this read sees that destroy counted.
    fn reached(&self, slot: usize, value: u64, destroyed: u64) -> bool {
        let now = self.published(slot);
        now != uapi::SEM_FAILED_VALUE && now >= value && self.destroyed.load(Relaxed) == destroyed
    }

    /// A wait with a point on an alias: it looks at each point under its
    /// owner's table in turn, holding none across them, and sleeps on
    /// `wake` only if no change moved it since it last looked.
    fn wait_aliased(&self, wait: &mut Wait<'_>, index: &mut u32) -> Result {
        let lookup =
            |handle, f: &mut dyn FnMut(&mut Sem)| self.with_sem(handle, |_, sem| Ok(f(sem)));
        // Read before each look: a change after it is seen by that look or
        // moves the count.
        let mut seen = *self.wake.lock();
        // Every handle must be valid when the wait starts.
        let mut check = wait.look(true, lookup)?;
        let result = loop {
            if let Some(result) = check.outcome(index) {
                break result;
            }
            let generation = self.wake.lock();
            let timeout = match wait.timeout() {
                Ok(timeout) => timeout,
                Err(e) => break Err(e),
            };
            // A change since `seen`: look again. Else sleep until one.
            seen = if *generation == seen {
                match self.wake.sleep(generation, timeout) {
                    Slept::Woken => *self.wake.lock(),
                    Slept::Awake(generation) => *generation,
                }
            } else {
                let now = *generation;
                drop(generation);
                now
            };
            if kernel::current!().signal_pending() {
                break Err(ERESTARTSYS);
            }
            // Only the first look can fail.
            check = wait.look(false, lookup).unwrap_or(Check::Pending);
        };
        wait.uncount(lookup);
        result
    }

    /// debugfs `semaphores`: one line of `key=value` pairs per semaphore
    /// and per alias (which says whose semaphore it is).
    pub(crate) fn write_list(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut aliases = KVec::new();
        {
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
            for (handle, alias) in table.aliases.iter() {
                // Out of memory only shortens the list.
                let _ = aliases.push((*handle, alias.owner.clone(), alias.handle), GFP_KERNEL);
            }
        }
        // An alias shows its semaphore's value and error, read under the
        // owner's table once this file's is dropped; its waiters and fences
        // are counted on the semaphore's own line.
        for (handle, owner, target) in aliases {
            let (value, error) = owner
                .with_sem(target, |_, sem| Ok((sem.value, sem.error)))
                .unwrap_or((uapi::SEM_FAILED_VALUE, ecanceled()));
            writeln!(
                f,
                "pid={} sem={handle} value={value} error={error} waiters=0 fences=0 alias_of_pid={} \
                 alias_of_sem={target}",
                self.tgid, owner.tgid
            )?;
        }
        Ok(())
    }

    /// Live semaphores and aliases, for debugfs.
    pub(crate) fn count(&self) -> usize {
        let table = self.table.lock();
        table.sems.iter().count() + table.aliases.iter().count()
    }
}
