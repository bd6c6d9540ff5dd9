// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The Radiance SoC's address map as a host outside it sees it over a
//! memory link, and the device-side conventions a launch relies on. Each
//! value names the public source it was read from (ucb-bar/radiance-kernels,
//! ucb-bar/radiance or Chipyard's caches: file and commit).
//!
//! Glossary:
//! - Reset aggregator: one register that holds every Muon core in soft
//!   reset (nonzero) or releases them (0), and the finished bits beside it.
//! - printBuf: uncached per-cluster memory, 8-byte slots the kernels and
//!   their host use as beacons and postboxes.
//! - tocpu: the device's console mailbox in GPU DRAM (HTIF words).
//!
//! Every printBuf slot is written as one aligned 8-byte store, the value in
//! both halves as the kernels' hosts write it (nightly/host.h 3ff2e86
//! `nightly_host_pb_put`): 4-byte host stores into cluster memory are
//! dropped (kernels/flash_attention_mx/host.cpp 399757f). Over TSI that is
//! one request of two words at an 8-aligned address, which testchipip's
//! `TSIToTileLink` turns into one full-mask 8-byte put.

pub use crate::link::DRAM_BASE;

/// Soft reset of all cores: nonzero holds them, 0 releases (radiance.h
/// 08b0e8a `RAD_HOST_GPU_RESET`).
pub const RESET: u64 = 0x4100_0000;
/// Reads nonzero once every core finished, and while they are held in reset
/// (radiance.h 08b0e8a `RAD_HOST_GPU_ALL_FINISHED`).
pub const ALL_FINISHED: u64 = 0x4100_0008;
/// Core `i` finished at `CORE_FINISHED + 4 * i` (radiance.h 08b0e8a
/// `RAD_HOST_GPU_CORES`).
pub const CORE_FINISHED: u64 = 0x4100_0010;

/// Cluster `c`'s registers and memories start at `CLUSTER_BASE + c *
/// CLUSTER_STRIDE` (rad_tapeout.h 0108517 `RAD_PB_HOST`).
pub const CLUSTER_BASE: u64 = 0x4000_0000;
pub const CLUSTER_STRIDE: u64 = 0x10_0000;
/// Cluster shared memory, at the cluster's base (SOC.md: 128 KiB).
pub const SHARED_MEM_SIZE: u64 = 128 << 10;
/// printBuf, from the cluster's base (rad_tapeout.h 0108517 `RAD_PB_BASE`).
pub const PRINTBUF: u64 = 0x8_0000;
/// printBuf holds 64 slots of 8 bytes (rad_tapeout.h 0108517, its slot map).
pub const PRINTBUF_SLOTS: u64 = 64;
/// Slots the kernels keep for their own progress beacons (rad_tapeout.h
/// 0108517: "0..15 reserved for KERNEL beacons").
pub const BEACON_SLOTS: u64 = 16;
/// How a launch starts and how its end is seen: the three protocols of
/// radiance-kernels' hosts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// The reset aggregator's: release reset, poll all-finished
    /// (kernels/launch/host.cpp 2fa5703).
    #[default]
    Reset,
    /// The tapeout epilogue's: release reset, poll every core's DONE slot,
    /// since the taped-out cores never raise finished (rad_host.h aed22f7
    /// `rad_host_run`).
    Epilogue,
    /// The nightly tests': release reset, then the cores spin until the
    /// host writes LAUNCH into slot 0 of their cluster; each posts its END
    /// slot when done (nightly/host.h 3ff2e86 `nightly_host_launch`,
    /// `nightly_host_wait`).
    Nightly,
}

impl Protocol {
    pub const NAMES: &'static str = "reset, epilogue or nightly";

    pub fn name(self) -> &'static str {
        match self {
            Self::Reset => "reset",
            Self::Epilogue => "epilogue",
            Self::Nightly => "nightly",
        }
    }

    pub fn named(name: &str) -> Option<Self> {
        [Self::Reset, Self::Epilogue, Self::Nightly].into_iter().find(|p| p.name() == name)
    }

    /// The printBuf slot each core posts its end in (`slot + core`), and
    /// whether a value there is that end; None where the end is the
    /// finished bits.
    pub fn end_slot(self) -> Option<EndSlot> {
        match self {
            Self::Reset => None,
            Self::Epilogue => Some((DONE_SLOT, |v| v == DONE_MAGIC)),
            Self::Nightly => Some((END_SLOT, |v| v != 0)),
        }
    }
}

/// A per-core printBuf slot, and whether a value there is its core's end.
pub type EndSlot = (u64, fn(u32) -> bool);

/// The tapeout epilogue's per-core DONE slot, `DONE_SLOT + core`, and the
/// magic it holds once that core is quiesced (rad_tapeout.h 0108517
/// `RAD_PB_EPI_CORE`, `RAD_EPI_DONE_MAGIC`); its trace slot, `TRACE_SLOT +
/// core`, says how far warp 0 got (`RAD_PB_EPI_TRACE`).
pub const DONE_SLOT: u64 = 16;
pub const DONE_MAGIC: u32 = 0xD01E_0000;
pub const TRACE_SLOT: u64 = 20;
/// Core `i`'s start generation, `GENERATION_SLOT + i`: each run of an
/// epilogue kernel advances it as it begins (rad_tapeout.h aed22f7
/// `RAD_PB_EPI_START`, `rad_tapeout_begin`), so it tells a run that never
/// started from one that never ended.
pub const GENERATION_SLOT: u64 = 18;

/// The nightly protocol's slots (nightly/pb.h 3ff2e86): LAUNCH (slot 0 of
/// each cluster) starts the cluster's spinning cores; ARG (slot 1) is an
/// argument block's device address, which today's nightly kernels do not
/// read (they keep their arguments in `.data`); each core posts its cycle
/// counter at START and END (`slot + core`); STATUS is the kernel's word,
/// HEARTBEAT its progress.
pub const LAUNCH_SLOT: u64 = 0;
pub const LAUNCH_MAGIC: u32 = 0x6E1A_0C11;
pub const ARG_SLOT: u64 = 1;
pub const START_SLOT: u64 = 2;
pub const END_SLOT: u64 = 4;
pub const STATUS_SLOT: u64 = 6;
pub const HEARTBEAT_SLOT: u64 = 48;
/// Core `i`'s L0I flush/invalidate and L0D flush registers, from its
/// cluster's base: `L0I_FLUSH + i * CORE_STRIDE` (rad_tapeout.h 0108517
/// `RAD_L0I_FLUSH_MMIO`, `RAD_L0D_FLUSH_MMIO`; the L0D one wedges the L0D
/// of the taped-out RTL, so the bridge never writes it).
pub const L0I_FLUSH: u64 = 0x8_0200;
pub const L0D_FLUSH: u64 = 0x8_0300;
pub const CORE_STRIDE: u64 = 0x200;

/// The chip's L2 (SiFive's inclusive cache, 32-byte lines: radiance
/// 9c9bb37 `chipyard/RadianceConfigs.scala`, `WithInclusiveCache`,
/// `WithCacheBlockBytes(32)`) has its control block at Chipyard's
/// `L2ControlAddress`. A write of a line's address shifted right by 4 to
/// its flush32 register writes the line back and invalidates it, and is
/// acknowledged once done (rocket-chip-inclusive-cache 00c0e71
/// `Control.scala`).
pub const L2_CONTROL: u64 = 0x0201_0000;
pub const L2_FLUSH32: u64 = L2_CONTROL + 0x240;
pub const L2_LINE: u64 = 32;

/// GPU DRAM's device addresses: 0 .. 2 GiB (radiance 9c9bb37 `Configs.scala`
/// `WithExtGPUMem`).
pub const DRAM_SIZE: u64 = 0x8000_0000;
/// The tocpu mailbox (radiance.h 08b0e8a `tocpu`, 0x1_0001_0000): the GPU
/// writes an HTIF word, the host takes it and writes 0 back.
pub const TOCPU: u64 = DRAM_BASE + 0x1_0000;
/// An HTIF console word: device 1, command 1 (putchar), the character in
/// the low byte.
pub const HTIF_PUTCHAR: u64 = (1 << 56) | (1 << 48);
/// The argument page (radiance.h 08b0e8a `RAD_HOST_ARG_BASE`, device
/// `RAD_DEVICE_ARG_BASE` 0x0FFF_0000): 64 KiB up to the image.
pub const ARG_BASE: u64 = 0x1_0FFF_0000;
pub const ARG_DEVICE: u32 = 0x0FFF_0000;
pub const ARG_SIZE: u64 = 0x1_0000;
/// Where warp 0 starts: images are linked there (lib/linker/mu_link.ld
/// 9e162f1, `. = 0x10000000`).
pub const START_PC: u32 = 0x1000_0000;

/// How many clusters and cores the SoC has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub clusters: u32,
    pub cores_per_cluster: u32,
}

impl Default for Geometry {
    /// The taped-out part: one cluster of two cores (rad_host.h aed22f7
    /// `RAD_HOST_NUM_CORES`).
    fn default() -> Self {
        Self { clusters: 1, cores_per_cluster: 2 }
    }
}

impl Geometry {
    pub fn cores(&self) -> u32 {
        self.clusters * self.cores_per_cluster
    }

    /// Core `core`'s cluster base, and its index within that cluster.
    fn place(&self, core: u32) -> (u64, u64) {
        let cluster = u64::from(core / self.cores_per_cluster);
        (CLUSTER_BASE + cluster * CLUSTER_STRIDE, u64::from(core % self.cores_per_cluster))
    }

    /// Core `core`'s L0I invalidate register.
    pub fn l0i_flush(&self, core: u32) -> u64 {
        let (base, i) = self.place(core);
        base + L0I_FLUSH + i * CORE_STRIDE
    }

    /// Core `core`'s L0D flush register.
    pub fn l0d_flush(&self, core: u32) -> u64 {
        let (base, i) = self.place(core);
        base + L0D_FLUSH + i * CORE_STRIDE
    }

    /// Cluster `c`'s first core.
    pub fn first_core(&self, cluster: u32) -> u32 {
        cluster * self.cores_per_cluster
    }

    /// printBuf slot `slot` of core `core`'s cluster, and of the slot
    /// `slot + i` for the core's index `i` there (`per_core`).
    pub fn printbuf_slot(&self, core: u32, slot: u64, per_core: bool) -> u64 {
        let (base, i) = self.place(core);
        base + PRINTBUF + 8 * (slot + if per_core { i } else { 0 })
    }
}
