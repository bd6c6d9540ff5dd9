// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The HAL demo of `tools/demo.sh`: a small pipeline as an IREE runtime
//! would submit it, on any device URI. Two queues ordered only by one
//! timeline semaphore: queue 0 uploads two vectors, queue 1 adds them on the
//! device and copies the sum into host-visible memory, which the host checks
//! once the timeline reaches the last value. Then part of it again behind a
//! semaphore that fails: the failure reaches the end of the chain with its
//! status and message.
//!
//!     hal_pipeline [URI]      (default kmod:0; `host` runs it on the CPU)

use radiance::{
    BufferParams, //
    BufferUsage,
    Device,
    Error,
    Launch,
    MemoryType,
    StatusCode,
    Timeout,
};
use radiance_uapi::builtin;
use std::{process::ExitCode, time::Duration};

const N: u32 = 4096;

fn run(uri: &str) -> radiance::Result<bool> {
    let device = Device::open(uri)?;
    println!("{}: {} (backend {})", uri, device.info().name, device.info().backend);
    let bytes = u64::from(N) * 4;
    let device_memory =
        BufferParams { size: bytes, memory: MemoryType::Device, usage: BufferUsage::TRANSFER | BufferUsage::DISPATCH };
    let (a, b, c) = (
        device.allocate_buffer(device_memory)?,
        device.allocate_buffer(device_memory)?,
        device.allocate_buffer(device_memory)?,
    );
    let readback = device.allocate_buffer(BufferParams {
        size: bytes,
        memory: MemoryType::HostVisible,
        usage: BufferUsage::TRANSFER | BufferUsage::MAPPING,
    })?;
    let (upload, compute) = (device.create_queue()?, device.create_queue()?);
    let timeline = device.create_semaphore(0)?;

    let xs: Vec<u8> = (0..N).flat_map(|i| i.to_le_bytes()).collect();
    let ys: Vec<u8> = (0..N).flat_map(|i| (7 * i + 1).to_le_bytes()).collect();
    let params = [a.device_address(), b.device_address(), c.device_address(), u64::from(N)];
    let vecadd = Launch {
        start_pc: builtin::VECADD_U32,
        grid: [N / 256, 1, 1],
        block: [256, 1, 1],
        regs_per_thread: 16,
        params: params.iter().flat_map(|&p| (p as u32).to_le_bytes()).collect(),
        ..Default::default()
    };
    // The compute queue's work first, before the uploads it needs: only
    // the semaphore orders them. (A queue may stop at an unreached wait, so
    // what it waits for comes from another queue or the host.)
    compute.dispatch(&[(&timeline, 2)], &[(&timeline, 3)], vecadd.clone())?;
    compute.copy(&[(&timeline, 3)], &[(&timeline, 4)], c.at(0), readback.at(0), bytes)?;
    upload.update(&[], &[(&timeline, 1)], &xs, a.at(0))?;
    upload.update(&[(&timeline, 1)], &[(&timeline, 2)], &ys, b.at(0))?;
    timeline.wait(4, Duration::from_secs(30))?;
    let sums = readback.map()?.read_u32s(0, N as usize)?;
    let good = sums.iter().enumerate().all(|(i, &s)| s == 8 * i as u32 + 1);
    println!("vector add of {N} u32s over two queues and one timeline: {}", if good { "correct" } else { "WRONG" });

    // The same chain behind a semaphore that fails.
    let (gate, done) = (device.create_semaphore(0)?, device.create_semaphore(0)?);
    upload.update(&[(&gate, 1)], &[(&done, 1)], &ys, a.at(0))?;
    compute.dispatch(&[(&done, 1)], &[(&done, 2)], vecadd)?;
    gate.fail(Error::Status { code: StatusCode::DataLoss, message: "the upload's source went away".into() });
    let failure = done.wait(2, Timeout::After(Duration::from_secs(30))).err();
    let propagated = failure.as_ref().is_some_and(|e| e.status() == StatusCode::DataLoss);
    match &failure {
        Some(e) => println!("behind a failed semaphore: the end of the chain got {:?}: {e}", e.status()),
        None => println!("behind a failed semaphore: the chain completed (WRONG)"),
    }
    Ok(good && propagated)
}

fn main() -> ExitCode {
    let uri = std::env::args().nth(1).unwrap_or_else(|| "kmod:0".to_owned());
    match run(&uri) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hal_pipeline: {e}");
            ExitCode::FAILURE
        }
    }
}
