// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance_status_t`, and the wrapper that runs every entry point.

use crate::{Error, Result, StatusCode};
use std::{
    any::Any,
    ffi::{c_char, CString},
    panic::{catch_unwind, AssertUnwindSafe},
    ptr,
};

/// What a non-OK `radiance_status_t` points to.
pub struct Status {
    code: StatusCode,
    message: CString,
}

/// `radiance_status_t`: NULL is OK.
pub type StatusPtr = *mut Status;

fn status(code: StatusCode, message: &str) -> StatusPtr {
    // A NUL inside the message would cut it short in C; show it as a space.
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    Box::into_raw(Box::new(Status { code, message }))
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic")
}

/// Runs `f` and returns `fallback` if it panics: for entry points that
/// return no status.
pub(super) fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Runs an entry point's body and turns its result, or its panic, into a
/// status.
pub(super) fn call(f: impl FnOnce() -> Result<()>) -> StatusPtr {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => ptr::null_mut(),
        Ok(Err(e)) => status(e.status(), &e.to_string()),
        Err(panic) => status(StatusCode::Internal, &format!("libradiance panicked: {}", panic_message(&*panic))),
    }
}

/// `radiance_status_code`: the status's IREE code (0 for OK/NULL).
#[no_mangle]
pub extern "C" fn radiance_status_code(status: *const Status) -> u32 {
    // SAFETY: the caller passes NULL or a status this library returned and
    // has not freed.
    guard(StatusCode::Internal as u32, || unsafe { status.as_ref() }.map_or(0, |s| s.code as u32))
}

/// `radiance_status_message`: the status's message, valid until the status
/// is freed ("OK" for NULL).
#[no_mangle]
pub extern "C" fn radiance_status_message(status: *const Status) -> *const c_char {
    const OK: &std::ffi::CStr = c"OK";
    // SAFETY: as in `radiance_status_code`.
    guard(OK.as_ptr(), || unsafe { status.as_ref() }.map_or(OK.as_ptr(), |s| s.message.as_ptr()))
}

/// `radiance_status_free`: frees a status (NULL is fine).
#[no_mangle]
pub extern "C" fn radiance_status_free(status: StatusPtr) {
    if !status.is_null() {
        // SAFETY: the caller passes a status this library returned, once.
        guard((), || drop(unsafe { Box::from_raw(status) }))
    }
}

/// `radiance_status_allocate`: a status made by the caller (an OK code or a
/// bad one gives NULL or INVALID_ARGUMENT).
#[no_mangle]
pub extern "C" fn radiance_status_allocate(code: u32, message: *const c_char) -> StatusPtr {
    if code == StatusCode::Ok as u32 {
        return ptr::null_mut();
    }
    call(|| Err(caller_status(code, message)?))
}

/// A status the caller makes, for `radiance_semaphore_fail` and
/// `radiance_status_allocate`.
pub(super) fn caller_status(code: u32, message: *const c_char) -> Result<Error> {
    let code = StatusCode::from_raw(code)
        .filter(|&c| c != StatusCode::Ok)
        .ok_or_else(|| Error::InvalidArgument(format!("{code} is not a failure status code")))?;
    // SAFETY: the caller passes NULL or a NUL-terminated string.
    let message = unsafe { super::handle::c_str(message) }?.unwrap_or("failed by the caller");
    Ok(Error::Status { code, message: message.to_owned() })
}
