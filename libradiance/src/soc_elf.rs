// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Fused SoC images (`.soc.elf`): the RV64 ELF a Radiance SoC's host runs,
//! with the GPU's RV32 image relinked inside it at +0x1_0000_0000, where
//! the SoC's host sees GPU DRAM (radiance-kernels
//! `soc/fuse_rv32_into_rv64.sh`). The GPU image is the sections in
//! [0x1_0000_0000, 0x2_0000_0000), loaded at their address minus
//! 0x1_0000_0000, as Cyclotron's loader does (hansungk/cyclotron 356fa57
//! `src/sim/flat_mem.rs`, `copy_elf`); the host's half is not the device's
//! business. Warps start at 0x1000_0000, where the GPU half is linked
//! (radiance-kernels 9e162f1 `lib/linker/mu_link.ld`).

use crate::{executable::Segment, Error, Executable, Result};
use object::{
    elf,
    read::elf::{ElfFile64, FileHeader, SectionHeader},
    Endianness, Object, ObjectSymbol,
};

/// Where the SoC's host sees GPU DRAM: device address 0.
const GPU_BASE: u64 = 0x1_0000_0000;
/// The end of the window a fused image's GPU sections lie in.
const GPU_END: u64 = 0x2_0000_0000;
/// The ELF identification byte that says 32 or 64 bits.
const EI_CLASS: usize = 4;
/// Where Muon warp 0 starts.
const START_PC: u32 = 0x1000_0000;

fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidArgument(why.into())
}

/// Whether `bytes` is a 64-bit ELF: a fused SoC image, not a Muon ELF32.
pub(crate) fn is_elf64(bytes: &[u8]) -> bool {
    bytes.get(EI_CLASS) == Some(&elf::ELFCLASS64)
}

/// The GPU half of the fused SoC image in `bytes`.
pub(crate) fn parse(bytes: &[u8]) -> Result<Executable> {
    let file = ElfFile64::<Endianness>::parse(bytes).map_err(|e| invalid(format!("not an ELF64 image: {e}")))?;
    gpu_half(&file, bytes)
}

/// The sections of `file` in the GPU window, as segments at their device
/// addresses (NOBITS ones as zeros, which the loader then writes: a SoC's
/// DRAM is not cleared between images).
fn gpu_half(file: &ElfFile64<'_, Endianness>, bytes: &[u8]) -> Result<Executable> {
    let endian = file.endian();
    let mut segments = Vec::new();
    let sections = file.elf_header().sections(endian, bytes).map_err(|e| invalid(format!("sections: {e}")))?;
    for s in sections.iter() {
        let (addr, size) = (s.sh_addr(endian), s.sh_size(endian));
        let alloc = s.sh_flags(endian) & u64::from(elf::SHF_ALLOC) != 0;
        if !alloc || size == 0 || addr < GPU_BASE || addr.saturating_add(size) > GPU_END {
            continue;
        }
        let data = match s.sh_type(endian) {
            elf::SHT_NOBITS => vec![0; size as usize],
            _ => {
                s.data(endian, bytes).map_err(|_| invalid(format!("a section at {addr:#x} outside the file")))?.to_vec()
            }
        };
        let addr = u32::try_from(addr - GPU_BASE).map_err(|_| invalid(format!("a section at {addr:#x}")))?;
        let mem_size = u32::try_from(size).map_err(|_| invalid(format!("a section of {size} bytes")))?;
        segments.push(Segment { addr, data, mem_size });
    }
    if segments.is_empty() {
        return Err(invalid(format!(
            "an ELF64 with no GPU image in [{GPU_BASE:#x}, {GPU_END:#x}): not a fused .soc.elf"
        )));
    }
    let symbols = file
        .symbols()
        .filter(|s| (GPU_BASE..GPU_END).contains(&s.address()))
        .filter_map(|s| Some((s.name().ok()?.to_owned(), u32::try_from(s.address() - GPU_BASE).ok()?)))
        .filter(|(name, _)| !name.is_empty())
        .collect();
    Executable::new(START_PC, segments, symbols)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fused image: an RV64 ELF with `sections` (name, address, type,
    /// bytes; NOBITS ones by length) and one symbol `mark` at 0x1_1000_0010.
    fn fused(sections: &[(&str, u64, u32, &[u8])]) -> Vec<u8> {
        let mut shstrtab = vec![0u8];
        let mut names = Vec::new();
        for (name, ..) in sections.iter().map(|s| (s.0,)).chain([(".symtab",), (".strtab",), (".shstrtab",)]) {
            names.push(shstrtab.len() as u32);
            shstrtab.extend_from_slice(name.as_bytes());
            shstrtab.push(0);
        }
        let strtab = b"\0mark\0".to_vec();
        let mut symtab = vec![0u8; 24];
        let mut sym = vec![0u8; 24];
        sym[0..4].copy_from_slice(&1u32.to_le_bytes());
        sym[4] = 0x10; // global, no type
        sym[6..8].copy_from_slice(&1u16.to_le_bytes()); // section 1
        sym[8..16].copy_from_slice(&0x1_1000_0010u64.to_le_bytes());
        symtab.extend_from_slice(&sym);

        let mut body = Vec::new(); // after the 64-byte header
        let mut placed = Vec::new();
        for (_, _, ty, data) in sections {
            placed.push(64 + body.len() as u64);
            if *ty != elf::SHT_NOBITS {
                body.extend_from_slice(data);
            }
        }
        let tables = [(&symtab, elf::SHT_SYMTAB), (&strtab, elf::SHT_STRTAB), (&shstrtab, elf::SHT_STRTAB)];
        for (t, _) in &tables {
            // The symbol table is read in place: 8-aligned.
            body.resize(body.len().next_multiple_of(8), 0);
            placed.push(64 + body.len() as u64);
            body.extend_from_slice(t);
        }
        body.resize(body.len().next_multiple_of(8), 0);
        let shoff = 64 + body.len() as u64;
        let count = sections.len() + 4;
        let mut b = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        b.extend_from_slice(&243u16.to_le_bytes()); // EM_RISCV
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&0x8000_0000u64.to_le_bytes()); // the host's entry
        b.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
        b.extend_from_slice(&shoff.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for v in [64u16, 56, 0, 64, count as u16, count as u16 - 1] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&body);
        b.extend_from_slice(&[0; 64]); // the null section
        let header = |b: &mut Vec<u8>, name: u32, ty: u32, flags: u64, addr: u64, off: u64, size: u64, link: u32| {
            b.extend_from_slice(&name.to_le_bytes());
            b.extend_from_slice(&ty.to_le_bytes());
            b.extend_from_slice(&flags.to_le_bytes());
            b.extend_from_slice(&addr.to_le_bytes());
            b.extend_from_slice(&off.to_le_bytes());
            b.extend_from_slice(&size.to_le_bytes());
            b.extend_from_slice(&link.to_le_bytes());
            b.extend_from_slice(&(u32::from(ty == elf::SHT_SYMTAB)).to_le_bytes()); // sh_info
            b.extend_from_slice(&8u64.to_le_bytes());
            b.extend_from_slice(&(if ty == elf::SHT_SYMTAB { 24u64 } else { 0 }).to_le_bytes());
        };
        let alloc = u64::from(elf::SHF_ALLOC);
        for (i, (_, addr, ty, data)) in sections.iter().enumerate() {
            header(&mut b, names[i], *ty, alloc, *addr, placed[i], data.len() as u64, 0);
        }
        let n = sections.len();
        let strtab_index = n as u32 + 2;
        for (j, (t, ty)) in tables.iter().enumerate() {
            header(
                &mut b,
                names[n + j],
                *ty,
                0,
                0,
                placed[n + j],
                t.len() as u64,
                if j == 0 { strtab_index } else { 0 },
            );
        }
        b
    }

    #[test]
    fn a_fused_image_gives_its_gpu_half_at_device_addresses() {
        let image = fused(&[
            (".text", 0x8000_0000, elf::SHT_PROGBITS, &[1; 8]),
            (".rv32.seg0", 0x1_1000_0000, elf::SHT_PROGBITS, &[0x13, 0, 0, 0]),
            (".rv32.seg1", 0x1_1000_1000, elf::SHT_NOBITS, &[0; 12]),
        ]);
        let exe = Executable::parse(&image).unwrap();
        assert_eq!(exe.entry(), 0x1000_0000);
        assert_eq!(
            exe.segments(),
            &[
                Segment { addr: 0x1000_0000, data: vec![0x13, 0, 0, 0], mem_size: 4 },
                Segment { addr: 0x1000_1000, data: vec![0; 12], mem_size: 12 },
            ]
        );
        assert_eq!(exe.symbol("mark"), Some(0x1000_0010));
    }

    #[test]
    fn an_rv64_image_without_a_gpu_half_is_refused() {
        let image = fused(&[(".text", 0x8000_0000, elf::SHT_PROGBITS, &[1; 8])]);
        assert!(matches!(Executable::parse(&image), Err(Error::InvalidArgument(_))));
    }
}
