// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What the kmod HAL backend does beyond the conformance suite: imported
//! dma-bufs, which Gluon reaches only by DMA (fills, copies and updates go
//! through VRAM scratch), host-visible memory on a device whose VRAM the CPU
//! cannot map (a host shadow), and what it refuses. Ignored on the build
//! machine, run with `--ignored` inside the QEMU guest by tools/test.sh.

use radiance::{
    node::{self, Placement},
    Buffer, BufferParams, BufferUsage, Device, Launch, MemoryType, Pattern, Semaphore, StatusCode,
};
use radiance_uapi::{builtin, caps};
use std::{
    os::fd::{AsFd, OwnedFd},
    time::Duration,
};

/// More than the 4 MiB the backend bounces at a time.
const SIZE: u64 = (5 << 20) + 12;

fn host_visible(device: &Device, size: u64) -> Buffer {
    let usage = BufferUsage::TRANSFER | BufferUsage::DISPATCH | BufferUsage::MAPPING;
    device.allocate_buffer(BufferParams { size, memory: MemoryType::HostVisible, usage }).unwrap()
}

/// Whether the CPU can map device 0's VRAM (not in gluon-sim mode).
fn vram_mappable() -> bool {
    node::Device::open("kmod:0").unwrap().info().caps & caps::VRAM_MAPPABLE != 0
}

/// Pinned host memory of `size` bytes, mapped, and a dma-buf of it: memory
/// of another driver, as far as the HAL device is concerned.
fn host_dma_buf(size: u64) -> (memmap2::MmapMut, OwnedFd) {
    let bo = node::Device::open("kmod:0").unwrap().create_bo(size, Placement::Host, true).unwrap();
    // The mapping and the dma-buf keep the memory after the handle goes.
    (bo.map().unwrap(), bo.export_dma_buf().unwrap())
}

/// A host buffer object over `fd`, imported for transfers and mapping.
fn imported(device: &Device, fd: &OwnedFd, size: u64) -> Buffer {
    let usage = BufferUsage::TRANSFER | BufferUsage::MAPPING;
    let params = BufferParams { size, memory: MemoryType::HostVisible, usage };
    device.import_dma_buf(fd.as_fd(), params).unwrap()
}

fn bytes(buffer: &Buffer) -> Vec<u8> {
    let mut out = vec![0; buffer.size() as usize];
    buffer.map().unwrap().read(0, &mut out).unwrap();
    out
}

fn reach(s: &Semaphore, value: u64) {
    s.wait(value, Duration::from_secs(60)).unwrap();
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn fills_copies_and_updates_of_imported_memory() {
    let device = Device::open("kmod:0").unwrap();
    let ((a, a_fd), (b, b_fd)) = (host_dma_buf(SIZE), host_dma_buf(SIZE));
    let (ia, ib) = (imported(&device, &a_fd, SIZE), imported(&device, &b_fd, SIZE));
    assert_eq!(ia.device_address(), 0, "an import has no VRAM address");
    let q = device.create_queue().unwrap();
    let s = device.create_semaphore(0).unwrap();
    let data: Vec<u8> = (0..SIZE as usize).map(|i| (i * 131 % 251) as u8).collect();
    // Into an import across the bounce chunks, then import to import.
    q.fill(&[], &[(&s, 1)], ia.at(0), SIZE, Pattern::U16(0xBEEF)).unwrap();
    q.update(&[(&s, 1)], &[(&s, 2)], &data[..SIZE as usize - 8], ia.at(6)).unwrap();
    q.copy(&[(&s, 2)], &[(&s, 3)], ia.at(0), ib.at(0), SIZE).unwrap();
    reach(&s, 3);
    let mut want = [0xEF, 0xBE].repeat(SIZE as usize / 2);
    want[6..SIZE as usize - 2].copy_from_slice(&data[..SIZE as usize - 8]);
    assert!(a[..SIZE as usize] == want, "the fill and update of the import differ");
    assert!(b[..SIZE as usize] == want, "the import-to-import copy differs");
    assert!(bytes(&ib) == want, "the import's own mapping shows the same bytes");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn what_the_kmod_backend_refuses() {
    let device = Device::open("kmod:0").unwrap();
    assert!(!device.info().memory_protection);
    assert_eq!(device.info().backend, "kmod");
    let (_, fd) = host_dma_buf(4096);
    // Kernels cannot address imported memory: Gluon has no GPU virtual
    // memory.
    let params = BufferParams { size: 4096, memory: MemoryType::HostVisible, usage: BufferUsage::DISPATCH };
    let e = device.import_dma_buf(fd.as_fd(), params).unwrap_err();
    assert_eq!(e.status(), StatusCode::Unimplemented, "{e}");
    // A dma-buf smaller than asked for.
    let params = BufferParams { size: 8192, memory: MemoryType::HostVisible, usage: BufferUsage::TRANSFER };
    let e = device.import_dma_buf(fd.as_fd(), params).unwrap_err();
    assert_eq!(e.status(), StatusCode::InvalidArgument, "{e}");
    // Device memory is not page-granular: no dma-buf of it.
    let params = BufferParams { size: 4096, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
    let e = device.allocate_buffer(params).unwrap().export_dma_buf().unwrap_err();
    assert_eq!(e.status(), StatusCode::Unimplemented, "{e}");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn a_failure_from_the_host_keeps_its_code_and_message_through_queues() {
    let device = Device::open("kmod:0").unwrap();
    let (q1, q2) = (device.create_queue().unwrap(), device.create_queue().unwrap());
    let (a, b, c) =
        (device.create_semaphore(0).unwrap(), device.create_semaphore(0).unwrap(), device.create_semaphore(0).unwrap());
    q1.barrier(&[(&a, 1)], &[(&b, 1)]).unwrap();
    q2.barrier(&[(&b, 1)], &[(&c, 1)]).unwrap();
    a.fail(radiance::Error::Status { code: StatusCode::Unauthenticated, message: "no ticket".into() });
    let e = c.wait(1, Duration::from_secs(10)).unwrap_err();
    assert_eq!(e.status(), StatusCode::Unauthenticated, "{e}");
    assert_eq!(e.to_string(), "no ticket");
    assert_eq!(b.query().unwrap_err().to_string(), "no ticket");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn four_threads_submit_one_timeline_across_four_queues() {
    const OPS: u64 = 2000;
    const THREADS: u64 = 4;
    let device = Device::open("kmod:0").unwrap();
    let words = host_visible(&device, 4 * OPS);
    let timeline = device.create_semaphore(0).unwrap();
    // Op i waits for value i and signals i + 1; thread i % 4 submits it on
    // its own queue, so every edge crosses queues and threads, and a queue
    // often stops at a wait that another thread has not submitted the
    // signal of yet.
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (device, words, timeline) = (&device, &words, &timeline);
            scope.spawn(move || {
                let q = device.create_queue().unwrap();
                for i in (t..OPS).step_by(THREADS as usize) {
                    q.fill(&[(timeline, i)], &[(timeline, i + 1)], words.at(4 * i), 4, Pattern::U32(i as u32 + 1))
                        .unwrap();
                }
                reach(timeline, OPS);
            });
        }
    });
    let got = words.map().unwrap().read_u32s(0, OPS as usize).unwrap();
    let want: Vec<u32> = (1..=OPS as u32).collect();
    assert_eq!(got, want);
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn host_visible_memory_round_trips_through_the_device() {
    // Odd sizes and offsets: on gluon-sim the device moves whole words only.
    const LEN: u64 = 3 * 4096 + 6;
    let device = Device::open("kmod:0").unwrap();
    let (a, b) = (host_visible(&device, LEN), host_visible(&device, LEN));
    let q = device.create_queue().unwrap();
    let s = device.create_semaphore(0).unwrap();
    let data: Vec<u8> = (0..LEN as usize - 3).map(|i| (i * 7 % 253) as u8).collect();
    a.map().unwrap().write(3, &data).unwrap();
    // The device sees what the host wrote: it copies it, then a kernel
    // writes into the copy by device address.
    q.copy(&[], &[(&s, 1)], a.at(0), b.at(0), LEN).unwrap();
    let params = [b.device_address() as u32 + 8, 0xC0FF_EE00, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let launch = Launch {
        start_pc: builtin::FILL_U32,
        grid: [1; 3],
        block: [4, 1, 1],
        regs_per_thread: 1,
        params,
        ..Default::default()
    };
    q.dispatch(&[(&s, 1)], &[(&s, 2)], launch).unwrap();
    reach(&s, 2);
    // The host sees what the device wrote, from the first byte to the last.
    let mut want = vec![0; 3];
    want.extend_from_slice(&data);
    want[8..20].copy_from_slice(&0xC0FF_EE00u32.to_le_bytes().repeat(3));
    assert!(bytes(&b) == want, "the device's copy and fill, read back by the host");
    assert_eq!(b.map().unwrap().read_u32s(8, 3).unwrap(), [0xC0FF_EE00; 3]);
    // A host write between device writes lands between them, and a read of
    // a range the host never wrote shows the device's bytes.
    b.map().unwrap().write(LEN - 2, &[0xAB, 0xCD]).unwrap();
    q.fill(&[(&s, 2)], &[(&s, 3)], b.at(0), 4, Pattern::U8(0x11)).unwrap();
    reach(&s, 3);
    let mut tail = [0; 6];
    b.map().unwrap().read(LEN - 6, &mut tail).unwrap();
    assert_eq!(tail[4..], [0xAB, 0xCD]);
    assert_eq!(tail[..4], want[LEN as usize - 6..LEN as usize - 2]);
    let mut head = [0; 5];
    b.map().unwrap().read(0, &mut head).unwrap();
    assert_eq!(head, [0x11, 0x11, 0x11, 0x11, want[4]]);
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn host_visible_memory_exports_only_where_the_cpu_maps_vram() {
    let device = Device::open("kmod:0").unwrap();
    let buffer = host_visible(&device, 4096);
    buffer.map().unwrap().write_u32s(0, &[0xFACE]).unwrap();
    if vram_mappable() {
        let fd = buffer.export_dma_buf().unwrap();
        assert_eq!(bytes(&imported(&device, &fd, 4096))[..4], 0xFACEu32.to_le_bytes());
    } else {
        // Its bytes are in VRAM no CPU can map; a dma-buf of the host shadow
        // would show another driver a stale copy.
        let e = buffer.export_dma_buf().unwrap_err();
        assert_eq!(e.status(), StatusCode::Unimplemented, "{e}");
        assert!(e.to_string().contains("VRAM_MAPPABLE"), "{e}");
    }
}
