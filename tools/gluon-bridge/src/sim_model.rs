// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Sim-model mode: the software Gluon model served as gluon-sim serves its
//! GPU, so that socket mode runs in CI, where there is no gluon-sim: a Unix
//! socket, one client, either handshake (reaching the client's memory
//! through the shared memfd or with `process_vm_readv`/`writev` on its
//! pid), raw frames in and 16-byte responses out, with gluon-sim's
//! behaviour where the bridge must cope with it:
//! - one engine per kind (KERNEL, MEM, CSR), each busy for `--latency-ms`
//!   per command, asleep, or with `--compute` computing all along as a
//!   cycle simulator does; with `--drop-busy` a command that arrives while its
//!   engine is busy is dropped, never answered, as e554ff7's decode stage
//!   does (without it, it waits, as 013add5's does);
//! - no reset: a kernel that never ends (the built-in `SPIN`) is never
//!   answered and keeps the KERNEL engine busy for good; with `--spin-ms`
//!   it ends after that long instead (a slow kernel, which a watchdog reset
//!   gives up on before it ends);
//! - the caps of gluon-sim (whole words, no SET, FENCE, WAIT or counters);
//! - with `--die-at-connect`, its death right after the handshake where
//!   the machine refuses its 4 GiB VRAM reservation.
//!
//! It prints a line per command it drops, and `sim-model: N in, M answered,
//! D dropped` when its client leaves (in the pid handshake, with the bytes
//! it moved by `process_vm_readv`/`writev`).

use crate::{
    error::{Error, Result},
    handshake::{ClientMemory, Handshake},
    vram::Vram,
};
use radiance_gluon::{
    model::{self, MemError, Memory, Model},
    Command, Dialect, Response, RESPONSE_SIZE,
};
use rustix::{
    event::{poll, PollFd, PollFlags},
    io::{read, write, Errno},
    time::Timespec,
};
use std::{
    cell::Cell,
    collections::VecDeque,
    os::unix::net::{UnixListener, UnixStream},
    time::{Duration, Instant},
};

/// gluon-sim's streams.
const STREAMS: u8 = 4;

/// How the sim-model behaves.
pub struct SimModelOptions {
    pub socket: String,
    pub handshake: Handshake,
    pub vram_mib: u32,
    /// How long each command keeps its engine busy.
    pub latency_ms: u64,
    /// Busy means computing, not asleep.
    pub compute: bool,
    /// Drop a command whose engine is busy, as gluon-sim e554ff7 does.
    pub drop_busy: bool,
    /// How long a `SPIN` runs (None: for ever).
    pub spin: Option<Duration>,
    /// Exit right after the handshake, as gluon-sim does where it cannot
    /// reserve its 4 GiB of VRAM.
    pub die_at_connect: bool,
}

/// VRAM here, host memory in the client.
struct Mem {
    client: ClientMemory,
    vram: Vram,
    /// A `SPIN` started: gluon-sim would run it for ever.
    spun: Cell<bool>,
}

impl Memory for Mem {
    fn read_vram(&self, addr: u64, dst: &mut [u8]) -> std::result::Result<(), MemError> {
        self.vram.with(addr, dst.len(), |v| dst.copy_from_slice(v))
    }

    fn write_vram(&self, addr: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.vram.with_mut(addr, src.len(), |v| v.copy_from_slice(src))
    }

    fn host_to_vram(&self, host: u64, vram: u64, len: u32) -> std::result::Result<(), MemError> {
        self.vram.with_mut(vram, len as usize, |v| self.client.read(host, v).then_some(()).ok_or(MemError::Host))?
    }

    fn vram_to_host(&self, vram: u64, host: u64, len: u32) -> std::result::Result<(), MemError> {
        self.vram.with(vram, len as usize, |v| self.client.write(host, v).then_some(()).ok_or(MemError::Host))?
    }

    fn write_host(&self, host: u64, src: &[u8]) -> std::result::Result<(), MemError> {
        self.client.write(host, src).then_some(()).ok_or(MemError::Host)
    }

    fn clock_ns(&self) -> i64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    /// Only a `SPIN` asks (it pauses first): it never ends here.
    fn aborted(&self) -> bool {
        self.spun.get()
    }

    fn pause(&self) {
        self.spun.set(true);
    }
}

/// One engine: busy until its command's answer is due (for ever, None, for
/// a kernel that never ends).
#[derive(Default)]
struct Engine {
    busy: Option<Option<(Instant, [u8; RESPONSE_SIZE])>>,
    /// Commands waiting for it (013add5's behaviour).
    waiting: VecDeque<Vec<u8>>,
}

/// Counts for the line printed at the end.
#[derive(Default)]
struct Counts {
    received: u64,
    answered: u64,
    dropped: u64,
}

/// Listens on the socket, serves one client, returns when it leaves.
pub fn serve(opts: &SimModelOptions) -> Result<()> {
    let _ = std::fs::remove_file(&opts.socket);
    let listener = UnixListener::bind(&opts.socket).map_err(|e| Error::Sim(format!("bind {}: {e}", opts.socket)))?;
    eprintln!("sim-model: listening on {} ({} handshake)", opts.socket, opts.handshake.name());
    let (sock, _) = listener.accept().map_err(|e| Error::Sim(format!("accept: {e}")))?;
    let client = ClientMemory::accept(&sock, opts.handshake)?;
    if opts.die_at_connect {
        // gluon-sim's words and exit status (SIGABRT's) when Rust's
        // allocator fails.
        eprintln!("memory allocation of 4294967296 bytes failed");
        std::process::exit(134);
    }
    sock.set_nonblocking(true).map_err(|e| Error::Sim(format!("nonblocking socket: {e}")))?;
    let dialect = opts.handshake.dialect();
    let vram_size = u64::from(opts.vram_mib) << 20;
    let mem = Mem { client, vram: Vram::new(vram_size as usize), spun: Cell::new(false) };
    let mut model = Model::new(dialect, model::caps(dialect, true), STREAMS, vram_size);
    let mut engines: [Engine; 3] = Default::default();
    let mut counts = Counts::default();
    let mut pending = Vec::new();
    let latency = Duration::from_millis(opts.latency_ms);
    let frame = dialect.frame_size();
    let result = loop {
        let mut due = engines.iter().filter_map(|e| e.busy.flatten().map(|(t, _)| t)).min();
        if opts.compute && due.is_some() {
            // Busy computing: look at the socket, and go on at once.
            due = Some(Instant::now());
        }
        if let Err(e) = wait(&sock, due) {
            break Err(e);
        }
        let mut gone = None;
        for e in &mut engines {
            if let Some(Some((t, response))) = e.busy {
                if t <= Instant::now() {
                    if let Err(err) = write(&sock, &response) {
                        gone = Some(err);
                        break;
                    }
                    counts.answered += 1;
                    e.busy = None;
                    if let Some(next) = e.waiting.pop_front() {
                        e.busy = Some(run(dialect, &mut model, &mem, &next, latency, opts.spin));
                    }
                }
            }
        }
        // The client left mid-answer: the counts still get printed.
        if let Some(err) = gone {
            break Err(Error::os("answer the client", err));
        }
        let mut buf = [0u8; 4096];
        match read(&sock, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(Errno::AGAIN) => continue,
            Err(e) => break Err(Error::os("read from the client", e)),
        }
        while pending.len() >= frame {
            let f: Vec<u8> = pending.drain(..frame).collect();
            counts.received += 1;
            let kind = engine_of(dialect, &f);
            let e = &mut engines[kind];
            if e.busy.is_none() {
                e.busy = Some(run(dialect, &mut model, &mem, &f, latency, opts.spin));
            } else if opts.drop_busy {
                counts.dropped += 1;
                eprintln!("sim-model: dropped a command on stream {}: its engine is busy", f[0]);
            } else {
                e.waiting.push_back(f);
            }
        }
    };
    let moved =
        mem.client.moved_by_pid().map(|n| format!(", {n} bytes by process_vm_readv/writev")).unwrap_or_default();
    eprintln!("sim-model: {} in, {} answered, {} dropped{moved}", counts.received, counts.answered, counts.dropped);
    result
}

/// The engine kind a frame goes to: 0 KERNEL, 1 MEM, 2 CSR (what cannot be
/// decoded goes to the model through CSR, which answers it as malformed).
fn engine_of(dialect: &dyn Dialect, frame: &[u8]) -> usize {
    match dialect.decode(frame) {
        Ok((_, Command::Kernel { .. })) => 0,
        Ok((_, Command::Copy { .. } | Command::Set { .. })) => 1,
        _ => 2,
    }
}

/// Runs a frame on the model now; its answer is due after `latency`, or
/// for a `SPIN` after `spin` (never: None).
fn run(
    dialect: &dyn Dialect,
    model: &mut Model,
    mem: &Mem,
    frame: &[u8],
    latency: Duration,
    spin: Option<Duration>,
) -> Option<(Instant, [u8; RESPONSE_SIZE])> {
    mem.spun.set(false);
    match model.run(mem, frame) {
        Some(r) => Some((Instant::now() + latency, r)),
        None => {
            let ok = Response { stream: frame.first().copied().unwrap_or(0), ..Default::default() };
            spin.map(|d| (Instant::now() + d, dialect.encode_response(&ok)))
        }
    }
}

/// Waits until the client sends or `due` passes.
fn wait(sock: &UnixStream, due: Option<Instant>) -> Result<()> {
    let left = due.map(|t| t.saturating_duration_since(Instant::now()));
    let ts = left.map(|d| Timespec { tv_sec: d.as_secs() as i64, tv_nsec: d.subsec_nanos().into() });
    let mut fds = [PollFd::new(sock, PollFlags::IN)];
    match poll(&mut fds, ts.as_ref()) {
        Ok(_) | Err(Errno::INTR) => Ok(()),
        Err(e) => Err(Error::os("poll", e)),
    }
}
