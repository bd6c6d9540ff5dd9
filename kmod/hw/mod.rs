// SPDX-License-Identifier: GPL-2.0

//! The hardware seam: everything the driver core knows about a device comes
//! through [`Gluon`], Radiance's command processor.
//!
//! Glossary:
//! - Gluon: the command processor in front of Radiance's SIMT cores. It takes
//!   16-byte command headers through one MMIO FIFO and answers each with a
//!   16-byte response plus an interrupt.
//! - VRAM: device memory; device pointers are raw 32-bit VRAM addresses (there
//!   is no GPU virtual memory).
//!
//! One file per backend: `emu` (software Gluon, no hardware). The PCI FPGA
//! board and device-tree SoC backends implement the same trait; they are not
//! written yet because there is no board to bring them up against.

pub(crate) mod command;
pub(crate) mod emu;

use kernel::{
    device::Device,
    page::Page,
    prelude::*,
    sync::Arc, //
};

use crate::uapi;

/// What a backend says about the hardware behind it (GET_INFO reports it).
pub(crate) struct HwDesc {
    /// One of `uapi::backend`.
    pub(crate) backend: u32,
    /// Human-readable; truncated to `uapi::NAME_LEN - 1` bytes in GET_INFO.
    pub(crate) name: &'static str,
    pub(crate) cores: u32,
    pub(crate) warps_per_core: u32,
    pub(crate) threads_per_warp: u32,
    /// Bytes of VRAM.
    pub(crate) vram_size: u64,
    /// GET_INFO's `builtins`: which `uapi::builtin` kernels it runs.
    pub(crate) builtins: u32,
}

impl HwDesc {
    /// `name` as GET_INFO's NUL-terminated, zero-padded field.
    pub(crate) fn name_field(&self) -> [u8; uapi::NAME_LEN] {
        let mut out = [0u8; uapi::NAME_LEN];
        let len = self.name.len().min(uapi::NAME_LEN - 1);
        out[..len].copy_from_slice(&self.name.as_bytes()[..len]);
        out
    }
}

/// A Gluon command processor, real or emulated.
pub(crate) trait Gluon: Send + Sync {
    /// The hardware's description.
    fn desc(&self) -> &HwDesc;

    /// Zeroes `len` bytes of VRAM at `addr` (scrubbing freed memory). The
    /// caller owns the range: nobody else reads or writes it meanwhile.
    fn vram_zero(&self, addr: u64, len: u64);

    /// Calls `each` with the pages behind `len` bytes of VRAM at `addr`
    /// (both page-aligned), in order, to map or export them. A page stays
    /// allocated until the range is scrubbed: callers keep it only while
    /// they own the range.
    fn vram_pages(&self, addr: u64, len: u64, each: &mut dyn FnMut(&Page) -> Result) -> Result;

    /// The device that host memory is DMA-mapped for; its DMA mask is 32
    /// bits, Gluon's host address width.
    fn dma_device(&self) -> &Device;

    /// Writes a 16-byte command header into the command FIFO (see
    /// [`command`]); EBUSY when the FIFO is full.
    fn push_command(&self, header: &[u8; 16]) -> Result;

    /// Pops the next 16-byte response, if one is ready.
    fn pop_response(&self) -> Option<[u8; 16]>;

    /// Routes the device's interrupt (responses ready) to `irq`; `None`
    /// disconnects it, which also breaks the reference cycle between the
    /// device and its handler.
    fn set_interrupt(&self, irq: Option<Arc<dyn Interrupt>>);

    /// Resets the command processor: the running command stops, commands
    /// not completed and responses not taken are dropped. Returns when the
    /// device is idle.
    fn reset(&self);
}

/// What a device's interrupt calls: it may run in any context that cannot
/// sleep, so it only schedules work.
pub(crate) trait Interrupt: Send + Sync {
    fn raise(&self);
}
