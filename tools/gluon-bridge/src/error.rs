// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What can stop the bridge.

/// An error of the bridge, naming what it was doing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed.
    #[error("{what}: {source}")]
    Os { what: String, source: rustix::io::Errno },
    /// gluon-sim broke the protocol, went away or stopped answering.
    #[error("gluon-sim: {0}")]
    Sim(String),
    /// gluon-sim closed the connection.
    #[error("gluon-sim: it closed the connection")]
    Closed,
    /// The memory link to a SoC failed.
    #[error("the SoC's link: {0}")]
    Link(#[from] crate::link::LinkError),
    /// A command line value is out of range.
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// A failed system call, and what it was for.
    pub fn os(what: impl Into<String>, source: rustix::io::Errno) -> Self {
        Self::Os { what: what.into(), source }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
