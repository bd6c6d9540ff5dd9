// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The library's one error type, and the IREE-like status code each error
//! maps to (what the C ABI returns).

use rustix::io::Errno;
use std::path::PathBuf;

/// IREE's `iree_status_code_t`, which the C ABI returns as its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum StatusCode {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
    Deferred = 17,
    Incompatible = 18,
}

impl StatusCode {
    /// Every code, indexed by its value.
    const ALL: [Self; 19] = [
        Self::Ok,
        Self::Cancelled,
        Self::Unknown,
        Self::InvalidArgument,
        Self::DeadlineExceeded,
        Self::NotFound,
        Self::AlreadyExists,
        Self::PermissionDenied,
        Self::ResourceExhausted,
        Self::FailedPrecondition,
        Self::Aborted,
        Self::OutOfRange,
        Self::Unimplemented,
        Self::Internal,
        Self::Unavailable,
        Self::DataLoss,
        Self::Unauthenticated,
        Self::Deferred,
        Self::Incompatible,
    ];

    /// The code with this numeric value (as the C ABI passes it), if any.
    pub fn from_raw(raw: u32) -> Option<Self> {
        Self::ALL.get(raw as usize).copied()
    }

    /// The errno that carries this code through the kernel, where a
    /// semaphore's failure is a positive errno (SEM_FAIL):
    /// [`StatusCode::from_errno`] maps it back to this code.
    pub fn errno(self) -> Errno {
        ERRNOS.iter().find(|(code, _)| *code == self).map_or(Errno::PROTO, |(_, e)| *e)
    }

    /// The code an errno stands for: the inverse of [`StatusCode::errno`],
    /// and absl's `ErrnoToStatusCode` for the errnos system calls return,
    /// except that EIO is [`StatusCode::Aborted`]: the kernel module fails
    /// work with EIO when the device faulted.
    pub fn from_errno(errno: Errno) -> Self {
        ERRNOS.iter().chain(ERRNO_ALIASES).find(|(_, e)| *e == errno).map_or(Self::Unknown, |(code, _)| *code)
    }
}

/// One errno per code, both ways (`Ok` has none: it is no failure).
const ERRNOS: &[(StatusCode, Errno)] = &[
    (StatusCode::Cancelled, Errno::CANCELED),
    (StatusCode::Unknown, Errno::PROTO),
    (StatusCode::InvalidArgument, Errno::INVAL),
    (StatusCode::DeadlineExceeded, Errno::TIMEDOUT),
    (StatusCode::NotFound, Errno::NOENT),
    (StatusCode::AlreadyExists, Errno::EXIST),
    (StatusCode::PermissionDenied, Errno::PERM),
    (StatusCode::ResourceExhausted, Errno::NOMEM),
    (StatusCode::FailedPrecondition, Errno::PIPE),
    (StatusCode::Aborted, Errno::IO),
    (StatusCode::OutOfRange, Errno::RANGE),
    (StatusCode::Unimplemented, Errno::OPNOTSUPP),
    (StatusCode::Internal, Errno::NOTRECOVERABLE),
    (StatusCode::Unavailable, Errno::AGAIN),
    (StatusCode::DataLoss, Errno::BADMSG),
    (StatusCode::Unauthenticated, Errno::KEYREJECTED),
    (StatusCode::Deferred, Errno::INPROGRESS),
    (StatusCode::Incompatible, Errno::PROTONOSUPPORT),
];

/// Other errnos system calls return, and their codes.
const ERRNO_ALIASES: &[(StatusCode, Errno)] = &[
    (StatusCode::InvalidArgument, Errno::NOTTY),
    (StatusCode::InvalidArgument, Errno::FAULT),
    (StatusCode::InvalidArgument, Errno::TOOBIG),
    (StatusCode::InvalidArgument, Errno::NAMETOOLONG),
    (StatusCode::DeadlineExceeded, Errno::TIME),
    (StatusCode::NotFound, Errno::NODEV),
    (StatusCode::NotFound, Errno::NXIO),
    (StatusCode::NotFound, Errno::SRCH),
    (StatusCode::AlreadyExists, Errno::ALREADY),
    (StatusCode::PermissionDenied, Errno::ACCESS),
    (StatusCode::PermissionDenied, Errno::ROFS),
    (StatusCode::ResourceExhausted, Errno::NOSPC),
    (StatusCode::ResourceExhausted, Errno::MFILE),
    (StatusCode::ResourceExhausted, Errno::NFILE),
    (StatusCode::ResourceExhausted, Errno::NOBUFS),
    (StatusCode::FailedPrecondition, Errno::BADF),
    (StatusCode::FailedPrecondition, Errno::NOTEMPTY),
    (StatusCode::FailedPrecondition, Errno::SHUTDOWN),
    (StatusCode::OutOfRange, Errno::OVERFLOW),
    (StatusCode::OutOfRange, Errno::FBIG),
    (StatusCode::Unimplemented, Errno::NOSYS),
    (StatusCode::Unavailable, Errno::BUSY),
    (StatusCode::Unavailable, Errno::INTR),
    (StatusCode::Unavailable, Errno::HOSTDOWN),
    (StatusCode::Aborted, Errno::DEADLK),
];

/// Everything that can go wrong in libradiance.
///
/// `Clone` because a failed semaphore hands the same error to every waiter
/// and every queue operation that depends on it.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// No `/dev/radiance*` node exists at all.
    #[error("no /dev/radiance* device: is radiance.ko loaded? (try `modprobe radiance` or `insmod radiance.ko`)")]
    NoDevices,
    /// The named device node does not exist.
    #[error("{0}: no such device (see `radctl list`)")]
    DeviceNotFound(PathBuf),
    /// The device URI or path is not one we understand.
    #[error("invalid device name {0:?}: expected kmod:N, /dev/radianceN or N")]
    BadDeviceName(String),
    /// The module speaks an ABI this library cannot use.
    #[error(
        "{path}: kernel ABI {major}.{minor} is not supported (this library speaks {}.x)",
        radiance_uapi::ABI_MAJOR
    )]
    AbiMismatch { path: PathBuf, major: u16, minor: u16 },
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: rustix::io::Errno,
    },
    /// A HAL device URI with a scheme no backend answers to.
    #[error("unknown device {0:?}: expected host, kmod:N, /dev/radianceN, cuda:N or hsa:N")]
    UnknownDevice(String),
    /// An argument the caller can fix (range, alignment, flags, null handle).
    #[error("{0}")]
    InvalidArgument(String),
    /// An offset or length runs past the end of a buffer, or a semaphore
    /// value would go backwards.
    #[error("{0}")]
    OutOfRange(String),
    /// Objects of two different devices were used together.
    #[error("{0} belongs to a different device")]
    WrongDevice(&'static str),
    /// The backend cannot do this at all (for example dma-buf on `host`).
    #[error("{0}")]
    Unsupported(String),
    /// The device ran out of memory or address space.
    #[error("{0}")]
    ResourceExhausted(String),
    /// A wait's deadline passed before its semaphores were reached.
    #[error("wait deadline exceeded")]
    DeadlineExceeded,
    /// Work was dropped unrun because its queue or device went away.
    #[error("{0}")]
    Cancelled(String),
    /// A launch faulted, as the device reports it (ERR_CODE, ERR_PC,
    /// ERR_THREAD in Gluon's response).
    #[error("device fault at pc {pc:#010x}, thread {thread}: {why}")]
    DeviceFault { pc: u32, thread: u64, why: String },
    /// A status given by a caller, e.g. to `Semaphore::fail` through the C ABI.
    #[error("{message}")]
    Status { code: StatusCode, message: String },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps a failed system call with what was being done.
    pub fn os(what: impl Into<String>, source: rustix::io::Errno) -> Self {
        Self::Os { what: what.into(), source }
    }

    /// Wraps a failed std I/O call with what was being done.
    pub fn io(what: impl Into<String>, source: &std::io::Error) -> Self {
        Self::os(what, rustix::io::Errno::from_io_error(source).unwrap_or(rustix::io::Errno::IO))
    }

    /// The IREE status code for this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NoDevices | Self::DeviceNotFound(_) => StatusCode::NotFound,
            Self::BadDeviceName(_) => StatusCode::InvalidArgument,
            Self::AbiMismatch { .. } => StatusCode::Incompatible,
            Self::UnknownDevice(_) | Self::InvalidArgument(_) | Self::WrongDevice(_) => StatusCode::InvalidArgument,
            Self::Unsupported(_) => StatusCode::Unimplemented,
            Self::OutOfRange(_) => StatusCode::OutOfRange,
            Self::ResourceExhausted(_) => StatusCode::ResourceExhausted,
            Self::DeadlineExceeded => StatusCode::DeadlineExceeded,
            Self::Cancelled(_) => StatusCode::Cancelled,
            // The grid was killed, as IREE reports a device-side abort.
            Self::DeviceFault { .. } => StatusCode::Aborted,
            Self::Status { code, .. } => *code,
            Self::Os { source, .. } => StatusCode::from_errno(*source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_round_trip() {
        for raw in 0..19 {
            assert_eq!(StatusCode::from_raw(raw).map(|c| c as u32), Some(raw));
        }
        assert_eq!(StatusCode::from_raw(19), None);
    }

    #[test]
    fn every_failure_code_survives_the_kernel_errno() {
        for code in &StatusCode::ALL[1..] {
            assert_eq!(StatusCode::from_errno(code.errno()), *code, "{code:?} as {:?}", code.errno());
        }
        assert_eq!(StatusCode::from_errno(Errno::NOTTY), StatusCode::InvalidArgument);
        assert_eq!(StatusCode::from_errno(Errno::IO), StatusCode::Aborted);
        assert_eq!(StatusCode::from_errno(Errno::XDEV), StatusCode::Unknown);
        // Each errno means one code.
        for (i, (_, a)) in ERRNOS.iter().chain(ERRNO_ALIASES).enumerate() {
            assert!(ERRNOS.iter().chain(ERRNO_ALIASES).skip(i + 1).all(|(_, b)| a != b), "{a:?} twice");
        }
    }
}
