// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-cuda peer cuda:A cuda:B`: copy bandwidth from A's device memory
//! into B's, where a device group of A and B has the peer route (B's queue
//! copies A's buffer itself, `BufferRoute::Peer`), against the driver's
//! own peer copy, `cuMemcpyPeerAsync` on a stream of B with B's peer access
//! to A enabled. Also B's copies within its own memory, for scale.

use super::*;
use radiance::{BufferRoute, DeviceGroup};

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
    let gbps = |copies: u32, t: Duration| f64::from(copies) * COPY_BYTES as f64 / t.as_secs_f64() / 1e9;
    let mut ours = |n: u32| -> Res<f64> {
        tick += 1;
        let start = Instant::now();
        for k in 0..n {
            let signal = [(&s, tick)];
            q.copy(&[], if k + 1 == n { &signal } else { &[] }, x.at(0), y.at(0), COPY_BYTES)?;
        }
        s.wait(tick, Timeout::Infinite)?;
        Ok(gbps(n, start.elapsed()))
    };

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
        Ok(gbps(n, start.elapsed()))
    };
    let (o, r) = interleaved(|| ours(COPIES), || direct(COPIES))?;
    // Half into the other half: the same bytes moved as A to B.
    let half = COPY_BYTES / 2;
    let local = |n: u32| -> Res<f64> {
        let start = Instant::now();
        for _ in 0..n {
            cu!(d, cuMemcpyAsync(pb + half, pb, half as usize, stream))?;
        }
        cu!(d, cuStreamSynchronize(stream))?;
        Ok(gbps(n, start.elapsed()) / 2.0)
    };
    local(1)?;
    let within_b = median((0..REPS).map(|_| local(COPIES)).collect::<Res<Vec<_>>>()?);
    cu!(d, cuMemFree(pb))?;
    cu!(d, cuCtxSetCurrent(raw_a.ctx))?;
    cu!(d, cuMemFree(pa))?;
    println!("4. A to B copy, 256 MiB x {COPIES} per repetition, median of {REPS} (GB/s of bytes copied):");
    let (ob, rb) = (median(o), median(r));
    report("peer copy bandwidth", "GB/s", ob, rb, ob >= 0.95 * rb, "ours/raw >= 0.95");
    println!("  for scale: a copy within B's memory, raw: {within_b:.1} GB/s");
    Ok(())
}
