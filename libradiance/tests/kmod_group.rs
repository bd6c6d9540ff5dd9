// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Device groups over two emulated devices (`emulated_devices=2`): work on
//! one device ordered after work on the other by one semaphore, with the
//! first device's buffer imported on the second; a device fault crossing
//! to the other device's signals with its message; and every object of
//! both devices released whatever order the group and the devices go in.
//! Each over both kernel routes: the kernel alias (the topology's) and
//! sync_files (what a group limited to them takes, and a module older than
//! ABI 1.10 gives). Ignored on the build machine, run with `--ignored` inside the QEMU guest
//! by tools/test.sh.

use radiance::{
    node::{self, MemStats, QueueStats, SemStats},
    BufferParams, BufferRoute, BufferUsage, Device, DeviceGroup, DeviceGroupBuilder, Launch, MemoryType,
    SemaphoreRoute, StatusCode,
};
use radiance_uapi::{builtin, caps};
use std::{sync::Mutex, time::Duration};

/// The tests count the driver's objects: one at a time.
static DRIVER: Mutex<()> = Mutex::new(());

const PATIENCE: Duration = Duration::from_secs(60);
const N: u32 = 4096;

fn launch(start_pc: u32, params: &[u32]) -> Launch {
    let params = params.iter().flat_map(|p| p.to_le_bytes()).collect();
    Launch { start_pc, grid: [N / 64, 1, 1], block: [64, 1, 1], regs_per_thread: 16, params, ..Default::default() }
}

fn buffer(device: &Device, memory: MemoryType) -> radiance::Buffer {
    let mut usage = BufferUsage::TRANSFER | BufferUsage::DISPATCH;
    if memory == MemoryType::HostVisible {
        usage = usage | BufferUsage::MAPPING;
    }
    device.allocate_buffer(BufferParams { size: 4 * u64::from(N), memory, usage }).unwrap()
}

/// Whether the CPU can map the devices' VRAM (not in gluon-sim mode): only
/// then are host-visible buffers dma-bufs that the other device can import.
fn vram_mappable() -> bool {
    node::Device::open("kmod:0").unwrap().info().caps & caps::VRAM_MAPPABLE != 0
}

/// The kernel's semaphore routes between two kmod devices, best first.
const ROUTES: [SemaphoreRoute; 2] = [SemaphoreRoute::KernelAlias, SemaphoreRoute::SyncFile];

/// Devices 0 and 1 in a group whose semaphores take `route`, and how 1
/// reaches 0's buffers.
fn pair(route: SemaphoreRoute) -> (Device, Device, DeviceGroup, BufferRoute) {
    let (a, b) = (Device::open("kmod:0").unwrap(), Device::open("kmod:1").unwrap());
    let mut builder = DeviceGroupBuilder::new();
    builder.add(&a).unwrap().add(&b).unwrap();
    if route == SemaphoreRoute::SyncFile {
        builder.route_semaphores_through_sync_files();
    }
    let group = builder.finalize().unwrap();
    let buffers = if vram_mappable() { BufferRoute::DmaBuf } else { BufferRoute::None };
    for (from, to) in [(0, 1), (1, 0)] {
        let edge = group.topology().edge(from, to).unwrap();
        assert_eq!((edge.semaphore, edge.buffer), (route, buffers));
    }
    (a, b, group, buffers)
}

/// Buffer objects, semaphores and queues of devices 0 and 1, and their
/// open files: all zero once everything is released.
fn driver_objects() -> [u64; 4] {
    let mut counts = [0; 4];
    for index in [0, 1] {
        let mem = MemStats::read(index).unwrap();
        counts[0] += mem.vram_bos + mem.host_pinned;
        counts[1] += SemStats::read(index).unwrap().len() as u64;
        counts[2] += QueueStats::read(index).unwrap().len() as u64;
        counts[3] += mem.open_files;
    }
    counts
}

/// The counts once the kernel's deferred releases are done (a dma-buf's
/// last reference dropped by a work item frees its BO later, as fput
/// does): polled for up to 10 s, as the stress tests do.
fn objects_settled() -> [u64; 4] {
    let mut counts = driver_objects();
    for _ in 0..1000 {
        if counts == [0; 4] {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        counts = driver_objects();
    }
    counts
}

#[test]
#[ignore = "needs radiance.ko with two devices: runs in QEMU (tools/test.sh)"]
fn a_fill_on_one_device_feeds_a_vector_add_on_the_other_through_one_semaphore() {
    let _driver = DRIVER.lock().unwrap();
    ROUTES.into_iter().for_each(fill_then_vector_add);
}

fn fill_then_vector_add(route: SemaphoreRoute) {
    let (a, b, _group, buffers) = pair(route);
    // x on A is host-visible (it exports as a dma-buf); y and z on B.
    let x = buffer(&a, MemoryType::HostVisible);
    let (y, z, staged) =
        (buffer(&b, MemoryType::Device), buffer(&b, MemoryType::Device), buffer(&b, MemoryType::Device));
    let (qa, qb) = (a.create_queue().unwrap(), b.create_queue().unwrap());
    let (filled, done) = (a.create_semaphore(0).unwrap(), b.create_semaphore(0).unwrap());
    let (b_local, b_done) = (b.create_semaphore(0).unwrap(), b.create_semaphore(0).unwrap());
    // B's work is queued first: only `filled` orders it after A's fill.
    qb.fill(&[], &[(&b_local, 1)], y.at(0), 4 * u64::from(N), radiance::Pattern::U32(5)).unwrap();
    let import = qb.copy(&[(&filled, 1)], &[(&b_local, 2)], x.at(0), staged.at(0), 4 * u64::from(N));
    if buffers == BufferRoute::None {
        // x is VRAM with a host shadow, no dma-buf: B cannot reach it, and
        // the copy is refused at the call.
        assert_eq!(import.unwrap_err().status(), StatusCode::Unimplemented);
        return;
    }
    import.unwrap();
    let (pstaged, py, pz) = (staged.device_address() as u32, y.device_address() as u32, z.device_address() as u32);
    qb.dispatch(&[(&b_local, 2)], &[(&done, 1)], launch(builtin::VECADD_U32, &[pstaged, py, pz, N])).unwrap();
    assert!(done.wait(1, Duration::from_millis(50)).is_err(), "B ran before A's fill");
    let px = x.device_address() as u32;
    qa.dispatch(&[], &[(&filled, 1)], launch(builtin::FILL_U32, &[px, 37, N])).unwrap();
    done.wait(1, PATIENCE).unwrap();
    // Read z back through a host-visible buffer of B: 37 + 5 everywhere.
    let out = buffer(&b, MemoryType::HostVisible);
    qb.copy(&[], &[(&b_done, 1)], z.at(0), out.at(0), 4 * u64::from(N)).unwrap();
    b_done.wait(1, PATIENCE).unwrap();
    let got = out.map().unwrap().read_u32s(0, N as usize).unwrap();
    assert_eq!(got.iter().position(|&v| v != 42), None, "{route:?}: first element that is not 37 + 5");
}

#[test]
#[ignore = "needs radiance.ko with two devices: runs in QEMU (tools/test.sh)"]
fn a_device_fault_on_one_device_reaches_the_other_devices_signals_with_its_message() {
    let _driver = DRIVER.lock().unwrap();
    ROUTES.into_iter().for_each(fault_crosses);
}

fn fault_crosses(route: SemaphoreRoute) {
    let (a, b, _group, _) = pair(route);
    let (qa, qb) = (a.create_queue().unwrap(), b.create_queue().unwrap());
    let (s, t, u) = (a.create_semaphore(0).unwrap(), b.create_semaphore(0).unwrap(), a.create_semaphore(0).unwrap());
    qb.barrier(&[(&s, 1)], &[(&t, 1)]).unwrap();
    // And back: B's queue signals a semaphore of A after the failed wait.
    qb.barrier(&[(&t, 1)], &[(&u, 1)]).unwrap();
    const NOWHERE: u32 = 0x0bad_0000;
    qa.dispatch(&[], &[(&s, 1)], launch(NOWHERE, &[])).unwrap();
    for (what, semaphore) in [("B's signal", &t), ("A's semaphore that B signals", &u)] {
        let e = semaphore.wait(1, PATIENCE).unwrap_err();
        assert_eq!(e.status(), StatusCode::Aborted, "{route:?}, {what}: {e}");
        assert!(e.to_string().contains(&format!("{NOWHERE:#010x}")), "{route:?}, {what}: {e}");
    }
}

#[test]
#[ignore = "needs radiance.ko with two devices: runs in QEMU (tools/test.sh)"]
fn the_group_and_its_devices_release_everything_in_any_order() {
    let _driver = DRIVER.lock().unwrap();
    let before = driver_objects();
    assert_eq!(before, [0; 4], "objects left by an earlier test: bos+pinned, semaphores, queues, files");
    for (route, order) in ROUTES.into_iter().flat_map(|r| (0..3).map(move |o| (r, o))) {
        let (a, b, group, buffers) = pair(route);
        let (x, y) = (buffer(&a, MemoryType::HostVisible), buffer(&b, MemoryType::HostVisible));
        let (qa, qb) = (a.create_queue().unwrap(), b.create_queue().unwrap());
        let (s, t) = (a.create_semaphore(0).unwrap(), b.create_semaphore(0).unwrap());
        qa.fill(&[], &[(&s, 1)], x.at(0), 4 * u64::from(N), radiance::Pattern::U32(order)).unwrap();
        // The edge with A's buffer in it where B can reach that.
        if buffers == BufferRoute::DmaBuf {
            qb.copy(&[(&s, 1)], &[(&t, 1)], x.at(0), y.at(0), 4 * u64::from(N)).unwrap();
        } else {
            qb.barrier(&[(&s, 1)], &[(&t, 1)]).unwrap();
        }
        // A wait that is never reached: released with everything else.
        let never = a.create_semaphore(0).unwrap();
        qb.barrier(&[(&never, 1)], &[]).unwrap();
        t.wait(1, PATIENCE).unwrap();
        let expected = if buffers == BufferRoute::DmaBuf { order } else { 0 };
        assert_eq!(y.map().unwrap().read_u32s(0, 1).unwrap(), [expected]);
        let objects = (x, y, qa, qb, s, t, never);
        match order {
            0 => drop((group, objects, a, b)),
            1 => drop((objects, a, b, group)),
            _ => drop((b, objects, group, a)),
        }
        assert_eq!(objects_settled(), [0; 4], "{route:?}, order {order}: bos+pinned, semaphores, queues, files left");
    }
}
