// SPDX-License-Identifier: GPL-2.0

//! The per-open-file context: what one process sees of a device through one
//! file descriptor. Everything a file creates belongs to its context and is
//! torn down with it.

use kernel::{
    fs::File,
    miscdevice::{
        MiscDevice,
        MiscDeviceRegistration, //
    },
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
};

use crate::{
    device::{
        Device,
        DeviceNode, //
    },
    ioctl,
    uapi, //
};

/// One open file of `/dev/radianceN`.
pub(crate) struct Context {
    device: Arc<Device>,
}

impl Context {
    /// GET_INFO.
    pub(crate) fn get_info(&self, info: &mut uapi::GetInfo) -> Result {
        if info.flags != 0 || info.pad0 != 0 {
            return Err(EINVAL);
        }
        self.device.describe(info);
        Ok(())
    }
}

#[vtable]
impl MiscDevice for Context {
    type Ptr = Arc<Self>;

    fn open(_file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<Arc<Self>> {
        // SAFETY: by `DeviceNode`'s invariant every registration of this type
        // is a `DeviceNode`'s `misc` field, and `misc_open()` keeps the
        // registration, and so the pinned node around it, alive during open.
        let device = unsafe { DeviceNode::device_of(misc) };
        Ok(Arc::new(Self { device }, GFP_KERNEL)?)
    }

    fn ioctl(ctx: ArcBorrow<'_, Self>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        ioctl::dispatch(&ctx, cmd, arg)
    }
}
