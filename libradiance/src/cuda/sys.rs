// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The raw CUDA driver API: the entry points this backend uses, resolved from
//! `libcuda.so.1` at run time so that libradiance builds and runs without
//! CUDA. Versioned entry points are named explicitly (`cuMemAlloc_v2`, ...):
//! the unsuffixed symbols are the old ABI that `cuda.h` renames away.
//!
//! Public only so that the benchmark can drive the very same driver directly
//! as its baseline; library code goes through `result.rs` and the safe types.

use std::{
    ffi::{c_char, c_int, c_uint, c_ulonglong, c_void},
    sync::OnceLock,
};

pub type CUresult = c_int;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;
pub type CUstream = *mut c_void;
pub type CUevent = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUgraph = *mut c_void;
pub type CUgraphExec = *mut c_void;

pub const CUDA_SUCCESS: CUresult = 0;
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
pub const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CUresult = 704;
pub const CU_STREAM_NON_BLOCKING: c_uint = 0x1;
pub const CU_MEMHOSTALLOC_PORTABLE: c_uint = 0x1;
pub const CU_MEMHOSTALLOC_DEVICEMAP: c_uint = 0x2;
pub const CU_EVENT_DISABLE_TIMING: c_uint = 0x2;
/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`: only the capturing thread is
/// kept from calls a capture cannot record.
pub const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: c_int = 1;
pub const CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD: c_int = 0x1;
pub const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
pub const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

/// Declares the table once: each field's name, the symbol it is resolved
/// from, and its signature.
macro_rules! driver_table {
    ($($field:ident = $symbol:literal: fn($($arg:ty),* $(,)?);)*) => {
        /// `libcuda.so.1`'s entry points. The library stays loaded for the
        /// life of the process, so the pointers never dangle.
        #[allow(non_snake_case)]
        pub struct Driver {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> CUresult,)*
            _library: libloading::Library,
        }

        impl Driver {
            #[allow(non_snake_case)]
            fn resolve(library: libloading::Library) -> Result<Self, libloading::Error> {
                // SAFETY: each symbol is declared with its signature from
                // cuda.h, and `library` is kept beside the pointers.
                unsafe {
                    $(let $field = *library.get(concat!($symbol, "\0").as_bytes())?;)*
                    Ok(Self { $($field,)* _library: library })
                }
            }
        }
    };
}

driver_table! {
    cuInit = "cuInit": fn(c_uint);
    cuGetErrorName = "cuGetErrorName": fn(CUresult, *mut *const c_char);
    cuGetErrorString = "cuGetErrorString": fn(CUresult, *mut *const c_char);
    cuDeviceGet = "cuDeviceGet": fn(*mut CUdevice, c_int);
    cuDeviceGetName = "cuDeviceGetName": fn(*mut c_char, c_int, CUdevice);
    cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain": fn(*mut CUcontext, CUdevice);
    cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2": fn(CUdevice);
    cuCtxPushCurrent = "cuCtxPushCurrent_v2": fn(CUcontext);
    cuCtxPopCurrent = "cuCtxPopCurrent_v2": fn(*mut CUcontext);
    cuCtxSetCurrent = "cuCtxSetCurrent": fn(CUcontext);
    cuCtxGetCurrent = "cuCtxGetCurrent": fn(*mut CUcontext);
    cuDeviceCanAccessPeer = "cuDeviceCanAccessPeer": fn(*mut c_int, CUdevice, CUdevice);
    cuCtxEnablePeerAccess = "cuCtxEnablePeerAccess": fn(CUcontext, c_uint);
    cuStreamCreate = "cuStreamCreate": fn(*mut CUstream, c_uint);
    cuStreamDestroy = "cuStreamDestroy_v2": fn(CUstream);
    cuStreamSynchronize = "cuStreamSynchronize": fn(CUstream);
    cuStreamWaitEvent = "cuStreamWaitEvent": fn(CUstream, CUevent, c_uint);
    cuEventCreate = "cuEventCreate": fn(*mut CUevent, c_uint);
    cuEventDestroy = "cuEventDestroy_v2": fn(CUevent);
    cuEventRecord = "cuEventRecord": fn(CUevent, CUstream);
    cuEventQuery = "cuEventQuery": fn(CUevent);
    cuEventSynchronize = "cuEventSynchronize": fn(CUevent);
    cuMemAlloc = "cuMemAlloc_v2": fn(*mut CUdeviceptr, usize);
    cuMemFree = "cuMemFree_v2": fn(CUdeviceptr);
    cuMemHostAlloc = "cuMemHostAlloc": fn(*mut *mut c_void, usize, c_uint);
    cuMemFreeHost = "cuMemFreeHost": fn(*mut c_void);
    cuMemHostGetDevicePointer = "cuMemHostGetDevicePointer_v2": fn(*mut CUdeviceptr, *mut c_void, c_uint);
    cuMemsetD8Async = "cuMemsetD8Async": fn(CUdeviceptr, u8, usize, CUstream);
    cuMemsetD16Async = "cuMemsetD16Async": fn(CUdeviceptr, u16, usize, CUstream);
    cuMemsetD32Async = "cuMemsetD32Async": fn(CUdeviceptr, u32, usize, CUstream);
    cuMemcpyAsync = "cuMemcpyAsync": fn(CUdeviceptr, CUdeviceptr, usize, CUstream);
    cuMemcpyPeerAsync = "cuMemcpyPeerAsync": fn(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize, CUstream);
    cuStreamBeginCapture = "cuStreamBeginCapture_v2": fn(CUstream, c_int);
    cuStreamEndCapture = "cuStreamEndCapture": fn(CUstream, *mut CUgraph);
    cuGraphInstantiateWithFlags = "cuGraphInstantiateWithFlags": fn(*mut CUgraphExec, CUgraph, c_ulonglong);
    cuGraphLaunch = "cuGraphLaunch": fn(CUgraphExec, CUstream);
    cuGraphExecDestroy = "cuGraphExecDestroy": fn(CUgraphExec);
    cuGraphDestroy = "cuGraphDestroy": fn(CUgraph);
    cuMemGetHandleForAddressRange = "cuMemGetHandleForAddressRange": fn(*mut c_void, CUdeviceptr, usize, c_int, c_ulonglong);
    cuModuleLoadDataEx = "cuModuleLoadDataEx": fn(*mut CUmodule, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
    cuModuleGetFunction = "cuModuleGetFunction": fn(*mut CUfunction, CUmodule, *const c_char);
    cuModuleUnload = "cuModuleUnload": fn(CUmodule);
    cuLaunchKernel = "cuLaunchKernel": fn(
        CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream, *mut *mut c_void, *mut *mut c_void,
    );
}

impl Driver {
    /// The driver, loaded on first use; the error says why it could not be
    /// (no `libcuda.so.1`, or one without an entry point we need).
    pub fn get() -> Result<&'static Driver, &'static str> {
        static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
        DRIVER
            .get_or_init(|| {
                // SAFETY: loading runs libcuda's initialisers, which expect
                // nothing of us.
                let library = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| e.to_string())?;
                Driver::resolve(library).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }
}
