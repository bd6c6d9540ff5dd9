// SPDX-License-Identifier: GPL-2.0

//! Module load and unload: creates the devices and owns them until `rmmod`.

use kernel::{
    debugfs,
    prelude::*, //
};

use crate::{
    device::DeviceNode,
    hw::emu::Emu,
    uapi, //
};

/// The loaded module: every device it created.
pub(crate) struct Radiance {
    /// Dropping a node removes `/dev/radianceN` first, then its device.
    _nodes: KVec<Pin<KBox<DeviceNode>>>,
    /// `radiance/` in debugfs, one directory per device below it.
    _debugfs: debugfs::Dir,
}

impl kernel::Module for Radiance {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let count = crate::module_parameters::emulated_devices.value();
        let vram_mib = crate::module_parameters::emulated_vram_mib.value();
        let exclusive = crate::module_parameters::exclusive.value();
        let pinned_limit = u64::from(crate::module_parameters::max_pinned_mib.value()) << 20;
        let timeout_ms = crate::module_parameters::launch_timeout_ms.value();
        if timeout_ms == 0 {
            pr_err!("launch_timeout_ms must not be 0\n");
            return Err(EINVAL);
        }
        if count > uapi::MAX_DEVICES {
            pr_err!(
                "emulated_devices={count}: at most {} are supported\n",
                uapi::MAX_DEVICES
            );
            return Err(EINVAL);
        }
        let vram_size = u64::from(vram_mib) << 20;
        if vram_mib == 0 || vram_size > Emu::MAX_VRAM {
            pr_err!(
                "emulated_vram_mib={vram_mib}: must be 1 to {}\n",
                Emu::MAX_VRAM >> 20
            );
            return Err(EINVAL);
        }

        let dialect_id = crate::module_parameters::emulated_dialect.value();
        let Some(dialect) = crate::gluon::by_id(dialect_id) else {
            pr_err!("emulated_dialect={dialect_id}: must be 1 (gluon-sim-16) or 2 (gluon-24)\n");
            return Err(EINVAL);
        };
        let gluon_sim = crate::module_parameters::emulated_gluon_sim.value();

        let debugfs = debugfs::Dir::new(c"radiance");
        let mut nodes = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for index in 0..count {
            let emu = Emu::new(index, vram_size, dialect, gluon_sim)?;
            nodes.push(
                DeviceNode::new(index, emu, exclusive, pinned_limit, timeout_ms, &debugfs)?,
                GFP_KERNEL,
            )?;
        }
        pr_info!(
            "{count} emulated device(s) speaking {}{}, {vram_mib} MiB VRAM each{}\n",
            dialect.name(),
            if gluon_sim { " as gluon-sim does" } else { "" },
            if exclusive { ", exclusive" } else { "" }
        );
        Ok(Self {
            _nodes: nodes,
            _debugfs: debugfs,
        })
    }
}
