// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The hsa device: a GPU agent, the memory pools its buffers come from, the
//! built-in kernels loaded for it, and what its queues, semaphores and
//! buffers share.

use super::{
    buffer::HsaBuffer,
    packet::KernelObject,
    queue::{HsaQueue, Scheduler},
    result::Api,
    semaphore::{self, Completion, HsaSemaphore},
    sys::*,
};
use crate::{
    backend::{Backend, BackendBuffer, BackendQueue, BackendSemaphore},
    host_waits::Hub,
    native_launch::AddressSpace,
    BufferParams, DeviceInfo, Error, Result, SemaphoreList, StatusCode, WaitMode,
};
use std::{
    os::fd::BorrowedFd,
    sync::{Arc, Mutex},
    time::Instant,
};

// CODE_OBJECTS and CODE_OBJECTS_MISSING, from build.rs.
include!(concat!(env!("OUT_DIR"), "/hsa_builtins.rs"));

/// The built-ins' kernel symbols: FILL_U32, COPY_U32, VECADD_U32, SPIN (in
/// `native_launch`'s order), then the HAL's fill and copy.
const KERNELS: [&std::ffi::CStr; 6] = [
    c"radiance_fill_u32.kd",
    c"radiance_copy_u32.kd",
    c"radiance_vecadd_u32.kd",
    c"radiance_spin.kd",
    c"radiance_hal_fill.kd",
    c"radiance_hal_copy.kd",
];
pub(super) const HAL_FILL: usize = 4;
pub(super) const HAL_COPY: usize = 5;

/// Where a device's memory comes from.
#[derive(Clone, Copy)]
pub(super) struct Pools {
    /// The GPU's coarse-grained global pool: Device buffers.
    pub(super) device: hsa_amd_memory_pool_t,
    /// The CPU's fine-grained global pool: HostVisible buffers.
    pub(super) host: hsa_amd_memory_pool_t,
    /// The CPU's kernarg pool: kernel arguments, update staging.
    pub(super) kernarg: hsa_amd_memory_pool_t,
}

/// What every object of a device holds on to.
pub(super) struct Shared {
    pub(super) api: Api,
    pub(super) gpu: hsa_agent_t,
    pub(super) pools: Pools,
    pub(super) kernels: [KernelObject; 6],
    pub(super) space: AddressSpace<HsaBuffer>,
    pub(super) scheduler: Mutex<Scheduler>,
    pub(super) hub: Hub,
    pub(super) completion: Completion,
    executable: hsa_executable_t,
}

// SAFETY: agents, pools and executables are handles ROCr lets any thread
// use; the rest is locked or atomic.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: every queue (and so every dispatch) of the device is gone.
        unsafe { self.api.executable_destroy(self.executable) };
        self.completion.destroy(self.api);
    }
}

/// The GPU agents, in ROCr's order: `hsa:N` is the Nth.
fn gpus(api: Api) -> Result<Vec<hsa_agent_t>> {
    let mut gpus = Vec::new();
    for agent in api.agents()? {
        if api.agent_info::<u32>(agent, HSA_AGENT_INFO_DEVICE)? == HSA_DEVICE_TYPE_GPU
            && api.agent_info::<u32>(agent, HSA_AGENT_INFO_FEATURE)? & HSA_AGENT_FEATURE_KERNEL_DISPATCH != 0
        {
            gpus.push(agent);
        }
    }
    Ok(gpus)
}

/// `hsa:N` for each GPU agent where ROCr starts; nothing elsewhere.
pub(crate) fn enumerate() -> Vec<String> {
    Api::load("hsa").and_then(gpus).map(|g| (0..g.len()).map(|i| format!("hsa:{i}")).collect()).unwrap_or_default()
}

/// The first pool of `agent` that allocates in the global segment with
/// `flag`.
fn pool(api: Api, agent: hsa_agent_t, flag: u32, what: &str) -> Result<hsa_amd_memory_pool_t> {
    api.pools(agent)?
        .into_iter()
        .find(|&(_, segment, flags, alloc)| segment == HSA_AMD_SEGMENT_GLOBAL && alloc && flags & flag != 0)
        .map(|(pool, ..)| pool)
        .ok_or_else(|| Error::Status {
            code: StatusCode::Unavailable,
            message: format!("ROCr reports no {what} memory pool"),
        })
}

/// The embedded code object for an agent's ISA (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`
/// runs `gfx90a`'s).
fn code_object(isas: &[String]) -> Result<&'static [u8]> {
    if let Some(why) = CODE_OBJECTS_MISSING {
        return Err(Error::Unsupported(format!(
            "this libradiance was built without the hsa built-in kernels ({why}); rebuild it where clang-19 and lld-19 are installed, or set RADIANCE_HSA_CLANG and RADIANCE_HSA_LLD to a ROCm install's llvm/bin/clang and ld.lld"
        )));
    }
    let generation = |isa: &str| isa.rsplit("--").next().and_then(|t| t.split(':').next()).map(str::to_owned);
    isas.iter()
        .filter_map(|isa| generation(isa))
        .find_map(|g| CODE_OBJECTS.iter().find(|(t, _)| *t == g).map(|(_, code)| *code))
        .ok_or_else(|| {
            let built: Vec<_> = CODE_OBJECTS.iter().map(|(t, _)| *t).collect();
            Error::Status {
                code: StatusCode::Incompatible,
                message: format!(
                    "no built-in kernels for ISA {isas:?}: this build has code objects for {}; add the target to libradiance/build.rs",
                    built.join(", ")
                ),
            }
        })
}

pub(crate) struct HsaDevice {
    info: DeviceInfo,
    shared: Arc<Shared>,
}

impl HsaDevice {
    /// Opens `hsa:N`: GPU agent N of ROCr.
    pub(crate) fn open(uri: &str) -> Result<Self> {
        let index = uri
            .strip_prefix("hsa:")
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| Error::InvalidArgument(format!("invalid device name {uri:?}: expected hsa:N")))?;
        let api = Api::load(uri)?;
        let gpus = gpus(api)?;
        let gpu = *gpus.get(index).ok_or_else(|| Error::Status {
            code: StatusCode::NotFound,
            message: format!("{uri}: no such GPU: ROCr reports {} (see `radctl list`)", gpus.len()),
        })?;
        let cpu = api
            .agents()?
            .into_iter()
            .find(|&a| api.agent_info::<u32>(a, HSA_AGENT_INFO_DEVICE).is_ok_and(|d| d == HSA_DEVICE_TYPE_CPU))
            .ok_or_else(|| Error::Status {
                code: StatusCode::Unavailable,
                message: format!("{uri}: ROCr reports no CPU agent"),
            })?;
        let pools = Pools {
            device: pool(api, gpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED, "coarse-grained GPU")?,
            host: pool(api, cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED, "fine-grained host")?,
            kernarg: pool(api, cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT, "kernarg")?,
        };
        let isas = api.isa_names(gpu)?;
        let executable = api.executable_load(gpu, code_object(&isas)?)?;
        let mut kernels = [KernelObject::default(); 6];
        for (k, name) in kernels.iter_mut().zip(KERNELS) {
            match api.kernel(executable, gpu, name) {
                Ok(kernel) => *k = kernel,
                Err(e) => {
                    // SAFETY: nothing has dispatched from it.
                    unsafe { api.executable_destroy(executable) };
                    return Err(e);
                }
            }
        }
        let completion = match Completion::new(api) {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: as above.
                unsafe { api.executable_destroy(executable) };
                return Err(e);
            }
        };
        let product = api.agent_name(gpu, HSA_AMD_AGENT_INFO_PRODUCT_NAME).unwrap_or_default();
        let name = api.agent_name(gpu, HSA_AGENT_INFO_NAME)?;
        let shared = Arc::new(Shared {
            api,
            gpu,
            pools,
            kernels,
            space: AddressSpace::default(),
            scheduler: Mutex::default(),
            hub: Hub::default(),
            completion,
            executable,
        });
        semaphore::start_completion_thread(&shared)?;
        Ok(Self {
            info: DeviceInfo {
                uri: uri.to_owned(),
                backend: "hsa",
                name: if product.is_empty() { name } else { format!("{product} ({name})") },
                builtin_kernels: true,
                // The built-ins check every address against live buffers.
                memory_protection: true,
            },
            shared,
        })
    }
}

impl Drop for HsaDevice {
    fn drop(&mut self) {
        // The completion thread holds the device only while it drains.
        self.shared.completion.stop(self.shared.api);
    }
}

impl Backend for HsaDevice {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn create_semaphore(&self, initial: u64) -> Result<Arc<dyn BackendSemaphore>> {
        Ok(Arc::new(HsaSemaphore::new(&self.shared, initial)))
    }

    fn wait_semaphores(&self, mode: WaitMode, points: &SemaphoreList, deadline: Option<Instant>) -> Result<()> {
        semaphore::wait(&self.shared.hub, mode, points, deadline)
    }

    fn allocate_buffer(&self, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Ok(HsaBuffer::allocate(&self.shared, params)?)
    }

    fn import_dma_buf(&self, fd: BorrowedFd<'_>, params: &BufferParams) -> Result<Arc<dyn BackendBuffer>> {
        Ok(HsaBuffer::import(&self.shared, fd, params)?)
    }

    fn create_queue(&self) -> Result<Arc<dyn BackendQueue>> {
        Ok(Arc::new(HsaQueue::new(&self.shared)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_an_embedded_code_object_with_every_kernel() {
        assert_eq!(CODE_OBJECTS_MISSING, None, "build.rs could not build the built-ins");
        assert!(CODE_OBJECTS.len() >= 5);
        for (target, code) in CODE_OBJECTS {
            // An AMDGPU ELF (EM_AMDGPU = 224) for the HSA OS ABI (64) ...
            assert_eq!(&code[..4], b"\x7fELF", "{target}");
            assert_eq!((code[7], u16::from_le_bytes([code[18], code[19]])), (64, 224), "{target}");
            // ... with every kernel descriptor this backend looks up.
            for name in KERNELS {
                let name = name.to_bytes();
                assert!(
                    code.windows(name.len()).any(|w| w == name),
                    "{target} lacks {}",
                    String::from_utf8_lossy(name)
                );
            }
        }
    }

    #[test]
    fn an_agent_runs_its_generation_s_code_object() {
        let isa = |s: &str| vec![s.to_owned()];
        let gfx90a = CODE_OBJECTS.iter().find(|(t, _)| *t == "gfx90a").map(|(_, c)| *c);
        let gfx1030 = CODE_OBJECTS.iter().find(|(t, _)| *t == "gfx1030").map(|(_, c)| *c);
        assert!(gfx90a.is_some() && gfx90a != gfx1030);
        assert_eq!(code_object(&isa("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")).ok(), gfx90a);
        assert_eq!(code_object(&isa("amdgcn-amd-amdhsa--gfx1030")).ok(), gfx1030);
        let e = code_object(&isa("amdgcn-amd-amdhsa--gfx1200")).unwrap_err();
        assert_eq!(e.status(), StatusCode::Incompatible);
        assert!(e.to_string().contains("gfx1030"), "{e}");
    }
}
