// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The built-in kernels (`radiance_uapi::builtin`) as a CUDA module loaded
//! from the hand-written PTX in `builtins.ptx`, and the translation of a
//! HAL launch into a CUDA launch of one of them.
//!
//! Everything a Radiance device would fault on is found on the host
//! (`native_launch.rs`) and fails the launch before anything is queued.

use super::{
    buffer::CudaBuffer,
    device::Shared,
    result::Api,
    sys::{CUdeviceptr, CUfunction, CUmodule, CUstream},
};
use crate::{
    native_launch::{NativeLaunch, SPIN},
    Error, Launch, Result,
};
use radiance_uapi::builtin;
use std::{
    ffi::{c_void, CStr},
    sync::Arc,
};

/// The PTX of the built-in kernels, NUL-terminated for the driver.
pub const BUILTINS_PTX: &str = concat!(include_str!("builtins.ptx"), "\0");

/// The PTX kernel behind each built-in entry PC, in `native_launch`'s order.
pub const BUILTIN_KERNELS: [(u32, &CStr); 4] = [
    (builtin::FILL_U32, c"radiance_fill_u32"),
    (builtin::COPY_U32, c"radiance_copy_u32"),
    (builtin::VECADD_U32, c"radiance_vecadd_u32"),
    (builtin::SPIN, c"radiance_spin"),
];

/// The loaded module and its kernels, in [`BUILTIN_KERNELS`] order.
pub(super) struct Module {
    module: CUmodule,
    functions: [CUfunction; 4],
}

// SAFETY: module and function handles may be used from any thread.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

impl Module {
    /// Loads the built-ins into the current context.
    pub(super) fn load(api: Api) -> Result<Self> {
        let ptx = CStr::from_bytes_with_nul(BUILTINS_PTX.as_bytes())
            .map_err(|e| Error::Unsupported(format!("builtins.ptx: {e}")))?;
        let module = api.module_load_ptx(ptx)?;
        let mut functions = [std::ptr::null_mut(); 4];
        for (f, (_, name)) in functions.iter_mut().zip(BUILTIN_KERNELS) {
            // SAFETY: `module` was just loaded.
            match unsafe { api.module_function(module, name) } {
                Ok(function) => *f = function,
                Err(e) => {
                    // SAFETY: nothing else has seen the module.
                    let _ = unsafe { api.module_unload(module) };
                    return Err(e);
                }
            }
        }
        Ok(Self { module, functions })
    }

    /// Queues FILL_U32 of no elements on `stream`, which returns at once.
    ///
    /// # Safety
    /// `stream` is a live stream of the context the module is loaded in.
    pub(super) unsafe fn launch_nothing(&self, api: Api, stream: CUstream) -> Result<()> {
        let (mut target, mut value, mut count) = (0u64, 0u32, 0u32);
        let mut params: [*mut c_void; 3] = [(&raw mut target).cast(), (&raw mut value).cast(), (&raw mut count).cast()];
        Ok(api.launch(self.functions[0], [1; 3], [1; 3], stream, &mut params)?)
    }

    /// Unloads the module; the device's context is current.
    ///
    /// # Safety
    /// No queued work uses the kernels, and the module is not used again.
    pub(super) unsafe fn unload(&self, api: Api) {
        let _ = api.module_unload(self.module);
    }
}

/// A launch ready for `cuLaunchKernel`, holding the buffers it touches.
/// The launch itself is borrowed, not copied: its grid and block are read
/// where they are when the launch is queued.
pub(super) struct Prepared<'a> {
    launch: &'a Launch,
    function: CUfunction,
    native: NativeLaunch<CudaBuffer>,
}

impl<'a> Prepared<'a> {
    /// Checks `launch` as a Radiance device would run it and translates its
    /// addresses; `closing` is the queue's word that stops SPIN.
    #[inline(always)]
    pub(super) fn new(shared: &Shared, closing: CUdeviceptr, launch: &'a Launch) -> Result<Self> {
        let native = NativeLaunch::translate(&shared.space, closing, launch)?;
        let function = shared.kernels.functions[native.kernel];
        Ok(Self { launch, function, native })
    }

    /// What a graph captured with this launch depends on: its kernel and
    /// native arguments (`graph.rs`).
    pub(super) fn key(&self, key: &mut Vec<u64>) {
        key.push(self.function as u64);
        key.extend(&self.native.args[..self.native.count]);
    }

    /// Whether it is SPIN, which ends only when its queue closes.
    pub(super) fn spins(&self) -> bool {
        self.native.kernel == SPIN
    }

    /// The buffers it touches, to keep alive until the launch is done.
    pub(super) fn buffers(&mut self) -> &mut Vec<Arc<CudaBuffer>> {
        &mut self.native.buffers
    }

    /// Queues the launch on `stream`.
    /// A launch the driver refuses (a grid beyond CUDA's limits, say) fails
    /// as a device fault at the entry PC.
    ///
    /// # Safety
    /// `stream` is live, and the device's context current.
    #[inline(always)]
    pub(super) unsafe fn launch(&mut self, api: Api, stream: CUstream) -> Result<()> {
        let mut params = [std::ptr::null_mut::<c_void>(); 4];
        for (p, a) in params.iter_mut().zip(&mut self.native.args) {
            *p = (a as *mut u64).cast();
        }
        api.launch(self.function, self.launch.grid, self.launch.block, stream, &mut params[..self.native.count])
            .map_err(|e| Error::DeviceFault { pc: self.launch.kernel(), thread: 0, why: e.to_string() })
    }
}
