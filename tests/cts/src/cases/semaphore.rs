// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Timeline semaphores on the host: query, signal, wait, wait many, timeouts,
//! failure.

use super::PATIENCE;
use crate::{
    check::{ensure, ensure_eq, expect_err, Stop},
    Case, Outcome,
};
use radiance::{Device, Error, StatusCode, Timeout, WaitMode};
use std::{
    thread,
    time::{Duration, Instant},
};

/// A helper thread's result; its panic fails the case.
fn joined<T>(thread: thread::JoinHandle<T>) -> Result<T, Stop> {
    thread.join().map_err(|_| Stop::Fail("a helper thread panicked".into()))
}

pub(super) const CASES: &[Case] = &[
    Case { name: "semaphore_query_signal", run: query_signal },
    Case { name: "semaphore_wait_signalled_by_another_thread", run: wait_other_thread },
    Case { name: "semaphore_wait_any_all", run: wait_any_all },
    Case { name: "semaphore_timeout_respects_deadline", run: timeout },
    Case { name: "semaphore_failure_reaches_every_waiter", run: failure },
    Case { name: "semaphore_many_waiters_woken_in_turn", run: many_waiters },
];

fn query_signal(device: &Device) -> Outcome {
    let s = device.create_semaphore(5)?;
    ensure_eq!(s.query()?, 5, "initial payload");
    s.signal(7)?;
    ensure_eq!(s.query()?, 7, "after signal(7)");
    expect_err(s.signal(7), StatusCode::OutOfRange, "signal to the same value")?;
    expect_err(s.signal(6), StatusCode::OutOfRange, "signal backwards")?;
    ensure_eq!(s.query()?, 7, "after refused signals");
    // Reached values, including passed ones, are reached at once, even with
    // a zero timeout.
    s.wait(7, Duration::ZERO)?;
    s.wait(3, Duration::ZERO)?;
    expect_err(s.wait(8, Duration::ZERO), StatusCode::DeadlineExceeded, "poll of an unreached value")?;
    device.wait_semaphores(WaitMode::All, &[], Duration::ZERO)?;
    Ok(())
}

fn wait_other_thread(device: &Device) -> Outcome {
    let s = device.create_semaphore(0)?;
    let signaller = s.clone();
    let start = Instant::now();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        // Jumps past the awaited value: a wait for 2 is reached by 3.
        signaller.signal(3)
    });
    s.wait(2, Timeout::Infinite)?;
    let waited = start.elapsed();
    joined(t)??;
    ensure!(waited >= Duration::from_millis(40), "the wait returned after {waited:?}, before the signal");
    ensure_eq!(s.query()?, 3, "payload after the signal");
    Ok(())
}

fn wait_any_all(device: &Device) -> Outcome {
    let (a, b) = (device.create_semaphore(0)?, device.create_semaphore(0)?);
    let short = Duration::from_millis(20);
    let both = [(&a, 1), (&b, 1)];
    expect_err(device.wait_semaphores(WaitMode::Any, &both, short), StatusCode::DeadlineExceeded, "any of none")?;
    b.signal(1)?;
    device.wait_semaphores(WaitMode::Any, &both, short)?;
    expect_err(device.wait_semaphores(WaitMode::All, &both, short), StatusCode::DeadlineExceeded, "all of one")?;
    // Woken by the other thread's signal of the last one.
    let signaller = a.clone();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(30));
        signaller.signal(1)
    });
    device.wait_semaphores(WaitMode::All, &both, PATIENCE)?;
    joined(t)??;
    // Semaphores of another device are refused.
    let other = Device::open(&device.info().uri)?;
    let foreign = other.create_semaphore(1)?;
    expect_err(
        device.wait_semaphores(WaitMode::Any, &[(&foreign, 1)], short),
        StatusCode::InvalidArgument,
        "foreign semaphore",
    )?;
    Ok(())
}

fn timeout(device: &Device) -> Outcome {
    let s = device.create_semaphore(0)?;
    let relative: fn() -> Timeout = || Timeout::After(Duration::from_millis(100));
    let absolute: fn() -> Timeout = || Timeout::At(Instant::now() + Duration::from_millis(100));
    for timeout in [relative, absolute] {
        let start = Instant::now();
        let timeout = timeout();
        expect_err(s.wait(1, timeout), StatusCode::DeadlineExceeded, "unreached value")?;
        let waited = start.elapsed();
        ensure!(waited >= Duration::from_millis(100), "{timeout:?} ended early, after {waited:?}");
        ensure!(waited < Duration::from_secs(5), "{timeout:?} ended late, after {waited:?}");
    }
    // A deadline in the past only polls.
    let start = Instant::now();
    expect_err(s.wait(1, Instant::now()), StatusCode::DeadlineExceeded, "past deadline")?;
    ensure!(start.elapsed() < Duration::from_secs(1), "a past deadline blocked for {:?}", start.elapsed());
    // A signal before the deadline ends the wait at once, not at the deadline.
    let signaller = s.clone();
    let t = thread::spawn(move || {
        thread::sleep(Duration::from_millis(30));
        signaller.signal(1)
    });
    let start = Instant::now();
    s.wait(1, Duration::from_secs(30))?;
    ensure!(start.elapsed() < Duration::from_secs(5), "the wait outlived its signal: {:?}", start.elapsed());
    joined(t)??;
    Ok(())
}

fn failure(device: &Device) -> Outcome {
    let s = device.create_semaphore(0)?;
    let pending = device.create_semaphore(0)?;
    let waiters: Vec<_> = (0..3)
        .map(|i| {
            let (s, pending, device) = (s.clone(), pending.clone(), device.clone());
            thread::spawn(move || match i {
                0 => s.wait(1, PATIENCE),
                // A wait-any is decided by the failure, not held up by the
                // other, pending semaphore.
                1 => device.wait_semaphores(WaitMode::Any, &[(&pending, 1), (&s, 1)], PATIENCE),
                _ => device.wait_semaphores(WaitMode::All, &[(&s, 1), (&pending, 1)], PATIENCE),
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(30));
    s.fail(Error::Status { code: StatusCode::DataLoss, message: "injected by the cts".into() });
    for w in waiters {
        let result = joined(w)?;
        let e = expect_err(result, StatusCode::DataLoss, "a waiter of the failed semaphore")?;
        ensure!(e.to_string().contains("injected by the cts"), "the failure's message was lost: {e}");
    }
    // Sticky: later waits, queries and signals get it; a second failure does
    // not replace it.
    s.fail(Error::Status { code: StatusCode::Internal, message: "second".into() });
    expect_err(s.query(), StatusCode::DataLoss, "query after failure")?;
    expect_err(s.wait(1, Duration::ZERO), StatusCode::DataLoss, "wait after failure")?;
    expect_err(s.signal(5), StatusCode::DataLoss, "signal after failure")?;
    ensure_eq!(pending.query()?, 0, "an unrelated semaphore");
    Ok(())
}

/// Eight threads wait for values 1..=8 while the payload climbs one step at
/// a time: each wait ends once its value is reached, and not before.
fn many_waiters(device: &Device) -> Outcome {
    let s = device.create_semaphore(0)?;
    let waiters: Vec<_> = (1..=8u64)
        .map(|v| {
            let s = s.clone();
            thread::spawn(move || s.wait(v, PATIENCE).and_then(|()| s.query()).map(|seen| (v, seen)))
        })
        .collect();
    for v in 1..=8 {
        thread::sleep(Duration::from_millis(5));
        s.signal(v)?;
    }
    for w in waiters {
        let (v, seen) = joined(w)??;
        ensure!(seen >= v, "the wait for {v} ended at payload {seen}");
    }
    Ok(())
}
