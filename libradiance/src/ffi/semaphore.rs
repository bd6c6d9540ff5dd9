// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance_semaphore_*`.

use super::{
    device::timeout,
    handle::{self, get, put, retain_release},
    status::{call, caller_status, StatusPtr},
};
use crate::{Device, Semaphore};
use std::ffi::c_char;

/// `radiance_semaphore_create`: a timeline semaphore with payload `initial`.
#[no_mangle]
pub extern "C" fn radiance_semaphore_create(
    device: *const Device,
    initial: u64,
    out_semaphore: *mut *mut Semaphore,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let semaphore = unsafe { get(device, "device") }?.create_semaphore(initial)?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_semaphore, handle::new(semaphore)) }
    })
}

retain_release!(Semaphore, radiance_semaphore_retain, radiance_semaphore_release);

/// `radiance_semaphore_query`: the payload, or the status it failed with.
#[no_mangle]
pub extern "C" fn radiance_semaphore_query(semaphore: *const Semaphore, out_value: *mut u64) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let value = unsafe { get(semaphore, "semaphore") }?.query()?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_value, value) }
    })
}

/// `radiance_semaphore_signal`: raises the payload from the host.
#[no_mangle]
pub extern "C" fn radiance_semaphore_signal(semaphore: *const Semaphore, value: u64) -> StatusPtr {
    // SAFETY: the caller passes a live handle.
    call(|| unsafe { get(semaphore, "semaphore") }?.signal(value))
}

/// `radiance_semaphore_fail`: fails the semaphore with a status code and
/// message (NULL for a default one).
#[no_mangle]
pub extern "C" fn radiance_semaphore_fail(semaphore: *const Semaphore, code: u32, message: *const c_char) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let semaphore = unsafe { get(semaphore, "semaphore") }?;
        semaphore.fail(caller_status(code, message)?);
        Ok(())
    })
}

/// `radiance_semaphore_wait`: waits for the payload to reach `value`.
#[no_mangle]
pub extern "C" fn radiance_semaphore_wait(semaphore: *const Semaphore, value: u64, timeout_ns: u64) -> StatusPtr {
    // SAFETY: the caller passes a live handle.
    call(|| unsafe { get(semaphore, "semaphore") }?.wait(value, timeout(timeout_ns)))
}
