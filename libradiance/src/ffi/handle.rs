// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Handles: `Arc<T>` raw pointers that C holds, retains and releases; and
//! the checked conversions of C arguments (NULL handles, out-parameters,
//! strings, byte ranges) into Rust.

use crate::{Error, Result};
use std::{
    ffi::{c_char, CStr},
    sync::Arc,
};

/// A new handle owning one reference to `value`.
pub(super) fn new<T>(value: T) -> *mut T {
    Arc::into_raw(Arc::new(value)).cast_mut()
}

/// Adds a reference (NULL is ignored).
///
/// # Safety
/// `h` is NULL or a live handle made by [`new`] for this `T`.
pub(super) unsafe fn retain<T>(h: *const T) {
    if !h.is_null() {
        // SAFETY: per this function's contract.
        unsafe { Arc::increment_strong_count(h) }
    }
}

/// Drops a reference (NULL is ignored); the last one frees the object.
///
/// # Safety
/// As [`retain`], and the caller gives up the reference it releases.
pub(super) unsafe fn release<T>(h: *const T) {
    if !h.is_null() {
        // SAFETY: per this function's contract.
        unsafe { Arc::decrement_strong_count(h) }
    }
}

/// The object behind a handle argument.
///
/// # Safety
/// `h` is NULL or a live handle made by [`new`] for this `T`, kept alive by
/// the caller for `'a`.
pub(super) unsafe fn get<'a, T>(h: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: per this function's contract.
    unsafe { h.as_ref() }.ok_or_else(|| Error::InvalidArgument(format!("{what} is NULL")))
}

/// Stores `value` in an out-parameter.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(super) unsafe fn put<T>(out: *mut T, value: T) -> Result<()> {
    if out.is_null() {
        return Err(Error::InvalidArgument("an out-parameter is NULL".into()));
    }
    // SAFETY: per this function's contract; `out` is not NULL.
    unsafe { out.write(value) };
    Ok(())
}

/// `len` elements at `data` (which may be NULL when `len` is zero).
///
/// # Safety
/// `data` is valid for reads of `len` elements for `'a`.
pub(super) unsafe fn slice<'a, T>(data: *const T, len: usize, what: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Error::InvalidArgument(format!("{what} is NULL but its length is {len}")));
    }
    // SAFETY: per this function's contract; `data` is not NULL.
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// A C string argument (`None` for NULL).
///
/// # Safety
/// `s` is NULL or a NUL-terminated string that lives for `'a`.
pub(super) unsafe fn c_str<'a>(s: *const c_char) -> Result<Option<&'a str>> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: per this function's contract.
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str().map(Some).map_err(|_| Error::InvalidArgument(format!("{s:?} is not UTF-8")))
}

/// Defines `radiance_<noun>_retain` and `radiance_<noun>_release` for a
/// handle type.
macro_rules! retain_release {
    ($t:ty, $retain:ident, $release:ident) => {
        #[doc = concat!("`", stringify!($retain), "`: adds a reference (NULL is ignored).")]
        #[no_mangle]
        pub extern "C" fn $retain(h: *const $t) {
            // SAFETY: the caller passes NULL or a live handle of this type.
            $crate::ffi::status::guard((), || unsafe { $crate::ffi::handle::retain(h) })
        }

        #[doc = concat!("`", stringify!($release), "`: drops a reference; the last one frees the object.")]
        #[no_mangle]
        pub extern "C" fn $release(h: *const $t) {
            // SAFETY: the caller passes NULL or a live handle of this type
            // and gives up one reference.
            $crate::ffi::status::guard((), || unsafe { $crate::ffi::handle::release(h) })
        }
    };
}
pub(super) use retain_release;
