// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-launch`: what a launch costs through a device the bridge serves,
//! against the same launch the bridge hands straight to its model. The
//! bridge declares a model device as `model` mode does and serves it on a
//! thread; this thread is the client of that device (radiance::node) and
//! runs the straight side too, so that the two interleave in one run.
//!
//! The launch is the built-in FILL_U32 over one thread, so that what is
//! measured is the path. Its floor is a hand-off to the serving thread and
//! back (a byte sent to a thread that returns it), measured in the same
//! rounds: back to back, at the client's pace, and after an idle gap in
//! which both threads fall asleep. It prints medians of interleaved rounds
//! and their ratios, then the moments a launch through the device reaches
//! each step. Documentation/benchmarks.md says how to read each figure.

use crate::{
    bench,
    control::Control,
    error::{Error, Result},
    model::{self, Host, Mem, ModelOptions},
};
use radiance::{node, Launch};
use radiance_gluon::{model::MemError, Command, Launch as Block};
use radiance_uapi::builtin;
use std::{
    io::{Read, Write},
    os::unix::net::UnixStream,
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

/// What to run.
pub struct BenchOptions {
    /// The device served, as `model` mode would declare it.
    pub model: ModelOptions,
    pub rounds: usize,
    /// Launches per round on each side.
    pub launches: usize,
}

/// Host memory of this process, from address 0: the straight side's
/// launch block.
struct LocalHost(Vec<u8>);

impl Host for LocalHost {
    fn read(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError> {
        let at = usize::try_from(addr).map_err(|_| MemError::Host)?;
        dst.copy_from_slice(self.0.get(at..at + dst.len()).ok_or(MemError::Host)?);
        Ok(())
    }

    fn write(&self, _addr: u64, _src: &[u8]) -> std::result::Result<(), MemError> {
        Err(MemError::Host)
    }

    fn reset_pending(&self) -> bool {
        false
    }

    /// Nobody watches the straight side.
    fn progress(&self, _stream: u8, _units: u64) {}
}

/// The value the launches fill with.
const VALUE: u32 = 0x5eed;

/// FILL_U32 of one word at `dst`.
fn fill_params(dst: u32) -> Vec<u8> {
    [dst, VALUE, 1].iter().flat_map(|p| p.to_le_bytes()).collect()
}

/// Declares and serves the model device, then measures.
pub fn run(control: Control, opts: BenchOptions) -> Result<()> {
    let served = opts.model;
    let (device, serving) = bench::serve_and_open(control, served)?;
    let bo = device.create_bo(4096, node::Placement::Vram, false).map_err(bench::client_error)?;
    let dst = u32::try_from(bo.device_address()).map_err(|_| Error::Usage("VRAM above 4 GiB".into()))?;
    let mut queue = device.create_queue(1024).map_err(bench::client_error)?;
    let launch = Launch {
        start_pc: builtin::FILL_U32,
        grid: [1; 3],
        block: [1; 3],
        regs_per_thread: 1,
        params: fill_params(dst),
        ..Default::default()
    };
    // Each launch's moments from its start: published and kicked, read by
    // the server, answered, seen complete.
    let epoch = serving.epoch.unwrap_or_else(Instant::now);
    let mut moments: Vec<[f64; 4]> = Vec::new();
    let mut through_device = |gap: Duration, moments: &mut Vec<[f64; 4]>| -> Result<bench::Trip> {
        bench::idle(gap);
        let trip = bench::timed_trip(&mut queue, |q| q.launch(&device, &launch, node::Frame::default()), epoch)?;
        // Stamped by the server before it answered, which came before the
        // completion this saw.
        let since = |at: &AtomicU64| at.load(Ordering::Acquire).saturating_sub(trip.start) as f64;
        moments.push([
            (trip.flushed - trip.start) as f64,
            since(&serving.read_ns),
            since(&serving.answering_ns),
            (trip.seen - trip.start) as f64,
        ]);
        Ok(trip)
    };

    // The launch block the kernel builds: the header, then the params.
    let dialect = served.dialect;
    let params = fill_params(dst);
    let head = dialect.launch_header_size();
    let header = Block {
        start_pc: builtin::FILL_U32,
        params_size: params.len() as u32,
        grid: [1; 3],
        block: [1; 3],
        regs_per_thread: 1,
        ..Default::default()
    };
    let mut bytes = vec![0u8; head + params.len()];
    dialect.encode_launch(&header, &mut bytes).map_err(|e| Error::Usage(format!("launch block: {e:?}")))?;
    bytes[head..].copy_from_slice(&params);
    let kernel = Command::Kernel { host_addr: 0, size: bytes.len() as u32, gpu_addr: 0 };
    let frame = dialect.encode(0, &kernel).map_err(|e| Error::Usage(format!("KERNEL frame: {e:?}")))?;
    let mut straight_model = model::model(&served);
    let mem = Mem::new(LocalHost(bytes), u64::from(served.vram_mib) << 20);
    let mut straight = || -> Result<Duration> {
        let t = Instant::now();
        let response = straight_model.run(&mem, frame.as_bytes());
        let took = t.elapsed();
        let status = response.map(|r| dialect.decode_response(&r).status);
        if status != Some(radiance_gluon::status::OK) {
            return Err(Error::Usage(format!("the straight launch failed: status {status:?}")));
        }
        Ok(took)
    };

    // The floor: a byte to a thread asleep in read() and back, spun on as
    // the client spins on its queue.
    let (mut near, mut far) = UnixStream::pair().map_err(|e| Error::Usage(format!("socketpair: {e}")))?;
    near.set_nonblocking(true).map_err(|e| Error::Usage(format!("socketpair: {e}")))?;
    std::thread::spawn(move || {
        let mut b = [0u8; 1];
        while far.read_exact(&mut b).is_ok() && far.write_all(&b).is_ok() {}
    });
    let mut wake = |gap: Duration| -> Result<Duration> {
        bench::idle(gap);
        let mut b = [0u8; 1];
        let t = Instant::now();
        near.write_all(&b).map_err(|e| Error::Usage(format!("wake: {e}")))?;
        loop {
            match near.read(&mut b) {
                Ok(1) => return Ok(t.elapsed()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                other => return Err(Error::Usage(format!("wake: {other:?}"))),
            }
        }
    };

    let (mut device_ns, mut straight_ns, mut wake_ns) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ratio, mut floor, mut over_floor) = (Vec::new(), Vec::new(), Vec::new());
    let (mut idle_device_ns, mut idle_wake_ns, mut idle_over_floor) = (Vec::new(), Vec::new(), Vec::new());
    let mut idle_moments = Vec::new();
    let (mut pace_ns, mut paced_wake_ns, mut over_paced) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..opts.rounds {
        // From each launch seen complete to the next one's packets written.
        let (mut paces, mut last_seen) = (Vec::new(), None);
        let a = bench::median_of(opts.launches, || {
            let trip = through_device(Duration::ZERO, &mut moments)?;
            if let Some(seen) = last_seen.replace(trip.seen) {
                paces.push((trip.built - seen) as f64);
            }
            Ok(trip.took())
        })?;
        let b = bench::median_of(opts.launches, &mut straight)?;
        let w = bench::median_of(opts.launches, || wake(Duration::ZERO))?;
        let pace = Duration::from_nanos(bench::median(&mut paces) as u64);
        let pw = bench::median_of(opts.launches, || wake(pace))?;
        let ia =
            bench::median_of(opts.launches, || through_device(bench::IDLE_GAP, &mut idle_moments).map(|t| t.took()))?;
        let iw = bench::median_of(opts.launches, || wake(bench::IDLE_GAP))?;
        device_ns.push(a);
        straight_ns.push(b);
        wake_ns.push(w);
        ratio.push(a / b);
        floor.push((b + w) / b);
        over_floor.push(a / (b + w));
        pace_ns.push(pace.as_nanos() as f64);
        paced_wake_ns.push(pw);
        over_paced.push(a / (b + pw));
        idle_device_ns.push(ia);
        idle_wake_ns.push(iw);
        idle_over_floor.push(ia / (b + iw));
    }
    // The straight launches filled the word, as the device's did.
    let mut word = [0u8; 4];
    radiance_gluon::model::Memory::read_vram(&mem, dst.into(), &mut word)
        .map_err(|e| Error::Usage(format!("read back the straight fill: {e:?}")))?;
    if u32::from_le_bytes(word) != VALUE {
        return Err(Error::Usage(format!("the straight launch wrote {word:?}, not {VALUE:#x}")));
    }
    println!(
        "launch round trip (FILL_U32, 1 thread), medians of {} interleaved rounds of {} (each its median):",
        opts.rounds, opts.launches
    );
    println!("back to back (each begins once the last is seen complete):");
    println!("  through the bridge-served device {:>10.0} ns", bench::median(&mut device_ns));
    println!("  straight to the bridge's model   {:>10.0} ns", bench::median(&mut straight_ns));
    println!("  hand-off round trip (the floor)  {:>10.0} ns", bench::median(&mut wake_ns));
    println!("  device / straight                {:>10.2}", bench::median(&mut ratio));
    println!(
        "  (straight + hand-off) / straight {:>10.2}  (the floor of device / straight)",
        bench::median(&mut floor)
    );
    println!("  device / (straight + hand-off)   {:>10.2}", bench::median(&mut over_floor));
    println!("  the client's pace (seen complete to next launch written) {:>6.0} ns", bench::median(&mut pace_ns));
    println!("  hand-off round trip at that pace {:>10.0} ns", bench::median(&mut paced_wake_ns));
    println!("  device / (straight + paced hand-off) {:>6.2}", bench::median(&mut over_paced));
    println!(
        "each after {} µs idle (the serving thread and the floor's asleep in read()):",
        bench::IDLE_GAP.as_micros()
    );
    println!("  through the bridge-served device {:>10.0} ns", bench::median(&mut idle_device_ns));
    println!("  wake-up round trip (the floor)   {:>10.0} ns", bench::median(&mut idle_wake_ns));
    println!("  device / (straight + wake-up)    {:>10.2}", bench::median(&mut idle_over_floor));
    for (when, moments) in [("back to back", &moments), ("after the idle gap", &idle_moments)] {
        let moment = |i: usize| bench::median(&mut moments.iter().map(|m| m[i]).collect::<Vec<_>>());
        println!("a launch through the device, {when}, from its start (medians over every launch):");
        println!("  published, QUEUE_KICK returned                  {:>8.0} ns", moment(0));
        println!("  the server's read() returned with the frame     {:>8.0} ns", moment(1));
        println!("  it began to write the answer (the model run)    {:>8.0} ns", moment(2));
        println!("  seen complete (the write's pass)                {:>8.0} ns", moment(3));
    }
    Ok(())
}
