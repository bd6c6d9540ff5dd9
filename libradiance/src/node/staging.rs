// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Host memory that UPDATE data and LAUNCH blocks are staged in: one buffer
//! object per queue, mapped once and reused as the packets that read it
//! complete, so that staging bytes costs no system call.

use super::{BufferObject, Device, Placement};
use crate::{Error, Result};
use memmap2::MmapMut;
use std::collections::VecDeque;

pub(super) struct StagingRing {
    bo: BufferObject,
    map: MmapMut,
    /// Bytes handed out and given back so far, free-running: the live
    /// bytes are `tail..head`, at those positions modulo the size.
    head: u64,
    tail: u64,
    /// In order, for each packet that reads staged bytes: the ring index
    /// after it, and `head` once its bytes were staged.
    live: VecDeque<(u64, u64)>,
}

impl StagingRing {
    /// A ring of `size` bytes (a multiple of the page size).
    pub(super) fn new(device: &Device, size: u64) -> Result<Self> {
        let bo = device.create_bo(size, Placement::Host, true)?;
        let map = bo.map()?;
        Ok(Self { bo, map, head: 0, tail: 0, live: VecDeque::new() })
    }

    /// The buffer object packets name.
    pub(super) fn bo(&self) -> &BufferObject {
        &self.bo
    }

    /// Gives back the bytes of the packets among the first `completed`.
    pub(super) fn retire(&mut self, completed: u64) {
        while let Some(&(end, head)) = self.live.front() {
            if end > completed {
                break;
            }
            self.tail = head;
            self.live.pop_front();
        }
    }

    /// Copies `bytes` in, within one page if `one_page` (launch blocks
    /// must be), and returns their offset in the buffer object; `None` if
    /// they do not fit now.
    pub(super) fn stage(&mut self, bytes: &[u8], one_page: bool) -> Option<u64> {
        let (size, len, page) = (self.map.len() as u64, bytes.len() as u64, rustix::param::page_size() as u64);
        if len == 0 || len > size || (one_page && len > page) {
            return None;
        }
        let mut at = self.head;
        if one_page && at % page + len > page {
            at = at.next_multiple_of(page);
        }
        // Never wrapped inside: a packet reads one contiguous range.
        if at % size + len > size {
            at = at.next_multiple_of(size);
        }
        if at + len - self.tail > size {
            return None;
        }
        let offset = at % size;
        self.map[offset as usize..(offset + len) as usize].copy_from_slice(bytes);
        self.head = at + len;
        Some(offset)
    }

    /// Overwrites bytes staged at `offset` (before any packet reads them).
    pub(super) fn rewrite(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let range = offset as usize..offset as usize + bytes.len();
        self.map.get_mut(range).ok_or_else(|| Error::InvalidArgument("staged bytes".into()))?.copy_from_slice(bytes);
        Ok(())
    }

    /// The bytes staged so far are read by packets before ring index
    /// `end`: they are given back once that many packets completed.
    pub(super) fn keep_until(&mut self, end: u64) {
        self.live.push_back((end, self.head));
    }
}
