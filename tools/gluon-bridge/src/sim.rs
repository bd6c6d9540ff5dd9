// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Socket mode: the device is gluon-sim (Sh-Anand/gluon), reached over its
//! Unix socket as ../shared/GLUON.md describes the protocol at e554ff7:
//! the client maps a memfd at an address below 4 GiB and hands it over
//! with that address; host addresses in frames are addresses in that
//! region, where the sim reads and writes host bytes itself. So every host
//! byte a command names is staged there from the kernel's DMA window
//! before the frame goes, and a device-to-host copy's bytes are copied back
//! after its response. gluon-sim takes one command per stream at a time
//! and may die without answering: every command has a deadline, past which
//! the bridge exits, and the kernel removes the device.

use crate::{
    control::{declaration, Control, Ready},
    error::{Error, Result},
};
use radiance_gluon::{sim16::Sim16, Command, CopyDir, Dialect, Response, LAUNCH_HEADER_SIZE, RESPONSE_SIZE};
use radiance_uapi::{self as uapi, gluon_err};
use rustix::{
    event::{poll, PollFd, PollFlags},
    fs::{ftruncate, memfd_create, MemfdFlags},
    io::{read, write, Errno},
    mm::{mmap, MapFlags, ProtFlags},
    net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags},
    time::Timespec,
};
use std::{
    collections::VecDeque,
    io::IoSlice,
    os::{fd::AsFd, unix::net::UnixStream},
    time::{Duration, Instant},
};

/// gluon-sim's streams.
const STREAMS: usize = 4;

/// Where and how to reach gluon-sim.
pub struct SimOptions {
    /// Its `socket_path`.
    pub socket: String,
    /// VRAM to declare: gluon-sim's is a flat 4 GiB.
    pub vram_mib: u32,
    /// The shared region: size and the address below 4 GiB it is mapped at.
    pub shared_mib: u32,
    pub shared_addr: u64,
    /// How long a command may go unanswered before the sim counts as dead.
    pub timeout_ms: u64,
}

/// A command at the sim, and what to do with its answer.
struct InFlight {
    since: Instant,
    /// A device-to-host copy: the DMA address its bytes go to, and how many.
    copy_back: Option<(u64, usize)>,
}

/// One of the sim's streams.
#[derive(Default)]
struct Stream {
    /// Frames from the kernel, not yet sent.
    queue: VecDeque<Vec<u8>>,
    at_sim: Option<InFlight>,
    /// Answers still to come for commands the kernel gave up in a reset:
    /// dropped, not passed on.
    stale: u32,
}

/// The shared region: one staging arena per stream (one command each).
struct Shared {
    base: *mut u8,
    addr: u64,
    arena: usize,
}

impl Shared {
    /// Stream `s`'s arena: its address in the sim's view, and its bytes.
    fn arena(&mut self, s: usize) -> (u64, &mut [u8]) {
        let off = s * self.arena;
        // SAFETY: the region maps STREAMS arenas for the process's lifetime,
        // and only this `&mut self` reaches them; the sim touches an arena
        // only while its stream's command runs, when we do not.
        (self.addr + off as u64, unsafe { std::slice::from_raw_parts_mut(self.base.add(off), self.arena) })
    }
}

/// Connects to gluon-sim, declares its device and serves it.
pub fn serve(mut control: Control, opts: &SimOptions) -> Result<()> {
    let sock = UnixStream::connect(&opts.socket).map_err(|e| Error::Sim(format!("connect to {}: {e}", opts.socket)))?;
    let mut shared = share_memory(&sock, opts)?;

    let mut decl = declaration("gluon-sim (gluon-bridge)");
    decl.dialect = uapi::dialect::GLUON_SIM_16;
    decl.streams = STREAMS as u32;
    decl.stream_depth = 1;
    decl.vram_size = u64::from(opts.vram_mib) << 20;
    // What e554ff7 implements: whole-word KERNEL and MEM COPY, nothing else.
    decl.caps = 0;
    decl.builtins = 0;
    let index = control.declare(&mut decl)?;
    crate::announce(index, &format!("gluon-sim at {}", opts.socket));

    let mut streams: Vec<Stream> = (0..STREAMS).map(|_| Stream::default()).collect();
    let mut answers = Vec::new();
    let timeout = Duration::from_millis(opts.timeout_ms);
    loop {
        let (ctl, sim) = wait(&control, &sock)?;
        if ctl.reset {
            control.ack_reset()?;
            for s in &mut streams {
                s.queue.clear();
                s.stale += u32::from(s.at_sim.take().is_some());
            }
        }
        if ctl.frames {
            for frame in control.read_frames()? {
                let s = usize::from(frame[0]);
                streams.get_mut(s).ok_or_else(|| Error::Sim(format!("a frame for stream {s}")))?.queue.push_back(frame);
            }
        }
        if sim {
            let mut buf = [0u8; 256];
            let n = read(&sock, &mut buf).map_err(|e| Error::os("read from gluon-sim", e))?;
            if n == 0 {
                return Err(Error::Sim("it closed the connection".into()));
            }
            answers.extend_from_slice(&buf[..n]);
            while answers.len() >= RESPONSE_SIZE {
                let mut raw = [0u8; RESPONSE_SIZE];
                raw.copy_from_slice(&answers[..RESPONSE_SIZE]);
                answers.drain(..RESPONSE_SIZE);
                answer(&control, &mut streams, &mut shared, raw)?;
            }
        }
        for (s, stream) in streams.iter_mut().enumerate() {
            if let Some(f) = &stream.at_sim {
                if f.since.elapsed() > timeout {
                    return Err(Error::Sim(format!(
                        "no answer on stream {s} in {} ms: it died or hangs",
                        opts.timeout_ms
                    )));
                }
                continue;
            }
            if stream.stale > 0 {
                continue;
            }
            if let Some(frame) = stream.queue.pop_front() {
                send(&control, &sock, &mut shared, s, stream, &frame)?;
            }
        }
    }
}

/// Maps the shared memfd below 4 GiB and hands it to the sim.
fn share_memory(sock: &UnixStream, opts: &SimOptions) -> Result<Shared> {
    let size = (opts.shared_mib as usize) << 20;
    if opts.shared_addr + size as u64 > 1 << 32 {
        return Err(Error::Usage(
            "the shared region must lie below 4 GiB: gluon-sim-16 frames hold 32-bit host addresses".into(),
        ));
    }
    let fd = memfd_create("gluon-bridge", MemfdFlags::CLOEXEC).map_err(|e| Error::os("memfd_create", e))?;
    ftruncate(&fd, size as u64).map_err(|e| Error::os("size the shared memfd", e))?;
    // SAFETY: a fresh shared mapping of our memfd at an address nothing
    // else uses (NOREPLACE fails rather than replacing a mapping).
    let base = unsafe {
        mmap(
            opts.shared_addr as *mut _,
            size,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED | MapFlags::FIXED_NOREPLACE,
            &fd,
            0,
        )
    }
    .map_err(|e| Error::os(format!("map the shared region at {:#x}", opts.shared_addr), e))?;
    let addr = opts.shared_addr.to_le_bytes();
    let fds = [fd.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    cmsg.push(SendAncillaryMessage::ScmRights(&fds));
    sendmsg(sock, &[IoSlice::new(&addr)], &mut cmsg, SendFlags::empty())
        .map_err(|e| Error::os("hand the memfd to gluon-sim", e))?;
    Ok(Shared { base: base.cast(), addr: opts.shared_addr, arena: size / STREAMS })
}

/// Waits for the control file or the sim, at most 100 ms (deadlines are
/// checked between waits).
fn wait(control: &Control, sock: &UnixStream) -> Result<(Ready, bool)> {
    let ctl = control.fd();
    let mut fds = [PollFd::new(&ctl, PollFlags::IN | PollFlags::PRI), PollFd::new(sock, PollFlags::IN)];
    match poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 100_000_000 })) {
        Ok(_) | Err(Errno::INTR) => {}
        Err(e) => return Err(Error::os("poll", e)),
    }
    let sim = fds[1].revents();
    Ok((Ready::from_revents(fds[0].revents()), sim.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR)))
}

/// Stages what a frame needs in stream `s`'s arena, rewrites its host
/// addresses to the arena's, and sends it. A frame that cannot be staged
/// is answered with a DMA error without reaching the sim.
fn send(
    control: &Control,
    sock: &UnixStream,
    shared: &mut Shared,
    s: usize,
    stream: &mut Stream,
    frame: &[u8],
) -> Result<()> {
    let fail = || {
        control.respond(&Sim16.encode_response(&Response {
            stream: s as u8,
            status: gluon_err::DMA,
            ..Default::default()
        }))
    };
    let Ok((_, cmd)) = Sim16.decode(frame) else {
        return fail();
    };
    let (arena_addr, arena) = shared.arena(s);
    let mut copy_back = None;
    let staged = match cmd {
        Command::Kernel { host_addr, size, gpu_addr } => {
            let Some(block) = arena.get_mut(..size as usize) else { return fail() };
            if control.host_read(host_addr, block).is_err() {
                return fail();
            }
            // gluon-sim prints to its console: no printf ring reaches the host.
            let head = Sim16.launch_header_size().min(LAUNCH_HEADER_SIZE);
            if let Ok(mut launch) = Sim16.decode_launch(&block[..head]) {
                launch.printf_host_addr = 0;
                let _ = Sim16.encode_launch(&launch, &mut block[..head]);
            }
            Command::Kernel { host_addr: arena_addr, size, gpu_addr }
        }
        Command::Copy { src, dst, len, dir: CopyDir::HostToDevice } => {
            let Some(bytes) = arena.get_mut(..len as usize) else { return fail() };
            if control.host_read(src, bytes).is_err() {
                return fail();
            }
            Command::Copy { src: arena_addr, dst, len, dir: CopyDir::HostToDevice }
        }
        Command::Copy { src, dst, len, dir: CopyDir::DeviceToHost } => {
            if len as usize > arena.len() {
                return fail();
            }
            copy_back = Some((dst, len as usize));
            Command::Copy { src, dst: arena_addr, len, dir: CopyDir::DeviceToHost }
        }
        other => other,
    };
    let out = Sim16.encode(s as u8, &staged).map_err(|_| Error::Sim(format!("cannot re-encode {staged:?}")))?;
    write(sock, out.as_bytes()).map_err(|e| Error::os("write a frame to gluon-sim", e))?;
    stream.at_sim = Some(InFlight { since: Instant::now(), copy_back });
    Ok(())
}

/// Passes the sim's answer on, after copying a device-to-host copy's bytes
/// from the arena to where the kernel wanted them.
fn answer(control: &Control, streams: &mut [Stream], shared: &mut Shared, raw: [u8; RESPONSE_SIZE]) -> Result<()> {
    let r = Sim16.decode_response(&raw);
    let s = usize::from(r.stream);
    let stream = streams.get_mut(s).ok_or_else(|| Error::Sim(format!("answered stream {s}, which does not exist")))?;
    if stream.stale > 0 {
        stream.stale -= 1;
        return Ok(());
    }
    let done = stream.at_sim.take().ok_or_else(|| Error::Sim(format!("answered stream {s}, which runs nothing")))?;
    let mut raw = raw;
    if let (0, Some((dst, len))) = (r.status, done.copy_back) {
        let (_, arena) = shared.arena(s);
        if control.host_write(dst, &arena[..len]).is_err() {
            raw = Sim16.encode_response(&Response { status: gluon_err::DMA, ..r });
        }
    }
    control.respond(&raw)
}
