// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A device's memory use, as the module reports it in debugfs
//! (`/sys/kernel/debug/radiance/radianceN/mem`).

use crate::{Error, Result};

/// Memory use of one device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemStats {
    /// Allocatable VRAM bytes.
    pub vram_total: u64,
    pub vram_used: u64,
    pub vram_free: u64,
    /// The largest single allocation that can succeed now.
    pub vram_largest_free: u64,
    pub vram_free_blocks: u64,
    /// Live VRAM buffer objects (including ones only dma-bufs hold).
    pub vram_bos: u64,
    /// Host memory pinned for HOST buffer objects, and its cap.
    pub host_pinned: u64,
    pub host_pinned_limit: u64,
    pub open_files: u64,
    /// Scheduler passes run since the device was created, and how many of
    /// them woke a worker; `None` from a module that does not count them.
    pub scheduler_passes: Option<u64>,
    pub scheduler_wakeups: Option<u64>,
    /// Device resets since the device was created; `None` from a module
    /// that does not say.
    pub device_resets: Option<u64>,
}

impl MemStats {
    /// Reads device `index`'s statistics; needs root and debugfs.
    pub fn read(index: u32) -> Result<Self> {
        Self::parse(&super::debugfs::read(index, "mem")?)
    }

    /// Parses `key value` lines; every field but the scheduler's counters
    /// must be there.
    fn parse(text: &str) -> Result<Self> {
        let find = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok());
        let get = |key: &str| {
            find(key).ok_or_else(|| Error::InvalidArgument(format!("debugfs mem: no `{key}` (module too old?)")))
        };
        Ok(Self {
            vram_total: get("vram_total")?,
            vram_used: get("vram_used")?,
            vram_free: get("vram_free")?,
            vram_largest_free: get("vram_largest_free")?,
            vram_free_blocks: get("vram_free_blocks")?,
            vram_bos: get("vram_bos")?,
            host_pinned: get("host_pinned")?,
            host_pinned_limit: get("host_pinned_limit")?,
            open_files: get("open_files")?,
            scheduler_passes: find("scheduler_passes"),
            scheduler_wakeups: find("scheduler_wakeups"),
            device_resets: find("device_resets"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "vram_total 66994176\nvram_used 4096\nvram_free 66990080\n\
        vram_largest_free 66990080\nvram_free_blocks 1\nvram_bos 1\nhost_pinned 8192\n\
        host_pinned_limit 536870912\nopen_files 2\nscheduler_passes 40\nscheduler_wakeups 3\n";

    #[test]
    fn parses_every_field() {
        let s = MemStats::parse(SAMPLE).unwrap();
        assert_eq!(s.vram_total, 66_994_176);
        assert_eq!(s.vram_used, 4096);
        assert_eq!(s.vram_largest_free, 66_990_080);
        assert_eq!(s.vram_free_blocks, 1);
        assert_eq!(s.host_pinned, 8192);
        assert_eq!(s.host_pinned_limit, 512 << 20);
        assert_eq!(s.open_files, 2);
        assert_eq!((s.scheduler_passes, s.scheduler_wakeups), (Some(40), Some(3)));
    }

    #[test]
    fn the_scheduler_counters_may_be_missing() {
        let text = SAMPLE.replace("scheduler_passes 40\nscheduler_wakeups 3\n", "");
        let s = MemStats::parse(&text).unwrap();
        assert_eq!((s.scheduler_passes, s.scheduler_wakeups), (None, None));
        assert_eq!(s.open_files, 2);
    }

    #[test]
    fn a_missing_field_is_an_error() {
        let text = SAMPLE.replace("vram_bos 1\n", "");
        let err = MemStats::parse(&text).unwrap_err();
        assert!(err.to_string().contains("vram_bos"), "{err}");
        // A key that is only a prefix of another does not count.
        assert!(MemStats::parse(&SAMPLE.replace("vram_free ", "vram_freeish ")).is_err());
    }
}
