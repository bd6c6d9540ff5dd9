// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The library's one error type, and the IREE-like status code each error
//! maps to (what the C ABI returns).

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

/// Everything that can go wrong in libradiance.
#[derive(Debug, thiserror::Error)]
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
    #[error("{path}: kernel ABI {major}.{minor} is not supported (this library speaks {}.x)", radiance_uapi::ABI_MAJOR)]
    AbiMismatch { path: PathBuf, major: u16, minor: u16 },
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: rustix::io::Errno,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps a failed system call with what was being done.
    pub fn os(what: impl Into<String>, source: rustix::io::Errno) -> Self {
        Self::Os { what: what.into(), source }
    }

    /// The IREE status code for this error.
    pub fn status(&self) -> StatusCode {
        use rustix::io::Errno;
        match self {
            Self::NoDevices | Self::DeviceNotFound(_) => StatusCode::NotFound,
            Self::BadDeviceName(_) => StatusCode::InvalidArgument,
            Self::AbiMismatch { .. } => StatusCode::Incompatible,
            Self::Os { source, .. } => match *source {
                Errno::INVAL | Errno::NOTTY => StatusCode::InvalidArgument,
                Errno::NOENT | Errno::NODEV | Errno::NXIO => StatusCode::NotFound,
                Errno::NOMEM | Errno::NOSPC => StatusCode::ResourceExhausted,
                Errno::ACCESS | Errno::PERM => StatusCode::PermissionDenied,
                Errno::BUSY | Errno::AGAIN => StatusCode::Unavailable,
                Errno::TIME | Errno::TIMEDOUT => StatusCode::DeadlineExceeded,
                Errno::CANCELED => StatusCode::Cancelled,
                Errno::EXIST => StatusCode::AlreadyExists,
                Errno::RANGE | Errno::OVERFLOW => StatusCode::OutOfRange,
                _ => StatusCode::Unknown,
            },
        }
    }
}
