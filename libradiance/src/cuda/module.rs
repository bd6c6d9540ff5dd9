// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The built-in kernels (`radiance_uapi::builtin`) as a CUDA module loaded
//! from the hand-written PTX in `builtins.ptx`, and the translation of a
//! HAL launch into a CUDA launch of one of them.
//!
//! Everything a Radiance device would fault on (a bad entry PC, a parameter
//! block too short, an address in no buffer, misaligned or running past its
//! buffer) is found here on the host, with the host backend's verdicts, and
//! fails the launch before anything is queued: a CUDA kernel that faulted
//! would poison the whole context.

use super::{
    device::Shared,
    memory::CudaBuffer,
    result::Api,
    sys::{CUdeviceptr, CUfunction, CUmodule, CUstream},
};
use crate::{Error, Launch, Result};
use radiance_uapi::builtin;
use std::{
    ffi::{c_void, CStr},
    sync::Arc,
};

/// The PTX of the built-in kernels, NUL-terminated for the driver.
pub const BUILTINS_PTX: &str = concat!(include_str!("builtins.ptx"), "\0");

/// The PTX kernel behind each built-in entry PC.
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
        let ptx = CStr::from_bytes_with_nul(BUILTINS_PTX.as_bytes()).map_err(|e| Error::Unsupported(format!("builtins.ptx: {e}")))?;
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

    /// Unloads the module; the device's context is current.
    ///
    /// # Safety
    /// No queued work uses the kernels, and the module is not used again.
    pub(super) unsafe fn unload(&self, api: Api) {
        let _ = api.module_unload(self.module);
    }
}

/// A launch ready for `cuLaunchKernel`, holding the buffers it touches.
pub(super) struct Prepared {
    function: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    /// One 64-bit slot per kernel parameter; a u32 parameter reads the low
    /// half of its slot (little-endian).
    args: [u64; 4],
    count: usize,
    /// The buffers it touches, to keep alive until the launch is done.
    pub(super) buffers: Vec<Arc<CudaBuffer>>,
    /// SPIN: it ends only when its queue closes.
    pub(super) spins: bool,
    pc: u32,
}

// SAFETY: the function handle may be used from any thread.
unsafe impl Send for Prepared {}

impl Prepared {
    /// Checks `launch` as a Radiance device would run it and translates its
    /// addresses; `closing` is the queue's word that stops SPIN.
    #[inline]
    pub(super) fn new(shared: &Shared, closing: CUdeviceptr, launch: &Launch) -> Result<Self> {
        let mut k = Translator { shared, launch, buffers: Vec::new() };
        // The built-in start code runs the kernel at `kernel_pc`.
        let (index, args, count) = match launch.kernel() {
            builtin::FILL_U32 => {
                let [dst, value, count] = k.params()?;
                let n = k.elements(count);
                (0, [k.locate(dst, n)?, value.into(), n.into(), 0], 3)
            }
            builtin::COPY_U32 => {
                let [dst, src, count] = k.params()?;
                let n = k.elements(count);
                // Sources are checked before targets, as the host runs them.
                let src = k.locate(src, n)?;
                (1, [k.locate(dst, n)?, src, n.into(), 0], 3)
            }
            builtin::VECADD_U32 => {
                let [a, b, c, count] = k.params()?;
                let n = k.elements(count);
                let (a, b) = (k.locate(a, n)?, k.locate(b, n)?);
                (2, [a, b, k.locate(c, n)?, n.into()], 4)
            }
            builtin::SPIN => (3, [closing, 0, 0, 0], 1),
            _ => return Err(k.fault(0, "no kernel at this entry PC (bad PC)".into())),
        };
        let function = shared.kernels.functions[index];
        Ok(Self { function, grid: launch.grid, block: launch.block, args, count, buffers: k.buffers, spins: index == 3, pc: launch.kernel() })
    }

    /// Queues the launch on `stream`.
    /// A launch the driver refuses (a grid beyond CUDA's limits, say) fails
    /// as a device fault at the entry PC.
    ///
    /// # Safety
    /// `stream` is live, and the device's context current.
    #[inline]
    pub(super) unsafe fn launch(&mut self, api: Api, stream: CUstream) -> Result<()> {
        let mut params = [std::ptr::null_mut::<c_void>(); 4];
        for (p, a) in params.iter_mut().zip(&mut self.args) {
            *p = (a as *mut u64).cast();
        }
        api.launch(self.function, self.grid, self.block, stream, &mut params[..self.count])
            .map_err(|e| Error::DeviceFault { pc: self.pc, thread: 0, why: e.to_string() })
    }
}

/// Checks a launch's parameters the way the host backend's kernels do.
struct Translator<'a> {
    shared: &'a Shared,
    launch: &'a Launch,
    buffers: Vec<Arc<CudaBuffer>>,
}

impl Translator<'_> {
    fn fault(&self, thread: u64, why: String) -> Error {
        Error::DeviceFault { pc: self.launch.kernel(), thread, why }
    }

    /// The first `N` little-endian u32 parameters.
    fn params<const N: usize>(&self) -> Result<[u32; N]> {
        let p = &self.launch.params;
        if p.len() < N * 4 {
            return Err(self.fault(0, format!("the parameter block has {} bytes; this built-in reads {}", p.len(), N * 4)));
        }
        let mut words = [0; N];
        for (w, b) in words.iter_mut().zip(p.chunks_exact(4)) {
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(words)
    }

    /// Elements the grid touches: one per thread, at most `count`.
    fn elements(&self, count: u32) -> u32 {
        // At most `count`, so it fits.
        self.launch.threads().min(count.into()) as u32
    }

    /// The CUDA pointer for `n` u32 elements at device address `address`;
    /// its buffer is kept for the launch. No elements, no access: any
    /// address will do, as on the device.
    fn locate(&mut self, address: u32, n: u32) -> Result<u64> {
        if n == 0 {
            return Ok(0);
        }
        if address % 4 != 0 {
            return Err(self.fault(0, format!("misaligned u32 address {address:#x}")));
        }
        let (buffer, offset) = self
            .shared
            .space
            .resolve(address.into())
            .ok_or_else(|| self.fault(0, format!("address {address:#x} is in no buffer")))?;
        let fit = (buffer.size() - offset) / 4;
        if u64::from(n) > fit {
            let bad = u64::from(address) + fit * 4;
            return Err(self.fault(fit, format!("address {bad:#x} is past the end of its buffer")));
        }
        let ptr = buffer.ptr(offset);
        self.buffers.push(buffer);
        Ok(ptr)
    }
}
