// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Muon executables: ELF32 images linked at fixed device addresses (as
//! Cyclotron's ISA tests are, at 0x10000000), parsed with the `object`
//! crate. The device parses no ELF: a loader puts the `PT_LOAD` segments in
//! VRAM at their link addresses ([`crate::node::Device::load`]), and a
//! launch names PCs inside them: the entry point as the start code, a symbol
//! as the kernel.

use crate::{Error, Result};
use object::{
    elf,
    read::elf::{ElfFile32, FileHeader, ProgramHeader},
    Endianness, Object, ObjectSymbol,
};

/// A loadable segment: `data` at device address `addr`, then zeros up to
/// `mem_size` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub addr: u32,
    pub data: Vec<u8>,
    pub mem_size: u32,
}

/// A parsed executable.
#[derive(Clone, Debug)]
pub struct Executable {
    entry: u32,
    segments: Vec<Segment>,
    symbols: Vec<(String, u32)>,
}

fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidArgument(why.into())
}

impl Executable {
    /// Parses a little-endian ELF32 image, or the GPU half of a fused SoC
    /// image (an RV64 ELF, `soc_elf.rs`); `InvalidArgument` for anything
    /// else, or one without a loadable segment.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        if crate::soc_elf::is_elf64(bytes) {
            return crate::soc_elf::parse(bytes);
        }
        let file = ElfFile32::<Endianness>::parse(bytes).map_err(|e| invalid(format!("not an ELF32 image: {e}")))?;
        let endian = file.endian();
        if endian != Endianness::Little {
            return Err(invalid("a big-endian ELF image (Muon is little-endian)"));
        }
        let mut segments = Vec::new();
        for ph in file.elf_program_headers() {
            if ph.p_type(endian) != elf::PT_LOAD || ph.p_memsz(endian) == 0 {
                continue;
            }
            let data = ph.data(endian, bytes).map_err(|_| invalid("a segment outside the file"))?;
            let (addr, mem_size) = (ph.p_vaddr(endian), ph.p_memsz(endian));
            if (data.len() as u64) > u64::from(mem_size) || addr.checked_add(mem_size).is_none() {
                return Err(invalid(format!("a segment at {addr:#x} that does not fit 32-bit addresses")));
            }
            segments.push(Segment { addr, data: data.to_vec(), mem_size });
        }
        let symbols = file
            .symbols()
            .filter_map(|s| Some((s.name().ok()?.to_owned(), u32::try_from(s.address()).ok()?)))
            .filter(|(name, _)| !name.is_empty())
            .collect();
        Self::new(file.elf_header().e_entry(endian), segments, symbols)
    }

    /// An executable of `segments` (in any order) starting at `entry`, for
    /// a loader that found them in another container (a fused SoC image);
    /// `InvalidArgument` when there are none or they overlap.
    pub(crate) fn new(entry: u32, mut segments: Vec<Segment>, symbols: Vec<(String, u32)>) -> Result<Self> {
        if segments.is_empty() {
            return Err(invalid("no loadable segment"));
        }
        segments.sort_by_key(|s| s.addr);
        if segments.windows(2).any(|w| w[0].addr + w[0].mem_size > w[1].addr) {
            return Err(invalid("overlapping segments"));
        }
        Ok(Self { entry, segments, symbols })
    }

    /// The entry point: where warps start.
    pub fn entry(&self) -> u32 {
        self.entry
    }

    /// The loadable segments, by address.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The address of symbol `name`.
    pub fn symbol(&self, name: &str) -> Option<u32> {
        self.symbols.iter().find(|(n, _)| n == name).map(|&(_, addr)| addr)
    }

    /// `[first, end)`: the device addresses the segments span.
    pub fn span(&self) -> (u32, u32) {
        let first = self.segments.first().map_or(0, |s| s.addr);
        let end = self.segments.last().map_or(0, |s| s.addr + s.mem_size);
        (first, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF32 image: one PT_LOAD of `data` (plus `bss` zeros) at
    /// `addr`, entry `entry`, no sections.
    fn image(addr: u32, entry: u32, data: &[u8], bss: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let h16 = |b: &mut Vec<u8>, v: u16| b.extend_from_slice(&v.to_le_bytes());
        let h32 = |b: &mut Vec<u8>, v: u32| b.extend_from_slice(&v.to_le_bytes());
        h16(&mut b, 2); // ET_EXEC
        h16(&mut b, 243); // EM_RISCV
        h32(&mut b, 1);
        h32(&mut b, entry);
        h32(&mut b, 52); // e_phoff
        h32(&mut b, 0); // e_shoff
        h32(&mut b, 0); // e_flags
        h16(&mut b, 52);
        h16(&mut b, 32);
        h16(&mut b, 1);
        h16(&mut b, 40);
        h16(&mut b, 0);
        h16(&mut b, 0);
        for v in [1, 84, addr, addr, data.len() as u32, data.len() as u32 + bss, 5, 4] {
            h32(&mut b, v);
        }
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn segments_entry_and_span() {
        let exe = Executable::parse(&image(0x1000_0000, 0x1000_0004, &[1, 2, 3, 4, 5, 6, 7, 8], 8)).unwrap();
        assert_eq!(exe.entry(), 0x1000_0004);
        assert_eq!(exe.segments(), &[Segment { addr: 0x1000_0000, data: vec![1, 2, 3, 4, 5, 6, 7, 8], mem_size: 16 }]);
        assert_eq!(exe.span(), (0x1000_0000, 0x1000_0010));
        assert_eq!(exe.symbol("main"), None);
    }

    #[test]
    fn what_is_not_a_muon_executable_is_refused() {
        let bad = |bytes: &[u8]| matches!(Executable::parse(bytes), Err(Error::InvalidArgument(_)));
        assert!(bad(b"not an elf"));
        let mut big_endian = image(0x1000, 0x1000, &[0; 4], 0);
        big_endian[5] = 2;
        assert!(bad(&big_endian));
        // No loadable segment.
        let mut no_load = image(0x1000, 0x1000, &[0; 4], 0);
        no_load[52] = 6; // PT_PHDR
        assert!(bad(&no_load));
        // A segment running past 4 GiB.
        assert!(bad(&image(0xffff_fff0, 0, &[0; 4], 32)));
    }
}
