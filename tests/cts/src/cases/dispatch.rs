// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Launches of the built-in kernels (`radiance_uapi::builtin`): results,
//! grids larger and smaller than the element count, and device faults.

use super::{address, launch, mappable, needs_builtins, reach, PATIENCE};
use crate::{
    check::{ensure, ensure_eq, expect_err, Stop},
    Case, Outcome,
};
use radiance::{Device, Launch, StatusCode};
use radiance_uapi::builtin;

pub(super) const CASES: &[Case] = &[
    Case { name: "dispatch_builtin_results", run: results },
    Case { name: "dispatch_grid_covers_only_count_elements", run: grid_bounds },
    Case { name: "dispatch_faults_fail_the_launch", run: faults },
    Case { name: "dispatch_out_of_bounds_access_faults", run: out_of_bounds },
    Case { name: "dispatch_without_waits_or_signals_keeps_queue_order", run: alone },
    Case { name: "dispatch_borrowed_runs_the_launch_as_it_was_at_the_call", run: borrowed },
    Case { name: "dispatch_refuses_an_empty_dimension", run: empty_dimensions },
];

fn results(device: &Device) -> Outcome {
    needs_builtins(device)?;
    const N: usize = 300;
    let q = device.create_queue()?;
    let (a, b, c, d) = (
        mappable(device, 4 * N as u64)?,
        mappable(device, 4 * N as u64)?,
        mappable(device, 4 * N as u64)?,
        mappable(device, 4 * N as u64)?,
    );
    let xs: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    let ys: Vec<u32> = (0..N as u32).map(|i| u32::MAX - i).collect();
    a.map()?.write_u32s(0, &xs)?;
    b.map()?.write_u32s(0, &ys)?;
    let n = N as u32;
    let s = device.create_semaphore(0)?;
    // 3 x 2 blocks of 50 threads: exactly N threads over a 2-D grid.
    q.dispatch(
        &[],
        &[(&s, 1)],
        launch(builtin::VECADD_U32, [3, 2, 1], [25, 2, 1], &[address(&a)?, address(&b)?, address(&c)?, n]),
    )?;
    q.dispatch(
        &[(&s, 1)],
        &[(&s, 2)],
        launch(builtin::COPY_U32, [1, 1, 1], [N as u32, 1, 1], &[address(&d)?, address(&c)?, n]),
    )?;
    reach(&s, 2)?;
    let sums: Vec<u32> = xs.iter().zip(&ys).map(|(x, y)| x.wrapping_add(*y)).collect();
    ensure_eq!(c.map()?.read_u32s(0, N)?, sums, "VECADD_U32 (wrapping)");
    ensure_eq!(d.map()?.read_u32s(0, N)?, sums, "COPY_U32");
    // FILL_U32 into the middle of a buffer, by an address inside it.
    q.dispatch(
        &[(&s, 2)],
        &[(&s, 3)],
        launch(builtin::FILL_U32, [2, 1, 1], [8, 1, 1], &[address(&d)? + 40, 0xFEED_BEEF, 16]),
    )?;
    reach(&s, 3)?;
    let mut want = sums.clone();
    want[10..26].fill(0xFEED_BEEF);
    ensure_eq!(d.map()?.read_u32s(0, N)?, want, "FILL_U32 of 16 elements at element 10");
    Ok(())
}

/// Thread t handles element t: a grid larger than the count touches only
/// `count` elements, a smaller one only as many as it has threads.
fn grid_bounds(device: &Device) -> Outcome {
    needs_builtins(device)?;
    let q = device.create_queue()?;
    let buffer = mappable(device, 4 * 64)?;
    let base = address(&buffer)?;
    let s = device.create_semaphore(0)?;
    // 2 x 2 x 2 blocks of 2 x 2 threads = 32 threads, count 20.
    q.dispatch(&[], &[(&s, 1)], launch(builtin::FILL_U32, [2, 2, 2], [2, 2, 1], &[base, 1, 20]))?;
    // 8 threads, count 1000: only 8 elements (at 32..40).
    q.dispatch(&[(&s, 1)], &[(&s, 2)], launch(builtin::FILL_U32, [1, 1, 1], [8, 1, 1], &[base + 128, 2, 1000]))?;
    reach(&s, 2)?;
    let mut want = vec![0u32; 64];
    want[..20].fill(1);
    want[32..40].fill(2);
    ensure_eq!(buffer.map()?.read_u32s(0, 64)?, want, "elements touched");
    Ok(())
}

/// Each launch faults on its own queue (a fault stops a queue); every
/// fault is ABORTED and names the entry PC.
fn expect_faults(device: &Device, bad: Vec<(&str, Launch)>) -> Outcome {
    for (what, launch) in bad {
        let (q, s) = (device.create_queue()?, device.create_semaphore(0)?);
        let pc = launch.start_pc;
        q.dispatch(&[], &[(&s, 1)], launch)?;
        let e = expect_err(s.wait(1, PATIENCE), StatusCode::Aborted, what)?;
        ensure!(e.to_string().contains(&format!("{pc:#010x}")), "{what}: the fault does not name pc {pc:#010x}: {e}");
    }
    Ok(())
}

/// What every device catches, with or without memory protection.
fn faults(device: &Device) -> Outcome {
    needs_builtins(device)?;
    let base = address(&mappable(device, 64)?)?;
    expect_faults(
        device,
        vec![
            ("bad entry PC", launch(0x0000_2000, [1, 1, 1], [1, 1, 1], &[])),
            // The top of the 32-bit space: no device has memory there.
            ("address outside device memory", launch(builtin::FILL_U32, [1, 1, 1], [4, 1, 1], &[0xFFFF_FFF0, 1, 4])),
            ("params too short", launch(builtin::VECADD_U32, [1, 1, 1], [1, 1, 1], &[base, base])),
        ],
    )?;
    // Invalid launches are refused at the call.
    let q = device.create_queue()?;
    expect_err(
        q.dispatch(&[], &[], launch(builtin::FILL_U32, [0, 1, 1], [1, 1, 1], &[])),
        StatusCode::InvalidArgument,
        "empty grid",
    )?;
    Ok(())
}

/// Accesses inside device memory but outside the buffers: caught only
/// where the device protects memory.
fn out_of_bounds(device: &Device) -> Outcome {
    needs_builtins(device)?;
    if !device.info().memory_protection {
        return Err(Stop::Skip(format!(
            "{} has no memory protection: a kernel's stray access inside device memory is not caught",
            device.info().backend
        )));
    }
    let base = address(&mappable(device, 64)?)?;
    expect_faults(
        device,
        vec![
            ("address in no buffer", launch(builtin::FILL_U32, [1, 1, 1], [4, 1, 1], &[0x10, 1, 4])),
            ("elements past the end of the buffer", launch(builtin::FILL_U32, [1, 1, 1], [32, 1, 1], &[base, 1, 32])),
        ],
    )
}

/// Launches with no waits and no signals, which a backend may queue by a
/// shorter way than other work (cuda's `dispatch_alone`): more than one
/// progress mark's worth of them (cuda marks every 128 submissions) run in
/// queue order, before the queue's later work, and a fault among them
/// stops the queue as any fault does, launches alone after it included.
fn alone(device: &Device) -> Outcome {
    needs_builtins(device)?;
    const N: u32 = 300;
    let q = device.create_queue()?;
    let s = device.create_semaphore(0)?;
    let (a, b) = (mappable(device, 4 * u64::from(N))?, mappable(device, 4 * u64::from(N))?);
    let base = address(&a)?;
    // Launch i fills elements i.. with i: element j ends as j only if every
    // launch ran after the one before it.
    for i in 0..N {
        q.dispatch(&[], &[], launch(builtin::FILL_U32, [1, 1, 1], [N - i, 1, 1], &[base + 4 * i, i, N - i]))?;
    }
    q.dispatch(&[], &[], launch(builtin::COPY_U32, [1, 1, 1], [N, 1, 1], &[address(&b)?, base, N]))?;
    // No elements, no access: an empty fill at an address in no buffer runs,
    // as on the device (bench-cuda's launch; no lookup: `Translator::locate`).
    q.dispatch(&[], &[], launch(builtin::FILL_U32, [1, 1, 1], [1, 1, 1], &[0x3, 0, 0]))?;
    q.barrier(&[], &[(&s, 1)])?;
    reach(&s, 1)?;
    ensure_eq!(a.map()?.read_u32s(0, N as usize)?, (0..N).collect::<Vec<_>>(), "elements after the launches");
    ensure_eq!(b.map()?.read_u32s(0, N as usize)?, (0..N).collect::<Vec<_>>(), "their copy, launched after them");
    // The top of the 32-bit space: no device has memory there.
    q.dispatch(&[], &[], launch(builtin::FILL_U32, [1, 1, 1], [4, 1, 1], &[0xFFFF_FFF0, 1, 4]))?;
    q.dispatch(&[], &[], launch(builtin::FILL_U32, [1, 1, 1], [N, 1, 1], &[base, 7, N]))?;
    q.barrier(&[], &[(&s, 2)])?;
    let e = expect_err(s.wait(2, PATIENCE), StatusCode::Aborted, "a barrier after a faulted launch")?;
    let pc = builtin::FILL_U32;
    ensure!(e.to_string().contains(&format!("{pc:#010x}")), "the fault does not name pc {pc:#010x}: {e}");
    // Wherever the fault stopped the queue, the launch after it did not run.
    ensure_eq!(a.map()?.read_u32s(0, N as usize)?, (0..N).collect::<Vec<_>>(), "elements after the fault");
    Ok(())
}

/// A launch the caller keeps (`Queue::dispatch_borrowed`) and rewrites in
/// place between dispatches: each dispatch runs it as it was at the call,
/// whether the backend queues it at once (cuda's lone launches) or as a
/// command (one with waits and signals, or any on a backend without the
/// short way), and leaves it as it was. More than two progress marks' worth
/// (cuda marks every 128 submissions), then a fault among lone ones stops
/// the queue as `alone` checks of owned launches.
fn borrowed(device: &Device) -> Outcome {
    needs_builtins(device)?;
    const N: u32 = 300;
    let q = device.create_queue()?;
    let s = device.create_semaphore(0)?;
    let a = mappable(device, 4 * u64::from(N))?;
    let base = address(&a)?;
    let mut kept = launch(builtin::FILL_U32, [1, 1, 1], [1, 1, 1], &[0, 0, 0]);
    let mut signalled = 0;
    // Dispatch i fills element i with i + 1; one in five waits and signals.
    for i in 0..N {
        for (word, value) in kept.params.chunks_exact_mut(4).zip([base + 4 * i, i + 1, 1]) {
            word.copy_from_slice(&value.to_le_bytes());
        }
        let before = kept.clone();
        if i % 5 == 0 {
            q.dispatch_borrowed(&[(&s, signalled)], &[(&s, signalled + 1)], &kept)?;
            signalled += 1;
        } else {
            q.dispatch_borrowed(&[], &[], &kept)?;
        }
        ensure!(kept == before, "dispatch {i} changed the borrowed launch");
    }
    reach(&s, signalled)?;
    q.barrier(&[], &[(&s, signalled + 1)])?;
    reach(&s, signalled + 1)?;
    ensure_eq!(a.map()?.read_u32s(0, N as usize)?, (1..=N).collect::<Vec<_>>(), "elements after the launches");
    // The top of the 32-bit space: no device has memory there. The launch
    // after the fault, the same one pointed back at the buffer, does not run.
    kept.block = [4, 1, 1];
    kept.params = [0xFFFF_FFF0u32, 7, 4].iter().flat_map(|w| w.to_le_bytes()).collect();
    q.dispatch_borrowed(&[], &[], &kept)?;
    kept.params[..4].copy_from_slice(&base.to_le_bytes());
    q.dispatch_borrowed(&[], &[], &kept)?;
    q.barrier(&[], &[(&s, signalled + 2)])?;
    let e = expect_err(s.wait(signalled + 2, PATIENCE), StatusCode::Aborted, "a barrier after a faulted launch")?;
    let pc = builtin::FILL_U32;
    ensure!(e.to_string().contains(&format!("{pc:#010x}")), "the fault does not name pc {pc:#010x}: {e}");
    ensure_eq!(a.map()?.read_u32s(0, N as usize)?, (1..=N).collect::<Vec<_>>(), "elements after the fault");
    Ok(())
}

/// A launch with any one of its six grid and block dimensions 0 is refused
/// at the call, owned or borrowed, with or without waits, and nothing runs.
fn empty_dimensions(device: &Device) -> Outcome {
    needs_builtins(device)?;
    let (q, s) = (device.create_queue()?, device.create_semaphore(0)?);
    let a = mappable(device, 16)?;
    a.map()?.write_u32s(0, &[0; 4])?;
    let fill = launch(builtin::FILL_U32, [1, 1, 1], [4, 1, 1], &[address(&a)?, 7, 4]);
    for d in 0..6 {
        let mut empty = fill.clone();
        if d < 3 {
            empty.grid[d] = 0;
        } else {
            empty.block[d - 3] = 0;
        }
        let what = format!("grid {:?} block {:?}", empty.grid, empty.block);
        expect_err(q.dispatch(&[], &[], empty.clone()), StatusCode::InvalidArgument, &what)?;
        expect_err(q.dispatch_borrowed(&[], &[], &empty), StatusCode::InvalidArgument, &what)?;
        expect_err(q.dispatch_borrowed(&[(&s, 0)], &[(&s, 1)], &empty), StatusCode::InvalidArgument, &what)?;
    }
    q.barrier(&[], &[(&s, 1)])?;
    reach(&s, 1)?;
    ensure_eq!(a.map()?.read_u32s(0, 4)?, vec![0; 4], "the buffer after refused launches");
    Ok(())
}
