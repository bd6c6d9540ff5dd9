// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Host-visible memory on a device whose VRAM the CPU cannot map (no
//! `VRAM_MAPPABLE` cap: the VRAM lives in another process, e.g. gluon-sim's,
//! and the kernel refuses MAPPABLE VRAM buffer objects with EOPNOTSUPP).
//!
//! Documentation/design/libradiance.md (`kmod/shadow.rs`) has the rest of its story.

use crate::{
    lock::lock,
    node::{self, BufferObject, Device, Placement},
    Error, Result,
};
use memmap2::MmapMut;
use std::sync::{Arc, Mutex};

/// Packets in the shadow queue's ring: each copy is waited for alone.
const RING_PACKETS: u32 = 16;

/// The backend's own queue for shadow copies, one per device, made on first
/// use (a device whose VRAM the host maps never needs one).
pub(super) struct ShadowQueue {
    device: Arc<Device>,
    /// Every shadow copy of the device, one at a time. `None` until the
    /// first, and again after a copy failed (a faulted queue runs nothing
    /// more: the next copy gets a fresh one).
    queue: Mutex<Option<node::Queue>>,
}

impl ShadowQueue {
    pub(super) fn new(device: Arc<Device>) -> Self {
        Self { device, queue: Mutex::new(None) }
    }

    /// Copies `length` bytes at `offset` from `src` to the same offset of
    /// `dst` and waits until the copy completed.
    fn copy(&self, src: &BufferObject, dst: &BufferObject, offset: u64, length: u64) -> Result<()> {
        let mut slot = lock(&self.queue);
        let queue = match &mut *slot {
            Some(queue) => queue,
            None => slot.insert(self.device.create_queue(RING_PACKETS)?),
        };
        let done = queue.copy(src, offset, dst, offset, length).and_then(|()| queue.finish(None));
        if done.is_err() {
            *slot = None;
        }
        done
    }
}

/// The host's copy of a VRAM buffer object that the CPU cannot map.
pub(super) struct Shadow {
    host: BufferObject,
    map: MmapMut,
    queue: Arc<ShadowQueue>,
    /// Ranges (offset, length) mapped through [`Shadow::map_range`] and not
    /// yet unmapped.
    mapped: Mutex<Vec<(u64, u64)>>,
}

impl Shadow {
    /// A shadow of `size` bytes, whose copies run on `queue`.
    pub(super) fn new(device: &Device, queue: &Arc<ShadowQueue>, size: u64) -> Result<Self> {
        let host = device.create_bo(size, Placement::Host, true)?;
        let map = host.map()?;
        Ok(Self { host, map, queue: Arc::clone(queue), mapped: Mutex::new(Vec::new()) })
    }

    /// Fails if `offset..offset + length` overlaps a range mapped now (no
    /// bytes overlap nothing).
    fn check_unmapped(mapped: &[(u64, u64)], offset: u64, length: u64) -> Result<()> {
        match mapped.iter().find(|&&(o, l)| length != 0 && offset < o + l && o < offset + length) {
            Some((o, l)) => Err(Error::InvalidArgument(format!(
                "bytes {offset}+{length} overlap bytes {o}+{l}, which are mapped: on a device whose memory the \
                 host cannot map, a range is copied back only when it is unmapped"
            ))),
            None => Ok(()),
        }
    }

    /// Copies `length` bytes at `offset` of `vram` into the shadow (a
    /// transfer of zero bytes has no packet: the kernel refuses empty
    /// ranges).
    fn copy_in(&self, vram: &BufferObject, offset: u64, length: u64) -> Result<()> {
        if length == 0 {
            return Ok(());
        }
        self.queue.copy(vram, &self.host, offset, length)
    }

    /// Copies `length` bytes at `offset` of the shadow to `vram`.
    fn copy_out(&self, vram: &BufferObject, offset: u64, length: u64) -> Result<()> {
        if length == 0 {
            return Ok(());
        }
        self.queue.copy(&self.host, vram, offset, length)
    }

    /// Reads `dst.len()` bytes at `offset` of `vram` (in range).
    pub(super) fn read(&self, vram: &BufferObject, offset: u64, dst: &mut [u8]) -> Result<()> {
        let mapped = lock(&self.mapped);
        Self::check_unmapped(&mapped, offset, dst.len() as u64)?;
        self.copy_in(vram, offset, dst.len() as u64)?;
        // SAFETY: in range, as in `write`; the copy that filled these
        // bytes has completed, and this lock keeps other copies out.
        unsafe { std::ptr::copy_nonoverlapping(self.map.as_ptr().add(offset as usize), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Writes `src` at `offset` of `vram` (in range).
    pub(super) fn write(&self, vram: &BufferObject, offset: u64, src: &[u8]) -> Result<()> {
        let mapped = lock(&self.mapped);
        Self::check_unmapped(&mapped, offset, src.len() as u64)?;
        // SAFETY: in range (checked by the public layer; the shadow is at
        // least the buffer's size). The shared mapping is writable; the
        // device reads these bytes only in the copy below, which this lock
        // orders after the write, and no mapping covers them.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.map.as_ptr().cast_mut().add(offset as usize), src.len())
        };
        self.copy_out(vram, offset, src.len() as u64)
    }

    /// Copies `length` bytes at `offset` of `vram` in and returns where
    /// they are, until [`Shadow::unmap_range`] of the same range.
    pub(super) fn map_range(&self, vram: &BufferObject, offset: u64, length: u64) -> Result<*mut u8> {
        let mut mapped = lock(&self.mapped);
        Self::check_unmapped(&mapped, offset, length)?;
        self.copy_in(vram, offset, length)?;
        if length != 0 {
            mapped.push((offset, length));
        }
        Ok(self.map.as_ptr().cast_mut().wrapping_add(offset as usize))
    }

    /// Ends the mapping of `length` bytes at `contents` (as `map_range`
    /// returned it): copies them back to `vram`.
    pub(super) fn unmap_range(&self, vram: &BufferObject, contents: *mut u8, length: u64) -> Result<()> {
        let offset = (contents as usize).wrapping_sub(self.map.as_ptr() as usize) as u64;
        let mut mapped = lock(&self.mapped);
        if length == 0 {
            return Ok(());
        }
        let i = mapped
            .iter()
            .position(|&range| range == (offset, length))
            .ok_or_else(|| Error::InvalidArgument(format!("no mapping of {length} bytes at {contents:p}")))?;
        mapped.swap_remove(i);
        self.copy_out(vram, offset, length)
    }
}

#[cfg(test)]
mod tests {
    use super::Shadow;

    #[test]
    fn a_mapped_range_excludes_exactly_the_ranges_that_overlap_it() {
        let mapped = [(100, 50), (400, 1)];
        for (offset, length) in [(0, 100), (150, 250), (401, 10), (120, 0), (0, 0)] {
            assert!(Shadow::check_unmapped(&mapped, offset, length).is_ok(), "{offset}+{length}");
        }
        for (offset, length) in [(0, 101), (149, 1), (120, 5), (90, 100), (400, 1), (0, 1000)] {
            assert!(Shadow::check_unmapped(&mapped, offset, length).is_err(), "{offset}+{length}");
        }
    }
}
