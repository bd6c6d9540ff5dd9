// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Devices and buffers: opening by URI, allocation, mapping coherency,
//! dma-buf export and import.

use super::{device_buffer, mappable, noise, reach};
use crate::{
    check::{ensure, ensure_eq, expect_err, Stop},
    Case, Outcome,
};
use radiance::{BufferParams, BufferUsage, Device, MemoryType, Pattern, StatusCode};
use std::os::fd::AsFd;

pub(super) const CASES: &[Case] = &[
    Case { name: "device_open_refuses_unknown_uris", run: open_uris },
    Case { name: "buffer_allocation", run: allocation },
    Case { name: "buffer_map_coherency", run: map_coherency },
    Case { name: "buffer_dma_buf_round_trip", run: dma_buf },
];

fn open_uris(device: &Device) -> Outcome {
    ensure!(Device::enumerate().contains(&"host".to_owned()), "enumerate() lacks host");
    expect_err(Device::open("nonsense:0"), StatusCode::InvalidArgument, "unknown scheme")?;
    expect_err(Device::open("kmod:zero"), StatusCode::InvalidArgument, "malformed kmod URI")?;
    ensure!(!device.info().name.is_empty(), "the device has no name");
    ensure_eq!(device.info().uri, device.info().uri.trim(), "URI");
    Ok(())
}

fn allocation(device: &Device) -> Outcome {
    let zero = BufferParams { size: 0, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
    expect_err(device.allocate_buffer(zero), StatusCode::InvalidArgument, "zero-byte buffer")?;
    let mappable_device_memory = BufferParams { size: 16, memory: MemoryType::Device, usage: BufferUsage::MAPPING };
    expect_err(device.allocate_buffer(mappable_device_memory), StatusCode::InvalidArgument, "mappable device memory")?;
    // Live buffers never overlap in the device address space.
    let sizes = [1u64, 3, 4096, 5000, 17, 1 << 20];
    let buffers = sizes.iter().map(|&size| device_buffer(device, size)).collect::<radiance::Result<Vec<_>>>()?;
    let mut ranges: Vec<(u64, u64)> =
        buffers.iter().map(|b| (b.device_address(), b.device_address() + b.size())).collect();
    for (b, &size) in buffers.iter().zip(&sizes) {
        ensure_eq!(b.size(), size, "buffer size");
        ensure!(b.device_address() != 0, "a buffer at device address 0");
    }
    ranges.sort();
    ensure!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "buffers overlap: {ranges:x?}");
    // Device memory is not mappable.
    expect_err(buffers[0].map().map(|_| ()), StatusCode::InvalidArgument, "map of device memory")?;
    Ok(())
}

/// Host writes through a mapping are seen by queue work submitted after
/// them; queue writes are seen through the mapping once their semaphore is
/// reached; mapping accesses are bounds-checked.
fn map_coherency(device: &Device) -> Outcome {
    let q = device.create_queue()?;
    let (host, dev) = (mappable(device, 4096)?, device_buffer(device, 4096)?);
    let data = noise(4096, 11);
    let s = device.create_semaphore(0)?;
    for round in 0..3u64 {
        let mapping = host.map()?;
        let mut data = data.clone();
        data[round as usize] ^= 0xFF;
        mapping.write(0, &data)?;
        // Round trip through device memory, then a fill over part of it.
        q.copy(&[(&s, 3 * round)], &[(&s, 3 * round + 1)], host.at(0), dev.at(0), 4096)?;
        q.fill(&[(&s, 3 * round + 1)], &[(&s, 3 * round + 2)], host.at(100), 200, Pattern::U8(round as u8))?;
        q.copy(&[(&s, 3 * round + 2)], &[(&s, 3 * round + 3)], dev.at(1000), host.at(2000), 50)?;
        reach(&s, 3 * round + 3)?;
        let mut want = data.clone();
        want[100..300].fill(round as u8);
        want.copy_within(1000..1050, 2000);
        let mut got = vec![0; 4096];
        mapping.read(0, &mut got)?;
        ensure!(got == want, "round {round}: mapped contents differ from the queue's writes");
    }
    let mapping = host.map()?;
    expect_err(mapping.read(4090, &mut [0; 7]), StatusCode::OutOfRange, "read past the end")?;
    expect_err(mapping.write(u64::MAX, &[0]), StatusCode::OutOfRange, "write at an overflowing offset")?;
    Ok(())
}

/// Export a buffer as a dma-buf, import it on the same device, and see the
/// same bytes through both.
fn dma_buf(device: &Device) -> Outcome {
    let buffer = mappable(device, 4096)?;
    let fd = match buffer.export_dma_buf() {
        Err(e) if e.status() == StatusCode::Unimplemented => {
            return Err(Stop::Skip(format!("{} cannot export dma-bufs: {e}", device.info().backend)));
        }
        other => other?,
    };
    let params = BufferParams {
        size: 4096,
        memory: MemoryType::HostVisible,
        usage: BufferUsage::TRANSFER | BufferUsage::MAPPING,
    };
    let imported = device.import_dma_buf(fd.as_fd(), params)?;
    let data = noise(4096, 5);
    buffer.map()?.write(0, &data)?;
    let mut got = vec![0; 4096];
    imported.map()?.read(0, &mut got)?;
    ensure!(got == data, "the imported buffer does not show the exported buffer's bytes");
    Ok(())
}
