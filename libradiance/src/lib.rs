// SPDX-License-Identifier: GPL-2.0 OR MIT

//! libradiance: the userspace side of the Radiance driver stack.
//!
//! `kmod` talks to `/dev/radianceN` (the radiance.ko kernel module) through
//! its ioctls.

pub mod error;
pub mod kmod;

pub use error::{Error, Result, StatusCode};
