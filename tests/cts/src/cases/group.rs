// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Device groups: the topology of whatever devices the suite is given, and
//! semaphores and buffers of one device in another's queue operations, for
//! every ordered pair of them.

use super::{mappable, noise, reach, PATIENCE};
use crate::{
    check::{ensure, ensure_eq, expect_err},
    GroupCase, Outcome,
};
use radiance::{
    BufferParams, BufferRoute, BufferUsage, Device, DeviceGroup, Error, MemoryType, SemaphoreRoute, StatusCode,
};
use std::time::Duration;

pub(super) const CASES: &[GroupCase] = &[
    GroupCase { name: "group_topology_has_an_edge_for_every_ordered_pair", run: topology },
    GroupCase { name: "group_a_device_joins_one_group_once", run: one_group },
    GroupCase { name: "group_queues_wait_on_semaphores_of_every_other_device", run: cross_waits },
    GroupCase { name: "group_queues_signal_semaphores_of_every_other_device", run: cross_signals },
    GroupCase { name: "group_failures_cross_with_their_code_and_message", run: cross_failures },
    GroupCase { name: "group_copies_reach_buffers_where_the_topology_has_a_route", run: cross_copies },
    GroupCase { name: "group_peer_copies_move_device_memory", run: peer_copies },
    GroupCase { name: "group_destroyed_signallers_and_released_relays_cancel", run: cancellation },
];

/// Every ordered pair of distinct indices.
fn pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
}

/// A short time in which a wait that is not reached must not end.
const BRIEF: Duration = Duration::from_millis(20);

fn topology(devices: &[Device]) -> Outcome {
    let group = DeviceGroup::new(devices)?;
    let t = group.topology();
    ensure_eq!(t.len(), devices.len(), "devices in the topology");
    for (i, device) in devices.iter().enumerate() {
        ensure!(group.devices()[i].is(device), "device {i} is not the one added {i}th");
        ensure_eq!(t.uri(i), Some(device.info().uri.as_str()), "uri of device {i}");
        let (own, index) = device.topology().ok_or_else(|| crate::Stop::Fail(format!("device {i} has no topology")))?;
        ensure!(std::ptr::eq(&*own, t) && index == i, "device {i} holds another topology or index {index}");
        let e = t.edge(i, i).unwrap_or_else(|| unreachable!());
        ensure!(e.semaphore == SemaphoreRoute::Local && e.buffer == BufferRoute::Local, "edge {i}->{i}: {e:?}");
    }
    for (i, j) in pairs(devices.len()) {
        let e = t.edge(i, j).ok_or_else(|| crate::Stop::Fail(format!("no edge {i}->{j}")))?;
        ensure!(e.semaphore != SemaphoreRoute::Local && e.buffer != BufferRoute::Local, "edge {i}->{j}: {e:?}");
    }
    ensure!(t.edge(devices.len(), 0).is_none(), "an edge from outside the group");
    Ok(())
}

fn one_group(devices: &[Device]) -> Outcome {
    let _group = DeviceGroup::new(devices)?;
    expect_err(DeviceGroup::new(&devices[..1]), StatusCode::FailedPrecondition, "a second group of a device")?;
    let stranger = Device::open(&devices[0].info().uri)?;
    let s = stranger.create_semaphore(0)?;
    let e = expect_err(
        devices[0].create_queue()?.barrier(&[(&s, 1)], &[]),
        StatusCode::InvalidArgument,
        "a wait on a semaphore outside the group",
    )?;
    ensure!(e.to_string().contains("different device"), "{e}");
    Ok(())
}

fn cross_waits(devices: &[Device]) -> Outcome {
    let _group = DeviceGroup::new(devices)?;
    for (i, j) in pairs(devices.len()) {
        let (s, t) = (devices[i].create_semaphore(0)?, devices[j].create_semaphore(0)?);
        let queue = devices[j].create_queue()?;
        queue.barrier(&[(&s, 2)], &[(&t, 1)])?;
        s.signal(1)?;
        ensure!(t.wait(1, BRIEF).is_err(), "{i}->{j}: the wait ended before its value");
        s.signal(2)?;
        reach(&t, 1)?;
        // A point reached before the wait is queued.
        queue.barrier(&[(&s, 2)], &[(&t, 2)])?;
        reach(&t, 2)?;
        // A host wait on the other device's semaphore, through the device.
        devices[j].wait_semaphores(radiance::WaitMode::All, &[(&s, 2), (&t, 2)], PATIENCE)?;
    }
    Ok(())
}

fn cross_signals(devices: &[Device]) -> Outcome {
    let _group = DeviceGroup::new(devices)?;
    for (i, j) in pairs(devices.len()) {
        let (s, gate) = (devices[i].create_semaphore(0)?, devices[j].create_semaphore(0)?);
        let queue = devices[j].create_queue()?;
        queue.barrier(&[(&gate, 1)], &[(&s, 5)])?;
        ensure!(s.wait(5, BRIEF).is_err(), "{i}->{j}: signalled before the queue ran");
        gate.signal(1)?;
        reach(&s, 5)?;
        ensure_eq!(s.query()?, 5, "{j} signalled {i}'s semaphore");
        // One device's queue waits for another's, which signals the first's.
        let other = devices[i].create_queue()?;
        let (t, u) = (devices[i].create_semaphore(0)?, devices[i].create_semaphore(0)?);
        queue.barrier(&[(&t, 1)], &[(&u, 1)])?;
        other.barrier(&[], &[(&t, 1)])?;
        reach(&u, 1)?;
    }
    Ok(())
}

fn cross_failures(devices: &[Device]) -> Outcome {
    let _group = DeviceGroup::new(devices)?;
    for (i, j) in pairs(devices.len()) {
        let message = format!("failed on purpose on {i} for {j}");
        // A failure of i's semaphore reaches what j's queue signals.
        let (s, t) = (devices[i].create_semaphore(0)?, devices[j].create_semaphore(0)?);
        let queue = devices[j].create_queue()?;
        queue.barrier(&[(&s, 1)], &[(&t, 1)])?;
        s.fail(Error::Status { code: StatusCode::DataLoss, message: message.clone() });
        let e = expect_err(t.wait(1, PATIENCE), StatusCode::DataLoss, "j's signal after i's failure")?;
        ensure_eq!(e.to_string(), message, "{i}->{j}: the message across the wait");
        // A failure on j reaches i's semaphore that j's queue signals.
        let (gate, u) = (devices[j].create_semaphore(0)?, devices[i].create_semaphore(0)?);
        queue.barrier(&[(&gate, 1)], &[(&u, 1)])?;
        gate.fail(Error::Status { code: StatusCode::Aborted, message: message.clone() });
        let e = expect_err(u.wait(1, PATIENCE), StatusCode::Aborted, "i's semaphore after j's failure")?;
        ensure_eq!(e.to_string(), message, "{j}->{i}: the message across the signal");
    }
    Ok(())
}

fn cross_copies(devices: &[Device]) -> Outcome {
    let group = DeviceGroup::new(devices)?;
    const SIZE: u64 = 64 << 10;
    for (i, j) in pairs(devices.len()) {
        let route = group.topology().edge(i, j).map(|e| e.buffer);
        let (x, y) = (mappable(&devices[i], SIZE)?, mappable(&devices[j], SIZE)?);
        let queue = devices[j].create_queue()?;
        if route == Some(BufferRoute::None) {
            expect_err(
                queue.copy(&[], &[], x.at(0), y.at(0), SIZE),
                StatusCode::Unimplemented,
                "a copy without a route",
            )?;
            continue;
        }
        let bytes = noise(SIZE as usize, (i * 16 + j) as u32);
        // i's queue writes x; j's queue copies it, ordered by one semaphore.
        let (written, copied) = (devices[i].create_semaphore(0)?, devices[j].create_semaphore(0)?);
        let writer = devices[i].create_queue()?;
        writer.update(&[], &[(&written, 1)], &bytes, x.at(0))?;
        match queue.copy(&[(&written, 1)], &[(&copied, 1)], x.at(0), y.at(0), SIZE) {
            // Where i cannot export this buffer (kmod whose VRAM the CPU
            // cannot map), the copy says so, at the call.
            Err(e) if route == Some(BufferRoute::DmaBuf) && e.status() == StatusCode::Unimplemented => {
                ensure!(e.to_string().contains("dma-buf"), "{i}->{j}: {e}");
                continue;
            }
            queued => queued?,
        }
        reach(&copied, 1)?;
        let mut got = vec![0; SIZE as usize];
        y.map()?.read(0, &mut got)?;
        ensure!(got == bytes, "{i}->{j} ({route:?}): the copy from i's buffer differs");
        // And back, into i's buffer from j's queue, at an offset.
        let back = devices[i].create_semaphore(0)?;
        queue.copy(&[], &[(&back, 1)], y.at(0), x.at(4096), SIZE - 4096)?;
        reach(&back, 1)?;
        x.map()?.read(4096, &mut got[..(SIZE - 4096) as usize])?;
        ensure!(
            got[..(SIZE - 4096) as usize] == bytes[..(SIZE - 4096) as usize],
            "{j}->{i} ({route:?}): the copy into i's buffer differs"
        );
    }
    Ok(())
}

/// Where a pair has the peer route, device memory (not only host-visible
/// buffers) moves between the two: i's device buffer into j's and back at
/// an offset, checked through a host-visible buffer of each.
fn peer_copies(devices: &[Device]) -> Outcome {
    let group = DeviceGroup::new(devices)?;
    const SIZE: u64 = 1 << 20;
    let peers: Vec<_> = pairs(devices.len())
        .filter(|&(i, j)| group.topology().edge(i, j).unwrap().buffer == BufferRoute::Peer)
        .collect();
    if peers.is_empty() {
        return Err(crate::Stop::Skip("no pair of these devices has the peer buffer route".into()));
    }
    let device_memory = |d: &Device| {
        d.allocate_buffer(BufferParams { size: SIZE, memory: MemoryType::Device, usage: BufferUsage::TRANSFER })
    };
    for (i, j) in peers {
        let (x, y) = (device_memory(&devices[i])?, device_memory(&devices[j])?);
        let (xh, yh) = (mappable(&devices[i], SIZE)?, mappable(&devices[j], SIZE)?);
        let bytes = noise(SIZE as usize, (i * 16 + j) as u32);
        let (qi, qj) = (devices[i].create_queue()?, devices[j].create_queue()?);
        let (written, copied, back) =
            (devices[i].create_semaphore(0)?, devices[j].create_semaphore(0)?, devices[i].create_semaphore(0)?);
        qi.update(&[], &[(&written, 1)], &bytes, x.at(0))?;
        // j's queue: i's device memory into j's, then into j's host view.
        qj.copy(&[(&written, 1)], &[], x.at(0), y.at(0), SIZE)?;
        qj.copy(&[], &[(&copied, 1)], y.at(0), yh.at(0), SIZE)?;
        reach(&copied, 1)?;
        let mut got = vec![0; SIZE as usize];
        yh.map()?.read(0, &mut got)?;
        ensure!(got == bytes, "{i}->{j}: i's device memory copied into j's differs");
        // And back into i's device memory at an offset, from j's queue.
        qj.copy(&[], &[(&back, 1)], y.at(0), x.at(4096), SIZE - 4096)?;
        reach(&back, 1)?;
        qi.copy(&[(&back, 1)], &[(&written, 2)], x.at(0), xh.at(0), SIZE)?;
        reach(&written, 2)?;
        xh.map()?.read(0, &mut got)?;
        let n = (SIZE - 4096) as usize;
        ensure!(
            got[4096..] == bytes[..n] && got[..4096] == bytes[..4096],
            "{j}->{i}: j's memory copied into i's differs"
        );
    }
    Ok(())
}

fn cancellation(devices: &[Device]) -> Outcome {
    let group = DeviceGroup::new(devices)?;
    let mut relayed = Vec::new();
    for (i, j) in pairs(devices.len()) {
        // The queue that was to signal i's semaphore goes: j's wait ends.
        let (s, t) = (devices[i].create_semaphore(0)?, devices[j].create_semaphore(0)?);
        let (gate, signaller) = (devices[i].create_semaphore(0)?, devices[i].create_queue()?);
        signaller.barrier(&[(&gate, 1)], &[(&s, 1)])?;
        let waiter = devices[j].create_queue()?;
        waiter.barrier(&[(&s, 1)], &[(&t, 1)])?;
        drop(signaller);
        expect_err(t.wait(1, PATIENCE), StatusCode::Cancelled, "j's signal after i's signaller went")?;
        // A wait still open when the group goes.
        let (s, t) = (devices[i].create_semaphore(0)?, devices[j].create_semaphore(0)?);
        let queue = devices[j].create_queue()?;
        queue.barrier(&[(&s, 1)], &[(&t, 1)])?;
        let route = group.topology().edge(i, j).map(|e| e.semaphore);
        relayed.push((s, t, queue, route));
    }
    drop(group);
    for (s, t, queue, route) in relayed {
        if route == Some(SemaphoreRoute::HostHop) {
            // Its relay is gone with the group: cancelled, never hung.
            expect_err(t.wait(1, PATIENCE), StatusCode::Cancelled, "a relayed wait after the group went")?;
        } else {
            // The kernel holds the edge; it still works.
            s.signal(1)?;
            reach(&t, 1)?;
        }
        drop(queue);
    }
    Ok(())
}
