// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-cuda peer cuda:A cuda:B`: copy bandwidth from A's device memory
//! into B's, where a device group of A and B has the peer route (B's queue
//! copies A's buffer itself, `BufferRoute::Peer`), against the driver's
//! own peer copy, `cuMemcpyPeerAsync` on a stream of B with B's peer access
//! to A enabled. Also B's copies within its own memory, for scale, and the
//! floor of a cross-device semaphore edge: a raw chain of events recorded
//! and waited on alternately by a stream of A and one of B, against the
//! same chain over two streams of A.

use super::*;
use radiance::{BufferRoute, DeviceGroup};

/// Copies in a repetition that ends within the host wait's polling.
const SHORT: u32 = 4;

pub(crate) fn run(a: &str, b: &str) -> Res<()> {
    let (dev_a, dev_b) = (Device::open(a)?, Device::open(b)?);
    let group = DeviceGroup::new(&[dev_a.clone(), dev_b.clone()])?;
    let edge = group.topology().edge(0, 1).ok_or("no edge from A to B")?;
    println!(
        "bench-cuda peer {a} ({}) {b} ({}): routes from A to B: semaphores {}, buffers {}, link {}",
        dev_a.info().name,
        dev_b.info().name,
        edge.semaphore.name(),
        edge.buffer.name(),
        edge.link.name()
    );
    if edge.buffer != BufferRoute::Peer {
        return Err(format!("{b} cannot reach {a}'s memory peer to peer (cuDeviceCanAccessPeer)").into());
    }
    let params = BufferParams { size: COPY_BYTES, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
    let (x, y) = (dev_a.allocate_buffer(params)?, dev_b.allocate_buffer(params)?);
    let filled = dev_a.create_semaphore(0)?;
    dev_a.create_queue()?.fill(&[], &[(&filled, 1)], x.at(0), COPY_BYTES, Pattern::U32(0x5A5A_0001))?;
    filled.wait(1, Timeout::Infinite)?;
    let (q, s) = (dev_b.create_queue()?, dev_b.create_semaphore(0)?);
    let mut tick = 0;
    let mut ours = |n: u32| hal_copies(&q, &s, &mut tick, &x, &y, n);

    let (raw_a, raw_b) = (Raw::new(ordinal(a)?)?, Raw::new(ordinal(b)?)?);
    let d = raw_b.d;
    let (mut pa, mut pb) = (0, 0);
    cu!(d, cuCtxSetCurrent(raw_a.ctx))?;
    cu!(d, cuMemAlloc(&mut pa, COPY_BYTES as usize))?;
    cu!(d, cuCtxSetCurrent(raw_b.ctx))?;
    cu!(d, cuMemAlloc(&mut pb, COPY_BYTES as usize))?;
    // The group has enabled it for the same primary contexts already.
    match cu!(d, cuCtxEnablePeerAccess(raw_a.ctx, 0)) {
        Err(e) if !e.ends_with(&format!("CUresult {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED}")) => return Err(e.into()),
        _ => {}
    }
    let stream = raw_b.streams[0];
    let direct = |n: u32| -> Res<f64> {
        cu!(d, cuStreamSynchronize(stream))?;
        let start = Instant::now();
        for _ in 0..n {
            cu!(d, cuMemcpyPeerAsync(pb, raw_b.ctx, pa, raw_a.ctx, COPY_BYTES as usize, stream))?;
        }
        cu!(d, cuStreamSynchronize(stream))?;
        Ok(gbps(n, COPY_BYTES, start.elapsed()))
    };
    let (o, r) = interleaved(|| ours(COPIES), || direct(COPIES))?;
    // A repetition short enough to end while the HAL's host wait still
    // polls (5 ms): the longer one also measures how late its sleeping
    // wait (up to 1 ms between checks) notices the end.
    let (os, rs) = interleaved(|| ours(SHORT), || direct(SHORT))?;
    // Half into the other half: the same bytes moved as A to B.
    let half = COPY_BYTES / 2;
    let local = |n: u32| -> Res<f64> {
        let start = Instant::now();
        for _ in 0..n {
            cu!(d, cuMemcpyAsync(pb + half, pb, half as usize, stream))?;
        }
        cu!(d, cuStreamSynchronize(stream))?;
        Ok(gbps(n, COPY_BYTES / 2, start.elapsed()))
    };
    local(1)?;
    let within_b = median((0..REPS).map(|_| local(COPIES)).collect::<Res<Vec<_>>>()?);
    cu!(d, cuMemFree(pb))?;
    cu!(d, cuCtxSetCurrent(raw_a.ctx))?;
    cu!(d, cuMemFree(pa))?;
    println!("4. A to B copy, 256 MiB x {COPIES} per repetition, median of {REPS} (GB/s of bytes copied):");
    report("peer copy bandwidth", "GB/s", &rounds(&o, &r), |q| q >= 0.95, "ours/raw >= 0.95");
    report(&format!("{SHORT} copies a repetition"), "GB/s", &rounds(&os, &rs), |q| q >= 0.95, "(context)");
    println!("  for scale: a copy within B's memory, raw: {within_b:.1} GB/s");
    event_floor(&raw_a, &raw_b)
}

/// A chain of [`EDGES`] events, each recorded on the next of `streams` in
/// turn after it waited for the one before: microseconds per edge from the
/// first call to the last event done. `events[i]` is of the context of
/// `streams[i % 2]`, which is current while it is used.
fn event_chain(d: &Driver, ctxs: [CUcontext; 2], streams: [CUstream; 2], events: &[CUevent]) -> Res<f64> {
    let start = Instant::now();
    for (i, &event) in events.iter().enumerate() {
        cu!(d, cuCtxSetCurrent(ctxs[i % 2]))?;
        if i > 0 {
            cu!(d, cuStreamWaitEvent(streams[i % 2], events[i - 1], 0))?;
        }
        cu!(d, cuEventRecord(event, streams[i % 2]))?;
    }
    cu!(d, cuEventSynchronize(events[events.len() - 1]))?;
    Ok(micros(start.elapsed(), EDGES))
}

/// The raw driver's cross-device edge against its same-device edge: what
/// the cuda-event route's ratio to two queues of one device can get down to.
fn event_floor(a: &Raw, b: &Raw) -> Res<()> {
    let d = a.d;
    let new_events = |ctxs: [CUcontext; 2]| -> Res<Vec<CUevent>> {
        (0..EDGES as usize)
            .map(|i| {
                let mut e = ptr::null_mut();
                cu!(d, cuCtxSetCurrent(ctxs[i % 2]))?;
                cu!(d, cuEventCreate(&mut e, CU_EVENT_DISABLE_TIMING))?;
                Ok(e)
            })
            .collect()
    };
    let (within, across) = ([a.ctx, a.ctx], [a.ctx, b.ctx]);
    let (within_events, across_events) = (new_events(within)?, new_events(across)?);
    let (w, x) = interleaved(
        || event_chain(d, within, a.streams, &within_events),
        || event_chain(d, across, [a.streams[0], b.streams[0]], &across_events),
    )?;
    for &e in within_events.iter().chain(&across_events) {
        cu!(d, cuEventDestroy(e))?;
    }
    let (w, x) = (median(w), median(x));
    println!("5. the floor: a raw {EDGES}-event chain, median of {REPS} (us per edge, end to end):");
    println!(
        "  two streams of A {w:>8.3} us   a stream of A and one of B {x:>8.3} us   across / within {:>6.3}",
        x / w
    );
    Ok(())
}
