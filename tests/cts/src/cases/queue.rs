// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queue semantics: ordering by semaphores only, failure propagation, faults
//! stopping a queue, destruction cancelling work.

use super::{contents, mappable, needs_builtins, reach, PATIENCE};
use crate::{
    check::{ensure, ensure_eq, expect_err},
    Case, Outcome,
};
use radiance::{Device, Error, Pattern, StatusCode};
use radiance_uapi::builtin;
use std::{thread, time::Duration};

pub(super) const CASES: &[Case] = &[
    Case { name: "queue_ops_ordered_only_by_semaphores", run: ordered_by_semaphores },
    Case { name: "queue_barrier_joins_and_forks_timelines", run: barrier },
    Case { name: "queue_cross_queue_chain", run: cross_queue_chain },
    Case { name: "queue_failure_propagates_to_dependent_ops", run: failure_propagates },
    Case { name: "queue_fault_fails_signals_and_stops_queue", run: fault_stops_queue },
    Case { name: "queue_destroy_cancels_blocked_work", run: destroy_cancels_blocked },
    Case { name: "queue_destroy_cancels_a_running_launch", run: destroy_cancels_running },
];

/// Work submitted first but waiting on a semaphore runs after the work that
/// signals it, even when that is submitted later on another queue.
fn ordered_by_semaphores(device: &Device) -> Outcome {
    let (q1, q2) = (device.create_queue()?, device.create_queue()?);
    let (src, dst) = (mappable(device, 256)?, mappable(device, 256)?);
    let s = device.create_semaphore(0)?;
    let data = super::noise(256, 1);
    // The copy is queued first and must see the update queued after it.
    q1.copy(&[(&s, 1)], &[(&s, 2)], src.at(0), dst.at(0), 256)?;
    thread::sleep(Duration::from_millis(20));
    ensure_eq!(s.query()?, 0, "the copy ran before its wait was reached");
    q2.update(&[], &[(&s, 1)], &data, src.at(0))?;
    reach(&s, 2)?;
    ensure!(contents(&q1, &dst)? == data, "the copy did not see the update it waited for");
    Ok(())
}

/// A 256-edge dependency chain alternating between two queues: step i
/// copies element i - 1 to element i, so every element holds the seed only
/// if every step ran after the one before it.
fn cross_queue_chain(device: &Device) -> Outcome {
    const STEPS: u64 = 256;
    let queues = [device.create_queue()?, device.create_queue()?];
    let buffer = mappable(device, 4 * (STEPS + 1))?;
    let s = device.create_semaphore(0)?;
    queues[0].update(&[(&s, 0)], &[(&s, 1)], &0x5EED_F00Du32.to_le_bytes(), buffer.at(0))?;
    for i in 1..=STEPS {
        let queue = &queues[i as usize % 2];
        queue.copy(&[(&s, i)], &[(&s, i + 1)], buffer.at(4 * (i - 1)), buffer.at(4 * i), 4)?;
    }
    reach(&s, STEPS + 1)?;
    let got = buffer.map()?.read_u32s(0, STEPS as usize + 1)?;
    ensure!(got.iter().all(|&w| w == 0x5EED_F00D), "a step ran before its predecessor: {:x?}", &got[..8]);
    Ok(())
}

/// A barrier waits for all its waits and then signals all its signals.
fn barrier(device: &Device) -> Outcome {
    let q = device.create_queue()?;
    let (a, b, c, d) = (
        device.create_semaphore(0)?,
        device.create_semaphore(0)?,
        device.create_semaphore(0)?,
        device.create_semaphore(10)?,
    );
    q.barrier(&[(&a, 1), (&b, 1)], &[(&c, 1), (&d, 11)])?;
    a.signal(1)?;
    thread::sleep(Duration::from_millis(20));
    ensure_eq!(c.query()?, 0, "the barrier passed with one of its two waits");
    b.signal(1)?;
    reach(&c, 1)?;
    reach(&d, 11)
}

/// A failed wait semaphore fails the ops that wait on it, transitively, with
/// the same status, and the ops do not run.
fn failure_propagates(device: &Device) -> Outcome {
    let (q1, q2) = (device.create_queue()?, device.create_queue()?);
    let buffer = mappable(device, 64)?;
    let (a, b, c) = (device.create_semaphore(0)?, device.create_semaphore(0)?, device.create_semaphore(0)?);
    q1.fill(&[(&a, 1)], &[(&b, 1)], buffer.at(0), 64, Pattern::U8(0xAB))?;
    q2.fill(&[(&b, 1)], &[(&c, 1)], buffer.at(0), 32, Pattern::U8(0xCD))?;
    a.fail(Error::Status { code: StatusCode::DataLoss, message: "upstream failure".into() });
    for (name, s) in [("b", &b), ("c", &c)] {
        let e = expect_err(s.wait(1, PATIENCE), StatusCode::DataLoss, name)?;
        ensure!(e.to_string().contains("upstream failure"), "{name} lost the message: {e}");
    }
    ensure!(buffer.map()?.read_u32s(0, 16)?.iter().all(|&w| w == 0), "an op behind a failed wait ran");
    // A failed wait does not stop the queue.
    let d = device.create_semaphore(0)?;
    q1.fill(&[], &[(&d, 1)], buffer.at(0), 4, Pattern::U8(1))?;
    reach(&d, 1)?;
    ensure_eq!(buffer.map()?.read_u32s(0, 1)?, vec![0x0101_0101], "an op after the failure");
    Ok(())
}

/// A device fault fails the op's signals with ABORTED; the queue stops (later
/// ops fail the same way); other queues go on.
fn fault_stops_queue(device: &Device) -> Outcome {
    let q = device.create_queue()?;
    let buffer = mappable(device, 16)?;
    let (s, t) = (device.create_semaphore(0)?, device.create_semaphore(0)?);
    q.dispatch(&[], &[(&s, 1)], super::launch(0x0000_1000, [1, 1, 1], [1, 1, 1], &[]))?;
    let e = expect_err(s.wait(1, PATIENCE), StatusCode::Aborted, "launch at a bad PC")?;
    ensure!(e.to_string().contains("0x00001000"), "the fault does not name the PC: {e}");
    q.fill(&[], &[(&t, 1)], buffer.at(0), 16, Pattern::U32(7))?;
    expect_err(t.wait(1, PATIENCE), StatusCode::Aborted, "an op on the faulted queue")?;
    // A barrier too, which the cuda backend queues without the queue's lock.
    let v = device.create_semaphore(0)?;
    q.barrier(&[], &[(&v, 1)])?;
    expect_err(v.wait(1, PATIENCE), StatusCode::Aborted, "a barrier on the faulted queue")?;
    ensure!(buffer.map()?.read_u32s(0, 4)?.iter().all(|&w| w == 0), "an op ran on the faulted queue");
    let (other, u) = (device.create_queue()?, device.create_semaphore(0)?);
    other.fill(&[], &[(&u, 1)], buffer.at(0), 16, Pattern::U32(7))?;
    reach(&u, 1)?;
    ensure_eq!(buffer.map()?.read_u32s(0, 4)?, vec![7; 4], "another queue after the fault");
    Ok(())
}

/// Destroying a queue fails the signals of work it has not started: an op
/// blocked on a wait never runs, even once the wait is satisfied.
fn destroy_cancels_blocked(device: &Device) -> Outcome {
    let q = device.create_queue()?;
    let buffer = mappable(device, 16)?;
    let (never, blocked) = (device.create_semaphore(0)?, device.create_semaphore(0)?);
    q.fill(&[(&never, 1)], &[(&blocked, 1)], buffer.at(0), 16, Pattern::U8(9))?;
    drop(q);
    expect_err(blocked.wait(1, PATIENCE), StatusCode::Cancelled, "blocked op")?;
    never.signal(1)?;
    ensure!(buffer.map()?.read_u32s(0, 4)?.iter().all(|&w| w == 0), "cancelled work ran");
    Ok(())
}

/// Destroying a queue fails the signal of a launch that never ends (the
/// SPIN built-in).
fn destroy_cancels_running(device: &Device) -> Outcome {
    needs_builtins(device)?;
    let q = device.create_queue()?;
    let spin = device.create_semaphore(0)?;
    q.dispatch(&[], &[(&spin, 1)], super::launch(builtin::SPIN, [1, 1, 1], [1, 1, 1], &[]))?;
    expect_err(spin.wait(1, Duration::from_millis(50)), StatusCode::DeadlineExceeded, "SPIN completed")?;
    drop(q);
    expect_err(spin.wait(1, PATIENCE), StatusCode::Cancelled, "SPIN launch")?;
    Ok(())
}
