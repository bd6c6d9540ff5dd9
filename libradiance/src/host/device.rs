// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `host` backend's device: what it creates, and its waits on many
//! semaphores at once.

use super::buffer::AddressSpace;
use super::semaphore::Hub;
use super::{queue, semaphore};
use crate::{
    backend::{Backend, BackendBuffer, BackendQueue, BackendSemaphore},
    device_group::Interop,
    BufferParams, DeviceInfo, Error, Result, SemaphoreList, WaitMode,
};
use std::{os::fd::BorrowedFd, sync::Arc, time::Instant};

pub(crate) struct HostDevice {
    info: DeviceInfo,
    hub: Arc<Hub>,
    space: Arc<AddressSpace>,
}

impl HostDevice {
    pub(crate) fn new(uri: &str) -> Self {
        Self {
            info: DeviceInfo {
                uri: uri.to_owned(),
                backend: "host",
                name: "CPU reference device".to_owned(),
                builtin_kernels: true,
                // Every kernel access is checked against the address space.
                memory_protection: true,
            },
            hub: Arc::default(),
            space: Arc::default(),
        }
    }
}

impl Backend for HostDevice {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn create_semaphore(&self, initial: u64) -> Result<Arc<dyn BackendSemaphore>> {
        Ok(Arc::new(semaphore::HostSemaphore::new(Arc::clone(&self.hub), initial)))
    }

    fn wait_semaphores(&self, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
        self.hub.wait(mode, points, deadline, None)
    }

    fn allocate_buffer(&self, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Ok(self.space.allocate(params)?)
    }

    fn import_dma_buf(&self, _fd: BorrowedFd<'_>, _params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Err(Error::Unsupported("dma-buf import: the host backend has no kernel driver to attach a dma-buf to".into()))
    }

    fn create_queue(&self) -> Result<Arc<dyn BackendQueue>> {
        Ok(Arc::new(queue::HostQueue::new(Arc::clone(&self.hub), Arc::clone(&self.space))?))
    }

    /// Its queues are threads that copy through `BackendBuffer::read` and
    /// `write`, which reach any backend's host-visible memory.
    fn interop(&self) -> Interop {
        Interop { host_queues: true, ..Interop::default() }
    }
}
