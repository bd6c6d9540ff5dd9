// SPDX-License-Identifier: GPL-2.0

//! sync_file: a fence as a file descriptor, the way fences cross process
//! and driver boundaries. `linux/sync_file.h` is not in 7.3's bindings, so
//! its two exported functions are declared here.

use core::ptr::NonNull;
use kernel::{
    bindings,
    prelude::*, //
};

use crate::{
    dma_fence::Fence,
    pending_fd::PendingFd, //
};

/// The start of `struct sync_file`: only `file` (a `struct file *`) is
/// used.
#[repr(C)]
struct SyncFile {
    file: *mut c_void,
}

extern "C" {
    fn sync_file_create(fence: *mut bindings::dma_fence) -> *mut SyncFile;
    fn sync_file_get_fence(fd: c_int) -> *mut bindings::dma_fence;
}

/// A new sync_file for `fence`, under an fd reserved (close-on-exec if
/// asked) for the caller to install.
pub(crate) fn export(fence: &Fence, cloexec: bool) -> Result<PendingFd> {
    let reservation = PendingFd::reserve(cloexec)?;
    // SAFETY: `fence` is live; the sync_file takes its own reference.
    let sync_file = unsafe { sync_file_create(fence.as_raw()) };
    if sync_file.is_null() {
        return Err(ENOMEM);
    }
    // SAFETY: a new sync_file is live; it owns its file, whose reference
    // (the only one) is handed over, and lives as long as that file.
    let file = unsafe { (*sync_file).file }.cast::<bindings::file>();
    // sync_file_create makes the file with the sync_file: never NULL.
    let file = NonNull::new(file).ok_or(ENOMEM)?;
    // SAFETY: `file` is live and that reference is now ours to give.
    Ok(unsafe { PendingFd::new(reservation, file) })
}

/// The fence behind a sync_file fd (EINVAL if `fd` is no sync_file).
pub(crate) fn fence_of(fd: i32) -> Result<Fence> {
    // SAFETY: any fd value is fine; a non-NULL result is a new reference.
    let fence = NonNull::new(unsafe { sync_file_get_fence(fd) }).ok_or(EINVAL)?;
    // SAFETY: the reference just returned is ours.
    Ok(unsafe { Fence::from_raw(fence) })
}
