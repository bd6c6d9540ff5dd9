// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `kmod` backend's device: what it creates, and its waits on many
//! semaphores at once.

use super::{buffer, queue, semaphore, shadow};
use crate::{
    backend::{Backend, BackendBuffer, BackendQueue, BackendSemaphore},
    device_group::Interop,
    node, BufferParams, DeviceInfo, Error, Result, SemaphoreList, StatusCode, WaitMode,
};
use radiance_uapi as uapi;
use std::{os::fd::BorrowedFd, sync::Arc, time::Instant};

/// The kernel ABI minor version this backend needs: 1.7 brought
/// SKIP_ON_FAILURE, without which a failed wait would stop a queue, and 1.8
/// LAUNCH_DESC, which launches go through.
const MIN_ABI_MINOR: u16 = 8;

/// The kernel ABI minor version that brought SEM_IMPORT_HANDLE: before it,
/// semaphores cross between devices as sync_files.
const SEM_IMPORT_HANDLE_ABI_MINOR: u16 = 10;

pub(crate) struct KmodDevice {
    info: DeviceInfo,
    device: Arc<node::Device>,
    /// Copies between host-visible buffers and their host shadows, on a
    /// device whose VRAM the CPU cannot map.
    shadows: Arc<shadow::ShadowQueue>,
}

impl KmodDevice {
    pub(crate) fn open(uri: &str) -> Result<Self> {
        let device = node::Device::open(uri)?;
        let kernel = device.info();
        if kernel.abi_minor < MIN_ABI_MINOR {
            return Err(Error::Status {
                code: StatusCode::Incompatible,
                message: format!(
                    "{}: radiance.ko speaks ABI {}.{}; the kmod backend needs {}.{MIN_ABI_MINOR}",
                    device.path().display(),
                    kernel.abi_major,
                    kernel.abi_minor,
                    uapi::ABI_MAJOR
                ),
            });
        }
        let info = DeviceInfo {
            uri: uri.to_owned(),
            backend: "kmod",
            name: format!("{} ({})", kernel.name, device.path().display()),
            builtin_kernels: kernel.builtins.len() == uapi::builtin::ALL.len(),
            memory_protection: false,
        };
        let device = Arc::new(device);
        let shadows = Arc::new(shadow::ShadowQueue::new(Arc::clone(&device)));
        Ok(Self { info, device, shadows })
    }
}

impl Backend for KmodDevice {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn create_semaphore(&self, initial: u64) -> Result<Arc<dyn BackendSemaphore>> {
        Ok(semaphore::KmodSemaphore::new(&self.device, initial)?)
    }

    fn wait_semaphores(&self, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
        semaphore::wait(&self.device, mode, points, deadline)
    }

    fn allocate_buffer(&self, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Ok(Arc::new(buffer::KmodBuffer::allocate(&self.device, &self.shadows, params)?))
    }

    fn import_dma_buf(&self, fd: BorrowedFd<'_>, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Ok(Arc::new(buffer::KmodBuffer::import(&self.device, fd, params)?))
    }

    fn create_queue(&self) -> Result<Arc<dyn BackendQueue>> {
        Ok(Arc::new(queue::KmodQueue::new(Arc::clone(&self.device))?))
    }

    /// Semaphore points cross as sync_files; semaphores of other devices
    /// of the module alias into this one's file (ABI 1.10); host-visible
    /// buffers export as dma-bufs where the CPU maps VRAM (elsewhere they
    /// are shadows: see `shadow.rs`), and any dma-buf imports as a host
    /// buffer object.
    fn interop(&self) -> Interop {
        let info = self.device.info();
        Interop {
            sync_file: true,
            semaphore_aliases: info.abi_minor >= SEM_IMPORT_HANDLE_ABI_MINOR,
            cuda_events: false,
            dma_buf_export: info.caps & uapi::caps::VRAM_MAPPABLE != 0,
            dma_buf_import: true,
            host_queues: false,
        }
    }

    fn alias_semaphore(&self, semaphore: &Arc<dyn BackendSemaphore>) -> Result<Arc<dyn BackendSemaphore>> {
        let semaphore = semaphore.as_any().downcast_ref().ok_or(Error::WrongDevice("a semaphore"))?;
        Ok(semaphore::KmodSemaphore::alias(&self.device, semaphore)?)
    }
}
