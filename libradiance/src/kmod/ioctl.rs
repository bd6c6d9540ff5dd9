// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The raw ioctls of radiance.ko, one safe function each. The only unsafe
//! code of the kmod backend lives here.

use radiance_uapi as uapi;
use rustix::{
    io::Result,
    ioctl::{ioctl, Opcode, Updater},
};
use std::os::fd::AsFd;

/// `RADIANCE_IOCTL_GET_INFO`.
pub(super) fn get_info(fd: impl AsFd) -> Result<uapi::GetInfo> {
    let mut info = uapi::GetInfo::default();
    // SAFETY: the opcode is GET_INFO's, whose argument is a `uapi::GetInfo`
    // of exactly the size the opcode encodes.
    unsafe { ioctl(fd, Updater::<{ uapi::IOCTL_GET_INFO as Opcode }, _>::new(&mut info))? };
    Ok(info)
}
