// SPDX-License-Identifier: GPL-2.0

//! Which host memory a device may reach: the ranges DMA-mapped for it now.
//!
//! A device on a bus reaches host memory by DMA, and an IOMMU (or the DMA
//! mask) is what confines it. A device served by a process reaches it
//! through the kernel instead ([`super::user`]), so the kernel is the
//! IOMMU: every range mapped for such a device opens a [`Window`] here for
//! as long as it is mapped, and each access the server asks for must lie
//! inside one window.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

/// The open windows of one device. The lock is held across each access
/// (see [`HostWindows::with_run`]), so a window cannot close, and its memory
/// be unmapped, while the server's bytes move.
#[pin_data]
pub(crate) struct HostWindows {
    /// `(DMA address, length)` of every open window's segments; a range
    /// mapped twice is listed twice.
    /// Lock order: level 7 (Documentation/design/locking.md).
    #[pin]
    ranges: Mutex<KVec<(u64, u64)>>,
}

/// One mapping's segments, reachable until dropped.
pub(crate) struct Window {
    windows: Arc<HostWindows>,
    segments: KVec<(u64, u64)>,
}

impl HostWindows {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                ranges <- new_mutex!(KVec::new(), "HostWindows::ranges"),
            }),
            GFP_KERNEL,
        )
    }

    /// Opens a window on `segments` (`(DMA address, length)`), until the
    /// returned [`Window`] is dropped.
    pub(crate) fn open(
        this: &Arc<Self>,
        segments: impl Iterator<Item = (u64, u64)>,
    ) -> Result<Window> {
        let mut own = KVec::new();
        for s in segments {
            own.push(s, GFP_KERNEL)?;
        }
        let mut ranges = this.ranges.lock();
        ranges.extend_from_slice(&own, GFP_KERNEL)?;
        Ok(Window {
            windows: this.clone(),
            segments: own,
        })
    }

    /// Runs `access(n)` over the longest run `[addr, addr + n)`, `n <= len`,
    /// that lies inside one open window, keeping every window open until it
    /// returns; EFAULT if no window holds `addr`.
    pub(crate) fn with_run<T>(
        &self,
        addr: u64,
        len: u64,
        access: impl FnOnce(u64) -> Result<T>,
    ) -> Result<T> {
        let ranges = self.ranges.lock();
        let n = ranges
            .iter()
            .filter(|&&(a, l)| a <= addr && addr < a.saturating_add(l))
            .map(|&(a, l)| (a.saturating_add(l) - addr).min(len))
            .max()
            .filter(|&n| n > 0)
            .ok_or(EFAULT)?;
        let result = access(n);
        drop(ranges);
        result
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        let mut ranges = self.windows.ranges.lock();
        for s in self.segments.iter() {
            if let Some(i) = ranges.iter().position(|r| r == s) {
                let _ = ranges.remove(i);
            }
        }
    }
}
