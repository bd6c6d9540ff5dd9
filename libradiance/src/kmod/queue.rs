// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Queues of the kmod backend: each submission becomes one unit of packets
//! in the queue's mapped ring (waits, commands, signals), published with no
//! system call unless the kernel's scheduler sleeps.
//!
//! Gluon copies to and from VRAM only, and fills VRAM only; work on an
//! imported dma-buf (a host BO) goes through VRAM scratch, a chunk at a
//! time.

use super::{
    buffer::kmod_bo,
    semaphore::{kmod_semaphore, Producer},
};
use crate::{
    backend::{BackendQueue, Submission},
    command_buffer::Op,
    lock::lock,
    node::{self, BufferObject, Device, Placement},
    Command, DeviceRange, Error, Result, SemaphoreList,
};
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

/// Packets in a queue's ring (64 bytes each). A submission that finds the
/// ring full waits for room.
const RING_PACKETS: u32 = 4096;

/// The largest VRAM scratch one command uses to reach host memory.
const BOUNCE_BYTES: u64 = 4 << 20;

pub(super) struct KmodQueue {
    device: Arc<Device>,
    inner: Mutex<Inner>,
}

struct Inner {
    /// Dropped first: QUEUE_DESTROY cancels what has not completed before
    /// the objects its packets name go.
    queue: node::Queue,
    /// Submissions in the ring, with the index after their last packet:
    /// the buffers and semaphores they name live until they completed.
    in_ring: VecDeque<(u64, InRing)>,
}

struct InRing {
    _submission: Submission,
    _scratch: Vec<BufferObject>,
}

impl KmodQueue {
    pub(super) fn new(device: Arc<Device>) -> Result<Self> {
        let queue = device.create_queue(RING_PACKETS)?;
        Ok(Self { device, inner: Mutex::new(Inner { queue, in_ring: VecDeque::new() }) })
    }
}

/// The kernel semaphores of a list of points.
fn kernel_points(list: &SemaphoreList) -> Result<Vec<(&node::Semaphore, u64)>> {
    list.iter().map(|(s, v)| Ok((kmod_semaphore(s)?.kernel(), *v))).collect()
}

/// Fails every signal of a submission with `error`: a faulted queue runs
/// nothing more.
fn fail_signals(submission: &Submission, error: &Error) {
    for (semaphore, _) in &submission.signals {
        semaphore.fail(error.clone());
    }
}

impl BackendQueue for KmodQueue {
    fn submit(&self, submission: Submission) -> Result<()> {
        let mut inner = lock(&self.inner);
        let Inner { queue, in_ring } = &mut *inner;
        let completed = queue.completed();
        while in_ring.front().is_some_and(|(end, _)| *end <= completed) {
            in_ring.pop_front();
        }
        if let Some(fault) = queue.fault() {
            fail_signals(&submission, &fault.error());
            return Ok(());
        }
        let (waits, signals) = (kernel_points(&submission.waits)?, kernel_points(&submission.signals)?);
        let mut scratch = Vec::new();
        queue.with_semaphores(&waits, &signals, |q| {
            submission.commands.iter().try_for_each(|c| encode(q, &self.device, c, &mut scratch))
        })?;
        if !signals.is_empty() {
            // The signal packets are the last ones written; one list of
            // the waits serves all of them.
            let first_signal = queue.written() - signals.len() as u64;
            let waits: Arc<[_]> =
                submission.waits.iter().map(|(s, _)| Ok(kmod_semaphore(s)?.weak())).collect::<Result<_>>()?;
            for (i, (s, _)) in submission.signals.iter().enumerate() {
                let producer = Producer {
                    queue: queue.status().clone(),
                    signal: first_signal + i as u64,
                    waits: Arc::clone(&waits),
                };
                kmod_semaphore(s)?.add_producer(producer);
            }
        }
        let end = queue.written();
        queue.flush()?;
        // A fault the kernel raised while these packets were being written
        // may not have covered them: fail their signals here (a failure
        // sticks, so failing twice is harmless).
        if let Some(fault) = queue.fault() {
            fail_signals(&submission, &fault.error());
        }
        in_ring.push_back((end, InRing { _submission: submission, _scratch: scratch }));
        Ok(())
    }
}

/// Writes the packets of one command. A transfer of zero bytes has none
/// (the kernel refuses empty ranges).
fn encode(q: &mut node::Queue, device: &Device, command: &Command, scratch: &mut Vec<BufferObject>) -> Result<()> {
    match &command.0 {
        Op::Fill { length: 0, .. } | Op::Copy { length: 0, .. } => Ok(()),
        Op::Update { data, .. } if data.is_empty() => Ok(()),
        Op::Fill { target, offset, length, pattern } => {
            let bo = kmod_bo(target)?;
            if bo.placement() == Placement::Vram {
                q.fill(bo, *offset, *length, *pattern)
            } else {
                // Chunks start at multiples of the pattern size, as the
                // target range does, so the pattern stays in phase.
                through_vram(q, device, scratch, bo, *offset, *length, |q, s, _, n| q.fill(s, 0, n, *pattern))
            }
        }
        Op::Copy { source, source_offset, target, target_offset, length } => {
            let (src, dst) = (kmod_bo(source)?, kmod_bo(target)?);
            if src.placement() == Placement::Vram || dst.placement() == Placement::Vram {
                q.copy(src, *source_offset, dst, *target_offset, *length)
            } else {
                through_vram(q, device, scratch, dst, *target_offset, *length, |q, s, done, n| {
                    q.copy(src, source_offset + done, s, 0, n)
                })
            }
        }
        Op::Update { data, target, offset } => {
            let bo = kmod_bo(target)?;
            if bo.placement() == Placement::Vram {
                q.update(device, data, bo, *offset)
            } else {
                through_vram(q, device, scratch, bo, *offset, data.len() as u64, |q, s, done, n| {
                    q.update(device, &data[done as usize..(done + n) as usize], s, 0)
                })
            }
        }
        Op::Dispatch(launch) => {
            let frame = node::Frame { stack: vram_range(&launch.stack)?, tls: vram_range(&launch.tls)? };
            q.launch(device, launch, frame)
        }
        Op::Barrier => q.barrier(),
    }
}

/// A launch's stack or TLS as the kmod queue takes it.
fn vram_range(range: &Option<DeviceRange>) -> Result<Option<node::VramRange<'_>>> {
    range.as_ref().map(|r| Ok((kmod_bo(&r.buffer)?, r.offset, r.size))).transpose()
}

/// Writes `length` bytes at `offset` of host BO `target` through VRAM
/// scratch: for each chunk, `produce(queue, scratch, done, n)` puts `n`
/// bytes at the start of the scratch, then a copy takes them to the target.
fn through_vram(
    q: &mut node::Queue,
    device: &Device,
    scratch: &mut Vec<BufferObject>,
    target: &BufferObject,
    offset: u64,
    length: u64,
    mut produce: impl FnMut(&mut node::Queue, &BufferObject, u64, u64) -> Result<()>,
) -> Result<()> {
    let bounce = device.create_bo(length.min(BOUNCE_BYTES), Placement::Vram, false)?;
    let mut done = 0;
    while done < length {
        let n = (length - done).min(BOUNCE_BYTES);
        produce(q, &bounce, done, n)?;
        q.barrier()?;
        q.copy(&bounce, 0, target, offset + done, n)?;
        // The next chunk overwrites the scratch only after this copy.
        q.barrier()?;
        done += n;
    }
    scratch.push(bounce);
    Ok(())
}
