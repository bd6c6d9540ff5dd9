// SPDX-License-Identifier: GPL-2.0

//! Host memory at a DMA address, mapped into the kernel: how a device that
//! the kernel stands in for (the emulator, a process's server) reaches host
//! memory the way its DMA would.
//!
//! These devices have no IOMMU (dma-direct), so a DMA address is a
//! physical address, which `memremap` maps (a swiotlb bounce buffer is
//! physical memory too).

use kernel::{
    bindings,
    prelude::*, //
};

/// A kernel mapping of host memory at a DMA address.
///
/// # Invariants
///
/// `ptr` maps `len` bytes of host memory until `self` is dropped.
pub(crate) struct HostMap {
    ptr: *mut u8,
    len: usize,
}

impl HostMap {
    /// Maps `len` bytes at DMA address `addr`; EFAULT if that is not RAM.
    pub(crate) fn new(addr: u64, len: u32) -> Result<Self> {
        let write_back = bindings::MEMREMAP_WB as c_ulong;
        // SAFETY: `memremap` accepts any range and fails cleanly for one that is not RAM; a mapping
        // is valid until `memunmap`.
        let ptr = unsafe { bindings::memremap(addr, len as usize, write_back) };
        if ptr.is_null() {
            return Err(EFAULT);
        }
        // INVARIANT: mapped above for `len` bytes.
        Ok(Self {
            ptr: ptr.cast(),
            len: len as usize,
        })
    }

    /// The mapping's first byte, valid for the `len` bytes [`HostMap::new`]
    /// mapped while `self` lives.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Writes `src` at byte `at` of the mapping; EINVAL past its end.
    pub(crate) fn write(&self, at: usize, src: &[u8]) -> Result {
        if at.checked_add(src.len()).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: `[at, at + src.len())` lies in the mapping (checked on entry; type invariant), and
        // the host memory is the device's to write while it runs the command: no Rust code reads it.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(at), src.len()) };
        Ok(())
    }

    /// Reads `dst.len()` bytes at byte `at` of the mapping; EINVAL past its
    /// end.
    pub(crate) fn read(&self, at: usize, dst: &mut [u8]) -> Result {
        if at.checked_add(dst.len()).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: `[at, at + dst.len())` lies in the mapping (checked on entry; type invariant), and
        // the host memory is the device's to read while it runs the command.
        unsafe { core::ptr::copy_nonoverlapping(self.ptr.add(at), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `len` bytes at byte `at` of the mapping to the user address
    /// `dst` of the current process, without taking a page fault (so that
    /// it may run under locks a fault must not take): `Ok(false)` if some
    /// page of `dst` was not there to be written, when the caller copies by
    /// a path that may fault. EINVAL past the mapping's end.
    pub(crate) fn to_user_nofault(&self, at: usize, dst: usize, len: usize) -> Result<bool> {
        if at.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: `[at, at + len)` is in the mapping (checked; type invariant), the device's to
        // read now; `copy_to_user_nofault` checks `dst`: fails, never faults, on a missing page.
        let left = unsafe {
            bindings::copy_to_user_nofault(dst as *mut c_void, self.ptr.add(at).cast(), len)
        };
        Ok(left == 0)
    }

    /// Copies `len` bytes from the user address `src` of the current
    /// process to byte `at` of the mapping, as [`HostMap::to_user_nofault`]
    /// does the other way.
    pub(crate) fn from_user_nofault(&self, at: usize, src: usize, len: usize) -> Result<bool> {
        if at.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(EINVAL);
        }
        // SAFETY: `[at, at + len)` is in the mapping (checked; type invariant), the device's to
        // write now; `copy_from_user_nofault` checks `src`: fails, never faults, on a missing page.
        let left = unsafe {
            bindings::copy_from_user_nofault(self.ptr.add(at).cast(), src as *const c_void, len)
        };
        Ok(left == 0)
    }
}

impl Drop for HostMap {
    fn drop(&mut self) {
        // SAFETY: mapped by `memremap` in `new`.
        unsafe { bindings::memunmap(self.ptr.cast()) };
    }
}
