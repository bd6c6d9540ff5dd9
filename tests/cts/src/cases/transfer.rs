// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Fill, copy and update at odd sizes and offsets, checked byte for byte
//! against a model; and the arguments they refuse.

use super::{contents, device_buffer, mappable, noise, reach};
use crate::{
    check::{ensure, expect_err},
    Case, Outcome,
};
use radiance::{BufferParams, BufferUsage, Device, MemoryType, Pattern, StatusCode};

pub(super) const CASES: &[Case] = &[
    Case { name: "fill_patterns_at_odd_offsets_and_sizes", run: fill },
    Case { name: "copy_and_update_at_odd_offsets_and_sizes", run: copy_update },
    Case { name: "transfer_arguments_are_checked", run: arguments },
];

/// Index of the first byte where `got` and `want` differ, for messages.
fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| g != w).or((got.len() != want.len()).then(|| got.len().min(want.len())))
}

fn fill(device: &Device) -> Outcome {
    const SIZE: usize = 1031;
    let q = device.create_queue()?;
    let buffer = device_buffer(device, SIZE as u64)?;
    let s = device.create_semaphore(0)?;
    let mut model = vec![0x11u8; SIZE];
    q.fill(&[], &[(&s, 1)], buffer.at(0), SIZE as u64, Pattern::U8(0x11))?;
    let fills: [(u64, u64, Pattern); 6] = [
        (3, 1001, Pattern::U8(0x5A)),
        (1030, 1, Pattern::U8(0xE1)),
        (2, 6, Pattern::U16(0xBEEF)),
        (12, 20, Pattern::U32(0x0102_0304)),
        (1024, 4, Pattern::U32(0xCAFE_F00D)),
        (500, 0, Pattern::U32(0xFFFF_FFFF)),
    ];
    for (i, &(offset, length, pattern)) in fills.iter().enumerate() {
        let v = i as u64 + 1;
        q.fill(&[(&s, v)], &[(&s, v + 1)], buffer.at(offset), length, pattern)?;
        let bytes = pattern.le_bytes();
        for (j, b) in model[offset as usize..(offset + length) as usize].iter_mut().enumerate() {
            *b = bytes[(offset as usize + j) % 4];
        }
    }
    reach(&s, fills.len() as u64 + 1)?;
    let got = contents(&q, &buffer)?;
    ensure!(got == model, "filled bytes differ from the model at byte {:?}", first_difference(&got, &model));
    Ok(())
}

fn copy_update(device: &Device) -> Outcome {
    let q = device.create_queue()?;
    let (a, b) = (device_buffer(device, 1000)?, device_buffer(device, 999)?);
    let s = device.create_semaphore(0)?;
    let (mut model_a, mut model_b) = (vec![0u8; 1000], vec![0u8; 999]);
    q.fill(&[], &[(&s, 1)], a.at(0), 1000, Pattern::U8(0))?;
    q.fill(&[(&s, 1)], &[(&s, 2)], b.at(0), 999, Pattern::U8(0))?;
    let data = noise(777, 7);
    q.update(&[(&s, 2)], &[(&s, 3)], &data, a.at(5))?;
    model_a[5..782].copy_from_slice(&data);
    q.copy(&[(&s, 3)], &[(&s, 4)], a.at(7), b.at(1), 333)?;
    model_b[1..334].copy_from_slice(&model_a[7..340]);
    // Within one buffer, ranges that do not overlap.
    q.copy(&[(&s, 4)], &[(&s, 5)], b.at(1), b.at(600), 299)?;
    model_b.copy_within(1..300, 600);
    // The last byte, and a single byte.
    q.update(&[(&s, 5)], &[(&s, 6)], &[0x77], b.at(998))?;
    model_b[998] = 0x77;
    q.copy(&[(&s, 6)], &[(&s, 7)], b.at(998), a.at(999), 1)?;
    model_a[999] = 0x77;
    // An update copies its bytes at the call: changing them afterwards, even
    // before the update can run, changes nothing.
    reach(&s, 7)?;
    let mut late = noise(16, 9);
    q.update(&[(&s, 8)], &[(&s, 9)], &late, b.at(900))?;
    model_b[900..916].copy_from_slice(&late);
    late.fill(0);
    s.signal(8)?;
    reach(&s, 9)?;
    for (name, buffer, model) in [("a", &a, &model_a), ("b", &b, &model_b)] {
        let got = contents(&q, buffer)?;
        ensure!(&got == model, "buffer {name} differs from the model at byte {:?}", first_difference(&got, model));
    }
    Ok(())
}

fn arguments(device: &Device) -> Outcome {
    let q = device.create_queue()?;
    let buffer = mappable(device, 64)?;
    let invalid = StatusCode::InvalidArgument;
    expect_err(q.fill(&[], &[], buffer.at(1), 2, Pattern::U16(1)), invalid, "u16 fill at an odd offset")?;
    expect_err(q.fill(&[], &[], buffer.at(4), 6, Pattern::U32(1)), invalid, "u32 fill of 6 bytes")?;
    expect_err(q.fill(&[], &[], buffer.at(60), 8, Pattern::U8(1)), StatusCode::OutOfRange, "fill past the end")?;
    expect_err(q.fill(&[], &[], buffer.at(u64::MAX), 2, Pattern::U8(1)), StatusCode::OutOfRange, "offset overflow")?;
    expect_err(q.copy(&[], &[], buffer.at(0), buffer.at(8), 16), invalid, "overlapping copy")?;
    expect_err(q.copy(&[], &[], buffer.at(0), buffer.at(40), 32), StatusCode::OutOfRange, "copy past the end")?;
    expect_err(q.update(&[], &[], &[0; 65], buffer.at(0)), StatusCode::OutOfRange, "update past the end")?;
    // Usage is enforced: a buffer without TRANSFER takes no transfers.
    let kernel_only =
        device.allocate_buffer(BufferParams { size: 64, memory: MemoryType::Device, usage: BufferUsage::DISPATCH })?;
    expect_err(q.fill(&[], &[], kernel_only.at(0), 4, Pattern::U8(1)), invalid, "fill without TRANSFER usage")?;
    // Buffers of another device are refused.
    let other = radiance::Device::open(&device.info().uri)?;
    let foreign = mappable(&other, 64)?;
    expect_err(q.copy(&[], &[], buffer.at(0), foreign.at(0), 4), invalid, "copy to another device's buffer")?;
    expect_err(q.fill(&[], &[], foreign.at(0), 4, Pattern::U8(1)), invalid, "fill of another device's buffer")?;
    Ok(())
}
