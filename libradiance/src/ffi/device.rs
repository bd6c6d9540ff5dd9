// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance_device_*`.

use super::{
    command::SemaphoreList,
    handle::{self, c_str, get, put, retain_release},
    status::{call, StatusPtr},
};
use crate::{Device, Error, Timeout, WaitMode};
use std::{ffi::c_char, time::Duration};

/// `RADIANCE_TIMEOUT_INFINITE`.
const TIMEOUT_INFINITE: u64 = u64::MAX;

/// A C timeout in nanoseconds from now.
pub(super) fn timeout(ns: u64) -> Timeout {
    match ns {
        TIMEOUT_INFINITE => Timeout::Infinite,
        ns => Timeout::After(Duration::from_nanos(ns)),
    }
}

/// `radiance_device_open`: opens a device by URI (`host`, `kmod:N`, ...).
#[no_mangle]
pub extern "C" fn radiance_device_open(uri: *const c_char, out_device: *mut *mut Device) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a NUL-terminated string.
        let uri = unsafe { c_str(uri) }?.ok_or_else(|| Error::InvalidArgument("device URI is NULL".into()))?;
        let device = Device::open(uri)?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_device, handle::new(device)) }
    })
}

retain_release!(Device, radiance_device_retain, radiance_device_release);

/// `radiance_device_wait_semaphores`: waits for all (mode 0) or any (mode 1)
/// of a list, at most `timeout_ns` (RADIANCE_TIMEOUT_INFINITE: for ever).
#[no_mangle]
pub extern "C" fn radiance_device_wait_semaphores(
    device: *const Device,
    mode: u32,
    list: SemaphoreList,
    timeout_ns: u64,
) -> StatusPtr {
    call(|| {
        let mode = match mode {
            0 => WaitMode::All,
            1 => WaitMode::Any,
            m => return Err(Error::InvalidArgument(format!("wait mode {m} is neither ALL (0) nor ANY (1)"))),
        };
        // SAFETY: the caller passes live handles and a valid list.
        let (device, points) = unsafe { (get(device, "device")?, list.points()?) };
        device.wait_semaphores(mode, &points, timeout(timeout_ns))
    })
}
