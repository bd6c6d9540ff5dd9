// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-scrub`: what freeing VRAM costs the next operation on a device
//! the bridge serves, whose freed VRAM the kernel scrubs by commands (MEM
//! SET, or copies of zeros where the device has no SET: `--gluon-sim`).
//!
//! In interleaved rounds, each figure the median of its samples: a 4 KiB
//! FILL alone; the same FILL right after freeing a written BO (the free
//! after an idle gap, as a BO mostly is), timed from the free and from its
//! own start; the free itself; the freed range's next user; one command
//! like a scrub's (`SCRUB` in kmod/hw/user/scrub.rs) and a FILL right
//! behind it on another queue, back to back and after the same idle gap,
//! the floor of what a FILL after a free waits for; and the device
//! commands a free takes per MiB. Documentation/benchmarks.md says how to
//! read each figure.

use crate::{bench, control::Control, error::Result, model::ModelOptions};
use radiance::{node, Pattern};
use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

/// The most VRAM one scrub command zeroes (kmod/hw/user/scrub.rs `SCRUB`).
const SCRUB_COMMAND: u64 = 256 << 10;

/// What to run.
pub struct BenchOptions {
    /// The device served, as `model` mode would declare it.
    pub model: ModelOptions,
    pub rounds: usize,
    /// Samples per round of each figure.
    pub samples: usize,
    /// The BO freed, in KiB.
    pub freed_kib: u64,
}

/// Declares and serves the model device, then measures.
pub fn run(control: Control, opts: BenchOptions) -> Result<()> {
    let (device, served) = bench::serve_and_open(control, opts.model)?;
    let ran = || served.ran.load(Ordering::Relaxed);
    let freed = opts.freed_kib << 10;
    let vram = |size| device.create_bo(size, node::Placement::Vram, false).map_err(bench::client_error);
    let small = vram(4096)?;
    let chunk = vram(SCRUB_COMMAND)?;
    let mut queue = device.create_queue(1024).map_err(bench::client_error)?;
    let mut ahead_queue = device.create_queue(16).map_err(bench::client_error)?;
    let fill = |q: &mut node::Queue, bo: &node::BufferObject, size| q.fill(bo, 0, size, Pattern::U32(7));
    let host = device.create_bo(SCRUB_COMMAND, node::Placement::Host, false).map_err(bench::client_error)?;
    let like_scrub = |q: &mut node::Queue| {
        if opts.model.gluon_sim {
            q.copy(&host, 0, &chunk, 0, SCRUB_COMMAND)
        } else {
            fill(q, &chunk, SCRUB_COMMAND)
        }
    };

    let (mut alone, mut after, mut next, mut scrubs_ahead) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut frees = Vec::new();
    let (mut after_ratio, mut next_ratio, mut per_mib) = (Vec::new(), Vec::new(), Vec::new());
    let (mut one_command, mut per_like) = (Vec::new(), Vec::new());
    let (mut behind_one, mut behind_ratio) = (Vec::new(), Vec::new());
    let (mut behind_idle, mut behind_idle_ratio) = (Vec::new(), Vec::new());
    let (mut own_start, mut own_ratio) = (Vec::new(), Vec::new());
    // Written, so that the scrub has something to zero.
    let write = |q: &mut node::Queue, bo: &node::BufferObject| bench::round_trip(q, |q| fill(q, bo, freed));
    let mut big = vram(freed)?;
    let at = ran();
    write(&mut queue, &big)?;
    let per_write = ran() - at;
    for _ in 0..opts.rounds {
        let at = ran();
        let a = bench::median_of(opts.samples, || bench::round_trip(&mut queue, |q| fill(q, &small, 4096)))?;
        // Commands per 4 KiB FILL (more than one where it copies a pattern).
        let per_fill = (ran() - at) / opts.samples as u64;
        let at = ran();
        let c = bench::median_of(opts.samples, || bench::round_trip(&mut queue, like_scrub))?;
        per_like.push((ran() - at) as f64 / opts.samples as f64);
        let mut behind = |gap| {
            bench::idle(gap);
            let t = Instant::now();
            like_scrub(&mut ahead_queue).map_err(bench::client_error)?;
            ahead_queue.flush().map_err(bench::client_error)?;
            bench::round_trip(&mut queue, |q| fill(q, &small, 4096))?;
            let took = t.elapsed();
            ahead_queue.finish(None).map_err(bench::client_error)?;
            Ok(took)
        };
        let d = bench::median_of(opts.samples, || behind(Duration::ZERO))?;
        let e = bench::median_of(opts.samples, || behind(bench::IDLE_GAP))?;
        let (mut free_ns, mut after_ns, mut own_ns, mut next_ns) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut ahead, mut commands) = (Vec::new(), 0);
        for _ in 0..opts.samples {
            bench::idle(bench::IDLE_GAP);
            let before = ran();
            let t = Instant::now();
            drop(big);
            let freed_at = t.elapsed();
            let own = bench::round_trip(&mut queue, |q| fill(q, &small, 4096))?;
            free_ns.push(freed_at.as_nanos() as f64);
            after_ns.push((freed_at + own).as_nanos() as f64);
            own_ns.push(own.as_nanos() as f64);
            ahead.push(ran().saturating_sub(before + per_fill) as f64);
            let t = Instant::now();
            big = vram(freed)?;
            bench::round_trip(&mut queue, |q| fill(q, &big, 4096))?;
            next_ns.push(t.elapsed().as_nanos() as f64);
            write(&mut queue, &big)?;
            // Less the three FILLs.
            commands += ran().saturating_sub(before + 2 * per_fill + per_write);
        }
        let (b, o, n) = (bench::median(&mut after_ns), bench::median(&mut own_ns), bench::median(&mut next_ns));
        alone.push(a);
        frees.push(bench::median(&mut free_ns));
        after.push(b);
        own_start.push(o);
        scrubs_ahead.push(bench::median(&mut ahead));
        next.push(n);
        after_ratio.push(b / a);
        one_command.push(c);
        behind_one.push(d);
        behind_ratio.push((b - a) / (d - a));
        behind_idle.push(e);
        behind_idle_ratio.push((b - a) / (e - a));
        own_ratio.push((o - a) / (e - a));
        next_ratio.push(n / a);
        per_mib.push(commands as f64 / opts.samples as f64 / (freed as f64 / f64::from(1 << 20)));
    }
    println!(
        "VRAM scrub on free of {} KiB, medians of {} interleaved rounds (each the median of {}):",
        opts.freed_kib, opts.rounds, opts.samples
    );
    println!("  device commands per MiB freed                {:>10.2}", bench::median(&mut per_mib));
    println!("  scrub commands run by the FILL's completion  {:>10.1}", bench::median(&mut scrubs_ahead));
    println!("  4 KiB FILL elsewhere, alone                  {:>10.0} ns", bench::median(&mut alone));
    println!("  the free itself                              {:>10.0} ns", bench::median(&mut frees));
    println!("  4 KiB FILL elsewhere, right after the free   {:>10.0} ns", bench::median(&mut after));
    println!("  the same FILL, from its own start            {:>10.0} ns", bench::median(&mut own_start));
    println!("  the freed range's next user, a 4 KiB FILL    {:>10.0} ns", bench::median(&mut next));
    println!("  after free / alone                           {:>10.2}", bench::median(&mut after_ratio));
    println!("  next user / alone                            {:>10.2}", bench::median(&mut next_ratio));
    println!(
        "  one command like the scrub's, {} KiB {}   {:>10.0} ns ({:.1} device commands)",
        SCRUB_COMMAND >> 10,
        if opts.model.gluon_sim { "copy" } else { "SET " },
        bench::median(&mut one_command),
        bench::median(&mut per_like)
    );
    println!("  4 KiB FILL right behind that command         {:>10.0} ns", bench::median(&mut behind_one));
    println!(
        "  the same, after {} µs idle                   {:>10.0} ns",
        bench::IDLE_GAP.as_micros(),
        bench::median(&mut behind_idle)
    );
    println!("  (after free - alone) / (behind it - alone)   {:>10.2}", bench::median(&mut behind_ratio));
    println!("  the same, behind it after the idle           {:>10.2}", bench::median(&mut behind_idle_ratio));
    println!("  (from its own start - alone) / (the same)    {:>10.2}", bench::median(&mut own_ratio));
    Ok(())
}
