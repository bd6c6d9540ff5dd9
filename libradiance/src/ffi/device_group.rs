// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radiance_device_group_*`: IREE's device group builder, stack-allocated
//! by the caller, and the group it finalizes into.

use super::{
    handle::{self, get, put, retain_release},
    status::{call, guard, StatusPtr},
};
use crate::{Device, DeviceGroup, DeviceGroupBuilder, Error};
use std::sync::Arc;

/// `RADIANCE_DEVICE_GROUP_MAX_DEVICES`.
const MAX_DEVICES: usize = 16;

/// `radiance_device_group_builder_t`: the caller's; each device it holds
/// is one reference.
#[repr(C)]
pub struct BuilderDesc {
    device_count: u32,
    reserved: u32,
    devices: [*const Device; MAX_DEVICES],
}

/// `radiance_topology_edge_t`.
#[repr(C)]
pub struct EdgeDesc {
    semaphore_route: u32,
    buffer_route: u32,
    link_class: u32,
    reserved: u32,
}

/// `radiance_device_group_t`: the group, and the device handles it was
/// built from, which `radiance_device_group_device` hands out.
pub struct Group {
    group: DeviceGroup,
    handles: Vec<Arc<Device>>,
}

impl BuilderDesc {
    /// The devices it holds, taking over its references; it is empty
    /// after.
    fn take(&mut self) -> Vec<Arc<Device>> {
        let count = (self.device_count as usize).min(MAX_DEVICES);
        self.device_count = 0;
        self.devices[..count]
            .iter_mut()
            .map(|d| std::mem::replace(d, std::ptr::null()))
            // SAFETY: each was retained by `add_device` and is released
            // only through this Arc.
            .map(|d| unsafe { Arc::from_raw(d) })
            .collect()
    }
}

/// `radiance_device_group_builder_initialize`: an empty builder.
#[no_mangle]
pub extern "C" fn radiance_device_group_builder_initialize(builder: *mut BuilderDesc) {
    guard((), || {
        // SAFETY: the caller passes NULL or a writable builder.
        if let Some(builder) = unsafe { builder.as_mut() } {
            *builder = BuilderDesc { device_count: 0, reserved: 0, devices: [std::ptr::null(); MAX_DEVICES] };
        }
    })
}

/// `radiance_device_group_builder_add_device`: retains `device` in the
/// builder.
#[no_mangle]
pub extern "C" fn radiance_device_group_builder_add_device(
    builder: *mut BuilderDesc,
    device: *const Device,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes NULL or an initialized builder.
        let builder = unsafe { builder.as_mut() }.ok_or_else(|| Error::InvalidArgument("builder is NULL".into()))?;
        // SAFETY: the caller passes a live handle.
        unsafe { get(device, "device") }?;
        let count = builder.device_count as usize;
        if count >= MAX_DEVICES {
            return Err(Error::ResourceExhausted(format!("a device group holds at most {MAX_DEVICES} devices")));
        }
        // SAFETY: a live handle; the builder now owns one reference.
        unsafe { Arc::increment_strong_count(device) };
        builder.devices[count] = device;
        builder.device_count += 1;
        Ok(())
    })
}

/// `radiance_device_group_builder_finalize`: builds the group; the builder
/// is consumed (its references released) whether or not it succeeds.
#[no_mangle]
pub extern "C" fn radiance_device_group_builder_finalize(
    builder: *mut BuilderDesc,
    out_group: *mut *mut Group,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes NULL or an initialized builder.
        let builder = unsafe { builder.as_mut() }.ok_or_else(|| Error::InvalidArgument("builder is NULL".into()))?;
        let handles = builder.take();
        let mut rust = DeviceGroupBuilder::new();
        handles.iter().try_for_each(|d| rust.add(d).map(drop))?;
        let group = Group { group: rust.finalize()?, handles };
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_group, handle::new(group)) }
    })
}

/// `radiance_device_group_builder_deinitialize`: releases what the builder
/// holds, without building a group.
#[no_mangle]
pub extern "C" fn radiance_device_group_builder_deinitialize(builder: *mut BuilderDesc) {
    guard((), || {
        // SAFETY: the caller passes NULL or an initialized builder.
        if let Some(builder) = unsafe { builder.as_mut() } {
            drop(builder.take());
        }
    })
}

retain_release!(Group, radiance_device_group_retain, radiance_device_group_release);

/// `radiance_device_group_device_count`: devices in the group (0 for NULL).
#[no_mangle]
pub extern "C" fn radiance_device_group_device_count(group: *const Group) -> u32 {
    // SAFETY: the caller passes NULL or a live handle.
    guard(0, || unsafe { group.as_ref() }.map_or(0, |g| g.handles.len() as u32))
}

/// `radiance_device_group_device`: device `index`, borrowed from the group.
#[no_mangle]
pub extern "C" fn radiance_device_group_device(
    group: *const Group,
    index: u32,
    out_device: *mut *const Device,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let group = unsafe { get(group, "device group") }?;
        let device = group.handles.get(index as usize).ok_or_else(|| out_of_range(group, index))?;
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_device, Arc::as_ptr(device)) }
    })
}

/// `radiance_device_group_edge`: how device `to` reaches device `from`.
#[no_mangle]
pub extern "C" fn radiance_device_group_edge(
    group: *const Group,
    from: u32,
    to: u32,
    out_edge: *mut EdgeDesc,
) -> StatusPtr {
    call(|| {
        // SAFETY: the caller passes a live handle.
        let group = unsafe { get(group, "device group") }?;
        let edge =
            group.group.topology().edge(from as usize, to as usize).ok_or_else(|| out_of_range(group, from.max(to)))?;
        let edge = EdgeDesc {
            semaphore_route: edge.semaphore as u32,
            buffer_route: edge.buffer as u32,
            link_class: edge.link as u32,
            reserved: 0,
        };
        // SAFETY: the caller passes a writable out-parameter.
        unsafe { put(out_edge, edge) }
    })
}

fn out_of_range(group: &Group, index: u32) -> Error {
    Error::OutOfRange(format!("device {index} of a group of {}", group.handles.len()))
}
