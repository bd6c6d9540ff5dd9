// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-hal [kmod:N]`: what a queue operation costs through the HAL's
//! kmod backend, against the same packets written with `radiance::node`
//! directly and against one system call (SEM_QUERY, which does nothing but
//! look a semaphore up). Each operation is a 4-byte fill that waits for the
//! previous operation's signal of a timeline semaphore and signals the next
//! value, as IREE's streams do.
//!
//! Submit cost is timed over batches that fit in the ring. The first
//! operation of a batch also waits on a gate semaphore that the host opens
//! once the batch is submitted, so that the device (the emulator, on the
//! guest's CPUs) does no work while submission is timed; each batch is
//! drained before the next. The end-to-end figure includes the device
//! (under TCG: compare it only with the other end-to-end figure). Prints
//! each figure and the ratios; run it in the guest (tools/bench.sh).
//!
//! `bench-hal group A B`: one cross-device semaphore edge by each route a
//! device group has for it (`group.rs`).

use radiance::{
    node, //
    BufferParams,
    BufferUsage,
    Device,
    MemoryType,
    Pattern,
    Timeout,
};
use std::{
    process::ExitCode,
    time::{Duration, Instant},
};

/// Operations per batch: three packets each, within the backend's
/// 4096-packet ring.
const BATCH: u64 = 1000;
const BATCHES: u64 = 10;

type Result<T, E = radiance::Error> = std::result::Result<T, E>;

/// Submit-only and end-to-end time, per operation.
struct PerOp {
    submit: Duration,
    total: Duration,
}

/// Times `BATCHES` batches of `submit(i, gate)` for i in 0..BATCH *
/// BATCHES, where `gate` is the gate value the first operation of a batch
/// waits for, then opens the gate and drains the batch with `drain(gate,
/// last value)` outside the submit time.
fn measure(
    mut submit: impl FnMut(u64, Option<u64>) -> Result<()>,
    mut drain: impl FnMut(u64, u64) -> Result<()>,
) -> Result<PerOp> {
    let (mut submitting, start) = (Duration::ZERO, Instant::now());
    for batch in 0..BATCHES {
        let t = Instant::now();
        for i in batch * BATCH..(batch + 1) * BATCH {
            submit(i, (i == batch * BATCH).then_some(batch + 1))?;
        }
        submitting += t.elapsed();
        drain(batch + 1, (batch + 1) * BATCH)?;
    }
    let ops = (BATCH * BATCHES) as u32;
    Ok(PerOp { submit: submitting / ops, total: start.elapsed() / ops })
}

fn hal(uri: &str) -> Result<PerOp> {
    let device = Device::open(uri)?;
    let params = BufferParams { size: 4096, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
    let buffer = device.allocate_buffer(params)?;
    let (q, s, gate) = (device.create_queue()?, device.create_semaphore(0)?, device.create_semaphore(0)?);
    measure(
        |i, at| match at {
            Some(g) => q.fill(&[(&gate, g), (&s, i)], &[(&s, i + 1)], buffer.at(0), 4, Pattern::U32(i as u32)),
            None => q.fill(&[(&s, i)], &[(&s, i + 1)], buffer.at(0), 4, Pattern::U32(i as u32)),
        },
        |g, last| {
            gate.signal(g)?;
            s.wait(last, Timeout::Infinite)
        },
    )
}

fn raw(uri: &str) -> Result<PerOp> {
    let device = node::Device::open(uri)?;
    let bo = device.create_bo(4096, node::Placement::Vram, false)?;
    let (s, gate) = (device.create_semaphore(0)?, device.create_semaphore(0)?);
    let mut q = device.create_queue(4096)?;
    let submit = |i: u64, at: Option<u64>| {
        let fill = |q: &mut node::Queue| q.fill(&bo, 0, 4, Pattern::U32(i as u32));
        match at {
            Some(g) => q.with_semaphores(&[(&gate, g), (&s, i)], &[(&s, i + 1)], fill)?,
            None => q.with_semaphores(&[(&s, i)], &[(&s, i + 1)], fill)?,
        }
        q.flush()
    };
    measure(submit, |g, last| {
        gate.signal(g)?;
        s.wait(&device, last, None)
    })
}

/// One system call that does no work: SEM_QUERY of a live semaphore.
fn null_ioctl(uri: &str) -> Result<Duration> {
    let device = node::Device::open(uri)?;
    let s = device.create_semaphore(0)?;
    let n = BATCH * BATCHES;
    let start = Instant::now();
    for _ in 0..n {
        s.error()?;
    }
    Ok(start.elapsed() / n as u32)
}

fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

fn run(uri: &str) -> Result<()> {
    let syscall = null_ioctl(uri)?;
    let raw = raw(uri)?;
    let hal = hal(uri)?;
    println!("bench-hal {uri}: {} fills, each waiting for the last one's signal", BATCH * BATCHES);
    println!("  null ioctl (SEM_QUERY)           {:>10.0} ns", ns(syscall));
    println!(
        "  radiance::node submit            {:>10.0} ns/op  ({:.3} null ioctls)",
        ns(raw.submit),
        ns(raw.submit) / ns(syscall)
    );
    println!(
        "  HAL (kmod backend) submit        {:>10.0} ns/op  ({:.3} null ioctls)",
        ns(hal.submit),
        ns(hal.submit) / ns(syscall)
    );
    println!("  HAL / radiance::node, submit     {:>10.3}", ns(hal.submit) / ns(raw.submit));
    println!("  radiance::node end to end        {:>10.0} ns/op", ns(raw.total));
    println!("  HAL end to end                   {:>10.0} ns/op", ns(hal.total));
    println!("  HAL / radiance::node, end to end {:>10.3}", ns(hal.total) / ns(raw.total));
    Ok(())
}

mod group;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ran = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["group", a, b] => group::run(a, b),
        [] => run("kmod:0"),
        [uri] => run(uri),
        _ => Err(radiance::Error::InvalidArgument("usage: bench-hal [kmod:N] | bench-hal group URI URI".into())),
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-hal: {e}");
            ExitCode::FAILURE
        }
    }
}
