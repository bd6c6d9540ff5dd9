// SPDX-License-Identifier: GPL-2.0 OR MIT

//! libradiance: the userspace side of the Radiance driver stack.
//!
//! The HAL, modelled on IREE's: a [`Device`] opened by URI creates
//! [`Queue`]s, timeline [`Semaphore`]s and [`Buffer`]s; queue operations
//! (fill, copy, update, dispatch, barrier, execute a [`CommandBuffer`]) are
//! asynchronous and ordered only by the semaphores they wait on and signal.
//! Behind it, one backend per kind of device: `host` (a CPU reference),
//! `kmod`, `cuda` and `hsa`, all behind the same traits (`backend.rs`).
//!
//! Each backend is a folder with the same files (`device`, `buffer`,
//! `queue`, `semaphore`). [`node`] is `/dev/radianceN` (the radiance.ko
//! kernel module) through its ioctls, which the `kmod` backend is built on
//! and radctl uses directly; `ffi` is the C ABI of `include/libradiance.h`.

mod backend;
mod bridge;
pub mod buffer;
pub mod command_buffer;
pub mod cuda;
pub mod device;
pub mod device_group;
pub mod error;
pub mod executable;
mod ffi;
mod host;
mod host_waits;
pub mod hsa;
mod kmod;
mod lock;
mod native_launch;
pub mod node;
pub mod queue;
pub mod semaphore;
mod soc_elf;
mod spin_lock;
pub mod timeline;
pub mod transport;

pub use buffer::{Buffer, BufferParams, BufferRef, BufferUsage, Mapping, MemoryType};
pub use command_buffer::{Command, CommandBuffer, CommandBufferBuilder, DeviceRange, Launch, Pattern};
pub use device::{Device, DeviceInfo};
pub use device_group::{BufferRoute, DeviceGroup, DeviceGroupBuilder, Edge, LinkClass, SemaphoreRoute, Topology};
pub use error::{Error, Result, StatusCode};
pub use executable::Executable;
pub use queue::{Points, Queue};
pub use semaphore::{Semaphore, SemaphoreList, Timeout, WaitMode};
