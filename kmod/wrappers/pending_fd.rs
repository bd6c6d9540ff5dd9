// SPDX-License-Identifier: GPL-2.0

//! A new file for userspace whose fd is reserved but not yet in the
//! caller's fd table. An ioctl that makes one answers with the fd's number
//! and installs it only once that answer is copied out: a copy that faults
//! then leaves no fd behind that the caller was never told of, and the
//! file is released.

use core::ptr::NonNull;
use kernel::{
    bindings,
    fs::{
        file::FileDescriptorReservation,
        File, //
    },
    prelude::*,
    sync::aref::ARef,
};

/// A reserved fd and the file it will name.
pub(crate) struct PendingFd {
    reservation: FileDescriptorReservation,
    file: ARef<File>,
}

impl PendingFd {
    /// Reserves an fd, close-on-exec if asked.
    pub(crate) fn reserve(cloexec: bool) -> Result<FileDescriptorReservation> {
        let flags = if cloexec { bindings::O_CLOEXEC } else { 0 };
        FileDescriptorReservation::get_unused_fd_flags(flags)
    }

    /// The fd `reservation` will name `file`, which holds the one reference
    /// to it that the caller hands over.
    ///
    /// # Safety
    ///
    /// `file` is a live `struct file` and the caller owns one reference to
    /// it, which it gives up.
    pub(crate) unsafe fn new(
        reservation: FileDescriptorReservation,
        file: NonNull<bindings::file>,
    ) -> Self {
        // SAFETY: `File` is a transparent wrapper of `struct file`; the
        // caller hands over a reference it owns to a live file.
        let file = unsafe { ARef::from_raw(file.cast::<File>()) };
        Self { reservation, file }
    }

    /// The fd's number, for the ioctl's answer.
    pub(crate) fn number(&self) -> i32 {
        // An fd number fits an int: the fd table's size is an int.
        self.reservation.reserved_fd() as i32
    }

    /// Puts the file in the caller's fd table under its number.
    pub(crate) fn install(self) {
        self.reservation.fd_install(self.file);
    }
}
