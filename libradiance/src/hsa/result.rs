// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The runtime calls as functions returning [`Result`]: each `hsa_status_t`
//! becomes an [`HsaError`] naming the call and ROCr's status string, which
//! turns into the library's [`Error`] with the nearest status code. Raw
//! handles still pass through here; the safe types own them.

use super::sys::*;
use crate::{Error, Result, StatusCode};
use std::{
    ffi::{c_char, c_int, c_void, CStr},
    os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd},
    path::Path,
    ptr,
    sync::OnceLock,
};

/// Where libhsakmt looks for the amdgpu driver's compute interface.
pub const KFD: &str = "/dev/kfd";

/// A failed runtime call.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{call}: {description} (status {code:#x})")]
pub struct HsaError {
    pub call: &'static str,
    pub code: hsa_status_t,
    pub description: String,
}

impl HsaError {
    fn status(&self) -> StatusCode {
        match self.code {
            HSA_STATUS_ERROR_INVALID_ARGUMENT => StatusCode::InvalidArgument,
            HSA_STATUS_ERROR_OUT_OF_RESOURCES | HSA_STATUS_ERROR_INVALID_ALLOCATION => StatusCode::ResourceExhausted,
            HSA_STATUS_ERROR_INVALID_AGENT => StatusCode::NotFound,
            HSA_STATUS_ERROR_NOT_INITIALIZED | HSA_STATUS_ERROR_INVALID_QUEUE_CREATION => StatusCode::Unavailable,
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT
            | HSA_STATUS_ERROR_INVALID_ISA
            | HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS => StatusCode::Incompatible,
            // A kernel faulted: the queue is dead, as IREE reports an abort.
            HSA_STATUS_ERROR_EXCEPTION
            | HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
            | HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
            | HSA_STATUS_ERROR_MEMORY_FAULT => StatusCode::Aborted,
            _ => StatusCode::Internal,
        }
    }
}

impl From<HsaError> for Error {
    fn from(e: HsaError) -> Self {
        Self::Status { code: e.status(), message: e.to_string() }
    }
}

/// ROCr's text for a status (it works before `hsa_init`).
pub fn status_string(runtime: &Runtime, code: hsa_status_t) -> String {
    let mut s: *const c_char = ptr::null();
    // SAFETY: ROCr points `s` at a static string, or fails.
    let ok = unsafe { (runtime.status_string)(code, &mut s) } == HSA_STATUS_SUCCESS && !s.is_null();
    if ok {
        // SAFETY: checked non-null; ROCr's strings are NUL-terminated.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    } else {
        format!("hsa_status_t {code:#x}")
    }
}

/// Why `hsa_init` failed, for someone at the machine: without the amdgpu
/// driver's `/dev/kfd` ROCr has no agents at all (libhsakmt opens it by
/// that fixed path), and its status alone does not say so.
pub(super) fn init_failure(uri: &str, e: &HsaError, kfd: &Path) -> Error {
    let why = match std::fs::metadata(kfd) {
        Err(_) => format!(
            "{} is missing: no AMD GPU with the amdgpu kernel driver's compute interface (KFD) here",
            kfd.display()
        ),
        Ok(_) => match std::fs::OpenOptions::new().read(true).write(true).open(kfd) {
            Err(open) if open.kind() == std::io::ErrorKind::PermissionDenied => {
                format!("{} is not readable and writable by this user (add it to the render group)", kfd.display())
            }
            _ => format!("{} is present, but ROCr found no usable agent", kfd.display()),
        },
    };
    Error::Status { code: StatusCode::Unavailable, message: format!("{uri}: ROCr could not start: {e}: {why}") }
}

/// The loaded runtime: every call below goes through it.
#[derive(Clone, Copy)]
pub(super) struct Api(pub(super) &'static Runtime);

impl Api {
    /// The runtime, loaded and initialised (once per process; ROCr's state
    /// is process-wide, so it is never shut down).
    pub(super) fn load(uri: &str) -> Result<Self> {
        let runtime = Runtime::get().map_err(|why| Error::Status {
            code: StatusCode::Unavailable,
            message: format!(
                "{uri}: ROCr (libhsa-runtime64.so.1) not found ({why}); set RADIANCE_HSA_LIBRARY to its path"
            ),
        })?;
        let api = Self(runtime);
        static INIT: OnceLock<Result<(), HsaError>> = OnceLock::new();
        // SAFETY: hsa_init takes nothing.
        let init = INIT.get_or_init(|| api.check("hsa_init", unsafe { (runtime.init)() })).clone();
        init.map_err(|e| init_failure(uri, &e, Path::new(KFD)))?;
        Ok(api)
    }

    /// `Ok` for success (or INFO_BREAK, an iteration stopped on purpose),
    /// else the named error.
    #[inline]
    pub(super) fn check(self, call: &'static str, code: hsa_status_t) -> Result<(), HsaError> {
        if code == HSA_STATUS_SUCCESS || code == HSA_STATUS_INFO_BREAK {
            Ok(())
        } else {
            Err(self.error(call, code))
        }
    }

    #[cold]
    pub(super) fn error(self, call: &'static str, code: hsa_status_t) -> HsaError {
        HsaError { call, code, description: status_string(self.0, code) }
    }

    /// Every agent, in ROCr's order.
    pub(super) fn agents(self) -> Result<Vec<hsa_agent_t>> {
        unsafe extern "C" fn collect(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
            // SAFETY: `data` is the Vec below, alive for the iteration.
            unsafe { &mut *data.cast::<Vec<hsa_agent_t>>() }.push(agent);
            HSA_STATUS_SUCCESS
        }
        let mut agents = Vec::new();
        // SAFETY: the callback only pushes onto `agents`.
        self.check("hsa_iterate_agents", unsafe {
            (self.0.iterate_agents)(collect, (&mut agents as *mut Vec<_>).cast())
        })?;
        Ok(agents)
    }

    /// An agent attribute of plain type `T`.
    pub(super) fn agent_info<T: Copy + Default>(self, agent: hsa_agent_t, attribute: u32) -> Result<T> {
        let mut value = T::default();
        // SAFETY: `T` is the attribute's type (the callers pair them as
        // hsa.h documents).
        self.check("hsa_agent_get_info", unsafe {
            (self.0.agent_get_info)(agent, attribute, (&mut value as *mut T).cast())
        })?;
        Ok(value)
    }

    /// A 64-byte string attribute (NAME, PRODUCT_NAME).
    pub(super) fn agent_name(self, agent: hsa_agent_t, attribute: u32) -> Result<String> {
        let mut bytes = [0u8; 64];
        // SAFETY: the string attributes are 64-byte arrays.
        self.check("hsa_agent_get_info", unsafe {
            (self.0.agent_get_info)(agent, attribute, bytes.as_mut_ptr().cast())
        })?;
        Ok(CStr::from_bytes_until_nul(&bytes).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
    }

    /// The names of the agent's ISAs, e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub(super) fn isa_names(self, agent: hsa_agent_t) -> Result<Vec<String>> {
        unsafe extern "C" fn collect(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t {
            // SAFETY: `data` is the Vec below, alive for the iteration.
            unsafe { &mut *data.cast::<Vec<hsa_isa_t>>() }.push(isa);
            HSA_STATUS_SUCCESS
        }
        let mut isas = Vec::new();
        // SAFETY: the callback only pushes onto `isas`.
        self.check("hsa_agent_iterate_isas", unsafe {
            (self.0.agent_iterate_isas)(agent, collect, (&mut isas as *mut Vec<_>).cast())
        })?;
        isas.into_iter()
            .map(|isa| {
                let mut len = 0u32;
                // SAFETY: NAME_LENGTH is a u32.
                self.check("hsa_isa_get_info_alt", unsafe {
                    (self.0.isa_get_info_alt)(isa, HSA_ISA_INFO_NAME_LENGTH, (&mut len as *mut u32).cast())
                })?;
                let mut name = vec![0u8; len as usize + 1];
                // SAFETY: NAME fills NAME_LENGTH bytes.
                self.check("hsa_isa_get_info_alt", unsafe {
                    (self.0.isa_get_info_alt)(isa, HSA_ISA_INFO_NAME, name.as_mut_ptr().cast())
                })?;
                Ok(CStr::from_bytes_until_nul(&name).map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
            })
            .collect()
    }

    /// The agent's memory pools with their segment and global flags.
    pub(super) fn pools(self, agent: hsa_agent_t) -> Result<Vec<(hsa_amd_memory_pool_t, u32, u32, bool)>> {
        unsafe extern "C" fn collect(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
            // SAFETY: `data` is the Vec below, alive for the iteration.
            unsafe { &mut *data.cast::<Vec<hsa_amd_memory_pool_t>>() }.push(pool);
            HSA_STATUS_SUCCESS
        }
        let mut pools = Vec::new();
        // SAFETY: the callback only pushes onto `pools`.
        let r = unsafe { (self.0.agent_iterate_memory_pools)(agent, collect, (&mut pools as *mut Vec<_>).cast()) };
        self.check("hsa_amd_agent_iterate_memory_pools", r)?;
        let info = |pool, attribute, out: *mut c_void| {
            // SAFETY: each attribute below is read into its documented type.
            self.check("hsa_amd_memory_pool_get_info", unsafe { (self.0.memory_pool_get_info)(pool, attribute, out) })
        };
        pools
            .into_iter()
            .map(|pool| {
                let (mut segment, mut flags, mut alloc) = (0u32, 0u32, false);
                info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, (&mut segment as *mut u32).cast())?;
                if segment == HSA_AMD_SEGMENT_GLOBAL {
                    info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, (&mut flags as *mut u32).cast())?;
                }
                info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, (&mut alloc as *mut bool).cast())?;
                Ok((pool, segment, flags, alloc))
            })
            .collect()
    }

    pub(super) fn pool_allocate(self, pool: hsa_amd_memory_pool_t, size: usize) -> Result<*mut u8> {
        let mut ptr = ptr::null_mut();
        // SAFETY: plain out-parameter.
        self.check("hsa_amd_memory_pool_allocate", unsafe {
            (self.0.memory_pool_allocate)(pool, size.max(1), 0, &mut ptr)
        })?;
        Ok(ptr.cast())
    }

    /// # Safety
    /// `ptr` came from [`Api::pool_allocate`] and no queued work uses it.
    pub(super) unsafe fn pool_free(self, ptr: *mut u8) -> Result<()> {
        Ok(self.check("hsa_amd_memory_pool_free", (self.0.memory_pool_free)(ptr.cast()))?)
    }

    /// Lets `agents` access the allocation at `ptr`.
    ///
    /// # Safety
    /// `ptr` is a live pool allocation.
    pub(super) unsafe fn allow_access(self, agents: &[hsa_agent_t], ptr: *const u8) -> Result<()> {
        let r = (self.0.agents_allow_access)(agents.len() as u32, agents.as_ptr(), ptr::null(), ptr.cast());
        Ok(self.check("hsa_amd_agents_allow_access", r)?)
    }

    pub(super) fn signal_create(self, initial: i64) -> Result<hsa_signal_t> {
        let mut signal = hsa_signal_t::default();
        // SAFETY: plain out-parameter; no consumer list (any agent).
        self.check("hsa_signal_create", unsafe { (self.0.signal_create)(initial, 0, ptr::null(), &mut signal) })?;
        Ok(signal)
    }

    /// # Safety
    /// `signal` is live, and no queued packet or waiter uses it any more.
    pub(super) unsafe fn signal_destroy(self, signal: hsa_signal_t) {
        let _ = (self.0.signal_destroy)(signal);
    }

    /// # Safety
    /// `signal` is live.
    pub(super) unsafe fn signal_load(self, signal: hsa_signal_t) -> i64 {
        (self.0.signal_load_scacquire)(signal)
    }

    /// # Safety
    /// `signal` is live.
    pub(super) unsafe fn signal_store(self, signal: hsa_signal_t, value: i64) {
        (self.0.signal_store_screlease)(signal, value)
    }

    /// Blocks until one of `signals` satisfies its condition or about
    /// `timeout_ns` pass; the index of the one that did, if any.
    ///
    /// # Safety
    /// Every signal is live.
    pub(super) unsafe fn signal_wait_any(
        self,
        signals: &mut [hsa_signal_t],
        conds: &mut [u32],
        values: &mut [i64],
        timeout_ns: u64,
    ) -> Option<usize> {
        let mut seen = 0;
        let n = signals.len() as u32;
        let i = (self.0.signal_wait_any)(
            n,
            signals.as_mut_ptr(),
            conds.as_mut_ptr(),
            values.as_mut_ptr(),
            timeout_ns,
            HSA_WAIT_STATE_BLOCKED,
            &mut seen,
        );
        (i < n).then_some(i as usize)
    }

    /// A multi-producer AQL queue of `size` packets on `agent`; `on_error`
    /// gets `data` when a packet faults.
    pub(super) fn queue_create(
        self,
        agent: hsa_agent_t,
        size: u32,
        on_error: QueueCallback,
        data: *mut c_void,
    ) -> Result<*mut hsa_queue_t> {
        let mut queue = ptr::null_mut();
        // SAFETY: the callback and its data outlive the queue (the caller's
        // promise, kept by destroying the queue first).
        let r = unsafe {
            (self.0.queue_create)(
                agent,
                size,
                HSA_QUEUE_TYPE_MULTI,
                Some(on_error),
                data,
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        };
        self.check("hsa_queue_create", r)?;
        Ok(queue)
    }

    /// # Safety
    /// `queue` is live and not used again.
    pub(super) unsafe fn queue_destroy(self, queue: *mut hsa_queue_t) {
        let _ = (self.0.queue_destroy)(queue);
    }

    /// # Safety
    /// `queue` is live.
    pub(super) unsafe fn queue_read_index(self, queue: *const hsa_queue_t) -> u64 {
        (self.0.queue_load_read_index_scacquire)(queue)
    }

    /// Reserves `n` packet slots; the first one's index.
    ///
    /// # Safety
    /// `queue` is live.
    pub(super) unsafe fn queue_reserve(self, queue: *const hsa_queue_t, n: u64) -> u64 {
        (self.0.queue_add_write_index_relaxed)(queue, n)
    }

    /// Loads a code object onto `agent` and freezes the executable.
    pub(super) fn executable_load(self, agent: hsa_agent_t, code_object: &[u8]) -> Result<hsa_executable_t> {
        let mut reader = hsa_code_object_reader_t::default();
        // SAFETY: the bytes outlive the reader, destroyed below.
        let r = unsafe {
            (self.0.code_object_reader_create_from_memory)(code_object.as_ptr().cast(), code_object.len(), &mut reader)
        };
        self.check("hsa_code_object_reader_create_from_memory", r)?;
        let mut exe = hsa_executable_t::default();
        // SAFETY: plain out-parameters and live handles throughout.
        let loaded = unsafe {
            let r = (self.0.executable_create_alt)(
                HSA_PROFILE_FULL,
                HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                ptr::null(),
                &mut exe,
            );
            self.check("hsa_executable_create_alt", r).and_then(|()| {
                let mut object = hsa_loaded_code_object_t::default();
                let r = (self.0.executable_load_agent_code_object)(exe, agent, reader, ptr::null(), &mut object);
                self.check("hsa_executable_load_agent_code_object", r)?;
                self.check("hsa_executable_freeze", (self.0.executable_freeze)(exe, ptr::null()))
            })
        };
        // SAFETY: the executable keeps what it loaded; the reader is ours.
        unsafe { (self.0.code_object_reader_destroy)(reader) };
        if let Err(e) = loaded {
            if exe.handle != 0 {
                // SAFETY: ours, never used.
                unsafe { (self.0.executable_destroy)(exe) };
            }
            return Err(e.into());
        }
        Ok(exe)
    }

    /// # Safety
    /// No queued dispatch uses the executable's kernels, and it is not used
    /// again.
    pub(super) unsafe fn executable_destroy(self, exe: hsa_executable_t) {
        let _ = (self.0.executable_destroy)(exe);
    }

    /// A kernel's object and segment sizes; `name` is its `.kd` symbol.
    pub(super) fn kernel(
        self,
        exe: hsa_executable_t,
        agent: hsa_agent_t,
        name: &CStr,
    ) -> Result<super::packet::KernelObject> {
        let mut symbol = hsa_executable_symbol_t::default();
        // SAFETY: live executable, plain out-parameter.
        let r = unsafe { (self.0.executable_get_symbol_by_name)(exe, name.as_ptr(), &agent, &mut symbol) };
        self.check("hsa_executable_get_symbol_by_name", r)?;
        let info = |attribute, out: *mut c_void| {
            // SAFETY: each attribute is read into its documented type.
            self.check("hsa_executable_symbol_get_info", unsafe {
                (self.0.executable_symbol_get_info)(symbol, attribute, out)
            })
        };
        let mut k = super::packet::KernelObject::default();
        info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, (&mut k.object as *mut u64).cast())?;
        info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, (&mut k.kernarg_size as *mut u32).cast())?;
        info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, (&mut k.group_segment_size as *mut u32).cast())?;
        info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, (&mut k.private_segment_size as *mut u32).cast())?;
        Ok(k)
    }

    /// Maps someone's dma-buf into the flat address space for `agents`:
    /// its address and size.
    pub(super) fn dma_buf_import(self, agents: &[hsa_agent_t], fd: BorrowedFd<'_>) -> Result<(*mut u8, usize)> {
        let mut agents = agents.to_vec();
        let (mut size, mut ptr, mut metadata_size, mut metadata) = (0usize, ptr::null_mut(), 0usize, ptr::null());
        // SAFETY: out-parameters; ROCr duplicates what it needs of the fd.
        let r = unsafe {
            (self.0.interop_map_buffer)(
                agents.len() as u32,
                agents.as_mut_ptr(),
                fd.as_raw_fd(),
                0,
                &mut size,
                &mut ptr,
                &mut metadata_size,
                &mut metadata,
            )
        };
        self.check("hsa_amd_interop_map_buffer", r)?;
        Ok((ptr.cast(), size))
    }

    /// # Safety
    /// `ptr` came from [`Api::dma_buf_import`] and no queued work uses it.
    pub(super) unsafe fn dma_buf_unmap(self, ptr: *mut u8) {
        let _ = (self.0.interop_unmap_buffer)(ptr.cast());
    }

    /// A dma-buf of `size` bytes at `ptr`, where this ROCr can export
    /// (6.0 and later); `None` where it has no `hsa_amd_portable_export_dmabuf`.
    ///
    /// # Safety
    /// The range is a live device allocation.
    pub(super) unsafe fn dma_buf_export(self, ptr: *const u8, size: usize) -> Option<Result<OwnedFd>> {
        let export = self.0.portable_export_dmabuf?;
        let (mut fd, mut offset): (c_int, u64) = (-1, 0);
        Some(
            self.check("hsa_amd_portable_export_dmabuf", export(ptr.cast(), size, &mut fd, &mut offset))
                .map_err(Into::into)
                .map(|()| {
                    // SAFETY: ROCr made a new fd for us.
                    OwnedFd::from_raw_fd(fd)
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_faults_abort_and_bad_code_objects_are_incompatible() {
        let e = |code| HsaError { call: "x", code, description: String::new() }.status();
        assert_eq!(e(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION), StatusCode::Aborted);
        assert_eq!(e(HSA_STATUS_ERROR_EXCEPTION), StatusCode::Aborted);
        assert_eq!(e(HSA_STATUS_ERROR_INVALID_CODE_OBJECT), StatusCode::Incompatible);
        assert_eq!(e(HSA_STATUS_ERROR_OUT_OF_RESOURCES), StatusCode::ResourceExhausted);
        assert_eq!(e(HSA_STATUS_ERROR), StatusCode::Internal);
    }

    #[test]
    fn an_init_failure_names_the_missing_kfd_node() {
        let e =
            HsaError { call: "hsa_init", code: HSA_STATUS_ERROR_OUT_OF_RESOURCES, description: "no resources".into() };
        let err = init_failure("hsa:0", &e, Path::new("/nonexistent/kfd"));
        assert_eq!(err.status(), StatusCode::Unavailable);
        let text = err.to_string();
        assert!(text.starts_with("hsa:0: ROCr could not start: hsa_init: no resources (status 0x1008)"), "{text}");
        assert!(text.contains("/nonexistent/kfd is missing"), "{text}");
    }
}
