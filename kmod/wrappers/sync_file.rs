// SPDX-License-Identifier: GPL-2.0

//! sync_file: a fence as a file descriptor, the way fences cross process
//! and driver boundaries. `linux/sync_file.h` is not in 7.3's bindings, so
//! its two exported functions are declared here.

use core::ptr::NonNull;
use kernel::{
    bindings,
    prelude::*, //
};

use crate::dma_fence::Fence;

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

/// A new sync_file fd (close-on-exec if asked) for `fence`.
pub(crate) fn export(fence: &Fence, cloexec: bool) -> Result<i32> {
    let flags = if cloexec { bindings::O_CLOEXEC } else { 0 };
    // SAFETY: no preconditions; the fd is reserved until installed or put.
    let fd = unsafe { bindings::get_unused_fd_flags(flags) };
    if fd < 0 {
        return Err(Error::from_errno(fd));
    }
    // SAFETY: `fence` is live; the sync_file takes its own reference.
    let sync_file = unsafe { sync_file_create(fence.as_raw()) };
    if sync_file.is_null() {
        // SAFETY: `fd` was reserved in this function and never installed.
        unsafe { bindings::put_unused_fd(fd as u32) };
        return Err(ENOMEM);
    }
    // SAFETY: a new sync_file owns its file; installing hands that
    // reference to the fd table.
    unsafe { bindings::fd_install(fd as u32, (*sync_file).file.cast()) };
    Ok(fd)
}

/// The fence behind a sync_file fd (EINVAL if `fd` is no sync_file).
pub(crate) fn fence_of(fd: i32) -> Result<Fence> {
    // SAFETY: any fd value is fine; a non-NULL result is a new reference.
    let fence = NonNull::new(unsafe { sync_file_get_fence(fd) }).ok_or(EINVAL)?;
    // SAFETY: the reference just returned is ours.
    Ok(unsafe { Fence::from_raw(fence) })
}
