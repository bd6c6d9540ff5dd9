// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-cuda [cuda:N]`: libradiance's cuda backend against raw CUDA driver
//! calls doing the same work, in one run:
//!
//! 1. submit overhead of an empty launch, `Queue::dispatch_borrowed` against
//!    `cuLaunchKernel`, in blocks of 250 launches that take turns;
//! 2. a cross-queue dependency edge over a 512-edge chain, our semaphores
//!    against CUDA events without timing, submit only and end to end;
//! 3. device-to-device copy bandwidth at 256 MiB, against `cuMemcpyAsync`;
//! 4. a recorded command buffer of 100 empty launches executed again (a
//!    CUDA graph: `cuda/graph.rs`) against 100 `cuLaunchKernel`.
//!
//! `bench-cuda peer cuda:A cuda:B`: a peer copy through a device group
//! (`peer.rs`). Documentation/benchmarks.md says how the rounds are taken,
//! why, and how to read each figure.

use radiance::{
    cuda::{sys::*, BUILTINS_PTX, BUILTIN_KERNELS},
    Buffer, BufferParams, BufferUsage, Command, Device, Launch, MemoryType, Pattern, Queue, Semaphore, Timeout,
};
use radiance_uapi::builtin;
use std::{
    ffi::c_void,
    process::ExitCode,
    ptr,
    time::{Duration, Instant},
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const LAUNCHES: u32 = 10_000;
const EDGES: u64 = 512;
const COPY_BYTES: u64 = 256 << 20;
const COPIES: u32 = 20;
/// Repetitions of each measurement; the median is reported.
const REPS: usize = 7;

/// Calls a driver entry point, turning a failure into an error naming it.
macro_rules! cu {
    ($d:expr, $f:ident($($arg:expr),* $(,)?)) => {{
        // SAFETY: the arguments are live handles and valid pointers made
        // by this program.
        let r = unsafe { ($d.$f)($($arg),*) };
        if r == CUDA_SUCCESS { Ok(()) } else { Err(format!("{}: CUresult {r}", stringify!($f))) }
    }};
}

/// The baseline: the primary context, the same PTX module, two streams.
struct Raw {
    d: &'static Driver,
    device: CUdevice,
    ctx: CUcontext,
    module: CUmodule,
    fill: CUfunction,
    streams: [CUstream; 2],
}

impl Raw {
    fn new(ordinal: i32) -> Res<Self> {
        let d = Driver::get()?;
        let (mut device, mut ctx, mut module, mut fill) = (0, ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        cu!(d, cuDeviceGet(&mut device, ordinal))?;
        cu!(d, cuDevicePrimaryCtxRetain(&mut ctx, device))?;
        cu!(d, cuCtxSetCurrent(ctx))?;
        cu!(d, cuModuleLoadDataEx(&mut module, BUILTINS_PTX.as_ptr().cast(), 0, ptr::null_mut(), ptr::null_mut()))?;
        cu!(d, cuModuleGetFunction(&mut fill, module, BUILTIN_KERNELS[0].1.as_ptr()))?;
        let mut streams = [ptr::null_mut(); 2];
        for s in &mut streams {
            cu!(d, cuStreamCreate(s, CU_STREAM_NON_BLOCKING))?;
        }
        Ok(Self { d, device, ctx, module, fill, streams })
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let d = self.d;
        for &s in &self.streams {
            let _ = cu!(d, cuStreamDestroy(s));
        }
        let _ = cu!(d, cuModuleUnload(self.module));
        let _ = cu!(d, cuDevicePrimaryCtxRelease(self.device));
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Runs each side once to warm up, then [`REPS`] times, alternating.
fn interleaved<T>(mut ours: impl FnMut() -> Res<T>, mut direct: impl FnMut() -> Res<T>) -> Res<(Vec<T>, Vec<T>)> {
    ours()?;
    direct()?;
    let (mut o, mut r) = (Vec::new(), Vec::new());
    for _ in 0..REPS {
        o.push(ours()?);
        r.push(direct()?);
    }
    Ok((o, r))
}

fn micros(d: Duration, n: u64) -> f64 {
    d.as_secs_f64() * 1e6 / n as f64
}

/// Interleaved rounds of one measurement, ours against raw.
struct Rounds {
    /// The medians of each side.
    ours: f64,
    raw: f64,
    /// The median of the rounds' own ours / raw.
    ratio: f64,
}

fn rounds(ours: &[f64], raw: &[f64]) -> Rounds {
    let ratio = median(ours.iter().zip(raw).map(|(o, r)| o / r).collect());
    Rounds { ours: median(ours.to_vec()), raw: median(raw.to_vec()), ratio }
}

/// [`rounds`] of one field of interleaved results.
fn rounds_of<T>(ours: &[T], raw: &[T], field: impl Fn(&T) -> f64) -> Rounds {
    rounds(&ours.iter().map(&field).collect::<Vec<_>>(), &raw.iter().map(&field).collect::<Vec<_>>())
}

/// Prints one comparison and whether its ratio meets its target.
fn report(what: &str, unit: &str, r: &Rounds, met: impl Fn(f64) -> bool, target: &str) {
    let Rounds { ours, raw, ratio } = *r;
    let verdict = if met(ratio) { "met" } else { "MISSED" };
    println!(
        "  {what:<28} ours {ours:>10.3} {unit:<10} raw {raw:>10.3} {unit:<10} ours/raw {ratio:>6.3}  target {target}: {verdict} (medians' ratio {:.3})",
        ours / raw
    );
}

/// The launch of sections 1 and 4: FILL_U32 of no elements, which returns
/// at once.
fn empty_fill() -> Launch {
    Launch {
        start_pc: builtin::FILL_U32,
        grid: [1; 3],
        block: [1; 3],
        regs_per_thread: 0,
        params: vec![0; 12],
        ..Default::default()
    }
}

impl Raw {
    /// `n` raw launches of the empty FILL_U32 on the first stream: the time
    /// until the last launch returned, and (with `drain`) until the stream
    /// drained.
    fn empty_fills(&self, n: u32, drain: bool) -> Res<(Duration, Duration)> {
        let d = self.d;
        let (mut dst, mut value, mut count) = (0u64, 0u32, 0u32);
        let mut params: [*mut c_void; 3] =
            [(&mut dst as *mut u64).cast(), (&mut value as *mut u32).cast(), (&mut count as *mut u32).cast()];
        let stream = self.streams[0];
        let start = Instant::now();
        for _ in 0..n {
            cu!(d, cuLaunchKernel(self.fill, 1, 1, 1, 1, 1, 1, 0, stream, params.as_mut_ptr(), ptr::null_mut()))?;
        }
        let submit = start.elapsed();
        if drain {
            cu!(d, cuStreamSynchronize(stream))?;
        }
        Ok((submit, start.elapsed()))
    }
}

/// GB/s of `copies` copies of `bytes` each in `t`.
fn gbps(copies: u32, bytes: u64, t: Duration) -> f64 {
    f64::from(copies) * bytes as f64 / t.as_secs_f64() / 1e9
}

/// GB/s of `n` copies of all of `from` into `to` on `q`, the last of which
/// signals `s` to the next `tick`.
fn hal_copies(q: &Queue, s: &Semaphore, tick: &mut u64, from: &Buffer, to: &Buffer, n: u32) -> Res<f64> {
    *tick += 1;
    let start = Instant::now();
    for k in 0..n {
        let signal = [(s, *tick)];
        q.copy(&[], if k + 1 == n { &signal } else { &[] }, from.at(0), to.at(0), from.size())?;
    }
    s.wait(*tick, Timeout::Infinite)?;
    Ok(gbps(n, from.size(), start.elapsed()))
}

/// Launches of each side in one block of section 1's fine interleaving.
const BLOCK: u32 = 250;

fn launch_overhead(device: &Device, raw: &Raw) -> Res<()> {
    let d = raw.d;
    let q = device.create_queue()?;
    let done = device.create_semaphore(0)?;
    let launch = empty_fill();
    let mut tick = 0;
    // One launch lent to each dispatch, as the raw side's arguments are.
    let borrowed = |n: u32| -> Res<Duration> {
        let start = Instant::now();
        for _ in 0..n {
            q.dispatch_borrowed(&[], &[], &launch)?;
        }
        Ok(start.elapsed())
    };
    // Owned launches, built before the clock starts: the HAL's part is
    // taking and dropping them.
    let submit = |launches: Vec<Launch>| -> Res<Duration> {
        let start = Instant::now();
        for launch in launches {
            q.dispatch(&[], &[], launch)?;
        }
        Ok(start.elapsed())
    };
    let mut drain = || -> Res<()> {
        tick += 1;
        q.barrier(&[], &[(&done, tick)])?;
        Ok(done.wait(tick, Timeout::Infinite)?)
    };
    // The figure: rounds of LAUNCHES launches a side, in blocks of BLOCK
    // taking turns, the side that starts a pair of blocks alternating.
    let mut round = |ours_block: &dyn Fn() -> Res<Duration>| -> Res<(f64, f64)> {
        let (mut ours, mut direct) = (Duration::ZERO, Duration::ZERO);
        for pair in 0..LAUNCHES / BLOCK {
            if pair % 2 == 0 {
                ours += ours_block()?;
                direct += raw.empty_fills(BLOCK, false)?.0;
            } else {
                direct += raw.empty_fills(BLOCK, false)?.0;
                ours += ours_block()?;
            }
        }
        drain()?;
        raw.empty_fills(0, true)?;
        Ok((micros(ours, LAUNCHES.into()), micros(direct, LAUNCHES.into())))
    };
    let mut measure = |ours_block: &dyn Fn() -> Res<Duration>| -> Res<Rounds> {
        round(ours_block)?;
        let (o, r): (Vec<_>, Vec<_>) =
            (0..REPS).map(|_| round(ours_block)).collect::<Res<Vec<_>>>()?.into_iter().unzip();
        Ok(rounds(&o, &r))
    };
    let lent = measure(&|| borrowed(BLOCK))?;
    let owned = measure(&|| submit(vec![launch.clone(); BLOCK as usize]))?;
    println!(
        "1. empty launch (FILL_U32, count 0), {LAUNCHES} launches a side in blocks of {BLOCK} taking turns, median of {REPS}:"
    );
    report("submit per launch", "us", &lent, |q| q <= 1.05, "ours/raw <= 1.05");
    report("submit per launch, owned", "us", &owned, |_| true, "(context)");
    // Context: the figure as measured before, each side's LAUNCHES in one
    // go, ours first; and the time until the GPU is done with them.
    let mut whole = |n: u32| -> Res<(f64, f64)> {
        let start = Instant::now();
        submit(vec![launch.clone(); n as usize])?;
        let submitted = start.elapsed();
        drain()?;
        Ok((micros(submitted, n.into()), micros(start.elapsed(), n.into())))
    };
    let direct = |n: u32| -> Res<(f64, f64)> {
        let (submit, total) = raw.empty_fills(n, true)?;
        Ok((micros(submit, n.into()), micros(total, n.into())))
    };
    let (o, r) = interleaved(|| whole(LAUNCHES), || direct(LAUNCHES))?;
    report("submit, whole halves", "us", &rounds_of(&o, &r, |x| x.0), |_| true, "(context)");
    report("submit+drain per launch", "us", &rounds_of(&o, &r, |x| x.1), |_| true, "(context)");
    // Context: 1,000 launches do not fill the driver's queue, so neither side
    // waits for the GPU; and the HAL's own cost, with no driver call.
    let (o, r) = interleaved(|| whole(1000), || direct(1000))?;
    report("submit, 1000 launches", "us", &rounds_of(&o, &r, |x| x.0), |_| true, "(context)");
    let empty = (0..REPS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..LAUNCHES {
                q.barrier(&[], &[])?;
            }
            Ok(micros(start.elapsed(), LAUNCHES.into()))
        })
        .collect::<Res<Vec<_>>>()?;
    println!("  HAL alone (Queue::barrier with nothing to do): {:.3} us per submission", median(empty));
    // The one driver call the HAL adds to a launch: making sure that the
    // device's context is current.
    let mut ctx = ptr::null_mut();
    let start = Instant::now();
    for _ in 0..LAUNCHES {
        cu!(d, cuCtxGetCurrent(&mut ctx))?;
    }
    println!("  of which cuCtxGetCurrent: {:.3} us per call", micros(start.elapsed(), LAUNCHES.into()));
    Ok(())
}

fn edges(device: &Device, raw: &Raw) -> Res<()> {
    let d = raw.d;
    let queues = [device.create_queue()?, device.create_queue()?];
    let ours = || -> Res<(f64, f64)> {
        let s = device.create_semaphore(0)?;
        let start = Instant::now();
        for i in 0..EDGES {
            queues[i as usize % 2].barrier(&[(&s, i)], &[(&s, i + 1)])?;
        }
        let submit = start.elapsed();
        s.wait(EDGES, Timeout::Infinite)?;
        Ok((micros(submit, EDGES), micros(start.elapsed(), EDGES)))
    };
    // Events without timing, the cheapest kind, and with it (CUDA's default).
    let mut events = [vec![ptr::null_mut(); EDGES as usize], vec![ptr::null_mut(); EDGES as usize]];
    for (set, flags) in events.iter_mut().zip([CU_EVENT_DISABLE_TIMING, 0]) {
        for e in set {
            cu!(d, cuEventCreate(e, flags))?;
        }
    }
    let chain = |events: &[CUevent]| -> Res<(f64, f64)> {
        let start = Instant::now();
        for (i, &event) in events.iter().enumerate() {
            let stream = raw.streams[i % 2];
            if i > 0 {
                cu!(d, cuStreamWaitEvent(stream, events[i - 1], 0))?;
            }
            cu!(d, cuEventRecord(event, stream))?;
        }
        let submit = start.elapsed();
        cu!(d, cuEventSynchronize(events[events.len() - 1]))?;
        Ok((micros(submit, EDGES), micros(start.elapsed(), EDGES)))
    };
    let direct = || chain(&events[0]);
    let (o, r) = interleaved(ours, direct)?;
    println!("2. cross-queue edge, {EDGES}-edge chain over two queues, semaphores vs events, median of {REPS}:");
    report("submit per edge", "us", &rounds_of(&o, &r, |x| x.0), |q| q <= 1.2, "ours/raw <= 1.2");
    report("end to end per edge", "us", &rounds_of(&o, &r, |x| x.1), |q| q <= 1.2, "ours/raw <= 1.2");
    let (t, _) = interleaved(|| chain(&events[1]), ours)?;
    let (ts, te) = (median(t.iter().map(|x| x.0).collect()), median(t.iter().map(|x| x.1).collect()));
    println!("  raw with timing-enabled events (CUDA's default): {ts:.3} us per edge submit, {te:.3} us end to end");
    // Context: what each of the two driver calls of an edge costs alone
    // (ours makes the same two per edge, plus the HAL's own work).
    let one_of = |wait: bool| -> Res<f64> {
        let start = Instant::now();
        for (i, &event) in events[0].iter().enumerate() {
            let stream = raw.streams[i % 2];
            if wait {
                cu!(d, cuStreamWaitEvent(stream, events[0][i.saturating_sub(1)], 0))?;
            } else {
                cu!(d, cuEventRecord(event, stream))?;
            }
        }
        let submit = start.elapsed();
        for &s in &raw.streams {
            cu!(d, cuStreamSynchronize(s))?;
        }
        Ok(micros(submit, EDGES))
    };
    let (rec, wait) = interleaved(|| one_of(false), || one_of(true))?;
    println!(
        "  of which cuEventRecord alone: {:.3} us per call; cuStreamWaitEvent alone: {:.3} us per call",
        median(rec),
        median(wait)
    );
    for &e in events.iter().flatten() {
        cu!(d, cuEventDestroy(e))?;
    }
    Ok(())
}

fn copy_bandwidth(device: &Device, raw: &Raw) -> Res<()> {
    let d = raw.d;
    let params = BufferParams { size: COPY_BYTES, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
    let (a, b) = (device.allocate_buffer(params)?, device.allocate_buffer(params)?);
    let q = device.create_queue()?;
    let s = device.create_semaphore(0)?;
    q.fill(&[], &[(&s, 1)], a.at(0), COPY_BYTES, Pattern::U32(0x5A5A_0001))?;
    s.wait(1, Timeout::Infinite)?;
    let mut tick = 1;
    let mut ours = |n: u32| hal_copies(&q, &s, &mut tick, &a, &b, n);
    let (mut da, mut db) = (0, 0);
    cu!(d, cuMemAlloc(&mut da, COPY_BYTES as usize))?;
    cu!(d, cuMemAlloc(&mut db, COPY_BYTES as usize))?;
    let stream = raw.streams[0];
    cu!(d, cuMemsetD32Async(da, 0x5A5A_0001, COPY_BYTES as usize / 4, stream))?;
    let direct = |n: u32| -> Res<f64> {
        cu!(d, cuStreamSynchronize(stream))?;
        let start = Instant::now();
        for _ in 0..n {
            cu!(d, cuMemcpyAsync(db, da, COPY_BYTES as usize, stream))?;
        }
        cu!(d, cuStreamSynchronize(stream))?;
        Ok(gbps(n, COPY_BYTES, start.elapsed()))
    };
    let (o, r) = interleaved(|| ours(COPIES), || direct(COPIES))?;
    cu!(d, cuMemFree(da))?;
    cu!(d, cuMemFree(db))?;
    println!("3. device-to-device copy, 256 MiB x {COPIES} per repetition, median of {REPS} (GB/s of bytes copied; x2 for read+write):");
    report("bandwidth", "GB/s", &rounds(&o, &r), |q| q >= 0.95, "ours/raw >= 0.95");
    Ok(())
}

/// N of `cuda:N`.
fn ordinal(uri: &str) -> Res<i32> {
    Ok(uri.strip_prefix("cuda:").and_then(|n| n.parse().ok()).ok_or(format!("expected cuda:N, got {uri}"))?)
}

/// Launches in the recorded command buffer of section 4.
const RECORDED: u32 = 100;
/// Executions of it per repetition.
const EXECUTIONS: u32 = 100;

fn replay(device: &Device, raw: &Raw) -> Res<()> {
    let launch = empty_fill();
    let mut recording = device.command_buffer();
    for _ in 0..RECORDED {
        recording.record(Command::dispatch(launch.clone())?)?;
    }
    let cb = recording.finish();
    let (q, done) = (device.create_queue()?, device.create_semaphore(0)?);
    let mut tick = 0;
    let mut ours = || -> Res<(f64, f64)> {
        let start = Instant::now();
        for _ in 0..EXECUTIONS {
            q.execute(&[], &[], &cb)?;
        }
        let submit = start.elapsed();
        tick += 1;
        q.barrier(&[], &[(&done, tick)])?;
        done.wait(tick, Timeout::Infinite)?;
        Ok((micros(submit, EXECUTIONS.into()), micros(start.elapsed(), EXECUTIONS.into())))
    };
    let mut direct = || -> Res<(f64, f64)> {
        let (submit, total) = raw.empty_fills(EXECUTIONS * RECORDED, true)?;
        Ok((micros(submit, EXECUTIONS.into()), micros(total, EXECUTIONS.into())))
    };
    let (o, r) = interleaved(&mut ours, &mut direct)?;
    println!(
        "4. a recorded command buffer of {RECORDED} empty launches, executed {EXECUTIONS} times, against \
         {RECORDED} cuLaunchKernel each, median of {REPS} (us per execution):"
    );
    report("submit per execution", "us", &rounds_of(&o, &r, |x| x.0), |q| q <= 0.5, "ours/raw <= 0.5");
    report("end to end per execution", "us", &rounds_of(&o, &r, |x| x.1), |q| q <= 0.5, "ours/raw <= 0.5");
    Ok(())
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let uri = match &args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["peer", a, b] => return peer::run(a, b),
        [] => "cuda:0",
        [uri] => uri,
        _ => return Err("usage: bench-cuda [cuda:N] | bench-cuda peer cuda:A cuda:B".into()),
    }
    .to_owned();
    let device = Device::open(&uri)?;
    let raw = Raw::new(ordinal(&uri)?)?;
    println!("bench-cuda: {} ({uri})", device.info().name);
    launch_overhead(&device, &raw)?;
    edges(&device, &raw)?;
    copy_bandwidth(&device, &raw)?;
    replay(&device, &raw)?;
    Ok(())
}

mod peer;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-cuda: {e}");
            ExitCode::FAILURE
        }
    }
}
