// SPDX-License-Identifier: GPL-2.0

//! A bounded first-in first-out queue over one preallocated vector: entries
//! are taken from a read position, and the vector is emptied (keeping its
//! capacity) once everything was taken. For the emulator's command and
//! response FIFOs and the scheduler's commands in flight.

use kernel::prelude::*;

pub(crate) struct Fifo<T> {
    entries: KVec<T>,
    /// Entries before this one were taken.
    head: usize,
}

impl<T> Fifo<T> {
    /// A FIFO with room for `capacity` entries reserved up front.
    pub(crate) fn with_capacity(capacity: usize) -> Result<Self> {
        Ok(Self { entries: KVec::with_capacity(capacity, GFP_KERNEL)?, head: 0 })
    }

    /// Entries not taken yet.
    pub(crate) fn len(&self) -> usize {
        self.entries.len() - self.head
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends an entry; within the reserved capacity it never allocates.
    pub(crate) fn push(&mut self, entry: T) -> Result {
        Ok(self.entries.push(entry, GFP_KERNEL)?)
    }

    /// The oldest entry not taken.
    pub(crate) fn front(&self) -> Option<&T> {
        self.entries.get(self.head)
    }

    /// Takes the oldest entry; dropping the taken ones once all are.
    pub(crate) fn advance(&mut self) {
        self.head += 1;
        if self.head >= self.entries.len() {
            self.clear();
        }
    }

    /// Drops every entry.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.head = 0;
    }

    /// Keeps the entries not taken for which `keep` (called in order, with
    /// mutable access) says so, and drops the rest.
    pub(crate) fn retain_pending(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        let (head, mut i) = (self.head, 0);
        self.entries.retain(|e| {
            let pending = i >= head;
            i += 1;
            pending && keep(e)
        });
        self.head = 0;
    }
}

impl<T: Copy> Fifo<T> {
    /// Takes the oldest entry.
    pub(crate) fn pop(&mut self) -> Option<T> {
        let entry = *self.front()?;
        self.advance();
        Some(entry)
    }
}
