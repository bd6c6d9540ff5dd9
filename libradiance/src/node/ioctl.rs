// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The raw ioctls of radiance.ko, one safe function each. The only unsafe
//! code of the kmod backend lives here.

use radiance_uapi as uapi;
use rustix::{
    io::Result,
    ioctl::{ioctl, Opcode, Updater},
};
use std::os::fd::AsFd;

/// Runs a Radiance ioctl on `arg` (every one is `_IOWR`, in and out).
macro_rules! radiance_ioctl {
    ($name:ident, $opcode:expr, $ty:ty) => {
        #[doc = concat!("`", stringify!($opcode), "` on `arg`.")]
        pub(super) fn $name(fd: impl AsFd, arg: &mut $ty) -> Result<()> {
            // SAFETY: the opcode's argument is a `$ty` of exactly the size
            // the opcode encodes, which the kernel reads and writes back.
            unsafe { ioctl(fd, Updater::<{ $opcode as Opcode }, $ty>::new(arg)) }
        }
    };
}

radiance_ioctl!(get_info, uapi::IOCTL_GET_INFO, uapi::GetInfo);

/// GET_INFO as a module of ABI 1.8 to 1.13 takes it: their last released
/// size, which a newer `GetInfo` is larger than (a module accepts only
/// the sizes it released). The fields after it are left as they are.
pub(super) fn get_info_1_8(fd: impl AsFd, arg: &mut uapi::GetInfo) -> Result<()> {
    const SIZE: usize = uapi::sizes::GET_INFO[2];
    const OPCODE: u32 = uapi::ioc(uapi::IOC_READ | uapi::IOC_WRITE, uapi::nr::GET_INFO, SIZE);
    const _: () = assert!(SIZE <= std::mem::size_of::<uapi::GetInfo>());
    // SAFETY: the opcode encodes SIZE bytes, and `arg` is a `GetInfo`,
    // which is larger (checked above): the kernel reads and writes only
    // its first SIZE bytes, whose layout ABI 1.8 released.
    unsafe { ioctl(fd, Updater::<{ OPCODE as Opcode }, uapi::GetInfo>::new(arg)) }
}
radiance_ioctl!(bo_create, uapi::IOCTL_BO_CREATE, uapi::BoCreate);
radiance_ioctl!(bo_destroy, uapi::IOCTL_BO_DESTROY, uapi::BoDestroy);
radiance_ioctl!(bo_info, uapi::IOCTL_BO_INFO, uapi::BoInfo);
radiance_ioctl!(bo_export, uapi::IOCTL_BO_EXPORT, uapi::BoExport);
radiance_ioctl!(bo_import, uapi::IOCTL_BO_IMPORT, uapi::BoImport);
radiance_ioctl!(sem_create, uapi::IOCTL_SEM_CREATE, uapi::SemCreate);
radiance_ioctl!(sem_destroy, uapi::IOCTL_SEM_DESTROY, uapi::SemDestroy);
radiance_ioctl!(sem_signal, uapi::IOCTL_SEM_SIGNAL, uapi::SemSignal);
radiance_ioctl!(sem_query, uapi::IOCTL_SEM_QUERY, uapi::SemQuery);
radiance_ioctl!(sem_fail, uapi::IOCTL_SEM_FAIL, uapi::SemFail);
radiance_ioctl!(sem_wait, uapi::IOCTL_SEM_WAIT, uapi::SemWait);
radiance_ioctl!(sem_export_sync_file, uapi::IOCTL_SEM_EXPORT_SYNC_FILE, uapi::SemExportSyncFile);
radiance_ioctl!(sem_import_sync_file, uapi::IOCTL_SEM_IMPORT_SYNC_FILE, uapi::SemImportSyncFile);
radiance_ioctl!(sem_import_handle, uapi::IOCTL_SEM_IMPORT_HANDLE, uapi::SemImportHandle);
radiance_ioctl!(queue_create, uapi::IOCTL_QUEUE_CREATE, uapi::QueueCreate);
radiance_ioctl!(queue_destroy, uapi::IOCTL_QUEUE_DESTROY, uapi::QueueDestroy);
radiance_ioctl!(queue_kick, uapi::IOCTL_QUEUE_KICK, uapi::QueueKick);
