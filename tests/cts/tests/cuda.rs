// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The conformance suite against `cuda:0`, and checks that only the cuda
//! backend can make. They need the CUDA driver and a GPU, so they are
//! ignored (counted as skipped) unless asked for with `--include-ignored`
//! (tools/bench-cuda/run.sh on the GPU machine); asked for where `cuda:0`
//! does not open, they fail: a test that was asked to run and could not
//! never passes.

use radiance::{BufferParams, BufferUsage, Command, Device, Launch, MemoryType, Pattern, StatusCode};
use radiance_uapi::builtin;
use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

/// `cuda:0`; a test that needs it fails where it does not open.
fn cuda() -> Device {
    Device::open("cuda:0").unwrap_or_else(|e| panic!("this test needs cuda:0, which does not open: {e}"))
}

/// Where cuda:0 does not open, the suite bails out: one failure, with why.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn suite_against_cuda_0() {
    let mut ktap = Vec::new();
    let summary = radiance_cts::run("cuda:0", "", &mut ktap);
    print!("{}", String::from_utf8_lossy(&ktap));
    assert_eq!(summary.failed, 0, "{summary:?}");
}

#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn group_cases_against_cuda_0_and_host() {
    let mut ktap = Vec::new();
    let summary = radiance_cts::run_group(&["cuda:0".to_owned(), "host".to_owned()], "", &mut ktap);
    print!("{}", String::from_utf8_lossy(&ktap));
    assert_eq!(summary.failed, 0, "{summary:?}");
}

fn launch(start_pc: u32, grid: [u32; 3], block: [u32; 3], params: &[u32]) -> Launch {
    let params = params.iter().flat_map(|p| p.to_le_bytes()).collect();
    Launch { start_pc, grid, block, regs_per_thread: 16, params, ..Default::default() }
}

/// A grid of a million threads over three dimensions: every element is
/// written exactly once, by the PTX kernels' thread numbering.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn million_thread_grids_cover_every_element_once() {
    let device = cuda();
    const N: u32 = 1 << 20;
    let params = BufferParams {
        size: 4 * u64::from(N),
        memory: MemoryType::HostVisible,
        usage: BufferUsage::DISPATCH | BufferUsage::MAPPING | BufferUsage::TRANSFER,
    };
    let (a, b) = (device.allocate_buffer(params).unwrap(), device.allocate_buffer(params).unwrap());
    let values: Vec<u32> = (0..N).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    a.map().unwrap().write_u32s(0, &values).unwrap();
    let (q, s) = (device.create_queue().unwrap(), device.create_semaphore(0).unwrap());
    let (pa, pb) = (a.device_address() as u32, b.device_address() as u32);
    // 256 x 4 x 2 blocks of 256 x 2 threads: exactly N.
    q.dispatch(&[], &[(&s, 1)], launch(builtin::FILL_U32, [256, 4, 2], [256, 2, 1], &[pb, 1, N])).unwrap();
    q.dispatch(&[(&s, 1)], &[(&s, 2)], launch(builtin::VECADD_U32, [256, 4, 2], [256, 2, 1], &[pa, pb, pb, N]))
        .unwrap();
    s.wait(2, Duration::from_secs(10)).unwrap();
    let got = b.map().unwrap().read_u32s(0, N as usize).unwrap();
    let bad = got.iter().zip(&values).position(|(g, v)| *g != v.wrapping_add(1));
    assert_eq!(bad, None, "first wrong element");
}

/// A block beyond CUDA's 1024 threads: the driver refuses the launch, which
/// fails as a device fault at the entry PC and stops the queue only.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn launches_the_driver_refuses_fault_their_queue() {
    let device = cuda();
    let (q, s) = (device.create_queue().unwrap(), device.create_semaphore(0).unwrap());
    q.dispatch(&[], &[(&s, 1)], launch(builtin::FILL_U32, [1, 1, 1], [2048, 1, 1], &[0, 0, 0])).unwrap();
    let e = s.wait(1, Duration::from_secs(10)).unwrap_err();
    assert_eq!(e.status(), StatusCode::Aborted, "{e}");
    assert!(e.to_string().contains(&format!("{:#010x}", builtin::FILL_U32)), "{e}");
    let (other, t) = (device.create_queue().unwrap(), device.create_semaphore(0).unwrap());
    other.barrier(&[], &[(&t, 1)]).unwrap();
    t.wait(1, Duration::from_secs(10)).unwrap();
}

/// A launch with no waits or signals goes to the stream by a shorter way
/// (`dispatch_alone` in cuda/queue.rs), which must do what the general way
/// does: a launch the driver refuses stops its queue, so that a later
/// signal fails with the fault and later launches do not run; and launches
/// of buffers the caller drops at once keep them in flight, over more than
/// one progress mark (every 128 submissions), and give the right results.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn launches_without_waits_or_signals_keep_buffers_and_fault_their_queue() {
    let device = cuda();
    const N: u32 = 1 << 16;
    let params = |memory, usage| BufferParams { size: 4 * u64::from(N), memory, usage };
    let mapped = BufferUsage::DISPATCH | BufferUsage::MAPPING;
    let out = device.allocate_buffer(params(MemoryType::HostVisible, mapped)).unwrap();
    let (q, s) = (device.create_queue().unwrap(), device.create_semaphore(0).unwrap());
    // Each round fills a fresh buffer and copies it out, then drops it: the
    // queue alone keeps it until the device is done with it.
    for i in 0..300u32 {
        let t = device.allocate_buffer(params(MemoryType::Device, BufferUsage::DISPATCH)).unwrap();
        let pt = t.device_address() as u32;
        q.dispatch(&[], &[], launch(builtin::FILL_U32, [N / 256, 1, 1], [256, 1, 1], &[pt, i, N])).unwrap();
        q.dispatch(
            &[],
            &[],
            launch(builtin::COPY_U32, [N / 256, 1, 1], [256, 1, 1], &[out.device_address() as u32, pt, N]),
        )
        .unwrap();
    }
    q.barrier(&[], &[(&s, 1)]).unwrap();
    s.wait(1, Duration::from_secs(10)).unwrap();
    let got = out.map().unwrap().read_u32s(0, N as usize).unwrap();
    assert_eq!(got.iter().position(|&v| v != 299), None, "first element not from the last round");
    // A block beyond CUDA's 1024 threads, which the driver refuses.
    q.dispatch(&[], &[], launch(builtin::FILL_U32, [1, 1, 1], [2048, 1, 1], &[0, 0, 0])).unwrap();
    q.dispatch(&[], &[], launch(builtin::FILL_U32, [N / 256, 1, 1], [256, 1, 1], &[out.device_address() as u32, 7, N]))
        .unwrap();
    q.barrier(&[], &[(&s, 2)]).unwrap();
    let e = s.wait(2, Duration::from_secs(10)).unwrap_err();
    assert_eq!(e.status(), StatusCode::Aborted, "{e}");
    assert!(e.to_string().contains(&format!("{:#010x}", builtin::FILL_U32)), "{e}");
    let got = out.map().unwrap().read_u32s(0, N as usize).unwrap();
    assert_eq!(got.iter().position(|&v| v != 299), None, "a launch after the fault ran");
}

/// A lone launch (no waits, no signals) that the driver refuses lets go of
/// the buffers it named at once, and stops its queue: the short way
/// (`dispatch_alone` in cuda/queue.rs) drops what it translated only when it
/// holds buffers, and keeps them only for a launch that was queued. The
/// buffer's 32-bit address is free again when the caller drops its own: a
/// new buffer of the same size gets it (the lowest free range), where one
/// still held would push the new buffer past it.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn refused_lone_launches_let_go_of_their_buffers() {
    let device = cuda();
    let q = device.create_queue().unwrap();
    let params = BufferParams { size: 4096, memory: MemoryType::Device, usage: BufferUsage::DISPATCH };
    let t = device.allocate_buffer(params).unwrap();
    let at = t.device_address();
    // A block beyond CUDA's 1024 threads, which the driver refuses; its 1024
    // elements fit the buffer, so the host's checks pass.
    q.dispatch(&[], &[], launch(builtin::FILL_U32, [1, 1, 1], [2048, 1, 1], &[at as u32, 1, 1024])).unwrap();
    drop(t);
    let again = device.allocate_buffer(params).unwrap();
    assert_eq!(again.device_address(), at, "the refused launch still holds its buffer");
    // The refusal stopped the queue: a lone launch now goes the general way,
    // which refuses it too, and what the short way translated for it is let
    // go of as well.
    let (t, s) = (device.allocate_buffer(params).unwrap(), device.create_semaphore(0).unwrap());
    let at = t.device_address();
    q.dispatch(&[], &[], launch(builtin::FILL_U32, [1, 1, 1], [256, 1, 1], &[at as u32, 1, 256])).unwrap();
    drop(t);
    assert_eq!(device.allocate_buffer(params).unwrap().device_address(), at, "a refused lone launch holds its buffer");
    q.barrier(&[], &[(&s, 1)]).unwrap();
    let e = s.wait(1, Duration::from_secs(10)).unwrap_err();
    assert_eq!(e.status(), StatusCode::Aborted, "{e}");
}

/// Device memory exports as a dma-buf where the driver can; elsewhere the
/// export says it cannot (UNIMPLEMENTED), never anything else.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn device_memory_exports_a_dma_buf_or_says_why() {
    let device = cuda();
    let params = BufferParams { size: 2 << 20, memory: MemoryType::Device, usage: BufferUsage::TRANSFER };
    let buffer = device.allocate_buffer(params).unwrap();
    match buffer.export_dma_buf() {
        Ok(fd) => println!("exported device memory as dma-buf {fd:?}"),
        Err(e) => {
            assert_eq!(e.status(), StatusCode::Unimplemented, "{e}");
            println!("no dma-buf export here: {e}");
        }
    }
}

/// A submission held for a value nobody has promised yet goes to its stream
/// when another thread's submission promises it, though that one queues
/// without the scheduler's lock (`submit_unlocked` in cuda/queue.rs): the
/// two race on every round, and no round may stay held.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn a_promise_made_without_the_scheduler_lock_releases_held_work() {
    const ROUNDS: u64 = 2000;
    let device = cuda();
    let (s, t) = (device.create_semaphore(0).unwrap(), device.create_semaphore(0).unwrap());
    let (waiter, signaller) = (device.create_queue().unwrap(), device.create_queue().unwrap());
    let (start, stop) = (std::sync::Barrier::new(2), std::sync::atomic::AtomicBool::new(false));
    let mut stuck = None;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 1..=ROUNDS {
                start.wait();
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                signaller.barrier(&[], &[(&s, i)]).unwrap();
            }
        });
        for i in 1..=ROUNDS {
            start.wait();
            waiter.barrier(&[(&s, i)], &[(&t, i)]).unwrap();
            // Round by round: a later value would hide a round left held.
            if let Err(e) = t.wait(i, Duration::from_secs(10)) {
                stuck = Some((i, e));
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                // Lets the signalling thread, waiting for the next round,
                // see `stop` and end.
                if i < ROUNDS {
                    start.wait();
                }
                break;
            }
        }
    });
    assert!(stuck.is_none(), "a round of {ROUNDS} stayed held: {stuck:?}, t = {:?}", t.query());
}

/// Submissions that wait for a semaphore and signal it again, alone, with
/// another semaphore's signal before or after it, and with a launch between
/// (cuda/queue.rs keeps the waited timeline locked for a signal of the same
/// semaphore): each round's fills of four, two and one elements land in
/// order, read back, and the semaphores end at the values signalled.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn waits_and_signals_of_one_submission_keep_timelines_in_order() {
    const ROUNDS: u32 = 200;
    let device = cuda();
    let params =
        BufferParams { size: 16, memory: MemoryType::HostVisible, usage: BufferUsage::DISPATCH | BufferUsage::MAPPING };
    let x = device.allocate_buffer(params).unwrap();
    let px = x.device_address() as u32;
    let fill = |count: u32, value: u32| launch(builtin::FILL_U32, [1, 1, 1], [4, 1, 1], &[px, value, count]);
    let (a, b) = (device.create_semaphore(0).unwrap(), device.create_semaphore(0).unwrap());
    let q = [device.create_queue().unwrap(), device.create_queue().unwrap()];
    for r in 0..ROUNDS {
        let (v, t) = (3 * r, 5 * u64::from(r));
        q[0].dispatch(&[(&a, t)], &[(&a, t + 1)], fill(4, v + 1)).unwrap();
        // Another semaphore's signal first, then the waited one's, with a launch between.
        q[1].dispatch(&[(&a, t + 1)], &[(&b, 2 * u64::from(r) + 1), (&a, t + 2)], fill(2, v + 2)).unwrap();
        q[0].barrier(&[(&a, t + 2)], &[(&a, t + 3)]).unwrap();
        // The waited one's first, then another's.
        q[1].barrier(&[(&a, t + 3)], &[(&a, t + 4), (&b, 2 * u64::from(r) + 2)]).unwrap();
        q[0].dispatch(&[(&a, t + 4), (&b, 2 * u64::from(r) + 2)], &[(&a, t + 5)], fill(1, v + 3)).unwrap();
        a.wait(t + 5, Duration::from_secs(10)).unwrap();
        let got = x.map().unwrap().read_u32s(0, 4).unwrap();
        assert_eq!(got, [v + 3, v + 2, v + 1, v + 1], "round {r}");
    }
    assert_eq!(a.query().unwrap(), 5 * u64::from(ROUNDS));
    assert_eq!(b.query().unwrap(), 2 * u64::from(ROUNDS));
}

/// A submission that waits on one semaphore and signals another: the
/// signal reaches the other (cuda/queue.rs reuses the waited semaphore's
/// cast for a signal only when it names the same semaphore), round after
/// round between two queues.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn a_signal_after_a_wait_on_another_semaphore_reaches_its_own() {
    const ROUNDS: u64 = 100;
    let device = cuda();
    let (a, b) = (device.create_semaphore(0).unwrap(), device.create_semaphore(0).unwrap());
    let q = [device.create_queue().unwrap(), device.create_queue().unwrap()];
    for i in 1..=ROUNDS {
        q[0].barrier(&[(&b, i - 1)], &[(&a, i)]).unwrap();
        q[1].barrier(&[(&a, i)], &[(&b, i)]).unwrap();
    }
    b.wait(ROUNDS, Duration::from_secs(10)).unwrap();
    assert_eq!((a.query().unwrap(), b.query().unwrap()), (ROUNDS, ROUNDS));
}

/// A barrier queues without its queue's state lock (`queue_edge` in
/// cuda/queue.rs), so it may come while another thread captures a command
/// buffer into a graph on the same queue: the capture must not take in the
/// barrier's wait and signal (graphs are captured on a stream of their
/// own). One thread records a new pair of fills each round and executes it
/// twice (captured on the second run); the other chains barriers between
/// that queue and another until it ends. Every round's fills land, the
/// chain reaches its last value, nothing fails.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn barriers_beside_a_graph_capture_on_the_same_queue() {
    const ROUNDS: u32 = 300;
    let device = cuda();
    let params =
        BufferParams { size: 16, memory: MemoryType::HostVisible, usage: BufferUsage::TRANSFER | BufferUsage::MAPPING };
    let x = device.allocate_buffer(params).unwrap();
    let (q, other) = (device.create_queue().unwrap(), device.create_queue().unwrap());
    let (done, chain) = (device.create_semaphore(0).unwrap(), device.create_semaphore(0).unwrap());
    let stop = AtomicBool::new(false);
    let edges = std::thread::scope(|scope| {
        let chained = scope.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let queue = if i % 2 == 0 { &q } else { &other };
                queue.barrier(&[(&chain, i)], &[(&chain, i + 1)]).unwrap();
                i += 1;
            }
            i
        });
        let rounds = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for r in 1..=ROUNDS {
                let mut recording = device.command_buffer();
                recording.record(Command::fill(x.at(0), 8, Pattern::U32(r)).unwrap()).unwrap();
                recording.record(Command::fill(x.at(8), 8, Pattern::U32(r)).unwrap()).unwrap();
                let commands = recording.finish();
                q.execute(&[], &[], &commands).unwrap();
                q.execute(&[], &[(&done, r.into())], &commands).unwrap();
                done.wait(r.into(), Duration::from_secs(10)).unwrap();
                assert_eq!(x.map().unwrap().read_u32s(0, 4).unwrap(), [r; 4], "round {r}");
            }
        }));
        // Ends the chain whatever happened, so that a failed round fails
        // the test rather than leave it waiting for the other thread.
        stop.store(true, Ordering::SeqCst);
        let edges = chained.join();
        if let Err(panic) = rounds {
            std::panic::resume_unwind(panic);
        }
        edges.unwrap()
    });
    chain.wait(edges, Duration::from_secs(10)).unwrap();
    assert_eq!(chain.query().unwrap(), edges);
    println!("{edges} barriers beside {ROUNDS} captures");
}

/// The context current on the calling thread, straight from the driver.
fn current_context() -> usize {
    let driver = radiance::cuda::sys::Driver::get().unwrap();
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a plain out-parameter.
    assert_eq!(unsafe { (driver.cuCtxGetCurrent)(&mut ctx) }, radiance::cuda::sys::CUDA_SUCCESS);
    ctx as usize
}

/// Edges and launches name their stream and events, from which the driver
/// takes the context: the submission path makes none current for them
/// (`Context::enter_for_streams` in cuda/context.rs). From threads where no
/// context is current, a fresh device's launches and edges between two
/// queues run in order: on the first thread, the first signals make the
/// device's first events (its pool is empty), which needs the context; on
/// the second, the semaphore's own idle events serve, and the thread is
/// left with no context current. A fill after them, which needs it, runs
/// as well.
#[test]
#[ignore = "needs cuda:0 (run with --include-ignored on a machine with the CUDA driver and a GPU)"]
fn edges_and_launches_from_threads_without_a_current_context() {
    let device = cuda();
    let usage = BufferUsage::DISPATCH | BufferUsage::MAPPING | BufferUsage::TRANSFER;
    let x = device.allocate_buffer(BufferParams { size: 16, memory: MemoryType::HostVisible, usage }).unwrap();
    let px = x.device_address() as u32;
    let fill = |count: u32, value: u32| launch(builtin::FILL_U32, [1, 1, 1], [4, 1, 1], &[px, value, count]);
    let (q, s) =
        ([device.create_queue().unwrap(), device.create_queue().unwrap()], device.create_semaphore(0).unwrap());
    for round in 0..2u32 {
        let (v, t) = (10 * round, 5 * u64::from(round));
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    assert_eq!(current_context(), 0, "a new thread has no context current");
                    q[0].dispatch(&[(&s, t)], &[(&s, t + 1)], fill(4, v + 1)).unwrap();
                    q[1].barrier(&[(&s, t + 1)], &[(&s, t + 2)]).unwrap();
                    q[0].dispatch(&[(&s, t + 2)], &[(&s, t + 3)], fill(2, v + 2)).unwrap();
                    q[1].barrier(&[(&s, t + 3)], &[(&s, t + 4)]).unwrap();
                    if round == 1 {
                        assert_eq!(current_context(), 0, "an edge or a launch made a context current");
                    }
                    q[0].fill(&[(&s, t + 4)], &[(&s, t + 5)], x.at(12), 4, Pattern::U32(v + 9)).unwrap();
                    s.wait(t + 5, Duration::from_secs(10)).unwrap();
                })
                .join()
                .unwrap();
        });
        assert_eq!(x.map().unwrap().read_u32s(0, 4).unwrap(), [v + 2, v + 2, v + 1, v + 9], "round {round}");
    }
}
