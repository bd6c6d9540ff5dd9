// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A device node, `/dev/radianceN`, driven through radiance.ko's ioctls:
//! buffer objects, queues and semaphores as the kernel gives them, and the
//! module's debugfs counters. radctl and the tools use it as it is; the
//! HAL's `kmod` backend is built on it.

mod bo;
mod debugfs;
mod ioctl;
mod load;
mod mem_stats;
mod queue;
mod queue_stats;
mod sem_stats;
mod semaphore;
mod staging;
mod stream_stats;

pub use bo::{map_dma_buf, BufferObject, Placement};
pub use mem_stats::MemStats;
pub use queue::{Frame, Printf, Queue, QueueFault, QueueStatus, VramRange};
pub use queue_stats::QueueStats;
pub use sem_stats::SemStats;
pub use semaphore::Semaphore;
pub use stream_stats::{HeadCommand, StreamActivity, StreamStats};

use crate::{Error, Result};
use radiance_uapi as uapi;
use rustix::fs::{Mode, OFlags};
use std::{
    os::fd::{AsFd, BorrowedFd, OwnedFd},
    path::{Path, PathBuf},
    sync::Arc,
};

/// Where the kernel module's device nodes appear.
const DEV_DIR: &str = "/dev";
const NODE_PREFIX: &str = "radiance";

/// The hardware behind a device node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// The module's software Gluon (no hardware).
    Emulated,
    /// A PCI FPGA board.
    Pci,
    /// A device-tree SoC.
    Platform,
    /// A Gluon served by a process through the control node (gluon-sim
    /// through gluon-bridge, an RTL simulation, a bring-up link).
    User,
    /// A kind this library does not know yet.
    Other(u32),
}

impl BackendKind {
    fn from_uapi(v: u32) -> Self {
        match v {
            uapi::backend::EMULATED => Self::Emulated,
            uapi::backend::PCI => Self::Pci,
            uapi::backend::PLATFORM => Self::Platform,
            uapi::backend::USER => Self::User,
            other => Self::Other(other),
        }
    }

    /// A short lower-case name, for tables and JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Emulated => "emulated",
            Self::Pci => "pci",
            Self::Platform => "platform",
            Self::User => "user",
            Self::Other(_) => "unknown",
        }
    }
}

/// What GET_INFO says about a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub abi_major: u16,
    pub abi_minor: u16,
    pub index: u32,
    pub backend: BackendKind,
    pub name: String,
    pub cores: u32,
    pub warps_per_core: u32,
    pub threads_per_warp: u32,
    pub max_queues: u32,
    pub vram_size: u64,
    pub packet_size: u32,
    pub doorbell_page_size: u32,
    pub features: u64,
    /// The `radiance_uapi::builtin` entry PCs the device runs.
    pub builtins: Vec<u32>,
    /// One of `radiance_uapi::dialect` (0 before ABI 1.8).
    pub dialect: u32,
    /// Hardware streams (0 before ABI 1.8).
    pub streams: u32,
    /// `radiance_uapi::caps` bits.
    pub caps: u64,
    /// Bit `i` set: stream `i` is retired and runs nothing (ABI 1.14; 0
    /// before).
    pub retired_streams: u32,
}

impl DeviceInfo {
    /// The dialect's name, as the driver's module parameter and
    /// Documentation/design/gluon.md say.
    pub fn dialect_name(&self) -> &'static str {
        match self.dialect {
            uapi::dialect::GLUON_SIM_16 => "gluon-sim-16",
            uapi::dialect::GLUON_24 => "gluon-24",
            _ => "unknown",
        }
    }

    /// The retired streams, in order.
    pub fn retired(&self) -> Vec<u32> {
        (0..self.streams.min(32)).filter(|s| self.retired_streams & (1 << s) != 0).collect()
    }

    /// The names of the capability bits set.
    pub fn cap_names(&self) -> Vec<&'static str> {
        use uapi::caps;
        let names = [
            (caps::SET, "set"),
            (caps::FENCE, "fence"),
            (caps::WAIT, "wait"),
            (caps::COPY_D2D, "copy-d2d"),
            (caps::COUNTERS, "counters"),
            (caps::SUBWORD, "subword"),
            (caps::VRAM_MAPPABLE, "vram-mappable"),
        ];
        names.iter().filter(|(bit, _)| self.caps & bit != 0).map(|&(_, name)| name).collect()
    }
}

impl From<&uapi::GetInfo> for DeviceInfo {
    fn from(i: &uapi::GetInfo) -> Self {
        let name_len = i.name.iter().position(|&b| b == 0).unwrap_or(i.name.len());
        Self {
            abi_major: i.abi_major,
            abi_minor: i.abi_minor,
            index: i.device_index,
            backend: BackendKind::from_uapi(i.backend),
            name: String::from_utf8_lossy(&i.name[..name_len]).into_owned(),
            cores: i.cores,
            warps_per_core: i.warps_per_core,
            threads_per_warp: i.threads_per_warp,
            max_queues: i.max_queues,
            vram_size: i.vram_size,
            packet_size: i.packet_size,
            doorbell_page_size: i.doorbell_page_size,
            features: i.features,
            builtins: (0..)
                .zip(uapi::builtin::ALL)
                .filter(|(bit, _)| i.builtins & (1 << bit) != 0)
                .map(|(_, pc)| pc)
                .collect(),
            dialect: i.dialect,
            streams: i.streams,
            caps: i.caps,
            retired_streams: i.retired_streams,
        }
    }
}

/// The device nodes present now, in index order.
pub fn enumerate() -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(DEV_DIR).map_err(|e| Error::io(format!("reading {DEV_DIR}"), &e))?;
    let mut nodes: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let index = name.to_str()?.strip_prefix(NODE_PREFIX)?.parse().ok()?;
            Some((index, e.path()))
        })
        .collect();
    nodes.sort();
    Ok(nodes.into_iter().map(|(_, p)| p).collect())
}

/// Turns `kmod:N`, `N`, `radianceN` or a path into a device node path.
pub fn resolve(name: &str) -> Result<PathBuf> {
    let index = name.strip_prefix("kmod:").or_else(|| name.strip_prefix(NODE_PREFIX)).unwrap_or(name);
    if let Ok(n) = index.parse::<u32>() {
        return Ok(Path::new(DEV_DIR).join(format!("{NODE_PREFIX}{n}")));
    }
    if name.starts_with('/') {
        return Ok(PathBuf::from(name));
    }
    Err(Error::BadDeviceName(name.to_owned()))
}

/// An open `/dev/radianceN`.
#[derive(Debug)]
pub struct Device {
    /// Shared with the buffer objects, which outlive nothing but need the
    /// file to destroy themselves.
    fd: Arc<OwnedFd>,
    path: PathBuf,
    info: DeviceInfo,
    /// The file's semaphore value page, mapped on first use.
    sem_values: std::sync::OnceLock<Arc<memmap2::Mmap>>,
}

impl Device {
    /// Opens a device by name (see [`resolve`]) and checks its ABI version.
    pub fn open(name: &str) -> Result<Self> {
        let path = resolve(name)?;
        let fd = rustix::fs::open(&path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::NOENT if enumerate().map(|v| v.is_empty()).unwrap_or(true) => Error::NoDevices,
            rustix::io::Errno::NOENT | rustix::io::Errno::NODEV | rustix::io::Errno::NXIO => {
                Error::DeviceNotFound(path.clone())
            }
            e => Error::os(format!("opening {}", path.display()), e),
        })?;
        let mut raw = uapi::GetInfo::default();
        // A module before ABI 1.14 refuses the larger struct: ask as it
        // knows it (its retired_streams stay 0).
        ioctl::get_info(&fd, &mut raw)
            .or_else(|e| match e {
                rustix::io::Errno::INVAL => ioctl::get_info_1_8(&fd, &mut raw),
                e => Err(e),
            })
            .map_err(|e| Error::os(format!("{}: GET_INFO", path.display()), e))?;
        let info = DeviceInfo::from(&raw);
        if info.abi_major != uapi::ABI_MAJOR {
            return Err(Error::AbiMismatch { path, major: info.abi_major, minor: info.abi_minor });
        }
        Ok(Self { fd: Arc::new(fd), path, info, sem_values: Default::default() })
    }

    /// The device node this was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What GET_INFO said when the device was opened.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }
}

impl AsFd for Device {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_device_names() {
        for name in ["kmod:3", "3", "radiance3", "/dev/radiance3"] {
            assert_eq!(resolve(name).unwrap(), PathBuf::from("/dev/radiance3"), "{name}");
        }
        assert!(matches!(resolve("cuda:0"), Err(Error::BadDeviceName(_))));
        assert!(matches!(resolve("kmod:x"), Err(Error::BadDeviceName(_))));
    }

    #[test]
    fn decodes_info_name_and_backend() {
        let mut raw =
            uapi::GetInfo { backend: uapi::backend::PCI, vram_size: 1 << 30, builtins: 0b0101, ..Default::default() };
        raw.name[..5].copy_from_slice(b"board");
        let info = DeviceInfo::from(&raw);
        assert_eq!(info.name, "board");
        assert_eq!(info.backend, BackendKind::Pci);
        assert_eq!(info.vram_size, 1 << 30);
        assert_eq!(info.builtins, [uapi::builtin::FILL_U32, uapi::builtin::VECADD_U32]);
        raw.backend = 99;
        assert_eq!(DeviceInfo::from(&raw).backend, BackendKind::Other(99));
    }
}
