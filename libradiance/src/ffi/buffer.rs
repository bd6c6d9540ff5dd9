// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance_buffer_*`.

use super::{
    handle::{self, get, put, retain_release},
    status::{call, guard, StatusPtr},
};
use crate::{Buffer, BufferParams, BufferUsage, Device, Error, MemoryType, Result};
use std::{
    ffi::{c_int, c_void},
    os::fd::{AsRawFd, BorrowedFd, IntoRawFd},
};

/// `radiance_buffer_params_t`.
#[repr(C)]
pub struct BufferParamsDesc {
    size: u64,
    memory_type: u32,
    usage: u32,
}

impl BufferParamsDesc {
    fn params(&self) -> Result<BufferParams> {
        let memory = match self.memory_type {
            0 => MemoryType::Device,
            1 => MemoryType::HostVisible,
            m => {
                return Err(Error::InvalidArgument(format!(
                    "memory type {m} is neither DEVICE (0) nor HOST_VISIBLE (1)"
                )))
            }
        };
        let usage = BufferUsage::from_bits(self.usage)
            .ok_or_else(|| Error::InvalidArgument(format!("buffer usage {:#x} has unknown bits", self.usage)))?;
        Ok(BufferParams { size: self.size, memory, usage })
    }
}

/// `radiance_mapping_t`: a mapped range; holds a reference to its buffer
/// until unmapped.
#[repr(C)]
pub struct MappingDesc {
    contents: *mut c_void,
    length: u64,
    buffer: *const Buffer,
}

/// `radiance_buffer_allocate`.
#[no_mangle]
pub extern "C" fn radiance_buffer_allocate(
    device: *const Device,
    params: *const BufferParamsDesc,
    out_buffer: *mut *mut Buffer,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle and valid params.
        let (device, params) = unsafe { (get(device, "device")?, get(params, "buffer params")?.params()?) };
        let buffer = device.allocate_buffer(params)?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_buffer, handle::new(buffer)) }
    })
}

/// `radiance_buffer_import_dma_buf`: a buffer over a dma-buf (the fd stays
/// the caller's).
#[no_mangle]
pub extern "C" fn radiance_buffer_import_dma_buf(
    device: *const Device,
    fd: c_int,
    params: *const BufferParamsDesc,
    out_buffer: *mut *mut Buffer,
) -> StatusPtr {
    call(|| {
        if fd < 0 {
            return Err(Error::InvalidArgument(format!("{fd} is not a file descriptor")));
        }
        // SAFETY: the caller passes a live handle and valid params.
        let (device, params) = unsafe { (get(device, "device")?, get(params, "buffer params")?.params()?) };
        // SAFETY: the caller keeps `fd` open for the duration of the call.
        let buffer = device.import_dma_buf(unsafe { BorrowedFd::borrow_raw(fd) }, params)?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_buffer, handle::new(buffer)) }
    })
}

retain_release!(Buffer, radiance_buffer_retain, radiance_buffer_release);

/// `radiance_buffer_size`: bytes (0 for NULL).
#[no_mangle]
pub extern "C" fn radiance_buffer_size(buffer: *const Buffer) -> u64 {
    // SAFETY: the caller passes NULL or a live handle.
    guard(0, || unsafe { buffer.as_ref() }.map_or(0, Buffer::size))
}

/// `radiance_buffer_device_address`: the device address of byte 0 (0 for
/// NULL; no buffer is ever at 0).
#[no_mangle]
pub extern "C" fn radiance_buffer_device_address(buffer: *const Buffer) -> u64 {
    // SAFETY: the caller passes NULL or a live handle.
    guard(0, || unsafe { buffer.as_ref() }.map_or(0, Buffer::device_address))
}

/// `radiance_buffer_map`: maps `length` bytes at `offset` of a mappable
/// buffer into `out_mapping`.
#[no_mangle]
pub extern "C" fn radiance_buffer_map(
    buffer: *const Buffer,
    offset: u64,
    length: u64,
    out_mapping: *mut MappingDesc,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let contents = unsafe { get(buffer, "buffer") }?.host_ptr(offset, length)?.cast();
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_mapping, MappingDesc { contents, length, buffer }) }?;
        // SAFETY: `buffer` is live (checked above); the mapping owns this
        // reference until `radiance_buffer_unmap`.
        unsafe { handle::retain(buffer) };
        Ok(())
    })
}

/// `radiance_buffer_unmap`: ends a mapping; its contents pointer is invalid
/// afterwards.
#[no_mangle]
pub extern "C" fn radiance_buffer_unmap(mapping: *mut MappingDesc) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a mapping filled by `radiance_buffer_map`.
        let mapping = unsafe { mapping.as_mut() }.ok_or_else(|| Error::InvalidArgument("mapping is NULL".into()))?;
        let buffer = std::mem::replace(&mut mapping.buffer, std::ptr::null());
        if buffer.is_null() {
            return Err(Error::InvalidArgument("mapping is not mapped".into()));
        }
        let contents = std::mem::replace(&mut mapping.contents, std::ptr::null_mut());
        // SAFETY: the mapping holds a reference, so the handle is live.
        let written = unsafe { get(buffer, "buffer") }?.unmap_host(contents.cast(), mapping.length);
        // SAFETY: the mapping held this reference (taken in map).
        unsafe { handle::release(buffer) };
        written
    })
}

/// `radiance_buffer_export_dma_buf`: a new dma-buf fd for the buffer's
/// memory, owned by the caller.
#[no_mangle]
pub extern "C" fn radiance_buffer_export_dma_buf(buffer: *const Buffer, out_fd: *mut c_int) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let fd = unsafe { get(buffer, "buffer") }?.export_dma_buf()?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_fd, fd.as_raw_fd()) }?;
        // Stored: the caller owns the fd now.
        let _ = fd.into_raw_fd();
        Ok(())
    })
}
