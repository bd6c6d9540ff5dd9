// SPDX-License-Identifier: GPL-2.0 OR MIT

//! HAL devices: opened by URI, they create queues, semaphores and buffers,
//! and wait on many semaphores at once.

use crate::{
    backend::Backend, //
    cuda,
    device_group::Membership,
    host,
    hsa,
    kmod,
    node,
    semaphore::owned_list,
    Buffer,
    BufferParams,
    CommandBufferBuilder,
    Error,
    Queue,
    Result,
    Semaphore,
    Timeout,
    WaitMode,
};
use std::{
    os::fd::BorrowedFd,
    sync::{Arc, OnceLock},
};

/// What a device is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The URI it was opened by.
    pub uri: String,
    /// The backend: `host`, `kmod`, `cuda` or `hsa`.
    pub backend: &'static str,
    /// A human-readable name.
    pub name: String,
    /// Whether launches of the `radiance_uapi::builtin` entry PCs run the
    /// built-in kernels.
    pub builtin_kernels: bool,
    /// Whether a kernel that touches memory outside every buffer, or past
    /// the end of the one it was given, faults. Radiance has no GPU virtual
    /// memory: on `kmod` such a kernel faults only outside VRAM, and
    /// otherwise corrupts whatever lies there.
    pub memory_protection: bool,
}

/// An open device. Clones share it; it lives as long as any clone or any
/// object it created.
#[derive(Clone)]
pub struct Device {
    inner: Arc<Shared<dyn Backend>>,
}

/// A device's backend and its place in a device group, behind one
/// reference count (the backend last, so that it can be unsized).
struct Shared<B: ?Sized> {
    /// Set once, when a group is finalized over the device; it keeps the
    /// group's topology alive as long as the device lives.
    group: OnceLock<Membership>,
    backend: B,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("uri", &self.info().uri).field("backend", &self.info().backend).finish()
    }
}

impl Device {
    /// Opens a device by URI: `host` (the CPU reference backend), `kmod:N`
    /// or `/dev/radianceN` (radiance.ko), `cuda:N` (the NVIDIA driver),
    /// `hsa:N` (an AMD GPU through ROCr and the amdgpu driver's `/dev/kfd`).
    pub fn open(uri: &str) -> Result<Self> {
        crate::timeline::from_env();
        if uri == "host" {
            return Ok(Self::new(host::HostDevice::new(uri)));
        }
        if uri.starts_with("kmod:") || uri.starts_with("/dev/") {
            return Ok(Self::new(kmod::KmodDevice::open(uri)?));
        }
        if uri.starts_with("cuda:") {
            return Ok(Self::new(cuda::CudaDevice::open(uri)?));
        }
        if uri.starts_with("hsa:") {
            return Ok(Self::new(hsa::HsaDevice::open(uri)?));
        }
        Err(Error::UnknownDevice(uri.to_owned()))
    }

    fn new(backend: impl Backend + 'static) -> Self {
        Self { inner: Arc::new(Shared { group: OnceLock::new(), backend }) }
    }

    /// The backend, for the public types.
    pub(crate) fn backend(&self) -> &dyn Backend {
        &self.inner.backend
    }

    /// The device's place in its device group, if it is in one.
    pub(crate) fn membership(&self) -> Option<&Membership> {
        self.inner.group.get()
    }

    /// Puts the device in a group; fails if it is in one already.
    pub(crate) fn join(&self, membership: Membership) -> Result<()> {
        self.inner.group.set(membership).map_err(|_| Self::already_grouped(self.info()))
    }

    pub(crate) fn already_grouped(info: &DeviceInfo) -> Error {
        Error::Status {
            code: crate::StatusCode::FailedPrecondition,
            message: format!("{} is in a device group already: a device belongs to one group at most", info.uri),
        }
    }

    /// Whether `self` and `other` are the same device.
    pub fn is(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The URIs of the devices present: `host`, `kmod:N` for each
    /// `/dev/radianceN`, and `hsa:N` for each AMD GPU where ROCr starts.
    pub fn enumerate() -> Vec<String> {
        let nodes = node::enumerate().unwrap_or_default();
        let kmod_uris = nodes.iter().filter_map(|p| {
            let index = p.file_name()?.to_str()?.strip_prefix("radiance")?;
            Some(format!("kmod:{index}"))
        });
        std::iter::once("host".to_owned()).chain(kmod_uris).chain(hsa::enumerate()).collect()
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        self.backend().info()
    }

    /// A new queue.
    pub fn create_queue(&self) -> Result<Queue> {
        Ok(Queue::new(self.clone(), self.backend().create_queue()?))
    }

    /// A new timeline semaphore with payload `initial`.
    pub fn create_semaphore(&self, initial: u64) -> Result<Semaphore> {
        Ok(Semaphore::new(self.clone(), self.backend().create_semaphore(initial)?))
    }

    /// A new buffer (zero-filled on `host`; contents unspecified elsewhere).
    pub fn allocate_buffer(&self, params: BufferParams) -> Result<Buffer> {
        params.check()?;
        Ok(Buffer::new(self.clone(), params, self.backend().allocate_buffer(&params)?))
    }

    /// A buffer over a dma-buf exported by anyone; `params.size` is its size.
    pub fn import_dma_buf(&self, fd: BorrowedFd<'_>, params: BufferParams) -> Result<Buffer> {
        params.check()?;
        Ok(Buffer::new(self.clone(), params, self.backend().import_dma_buf(fd, &params)?))
    }

    /// Starts recording a command buffer for this device's queues.
    pub fn command_buffer(&self) -> CommandBufferBuilder {
        CommandBufferBuilder::new(self.clone())
    }

    /// Blocks until all (or any) of `points` are reached. A failed semaphore
    /// among them returns its error; a passed deadline returns
    /// [`Error::DeadlineExceeded`]. An empty list is reached at once.
    pub fn wait_semaphores(
        &self,
        mode: WaitMode,
        points: &[(&Semaphore, u64)],
        timeout: impl Into<Timeout>,
    ) -> Result<()> {
        let deadline = timeout.into().deadline();
        self.backend().wait_semaphores(mode, &owned_list(self, points)?, deadline)
    }

    /// Fails with [`Error::WrongDevice`] unless `other` is this device.
    pub(crate) fn check_same(&self, other: &Device, what: &'static str) -> Result<()> {
        if self.is(other) {
            Ok(())
        } else {
            Err(Error::WrongDevice(what))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StatusCode;

    fn open_error(uri: &str) -> Error {
        match Device::open(uri) {
            Ok(_) => panic!("{uri} opened"),
            Err(e) => e,
        }
    }

    #[test]
    fn uris_without_a_backend_say_why() {
        // No device node by that name on any machine.
        let missing = open_error("kmod:4000000000");
        assert_eq!(missing.status(), StatusCode::NotFound, "{missing}");
        assert_eq!(open_error("kmod:x").status(), StatusCode::InvalidArgument);
        let unknown = open_error("vulkan:0");
        assert_eq!(unknown.status(), StatusCode::InvalidArgument);
        assert!(unknown.to_string().contains("vulkan:0"), "{unknown}");
    }

    #[test]
    fn host_opens_and_names_itself() {
        let device = Device::open("host").unwrap();
        assert_eq!(device.info().backend, "host");
        assert!(device.info().builtin_kernels);
    }
}
