// SPDX-License-Identifier: GPL-2.0 OR MIT

//! gluon-sim's two handshakes, both sides of each, and where each lets a
//! client put the host bytes its frames name.
//!
//! - `memfd` (gluon-sim e554ff7, 16-byte frames): the client's first
//!   message is the u64 address at which it mapped a memfd, with the memfd
//!   as SCM_RIGHTS; host addresses in frames lie in that region, which the
//!   sim maps too (e554ff7 `main.rs` `recv_memfd`).
//! - `pid` (gluon-sim 013add5 and later, 24-byte frames): the first message
//!   is `{host_pid: i32, driver_pid: i32}`; host addresses in frames are the
//!   client's own virtual addresses, which the sim reads and writes with
//!   `process_vm_readv`/`writev` on those pids (013add5 `main.rs` `main`,
//!   `glug.rs` "Service DMA requests"), so they must stay valid until the
//!   response. A failed access there is silent: the sim DMAs zeros. A
//!   kernel without CONFIG_CROSS_MEMORY_ATTACH has no `process_vm_readv`
//!   (ENOSYS): both sides refuse the handshake there, saying so.

use crate::error::{Error, Result};
use radiance_gluon::{gluon24::Gluon24, sim16::Sim16, Dialect};
use rustix::{
    fs::{fstat, ftruncate, memfd_create, MemfdFlags},
    io::{read, write, Errno},
    mm::{mmap, MapFlags, ProtFlags},
    net::{
        recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
        SendAncillaryMessage, SendFlags,
    },
    process::{getpid, set_ptracer, PTracer},
};
use std::{
    cell::Cell,
    io::{IoSlice, IoSliceMut},
    os::{fd::AsFd, unix::net::UnixStream},
};

/// Which gluon-sim protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Handshake {
    /// gluon-sim e554ff7: a shared memfd region, 16-byte frames.
    Memfd,
    /// gluon-sim 013add5 and later: the client's pid, 24-byte frames.
    Pid,
}

impl Handshake {
    /// The frames the gluon-sim versions with this handshake speak.
    pub fn dialect(self) -> &'static dyn Dialect {
        match self {
            Handshake::Memfd => &Sim16,
            Handshake::Pid => &Gluon24,
        }
    }

    /// Its flag value, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Handshake::Memfd => "memfd",
            Handshake::Pid => "pid",
        }
    }

    /// The other one.
    pub fn other(self) -> Self {
        match self {
            Handshake::Memfd => Handshake::Pid,
            Handshake::Pid => Handshake::Memfd,
        }
    }
}

/// Where a client stages the host bytes of its streams' commands, one arena
/// per stream (a stream has one command at the sim at a time).
pub enum Staging {
    /// `memfd`: arenas in the region shared with the sim.
    Shared { base: *mut u8, addr: u64, arena: usize },
    /// `pid`: buffers of this process, addressed by their own pointers.
    Own { arenas: Vec<Vec<u8>>, arena: usize },
}

impl Staging {
    /// Stream `s`'s arena, `len` bytes of it: the address a frame gives the
    /// sim, and the bytes. None if `len` exceeds an arena. Only while the
    /// stream has nothing at the sim: an `Own` arena may move.
    pub fn arena(&mut self, s: usize, len: usize) -> Option<(u64, &mut [u8])> {
        match self {
            Staging::Shared { base, addr, arena } => {
                if len > *arena {
                    return None;
                }
                let off = s * *arena;
                // SAFETY: the region maps an arena per stream for the
                // process's lifetime, and only this `&mut self` reaches it;
                // the sim touches an arena only while its stream's command
                // runs, when we do not.
                let bytes = unsafe { std::slice::from_raw_parts_mut(base.add(off), len) };
                Some((*addr + off as u64, bytes))
            }
            Staging::Own { arenas, arena } => {
                if len > *arena {
                    return None;
                }
                let buf = arenas.get_mut(s)?;
                buf.resize(len, 0);
                Some((buf.as_ptr() as u64, buf.as_mut_slice()))
            }
        }
    }

    /// Whether `[addr, addr + len)` lies in stream `s`'s arena as staged
    /// now. gluon-sim 013add5 ignores a failed `process_vm_readv`/`writev`
    /// (it moves zeros in, nothing out, and answers OK), so no frame may
    /// name host bytes outside what the bridge staged for it.
    pub fn reaches(&self, s: usize, addr: u64, len: u64) -> bool {
        let (start, size) = match self {
            Staging::Shared { addr, arena, .. } => (*addr + (s * *arena) as u64, *arena as u64),
            Staging::Own { arenas, .. } => match arenas.get(s) {
                Some(buf) => (buf.as_ptr() as u64, buf.len() as u64),
                None => return false,
            },
        };
        addr >= start && addr.checked_add(len).is_some_and(|end| end <= start + size)
    }

    /// The first `len` bytes of stream `s`'s arena as the sim left them.
    pub fn staged(&mut self, s: usize, len: usize) -> Option<&[u8]> {
        match self {
            Staging::Shared { .. } => self.arena(s, len).map(|(_, b)| &*b),
            Staging::Own { arenas, .. } => arenas.get(s)?.get(..len),
        }
    }
}

/// The client's side: says who it is to the sim, and returns where to stage
/// host bytes for `streams` streams of `arena` bytes each. `memfd` maps the
/// region at `shared_addr`, below 4 GiB (16-byte frames hold 32-bit
/// addresses).
pub fn connect(
    sock: &UnixStream,
    handshake: Handshake,
    streams: usize,
    arena: usize,
    shared_addr: u64,
) -> Result<Staging> {
    match handshake {
        Handshake::Memfd => share_memory(sock, streams, arena, shared_addr),
        Handshake::Pid => {
            cross_memory_attach()?;
            // Yama's ptrace_scope 1 lets only ancestors read a process's
            // memory unless it names a tracer: the sim is no ancestor.
            // EINVAL: no Yama, nothing to allow.
            match set_ptracer(PTracer::Any) {
                Ok(()) | Err(Errno::INVAL) => {}
                Err(e) => return Err(Error::os("let gluon-sim read this process (PR_SET_PTRACER)", e)),
            }
            let pid = getpid().as_raw_nonzero().get();
            let mut hello = [0u8; 8];
            hello[..4].copy_from_slice(&pid.to_le_bytes());
            hello[4..].copy_from_slice(&pid.to_le_bytes());
            write(sock, &hello).map_err(|e| Error::os("send gluon-sim our pid", e))?;
            Ok(Staging::Own { arenas: (0..streams).map(|_| Vec::new()).collect(), arena })
        }
    }
}

/// Whether this kernel has `process_vm_readv` (CONFIG_CROSS_MEMORY_ATTACH),
/// which the pid handshake's sim reads its client with: an error saying so
/// if not, rather than a sim that DMAs zeros.
fn cross_memory_attach() -> Result<()> {
    // Nothing to move: only whether the system call exists.
    // SAFETY: no iovecs (null, count 0), so no memory is touched.
    let n =
        unsafe { libc::process_vm_readv(getpid().as_raw_nonzero().get(), std::ptr::null(), 0, std::ptr::null(), 0, 0) };
    match Errno::from_io_error(&std::io::Error::last_os_error()) {
        Some(Errno::NOSYS) if n < 0 => Err(Error::Sim(
            "this kernel has no process_vm_readv (CONFIG_CROSS_MEMORY_ATTACH is off), through which gluon-sim's pid \
             handshake reaches its client: use a kernel with it, or gluon-sim e554ff7 and --handshake memfd"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// Maps a memfd of `streams` arenas at `shared_addr` and hands it to the sim.
fn share_memory(sock: &UnixStream, streams: usize, arena: usize, shared_addr: u64) -> Result<Staging> {
    let size = streams * arena;
    if shared_addr + size as u64 > 1 << 32 {
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
            shared_addr as *mut _,
            size,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED | MapFlags::FIXED_NOREPLACE,
            &fd,
            0,
        )
    }
    .map_err(|e| Error::os(format!("map the shared region at {shared_addr:#x}"), e))?;
    let addr = shared_addr.to_le_bytes();
    let fds = [fd.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    cmsg.push(SendAncillaryMessage::ScmRights(&fds));
    sendmsg(sock, &[IoSlice::new(&addr)], &mut cmsg, SendFlags::empty())
        .map_err(|e| Error::os("hand the memfd to gluon-sim", e))?;
    Ok(Staging::Shared { base: base.cast(), addr: shared_addr, arena })
}

/// The sim's view of its client's memory, as the sim-model serves it.
pub enum ClientMemory {
    /// `memfd`: the client's region, mapped here; `addr` is where the
    /// client mapped it (the addresses its frames use).
    Mapped { base: *mut u8, addr: u64, len: usize },
    /// `pid`: the client's `{host_pid, driver_pid}`, read and written with
    /// `process_vm_readv`/`writev` as gluon-sim 013add5 does (reads from
    /// `driver_pid`, writes to `host_pid`: the bridge sends its own pid as
    /// both), and the bytes moved so, for the counts printed at the end.
    Pid { host_pid: i32, driver_pid: i32, moved: Cell<u64> },
}

impl ClientMemory {
    /// The sim's side of the handshake, on an accepted connection.
    pub fn accept(sock: &UnixStream, handshake: Handshake) -> Result<Self> {
        let mut hello = [0u8; 8];
        match handshake {
            Handshake::Memfd => {
                let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
                let mut cmsg = RecvAncillaryBuffer::new(&mut space);
                let got = recvmsg(sock, &mut [IoSliceMut::new(&mut hello)], &mut cmsg, RecvFlags::CMSG_CLOEXEC)
                    .map_err(|e| Error::os("receive the client's memfd", e))?;
                let fd = cmsg
                    .drain()
                    .find_map(|m| match m {
                        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
                        _ => None,
                    })
                    .filter(|_| got.bytes == hello.len())
                    .ok_or_else(|| Error::Sim("the client sent no memfd (the pid handshake?)".into()))?;
                let len = fstat(&fd).map_err(|e| Error::os("size the client's memfd", e))?.st_size as usize;
                // SAFETY: a fresh shared mapping of the client's memfd where
                // the kernel chooses; nothing else here refers to it.
                let base = unsafe {
                    mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &fd, 0)
                }
                .map_err(|e| Error::os("map the client's memfd", e))?;
                Ok(ClientMemory::Mapped { base: base.cast(), addr: u64::from_le_bytes(hello), len })
            }
            Handshake::Pid => {
                let mut got = 0;
                while got < hello.len() {
                    match read(sock, &mut hello[got..]) {
                        Ok(0) => return Err(Error::Sim("the client left during the handshake".into())),
                        Ok(n) => got += n,
                        Err(e) => return Err(Error::os("read the client's pid", e)),
                    }
                }
                cross_memory_attach()?;
                let host_pid = i32::from_le_bytes([hello[0], hello[1], hello[2], hello[3]]);
                let driver_pid = i32::from_le_bytes([hello[4], hello[5], hello[6], hello[7]]);
                Ok(ClientMemory::Pid { host_pid, driver_pid, moved: Cell::new(0) })
            }
        }
    }

    /// Bytes moved with `process_vm_readv`/`writev` so far (None: memfd).
    pub fn moved_by_pid(&self) -> Option<u64> {
        match self {
            ClientMemory::Mapped { .. } => None,
            ClientMemory::Pid { moved, .. } => Some(moved.get()),
        }
    }

    /// The mapped bytes at client address `addr`, `len` of them.
    fn mapped(&self, at: u64, n: usize) -> Option<*mut u8> {
        let ClientMemory::Mapped { base, addr, len } = self else { return None };
        let off = usize::try_from(at.checked_sub(*addr)?).ok()?;
        (off.checked_add(n)? <= *len).then(|| base.wrapping_add(off))
    }

    /// Reads the client's memory at `addr` into `dst`.
    pub fn read(&self, addr: u64, dst: &mut [u8]) -> bool {
        match self {
            ClientMemory::Mapped { .. } => self.mapped(addr, dst.len()).is_some_and(|p| {
                // SAFETY: `mapped` checked that the range lies in our
                // mapping of the region, which lives as long as `self`.
                dst.copy_from_slice(unsafe { std::slice::from_raw_parts(p, dst.len()) });
                true
            }),
            ClientMemory::Pid { driver_pid, moved, .. } => {
                let local = libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: dst.len() };
                let remote = libc::iovec { iov_base: addr as usize as *mut _, iov_len: dst.len() };
                // SAFETY: `local` is `dst`, writable for its length; the
                // kernel checks `remote` against the other process.
                let n = unsafe { libc::process_vm_readv(*driver_pid, &local, 1, &remote, 1, 0) };
                moved.set(moved.get() + n.max(0) as u64);
                n == dst.len() as isize
            }
        }
    }

    /// Writes `src` into the client's memory at `addr`.
    pub fn write(&self, addr: u64, src: &[u8]) -> bool {
        match self {
            ClientMemory::Mapped { .. } => self.mapped(addr, src.len()).is_some_and(|p| {
                // SAFETY: as in `read`; the client does not touch a range
                // while a command it named runs.
                unsafe { std::slice::from_raw_parts_mut(p, src.len()) }.copy_from_slice(src);
                true
            }),
            ClientMemory::Pid { host_pid, moved, .. } => {
                let local = libc::iovec { iov_base: src.as_ptr() as *mut _, iov_len: src.len() };
                let remote = libc::iovec { iov_base: addr as usize as *mut _, iov_len: src.len() };
                // SAFETY: `local` is `src`, readable for its length (the
                // kernel only reads it); the kernel checks `remote`.
                let n = unsafe { libc::process_vm_writev(*host_pid, &local, 1, &remote, 1, 0) };
                moved.set(moved.get() + n.max(0) as u64);
                n == src.len() as isize
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sim's side reaches the client's staged bytes through the system
    /// calls gluon-sim uses, and counts what it moved through them.
    #[test]
    fn the_pid_handshake_moves_bytes_by_process_vm_readv_and_writev() -> Result<()> {
        let (client, sim) = UnixStream::pair().map_err(|e| Error::Sim(format!("socketpair: {e}")))?;
        let mut staging = connect(&client, Handshake::Pid, 2, 64, 0)?;
        let mem = ClientMemory::accept(&sim, Handshake::Pid)?;
        let (addr, bytes) = staging.arena(1, 4).ok_or_else(|| Error::Usage("no arena".into()))?;
        bytes.copy_from_slice(b"glu!");
        let mut read = [0u8; 4];
        assert!(mem.read(addr, &mut read));
        assert_eq!(&read, b"glu!");
        assert!(mem.write(addr, b"back"));
        assert_eq!(staging.staged(1, 4), Some(&b"back"[..]));
        assert_eq!(mem.moved_by_pid(), Some(8));
        // An address the client does not map: refused, nothing moved.
        assert!(!mem.read(8, &mut read));
        assert_eq!(mem.moved_by_pid(), Some(8));
        Ok(())
    }

    /// Only what a stream staged is a host address its frame may name.
    #[test]
    fn a_frame_reaches_only_its_own_staged_bytes() -> Result<()> {
        let (client, _sim) = UnixStream::pair().map_err(|e| Error::Sim(format!("socketpair: {e}")))?;
        let mut staging = connect(&client, Handshake::Pid, 2, 64, 0)?;
        let (addr, _) = staging.arena(1, 16).ok_or_else(|| Error::Usage("no arena".into()))?;
        assert!(staging.reaches(1, addr, 16) && staging.reaches(1, addr + 4, 12));
        assert!(!staging.reaches(1, addr, 17), "past what was staged");
        assert!(!staging.reaches(1, addr - 1, 4), "before it");
        assert!(!staging.reaches(0, addr, 4), "another stream's arena");
        assert!(!staging.reaches(2, addr, 4), "no such stream");
        assert!(!staging.reaches(1, u64::MAX, 2), "wrapping");
        Ok(())
    }
}
