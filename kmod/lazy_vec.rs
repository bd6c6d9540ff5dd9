// SPDX-License-Identifier: GPL-2.0

//! A vector that calls the allocator only once something is pushed onto
//! it. The kernel's `KVec` frees through `krealloc` when dropped even if it
//! never allocated: an out-of-line call to `krealloc` and `kfree` per
//! drop. A packet's translation has three vectors that a semaphore packet
//! leaves empty, and a scheduler pass makes and drops them for every
//! packet it looks at, taken or blocked.

use core::ops::Deref;
use kernel::{
    alloc::{AllocError, Flags},
    prelude::*,
};

pub(crate) struct LazyVec<T>(Option<KVec<T>>);

/// Room the first push makes: a packet holds a few BOs (a launch up to
/// five), which then go in with no `krealloc` (a `KVec` grows by one at
/// first).
const FIRST: usize = 4;

impl<T> LazyVec<T> {
    pub(crate) const fn new() -> Self {
        Self(None)
    }

    pub(crate) fn push(&mut self, value: T, flags: Flags) -> Result<(), AllocError> {
        match &mut self.0 {
            Some(v) => v.push(value, flags),
            None => {
                let mut v = KVec::with_capacity(FIRST, flags)?;
                v.push(value, flags)?;
                self.0 = Some(v);
                Ok(())
            }
        }
    }
}

impl<T> Deref for LazyVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.0.as_deref().unwrap_or(&[])
    }
}

#[kunit_tests(radiance_lazy_vec)]
mod tests {
    use super::*;

    #[test]
    fn allocates_only_once_pushed_to() -> Result {
        let mut v = LazyVec::new();
        assert!(v.is_empty());
        assert!(v.0.is_none());
        v.push(1u32, GFP_KERNEL)?;
        let first = v.as_ptr();
        v.push(2, GFP_KERNEL)?;
        assert_eq!(&v[..], &[1, 2]);
        // The room made at the first push took the second.
        assert_eq!(v.as_ptr(), first);
        assert_eq!(v.get(1).copied(), Some(2));
        assert_eq!(v.iter().sum::<u32>(), 3);
        Ok(())
    }
}
