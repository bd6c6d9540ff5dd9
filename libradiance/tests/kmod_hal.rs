// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What the kmod HAL backend does beyond the conformance suite: imported
//! dma-bufs, which Gluon reaches only by DMA (fills, copies and updates go
//! through VRAM scratch), and what it refuses. Ignored on the build machine,
//! run with `--ignored` inside the QEMU guest by tools/test.sh.

use radiance::{Buffer, BufferParams, BufferUsage, Device, MemoryType, Pattern, Semaphore, StatusCode};
use std::{os::fd::AsFd, time::Duration};

/// More than the 4 MiB the backend bounces at a time.
const SIZE: u64 = (5 << 20) + 12;

fn host_visible(device: &Device, size: u64) -> Buffer {
    let usage = BufferUsage::TRANSFER | BufferUsage::DISPATCH | BufferUsage::MAPPING;
    device.allocate_buffer(BufferParams { size, memory: MemoryType::HostVisible, usage }).unwrap()
}

/// `buffer`'s memory again, imported from its dma-buf: a host buffer object.
fn imported(device: &Device, buffer: &Buffer) -> Buffer {
    let fd = buffer.export_dma_buf().unwrap();
    let usage = BufferUsage::TRANSFER | BufferUsage::MAPPING;
    let params = BufferParams { size: buffer.size(), memory: MemoryType::HostVisible, usage };
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
    let (a, b) = (host_visible(&device, SIZE), host_visible(&device, SIZE));
    let (ia, ib) = (imported(&device, &a), imported(&device, &b));
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
    assert!(bytes(&a) == want, "the fill and update of the import differ");
    assert!(bytes(&b) == want, "the import-to-import copy differs");
}

#[test]
#[ignore = "needs radiance.ko: runs in QEMU (tools/test.sh)"]
fn what_the_kmod_backend_refuses() {
    let device = Device::open("kmod:0").unwrap();
    assert!(!device.info().memory_protection);
    assert_eq!(device.info().backend, "kmod");
    let buffer = host_visible(&device, 4096);
    let fd = buffer.export_dma_buf().unwrap();
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
                    q.fill(&[(timeline, i)], &[(timeline, i + 1)], words.at(4 * i), 4, Pattern::U32(i as u32 + 1)).unwrap();
                }
                reach(timeline, OPS);
            });
        }
    });
    let got = words.map().unwrap().read_u32s(0, OPS as usize).unwrap();
    let want: Vec<u32> = (1..=OPS as u32).collect();
    assert_eq!(got, want);
}
