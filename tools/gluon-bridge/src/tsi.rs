// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The `tsi:PATH[,baud=N]` link: Chipyard's TSI protocol on a serial port,
//! as a Linux host reaches a Radiance bring-up FPGA over its USB-UART
//! (testchipip's UART-TSI client; the host side of the team is testchipip's
//! `uart_tsi` over fesvr's `tsi_t`).
//!
//! The words, as testchipip c807cad8 `tsi/TSIToTileLink.scala` and
//! `uart/UARTToSerial.scala` parse them: 32-bit words, each sent as 4 bytes
//! least significant first. A request is `cmd` (0 read, 1 write), `addr`
//! (two words, low first) and `len` (two words, low first: the words that
//! follow or come back, minus one); a write's `len + 1` data words follow
//! and nothing comes back; a read returns `len + 1` words. Any other `cmd`
//! loses the target's parser for good. As fesvr does, accesses are whole
//! aligned words and at most [`MAX_REQUEST`] bytes a request.
//!
//! The port is raw 8N1 with no flow control, and the target has no
//! backpressure: a receive queue of 8 entries that drops what overruns it
//! (a sticky flag says so, on the target side only). The parser takes no
//! word while it waits for the bus to acknowledge a write, so a request
//! sent right behind a write could be overrun. Each write is therefore
//! followed by a read, whose answer comes only once the parser is done
//! with the write and has taken the read: the next request never meets a
//! busy parser. That read confirms the write too: of GPU DRAM it reads
//! back the write's last word, which must hold what was written; a
//! register, whose read may mean something else, is fenced by a read of
//! GPU DRAM instead.
//!
//! A target that stops answering, or answers too little, ends in a timeout
//! that names the link and the address; one that answers garbage ends in a
//! read-back mismatch. Either leaves its parser where nobody knows, so the
//! link is done for: the bridge exits and the device is lost.

use crate::link::{Link, LinkError, LinkResult, DRAM_BASE};
use rustix::{
    event::{poll, PollFd, PollFlags},
    fs::{open, Mode, OFlags},
    io::{read, write, Errno},
    termios::{self, ControlModes, InputModes, OptionalActions, SpecialCodeIndex},
    time::Timespec,
};
use std::{
    os::fd::OwnedFd,
    time::{Duration, Instant},
};

/// The bring-up FPGA's UART-TSI rate (Chipyard's `ChipBringupHostConfig`).
pub const DEFAULT_BAUD: u32 = 921_600;

/// Most bytes one request moves, as fesvr's `tsi_t` sends them.
pub const MAX_REQUEST: usize = 1024;

/// The commands of a request.
mod cmd {
    pub const READ: u32 = 0;
    pub const WRITE: u32 = 1;
}

/// Words of a request before its data.
pub const HEADER_WORDS: usize = 5;

/// How long an answer may take beyond its time on the wire.
const SLACK: Duration = Duration::from_secs(1);

/// Words a link sent and received, for the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Words {
    /// Every word, both ways.
    pub all: u64,
    /// Those of the reads that follow writes (see the module's comment).
    pub confirming: u64,
}

/// A TSI target on a serial port.
#[derive(Debug)]
pub struct TsiLink {
    port: OwnedFd,
    /// How the link was named, for errors.
    name: String,
    baud: u32,
    words: Words,
}

impl TsiLink {
    /// Opens `spec`, `PATH[,baud=N]`, raw 8N1 at N baud (default
    /// [`DEFAULT_BAUD`]).
    pub fn open(spec: &str) -> LinkResult<Self> {
        let failed = |what: String| LinkError::Failed(format!("tsi:{spec}: {what}"));
        let (path, options) = spec.split_once(',').unwrap_or((spec, ""));
        let mut baud = DEFAULT_BAUD;
        for option in options.split(',').filter(|o| !o.is_empty()) {
            match option.strip_prefix("baud=").map(str::parse) {
                Some(Ok(n)) if n > 0 => baud = n,
                _ => return Err(failed(format!("{option}: the only option is baud=N"))),
            }
        }
        let port = open(path, OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC | OFlags::NONBLOCK, Mode::empty())
            .map_err(|e| failed(format!("open: {e}")))?;
        let mut t = termios::tcgetattr(&port).map_err(|e| failed(format!("not a serial port: {e}")))?;
        t.make_raw();
        t.control_modes.insert(ControlModes::CLOCAL | ControlModes::CREAD | ControlModes::CS8);
        t.control_modes.remove(ControlModes::CSTOPB | ControlModes::PARENB | ControlModes::CRTSCTS);
        t.input_modes.remove(InputModes::IXON | InputModes::IXOFF | InputModes::IXANY);
        t.special_codes[SpecialCodeIndex::VMIN] = 0;
        t.special_codes[SpecialCodeIndex::VTIME] = 0;
        t.set_speed(baud).map_err(|e| failed(format!("{baud} baud: {e}")))?;
        termios::tcsetattr(&port, OptionalActions::Now, &t).map_err(|e| failed(format!("configure: {e}")))?;
        // Bytes left from before are not answers to this link's requests.
        let _ = termios::tcflush(&port, termios::QueueSelector::IOFlush);
        Ok(Self { port, name: format!("tsi:{path}"), baud, words: Words::default() })
    }

    /// The line's rate.
    pub fn baud(&self) -> u32 {
        self.baud
    }

    /// Words sent and received so far.
    pub fn words(&self) -> Words {
        self.words
    }

    /// How long `words` take on the wire: 10 bits a byte (8N1).
    fn wire_time(&self, words: usize) -> Duration {
        Duration::from_micros(words as u64 * 4 * 10 * 1_000_000 / u64::from(self.baud))
    }

    fn failed(&self, what: String) -> LinkError {
        LinkError::Failed(format!("{}: {what}", self.name))
    }

    /// Sends `words`, each least significant byte first.
    fn send(&mut self, words: &[u32]) -> LinkResult<()> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let deadline = Instant::now() + self.wire_time(words.len()) + SLACK;
        let mut sent = 0;
        while sent < bytes.len() {
            match write(&self.port, &bytes[sent..]) {
                Ok(n) => sent += n,
                Err(Errno::AGAIN) => self.wait(PollFlags::OUT, deadline, || "the port takes no more bytes".into())?,
                Err(Errno::INTR) => {}
                Err(e) => return Err(self.failed(format!("write: {e}"))),
            }
        }
        self.words.all += words.len() as u64;
        Ok(())
    }

    /// Receives `out.len()` words for the read at `addr`.
    fn receive(&mut self, addr: u64, out: &mut [u32]) -> LinkResult<()> {
        let mut bytes = vec![0u8; out.len() * 4];
        let deadline = Instant::now() + self.wire_time(out.len()) + SLACK;
        let mut got = 0;
        while got < bytes.len() {
            match read(&self.port, &mut bytes[got..]) {
                Ok(0) | Err(Errno::AGAIN) => {
                    let (want, have) = (bytes.len(), got);
                    self.wait(PollFlags::IN, deadline, || {
                        format!("no answer reading {want} bytes at {addr:#x} ({have} came): the target stopped")
                    })?
                }
                Ok(n) => got += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(self.failed(format!("read: {e}"))),
            }
        }
        for (w, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        self.words.all += out.len() as u64;
        Ok(())
    }

    /// Waits until the port is ready for `events`, or fails at `deadline`
    /// saying `what`.
    fn wait(&self, events: PollFlags, deadline: Instant, what: impl FnOnce() -> String) -> LinkResult<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.failed(what()));
        }
        let ts = Timespec { tv_sec: left.as_secs() as i64, tv_nsec: left.subsec_nanos().into() };
        let mut fds = [PollFd::new(&self.port, events)];
        match poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(Errno::INTR) => Ok(()),
            Err(e) => Err(self.failed(format!("poll: {e}"))),
        }
    }

    /// A request's header: `cmd`, `addr`, and `words` (at least one).
    fn header(cmd: u32, addr: u64, words: usize) -> [u32; HEADER_WORDS] {
        let len = words as u64 - 1;
        [cmd, addr as u32, (addr >> 32) as u32, len as u32, (len >> 32) as u32]
    }

    /// Reads `out.len()` words (at most a request's) at aligned `addr`.
    fn read_words(&mut self, addr: u64, out: &mut [u32]) -> LinkResult<()> {
        self.send(&Self::header(cmd::READ, addr, out.len()))?;
        self.receive(addr, out)
    }

    /// Writes `words` (at most a request's) at aligned `addr`, then waits
    /// until the target is done with them, confirming what it can (see the
    /// module's comment).
    fn write_words(&mut self, addr: u64, words: &[u32]) -> LinkResult<()> {
        let mut request = Self::header(cmd::WRITE, addr, words.len()).to_vec();
        request.extend_from_slice(words);
        self.send(&request)?;
        let last = addr + 4 * (words.len() as u64 - 1);
        let mut back = [0u32];
        self.words.confirming += HEADER_WORDS as u64 + 1;
        if last >= DRAM_BASE {
            self.read_words(last, &mut back)?;
            let wrote = words[words.len() - 1];
            if back[0] != wrote {
                return Err(self.failed(format!(
                    "the write at {addr:#x} did not land: {last:#x} reads {:#010x}, not {wrote:#010x} (words \
                     dropped, or garbage from the target)",
                    back[0]
                )));
            }
            Ok(())
        } else {
            self.read_words(DRAM_BASE, &mut back)
        }
    }
}

/// The aligned words that cover `[addr, addr + len)`: the first word's
/// address and how many.
fn cover(addr: u64, len: usize) -> (u64, usize) {
    let start = addr & !3;
    let end = (addr + len as u64).next_multiple_of(4);
    (start, ((end - start) / 4) as usize)
}

impl Link for TsiLink {
    fn read(&mut self, addr: u64, dst: &mut [u8]) -> LinkResult<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let (start, n) = cover(addr, dst.len());
        let mut words = vec![0u32; n];
        for (i, chunk) in words.chunks_mut(MAX_REQUEST / 4).enumerate() {
            self.read_words(start + (i * MAX_REQUEST) as u64, chunk)?;
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let skip = (addr - start) as usize;
        dst.copy_from_slice(&bytes[skip..skip + dst.len()]);
        Ok(())
    }

    fn write(&mut self, addr: u64, src: &[u8]) -> LinkResult<()> {
        if src.is_empty() {
            return Ok(());
        }
        let (start, n) = cover(addr, src.len());
        // Whole words only: the bytes around a partial one are read first.
        let mut bytes = vec![0u8; n * 4];
        let skip = (addr - start) as usize;
        if skip != 0 || src.len() % 4 != 0 {
            self.read(start, &mut bytes[..4])?;
            let tail = (n - 1) * 4;
            let mut last = [0u8; 4];
            self.read(start + tail as u64, &mut last)?;
            bytes[tail..].copy_from_slice(&last);
        }
        bytes[skip..skip + src.len()].copy_from_slice(src);
        let words: Vec<u32> = bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        for (i, chunk) in words.chunks(MAX_REQUEST / 4).enumerate() {
            self.write_words(start + (i * MAX_REQUEST) as u64, chunk)?;
        }
        Ok(())
    }

    /// A request's worth: a line at 921600 baud moves it in about 11 ms.
    fn block(&self) -> usize {
        MAX_REQUEST
    }
}

/// Serves the TSI words of a host on a serial port over `link`, as the
/// UART-TSI client of a bring-up FPGA does, for tests without one.
pub mod target {
    use super::{cmd, HEADER_WORDS};
    use crate::link::Link;
    use rustix::{
        event::{poll, PollFd, PollFlags},
        fs::{open, Mode, OFlags},
        io::{read, write, Errno},
        pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags},
        termios::{self, OptionalActions},
    };
    use std::{
        os::fd::{AsFd, OwnedFd},
        time::{Duration, Instant},
    };

    /// A pseudo-terminal pair, raw: its controller end, where the target
    /// serves, and its terminal's path, for `tsi:PATH` (real termios on
    /// both ends). The terminal end is held open too, until the host has
    /// sent its first byte ([`serve`]): a controller whose terminal nobody
    /// holds reads as hung up.
    pub struct Pty {
        pub controller: OwnedFd,
        pub path: String,
        terminal: Option<OwnedFd>,
    }

    /// Opens a [`Pty`].
    pub fn pty() -> rustix::io::Result<Pty> {
        let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
        grantpt(&controller)?;
        unlockpt(&controller)?;
        let path = ptsname(&controller, Vec::new())?.into_string().map_err(|_| Errno::INVAL)?;
        let mut t = termios::tcgetattr(&controller)?;
        t.make_raw();
        termios::tcsetattr(&controller, OptionalActions::Now, &t)?;
        let terminal = open(&path, OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Pty { controller, path, terminal: Some(terminal) })
    }

    /// How the target misbehaves, for the tests of a bad one.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum Fault {
        /// None.
        #[default]
        None,
        /// Answers every read with words of its own.
        Garbage,
        /// Stops answering after this many words were read.
        SilentAfter(u64),
    }

    /// How the target behaves.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Behaviour {
        pub fault: Fault,
        /// Bytes' time the parser takes no byte after a write.
        pub write_busy: usize,
        /// The line's rate: bytes take their time on it (10 bits each),
        /// each way; None: a pty's, none.
        pub baud: Option<u32>,
        /// Print each request on stderr, as it is taken.
        pub log: bool,
    }

    impl Default for Behaviour {
        /// A target whose queue absorbs a write's acknowledgement, on a line
        /// that takes no time.
        fn default() -> Self {
            Self { fault: Fault::None, write_busy: QUEUE_BYTES, baud: None, log: false }
        }
    }

    /// What the target did, for tests.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Served {
        pub reads: u64,
        pub writes: u64,
        /// Bytes that arrived while its queue was full: lost, as the
        /// FPGA's receive queue loses them.
        pub dropped: u64,
    }

    /// The target's receive queue, in bytes: testchipip's `UARTToSerial`
    /// queues the UART's bytes (`nRxEntries`, 8 by default) and drops what
    /// overruns it, with no flow control.
    pub const QUEUE_BYTES: usize = 8;

    /// Serves `pty` until the host closes it, as `how` says. The parser
    /// takes nothing for `write_busy` bytes' time after each write (the
    /// bus acknowledging it): bytes that arrive meanwhile queue, and past
    /// [`QUEUE_BYTES`] are dropped. That time is counted in the bytes that
    /// follow the write, and ends when it has passed on the line (at
    /// [`DEFAULT_BAUD`] on a pty's), so a host that sends a request right
    /// behind a write loses bytes, and one that waits does not. A command
    /// other than read or write loses the parser, as on the FPGA: the
    /// target answers nothing more.
    ///
    /// It serves the first host that sends a byte; one that opens the
    /// terminal and closes it without sending leaves it waiting.
    pub fn serve(mut pty: Pty, link: &mut dyn Link, how: Behaviour) -> Served {
        let Behaviour { fault, write_busy, baud, log } = how;
        // When each direction of the line is free again.
        let (mut rx_free, mut tx_free) = (Instant::now(), Instant::now());
        let port = &pty.controller;
        let mut served = Served::default();
        let mut input: Vec<u8> = Vec::new();
        // Bytes' time left in which the parser acknowledges a write, and
        // the bytes queued meanwhile.
        let (mut busy, mut queued) = (0usize, 0usize);
        let mut busy_until = Instant::now();
        let mut lost = false;
        let mut read_words = 0u64;
        loop {
            let mut fds = [PollFd::new(port, PollFlags::IN)];
            if poll(&mut fds, None).is_err() || fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR) {
                return served;
            }
            let mut buf = [0u8; 4096];
            let n = match read(port, &mut buf) {
                Ok(0) => return served,
                Ok(n) => n,
                Err(Errno::AGAIN | Errno::INTR) => continue,
                // The host closed its end.
                Err(_) => return served,
            };
            // The host holds the terminal now: its going is the end.
            pty.terminal = None;
            // The bytes came over the line: not before their time on it.
            if let Some(baud) = baud {
                rx_free = rx_free.max(Instant::now()) + line_time(baud, n);
                sleep_until(rx_free);
            }
            if Instant::now() >= busy_until {
                busy = 0;
            }
            for &b in &buf[..n] {
                if lost {
                    continue;
                }
                if busy > 0 {
                    busy -= 1;
                    if queued >= QUEUE_BYTES {
                        served.dropped += 1;
                        continue;
                    }
                    queued += 1;
                } else {
                    queued = 0;
                }
                input.push(b);
                let Some(Request { cmd, addr, count, data }) = take_request(&mut input) else { continue };
                if log {
                    log_request(cmd, addr, count, &data);
                }
                if cmd != cmd::READ && cmd != cmd::WRITE {
                    lost = true;
                    continue;
                }
                if cmd == cmd::WRITE {
                    let bytes: Vec<u8> = data.iter().flat_map(|w| w.to_le_bytes()).collect();
                    let _ = link.write(addr, &bytes);
                    served.writes += 1;
                    (busy, queued) = (write_busy, 0);
                    busy_until = Instant::now() + line_time(baud.unwrap_or(super::DEFAULT_BAUD), write_busy);
                    continue;
                }
                let mut bytes = vec![0u8; count * 4];
                if link.read(addr, &mut bytes).is_err() {
                    bytes.fill(0xff);
                }
                if fault == Fault::Garbage {
                    bytes.iter_mut().for_each(|b| *b ^= 0x5a);
                }
                read_words += count as u64;
                if matches!(fault, Fault::SilentAfter(n) if read_words > n) {
                    continue;
                }
                served.reads += 1;
                if let Some(baud) = baud {
                    tx_free = tx_free.max(Instant::now()) + line_time(baud, bytes.len());
                    sleep_until(tx_free);
                }
                if !send_all(port, &bytes) {
                    return served;
                }
            }
        }
    }

    /// Prints a request: its command, address, words and first data words.
    fn log_request(cmd: u32, addr: u64, count: usize, data: &[u32]) {
        let what = match cmd {
            cmd::WRITE => "write".to_string(),
            cmd::READ => "read ".to_string(),
            // The parser is lost: nothing after it is taken.
            _ => format!("command {cmd:#x}, which loses the parser:"),
        };
        let first: Vec<String> = data.iter().take(4).map(|w| format!("{w:08x}")).collect();
        let more = if data.len() > 4 { " ..." } else { "" };
        eprintln!("tsi-target: {what} {addr:#011x} {count:>3} words {}{more}", first.join(" "));
    }

    /// How long `bytes` take on a line of `baud`, 10 bits each (8N1).
    fn line_time(baud: u32, bytes: usize) -> Duration {
        Duration::from_nanos(bytes as u64 * 10 * 1_000_000_000 / u64::from(baud))
    }

    fn sleep_until(t: Instant) {
        let left = t.saturating_duration_since(Instant::now());
        if !left.is_zero() {
            std::thread::sleep(left);
        }
    }

    /// Writes all of `bytes` to `port`; false if it failed.
    fn send_all(port: impl AsFd, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            match write(&port, bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(Errno::AGAIN | Errno::INTR) => {
                    let mut fds = [PollFd::new(&port, PollFlags::OUT)];
                    let _ = poll(&mut fds, None);
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// A whole request.
    struct Request {
        cmd: u32,
        addr: u64,
        /// Words that follow (a write) or go back (a read).
        count: usize,
        data: Vec<u32>,
    }

    /// Takes the request at the front of `input` if it is whole.
    fn take_request(input: &mut Vec<u8>) -> Option<Request> {
        let word = |i: usize| input.get(4 * i..4 * i + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let cmd = word(0)?;
        let (addr_lo, addr_hi, len_lo, len_hi) = (word(1)?, word(2)?, word(3)?, word(4)?);
        let count = (u64::from(len_lo) | u64::from(len_hi) << 32) as usize + 1;
        let data_words = if cmd == cmd::WRITE { count } else { 0 };
        if input.len() < 4 * (HEADER_WORDS + data_words) {
            return None;
        }
        let data = (HEADER_WORDS..HEADER_WORDS + data_words).filter_map(word).collect();
        input.drain(..4 * (HEADER_WORDS + data_words));
        Some(Request { cmd, addr: u64::from(addr_lo) | u64::from(addr_hi) << 32, count, data })
    }
}

#[cfg(test)]
mod tests {
    use super::{
        target::{pty, Behaviour, Fault},
        *,
    };
    use crate::{soc_map::Geometry, soc_model::SocModel};

    /// A target over a SoC model behind a pty, behaving as `how` says; and
    /// the link to it.
    fn linked(how: Behaviour) -> (TsiLink, std::thread::JoinHandle<(target::Served, SocModel)>) {
        let pty = pty().unwrap();
        let link = TsiLink::open(&pty.path).unwrap();
        let served = std::thread::spawn(move || {
            let mut model = SocModel::new(Geometry::default(), Default::default());
            let served = target::serve(pty, &mut model, how);
            (served, model)
        });
        (link, served)
    }

    #[test]
    fn reads_and_writes_land_as_words_at_their_addresses() {
        let (mut link, target) = linked(Behaviour::default());
        // A long write in several requests, unaligned at both ends.
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        link.write(DRAM_BASE + 0x1002, &data).unwrap();
        let mut back = vec![0u8; data.len() + 4];
        link.read(DRAM_BASE + 0x1000, &mut back).unwrap();
        assert_eq!(&back[2..2 + data.len()], &data[..]);
        assert_eq!(&back[..2], &[0, 0], "the bytes before it are kept");
        link.write32(crate::soc_map::RESET, 1).unwrap();
        assert_eq!(link.read32(0x4100_0008).unwrap(), 1, "all-finished reads 1 while held in reset");
        drop(link);
        let (served, _) = target.join().unwrap();
        assert_eq!(served.dropped, 0, "paced: nothing overran the target's queue");
        // Three requests of the long write and the RESET write.
        assert_eq!(served.writes, 4, "{served:?}");
    }

    #[test]
    fn a_host_that_does_not_wait_behind_a_write_loses_words() {
        // The target's side of pacing: a write and a read sent at once,
        // the read's header arriving while the write is acknowledged.
        let pty = pty().unwrap();
        let mut link = TsiLink::open(&pty.path).unwrap();
        let served = std::thread::spawn(move || {
            let mut model = SocModel::new(Geometry::default(), Default::default());
            target::serve(pty, &mut model, Behaviour { write_busy: 64, ..Default::default() })
        });
        let mut burst = TsiLink::header(cmd::WRITE, DRAM_BASE, 1).to_vec();
        burst.push(7);
        for _ in 0..4 {
            burst.extend_from_slice(&TsiLink::header(cmd::READ, DRAM_BASE, 1));
        }
        link.send(&burst).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        drop(link);
        assert!(served.join().unwrap().dropped > 0);
    }

    #[test]
    fn a_host_that_waits_behind_a_write_loses_nothing() {
        // 64 bytes' time at 921600 baud is under a millisecond.
        let (mut link, target) = linked(Behaviour { write_busy: 64, ..Default::default() });
        let mut write = TsiLink::header(cmd::WRITE, DRAM_BASE, 1).to_vec();
        write.push(7);
        link.send(&write).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut back = [0];
        link.read_words(DRAM_BASE, &mut back).unwrap();
        assert_eq!(back, [7]);
        drop(link);
        assert_eq!(target.join().unwrap().0.dropped, 0);
    }

    #[test]
    fn a_command_neither_read_nor_write_loses_the_target_for_good() {
        let (mut link, target) = linked(Behaviour::default());
        link.send(&TsiLink::header(2, DRAM_BASE, 1)).unwrap();
        let mut back = [0];
        let e = link.read_words(DRAM_BASE, &mut back).unwrap_err();
        assert!(e.to_string().contains("no answer"), "{e}");
        drop(link);
        assert_eq!(target.join().unwrap().0.reads, 0);
    }

    #[test]
    fn a_silent_target_times_out_naming_the_link_and_address() {
        let (mut link, _target) = linked(Behaviour { fault: Fault::SilentAfter(4), ..Default::default() });
        let mut b = [0u8; 16];
        link.read(DRAM_BASE, &mut b).unwrap();
        let e = link.read(DRAM_BASE + 0x40, &mut b).unwrap_err().to_string();
        assert!(e.starts_with("tsi:/dev/pts/") && e.contains("at 0x100000040") && e.contains("stopped"), "{e}");
    }

    #[test]
    fn garbage_from_the_target_is_caught_by_the_read_back() {
        let (mut link, _target) = linked(Behaviour { fault: Fault::Garbage, ..Default::default() });
        let e = link.write(DRAM_BASE + 0x10, &[1, 2, 3, 4]).unwrap_err().to_string();
        assert!(e.contains("did not land") && e.contains("0x100000010"), "{e}");
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!(TsiLink::open("/nonexistent/ttyUSB0").unwrap_err().to_string().contains("open"));
        assert!(TsiLink::open("/dev/null").unwrap_err().to_string().contains("not a serial port"));
        let p = pty().unwrap();
        assert!(TsiLink::open(&format!("{},parity=even", p.path)).unwrap_err().to_string().contains("baud=N"));
        assert!(TsiLink::open(&format!("{},baud=115200", p.path)).is_ok());
    }
}
