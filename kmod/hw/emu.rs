// SPDX-License-Identifier: GPL-2.0

//! The emulated Gluon: a software command processor for machines without a
//! Radiance board (QEMU, CI). It has a `struct device` of its own (a faux
//! device) so that it looks like any other device to the driver core.

use kernel::{
    faux,
    prelude::*,
    str::CString,
    sync::Arc, //
};

use super::{
    Gluon,
    HwDesc, //
};
use crate::uapi;

/// The emulated compute shape, a small Radiance configuration.
const CORES: u32 = 4;
const WARPS_PER_CORE: u32 = 8;
const THREADS_PER_WARP: u32 = 16;

/// A software Gluon.
pub(crate) struct Emu {
    desc: HwDesc,
    /// Gives the emulated device its `struct device`; removed on drop.
    _faux: faux::Registration,
}

impl Emu {
    /// Largest emulated VRAM: Gluon addresses are 32-bit.
    pub(crate) const MAX_VRAM: u64 = 1 << 32;

    /// Creates emulated device `index` with `vram_size` bytes of VRAM.
    pub(crate) fn new(index: u32, vram_size: u64) -> Result<Arc<Self>> {
        let name = CString::try_from_fmt(fmt!("radiance-emu{index}"))?;
        let faux = faux::Registration::new(&name, None)?;
        let desc = HwDesc {
            backend: uapi::backend::EMULATED,
            name: "Radiance (emulated Gluon)",
            cores: CORES,
            warps_per_core: WARPS_PER_CORE,
            threads_per_warp: THREADS_PER_WARP,
            vram_size,
        };
        Ok(Arc::new(Self { desc, _faux: faux }, GFP_KERNEL)?)
    }
}

impl Gluon for Emu {
    fn desc(&self) -> &HwDesc {
        &self.desc
    }
}
