// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance_transport_*`: the Merlin seam ([`crate::transport`]) for C.
//! A transport handle is an `Arc<Mutex<Transport>>`: calls from several
//! threads take turns.
//!
//! The seam's host addresses are plain integers. H2D sources are read
//! through `/proc/self/mem`; D2H destinations are written by reading them
//! out of a pipe, which honours page protections and fails with EFAULT
//! where a store would raise SIGSEGV (a write through `/proc/self/mem`
//! would not: it forces its way into read-only pages).
//! Each D2H destination is probed that way when the copy is submitted and
//! written that way at `synchronize`. So a host address that is no mapped,
//! or no writable, memory of this process is an INVALID_ARGUMENT status,
//! not a crash (Merlin's own smoke test passes a device address as a host
//! pointer; a read-only destination reached synchronize and died there).

use super::{
    handle::{self, c_str, get, put, slice},
    status::{call, StatusPtr},
};
use crate::{lock::lock, transport::Transport, Error, Launch};
use std::{
    ffi::{c_char, c_void},
    os::fd::AsRawFd,
    sync::{Arc, Mutex},
};

/// `radiance_copy_direction_t`.
const H2D: u32 = 0;
const D2H: u32 = 1;

/// `radiance_transport_launch_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TransportLaunchDesc {
    stream_id: u8,
    start_pc: u32,
    kernel_pc: u32,
    grid: [u32; 3],
    block: [u32; 3],
    regs_per_thread: u8,
    shmem_per_block: u32,
    params: *const c_void,
    params_length: usize,
}

type Handle = Mutex<Transport>;

/// `radiance_transport_create`: a transport over the device at `uri`.
#[no_mangle]
pub extern "C" fn radiance_transport_create(uri: *const c_char, out_transport: *mut *mut Handle) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a NUL-terminated string.
        let uri = unsafe { c_str(uri) }?.ok_or_else(|| Error::InvalidArgument("device URI is NULL".into()))?;
        let transport = Transport::new(uri)?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_transport, handle::new(Mutex::new(transport))) }
    })
}

/// `radiance_transport_destroy`: releases everything (NULL is ignored).
#[no_mangle]
pub extern "C" fn radiance_transport_destroy(transport: *mut Handle) {
    if !transport.is_null() {
        // SAFETY: the caller gives back the handle `create` made, once.
        drop(unsafe { Arc::from_raw(transport.cast_const()) });
    }
}

/// `radiance_transport_alloc_device`.
#[no_mangle]
pub extern "C" fn radiance_transport_alloc_device(
    transport: *const Handle,
    bytes: u32,
    out_device_address: *mut u64,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let address = lock(unsafe { get(transport, "transport") }?).alloc_device(bytes)?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_device_address, address) }
    })
}

/// `radiance_transport_submit_copy`: H2D reads `length` bytes at host
/// address `src_address` now; D2H writes them to host address `dst_address`
/// at the stream's next `synchronize`, which must find it still valid.
#[no_mangle]
pub extern "C" fn radiance_transport_submit_copy(
    transport: *const Handle,
    stream_id: u8,
    src_address: u64,
    dst_address: u64,
    length: u32,
    direction: u32,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let mut t = lock(unsafe { get(transport, "transport") }?);
        match direction {
            H2D => {
                let src = host_bytes(src_address, length)?;
                t.copy_to_device(stream_id, &src, dst_address)
            }
            D2H => {
                // Writable now (its own bytes written back: the copy
                // overwrites them anyway); written again at synchronize.
                write_host(dst_address, &host_bytes(dst_address, length)?)?;
                t.copy_to_host(stream_id, src_address, length, dst_address as usize)
            }
            d => Err(Error::InvalidArgument(format!("copy direction {d} is neither H2D (0) nor D2H (1)"))),
        }
    })
}

/// `length` bytes of this process's memory at `address`, read through
/// `/proc/self/mem`: INVALID_ARGUMENT if they are not all mapped.
fn host_bytes(address: u64, length: u32) -> crate::Result<Vec<u8>> {
    let bad =
        || Error::InvalidArgument(format!("host address {address:#x}+{length} is not mapped memory of this process"));
    let mut bytes = vec![0; length as usize];
    if length == 0 {
        return Ok(bytes);
    }
    if address == 0 {
        return Err(bad());
    }
    let mem = rustix::fs::open(
        "/proc/self/mem",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| Error::os("opening /proc/self/mem", e))?;
    let mut done = 0;
    while done < bytes.len() {
        match rustix::io::pread(&mem, &mut bytes[done..], address + done as u64) {
            Ok(0) | Err(_) => return Err(bad()),
            Ok(n) => done += n,
        }
    }
    Ok(bytes)
}

/// Writes `bytes` to this process's memory at `address` through a pipe:
/// the kernel copies out of the pipe as it copies out for any system call,
/// so memory that is unmapped or read-only is EFAULT (INVALID_ARGUMENT
/// here), never a SIGSEGV. (`process_vm_writev` would do as well, but
/// needs CONFIG_CROSS_MEMORY_ATTACH, which small kernels such as the test
/// kernel leave out.)
fn write_host(address: u64, bytes: &[u8]) -> crate::Result<()> {
    let bad = || {
        Error::InvalidArgument(format!(
            "host address {address:#x}+{} is not writable memory of this process",
            bytes.len()
        ))
    };
    if bytes.is_empty() {
        return Ok(());
    }
    if address == 0 {
        return Err(bad());
    }
    let (from, into) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::os("pipe", e))?;
    // What the pipe holds without blocking its only writer, this thread:
    // at least a page, however small the kernel made it.
    let chunk = rustix::pipe::fcntl_getpipe_size(&from).unwrap_or(4096).max(1);
    for (i, piece) in bytes.chunks(chunk).enumerate() {
        rustix::io::write(&into, piece).ok().filter(|&n| n == piece.len()).ok_or_else(bad)?;
        let mut got = 0;
        while got < piece.len() {
            let at = address as usize + i * chunk + got;
            // SAFETY: a raw address goes to the kernel, no reference is
            // made to it; the kernel checks it against this process's
            // mappings and their protections and fails with EFAULT where a
            // store would fault.
            let n = unsafe { libc::read(from.as_raw_fd(), at as *mut c_void, piece.len() - got) };
            if n <= 0 {
                return Err(bad());
            }
            got += n as usize;
        }
    }
    Ok(())
}

/// `radiance_transport_submit_fill`: a 4-byte pattern.
#[no_mangle]
pub extern "C" fn radiance_transport_submit_fill(
    transport: *const Handle,
    stream_id: u8,
    dst_address: u64,
    value: u32,
    length: u32,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        lock(unsafe { get(transport, "transport") }?).fill(stream_id, dst_address, value, length)
    })
}

/// `radiance_transport_submit_dispatch`.
#[no_mangle]
pub extern "C" fn radiance_transport_submit_dispatch(
    transport: *const Handle,
    launch: *const TransportLaunchDesc,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle and a valid launch whose
        // params hold `params_length` bytes.
        let (t, l) = unsafe { (get(transport, "transport")?, get(launch, "launch")?) };
        let TransportLaunchDesc {
            stream_id,
            start_pc,
            kernel_pc,
            grid,
            block,
            regs_per_thread,
            shmem_per_block,
            params,
            params_length,
        } = *l;
        // SAFETY: as above.
        let params = unsafe { slice(params.cast::<u8>(), params_length, "launch params") }?.to_vec();
        let launch =
            Launch { start_pc, kernel_pc, grid, block, regs_per_thread, shmem_per_block, params, ..Default::default() };
        lock(t).dispatch(stream_id, launch)
    })
}

/// `radiance_transport_synchronize`: waits for the stream, then fills the
/// host destinations of its device-to-host copies; the first failure with
/// its message.
#[no_mangle]
pub extern "C" fn radiance_transport_synchronize(transport: *const Handle, stream_id: u8) -> StatusPtr {
    call(|| {
        // `host` is the destination the caller gave `submit_copy`, which
        // may have been unmapped or made read-only since.
        // SAFETY: the caller passes a live handle.
        lock(unsafe { get(transport, "transport") }?)
            .synchronize(stream_id, |host, bytes| write_host(host as u64, bytes))
    })
}
