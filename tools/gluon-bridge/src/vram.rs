// SPDX-License-Identifier: GPL-2.0 OR MIT

//! VRAM in this process, for the models the bridge hosts (model mode and
//! the sim-model): a flat byte array from address 0.

use radiance_gluon::model::MemError;
use std::{cell::RefCell, ops::Range};

/// A device's VRAM.
pub struct Vram(RefCell<Vec<u8>>);

impl Vram {
    /// `size` bytes of zeroed VRAM.
    pub fn new(size: usize) -> Self {
        Self(RefCell::new(vec![0; size]))
    }

    fn range(&self, addr: u64, len: usize) -> Result<Range<usize>, MemError> {
        let start = usize::try_from(addr).map_err(|_| MemError::Vram)?;
        let end = start.checked_add(len).ok_or(MemError::Vram)?;
        if end > self.0.borrow().len() {
            return Err(MemError::Vram);
        }
        Ok(start..end)
    }

    /// `len` bytes at `addr`, to read; `MemError::Vram` outside VRAM.
    pub fn with<T>(&self, addr: u64, len: usize, f: impl FnOnce(&[u8]) -> T) -> Result<T, MemError> {
        let r = self.range(addr, len)?;
        Ok(f(&self.0.borrow()[r]))
    }

    /// `len` bytes at `addr`, to write.
    pub fn with_mut<T>(&self, addr: u64, len: usize, f: impl FnOnce(&mut [u8]) -> T) -> Result<T, MemError> {
        let r = self.range(addr, len)?;
        Ok(f(&mut self.0.borrow_mut()[r]))
    }
}
