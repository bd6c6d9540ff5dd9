// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The cuda device: a CUDA device's primary context, the built-in kernels
//! loaded into it, and what its queues, semaphores and buffers share.

use super::{
    buffer::CudaBuffer,
    context::Context,
    module::Module,
    queue::CudaQueue,
    result::Api,
    semaphore::{self, CudaSemaphore, EventPool},
};
use crate::{
    backend::{Backend, BackendBuffer, BackendQueue, BackendSemaphore},
    device_group::Interop,
    native_launch::AddressSpace,
    BufferParams, DeviceInfo, Error, Result, SemaphoreList, WaitMode,
};
use std::{any::Any, os::fd::BorrowedFd, sync::Arc, time::Instant};

/// What every object of a device holds on to.
pub(super) struct Shared {
    pub(super) kernels: Module,
    pub(super) space: AddressSpace<CudaBuffer>,
    pub(super) events: EventPool,
    /// Last: the context goes after everything made in it.
    pub(super) ctx: Context,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Ok(_current) = self.ctx.enter() {
            // SAFETY: every queue and semaphore (and so every launch and
            // recorded event) of the device is gone.
            unsafe {
                self.kernels.unload(self.ctx.api());
                self.events.destroy(self.ctx.api());
            }
        }
    }
}

pub(crate) struct CudaDevice {
    info: DeviceInfo,
    shared: Arc<Shared>,
}

impl CudaDevice {
    /// Opens `cuda:N`: CUDA device N of this process's driver.
    pub(crate) fn open(uri: &str) -> Result<Self> {
        let ordinal = uri
            .strip_prefix("cuda:")
            .and_then(|n| n.parse::<u16>().ok())
            .ok_or_else(|| Error::InvalidArgument(format!("invalid device name {uri:?}: expected cuda:N")))?;
        let api = Api::load(uri)?;
        let device = api.device(ordinal.into())?;
        let name = api.device_name(device)?;
        let mut ctx = Context::retain(api, device)?;
        let kernels = {
            let _current = ctx.enter()?;
            Module::load(api)?
        };
        // What the submission path does with no context current: a launch,
        // a signal, a wait and a query (`Context::enter_for_streams`).
        // SAFETY: the stream is the context's, which the module is loaded in.
        ctx.learn_whether_streams_carry_it(|api, stream, event| unsafe {
            kernels.launch_nothing(api, stream)?;
            api.event_record(event, stream)?;
            api.stream_wait_event(stream, event)?;
            api.event_query(event).map(drop)
        })?;
        let shared = Shared { kernels, space: AddressSpace::default(), events: EventPool::default(), ctx };
        Ok(Self {
            info: DeviceInfo {
                uri: uri.to_owned(),
                backend: "cuda",
                name,
                builtin_kernels: true,
                // The built-ins check every address against live buffers.
                memory_protection: true,
            },
            shared: Arc::new(shared),
        })
    }
}

impl Backend for CudaDevice {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn create_semaphore(&self, initial: u64) -> Result<Arc<dyn BackendSemaphore>> {
        Ok(Arc::new(CudaSemaphore::new(&self.shared, initial)))
    }

    fn wait_semaphores(&self, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
        semaphore::wait(mode, points, deadline)
    }

    fn allocate_buffer(&self, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Ok(CudaBuffer::allocate(&self.shared, params)?)
    }

    fn import_dma_buf(&self, _fd: BorrowedFd<'_>, _params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Err(Error::Unsupported(
            "dma-buf import: the CUDA driver API imports external memory only as opaque fds, not dma-bufs".into(),
        ))
    }

    fn create_queue(&self) -> Result<Arc<dyn BackendQueue>> {
        Ok(Arc::new(CudaQueue::new(&self.shared)?))
    }

    /// Device memory exports as a dma-buf where the driver can
    /// (`cuMemGetHandleForAddressRange`); nothing is imported. Another cuda
    /// device uses its semaphores' events itself; other devices reach its
    /// semaphores through the host.
    fn interop(&self) -> Interop {
        Interop { dma_buf_export: true, cuda_events: true, ..Interop::default() }
    }

    /// A semaphore of another cuda device is used as it is: its timepoints'
    /// events are waited on by this device's streams, and theirs recorded
    /// into it (`semaphore.rs`).
    fn alias_semaphore(&self, semaphore: &Arc<dyn BackendSemaphore>) -> Result<Arc<dyn BackendSemaphore>> {
        if !semaphore.as_any().is::<CudaSemaphore>() {
            return Err(Error::WrongDevice("a semaphore"));
        }
        Ok(Arc::clone(semaphore))
    }

    /// Peer access to another cuda device's memory, where the hardware has
    /// it (the same device always reaches its own). A driver error counts
    /// as no: the copies then have no route, and say so.
    fn reach_memory_of(&self, other: &dyn Backend) -> bool {
        other
            .as_any()
            .downcast_ref::<CudaDevice>()
            .is_some_and(|other| self.shared.ctx.reach_memory_of(&other.shared.ctx).unwrap_or(false))
    }
}
