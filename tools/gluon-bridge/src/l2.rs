// SPDX-License-Identifier: GPL-2.0 OR MIT

//! GPU DRAM kept coherent with the chip's L2 over a link that bypasses it.
//!
//! Behind a bring-up FPGA (radiance 9c9bb37 `RadianceBringupHostConfig`),
//! GPU DRAM is the FPGA's own memory: the chip reaches it over serial-TL
//! through its L2, but the host's TSI accesses go to it straight from the
//! FPGA's bus. A line the GPU left dirty in the L2 is not in DRAM yet, and a
//! line the L2 holds is stale once the host writes DRAM behind it. So before
//! the link reads or writes a line of GPU DRAM, the bridge flushes it
//! (written back, then invalidated: `soc_map::L2_FLUSH32`).
//!
//! Only a running GPU fills the L2 with GPU DRAM (nothing else on the chip
//! touches it while the GPU is held in reset), so a line flushed since the
//! last launch needs no flush again: [`Lines`] remembers which, and forgets
//! all at each launch. A copy pays the flushes of its lines once after each
//! launch.

use crate::soc_map::L2_LINE;
use std::collections::BTreeMap;

/// The lines of GPU DRAM (link addresses) flushed since the last launch,
/// as disjoint ranges of line addresses, start to end.
#[derive(Debug, Default)]
pub struct Lines {
    clean: BTreeMap<u64, u64>,
}

impl Lines {
    /// The lines of `[addr, addr + len)` that are not clean yet, which are
    /// clean from now on (their flushes are the caller's).
    pub fn take(&mut self, addr: u64, len: usize) -> Vec<u64> {
        if len == 0 {
            return Vec::new();
        }
        let (start, end) = (addr / L2_LINE * L2_LINE, (addr + len as u64).div_ceil(L2_LINE) * L2_LINE);
        let mut dirty = Vec::new();
        let mut at = start;
        // The clean ranges that touch [start, end), merged into one.
        let (mut lo, mut hi) = (start, end);
        let touching: Vec<(u64, u64)> =
            self.clean.range(..=end).rev().take_while(|&(_, &e)| e >= start).map(|(&s, &e)| (s, e)).collect();
        for &(s, e) in touching.iter().rev() {
            dirty.extend((at..s.max(at)).step_by(L2_LINE as usize));
            at = at.max(e);
            lo = lo.min(s);
            hi = hi.max(e);
            self.clean.remove(&s);
        }
        dirty.extend((at..end.max(at)).step_by(L2_LINE as usize));
        self.clean.insert(lo, hi);
        dirty
    }

    /// A launch ran: any line may be in the L2 again.
    pub fn forget(&mut self) {
        self.clean.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_flushed_once_until_the_next_launch() {
        let mut lines = Lines::default();
        assert_eq!(lines.take(0x1000, 64), [0x1000, 0x1020]);
        assert_eq!(lines.take(0x1000, 64), [] as [u64; 0]);
        // Unaligned: every line it touches, less those already clean.
        assert_eq!(lines.take(0x1010, 0x40), [0x1040]);
        assert_eq!(lines.take(0xfe0, 0x100), [0xfe0, 0x1060, 0x1080, 0x10a0, 0x10c0]);
        assert_eq!(lines.take(0x1100, 1), [0x1100]);
        // The hole between two clean ranges, which merge with it.
        assert_eq!(lines.take(0x10e0, 0x20), [0x10e0]);
        assert_eq!(lines.take(0x1200, 0x20), [0x1200]);
        assert_eq!(lines.take(0xfe0, 0x260), [0x1120, 0x1140, 0x1160, 0x1180, 0x11a0, 0x11c0, 0x11e0, 0x1220]);
        assert_eq!(lines.clean.len(), 1);
        assert_eq!(lines.take(0x1000, 0), [] as [u64; 0]);
        lines.forget();
        assert_eq!(lines.take(0x1000, 32), [0x1000]);
    }
}
