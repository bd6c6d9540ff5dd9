// SPDX-License-Identifier: GPL-2.0

//! A Radiance device (its hardware backend and per-device state) and the
//! `/dev/radianceN` node that opens it.

use kernel::{
    miscdevice::{
        MiscDeviceOptions,
        MiscDeviceRegistration, //
    },
    page::PAGE_SIZE,
    prelude::*,
    sync::Arc, //
};

use crate::{
    context::Context,
    hw::Gluon,
    uapi, //
};

/// Most user-mode queues one device schedules at once.
const MAX_QUEUES: u32 = 64;
/// Bytes per user queue packet.
const PACKET_SIZE: u32 = 64;

/// Misc device names must be `'static`: one per possible device index.
const NODE_NAMES: [&CStr; uapi::MAX_DEVICES as usize] = [
    c"radiance0",
    c"radiance1",
    c"radiance2",
    c"radiance3",
    c"radiance4",
    c"radiance5",
    c"radiance6",
    c"radiance7",
];

/// One Radiance device. Open files hold a reference, so it outlives its node.
pub(crate) struct Device {
    index: u32,
    hw: Arc<dyn Gluon>,
}

impl Device {
    /// Fills GET_INFO's output fields.
    pub(crate) fn describe(&self, info: &mut uapi::GetInfo) {
        let hw = self.hw.desc();
        info.abi_major = uapi::ABI_MAJOR;
        info.abi_minor = uapi::ABI_MINOR;
        info.device_index = self.index;
        info.backend = hw.backend;
        info.pad1 = 0;
        info.name = hw.name_field();
        info.cores = hw.cores;
        info.warps_per_core = hw.warps_per_core;
        info.threads_per_warp = hw.threads_per_warp;
        info.max_queues = MAX_QUEUES;
        info.vram_size = hw.vram_size;
        info.packet_size = PACKET_SIZE;
        info.doorbell_page_size = PAGE_SIZE as u32;
        info.features = 0;
    }
}

/// `/dev/radianceN`: a misc device whose files are [`Context`]s of one
/// [`Device`].
///
/// # Invariants
///
/// `misc` is only ever registered as a field of a `DeviceNode` (see
/// [`Context`]'s `open`, which relies on it).
#[pin_data]
pub(crate) struct DeviceNode {
    // Fields drop in declaration order: the node disappears (no new opens)
    // before the node's reference to the device goes.
    #[pin]
    misc: MiscDeviceRegistration<Context>,
    device: Arc<Device>,
}

impl DeviceNode {
    /// Creates device `index` over `hw` and registers `/dev/radiance<index>`.
    pub(crate) fn new(index: u32, hw: Arc<dyn Gluon>) -> Result<Pin<KBox<Self>>> {
        let name = *NODE_NAMES.get(index as usize).ok_or(EINVAL)?;
        let device = Arc::new(Device { index, hw }, GFP_KERNEL)?;
        KBox::try_pin_init(
            // `device` is initialised before `misc` registers the node, so an
            // open that comes at once finds it.
            try_pin_init!(Self {
                device,
                misc <- MiscDeviceRegistration::register(MiscDeviceOptions { name }),
            }),
            GFP_KERNEL,
        )
    }

    /// The device behind a node registration, for `open`.
    ///
    /// # Safety
    ///
    /// `misc` must be the `misc` field of a live `DeviceNode`.
    pub(crate) unsafe fn device_of(misc: &MiscDeviceRegistration<Context>) -> Arc<Device> {
        let misc = core::ptr::from_ref(misc).cast_mut();
        // SAFETY: the caller guarantees that `misc` is the `misc` field of a
        // live `DeviceNode`, so stepping back to the container stays inside
        // that allocation and yields a valid, initialised node.
        let node = unsafe { &*kernel::container_of!(misc, DeviceNode, misc) };
        node.device.clone()
    }
}
