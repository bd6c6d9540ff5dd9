// SPDX-License-Identifier: GPL-2.0

//! The VRAM range allocator.
//!
//! Free space is kept twice, in two red-black trees: by address (to merge a
//! freed range with its free neighbours) and by (size, address) (best fit:
//! the smallest free block that holds the request, lowest address first).
//! Both operations are O(log n) in the number of free blocks.
//!
//! Every allocation carries the tree nodes its range will need when it is
//! freed, so freeing never allocates and cannot fail. The owner scrubs
//! (zeroes) a range through the device before it frees it, so no process
//! ever reads what another left in VRAM; the allocator itself knows only
//! numbers, and imports nothing else of the driver.

use kernel::{
    new_mutex,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::Mutex,
};

/// The smallest unit of VRAM handed out, and the minimum alignment.
pub(crate) const GRANULE: u64 = 256;

/// VRAM below this address is never allocated: it is kept for the command
/// processor's own use, and it keeps address 0 from ever naming a buffer.
pub(crate) const RESERVED: u64 = 64 * 1024;

/// A free block's key in the by-size tree.
type SizeKey = (u64, u64);

/// An allocated VRAM range. Give it back with [`Vram::free`].
pub(crate) struct VramRange {
    addr: u64,
    size: u64,
    /// The nodes the range's free block will need in each tree.
    by_addr_node: RBTreeNodeReservation<u64, u64>,
    by_size_node: RBTreeNodeReservation<SizeKey, ()>,
}

impl VramRange {
    /// The device address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// Bytes, a multiple of [`GRANULE`].
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}

/// VRAM use, for debugfs and `radctl mem`.
#[derive(Clone, Copy, Default)]
pub(crate) struct VramStats {
    /// Allocatable bytes (VRAM less [`RESERVED`]).
    pub(crate) total: u64,
    pub(crate) used: u64,
    pub(crate) largest_free: u64,
    pub(crate) free_blocks: u64,
    pub(crate) allocations: u64,
}

struct FreeSpace {
    /// start -> size.
    by_addr: RBTree<u64, u64>,
    /// (size, start).
    by_size: RBTree<SizeKey, ()>,
    stats: VramStats,
}

impl FreeSpace {
    /// Adds a free block, using the caller's tree nodes.
    fn insert(
        &mut self,
        addr: u64,
        size: u64,
        by_addr: RBTreeNodeReservation<u64, u64>,
        by_size: RBTreeNodeReservation<SizeKey, ()>,
    ) {
        self.by_addr.insert(by_addr.into_node(addr, size));
        self.by_size.insert(by_size.into_node((size, addr), ()));
        self.stats.free_blocks += 1;
    }

    /// Removes the free block at `addr` of `size` bytes and returns its nodes.
    fn remove(
        &mut self,
        addr: u64,
        size: u64,
    ) -> Option<(
        RBTreeNodeReservation<u64, u64>,
        RBTreeNodeReservation<SizeKey, ()>,
    )> {
        let a = self.by_addr.remove_node(&addr)?;
        let s = self.by_size.remove_node(&(size, addr))?;
        self.stats.free_blocks -= 1;
        Some((a.into_reservation(), s.into_reservation()))
    }

    /// The best-fitting free block for `size` bytes at `align`: its start,
    /// size and the aligned address inside it.
    fn find(&self, size: u64, align: u64) -> Option<(u64, u64, u64)> {
        let fits = |&(len, start): &SizeKey| {
            let aligned = start.next_multiple_of(align);
            (aligned + size <= start + len).then_some((start, len, aligned))
        };
        // The smallest block that is big enough fits unless alignment eats
        // into it; a block `align - GRANULE` bigger always fits.
        let first = self.by_size.cursor_lower_bound(&(size, 0))?;
        fits(first.current().0).or_else(|| {
            let cursor = self
                .by_size
                .cursor_lower_bound(&(size + align - GRANULE, 0))?;
            fits(cursor.current().0)
        })
    }

    /// Takes `[addr, addr + size)` out of free block `block` (its start and
    /// length, which hold the range), leaving what is left on either side
    /// free with the nodes `front` and `tail`; the range keeps the block's
    /// own nodes for when it is freed.
    fn take(
        &mut self,
        block: (u64, u64),
        addr: u64,
        size: u64,
        front: NodePair,
        tail: NodePair,
    ) -> Result<VramRange> {
        let (start, len) = block;
        let (by_addr_node, by_size_node) = self.remove(start, len).ok_or(EINVAL)?;
        if addr > start {
            self.insert(start, addr - start, front.0, front.1);
        }
        if addr + size < start + len {
            self.insert(addr + size, start + len - addr - size, tail.0, tail.1);
        }
        self.stats.used += size;
        self.stats.allocations += 1;
        self.refresh_largest();
        Ok(VramRange {
            addr,
            size,
            by_addr_node,
            by_size_node,
        })
    }

    fn refresh_largest(&mut self) {
        self.stats.largest_free = self.by_size.cursor_back().map_or(0, |c| c.current().0 .0);
    }
}

/// Tree nodes for one free block.
type NodePair = (
    RBTreeNodeReservation<u64, u64>,
    RBTreeNodeReservation<SizeKey, ()>,
);

fn node_pair() -> Result<NodePair> {
    Ok((
        RBTreeNodeReservation::new(GFP_KERNEL)?,
        RBTreeNodeReservation::new(GFP_KERNEL)?,
    ))
}

/// One device's VRAM.
#[pin_data]
pub(crate) struct Vram {
    /// Lock order: level 6 (Documentation/design/locking.md).
    #[pin]
    free: Mutex<FreeSpace>,
}

impl Vram {
    /// Manages `[RESERVED, size)` of a device's VRAM, all free.
    pub(crate) fn new(size: u64) -> Result<impl PinInit<Self, Error>> {
        let total = size
            .checked_sub(RESERVED)
            .filter(|&t| t >= GRANULE)
            .ok_or(EINVAL)?;
        let mut space = FreeSpace {
            by_addr: RBTree::new(),
            by_size: RBTree::new(),
            stats: VramStats {
                total,
                ..Default::default()
            },
        };
        let (a, s) = node_pair()?;
        space.insert(RESERVED, total, a, s);
        space.refresh_largest();
        Ok(try_pin_init!(Self { free <- new_mutex!(space, "Vram::free") }? Error))
    }

    /// Allocates `size` bytes (rounded up to [`GRANULE`]) at a multiple of
    /// `align` (a power of two, at least [`GRANULE`]). ENOMEM when no free
    /// block is big enough.
    pub(crate) fn alloc(&self, size: u64, align: u64) -> Result<VramRange> {
        if size == 0 || !align.is_power_of_two() || align < GRANULE {
            return Err(EINVAL);
        }
        let size = size.checked_next_multiple_of(GRANULE).ok_or(EINVAL)?;
        // Splitting a block can leave a free block on each side of the
        // allocation. The allocation keeps the taken block's nodes (for its
        // own free); the sides get nodes allocated here, before the lock, so
        // nothing changes if an allocation fails. Unused ones are dropped.
        let front = node_pair()?;
        let tail = node_pair()?;

        let mut free = self.free.lock();
        let (start, len, addr) = free.find(size, align).ok_or(ENOMEM)?;
        free.take((start, len), addr, size, front, tail)
    }

    /// Allocates `[addr, addr + size)` (`size` rounded up to [`GRANULE`]),
    /// `addr` a multiple of `align` (a power of two, at least
    /// [`GRANULE`]). EBUSY if any of it is taken; EINVAL if it is not all
    /// allocatable VRAM or `addr` is misaligned.
    pub(crate) fn alloc_at(&self, addr: u64, size: u64, align: u64) -> Result<VramRange> {
        if size == 0 || !align.is_power_of_two() || align < GRANULE || addr % align != 0 {
            return Err(EINVAL);
        }
        let size = size.checked_next_multiple_of(GRANULE).ok_or(EINVAL)?;
        let end = addr.checked_add(size).ok_or(EINVAL)?;
        let front = node_pair()?;
        let tail = node_pair()?;

        let mut free = self.free.lock();
        if addr < RESERVED || end > RESERVED + free.stats.total {
            return Err(EINVAL);
        }
        // The free block that starts at or before `addr`, if it holds the
        // whole range.
        let containing = match free.by_addr.cursor_lower_bound(&(addr + 1)) {
            Some(after) => after.peek_prev().map(|(&start, &len)| (start, len)),
            None => free
                .by_addr
                .cursor_back()
                .map(|last| (*last.current().0, *last.current().1)),
        }
        .filter(|&(start, len)| start <= addr && end <= start + len);
        let (start, len) = containing.ok_or(EBUSY)?;
        free.take((start, len), addr, size, front, tail)
    }

    /// Returns a range, already scrubbed by its owner, to the free space,
    /// merged with its free neighbours.
    pub(crate) fn free(&self, range: VramRange) {
        let VramRange {
            mut addr,
            size,
            by_addr_node,
            by_size_node,
        } = range;
        let mut len = size;
        let mut free = self.free.lock();
        free.stats.used -= size;
        free.stats.allocations -= 1;

        // The free block that ends where this range starts, if any. `addr`
        // itself is not free, so the lower bound is the block after it.
        let prev = match free.by_addr.cursor_lower_bound(&addr) {
            Some(next) => next.peek_prev().map(|(&start, &len)| (start, len)),
            None => free
                .by_addr
                .cursor_back()
                .map(|last| (*last.current().0, *last.current().1)),
        }
        .filter(|&(start, len)| start + len == addr);
        // Merging frees the neighbour's nodes; ours are reused.
        if let Some((start, prev_len)) = prev {
            drop(free.remove(start, prev_len));
            addr = start;
            len += prev_len;
        }
        let next = free.by_addr.get(&(addr + len)).copied();
        if let Some(next_len) = next {
            drop(free.remove(addr + len, next_len));
            len += next_len;
        }
        free.insert(addr, len, by_addr_node, by_size_node);
        free.refresh_largest();
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> VramStats {
        self.free.lock().stats
    }
}

#[kunit_tests(radiance_vram)]
mod tests {
    use super::*;

    /// A small VRAM: 64 KiB reserved, then 64 KiB to allocate.
    const SIZE: u64 = RESERVED + 64 * 1024;

    fn vram() -> Result<Pin<KBox<Vram>>> {
        KBox::pin_init(Vram::new(SIZE)?, GFP_KERNEL)
    }

    #[test]
    fn starts_empty_after_the_reserved_range() -> Result {
        let vram = vram()?;
        let s = vram.stats();
        assert_eq!(s.total, SIZE - RESERVED);
        assert_eq!((s.used, s.allocations, s.free_blocks), (0, 0, 1));
        assert_eq!(s.largest_free, s.total);
        let a = vram.alloc(1, GRANULE)?;
        assert_eq!((a.addr(), a.size()), (RESERVED, GRANULE));
        vram.free(a);
        Ok(())
    }

    #[test]
    fn takes_the_smallest_hole_that_fits() -> Result {
        let vram = vram()?;
        let a = vram.alloc(1024, GRANULE)?;
        let b = vram.alloc(4096, GRANULE)?;
        let c = vram.alloc(1024, GRANULE)?;
        let d = vram.alloc(8192, GRANULE)?;
        let e = vram.alloc(1024, GRANULE)?;
        let (b_addr, d_addr) = (b.addr(), d.addr());
        // Holes of 4 KiB and 8 KiB, and the tail after `e`.
        vram.free(d);
        vram.free(b);
        let f = vram.alloc(3000, GRANULE)?;
        assert_eq!(f.addr(), b_addr);
        let g = vram.alloc(6000, GRANULE)?;
        assert_eq!(g.addr(), d_addr);
        for r in [a, c, e, f, g] {
            vram.free(r);
        }
        Ok(())
    }

    #[test]
    fn merges_free_neighbours() -> Result {
        let vram = vram()?;
        let a = vram.alloc(4096, GRANULE)?;
        let b = vram.alloc(4096, GRANULE)?;
        let c = vram.alloc(4096, GRANULE)?;
        vram.free(a);
        vram.free(c);
        // `a`'s hole, and `c` merged into the tail.
        assert_eq!(vram.stats().free_blocks, 2);
        // Both neighbours of `b` are free: one block again.
        vram.free(b);
        let s = vram.stats();
        assert_eq!((s.free_blocks, s.used, s.allocations), (1, 0, 0));
        assert_eq!(s.largest_free, s.total);
        Ok(())
    }

    #[test]
    fn aligns_and_keeps_the_front_free() -> Result {
        let vram = vram()?;
        let a = vram.alloc(GRANULE, GRANULE)?;
        let b = vram.alloc(100, 4096)?;
        assert_eq!(b.addr() % 4096, 0);
        assert_eq!(b.size(), GRANULE);
        // The bytes skipped for alignment are a hole a small request fills.
        let c = vram.alloc(GRANULE, GRANULE)?;
        assert_eq!(c.addr(), a.addr() + GRANULE);
        let s = vram.stats();
        assert_eq!((s.used, s.allocations), (3 * GRANULE, 3));
        for r in [a, b, c] {
            vram.free(r);
        }
        Ok(())
    }

    #[test]
    fn places_a_range_at_a_fixed_address() -> Result {
        let vram = vram()?;
        let a = vram.alloc(4096, GRANULE)?;
        let fixed = vram.alloc_at(RESERVED + 8192, 1000, GRANULE)?;
        assert_eq!((fixed.addr(), fixed.size()), (RESERVED + 8192, 1024));
        // Taken, wholly or in part.
        assert_eq!(
            vram.alloc_at(RESERVED + 8192, 256, GRANULE).err(),
            Some(EBUSY)
        );
        assert_eq!(
            vram.alloc_at(RESERVED + 7936, 512, GRANULE).err(),
            Some(EBUSY)
        );
        assert_eq!(vram.alloc_at(a.addr(), 256, GRANULE).err(), Some(EBUSY));
        // Outside the allocatable VRAM, or misaligned.
        assert_eq!(vram.alloc_at(0, 256, GRANULE).err(), Some(EINVAL));
        assert_eq!(vram.alloc_at(SIZE - 256, 512, GRANULE).err(), Some(EINVAL));
        assert_eq!(
            vram.alloc_at(RESERVED + 20000, 256, GRANULE).err(),
            Some(EINVAL)
        );
        let aligned = vram.alloc_at(RESERVED + 20480, 256, 4096)?;
        assert_eq!(aligned.addr(), RESERVED + 20480);
        // The hole before the fixed range is still allocatable, best fit.
        let b = vram.alloc(4096, GRANULE)?;
        assert_eq!(b.addr(), RESERVED + 4096);
        assert_eq!(vram.stats().allocations, 4);
        for r in [a, fixed, aligned, b] {
            vram.free(r);
        }
        Ok(())
    }

    #[test]
    fn refuses_what_cannot_fit() -> Result {
        let vram = vram()?;
        assert_eq!(vram.alloc(SIZE, GRANULE).err(), Some(ENOMEM));
        assert_eq!(vram.alloc(0, GRANULE).err(), Some(EINVAL));
        assert_eq!(vram.alloc(GRANULE, 3 * GRANULE).err(), Some(EINVAL));
        assert_eq!(vram.alloc(GRANULE, GRANULE / 2).err(), Some(EINVAL));
        let all = vram.alloc(SIZE - RESERVED, GRANULE)?;
        assert_eq!(vram.alloc(1, GRANULE).err(), Some(ENOMEM));
        assert_eq!(vram.stats().largest_free, 0);
        vram.free(all);
        Ok(())
    }
}
