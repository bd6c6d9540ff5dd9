// SPDX-License-Identifier: GPL-2.0 OR MIT

//! A memory link to a Radiance SoC: reads and writes at SoC physical
//! addresses, which is all a Linux host outside the SoC has (Chipyard's
//! TSI / serial-TL, FireSim's TSI bridge). `soc` mode speaks to the SoC only
//! through a [`Link`]:
//! - `model`: the in-repo model of the SoC's address map ([`SocModel`]);
//! - `unix:PATH`: a process serving the link protocol below on a Unix
//!   socket (a simulator, or an adapter in front of a real link).
//!
//! The `unix:` protocol (all integers little-endian): the bridge connects
//! and sends requests one at a time, each answered before the next.
//! - Request, 16 bytes: `op` u8 (0 READ, 1 WRITE), 3 zero bytes, `len` u32,
//!   `addr` u64; a WRITE's `len` data bytes follow.
//! - Reply, 8 bytes: `status` u8 (0 OK, 1 no such address, 2 the access
//!   failed), 3 zero bytes, `len` u32 (bytes that follow: a READ's data
//!   when OK, else 0).
//! - Width: an access of 4 or 8 bytes at a register (below
//!   [`DRAM_BASE`]) is one access of that width, as the SoC's TileLink
//!   slaves need; longer accesses are at most [`MAX_ACCESS`] bytes, inside
//!   GPU DRAM.
//! - A WRITE is answered once it is done (visible to the next READ from any
//!   agent), so that the order the bridge issues is the order the SoC sees.

use crate::{soc_map::Geometry, soc_model::SocModel};
use std::{
    io::{Read, Write},
    os::unix::net::UnixStream,
};

/// Where the SoC's GPU DRAM is in the SoC's physical map: device address 0
/// (radiance-kernels 08b0e8a `lib/include/radiance.h`,
/// `RAD_HOST_GPU_DRAM_BASE`).
pub const DRAM_BASE: u64 = 0x1_0000_0000;

/// The longest access one request carries.
pub const MAX_ACCESS: usize = 64 * 1024;

/// What a link access can end in.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LinkError {
    /// Nothing answers at the address.
    #[error("no such address {0:#x}")]
    Address(u64),
    /// The other end failed the access, broke the protocol or went away.
    #[error("{0}")]
    Failed(String),
}

pub type LinkResult<T> = std::result::Result<T, LinkError>;

/// A memory link.
pub trait Link {
    /// Reads `dst.len()` bytes at `addr`.
    fn read(&mut self, addr: u64, dst: &mut [u8]) -> LinkResult<()>;
    /// Writes `src` at `addr`; done when it returns.
    fn write(&mut self, addr: u64, src: &[u8]) -> LinkResult<()>;

    /// The bytes one access should carry: a long transfer goes a block at
    /// a time, and reports its progress after each.
    fn block(&self) -> usize {
        MAX_ACCESS
    }

    fn read32(&mut self, addr: u64) -> LinkResult<u32> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn write32(&mut self, addr: u64, value: u32) -> LinkResult<()> {
        self.write(addr, &value.to_le_bytes())
    }

    fn read64(&mut self, addr: u64) -> LinkResult<u64> {
        let mut b = [0; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn write64(&mut self, addr: u64, value: u64) -> LinkResult<()> {
        self.write(addr, &value.to_le_bytes())
    }
}

impl<L: Link + ?Sized> Link for Box<L> {
    fn read(&mut self, addr: u64, dst: &mut [u8]) -> LinkResult<()> {
        (**self).read(addr, dst)
    }

    fn write(&mut self, addr: u64, src: &[u8]) -> LinkResult<()> {
        (**self).write(addr, src)
    }

    fn block(&self) -> usize {
        (**self).block()
    }
}

/// Opens the link `spec` names: `model[:hang|:epilogue|:nightly|:print=TEXT]` (a
/// model of a SoC of `geometry`, `SocModel::from_spec`) or `unix:PATH`.
pub fn open(spec: &str, geometry: Geometry) -> LinkResult<Box<dyn Link>> {
    if let Some(path) = spec.strip_prefix("unix:") {
        return Ok(Box::new(UnixLink::connect(path)?));
    }
    if let Some(port) = spec.strip_prefix("tsi:") {
        return Ok(Box::new(crate::tsi::TsiLink::open(port)?));
    }
    let model = spec.strip_prefix("model").and_then(|gpu| SocModel::from_spec(gpu, geometry));
    let unknown = || {
        LinkError::Failed(format!(
            "unknown link {spec}: model[:hang|:epilogue|:nightly|:print=TEXT], unix:PATH or tsi:PATH[,baud=N]"
        ))
    };
    Ok(Box::new(model.ok_or_else(unknown)?))
}

/// The protocol's operations and statuses.
mod wire {
    pub const READ: u8 = 0;
    pub const WRITE: u8 = 1;
    pub const OK: u8 = 0;
    pub const NO_ADDRESS: u8 = 1;
    pub const REQUEST: usize = 16;
    pub const REPLY: usize = 8;
}

/// A link served by another process on a Unix socket.
pub struct UnixLink {
    stream: UnixStream,
}

impl UnixLink {
    pub fn connect(path: &str) -> LinkResult<Self> {
        let stream = UnixStream::connect(path).map_err(|e| LinkError::Failed(format!("connect {path}: {e}")))?;
        Ok(Self { stream })
    }

    /// Sends one request and reads its reply's status and the data that
    /// follows it into `dst`.
    fn request(&mut self, op: u8, addr: u64, len: usize, data: &[u8], dst: &mut [u8]) -> LinkResult<()> {
        if len > MAX_ACCESS {
            return Err(LinkError::Failed(format!("{len} bytes at {addr:#x}: longer than {MAX_ACCESS}")));
        }
        let broken = |e: std::io::Error| LinkError::Failed(format!("the link's server: {e}"));
        let mut head = [0u8; wire::REQUEST];
        head[0] = op;
        head[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        head[8..16].copy_from_slice(&addr.to_le_bytes());
        self.stream.write_all(&head).map_err(broken)?;
        self.stream.write_all(data).map_err(broken)?;
        let mut reply = [0u8; wire::REPLY];
        self.stream.read_exact(&mut reply).map_err(broken)?;
        let follows = u32::from_le_bytes([reply[4], reply[5], reply[6], reply[7]]) as usize;
        match reply[0] {
            wire::OK if follows == dst.len() => self.stream.read_exact(dst).map_err(broken),
            wire::OK => Err(LinkError::Failed(format!("{follows} bytes for a {}-byte read", dst.len()))),
            wire::NO_ADDRESS => Err(LinkError::Address(addr)),
            status => Err(LinkError::Failed(format!("status {status} for {len} bytes at {addr:#x}"))),
        }
    }
}

impl Link for UnixLink {
    fn read(&mut self, addr: u64, dst: &mut [u8]) -> LinkResult<()> {
        self.request(wire::READ, addr, dst.len(), &[], dst)
    }

    fn write(&mut self, addr: u64, src: &[u8]) -> LinkResult<()> {
        self.request(wire::WRITE, addr, src.len(), src, &mut [])
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{soc_map::RESET, soc_model::Event};
    use std::os::unix::net::UnixListener;

    /// Serves the `unix:` protocol over `link` on `stream` until the client
    /// goes away: the other end of [`UnixLink`], as a harness implements it.
    pub(crate) fn serve(mut stream: UnixStream, link: &mut dyn Link) {
        let mut head = [0u8; wire::REQUEST];
        while stream.read_exact(&mut head).is_ok() {
            let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
            let addr = u64::from_le_bytes(head[8..16].try_into().unwrap());
            let mut data = vec![0u8; len];
            let result = match head[0] {
                wire::READ => link.read(addr, &mut data),
                _ => stream.read_exact(&mut data).map_err(|e| LinkError::Failed(e.to_string())).and_then(|()| {
                    let r = link.write(addr, &data);
                    data.clear();
                    r
                }),
            };
            let mut reply = [0u8; wire::REPLY];
            match result {
                Ok(()) => reply[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes()),
                Err(LinkError::Address(_)) => (reply[0], data) = (wire::NO_ADDRESS, Vec::new()),
                Err(LinkError::Failed(_)) => (reply[0], data) = (2, Vec::new()),
            }
            stream.write_all(&reply).unwrap();
            stream.write_all(&data).unwrap();
        }
    }

    fn socket_path(name: &str) -> String {
        format!("{}/gluon-bridge-{name}-{}.sock", std::env::temp_dir().display(), std::process::id())
    }

    #[test]
    fn the_unix_link_carries_reads_writes_and_errors() {
        let path = socket_path("link");
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            let mut model = SocModel::default();
            serve(listener.accept().unwrap().0, &mut model);
            model
        });
        let mut link = open(&format!("unix:{path}"), Geometry::default()).unwrap();
        // Connected: the name is no longer needed, and a failure below leaves none behind.
        std::fs::remove_file(&path).unwrap();
        link.write(DRAM_BASE + 0x100, b"radiance").unwrap();
        let mut back = [0u8; 8];
        link.read(DRAM_BASE + 0x100, &mut back).unwrap();
        assert_eq!(&back, b"radiance");
        link.write32(RESET, 1).unwrap();
        assert_eq!(link.read32(0x4100_0008).unwrap(), 1, "all-finished reads 1 while held in reset");
        assert_eq!(link.read32(0x2000_0000), Err(LinkError::Address(0x2000_0000)));
        assert!(matches!(link.read(DRAM_BASE, &mut vec![0; MAX_ACCESS + 1]), Err(LinkError::Failed(_))));
        drop(link);
        let model = server.join().unwrap();
        assert_eq!(model.events(), &[Event::DramWrite { addr: DRAM_BASE + 0x100, len: 8 }, Event::Hold]);
    }

    #[test]
    fn an_unknown_link_is_refused() {
        let g = Geometry::default();
        assert!(matches!(open("tsi:/nonexistent/ttyUSB0", g), Err(LinkError::Failed(_))));
        assert!(matches!(open("uart:/dev/ttyUSB0", g), Err(LinkError::Failed(_))));
        assert!(matches!(open("model:sing", g), Err(LinkError::Failed(_))));
        assert!(matches!(open("unix:/nonexistent/socket", g), Err(LinkError::Failed(_))));
        assert!(open("model:print=hi", g).is_ok());
    }
}
