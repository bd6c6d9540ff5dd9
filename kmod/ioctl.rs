// SPDX-License-Identifier: GPL-2.0

//! Ioctl decoding: the one place that checks an ioctl's number, direction
//! and argument size, copies the argument in and out, and routes it to its
//! handler.
//!
//! The size in the command word is the size userspace was built with. Only
//! a size the struct was released with ([`IoctlArg::SIZES`]) is accepted: a
//! shorter (older) struct is zero-extended and only its own bytes are
//! copied back. Any other size is EINVAL; a number or direction we do not
//! know is ENOTTY. An fd an ioctl makes is installed only after its answer
//! is copied back, so that a copy that faults leaves none behind.

use kernel::{
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    transmute::{
        AsBytes,
        FromBytes, //
    },
    uaccess::UserSlice,
};

use crate::{
    control::ControlFile,
    file::Context,
    pending_fd::PendingFd,
    uapi::{
        self,
        IoctlCmd, //
    },
};

/// An ioctl argument struct of the uapi.
trait IoctlArg: FromBytes + AsBytes + Default + Clone {
    /// Every size of this struct ever released.
    const SIZES: &'static [usize];
    /// Whether a failed call still writes the struct back (SEM_WAIT says
    /// which semaphore failed); others leave userspace's copy untouched.
    const COPY_BACK_ON_ERROR: bool = false;
}

/// Declares the uapi argument structs, with their released sizes.
macro_rules! ioctl_args {
    ($($ty:ty => $sizes:expr $(, copy_back_on_error: $copy:expr)?);* $(;)?) => {$(
        // SAFETY: uapi structs are `repr(C)` with integer fields only and
        // explicit padding (uapi/tests/c_header.rs checks that the fields
        // cover every byte), so every bit pattern is valid, no byte is
        // uninitialised, and there is no interior mutability.
        unsafe impl FromBytes for $ty {}
        // SAFETY: `repr(C)` with integer fields only and explicit padding
        // (checked by uapi/tests/c_header.rs): no byte is uninitialised and
        // there is no interior mutability.
        unsafe impl AsBytes for $ty {}
        impl IoctlArg for $ty {
            const SIZES: &'static [usize] = $sizes;
            $(const COPY_BACK_ON_ERROR: bool = $copy;)?
        }
    )*};
}

ioctl_args! {
    uapi::GetInfo => uapi::sizes::GET_INFO;
    uapi::BoCreate => uapi::sizes::BO_CREATE;
    uapi::BoDestroy => uapi::sizes::BO_DESTROY;
    uapi::BoInfo => uapi::sizes::BO_INFO;
    uapi::BoExport => uapi::sizes::BO_EXPORT;
    uapi::BoImport => uapi::sizes::BO_IMPORT;
    uapi::SemCreate => uapi::sizes::SEM_CREATE;
    uapi::SemDestroy => uapi::sizes::SEM_DESTROY;
    uapi::SemSignal => uapi::sizes::SEM_SIGNAL;
    uapi::SemQuery => uapi::sizes::SEM_QUERY;
    uapi::SemFail => uapi::sizes::SEM_FAIL;
    uapi::SemWait => uapi::sizes::SEM_WAIT, copy_back_on_error: true;
    uapi::SemExportSyncFile => uapi::sizes::SEM_EXPORT_SYNC_FILE;
    uapi::SemImportSyncFile => uapi::sizes::SEM_IMPORT_SYNC_FILE;
    uapi::SemImportHandle => uapi::sizes::SEM_IMPORT_HANDLE;
    uapi::QueueCreate => uapi::sizes::QUEUE_CREATE;
    uapi::QueueDestroy => uapi::sizes::QUEUE_DESTROY;
    uapi::QueueKick => uapi::sizes::QUEUE_KICK;
    uapi::QueueQuery => uapi::sizes::QUEUE_QUERY;
    uapi::UserDeclare => uapi::sizes::USER_DECLARE;
    uapi::UserHostAccess => uapi::sizes::USER_HOST_ACCESS;
    uapi::UserReset => uapi::sizes::USER_RESET;
    uapi::UserRetire => uapi::sizes::USER_RETIRE;
    uapi::UserProgress => uapi::sizes::USER_PROGRESS;
}

// Read from user memory as plain bytes: SEM_WAIT's points, packets from
// mapped rings, launch blocks and descriptors from host BOs.
// SAFETY: `repr(C)`, integer fields, explicit padding (checked by the uapi
// layout test): every bit pattern is valid and no byte is uninitialised.
unsafe impl FromBytes for uapi::SemWaitPoint {}
// SAFETY: `repr(C)`, integer fields (its header's too), explicit padding
// (checked by the uapi layout test): every bit pattern is valid.
unsafe impl FromBytes for uapi::Packet {}
// SAFETY: `repr(C)`, integer fields, explicit padding (checked by the uapi
// layout test): every bit pattern is valid.
unsafe impl FromBytes for uapi::LaunchDesc {}
// SAFETY: `repr(C)`, integer fields, explicit padding (checked by the uapi
// layout test): every bit pattern is valid.
unsafe impl FromBytes for uapi::LaunchBlock {}
// Written to the server's read() buffer as plain bytes.
// SAFETY: `repr(C)` with integer fields only and explicit padding (checked by
// the uapi layout test): no byte is uninitialised, no interior mutability.
unsafe impl AsBytes for uapi::UserInlineBlock {}

/// What a handler leaves to do once its answer is in user memory: nothing,
/// or install the fd the answer names.
trait Publish {
    fn publish(self);
}

impl Publish for () {
    fn publish(self) {}
}

impl Publish for PendingFd {
    fn publish(self) {
        self.install();
    }
}

/// Routes an ioctl on a device file.
pub(crate) fn dispatch(ctx: ArcBorrow<'_, Context>, cmd: u32, arg: usize) -> Result<isize> {
    let cmd = IoctlCmd::decode(cmd);
    if cmd.ty != uapi::IOCTL_TYPE {
        return Err(ENOTTY);
    }
    match cmd.nr {
        uapi::nr::GET_INFO => call(cmd, arg, |a| ctx.get_info(a)),
        uapi::nr::BO_CREATE => call(cmd, arg, |a| ctx.bo_create(a)),
        uapi::nr::BO_DESTROY => call(cmd, arg, |a| ctx.bo_destroy(a)),
        uapi::nr::BO_INFO => call(cmd, arg, |a| ctx.bo_info(a)),
        uapi::nr::BO_EXPORT => call(cmd, arg, |a| ctx.bo_export(a)),
        uapi::nr::BO_IMPORT => call(cmd, arg, |a| ctx.bo_import(a)),
        uapi::nr::SEM_CREATE => call(cmd, arg, |a| ctx.sem_create(a)),
        uapi::nr::SEM_DESTROY => call(cmd, arg, |a| ctx.sem_destroy(a)),
        uapi::nr::SEM_SIGNAL => call(cmd, arg, |a| ctx.sem_signal(a)),
        uapi::nr::SEM_QUERY => call(cmd, arg, |a| ctx.sem_query(a)),
        uapi::nr::SEM_FAIL => call(cmd, arg, |a| ctx.sem_fail(a)),
        uapi::nr::SEM_WAIT => call(cmd, arg, |a| ctx.sem_wait(a)),
        uapi::nr::SEM_EXPORT_SYNC_FILE => call(cmd, arg, |a| ctx.sem_export_sync_file(a)),
        uapi::nr::SEM_IMPORT_SYNC_FILE => call(cmd, arg, |a| ctx.sem_import_sync_file(a)),
        uapi::nr::SEM_IMPORT_HANDLE => call(cmd, arg, |a| ctx.sem_import_handle(a)),
        // The one that keeps a reference to the file's context (in its
        // queue): the others borrow it, and cost no refcount atomics.
        uapi::nr::QUEUE_CREATE => call(cmd, arg, |a| Arc::from(ctx).queue_create(a)),
        uapi::nr::QUEUE_DESTROY => call(cmd, arg, |a| ctx.queue_destroy(a)),
        uapi::nr::QUEUE_QUERY => call(cmd, arg, |a| ctx.queue_query(a)),
        uapi::nr::QUEUE_KICK => call(cmd, arg, |a| ctx.queue_kick(a)),
        _ => Err(ENOTTY),
    }
}

/// Routes an ioctl on a control file.
pub(crate) fn dispatch_control(ctl: &ControlFile, cmd: u32, arg: usize) -> Result<isize> {
    let cmd = IoctlCmd::decode(cmd);
    if cmd.ty != uapi::IOCTL_TYPE {
        return Err(ENOTTY);
    }
    match cmd.nr {
        uapi::nr::USER_DECLARE => call(cmd, arg, |a| ctl.declare(a)),
        uapi::nr::USER_HOST_READ => call(cmd, arg, |a| ctl.user()?.host_access(a, false)),
        uapi::nr::USER_HOST_WRITE => call(cmd, arg, |a| ctl.user()?.host_access(a, true)),
        uapi::nr::USER_RESET => call(cmd, arg, |a: &mut uapi::UserReset| {
            if a.flags != 0 || a.pad != 0 {
                return Err(EINVAL);
            }
            ctl.user()?.server_reset()
        }),
        uapi::nr::USER_RETIRE => call(cmd, arg, |a: &mut uapi::UserRetire| {
            if a.flags != 0 {
                return Err(EINVAL);
            }
            ctl.user()?.retire(a.streams)
        }),
        uapi::nr::USER_PROGRESS => call(cmd, arg, |a: &mut uapi::UserProgress| {
            if a.flags != 0 || a.units == 0 {
                return Err(EINVAL);
            }
            ctl.user()?.report_progress(a.stream, a.units)
        }),
        _ => Err(ENOTTY),
    }
}

/// Copies an `_IOWR` argument in, runs `handler` on it, copies it back and
/// then publishes what the handler made.
fn call<T: IoctlArg, R: Publish>(
    cmd: IoctlCmd,
    arg: usize,
    handler: impl FnOnce(&mut T) -> Result<R>,
) -> Result<isize> {
    if cmd.dir != uapi::IOC_READ | uapi::IOC_WRITE {
        return Err(ENOTTY);
    }
    if !T::SIZES.contains(&cmd.size) || cmd.size > size_of::<T>() {
        return Err(EINVAL);
    }
    let (mut reader, mut writer) =
        UserSlice::new(UserPtr::from_addr(arg), cmd.size).reader_writer();
    // The current layout is read whole, a copy of constant size with no
    // check of the kernel object (as on the C side); an older, shorter one
    // into the start of a default.
    let mut value = if cmd.size == size_of::<T>() {
        reader.read::<T>()?
    } else {
        let mut value = T::default();
        reader.read_slice(value.as_bytes_mut().get_mut(..cmd.size).ok_or(EINVAL)?)?;
        value
    };
    let read = value.clone();
    let result = handler(&mut value);
    // Only a changed argument is copied back (most handlers of a hot path
    // change nothing, or nothing for most calls): a compare costs less
    // than a copy to user memory, which is a lock acquisition to lockdep.
    // The whole struct is compared, a constant size (a few word compares
    // for the small ones); a change past an older layout's end only
    // copies back its unchanged bytes.
    // A failed copy drops what the handler made (an fd is put back).
    if (result.is_ok() || T::COPY_BACK_ON_ERROR) && read.as_bytes() != value.as_bytes() {
        writer.write_slice(value.as_bytes().get(..cmd.size).ok_or(EINVAL)?)?;
    }
    result.map(|made| {
        made.publish();
        0
    })
}
