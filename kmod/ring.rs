// SPDX-License-Identifier: GPL-2.0

//! A first-in first-out queue of at most `N` entries, held inline: no
//! allocation, and taking the oldest moves nothing. For the other devices'
//! schedulers a pass hands over to, a few at most, on the worker's stack:
//! a chain between two devices takes one from the front and puts one at the
//! back per edge.

use kernel::prelude::kunit_tests;

pub(crate) struct Ring<T, const N: usize> {
    slots: [Option<T>; N],
    /// The oldest entry's slot.
    head: usize,
    len: usize,
}

impl<T, const N: usize> Ring<T, N> {
    pub(crate) fn new() -> Self {
        const { assert!(N > 0) };
        Self {
            slots: core::array::from_fn(|_| None),
            head: 0,
            len: 0,
        }
    }

    /// Appends `value`, or hands it back if the ring is full.
    pub(crate) fn push(&mut self, value: T) -> Result<(), T> {
        if self.len == N {
            return Err(value);
        }
        match self.slots.get_mut((self.head + self.len) % N) {
            Some(slot) => *slot = Some(value),
            // `% N` is in bounds.
            None => return Err(value),
        }
        self.len += 1;
        Ok(())
    }

    /// Takes the oldest entry.
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let value = self.slots.get_mut(self.head)?.take();
        self.head = (self.head + 1) % N;
        self.len -= 1;
        value
    }

    /// The entries, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).filter_map(move |i| self.slots.get((self.head + i) % N)?.as_ref())
    }
}

#[kunit_tests(radiance_ring)]
mod tests {
    use super::*;

    #[test]
    fn takes_in_order_across_the_end() {
        let mut r = Ring::<u32, 3>::new();
        assert_eq!(r.pop(), None);
        for round in 0..4u32 {
            // Two in, one out: the slots wrap around every round.
            assert_eq!(r.push(round * 10), Ok(()));
            assert_eq!(r.push(round * 10 + 1), Ok(()));
            assert_eq!(r.pop(), Some(round * 10));
            assert!(r.iter().eq([round * 10 + 1].iter()));
            assert_eq!(r.pop(), Some(round * 10 + 1));
        }
        assert_eq!(r.pop(), None);
    }

    #[test]
    fn full_hands_the_entry_back() {
        let mut r = Ring::<u32, 2>::new();
        assert_eq!(r.push(1), Ok(()));
        assert_eq!(r.push(2), Ok(()));
        assert_eq!(r.push(3), Err(3));
        assert_eq!(r.iter().sum::<u32>(), 3);
        assert_eq!(r.pop(), Some(1));
        assert_eq!(r.push(3), Ok(()));
        assert!(r.iter().eq([2, 3].iter()));
    }
}
