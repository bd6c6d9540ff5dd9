// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The driver calls as functions returning [`Result`]: each `CUresult` becomes
//! a [`CudaError`] naming the call and the error (`cuGetErrorName`), which
//! turns into the library's [`Error`] with the nearest status code. Raw
//! handles still pass through here; the safe types own them.

use super::sys::*;
use crate::{Error, Result, StatusCode};
use std::{
    ffi::{c_int, c_uint, c_void, CStr},
    os::fd::{FromRawFd, OwnedFd},
    ptr,
    sync::OnceLock,
};

/// A failed driver call.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{call}: {name}: {description}")]
pub struct CudaError {
    pub call: &'static str,
    pub code: CUresult,
    pub name: String,
    pub description: String,
}

impl CudaError {
    fn status(&self) -> StatusCode {
        match self.code {
            1 => StatusCode::InvalidArgument,                  // INVALID_VALUE
            2 => StatusCode::ResourceExhausted,                // OUT_OF_MEMORY
            3 | 4 | 34 | 35 | 46 => StatusCode::Unavailable,   // not initialised, stub library, old driver, busy
            100 | 101 => StatusCode::NotFound,                 // NO_DEVICE, INVALID_DEVICE
            200 | 218 | 209 | 500 => StatusCode::Incompatible, // bad image or PTX, no kernel image, not found
            700 | 714..=719 => StatusCode::Aborted,            // the context faulted
            801 => StatusCode::Unimplemented,                  // NOT_SUPPORTED
            999 => StatusCode::Unknown,
            _ => StatusCode::Internal,
        }
    }
}

impl From<CudaError> for Error {
    fn from(e: CudaError) -> Self {
        Self::Status { code: e.status(), message: e.to_string() }
    }
}

/// The loaded driver: every call below goes through it.
#[derive(Clone, Copy)]
pub(super) struct Api(&'static Driver);

impl Api {
    /// The driver, loaded and initialised (once per process).
    pub(super) fn load(uri: &str) -> Result<Self> {
        let driver = Driver::get().map_err(|why| Error::Status {
            code: StatusCode::Unavailable,
            message: format!("{uri}: CUDA driver not found ({why})"),
        })?;
        let api = Self(driver);
        static INIT: OnceLock<Result<(), CudaError>> = OnceLock::new();
        // SAFETY: cuInit takes flags (0) and nothing else.
        INIT.get_or_init(|| api.check("cuInit", unsafe { (driver.cuInit)(0) })).clone()?;
        Ok(api)
    }

    /// `Ok` for `CUDA_SUCCESS`, else the named error. Inlined, so that a
    /// successful call on the submission path costs one comparison.
    #[inline]
    pub(super) fn check(self, call: &'static str, code: CUresult) -> Result<(), CudaError> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, code))
        }
    }

    #[cold]
    fn error(self, call: &'static str, code: CUresult) -> CudaError {
        let text = |get: unsafe extern "C" fn(CUresult, *mut *const std::ffi::c_char) -> CUresult| {
            let mut s = ptr::null();
            // SAFETY: the driver points `s` at a static string, or leaves it null.
            let ok = unsafe { get(code, &mut s) } == CUDA_SUCCESS && !s.is_null();
            // SAFETY: checked non-null; the driver's strings are NUL-terminated.
            ok.then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
        };
        CudaError {
            call,
            code,
            name: text(self.0.cuGetErrorName).unwrap_or_else(|| format!("CUresult {code}")),
            description: text(self.0.cuGetErrorString).unwrap_or_default(),
        }
    }

    /// Runs a driver call that fills one out-parameter.
    fn out<T>(self, call: &'static str, f: impl FnOnce(*mut T) -> CUresult) -> Result<T, CudaError>
    where
        T: Default,
    {
        let mut value = T::default();
        self.check(call, f(&mut value))?;
        Ok(value)
    }

    pub(super) fn device(self, ordinal: c_int) -> Result<CUdevice> {
        // SAFETY: plain out-parameter.
        Ok(self.out("cuDeviceGet", |d| unsafe { (self.0.cuDeviceGet)(d, ordinal) })?)
    }

    pub(super) fn device_name(self, device: CUdevice) -> Result<String> {
        let mut name = [0u8; 256];
        // SAFETY: the buffer's length is passed with it.
        self.check("cuDeviceGetName", unsafe {
            (self.0.cuDeviceGetName)(name.as_mut_ptr().cast(), name.len() as c_int, device)
        })?;
        let name = CStr::from_bytes_until_nul(&name).map(|s| s.to_string_lossy().into_owned());
        Ok(name.unwrap_or_default())
    }

    pub(super) fn primary_context_retain(self, device: CUdevice) -> Result<CUcontext> {
        let mut ctx = ptr::null_mut();
        // SAFETY: plain out-parameter.
        self.check("cuDevicePrimaryCtxRetain", unsafe { (self.0.cuDevicePrimaryCtxRetain)(&mut ctx, device) })?;
        Ok(ctx)
    }

    /// # Safety
    /// Balances one successful [`Api::primary_context_retain`] of `device`.
    pub(super) unsafe fn primary_context_release(self, device: CUdevice) -> Result<()> {
        Ok(self.check("cuDevicePrimaryCtxRelease_v2", (self.0.cuDevicePrimaryCtxRelease)(device))?)
    }

    /// # Safety
    /// `ctx` is a live context.
    pub(super) unsafe fn push_context(self, ctx: CUcontext) -> Result<()> {
        Ok(self.check("cuCtxPushCurrent_v2", (self.0.cuCtxPushCurrent)(ctx))?)
    }

    /// # Safety
    /// `ctx` is a live context.
    pub(super) unsafe fn set_context(self, ctx: CUcontext) -> Result<()> {
        Ok(self.check("cuCtxSetCurrent", (self.0.cuCtxSetCurrent)(ctx))?)
    }

    #[inline]
    pub(super) fn current_context(self) -> Result<CUcontext> {
        let mut ctx = ptr::null_mut();
        // SAFETY: plain out-parameter.
        self.check("cuCtxGetCurrent", unsafe { (self.0.cuCtxGetCurrent)(&mut ctx) })?;
        Ok(ctx)
    }

    pub(super) fn pop_context(self) -> Result<()> {
        let mut ctx = ptr::null_mut();
        // SAFETY: plain out-parameter.
        Ok(self.check("cuCtxPopCurrent_v2", unsafe { (self.0.cuCtxPopCurrent)(&mut ctx) })?)
    }

    /// A non-blocking stream of the current context: it never synchronises
    /// with the legacy default stream.
    /// Whether `device`'s contexts can map `peer`'s memory (NVLink or PCIe
    /// peer-to-peer).
    pub(super) fn can_access_peer(self, device: CUdevice, peer: CUdevice) -> Result<bool> {
        // SAFETY: plain out-parameter.
        let can: c_int =
            self.out("cuDeviceCanAccessPeer", |c| unsafe { (self.0.cuDeviceCanAccessPeer)(c, device, peer) })?;
        Ok(can != 0)
    }

    /// Maps `peer`'s memory into the current context; done already is done.
    ///
    /// # Safety
    /// `peer` is a live context of another device.
    pub(super) unsafe fn enable_peer_access(self, peer: CUcontext) -> Result<()> {
        match (self.0.cuCtxEnablePeerAccess)(peer, 0) {
            CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            r => Ok(self.check("cuCtxEnablePeerAccess", r)?),
        }
    }

    pub(super) fn stream_create(self) -> Result<CUstream> {
        let mut stream = ptr::null_mut();
        // SAFETY: plain out-parameter.
        self.check("cuStreamCreate", unsafe { (self.0.cuStreamCreate)(&mut stream, CU_STREAM_NON_BLOCKING) })?;
        Ok(stream)
    }

    /// # Safety
    /// `stream` is live and not used again.
    pub(super) unsafe fn stream_destroy(self, stream: CUstream) -> Result<()> {
        Ok(self.check("cuStreamDestroy_v2", (self.0.cuStreamDestroy)(stream))?)
    }

    /// # Safety
    /// `stream` is live.
    pub(super) unsafe fn stream_synchronize(self, stream: CUstream) -> Result<()> {
        Ok(self.check("cuStreamSynchronize", (self.0.cuStreamSynchronize)(stream))?)
    }

    /// An event of the current context without timing (the cheapest kind to
    /// record and wait on).
    pub(super) fn event_create(self) -> Result<CUevent> {
        let mut event = ptr::null_mut();
        // SAFETY: plain out-parameter.
        self.check("cuEventCreate", unsafe { (self.0.cuEventCreate)(&mut event, CU_EVENT_DISABLE_TIMING) })?;
        Ok(event)
    }

    /// # Safety
    /// `event` is live and not used again.
    pub(super) unsafe fn event_destroy(self, event: CUevent) -> Result<()> {
        Ok(self.check("cuEventDestroy_v2", (self.0.cuEventDestroy)(event))?)
    }

    /// Captures in `event` the work queued on `stream` so far.
    ///
    /// # Safety
    /// `event` and `stream` are live and of one context.
    #[inline]
    pub(super) unsafe fn event_record(self, event: CUevent, stream: CUstream) -> Result<()> {
        Ok(self.check("cuEventRecord", (self.0.cuEventRecord)(event, stream))?)
    }

    /// Whether the work `event` last captured is done.
    ///
    /// # Safety
    /// `event` is live.
    pub(super) unsafe fn event_query(self, event: CUevent) -> Result<bool> {
        match (self.0.cuEventQuery)(event) {
            CUDA_ERROR_NOT_READY => Ok(false),
            r => self.check("cuEventQuery", r).map(|()| true).map_err(Into::into),
        }
    }

    /// Makes `stream` wait, on the device, for the work `event` captured when
    /// this is called (recording the event again later changes nothing).
    ///
    /// # Safety
    /// `stream` and `event` are live.
    #[inline]
    pub(super) unsafe fn stream_wait_event(self, stream: CUstream, event: CUevent) -> Result<()> {
        Ok(self.check("cuStreamWaitEvent", (self.0.cuStreamWaitEvent)(stream, event, 0))?)
    }

    pub(super) fn mem_alloc(self, size: usize) -> Result<CUdeviceptr> {
        // SAFETY: plain out-parameter.
        Ok(self.out("cuMemAlloc_v2", |p| unsafe { (self.0.cuMemAlloc)(p, size) })?)
    }

    /// # Safety
    /// `ptr` came from [`Api::mem_alloc`] and no queued work uses it.
    pub(super) unsafe fn mem_free(self, ptr: CUdeviceptr) -> Result<()> {
        Ok(self.check("cuMemFree_v2", (self.0.cuMemFree)(ptr))?)
    }

    /// Pinned host memory mapped into every context's address space: its
    /// host pointer and its device pointer.
    pub(super) fn mem_host_alloc(self, size: usize) -> Result<(*mut u8, CUdeviceptr)> {
        let mut host = ptr::null_mut();
        let flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: plain out-parameter.
        self.check("cuMemHostAlloc", unsafe { (self.0.cuMemHostAlloc)(&mut host, size, flags) })?;
        // SAFETY: `host` is the mapped allocation just made.
        let device =
            self.out("cuMemHostGetDevicePointer_v2", |p| unsafe { (self.0.cuMemHostGetDevicePointer)(p, host, 0) });
        match device {
            Ok(device) => Ok((host.cast(), device)),
            Err(e) => {
                // SAFETY: nothing else has seen the allocation.
                unsafe { (self.0.cuMemFreeHost)(host) };
                Err(e.into())
            }
        }
    }

    /// # Safety
    /// `host` came from [`Api::mem_host_alloc`] and no queued work uses it.
    pub(super) unsafe fn mem_free_host(self, host: *mut u8) -> Result<()> {
        Ok(self.check("cuMemFreeHost", (self.0.cuMemFreeHost)(host.cast()))?)
    }

    /// # Safety
    /// `stream` is live; the range is device-accessible memory that stays
    /// valid until the fill is done; `count` counts elements of the width.
    pub(super) unsafe fn memset_async(
        self,
        stream: CUstream,
        dst: CUdeviceptr,
        pattern: crate::Pattern,
        count: usize,
    ) -> Result<()> {
        use crate::Pattern::*;
        let (call, r) = match pattern {
            U8(v) => ("cuMemsetD8Async", (self.0.cuMemsetD8Async)(dst, v, count, stream)),
            U16(v) => ("cuMemsetD16Async", (self.0.cuMemsetD16Async)(dst, v, count, stream)),
            U32(v) => ("cuMemsetD32Async", (self.0.cuMemsetD32Async)(dst, v, count, stream)),
        };
        Ok(self.check(call, r)?)
    }

    /// # Safety
    /// `stream` is live; both ranges are device-accessible and stay valid
    /// until the copy is done.
    pub(super) unsafe fn memcpy_async(
        self,
        stream: CUstream,
        dst: CUdeviceptr,
        src: CUdeviceptr,
        len: usize,
    ) -> Result<()> {
        Ok(self.check("cuMemcpyAsync", (self.0.cuMemcpyAsync)(dst, src, len, stream))?)
    }

    /// A dma-buf of `size` bytes of device memory at `ptr`.
    ///
    /// # Safety
    /// The range is a live device allocation.
    pub(super) unsafe fn dma_buf_export(self, ptr: CUdeviceptr, size: usize) -> Result<OwnedFd> {
        let mut fd: c_int = -1;
        let r = (self.0.cuMemGetHandleForAddressRange)(
            (&mut fd as *mut c_int).cast(),
            ptr,
            size,
            CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
            0,
        );
        self.check("cuMemGetHandleForAddressRange", r)?;
        // SAFETY: the driver made a new fd for us.
        Ok(OwnedFd::from_raw_fd(fd))
    }

    /// Loads a module from NUL-terminated PTX into the current context; a
    /// compile error carries the JIT's log.
    pub(super) fn module_load_ptx(self, ptx: &CStr) -> Result<CUmodule> {
        let mut log = [0u8; 4096];
        let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        // The JIT takes option values as pointer-sized words.
        let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
        let mut module = ptr::null_mut();
        // SAFETY: the options point at live buffers of the stated sizes.
        let r = unsafe {
            (self.0.cuModuleLoadDataEx)(
                &mut module,
                ptx.as_ptr().cast(),
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        self.check("cuModuleLoadDataEx", r).map_err(|mut e| {
            let log = CStr::from_bytes_until_nul(&log).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            e.description = format!("{}: {}", e.description, log.trim());
            e
        })?;
        Ok(module)
    }

    /// # Safety
    /// `module` is live.
    pub(super) unsafe fn module_function(self, module: CUmodule, name: &CStr) -> Result<CUfunction> {
        let mut f = ptr::null_mut();
        self.check("cuModuleGetFunction", (self.0.cuModuleGetFunction)(&mut f, module, name.as_ptr()))?;
        Ok(f)
    }

    /// # Safety
    /// `module` is live, not used again, and its context current.
    pub(super) unsafe fn module_unload(self, module: CUmodule) -> Result<()> {
        Ok(self.check("cuModuleUnload", (self.0.cuModuleUnload)(module))?)
    }

    /// Starts recording what this thread queues on `stream` into a graph,
    /// instead of running it.
    ///
    /// # Safety
    /// `stream` is live, of the current context, and not capturing.
    pub(super) unsafe fn begin_capture(self, stream: CUstream) -> Result<()> {
        Ok(self.check(
            "cuStreamBeginCapture_v2",
            (self.0.cuStreamBeginCapture)(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        )?)
    }

    /// Ends the capture that [`Api::begin_capture`] started: the graph of
    /// what was queued (an error if anything queued failed).
    ///
    /// # Safety
    /// `stream` is capturing.
    pub(super) unsafe fn end_capture(self, stream: CUstream) -> Result<CUgraph> {
        let mut graph = ptr::null_mut();
        self.check("cuStreamEndCapture", (self.0.cuStreamEndCapture)(stream, &mut graph))?;
        Ok(graph)
    }

    /// An executable graph of `graph`, which can be destroyed after.
    ///
    /// # Safety
    /// `graph` is live, of the current context.
    pub(super) unsafe fn graph_instantiate(self, graph: CUgraph) -> Result<CUgraphExec> {
        let mut exec = ptr::null_mut();
        self.check("cuGraphInstantiateWithFlags", (self.0.cuGraphInstantiateWithFlags)(&mut exec, graph, 0))?;
        Ok(exec)
    }

    /// # Safety
    /// `graph` is live and not used again.
    pub(super) unsafe fn graph_destroy(self, graph: CUgraph) -> Result<()> {
        Ok(self.check("cuGraphDestroy", (self.0.cuGraphDestroy)(graph))?)
    }

    /// Queues a run of `exec` on `stream`.
    ///
    /// # Safety
    /// `exec` and `stream` are live, of the current context; what the graph
    /// addresses stays valid until the run is done.
    pub(super) unsafe fn graph_launch(self, exec: CUgraphExec, stream: CUstream) -> Result<()> {
        Ok(self.check("cuGraphLaunch", (self.0.cuGraphLaunch)(exec, stream))?)
    }

    /// # Safety
    /// `exec` is live, no queued run uses it, and it is not used again.
    pub(super) unsafe fn graph_exec_destroy(self, exec: CUgraphExec) -> Result<()> {
        Ok(self.check("cuGraphExecDestroy", (self.0.cuGraphExecDestroy)(exec))?)
    }

    /// # Safety
    /// `f` and `stream` are live; `params` points at one value of the
    /// kernel's type per parameter, and what those address stays valid until
    /// the kernel is done.
    #[inline]
    pub(super) unsafe fn launch(
        self,
        f: CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        stream: CUstream,
        params: &mut [*mut c_void],
    ) -> Result<(), CudaError> {
        let [gx, gy, gz] = grid;
        let [bx, by, bz] = block;
        let r = (self.0.cuLaunchKernel)(f, gx, gy, gz, bx, by, bz, 0, stream, params.as_mut_ptr(), ptr::null_mut());
        self.check("cuLaunchKernel", r)
    }
}
