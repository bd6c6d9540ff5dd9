// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `kmod` backend of the HAL: a `/dev/radianceN` device behind the
//! traits of `backend.rs`, over the ioctl wrappers of the parent module.
//!
//! - Buffers are VRAM buffer objects. Host-visible ones are mappable VRAM
//!   (BAR-visible on a board, the emulator's pages in QEMU), or where the
//!   CPU cannot map VRAM (gluon-sim's lives in its process) VRAM with a
//!   host shadow kept in step by copies (`shadow.rs`); an imported dma-buf
//!   is a host BO, which queue commands reach by DMA but kernels cannot
//!   address (Gluon has no GPU virtual memory).
//! - Semaphores are the kernel's timeline semaphores; queries read the
//!   file's value page.
//! - A queue is a kernel queue. Each submission is one unit of packets
//!   (waits, work, signals) that the kernel skips as a whole when a wait's
//!   semaphore has failed, failing the unit's signals, while the queue goes
//!   on (`Queue::with_semaphores`, SKIP_ON_FAILURE).
//!
//! Failures: the kernel carries a semaphore's failure as an errno, while the
//! HAL promises the status code and message it failed with. Both are kept
//! here (`semaphore.rs`): a failure the host caused is remembered, and one
//! that came from a queue is traced through the submissions that were to
//! signal the semaphore, to a device fault of their queue or to a failed
//! semaphore they waited on.

mod buffer;
mod queue;
mod semaphore;
mod shadow;

use crate::{
    backend::{Backend, BackendBuffer, BackendQueue, BackendSemaphore},
    device_group::Interop,
    BufferParams, DeviceInfo, Error, Result, SemaphoreList, StatusCode, WaitMode,
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
    device: Arc<super::Device>,
    /// Copies between host-visible buffers and their host shadows, on a
    /// device whose VRAM the CPU cannot map.
    shadows: Arc<shadow::ShadowQueue>,
}

impl KmodDevice {
    pub(crate) fn open(uri: &str) -> Result<Self> {
        let device = super::Device::open(uri)?;
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
