// SPDX-License-Identifier: GPL-2.0

//! A lock whose holders sleep until another holder wakes them, listed
//! under the lock itself.
//!
//! 7.3's [`kernel::sync::CondVar`] queues its sleepers on a wait queue,
//! whose own lock the sleeper takes to queue and the waker to wake, and it
//! takes the caller's lock back before it returns. A semaphore wait (see
//! `Semaphores::wait`) already holds the lock its waker changes things
//! under, and one that finds its point reached on waking needs no lock at
//! all; on a lockdep kernel each of those acquisitions is a good part of a
//! wake-up's cost. Here a sleeper lists itself under the lock and is
//! marked woken under it, with the protocol of `wait_woken()`, and is not
//! given the lock back when woken. [`SleepLock::unlock_waking`] wakes the
//! tasks once the lock is dropped, as `futex_wake()` does with a `wake_q`:
//! woken under it on a kernel that preempts at once (`CONFIG_PREEMPT`), a
//! task runs before its waker has dropped the lock, and the next thing it
//! does may be to take it. This file is the small wrapper over
//! `kernel::bindings` that does it.

use core::{
    cell::UnsafeCell,
    ptr::{
        self,
        null_mut, //
    },
};
use kernel::{
    bindings,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{
            Acquire,
            Atomic,
            Relaxed,
            Release, //
        },
        barrier::{
            smp_mb,
            Full, //
        },
        lock::{
            Backend,
            Guard,
            Lock, //
        },
    },
    task::{
        Task,
        MAX_SCHEDULE_TIMEOUT, //
    },
    time::Jiffies,
    types::Opaque,
};

/// A [`Lock`] and the tasks asleep in [`SleepLock::sleep`] until a holder
/// wakes them ([`SleepLock::wake_all`], [`SleepLock::unlock_waking`]).
#[pin_data]
pub(crate) struct SleepLock<T, B: Backend> {
    #[pin]
    lock: Lock<T, B>,
    /// The last sleeper listed, which links to the one before (null: none).
    /// Read and written only under `lock`.
    sleepers: UnsafeCell<*mut Sleeper>,
}

// SAFETY: as `Lock`'s: the data it protects moves with it; the sleepers
// are tasks asleep in `sleep`, reached only under the lock.
unsafe impl<T: Send, B: Backend> Send for SleepLock<T, B> {}
// SAFETY: as `Lock`'s; `sleepers` is read and written only under the lock.
unsafe impl<T: Send, B: Backend> Sync for SleepLock<T, B> {}

/// A task listed on a [`SleepLock`], on its own stack in
/// [`SleepLock::sleep`].
///
/// # Invariants
///
/// While listed it is valid and does not move: `sleep` returns only once
/// a waker has set `unlisted` (its last access), or once the sleeper has
/// unlisted itself under the lock. Its entry's `private` is its task.
struct Sleeper {
    /// Its `private` is the task; the waker sets `WQ_FLAG_WOKEN` in its
    /// `flags` before it wakes the task (as `woken_wake_function()` does).
    entry: Opaque<bindings::wait_queue_entry>,
    /// The sleeper listed before it; written under the lock.
    next: UnsafeCell<*mut Sleeper>,
    /// Set by a waker once it has unlisted it and marked it woken:
    /// its last access, after which the task may leave `sleep`.
    unlisted: Atomic<i32>,
}

/// How many sleepers [`SleepLock::unlock_waking`] wakes once the lock is
/// dropped (a reference to each task on its stack); any more are woken
/// under the lock. A semaphore change mostly wakes one.
const WOKEN_AFTER_UNLOCK: usize = 4;

/// How [`SleepLock::sleep`] came back.
pub(crate) enum Slept<'a, T, B: Backend> {
    /// Woken by a holder of the lock; the lock is not held.
    Woken,
    /// Back without being woken (its timeout, a signal, a stray wake-up),
    /// with the lock held again.
    Awake(Guard<'a, T, B>),
}

impl<T, B: Backend> SleepLock<T, B> {
    /// `lock`, with no sleeper.
    pub(crate) fn new(lock: impl PinInit<Lock<T, B>>) -> impl PinInit<Self> {
        pin_init!(Self {
            lock <- lock,
            sleepers: UnsafeCell::new(null_mut()),
        })
    }

    /// Takes the lock.
    pub(crate) fn lock(&self) -> Guard<'_, T, B> {
        self.lock.lock()
    }

    /// Whether `guard` holds this lock.
    fn holds(&self, guard: &Guard<'_, T, B>) -> bool {
        ptr::eq(guard.lock_ref(), &self.lock)
    }

    /// Lists the current task, drops `guard` and sleeps until a holder of
    /// the lock wakes it, `timeout` passes (None:
    /// none) or a signal comes. A holder that changes what the caller saw
    /// under the lock and then wakes finds it listed. A guard of another
    /// lock is given back at once.
    pub(crate) fn sleep<'a>(
        &'a self,
        guard: Guard<'a, T, B>,
        timeout: Option<Jiffies>,
    ) -> Slept<'a, T, B> {
        if !self.holds(&guard) {
            return Slept::Awake(guard);
        }
        let timeout = timeout.map_or(MAX_SCHEDULE_TIMEOUT, |j| {
            j.try_into().unwrap_or(MAX_SCHEDULE_TIMEOUT)
        });
        let sleeper = Sleeper {
            entry: Opaque::uninit(),
            next: UnsafeCell::new(null_mut()),
            unlisted: Atomic::new(0),
        };
        // Written through only in its `UnsafeCell`s (and atomically).
        let me = ptr::from_ref(&sleeper).cast_mut();
        // SAFETY: `entry` is valid for writes; `init_wait` makes the
        // current task its `private`.
        unsafe { bindings::init_wait(sleeper.entry.get()) };
        // Not moved, and not left before it is unlisted (below).
        // SAFETY: `guard` holds this lock, under which `sleepers` is read
        // and written; `sleeper` meets `Sleeper`'s invariants.
        unsafe {
            *sleeper.next.get() = *self.sleepers.get();
            *self.sleepers.get() = me;
        }
        drop(guard);
        // `wait_woken` sets the task's state, then sleeps unless
        // `WQ_FLAG_WOKEN` is set: a waker that sets it, then wakes, is not lost.
        // SAFETY: `entry` is initialised and outlives the call.
        unsafe { bindings::wait_woken(sleeper.entry.get(), bindings::TASK_INTERRUPTIBLE, timeout) };
        if sleeper.unlisted.load(Acquire) != 0 {
            return Slept::Woken;
        }
        let guard = self.lock.lock();
        // Unlisted meanwhile by a waker that held the lock: read under it.
        if sleeper.unlisted.load(Relaxed) == 0 {
            // SAFETY: `guard` holds this lock; `me` is listed.
            unsafe { self.unlist(me) };
        }
        Slept::Awake(guard)
    }

    /// Wakes every task asleep in [`SleepLock::sleep`]; `guard` must hold
    /// this lock (a guard of another wakes none).
    pub(crate) fn wake_all(&self, guard: &Guard<'_, T, B>) {
        if self.holds(guard) {
            // SAFETY: `guard` holds this lock.
            unsafe { self.wake_listed(&mut []) };
        }
    }

    /// Drops `guard`, waking every task asleep in [`SleepLock::sleep`]
    /// once it is dropped (see the module's documentation); a guard of
    /// another lock is dropped and wakes none. A task that has left
    /// `sleep` meanwhile (it saw the mark) gets a stray wake-up wherever it
    /// sleeps next, which every sleep in the kernel allows, as with a
    /// `wake_q`.
    pub(crate) fn unlock_waking(&self, guard: Guard<'_, T, B>) {
        let mut later: [Option<ARef<Task>>; WOKEN_AFTER_UNLOCK] = Default::default();
        if self.holds(&guard) {
            // SAFETY: `guard` holds this lock.
            unsafe { self.wake_listed(&mut later) };
        }
        drop(guard);
        for task in later.iter().flatten() {
            task.wake_up();
        }
    }

    /// Unlists every sleeper and marks it woken: the first `later.len()`
    /// with a reference to their task put in `later`, for the caller to
    /// wake, the others woken now.
    ///
    /// # Safety
    ///
    /// The caller holds this lock.
    unsafe fn wake_listed(&self, later: &mut [Option<ARef<Task>>]) {
        let mut later = later.iter_mut();
        // SAFETY: the caller holds this lock.
        let mut next = unsafe { core::mem::replace(&mut *self.sleepers.get(), null_mut()) };
        while !next.is_null() {
            let sleeper = next;
            // SAFETY: listed, under the lock the caller holds: valid until
            // the store to `unlisted`, its last access (`Sleeper`'s invariants).
            let entry = unsafe {
                next = *(*sleeper).next.get();
                (*sleeper).entry.get()
            };
            match later.next() {
                Some(slot) => {
                    // As `woken_wake_function` marks it before the wake-up:
                    // `wait_woken` then either sees the flag and does not
                    // sleep, or sleeps and is woken.
                    smp_mb(Full);
                    // SAFETY: `entry` is valid (above); its `private` is the
                    // sleeper's task, alive while the sleeper is listed.
                    let task = unsafe {
                        (*entry).flags |= bindings::WQ_FLAG_WOKEN;
                        &*(*entry).private.cast::<Task>()
                    };
                    // Kept for the wake-up after the unlock, when the
                    // sleeper may have left `sleep`.
                    *slot = Some(task.into());
                }
                None => {
                    // `woken_wake_function` sets `WQ_FLAG_WOKEN`, as
                    // `wait_woken` expects, and wakes the entry's task.
                    // SAFETY: `entry` is valid (above).
                    unsafe {
                        bindings::woken_wake_function(entry, bindings::TASK_NORMAL, 0, null_mut())
                    };
                }
            }
            // SAFETY: valid (above); the last access, after which the task
            // may leave `sleep`.
            unsafe { (*sleeper).unlisted.store(1, Release) };
        }
    }

    /// Takes `me` off the list.
    ///
    /// # Safety
    ///
    /// The caller holds this lock, and `me` is listed.
    unsafe fn unlist(&self, me: *mut Sleeper) {
        let mut link = self.sleepers.get();
        // SAFETY: under the lock (the caller's contract) every listed
        // sleeper is valid, and so is each `next` link of the list.
        unsafe {
            while !(*link).is_null() {
                if *link == me {
                    *link = *(*me).next.get();
                    return;
                }
                link = (**link).next.get();
            }
        }
    }
}
