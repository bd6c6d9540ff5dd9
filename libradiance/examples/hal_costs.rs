// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What the HAL's queue operations cost on any device, in one run: the
//! benchmark to run against `hsa:0` on an AMD GPU (and against `host` or
//! `cuda:0` for comparison on the same machine).
//!
//! 1. submit cost of an empty launch (FILL_U32 with count 0), per launch
//!    over 10,000 launches, and the time until the device has run them all;
//! 2. a cross-queue dependency edge over a 512-edge chain alternating
//!    between two queues (signal on one, wait on the other; on hsa an AMD
//!    barrier-value packet on the other queue's epoch signal), submit only
//!    and end to end;
//! 3. device-to-device copy bandwidth at 64 MiB.
//!
//!     cargo run --release -p libradiance --example hal_costs -- [URI]   (default hsa:0)

use radiance::{BufferParams, BufferUsage, Device, Launch, MemoryType, Semaphore};
use radiance_uapi::builtin;
use std::{
    process::ExitCode,
    time::{Duration, Instant},
};

const LAUNCHES: u64 = 10_000;
const EDGES: u64 = 512;
const COPY_BYTES: u64 = 64 << 20;

fn wait(s: &Semaphore, value: u64) -> radiance::Result<()> {
    s.wait(value, Duration::from_secs(60))
}

fn per(d: Duration, n: u64) -> String {
    format!("{:.2} µs", d.as_secs_f64() * 1e6 / n as f64)
}

fn run(uri: &str) -> radiance::Result<()> {
    let device = Device::open(uri)?;
    println!("{uri}: {} (backend {})", device.info().name, device.info().backend);
    let (q0, q1) = (device.create_queue()?, device.create_queue()?);

    // 1. Empty launches on one queue, each signalling the next value.
    let s = device.create_semaphore(0)?;
    let empty =
        Launch { start_pc: builtin::FILL_U32, grid: [1; 3], block: [1; 3], params: vec![0; 12], ..Default::default() };
    let start = Instant::now();
    for v in 1..=LAUNCHES {
        q0.dispatch(&[], &[(&s, v)], empty.clone())?;
    }
    let submitted = start.elapsed();
    wait(&s, LAUNCHES)?;
    println!(
        "empty launch: submit {} per launch, all done after {:.2} ms",
        per(submitted, LAUNCHES),
        start.elapsed().as_secs_f64() * 1e3
    );

    // 2. A chain alternating between the queues: edge k waits on k - 1.
    let chain = device.create_semaphore(0)?;
    let start = Instant::now();
    for v in 1..=EDGES {
        let q = if v % 2 == 0 { &q0 } else { &q1 };
        q.barrier(&[(&chain, v - 1)], &[(&chain, v)])?;
    }
    let submitted = start.elapsed();
    wait(&chain, EDGES)?;
    println!("cross-queue edge: submit {}, end to end {} per edge", per(submitted, EDGES), per(start.elapsed(), EDGES));

    // 3. Device-to-device copy.
    let params = BufferParams { size: COPY_BYTES, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
    let (a, b) = (device.allocate_buffer(params)?, device.allocate_buffer(params)?);
    let done = device.create_semaphore(0)?;
    q0.copy(&[], &[(&done, 1)], a.at(0), b.at(0), COPY_BYTES)?;
    wait(&done, 1)?;
    let start = Instant::now();
    q0.copy(&[], &[(&done, 2)], a.at(0), b.at(0), COPY_BYTES)?;
    wait(&done, 2)?;
    println!("copy {} MiB: {:.1} GB/s", COPY_BYTES >> 20, COPY_BYTES as f64 / start.elapsed().as_secs_f64() / 1e9);
    Ok(())
}

fn main() -> ExitCode {
    let uri = std::env::args().nth(1).unwrap_or_else(|| "hsa:0".to_owned());
    match run(&uri) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hal_costs: {e}");
            ExitCode::FAILURE
        }
    }
}
