// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A lock for the cuda backend's submission path, where one edge between
//! queues takes a queue's lock and a semaphore's timeline: taking it is one
//! atomic compare-exchange and letting go of it a plain release store,
//! where `Mutex` lets go with an atomic swap too (to find sleepers to
//! wake). Each locked instruction there costs as much as a tenth of the
//! HAL's own work per edge (perf on the H100 machine). A waiter spins a
//! little, then yields the CPU until the lock is free: the locks it is used
//! for are held across a driver call or two, rarely contended, and never
//! waited on for long.

use std::{
    cell::UnsafeCell,
    hint::spin_loop,
    ops::{Deref, DerefMut},
    sync::atomic::{AtomicBool, Ordering},
};

/// How many times a waiter checks the lock before it yields between checks.
const SPINS: u32 = 64;

pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, which one thread at a
// time holds; it moves between threads with the lock, so it must be Send.
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// The lock held; let go of when dropped.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub(crate) const fn new(data: T) -> Self {
        Self { locked: AtomicBool::new(false), data: UnsafeCell::new(data) }
    }

    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.wait();
        }
        SpinGuard { lock: self }
    }

    /// Out of line: only a contended lock gets here.
    #[cold]
    fn wait(&self) {
        let mut spins = 0;
        loop {
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS {
                    spins += 1;
                    spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }

    /// The data, with no locking: the caller has the only reference.
    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the
        // data exists until it is dropped.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` makes this reference the only one.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads add to a plain counter under the lock, read and written as
    /// two steps with a yield between: a lock that let two in at once would
    /// lose increments.
    #[test]
    fn holders_exclude_each_other() {
        const THREADS: u64 = 4;
        const ROUNDS: u64 = 2000;
        let counter = SpinLock::new(0u64);
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    for _ in 0..ROUNDS {
                        let mut c = counter.lock();
                        let seen = *c;
                        if seen % 16 == 0 {
                            std::thread::yield_now();
                        }
                        *c = seen + 1;
                    }
                });
            }
        });
        assert_eq!(*counter.lock(), THREADS * ROUNDS);
    }

    /// A guard let go of frees the lock for the next taker, on this thread
    /// and another.
    #[test]
    fn a_dropped_guard_lets_the_next_taker_in() {
        let lock = SpinLock::new(vec![1]);
        lock.lock().push(2);
        std::thread::scope(|scope| {
            scope.spawn(|| lock.lock().push(3));
        });
        assert_eq!(*lock.lock(), [1, 2, 3]);
    }
}
