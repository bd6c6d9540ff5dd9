// SPDX-License-Identifier: GPL-2.0 OR MIT

//! libradiance's kmod queues against the real module: ignored on the build
//! machine, run with `--ignored` inside the QEMU guest by tools/test.sh.

use radiance::{
    node::{BufferObject, Device, Frame, MemStats, Placement, Queue},
    Launch, Pattern,
};
use radiance_uapi::builtin;

/// The first `len` bytes of VRAM BO `bo` once everything on `q` completed,
/// copied out through host memory: not every device lets the CPU map VRAM.
fn read_vram(dev: &Device, q: &mut Queue, bo: &BufferObject, len: u64) -> Vec<u8> {
    let host = dev.create_bo(len, Placement::Host, true).unwrap();
    q.barrier().unwrap();
    q.copy(bo, 0, &host, 0, len).unwrap();
    q.finish(None).unwrap();
    host.map().unwrap()[..len as usize].to_vec()
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn update_fill_and_copy_round_trip() {
    let dev = Device::open("kmod:0").unwrap();
    let vram = dev.create_bo(8192, Placement::Vram, false).unwrap();
    let host = dev.create_bo(8192, Placement::Host, true).unwrap();
    let mut q = dev.create_queue(64).unwrap();
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    q.fill(&vram, 0, 8192, Pattern::U16(0xa55a)).unwrap();
    q.barrier().unwrap();
    q.update(&dev, &data, &vram, 5).unwrap();
    q.barrier().unwrap();
    q.copy(&vram, 0, &host, 0, 8192).unwrap();
    q.finish(None).unwrap();
    let seen = host.map().unwrap();
    assert_eq!(&seen[..4], &[0x5a, 0xa5, 0x5a, 0xa5]);
    assert_eq!(&seen[5..3005], &data[..]);
    assert_eq!(seen[3005], 0xa5, "the fill around the update");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn vector_add_launch() {
    let dev = Device::open("kmod:0").unwrap();
    let n = 777u32;
    let bos: Vec<_> = (0..3).map(|_| dev.create_bo(u64::from(n) * 4, Placement::Vram, false).unwrap()).collect();
    let mut q = dev.create_queue(16).unwrap();
    let a: Vec<u8> = (0..n).flat_map(|i| i.to_le_bytes()).collect();
    let b: Vec<u8> = (0..n).flat_map(|i| (1000 * i).to_le_bytes()).collect();
    q.update(&dev, &a, &bos[0], 0).unwrap();
    q.update(&dev, &b, &bos[1], 0).unwrap();
    q.barrier().unwrap();
    let params = [bos[0].device_address() as u32, bos[1].device_address() as u32, bos[2].device_address() as u32, n]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let launch = Launch {
        start_pc: builtin::VECADD_U32,
        grid: [4, 1, 1],
        block: [256, 1, 1],
        regs_per_thread: 8,
        params,
        ..Default::default()
    };
    q.launch(&dev, &launch, Frame::default()).unwrap();
    let c = read_vram(&dev, &mut q, &bos[2], u64::from(n) * 4);
    for i in 0..n as usize {
        let v = u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(v, 1001 * i as u32, "element {i}");
    }
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn semaphores_order_two_queues() {
    let dev = Device::open("kmod:0").unwrap();
    let word = dev.create_bo(4096, Placement::Vram, false).unwrap();
    let s = dev.create_semaphore(0).unwrap();
    let (mut first, mut second) = (dev.create_queue(16).unwrap(), dev.create_queue(16).unwrap());
    second.wait(&s, 1).unwrap();
    second.fill(&word, 0, 4, Pattern::U32(2)).unwrap();
    second.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(second.completed(), 0, "waits for the semaphore");
    first.fill(&word, 0, 4, Pattern::U32(1)).unwrap();
    first.signal(&s, 1).unwrap();
    first.finish(None).unwrap();
    second.finish(None).unwrap();
    assert_eq!(read_vram(&dev, &mut second, &word, 4)[0], 2, "the second fill ran last");
    assert_eq!(s.query().unwrap(), 1);
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn a_device_fault_is_an_error_with_its_pc() {
    let dev = Device::open("kmod:0").unwrap();
    let mut q = dev.create_queue(16).unwrap();
    let launch = Launch { start_pc: 0x4321, grid: [1; 3], block: [1; 3], regs_per_thread: 1, ..Default::default() };
    q.launch(&dev, &launch, Frame::default()).unwrap();
    let err = q.finish(None).unwrap_err();
    assert!(err.to_string().contains("pc 0x00004321"), "{err}");
    let fault = q.fault().unwrap();
    assert_eq!((fault.packet, fault.err_pc, fault.err_code), (0, 0x4321, 1));
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn ops_with_wait_and_signal_lists() {
    let dev = Device::open("kmod:0").unwrap();
    let word = dev.create_bo(4096, Placement::Vram, false).unwrap();
    let (go, also_go) = (dev.create_semaphore(0).unwrap(), dev.create_semaphore(5).unwrap());
    let (done, done_too) = (dev.create_semaphore(0).unwrap(), dev.create_semaphore(0).unwrap());
    let mut q = dev.create_queue(16).unwrap();
    q.with_semaphores(&[(&go, 1), (&also_go, 5)], &[(&done, 7), (&done_too, 1)], |q| {
        q.fill(&word, 0, 4, Pattern::U32(0x1234))
    })
    .unwrap();
    q.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(done.query().unwrap(), 0, "waits for every semaphore of the list");
    go.signal(1).unwrap();
    dev.wait_semaphores(&[(&done, 7), (&done_too, 1)], false, None).unwrap();
    assert_eq!(u32::from_le_bytes(read_vram(&dev, &mut q, &word, 4)[..4].try_into().unwrap()), 0x1234);
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn device_printf_reaches_the_caller() {
    let dev = Device::open("kmod:0").unwrap();
    let mut q = dev.create_queue(16).unwrap();
    let params = [100u32, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let launch = Launch {
        start_pc: builtin::PRINTF_U32,
        grid: [1; 3],
        block: [8, 1, 1],
        regs_per_thread: 1,
        params,
        ..Default::default()
    };
    let printf = q.launch_with_printf(&dev, &launch, 256).unwrap();
    q.finish(None).unwrap();
    assert_eq!(printf.text().unwrap(), "thread 0: 100\nthread 1: 101\nthread 2: 102\n");
    // A ring too small keeps what fits.
    let printf = q.launch_with_printf(&dev, &launch, 20).unwrap();
    q.finish(None).unwrap();
    assert_eq!(printf.text().unwrap(), "thread 0: 100\nthread");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn updates_and_launches_stage_without_new_buffer_objects() {
    let dev = Device::open("kmod:0").unwrap();
    let word = dev.create_bo(4096, Placement::Vram, false).unwrap();
    let mut q = dev.create_queue(1024).unwrap();
    let fill = |value: u32| Launch {
        start_pc: builtin::FILL_U32,
        grid: [1; 3],
        block: [1; 3],
        regs_per_thread: 0,
        params: [word.device_address() as u32, value, 1].iter().flat_map(|p| p.to_le_bytes()).collect(),
        ..Default::default()
    };
    let pinned = MemStats::read(0).unwrap().host_pinned;
    for i in 0..200u32 {
        q.update(&dev, &i.to_le_bytes(), &word, 4).unwrap();
        q.launch(&dev, &fill(i), Frame::default()).unwrap();
    }
    // Staged in the queue's ring: no buffer object (no pinned memory, no
    // system call) per packet.
    assert_eq!(MemStats::read(0).unwrap().host_pinned, pinned);
    let map = read_vram(&dev, &mut q, &word, 8);
    assert_eq!(u32::from_le_bytes(map[0..4].try_into().unwrap()), 199, "the last launch's fill");
    assert_eq!(u32::from_le_bytes(map[4..8].try_into().unwrap()), 199, "the last update");
}

/// Passes of kmod:0's scheduler so far (debugfs `mem`).
fn scheduler_passes() -> u64 {
    MemStats::read(0).unwrap().scheduler_passes.unwrap()
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn a_flush_with_nothing_new_rings_no_doorbell() {
    let dev = Device::open("kmod:0").unwrap();
    let mut q = dev.create_queue(16).unwrap();
    q.barrier().unwrap();
    q.finish(None).unwrap();
    // Idle now: the scheduler asks for kicks, and a flush of something new
    // would ring the doorbell. Nothing is new.
    let before = scheduler_passes();
    q.flush().unwrap();
    q.finish(None).unwrap();
    assert_eq!(scheduler_passes(), before, "a doorbell with nothing published ran a pass");
    // A doorbell rung on purpose runs one (in the call, or in a worker if
    // a pass held the scheduler), and what is published next still runs.
    q.kick().unwrap();
    let rung = std::time::Instant::now();
    while scheduler_passes() == before && rung.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(scheduler_passes(), before + 1);
    q.barrier().unwrap();
    q.finish(None).unwrap();
    assert!(scheduler_passes() > before + 1);
}
