// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The raw ROCr (HSA runtime) API: the types and constants of `hsa.h` and
//! `hsa_ext_amd.h` this backend uses, the AQL packet layouts, and the entry
//! points, resolved from `libhsa-runtime64.so.1` at run time so that
//! libradiance builds and runs without ROCm. `tests/hsa_abi.rs` compiles a C
//! probe against the real headers and checks every definition here (sizes,
//! field offsets, enum values, header bit positions).
//!
//! Where the library comes from: `$RADIANCE_HSA_LIBRARY` (a path) if set,
//! else `libhsa-runtime64.so.1`, else the unversioned `libhsa-runtime64.so`
//! (a ROCm install's development link). Entry points that older ROCr lacks
//! are `Option`s, decided by symbol presence, never by version strings.

// The names are hsa.h's, so that each can be looked up there.
#![allow(non_camel_case_types)]

use std::{
    ffi::{c_char, c_int, c_void},
    sync::OnceLock,
};

pub type hsa_status_t = u32;
pub type hsa_signal_value_t = i64;

/// The opaque handles: one u64 each.
macro_rules! handles {
    ($($name:ident),*) => {$(
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name {
            pub handle: u64,
        }
    )*};
}
handles!(
    hsa_agent_t,
    hsa_signal_t,
    hsa_isa_t,
    hsa_amd_memory_pool_t,
    hsa_code_object_reader_t,
    hsa_executable_t,
    hsa_executable_symbol_t,
    hsa_loaded_code_object_t
);

pub const HSA_STATUS_SUCCESS: hsa_status_t = 0;
pub const HSA_STATUS_INFO_BREAK: hsa_status_t = 0x1;
pub const HSA_STATUS_ERROR: hsa_status_t = 0x1000;
pub const HSA_STATUS_ERROR_INVALID_ARGUMENT: hsa_status_t = 0x1001;
pub const HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: hsa_status_t = 0x1002;
pub const HSA_STATUS_ERROR_INVALID_ALLOCATION: hsa_status_t = 0x1003;
pub const HSA_STATUS_ERROR_INVALID_AGENT: hsa_status_t = 0x1004;
pub const HSA_STATUS_ERROR_OUT_OF_RESOURCES: hsa_status_t = 0x1008;
pub const HSA_STATUS_ERROR_INVALID_CODE_OBJECT: hsa_status_t = 0x1010;
pub const HSA_STATUS_ERROR_NOT_INITIALIZED: hsa_status_t = 0x100B;
pub const HSA_STATUS_ERROR_INVALID_ISA: hsa_status_t = 0x100F;
pub const HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: hsa_status_t = 0x100D;
/// A queue's packet raised an exception (a kernel faulted).
pub const HSA_STATUS_ERROR_EXCEPTION: hsa_status_t = 0x1016;
/// What `hsa_ext_amd.h` adds: a queue's kernel faulted this way.
pub const HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: hsa_status_t = 41;
pub const HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: hsa_status_t = 42;
pub const HSA_STATUS_ERROR_MEMORY_FAULT: hsa_status_t = 43;

pub const HSA_AGENT_INFO_NAME: u32 = 0;
pub const HSA_AGENT_INFO_FEATURE: u32 = 2;
pub const HSA_AGENT_INFO_QUEUE_MAX_SIZE: u32 = 14;
pub const HSA_AGENT_INFO_DEVICE: u32 = 17;
pub const HSA_AMD_AGENT_INFO_PRODUCT_NAME: u32 = 0xA009;
pub const HSA_DEVICE_TYPE_CPU: u32 = 0;
pub const HSA_DEVICE_TYPE_GPU: u32 = 1;
pub const HSA_AGENT_FEATURE_KERNEL_DISPATCH: u32 = 1;
pub const HSA_ISA_INFO_NAME_LENGTH: u32 = 0;
pub const HSA_ISA_INFO_NAME: u32 = 1;

pub const HSA_AMD_MEMORY_POOL_INFO_SEGMENT: u32 = 0;
pub const HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: u32 = 1;
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: u32 = 5;
pub const HSA_AMD_SEGMENT_GLOBAL: u32 = 0;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT: u32 = 1;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED: u32 = 2;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED: u32 = 4;

pub const HSA_QUEUE_TYPE_MULTI: u32 = 0;
pub const HSA_SIGNAL_CONDITION_EQ: u32 = 0;
pub const HSA_SIGNAL_CONDITION_NE: u32 = 1;
pub const HSA_SIGNAL_CONDITION_LT: u32 = 2;
pub const HSA_SIGNAL_CONDITION_GTE: u32 = 3;
pub const HSA_WAIT_STATE_BLOCKED: u32 = 0;
pub const HSA_PROFILE_FULL: u32 = 1;
pub const HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT: u32 = 0;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: u32 = 11;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: u32 = 13;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: u32 = 14;
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: u32 = 22;

/// AQL packet types (`hsa_packet_type_t`) and the AMD vendor format.
pub const HSA_PACKET_TYPE_VENDOR_SPECIFIC: u16 = 0;
pub const HSA_PACKET_TYPE_INVALID: u16 = 1;
pub const HSA_PACKET_TYPE_KERNEL_DISPATCH: u16 = 2;
pub const HSA_PACKET_TYPE_BARRIER_AND: u16 = 3;
pub const HSA_PACKET_TYPE_BARRIER_OR: u16 = 5;
pub const HSA_AMD_PACKET_TYPE_BARRIER_VALUE: u8 = 2;
/// Bit positions in a packet's 16-bit header (`hsa_packet_header_t`).
pub const HSA_PACKET_HEADER_TYPE: u16 = 0;
pub const HSA_PACKET_HEADER_BARRIER: u16 = 8;
pub const HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE: u16 = 9;
pub const HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE: u16 = 11;
pub const HSA_FENCE_SCOPE_NONE: u16 = 0;
pub const HSA_FENCE_SCOPE_AGENT: u16 = 1;
pub const HSA_FENCE_SCOPE_SYSTEM: u16 = 2;
/// Where the dimension count sits in a dispatch packet's `setup`.
pub const HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS: u16 = 0;

/// `hsa_queue_t`: what ROCr tells us of an AQL queue (64-bit, little-endian).
#[repr(C)]
pub struct hsa_queue_t {
    pub type_: u32,
    pub features: u32,
    pub base_address: *mut c_void,
    pub doorbell_signal: hsa_signal_t,
    pub size: u32,
    pub reserved1: u32,
    pub id: u64,
}

/// `hsa_kernel_dispatch_packet_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hsa_kernel_dispatch_packet_t {
    pub header: u16,
    pub setup: u16,
    pub workgroup_size_x: u16,
    pub workgroup_size_y: u16,
    pub workgroup_size_z: u16,
    pub reserved0: u16,
    pub grid_size_x: u32,
    pub grid_size_y: u32,
    pub grid_size_z: u32,
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg_address: u64,
    pub reserved2: u64,
    pub completion_signal: hsa_signal_t,
}

/// `hsa_barrier_and_packet_t` and `hsa_barrier_or_packet_t` (one layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hsa_barrier_packet_t {
    pub header: u16,
    pub reserved0: u16,
    pub reserved1: u32,
    pub dep_signal: [hsa_signal_t; 5],
    pub reserved2: u64,
    pub completion_signal: hsa_signal_t,
}

/// `hsa_amd_barrier_value_packet_t`: waits until `(signal & mask) cond
/// value`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hsa_amd_barrier_value_packet_t {
    pub header: u16,
    pub amd_format: u8,
    pub reserved: u8,
    pub reserved0: u32,
    pub signal: hsa_signal_t,
    pub value: hsa_signal_value_t,
    pub mask: hsa_signal_value_t,
    pub cond: u32,
    pub reserved1: u32,
    pub reserved2: u64,
    pub reserved3: u64,
    pub completion_signal: hsa_signal_t,
}

pub type AgentCallback = unsafe extern "C" fn(hsa_agent_t, *mut c_void) -> hsa_status_t;
pub type IsaCallback = unsafe extern "C" fn(hsa_isa_t, *mut c_void) -> hsa_status_t;
pub type PoolCallback = unsafe extern "C" fn(hsa_amd_memory_pool_t, *mut c_void) -> hsa_status_t;
pub type QueueCallback = unsafe extern "C" fn(hsa_status_t, *mut hsa_queue_t, *mut c_void);

/// Declares the table once: each field's name, the symbol it is resolved
/// from, and its signature; `optional` ones may be missing.
macro_rules! runtime_table {
    (
        required {
            $($field:ident = $symbol:literal: fn($($arg:ty),* $(,)?) -> $ret:ty;)*
        }
        optional {
            $($ofield:ident = $osymbol:literal: fn($($oarg:ty),* $(,)?) -> $oret:ty;)*
        }
    ) => {
        /// `libhsa-runtime64.so.1`'s entry points. The library stays loaded
        /// for the life of the process, so the pointers never dangle.
        pub struct Runtime {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> $ret,)*
            $(pub $ofield: Option<unsafe extern "C" fn($($oarg),*) -> $oret>,)*
            _library: libloading::Library,
        }

        impl Runtime {
            /// Every required symbol and which optional ones are present.
            pub const REQUIRED: &'static [&'static str] = &[$($symbol),*];
            pub const OPTIONAL: &'static [&'static str] = &[$($osymbol),*];

            fn resolve(library: libloading::Library) -> Result<Self, libloading::Error> {
                // SAFETY: each symbol is declared with its signature from
                // hsa.h or hsa_ext_amd.h, and `library` is kept beside the
                // pointers.
                unsafe {
                    $(let $field = *library.get(concat!($symbol, "\0").as_bytes())?;)*
                    $(let $ofield = library.get(concat!($osymbol, "\0").as_bytes()).ok().map(|s| *s);)*
                    Ok(Self { $($field,)* $($ofield,)* _library: library })
                }
            }
        }
    };
}

runtime_table! {
    required {
    status_string = "hsa_status_string": fn(hsa_status_t, *mut *const c_char) -> hsa_status_t;
    init = "hsa_init": fn() -> hsa_status_t;
    iterate_agents = "hsa_iterate_agents": fn(AgentCallback, *mut c_void) -> hsa_status_t;
    agent_get_info = "hsa_agent_get_info": fn(hsa_agent_t, u32, *mut c_void) -> hsa_status_t;
    agent_iterate_isas = "hsa_agent_iterate_isas": fn(hsa_agent_t, IsaCallback, *mut c_void) -> hsa_status_t;
    isa_get_info_alt = "hsa_isa_get_info_alt": fn(hsa_isa_t, u32, *mut c_void) -> hsa_status_t;
    agent_iterate_memory_pools = "hsa_amd_agent_iterate_memory_pools": fn(hsa_agent_t, PoolCallback, *mut c_void) -> hsa_status_t;
    memory_pool_get_info = "hsa_amd_memory_pool_get_info": fn(hsa_amd_memory_pool_t, u32, *mut c_void) -> hsa_status_t;
    memory_pool_allocate = "hsa_amd_memory_pool_allocate": fn(hsa_amd_memory_pool_t, usize, u32, *mut *mut c_void) -> hsa_status_t;
    memory_pool_free = "hsa_amd_memory_pool_free": fn(*mut c_void) -> hsa_status_t;
    agents_allow_access = "hsa_amd_agents_allow_access": fn(u32, *const hsa_agent_t, *const u32, *const c_void) -> hsa_status_t;
    signal_create = "hsa_signal_create": fn(hsa_signal_value_t, u32, *const hsa_agent_t, *mut hsa_signal_t) -> hsa_status_t;
    signal_destroy = "hsa_signal_destroy": fn(hsa_signal_t) -> hsa_status_t;
    signal_load_scacquire = "hsa_signal_load_scacquire": fn(hsa_signal_t) -> hsa_signal_value_t;
    signal_store_screlease = "hsa_signal_store_screlease": fn(hsa_signal_t, hsa_signal_value_t) -> ();
    signal_wait_any = "hsa_amd_signal_wait_any": fn(u32, *mut hsa_signal_t, *mut u32, *mut hsa_signal_value_t, u64, u32, *mut hsa_signal_value_t) -> u32;
    queue_create = "hsa_queue_create": fn(hsa_agent_t, u32, u32, Option<QueueCallback>, *mut c_void, u32, u32, *mut *mut hsa_queue_t) -> hsa_status_t;
    queue_destroy = "hsa_queue_destroy": fn(*mut hsa_queue_t) -> hsa_status_t;
    queue_load_read_index_scacquire = "hsa_queue_load_read_index_scacquire": fn(*const hsa_queue_t) -> u64;
    queue_add_write_index_relaxed = "hsa_queue_add_write_index_relaxed": fn(*const hsa_queue_t, u64) -> u64;
    code_object_reader_create_from_memory = "hsa_code_object_reader_create_from_memory": fn(*const c_void, usize, *mut hsa_code_object_reader_t) -> hsa_status_t;
    code_object_reader_destroy = "hsa_code_object_reader_destroy": fn(hsa_code_object_reader_t) -> hsa_status_t;
    executable_create_alt = "hsa_executable_create_alt": fn(u32, u32, *const c_char, *mut hsa_executable_t) -> hsa_status_t;
    executable_load_agent_code_object = "hsa_executable_load_agent_code_object": fn(hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t, *const c_char, *mut hsa_loaded_code_object_t) -> hsa_status_t;
    executable_freeze = "hsa_executable_freeze": fn(hsa_executable_t, *const c_char) -> hsa_status_t;
    executable_destroy = "hsa_executable_destroy": fn(hsa_executable_t) -> hsa_status_t;
    executable_get_symbol_by_name = "hsa_executable_get_symbol_by_name": fn(hsa_executable_t, *const c_char, *const hsa_agent_t, *mut hsa_executable_symbol_t) -> hsa_status_t;
    executable_symbol_get_info = "hsa_executable_symbol_get_info": fn(hsa_executable_symbol_t, u32, *mut c_void) -> hsa_status_t;
    interop_map_buffer = "hsa_amd_interop_map_buffer": fn(u32, *mut hsa_agent_t, c_int, u32, *mut usize, *mut *mut c_void, *mut usize, *mut *const c_void) -> hsa_status_t;
    interop_unmap_buffer = "hsa_amd_interop_unmap_buffer": fn(*mut c_void) -> hsa_status_t;
    }
    optional {
        // ROCr 6.0 and later: a dma-buf of device memory.
        portable_export_dmabuf = "hsa_amd_portable_export_dmabuf": fn(*const c_void, usize, *mut c_int, *mut u64) -> hsa_status_t;
    }
}

/// Where the runtime is looked for, in order.
pub fn library_candidates() -> Vec<std::ffi::OsString> {
    let from_env = std::env::var_os("RADIANCE_HSA_LIBRARY").filter(|p| !p.is_empty());
    from_env.into_iter().chain(["libhsa-runtime64.so.1".into(), "libhsa-runtime64.so".into()]).collect()
}

impl Runtime {
    /// The runtime, loaded on first use; the error says why it could not be
    /// (no library by any name tried, or one without an entry point we
    /// need).
    pub fn get() -> Result<&'static Runtime, &'static str> {
        static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
        RUNTIME
            .get_or_init(|| {
                let mut tried = Vec::new();
                for name in library_candidates() {
                    // SAFETY: loading runs ROCr's initialisers, which expect
                    // nothing of us (hsa_init does the work).
                    match unsafe { libloading::Library::new(&name) } {
                        Ok(library) => {
                            return Runtime::resolve(library).map_err(|e| format!("{}: {e}", name.to_string_lossy()))
                        }
                        Err(e) => tried.push(e.to_string()),
                    }
                }
                Err(tried.join("; "))
            })
            .as_ref()
            .map_err(String::as_str)
    }
}
