// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Socket mode: the device is gluon-sim (Sh-Anand/gluon), reached over its
//! Unix socket with either of its handshakes (`handshake.rs`): every host
//! byte a command names is staged where the sim can reach it before the
//! frame goes, and a device-to-host copy's bytes are copied back to the
//! kernel's DMA window after its response.
//!
//! What the bridge keeps from the sim, read in its source:
//! - e554ff7's decode stage takes a command off an engine kind's queue
//!   every tick, busy engine or not, and drops it when the engine is busy
//!   (`glug.rs` "Tick decode"); it has one engine of each kind. So the sim
//!   gets at most one command per engine kind (KERNEL, MEM, CSR) and one
//!   per stream at a time; the rest wait here, taken in turn across
//!   streams. 013add5 fixed the drop but keeps a 4-command intake that
//!   overwrites when full: the same limit keeps within it.
//! - gluon-sim has no reset command. After the kernel's watchdog resets the
//!   device, a command still at the sim keeps its engine (and stream) busy
//!   until the sim answers it, and the answer is dropped. A launch may
//!   never end: its stream is retired (USER_RETIRE), so the kernel moves
//!   that stream's queues to the others and they carry on, until the sim
//!   answers and the stream is back in service. Launches wait while the
//!   sim's kernel engine runs it. Only when no stream would be left (or on
//!   a module that cannot retire, past `--timeout-ms`) is the device lost:
//!   the bridge exits and clients fail at once with ENODEV.
//! - It answers a command only when it is done, however long that takes
//!   (a cycle simulator under TCG runs kilo-instructions a second), and
//!   says nothing meanwhile. gluon-sim spins a CPU once a client connects,
//!   so its CPU time says nothing either: the bridge declares the rates it
//!   is given, and the kernel gives each command its size over them. For
//!   a sim that sleeps when idle, `--cpu-progress` reports its CPU time as
//!   the progress of what it holds (`cpu_time.rs`), so that the watchdog
//!   resets the device only for a sim that stopped computing.
//! - It may die without answering: a command it holds without computing
//!   has the same deadline.
//!   It may die at connect, reserving its VRAM: the bridge tells a sim
//!   that closed before answering apart from one that answered what its
//!   protocol does not (the other handshake).
//! - 013add5 ignores a failed `process_vm_readv`/`writev` (zeros in,
//!   nothing out, status OK): a frame never names host bytes outside its
//!   stream's staging, checked before it is sent.

use crate::{
    control::{declaration, Control, Frame, Ready},
    cpu_time::CpuTime,
    error::{Error, Result},
    handshake::{self, Handshake, Staging},
    sim_config::Shape,
};
use radiance_gluon::{Command, CopyDir, Dialect, Response, RESPONSE_SIZE};
use radiance_uapi::gluon_err;
use rustix::{
    event::{poll, PollFd, PollFlags},
    io::{read, write, Errno},
    net::sockopt::socket_peercred,
    time::Timespec,
};
use std::{
    collections::VecDeque,
    os::unix::net::UnixStream,
    time::{Duration, Instant},
};

/// gluon-sim's streams.
const STREAMS: usize = 4;

/// How often the sim's CPU time is looked at while it holds a command:
/// well within any launch timeout, and a few clock ticks.
const PROGRESS_LOOK: Duration = Duration::from_millis(20);

/// How long the bridge waits for the control file or the sim at most
/// otherwise (deadlines are checked between waits).
const IDLE_LOOK: Duration = Duration::from_millis(100);

/// Where the handshake's probe puts its word in VRAM (before the device is
/// declared: nothing lives there yet).
const PROBE_VRAM: u64 = 0;
const PROBE_WORD: u32 = 0x6f75_6c47;

/// Where and how to reach gluon-sim.
pub struct SimOptions {
    /// Its `socket_path`.
    pub socket: String,
    pub handshake: Handshake,
    /// VRAM to declare: gluon-sim's is a flat 4 GiB.
    pub vram_mib: u32,
    /// Staging space for all streams, and (memfd) the address below 4 GiB
    /// where it is shared.
    pub shared_mib: u32,
    pub shared_addr: u64,
    /// How long a command may go unanswered, the sim computing nothing
    /// (with `cpu_progress`), before the sim counts as dead.
    pub timeout_ms: u64,
    /// GET_INFO's compute shape, from the sim's config or the command line.
    pub shape: Shape,
    /// GET_INFO's built-in kernels (`uapi::builtin`): gluon-sim runs none;
    /// the sim-model runs the model's.
    pub builtins: u32,
    /// Report the sim's CPU time as progress (a sim that sleeps when idle).
    pub cpu_progress: bool,
    /// The rates declared otherwise (USER_DECLARE's; 0: none).
    pub bytes_per_s: u64,
    pub threads_per_s: u64,
}

/// gluon-sim's engine kinds: each has one engine, and takes one command at
/// a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    Kernel,
    Mem,
    Csr,
}

impl Engine {
    fn of(cmd: &Command) -> Self {
        match cmd {
            Command::Kernel { .. } => Engine::Kernel,
            Command::Copy { .. } | Command::Set { .. } => Engine::Mem,
            Command::Fence | Command::Wait { .. } | Command::ReadCounter { .. } => Engine::Csr,
        }
    }
}

/// A command at the sim, and what to do with its answer.
struct InFlight {
    since: Instant,
    engine: Engine,
    /// A device-to-host copy: the DMA address its bytes go to, and how many.
    copy_back: Option<(u64, usize)>,
    /// The kernel gave it up in a reset: its answer is dropped.
    given_up: bool,
}

/// One of the sim's streams.
#[derive(Default)]
struct Stream {
    /// Frames from the kernel, not yet sent.
    queue: VecDeque<Frame>,
    at_sim: Option<InFlight>,
}

/// The connection: socket, frames and staging.
struct Sim {
    sock: UnixStream,
    dialect: &'static dyn Dialect,
    handshake: Handshake,
    staging: Staging,
    /// Response bytes read but not yet whole.
    answers: Vec<u8>,
    /// The sim's pid, as the socket says (for what to say if it dies).
    peer: Option<i32>,
}

impl Sim {
    /// Says who we are to the sim at the other end of `sock`, `handshake`'s
    /// way, with `arena` bytes of staging per stream.
    fn connect(sock: UnixStream, handshake: Handshake, arena: usize, shared_addr: u64) -> Result<Self> {
        let peer = socket_peercred(&sock).ok().map(|c| c.pid.as_raw_nonzero().get());
        let staging = handshake::connect(&sock, handshake, STREAMS, arena, shared_addr)?;
        Ok(Sim { sock, dialect: handshake.dialect(), handshake, staging, answers: Vec::new(), peer })
    }

    /// Reads what the sim sent; its whole responses.
    fn receive(&mut self) -> Result<Vec<[u8; RESPONSE_SIZE]>> {
        let mut buf = [0u8; 256];
        let n = read(&self.sock, &mut buf).map_err(|e| Error::os("read from gluon-sim", e))?;
        if n == 0 {
            return Err(Error::Closed);
        }
        self.answers.extend_from_slice(&buf[..n]);
        let whole = self.answers.len() / RESPONSE_SIZE * RESPONSE_SIZE;
        Ok(self
            .answers
            .drain(..whole)
            .collect::<Vec<_>>()
            .chunks_exact(RESPONSE_SIZE)
            .map(|c| {
                let mut r = [0u8; RESPONSE_SIZE];
                r.copy_from_slice(c);
                r
            })
            .collect())
    }

    fn send(&self, stream: usize, cmd: &Command) -> Result<()> {
        let out = self
            .dialect
            .encode(stream as u8, cmd)
            .map_err(|_| Error::Sim(format!("cannot encode {cmd:?} in {}", self.dialect.name())))?;
        write(&self.sock, out.as_bytes()).map_err(|e| Error::os("write a frame to gluon-sim", e))?;
        Ok(())
    }

    /// One command and its answer, before the device is declared. A sim
    /// that closes the connection is told apart from one that answers
    /// what the protocol does not: the first died or turned us away, the
    /// second may speak the other handshake.
    fn round_trip(&mut self, cmd: &Command, within: Duration) -> Result<Response> {
        match self.send(0, cmd) {
            Err(Error::Os { source: Errno::PIPE | Errno::CONNRESET, .. }) => return Err(self.closed()),
            other => other?,
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.not_the_protocol(&format!("no answer in {} ms", within.as_millis())));
            }
            let mut fds = [PollFd::new(&self.sock, PollFlags::IN)];
            let ts = Timespec { tv_sec: left.as_secs() as i64, tv_nsec: left.subsec_nanos().into() };
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(Error::os("poll", e)),
            }
            if fds[0].revents().is_empty() {
                continue;
            }
            let got = match self.receive() {
                Ok(got) => got,
                Err(Error::Closed | Error::Os { source: Errno::CONNRESET, .. }) => return Err(self.closed()),
                Err(e) => return Err(e),
            };
            if let Some(raw) = got.first() {
                return Ok(self.dialect.decode_response(raw));
            }
        }
    }

    /// The sim answered, or failed to answer in time, in a way its
    /// protocol does not: the other handshake's sim does either.
    fn not_the_protocol(&self, what: &str) -> Error {
        let (this, other) = (self.handshake.name(), self.handshake.other().name());
        Error::Sim(format!(
            "{what} to the first command after the {this} handshake: it may speak the other one \
             (--handshake {other}; memfd is gluon-sim e554ff7's, pid that of 013add5 and later)"
        ))
    }

    /// The sim closed the connection before answering anything: says
    /// whether its process died (gluon-sim reserves its VRAM when a client
    /// connects, which a machine that does not overcommit refuses) or lives
    /// on and turned this client away.
    fn closed(&self) -> Error {
        let hs = self.handshake.name();
        let Some(pid) = self.peer else {
            return Error::Sim(format!(
                "it closed the connection right after the {hs} handshake, before answering anything: it died \
                 or turned this client away; its own output says which"
            ));
        };
        if exited(pid, Duration::from_secs(1)) {
            Error::Sim(format!(
                "it (pid {pid}) closed the connection right after the {hs} handshake, before answering \
                 anything, and exited: it died at connect; its own output says why. gluon-sim reserves 4 GiB \
                 for its VRAM when a client connects, which fails (\"memory allocation of 4294967296 bytes \
                 failed\") where memory is not overcommitted: run `sysctl vm.overcommit_memory=1` and start \
                 it again"
            ))
        } else {
            Error::Sim(format!(
                "it (pid {pid}) closed the connection right after the {hs} handshake, before answering \
                 anything, and still runs: it serves one client per run (start it again for each bridge), or \
                 it refused the handshake (--handshake {}?); its own output says which",
                self.handshake.other().name()
            ))
        }
    }

    /// Checks that the sim speaks this handshake and reaches our staged
    /// bytes: a word copied into VRAM and back.
    fn probe(&mut self, within: Duration) -> Result<()> {
        let (src, bytes) = self.staging.arena(0, 4).ok_or_else(|| Error::Usage("no staging space".into()))?;
        bytes.copy_from_slice(&PROBE_WORD.to_le_bytes());
        let h2d = Command::Copy { src, dst: PROBE_VRAM, len: 4, dir: CopyDir::HostToDevice };
        let r = self.round_trip(&h2d, within)?;
        let (dst, bytes) = self.staging.arena(1, 4).ok_or_else(|| Error::Usage("no staging space".into()))?;
        bytes.fill(0);
        let d2h = Command::Copy { src: PROBE_VRAM, dst, len: 4, dir: CopyDir::DeviceToHost };
        let r2 = self.round_trip(&d2h, within)?;
        if r.status != 0 || r2.status != 0 || r.stream != 0 || r2.stream != 0 {
            return Err(Error::Sim(format!(
                "answered the handshake's probe copies with {r:?} and {r2:?}: it cannot reach this process's memory"
            )));
        }
        let back = self.staging.staged(1, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if back != Some(PROBE_WORD) {
            return Err(Error::Sim(format!(
                "a word copied through its VRAM came back as {back:x?}, not {PROBE_WORD:#x}: it does not reach \
                 this process's memory (the other handshake, --handshake {}? with pid: another pid namespace, \
                 or ptrace restrictions?)",
                self.handshake.other().name()
            )));
        }
        Ok(())
    }
}

/// Connects to gluon-sim, declares its device and serves it.
pub fn serve(mut control: Control, opts: &SimOptions) -> Result<()> {
    let sock = UnixStream::connect(&opts.socket).map_err(|e| Error::Sim(format!("connect to {}: {e}", opts.socket)))?;
    let arena = ((opts.shared_mib as usize) << 20) / STREAMS;
    let mut sim = Sim::connect(sock, opts.handshake, arena, opts.shared_addr)?;
    let timeout = Duration::from_millis(opts.timeout_ms);
    sim.probe(timeout.min(Duration::from_secs(5)))?;

    let mut decl = declaration("gluon-sim (gluon-bridge)");
    decl.dialect = sim.dialect.id();
    decl.streams = STREAMS as u32;
    decl.stream_depth = 1;
    decl.vram_size = u64::from(opts.vram_mib) << 20;
    decl.cores = opts.shape.cores;
    decl.warps_per_core = opts.shape.warps_per_core;
    decl.threads_per_warp = opts.shape.threads_per_warp;
    // What gluon-sim implements: whole-word KERNEL and MEM COPY, nothing
    // else (013add5's SET and WAIT are not used: Documentation/design/gluon.md
    // says why).
    decl.caps = 0;
    decl.builtins = opts.builtins;
    // Its CPU time is its progress, if asked, where /proc shows it;
    // else it is as fast as it was said to be.
    let mut cpu = None;
    if opts.cpu_progress {
        let pid = sim.peer.ok_or_else(|| Error::Usage("--cpu-progress: the socket names no sim process".into()))?;
        cpu = Some(CpuTime::of(pid).ok_or_else(|| {
            Error::Usage(format!("--cpu-progress: the sim (pid {pid}) is not in this /proc (another pid namespace?)"))
        })?);
        decl.flags |= radiance_uapi::user_declare_flags::REPORTS_PROGRESS;
    }
    decl.bytes_per_s = opts.bytes_per_s;
    decl.threads_per_s = opts.threads_per_s;
    let index = control.declare(&mut decl)?;
    crate::announce(
        index,
        &format!("gluon-sim at {} ({} handshake, {})", opts.socket, opts.handshake.name(), sim.dialect.name()),
    );

    let mut streams: Vec<Stream> = (0..STREAMS).map(|_| Stream::default()).collect();
    let mut retired = Retired::default();
    let mut next = 0;
    loop {
        let holds = streams.iter().any(|s| s.at_sim.is_some());
        let (ctl, readable) = wait(&control, &sim.sock, if holds { PROGRESS_LOOK } else { IDLE_LOOK })?;
        if let Some(moved) = cpu.as_mut().map(CpuTime::advanced).filter(|&t| t > 0) {
            report_progress(&control, sim.dialect, &mut streams, moved);
        }
        if ctl.reset {
            for s in &mut streams {
                s.queue.clear();
                // Its deadline runs from the first reset that gave it up:
                // later resets do not make a sim that keeps it alive.
                if let Some(f) = s.at_sim.as_mut().filter(|f| !f.given_up) {
                    f.given_up = true;
                    f.since = Instant::now();
                }
            }
            // A launch given up may never end, and gluon-sim cannot stop
            // it: its stream is retired, before the reset is acknowledged
            // so that nothing more goes to it, until the sim answers.
            let stuck = streams
                .iter()
                .enumerate()
                .filter(|(_, s)| s.at_sim.as_ref().is_some_and(|f| f.given_up && f.engine == Engine::Kernel))
                .fold(retired.set, |set, (i, _)| set | 1 << i);
            retired.update(&control, stuck)?;
            control.ack_reset()?;
        }
        if ctl.frames {
            for frame in control.read_frames()? {
                let s = usize::from(frame.bytes[0]);
                streams.get_mut(s).ok_or_else(|| Error::Sim(format!("a frame for stream {s}")))?.queue.push_back(frame);
            }
        }
        if readable {
            for raw in sim.receive()? {
                let s = usize::from(sim.dialect.decode_response(&raw).stream);
                answer(&control, &mut streams, &mut sim.staging, sim.dialect, raw)?;
                // The launch it was retired for ended: back in service.
                if retired.has(s) {
                    retired.update(&control, retired.set & !(1 << s))?;
                }
            }
        }
        for (s, stream) in streams.iter().enumerate() {
            // A retired stream's launch may run for ever: no deadline.
            if retired.has(s) {
                continue;
            }
            if let Some(f) = stream.at_sim.as_ref().filter(|f| f.since.elapsed() > timeout) {
                return Err(Error::Sim(if f.given_up {
                    format!(
                        "stream {s} still runs a command the kernel gave up at a reset {} ms ago, and gluon-sim \
                         has no reset: the device is lost (restart gluon-sim and the bridge)",
                        opts.timeout_ms
                    )
                } else {
                    format!("no answer on stream {s}, nor any computing, in {} ms: it died or hangs", opts.timeout_ms)
                }));
            }
        }
        // In turn from `next`, so that no stream waits behind the others.
        for i in 0..STREAMS {
            let s = (next + i) % STREAMS;
            if streams[s].at_sim.is_some() || retired.has(s) {
                continue;
            }
            let Some(frame) = streams[s].queue.front() else { continue };
            let engine = sim.dialect.decode(&frame.bytes).ok().map(|(_, c)| Engine::of(&c));
            if engine.is_some_and(|e| streams.iter().any(|t| t.at_sim.as_ref().is_some_and(|f| f.engine == e))) {
                continue;
            }
            let Some(frame) = streams[s].queue.pop_front() else { continue };
            streams[s].at_sim = send(&control, &mut sim, s, &frame)?;
            next = (s + 1) % STREAMS;
        }
    }
}

/// The sim computed `moved` clock ticks: what it holds moved, and is not
/// dead; what waits here for its engine moved too, unless that engine runs
/// a command the kernel gave up (which may never end).
fn report_progress(control: &Control, dialect: &dyn Dialect, streams: &mut [Stream], moved: u64) {
    let stuck: Vec<Engine> =
        streams.iter().filter_map(|s| s.at_sim.as_ref().filter(|f| f.given_up).map(|f| f.engine)).collect();
    for (s, stream) in streams.iter_mut().enumerate() {
        let waits = stream
            .queue
            .front()
            .and_then(|f| dialect.decode(&f.bytes).ok())
            .is_some_and(|(_, cmd)| !stuck.contains(&Engine::of(&cmd)));
        let holds = match stream.at_sim.as_mut() {
            Some(f) if !f.given_up => {
                f.since = Instant::now();
                true
            }
            Some(_) => false,
            None => waits,
        };
        if holds {
            control.progress(s as u8, moved);
        }
    }
}

/// Whether process `pid` has exited (or is a zombie), waiting up to
/// `within` for it: a process's sockets close while it exits, a moment
/// before /proc says so.
fn exited(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        // The state is the first field after the command's closing paren.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|stat| {
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
        });
        match state.as_deref() {
            None | Some("Z" | "X") => return true,
            Some(_) if Instant::now() >= deadline => return false,
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// The streams retired (USER_RETIRE) because gluon-sim still runs a launch
/// the kernel gave up at a reset.
#[derive(Default)]
struct Retired {
    /// Bit `i`: stream `i`.
    set: u32,
    /// The module cannot retire streams (before ABI 1.14): a given-up
    /// launch that outlives `--timeout-ms` then loses the device.
    unsupported: bool,
}

impl Retired {
    fn has(&self, s: usize) -> bool {
        s < 32 && self.set & (1 << s) != 0
    }

    /// Tells the kernel that `to` is the retired set now, saying so on
    /// stderr. The device is lost when no stream would be left.
    fn update(&mut self, control: &Control, to: u32) -> Result<()> {
        if to == self.set || self.unsupported {
            return Ok(());
        }
        match control.retire(to) {
            Ok(()) => {}
            Err(Errno::NOTTY) => {
                eprintln!("gluon-bridge: this module cannot retire a stream (ABI before 1.14)");
                self.unsupported = true;
                return Ok(());
            }
            Err(Errno::BUSY) => {
                return Err(Error::Sim(
                    "every stream still runs a launch the kernel gave up at a reset, and gluon-sim has no \
                     reset: the device is lost (restart gluon-sim and the bridge)"
                        .into(),
                ))
            }
            Err(e) => return Err(Error::os("USER_RETIRE", e)),
        }
        for s in 0..STREAMS {
            match (self.has(s), to & (1 << s) != 0) {
                (false, true) => eprintln!(
                    "gluon-bridge: stream {s} retired: gluon-sim still runs a launch the kernel gave up at a \
                     reset and cannot stop it; the other streams carry on (launches wait for its kernel engine)"
                ),
                (true, false) => eprintln!("gluon-bridge: stream {s} back in service: its launch ended"),
                _ => {}
            }
        }
        self.set = to;
        Ok(())
    }
}

/// Waits for the control file or the sim, at most `look`.
fn wait(control: &Control, sock: &UnixStream, look: Duration) -> Result<(Ready, bool)> {
    let ctl = control.fd();
    let mut fds = [PollFd::new(&ctl, PollFlags::IN | PollFlags::PRI), PollFd::new(sock, PollFlags::IN)];
    match poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: look.as_nanos() as i64 })) {
        Ok(_) | Err(Errno::INTR) => {}
        Err(e) => return Err(Error::os("poll", e)),
    }
    let sim = fds[1].revents();
    Ok((Ready::from_revents(fds[0].revents()), sim.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR)))
}

/// Stages what a frame needs in stream `s`'s arena, rewrites its host
/// addresses to the arena's, and sends it. A frame that cannot be staged
/// is answered with a DMA error without reaching the sim (None: nothing at
/// the sim).
fn send(control: &Control, sim: &mut Sim, s: usize, frame: &Frame) -> Result<Option<InFlight>> {
    let dialect = sim.dialect;
    let fail = || {
        control
            .respond(&dialect.encode_response(&Response {
                stream: s as u8,
                status: gluon_err::DMA,
                ..Default::default()
            }))
            .map(|()| None)
    };
    let Ok((_, cmd)) = dialect.decode(&frame.bytes) else {
        return fail();
    };
    let mut copy_back = None;
    let staged = match cmd {
        Command::Kernel { host_addr, size, gpu_addr } => {
            let Some((addr, block)) = sim.staging.arena(s, size as usize) else { return fail() };
            if control.read_block(frame.block.as_ref(), host_addr, block).is_err() {
                return fail();
            }
            // gluon-sim prints to its console: no printf ring reaches the host.
            let head = dialect.launch_header_size();
            if let Some(mut launch) = block.get(..head).and_then(|h| dialect.decode_launch(h).ok()) {
                launch.printf_host_addr = 0;
                let _ = dialect.encode_launch(&launch, &mut block[..head]);
            }
            Command::Kernel { host_addr: addr, size, gpu_addr }
        }
        Command::Copy { src, dst, len, dir: CopyDir::HostToDevice } => {
            let Some((addr, bytes)) = sim.staging.arena(s, len as usize) else { return fail() };
            if control.host_read(src, bytes).is_err() {
                return fail();
            }
            Command::Copy { src: addr, dst, len, dir: CopyDir::HostToDevice }
        }
        Command::Copy { src, dst, len, dir: CopyDir::DeviceToHost } => {
            let Some((addr, _)) = sim.staging.arena(s, len as usize) else { return fail() };
            copy_back = Some((dst, len as usize));
            Command::Copy { src, dst: addr, len, dir: CopyDir::DeviceToHost }
        }
        other => other,
    };
    let host = match staged {
        Command::Kernel { host_addr, size, .. } => Some((host_addr, u64::from(size))),
        Command::Copy { src, len, dir: CopyDir::HostToDevice, .. } => Some((src, u64::from(len))),
        Command::Copy { dst, len, dir: CopyDir::DeviceToHost, .. } => Some((dst, u64::from(len))),
        _ => None,
    };
    if host.is_some_and(|(addr, len)| !sim.staging.reaches(s, addr, len)) {
        return fail();
    }
    sim.send(s, &staged)?;
    Ok(Some(InFlight { since: Instant::now(), engine: Engine::of(&staged), copy_back, given_up: false }))
}

/// Passes the sim's answer on, after copying a device-to-host copy's bytes
/// from the arena to where the kernel wanted them; drops the answer to a
/// command the kernel gave up.
fn answer(
    control: &Control,
    streams: &mut [Stream],
    staging: &mut Staging,
    dialect: &dyn Dialect,
    raw: [u8; RESPONSE_SIZE],
) -> Result<()> {
    let r = dialect.decode_response(&raw);
    let s = usize::from(r.stream);
    let stream = streams.get_mut(s).ok_or_else(|| Error::Sim(format!("answered stream {s}, which does not exist")))?;
    let done = stream.at_sim.take().ok_or_else(|| Error::Sim(format!("answered stream {s}, which runs nothing")))?;
    if done.given_up {
        return Ok(());
    }
    let mut raw = raw;
    if let (0, Some((dst, len))) = (r.status, done.copy_back) {
        let back = staging.staged(s, len).map(|b| control.host_write(dst, b));
        if !matches!(back, Some(Ok(()))) {
            raw = dialect.encode_response(&Response { status: gluon_err::DMA, ..r });
        }
    }
    control.respond(&raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_model::{self, SimModelOptions};

    /// A sim-model speaking `served` on a fresh socket, and a bridge's
    /// connection to it after the `spoken` handshake, memfd region at
    /// `shared_addr`.
    fn connect(served: Handshake, spoken: Handshake, shared_addr: u64) -> Result<Sim> {
        let socket = format!("/tmp/gluon-bridge-test-{}-{}-{}.sock", std::process::id(), served.name(), spoken.name());
        let opts = SimModelOptions {
            socket: socket.clone(),
            handshake: served,
            vram_mib: 1,
            latency_ms: 1,
            compute: false,
            drop_busy: false,
            spin: None,
            die_at_connect: false,
        };
        std::thread::spawn(move || sim_model::serve(&opts));
        let sock = loop {
            match UnixStream::connect(&socket) {
                Ok(s) => break s,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        // Connected: the sim-model serves no other client, and the path
        // would outlive the test on whatever path it ends.
        let _ = std::fs::remove_file(&socket);
        Sim::connect(sock, spoken, 4096, shared_addr)
    }

    #[test]
    fn both_handshakes_reach_the_bridge_memory() -> Result<()> {
        for (h, addr) in [(Handshake::Memfd, 0x5000_0000), (Handshake::Pid, 0)] {
            connect(h, h, addr)?.probe(Duration::from_secs(5))?;
        }
        Ok(())
    }

    /// A sim that takes the handshake and closes the connection, but lives
    /// on, is not blamed on the handshake alone: the error says it still
    /// runs and why it may have turned the bridge away.
    #[test]
    fn a_sim_that_closes_after_the_handshake_is_told_apart() -> Result<()> {
        let socket = format!("/tmp/gluon-bridge-test-{}-closes.sock", std::process::id());
        let _ = std::fs::remove_file(&socket);
        let listener = std::os::unix::net::UnixListener::bind(&socket).map_err(|e| Error::Sim(e.to_string()))?;
        let sim = std::thread::spawn(move || {
            let (sock, _) = listener.accept().map_err(|e| Error::Sim(e.to_string()))?;
            crate::handshake::ClientMemory::accept(&sock, Handshake::Pid).map(drop)
        });
        let sock = UnixStream::connect(&socket).map_err(|e| Error::Sim(e.to_string()))?;
        let _ = std::fs::remove_file(&socket);
        let mut bridge = Sim::connect(sock, Handshake::Pid, 4096, 0)?;
        sim.join().map_err(|_| Error::Sim("the sim thread panicked".into()))??;
        let e = bridge.probe(Duration::from_secs(5)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("closed the connection right after the pid handshake"), "{e}");
        assert!(e.contains(&format!("(pid {})", std::process::id())) && e.contains("still runs"), "{e}");
        assert!(!e.contains("overcommit"), "{e}");
        Ok(())
    }

    /// The wrong handshake is an error that names the other one, not a hang.
    #[test]
    fn the_wrong_handshake_is_named() -> Result<()> {
        for (served, spoken, addr) in
            [(Handshake::Pid, Handshake::Memfd, 0x5100_0000), (Handshake::Memfd, Handshake::Pid, 0)]
        {
            let e = connect(served, spoken, addr)?.probe(Duration::from_secs(5)).err().map(|e| e.to_string());
            assert!(
                e.as_deref().is_some_and(|e| e.contains(&format!("--handshake {}", served.name()))),
                "{served:?} sim, {spoken:?} bridge: {e:?}"
            );
        }
        Ok(())
    }
}
