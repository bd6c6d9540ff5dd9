// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-hal group A B`: what one cross-device semaphore edge costs, by
//! each route a device group has for it, in one run: two queues of A (the
//! same device, the baseline), A and B with the topology's route (between
//! two kmod devices, a kernel alias: B's queue waits on A's semaphore
//! itself), A and B limited to sync_files (exported from one, imported into
//! the other, per point), and A and B with semaphores routed through the
//! host (a relay thread).
//!
//! A chain of `EDGES` barriers alternates between the two queues, each
//! waiting for the other's last signal: every step is one edge. The whole
//! chain is queued first (submit time per edge: on the sync_file route the
//! export and import are made then), then the host opens it and times it to
//! its end (latency per edge). Under TCG on a shared machine one chain's
//! figure moves by half between runs: the routes take turns, `ROUNDS`
//! times. Each route's median round is printed, with the scheduler passes
//! per edge of the kmod devices (debugfs `scheduler_passes`, and how many
//! of them woke a worker): two queues of one device take the whole chain
//! in one pass, the kernel alias takes one pass of the waiting device per
//! edge. Between two kmod devices each round also times an empty pass of
//! B's scheduler (a doorbell with nothing to take, less a null ioctl):
//! (same device + that pass) / same device is the alias's ratio if a pass
//! that takes the edge's packets cost no more than an empty one. Each
//! ratio is the median of the rounds' own ratios (the routes of a round ran
//! back to back, at one speed of the machine), with the ratio of the two
//! medians beside it.

use radiance::{node, Device, DeviceGroup, DeviceGroupBuilder, Result, Semaphore, Timeout};
use std::time::{Duration, Instant};

/// Edges in a chain: each queue gets half, two packets each, well within
/// the kmod ring.
const EDGES: u64 = 400;

struct PerEdge {
    submit: Duration,
    latency: Duration,
    /// Scheduler passes the chain took, and workers woken for them, over
    /// both kmod devices (debugfs); zero elsewhere.
    passes: (u64, u64),
}

/// Passes and worker wake-ups so far of the kmod devices among `uris`, from
/// debugfs `mem` (`scheduler_passes`, `scheduler_wakeups`); zero for other
/// devices, or where debugfs cannot be read.
fn activity(uris: &[&str]) -> (u64, u64) {
    let mut seen = Vec::new();
    let mut sum = (0, 0);
    for index in uris.iter().filter_map(|u| u.strip_prefix("kmod:")?.parse::<u32>().ok()) {
        if seen.contains(&index) {
            continue;
        }
        seen.push(index);
        let Ok(mem) = node::MemStats::read(index) else {
            continue;
        };
        sum.0 += mem.scheduler_passes.unwrap_or(0);
        sum.1 += mem.scheduler_wakeups.unwrap_or(0);
    }
    sum
}

/// Times a chain between queues of `first` and `second` (devices, or one
/// device twice).
fn chain(first: &Device, second: &Device, uris: &[&str]) -> Result<PerEdge> {
    let (q0, q1) = (first.create_queue()?, second.create_queue()?);
    let (s0, s1) = (first.create_semaphore(0)?, second.create_semaphore(0)?);
    let gate = first.create_semaphore(0)?;
    let t = Instant::now();
    // Step i runs on queue i % 2, waits for step i - 1 and signals step i.
    let point = |i: u64| -> (&Semaphore, u64) {
        if i % 2 == 0 {
            (&s0, i + 1)
        } else {
            (&s1, i + 1)
        }
    };
    q0.barrier(&[(&gate, 1)], &[point(0)])?;
    for i in 1..EDGES {
        let queue = if i % 2 == 0 { &q0 } else { &q1 };
        queue.barrier(&[point(i - 1)], &[point(i)])?;
    }
    let submit = t.elapsed() / EDGES as u32;
    let before = activity(uris);
    let t = Instant::now();
    gate.signal(1)?;
    let (last, value) = point(EDGES - 1);
    last.wait(value, Timeout::Infinite)?;
    let latency = t.elapsed() / EDGES as u32;
    let after = activity(uris);
    Ok(PerEdge { submit, latency, passes: (after.0 - before.0, after.1 - before.1) })
}

/// Doorbells in one timing of an empty pass.
const KICKS: u32 = 400;

/// The cost of one pass of `device`'s scheduler with nothing to take: a
/// doorbell (QUEUE_KICK, run in the call) on an idle queue, less a null
/// ioctl (SEM_QUERY).
fn empty_pass(queue: &node::Queue, sem: &node::Semaphore) -> Result<Duration> {
    let t = Instant::now();
    for _ in 0..KICKS {
        sem.error()?;
    }
    let null = t.elapsed();
    let t = Instant::now();
    for _ in 0..KICKS {
        queue.kick()?;
    }
    Ok(t.elapsed().saturating_sub(null) / KICKS)
}

fn us(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1000.0
}

/// Rounds per route. The routes take turns within each round, so that
/// what else loads the machine meanwhile falls on all of them alike; each
/// route's median round is printed. A chain takes a few milliseconds, and
/// under TCG one round's alias / same device ratio reads anywhere from 0.65
/// to 2.5 with no trend over the rounds: the median of 15 held within 1.19
/// to 1.36 over four runs in one boot, where medians of 5 ranged 1.08 to
/// 2.11 over eight.
const ROUNDS: usize = 15;

/// Devices `a` and `b` in a group that `limit` sets up, and the semaphore
/// route it took from `a` to `b`.
fn pair(
    a: &str,
    b: &str,
    limit: impl FnOnce(&mut DeviceGroupBuilder),
) -> Result<(Device, Device, DeviceGroup, &'static str)> {
    let (da, db) = (Device::open(a)?, Device::open(b)?);
    let mut builder = DeviceGroupBuilder::new();
    builder.add(&da)?.add(&db)?;
    limit(&mut builder);
    let group = builder.finalize()?;
    let route = group.topology().edge(0, 1).map_or("none", |e| e.semaphore.name());
    Ok((da, db, group, route))
}

/// The median of `rounds` by latency, and the median submit time.
fn median(rounds: &[PerEdge]) -> PerEdge {
    let mut rounds: Vec<_> = rounds.iter().map(|r| (r.submit, r.latency, r.passes)).collect();
    let mid = rounds.len() / 2;
    rounds.sort_by_key(|r| r.0);
    let submit = rounds[mid].0;
    rounds.sort_by_key(|r| r.2);
    let passes = rounds[mid].2;
    rounds.sort_by_key(|r| r.1);
    PerEdge { submit, latency: rounds[mid].1, passes }
}

/// One ratio of two routes: the median of the rounds' own `field(a) /
/// field(b)`, and the ratio of the two routes' medians.
fn ratio(a: &[PerEdge], b: &[PerEdge], field: impl Fn(&PerEdge) -> Duration) -> (f64, f64) {
    let mut own: Vec<f64> = a.iter().zip(b).map(|(x, y)| us(field(x)) / us(field(y))).collect();
    own.sort_by(f64::total_cmp);
    let medians = us(field(&median(a))) / us(field(&median(b)));
    (own[own.len() / 2], medians)
}

pub(crate) fn run(a: &str, b: &str) -> Result<()> {
    let device = Device::open(a)?;
    let (ba, bb, _best_group, route) = pair(a, b, |_| {})?;
    let (sa, sb, _sync_group, sync_route) = pair(a, b, |g| {
        g.route_semaphores_through_sync_files();
    })?;
    let (ha, hb, _hop_group, _) = pair(a, b, |g| {
        g.route_semaphores_through_host();
    })?;
    let ends = [(&device, &device, [a, a]), (&ba, &bb, [a, b]), (&sa, &sb, [a, b]), (&ha, &hb, [a, b])];
    // B's scheduler, where it is a kmod device's: a queue of its own to
    // ring (made for that timing only: idle beside a chain's queue, it
    // would cost each of B's passes a look that A's do not pay), and a
    // semaphore to time the null ioctl with.
    let kicked = match b.strip_prefix("kmod:") {
        Some(_) => {
            let device = node::Device::open(b)?;
            let sem = device.create_semaphore(0)?;
            Some((device, sem))
        }
        None => None,
    };
    let mut rounds: [Vec<PerEdge>; 4] = Default::default();
    let mut passes = Vec::new();
    for _ in 0..ROUNDS {
        for ((first, second, uris), times) in ends.iter().zip(rounds.iter_mut()) {
            times.push(chain(first, second, uris)?);
        }
        if let Some((device, sem)) = &kicked {
            passes.push(empty_pass(&device.create_queue(16)?, sem)?);
        }
    }
    let [same, best, sync_file, hop] = &rounds;
    println!(
        "bench-hal group {a} {b}: a chain of {EDGES} semaphore edges between two queues, median of {ROUNDS} rounds"
    );
    println!("  {:<42} {:>10} {:>12} {:>14}", "route", "submit", "latency", "passes/edge");
    let rows = [
        ("same device (two queues of A)".to_string(), same),
        (format!("A to B, topology's ({route})"), best),
        (format!("A to B, sync_files at best ({sync_route})"), sync_file),
        ("A to B, host hop (relay thread)".to_string(), hop),
    ];
    for (name, e) in rows {
        let e = median(e);
        let per_edge = |n: u64| n as f64 / EDGES as f64;
        println!(
            "  {name:<42} {:>7.1} us {:>9.1} us {:>6.2} ({:.2} woken)",
            us(e.submit),
            us(e.latency),
            per_edge(e.passes.0),
            per_edge(e.passes.1)
        );
    }
    let (latency, submit) = (|e: &PerEdge| e.latency, |e: &PerEdge| e.submit);
    let ratios = [
        (format!("{sync_route} / {route}, latency"), ratio(sync_file, best, latency)),
        (format!("{sync_route} / {route}, submit"), ratio(sync_file, best, submit)),
        (format!("host hop / {route}, latency"), ratio(hop, best, latency)),
        (format!("{route} / same device, latency"), ratio(best, same, latency)),
    ];
    for (name, (own, medians)) in ratios {
        println!("  {name:<42} {own:>10.2}  (medians' ratio {medians:.2})");
    }
    if !passes.is_empty() {
        // Each round's floor from its own same-device chain and pass.
        let mut floors: Vec<f64> =
            same.iter().zip(&passes).map(|(s, p)| (us(s.latency) + us(*p)) / us(s.latency)).collect();
        floors.sort_by(f64::total_cmp);
        passes.sort();
        println!(
            "  an empty pass of B (doorbell less a null ioctl) {:>7.1} us; {route} / same device if a pass cost no more, (same + pass) / same {:>5.2}",
            us(passes[passes.len() / 2]),
            floors[floors.len() / 2]
        );
    }
    Ok(())
}
