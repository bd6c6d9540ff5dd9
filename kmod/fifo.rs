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
        Ok(Self {
            entries: KVec::with_capacity(capacity, GFP_KERNEL)?,
            head: 0,
        })
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

    /// The oldest entry not taken, to change it.
    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        self.entries.get_mut(self.head)
    }

    /// The entry after the oldest one not taken.
    pub(crate) fn second(&self) -> Option<&T> {
        self.entries.get(self.head + 1)
    }

    /// Takes the entry after the oldest one not taken, out of turn.
    pub(crate) fn take_second(&mut self) -> Option<T> {
        self.entries.remove(self.head + 1).ok()
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

#[kunit_tests(radiance_fifo)]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out() -> Result {
        let mut fifo = Fifo::with_capacity(4)?;
        assert!(fifo.is_empty());
        for v in 1..=3u32 {
            fifo.push(v)?;
        }
        assert_eq!(fifo.len(), 3);
        assert_eq!(fifo.front().copied(), Some(1));
        assert_eq!(fifo.pop(), Some(1));
        assert_eq!(fifo.pop(), Some(2));
        fifo.push(4)?;
        assert_eq!(fifo.pop(), Some(3));
        assert_eq!(fifo.pop(), Some(4));
        assert_eq!(fifo.pop(), None);
        assert!(fifo.is_empty());
        Ok(())
    }

    #[test]
    fn keeps_its_capacity_once_drained() -> Result {
        let mut fifo = Fifo::with_capacity(2)?;
        fifo.push(1u8)?;
        fifo.push(2)?;
        fifo.advance();
        fifo.advance();
        // Drained: the vector was emptied, so two more fit without growing.
        assert_eq!(fifo.entries.len(), 0);
        fifo.push(3)?;
        fifo.push(4)?;
        assert_eq!(fifo.entries.capacity(), 2);
        fifo.clear();
        assert!(fifo.is_empty());
        Ok(())
    }

    #[test]
    fn the_second_entry_can_go_first() -> Result {
        let mut fifo = Fifo::with_capacity(4)?;
        for v in 1..=3u32 {
            fifo.push(v)?;
        }
        fifo.advance();
        assert_eq!(fifo.second().copied(), Some(3));
        assert_eq!(fifo.take_second(), Some(3));
        assert_eq!(fifo.second(), None);
        assert_eq!(fifo.take_second(), None);
        assert_eq!(fifo.pop(), Some(2));
        assert!(fifo.is_empty());
        Ok(())
    }

    #[test]
    fn retain_drops_taken_and_rejected_entries() -> Result {
        let mut fifo = Fifo::with_capacity(8)?;
        for v in 0..6u32 {
            fifo.push(v)?;
        }
        fifo.advance();
        // Taken: 0. Kept: the odd ones of 1..6, doubled on the way.
        fifo.retain_pending(|v| {
            *v *= 2;
            *v % 4 == 2
        });
        assert_eq!(fifo.len(), 3);
        assert_eq!(fifo.pop(), Some(2));
        assert_eq!(fifo.pop(), Some(6));
        assert_eq!(fifo.pop(), Some(10));
        assert!(fifo.is_empty());
        Ok(())
    }
}
