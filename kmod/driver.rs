// SPDX-License-Identifier: GPL-2.0

//! Module load and unload: creates the emulated devices and the control
//! node (through which processes add devices of their own), and owns them
//! until `rmmod`.

use kernel::{
    debugfs,
    miscdevice::MiscDeviceOptions,
    prelude::*,
    sync::Arc, //
};

use crate::{
    control::ControlFile,
    device::{
        DeviceNode,
        Registry,
        Settings, //
    },
    hw::{
        emu::Emu,
        Gluon, //
    },
    misc_node::Node,
    uapi, //
};

/// The loaded module: the control node, and every device it created.
pub(crate) struct Radiance {
    /// Goes first: no server can add a device once unloading started (and
    /// none is serving one: each control file holds a module reference).
    _control: Pin<KBox<Node<ControlFile>>>,
    /// Dropping a node removes `/dev/radianceN` first, then its device.
    _nodes: KVec<Pin<KBox<DeviceNode>>>,
    /// `radiance/devices` in debugfs.
    _devices: Pin<KBox<debugfs::File<Arc<Registry>>>>,
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
        let throttle_us = crate::module_parameters::emulated_throttle_us.value();

        let debugfs = debugfs::Dir::new(c"radiance");
        let settings = Settings {
            exclusive,
            pinned_limit,
            timeout_ms,
        };
        let registry = Registry::new(settings, debugfs.clone())?;
        let devices = KBox::pin_init(
            debugfs.read_callback_file(c"devices", registry.clone(), &|r: &Arc<Registry>, f| {
                r.write_stats(f)
            }),
            GFP_KERNEL,
        )?;
        let mut nodes = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for _ in 0..count {
            let node = Registry::create(&registry, |serial| {
                Ok(Emu::new(serial, vram_size, dialect, gluon_sim, throttle_us)? as Arc<dyn Gluon>)
            })?;
            nodes.push(node, GFP_KERNEL)?;
        }
        // The name is `uapi::CONTROL_NODE`'s.
        let control = KBox::pin_init(
            Node::new(
                MiscDeviceOptions {
                    name: c"radiance-control",
                },
                registry,
            ),
            GFP_KERNEL,
        )?;
        pr_info!(
            "{count} emulated device(s) speaking {}{}, {vram_mib} MiB VRAM each{}\n",
            dialect.name(),
            if gluon_sim { " as gluon-sim does" } else { "" },
            if exclusive { ", exclusive" } else { "" }
        );
        Ok(Self {
            _control: control,
            _nodes: nodes,
            _devices: devices,
        })
    }
}
