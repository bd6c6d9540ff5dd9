// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Mutex locking without panics.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, ignoring poison: every critical section of the library leaves
/// its data consistent, and library code must not panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
