// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Command buffers: recorded once, executed many times with different
//! semaphores, on more than one queue.

use super::{address, device_buffer, launch, mappable, needs_builtins, reach, PATIENCE};
use crate::{
    check::{ensure, ensure_eq, expect_err},
    Case, Outcome,
};
use radiance::{Command, Device, Error, Pattern, StatusCode};
use radiance_uapi::builtin;

pub(super) const CASES: &[Case] = &[
    Case { name: "command_buffer_replay_many_times", run: replay },
    Case { name: "command_buffer_transfers_and_barriers", run: transfers },
    Case { name: "command_buffer_replay_writes_a_buffer_reallocated_at_its_address", run: reallocated },
];

const REPLAYS: u32 = 100;

/// `acc += step` as a recorded VECADD (`c = a + c`): after k executions the
/// accumulator holds k * step, so every execution ran exactly once. Each
/// execution waits on its own semaphore and signals the next one's, some on
/// a second queue; one behind a failed semaphore must not run.
fn replay(device: &Device) -> Outcome {
    needs_builtins(device)?;
    const N: usize = 64;
    let (step, acc) = (mappable(device, 4 * N as u64)?, mappable(device, 4 * N as u64)?);
    let steps: Vec<u32> = (1..=N as u32).collect();
    step.map()?.write_u32s(0, &steps)?;
    let mut recording = device.command_buffer();
    let (s, a) = (address(&step)?, address(&acc)?);
    recording.record(Command::dispatch(launch(builtin::VECADD_U32, [2, 1, 1], [32, 1, 1], &[s, a, a, N as u32]))?)?;
    let cb = recording.finish();
    ensure_eq!(cb.len(), 1, "recorded commands");

    let queues = [device.create_queue()?, device.create_queue()?];
    let semaphores = (0..=REPLAYS).map(|_| device.create_semaphore(0)).collect::<radiance::Result<Vec<_>>>()?;
    for i in 0..REPLAYS as usize {
        let queue = &queues[i % 2];
        queue.execute(&[(&semaphores[i], 1)], &[(&semaphores[i + 1], 1)], &cb)?;
    }
    semaphores[0].signal(1)?;
    reach(&semaphores[REPLAYS as usize], 1)?;
    let want: Vec<u32> = steps.iter().map(|v| v * REPLAYS).collect();
    ensure_eq!(acc.map()?.read_u32s(0, N)?, want, "accumulator after {REPLAYS} executions");

    // An execution behind a failed semaphore does not run.
    let (failed, after) = (device.create_semaphore(0)?, device.create_semaphore(0)?);
    queues[0].execute(&[(&failed, 1)], &[(&after, 1)], &cb)?;
    failed.fail(Error::Status { code: StatusCode::Aborted, message: "cts".into() });
    expect_err(after.wait(1, PATIENCE), StatusCode::Aborted, "execution behind a failed wait")?;
    ensure_eq!(acc.map()?.read_u32s(0, N)?, want, "accumulator after the failed execution");
    Ok(())
}

/// A recording names the buffers its launches touch by device address. A
/// buffer freed between executions, and another allocated at its address,
/// is the one the next execution writes: a backend that keeps a compiled
/// form of the recording (cuda's graphs) must notice the change. The new
/// buffer is device memory where the old was host-visible, so that its
/// native memory is surely elsewhere.
fn reallocated(device: &Device) -> Outcome {
    const FINISHED_WORK_RELEASED_WITHIN: usize = 300;
    needs_builtins(device)?;
    const N: usize = 64;
    const SIZE: u64 = 4 * N as u64;
    let src = mappable(device, SIZE)?;
    let values: Vec<u32> = (1..=N as u32).map(|v| v * 3).collect();
    src.map()?.write_u32s(0, &values)?;
    let (mut dst, readback) = (mappable(device, SIZE)?, mappable(device, SIZE)?);
    let (s, d) = (address(&src)?, address(&dst)?);
    // dst = 7, then dst = src + dst: two launches, so a graph is worth it.
    let mut recording = device.command_buffer();
    recording
        .record(Command::dispatch(launch(builtin::FILL_U32, [2, 1, 1], [32, 1, 1], &[d, 7, N as u32]))?)?
        .record(Command::dispatch(launch(builtin::VECADD_U32, [2, 1, 1], [32, 1, 1], &[s, d, d, N as u32]))?)?;
    let cb = recording.finish();
    let want: Vec<u32> = values.iter().map(|v| v + 7).collect();
    let (q, step) = (device.create_queue()?, device.create_semaphore(0)?);
    for run in 1..=3u64 {
        if run == 3 {
            // A backend may let go of finished work's buffers only every so
            // many submissions (cuda: every 128): give it the chance, and
            // wait until it has run the last, so that the address is free
            // again (the host backend's worker lets each submission go
            // before it runs the next).
            let released = device.create_semaphore(0)?;
            for _ in 1..FINISHED_WORK_RELEASED_WITHIN {
                q.barrier(&[], &[])?;
            }
            q.barrier(&[], &[(&released, 1)])?;
            reach(&released, 1)?;
            drop(dst);
            dst = device_buffer(device, SIZE)?;
            if address(&dst)? != d {
                return Err(crate::Stop::Skip(format!(
                    "{} gave the new buffer another address ({:#x}, not {d:#x})",
                    device.info().backend,
                    address(&dst)?
                )));
            }
        }
        // Poison, execute, read back: in that order, by the semaphore.
        let at = 3 * (run - 1);
        q.fill(&[], &[(&step, at + 1)], dst.at(0), SIZE, Pattern::U32(0xDEAD_BEEF))?;
        q.execute(&[(&step, at + 1)], &[(&step, at + 2)], &cb)?;
        q.copy(&[(&step, at + 2)], &[(&step, at + 3)], dst.at(0), readback.at(0), SIZE)?;
        reach(&step, at + 3)?;
        ensure_eq!(readback.map()?.read_u32s(0, N)?, want, "execution {run} (the third into a reallocated buffer)");
    }
    Ok(())
}

/// Transfers recorded with barriers between dependent steps; executed twice
/// into the same buffer from a fresh start each time (the recording begins
/// with a fill).
fn transfers(device: &Device) -> Outcome {
    let q = device.create_queue()?;
    let (a, b) = (mappable(device, 100)?, mappable(device, 100)?);
    let data = super::noise(37, 3);
    let mut recording = device.command_buffer();
    recording
        .record(Command::fill(a.at(0), 100, Pattern::U16(0x0A0B))?)?
        .record(Command::update(&data, a.at(11))?)?
        .record(Command::barrier())?
        .record(Command::copy(a.at(0), b.at(0), 100)?)?;
    let cb = recording.finish();
    let mut want = [0x0B, 0x0A].repeat(50);
    want[11..48].copy_from_slice(&data);
    let s = device.create_semaphore(0)?;
    for i in 0..2 {
        b.map()?.write(0, &[0xFF; 100])?;
        q.execute(&[], &[(&s, i + 1)], &cb)?;
        reach(&s, i + 1)?;
        let mut got = vec![0; 100];
        b.map()?.read(0, &mut got)?;
        ensure!(got == want, "execution {i}: the copy of the filled and updated buffer differs");
    }
    // A recording refuses another device's buffers.
    let other = Device::open(&device.info().uri)?;
    let foreign = mappable(&other, 4)?;
    let mut recording = device.command_buffer();
    expect_err(
        recording.record(Command::fill(foreign.at(0), 4, Pattern::U8(0))?).map(|_| ()),
        StatusCode::InvalidArgument,
        "foreign buffer",
    )?;
    Ok(())
}
