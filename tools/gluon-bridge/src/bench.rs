// SPDX-License-Identifier: GPL-2.0 OR MIT

//! What the bridge's own benchmarks (`bench-launch`, `bench-scrub`) share:
//! a model device declared as `model` mode does and served on a thread of
//! this process, with this thread its client (radiance::node), so that
//! what is compared runs interleaved in one run.

use crate::{
    control::Control,
    error::{Error, Result},
    model::{self, ModelOptions, Served},
};
use radiance::node;
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

/// Declares the model device, serves it on a thread, and opens it as a
/// client; and what the thread tells of its serving, timed from its
/// `epoch`.
pub fn serve_and_open(mut control: Control, opts: ModelOptions) -> Result<(node::Device, Arc<Served>)> {
    let index = model::declare(&mut control, &opts)?;
    let served = Arc::new(Served { epoch: Some(Instant::now()), ..Default::default() });
    let telling = served.clone();
    std::thread::spawn(move || {
        if let Err(e) = model::serve_declared(&control, &opts, &telling) {
            eprintln!("gluon-bridge: serving: {e}");
        }
    });
    let device = node::Device::open(&format!("kmod:{index}")).map_err(client_error)?;
    Ok((device, served))
}

/// An idle gap before a trip: long enough for a thread to be asleep, and
/// its CPU idle, when the trip begins.
pub const IDLE_GAP: Duration = Duration::from_micros(200);

/// Spins (yielding) for `gap`, as the client spins on its queue.
pub fn idle(gap: Duration) {
    let t = Instant::now();
    while t.elapsed() < gap {
        std::thread::yield_now();
    }
}

pub fn client_error(e: radiance::Error) -> Error {
    Error::Usage(format!("the bench's client: {e}"))
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// How long `put` (packets written on `queue`) takes from publication to
/// completion, spun on rather than slept on, yielding the CPU to whatever
/// else may run there (the scheduler's work items, the serving thread: the
/// guest has two CPUs); the queue's staging is let go afterwards, outside
/// the time.
pub fn round_trip(
    queue: &mut node::Queue,
    put: impl FnOnce(&mut node::Queue) -> radiance::Result<()>,
) -> Result<Duration> {
    Ok(timed_trip(queue, put, Instant::now())?.took())
}

/// A [`round_trip`]'s moments, in ns since an epoch.
pub struct Trip {
    pub start: u64,
    /// Its packets written, about to be published.
    pub built: u64,
    /// Its packets published, and the doorbell rung if the queue asked
    /// for it (QUEUE_KICK returned).
    pub flushed: u64,
    /// Seen complete.
    pub seen: u64,
}

impl Trip {
    /// From its start to seen complete.
    pub fn took(&self) -> Duration {
        Duration::from_nanos(self.seen - self.start)
    }
}

/// [`round_trip`], timed from `epoch`.
pub fn timed_trip(
    queue: &mut node::Queue,
    put: impl FnOnce(&mut node::Queue) -> radiance::Result<()>,
    epoch: Instant,
) -> Result<Trip> {
    let ns = || epoch.elapsed().as_nanos() as u64;
    let start = ns();
    put(queue).map_err(client_error)?;
    let built = ns();
    queue.flush().map_err(client_error)?;
    let flushed = ns();
    while queue.completed() < queue.written() {
        if let Some(f) = queue.fault() {
            return Err(Error::Usage(format!("the bench's queue faulted: {f:?}")));
        }
        std::thread::yield_now();
    }
    let seen = ns();
    queue.finish(None).map_err(client_error)?;
    Ok(Trip { start, built, flushed, seen })
}

/// The median over `n` runs of `f`, in ns: a few wake-ups that take a tick
/// are noise, not the path.
pub fn median_of(n: usize, mut f: impl FnMut() -> Result<Duration>) -> Result<f64> {
    let mut ns = (0..n).map(|_| f().map(|d| d.as_nanos() as f64)).collect::<Result<Vec<_>>>()?;
    Ok(median(&mut ns))
}
