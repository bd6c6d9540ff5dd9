// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The demo workload of `tools/demo.sh`: buffer objects on a kmod device
//! through libradiance. Fills a VRAM buffer, shares it as a dma-buf, imports
//! that into pinned host memory, checks the data through the dma-buf, and
//! shows the device's memory use while it all exists.
//!
//!     kmod_buffers [DEVICE]      (default kmod:0)

use radiance::node::{map_dma_buf, Device, MemStats, Placement};
use std::{os::fd::AsFd, process::ExitCode};

fn run(name: &str) -> radiance::Result<()> {
    let dev = Device::open(name)?;
    let info = dev.info();
    println!("{}: {} ({}), {} MiB VRAM", dev.path().display(), info.name, info.backend.as_str(), info.vram_size >> 20);

    let vram = dev.create_bo(1 << 20, Placement::Vram, true)?;
    let mut map = vram.map()?;
    for (i, word) in map.chunks_exact_mut(4).enumerate() {
        word.copy_from_slice(&(i as u32).wrapping_mul(2_654_435_761).to_le_bytes());
    }
    println!("VRAM buffer: {} bytes at device address {:#x}, filled", vram.size(), vram.device_address());

    let dmabuf = vram.export_dma_buf()?;
    let imported = dev.import_dma_buf(dmabuf.as_fd())?;
    println!(
        "exported as a dma-buf, imported back as a {:?} buffer of {} bytes",
        imported.placement(),
        imported.size()
    );

    let seen = map_dma_buf(dmabuf.as_fd())?;
    let same = seen.iter().zip(map.iter()).all(|(a, b)| a == b);
    println!("read back through the dma-buf: {}", if same { "identical" } else { "DIFFERENT" });

    let host = dev.create_bo(4 << 20, Placement::Host, true)?;
    host.map()?.fill(0xa5);
    println!("host buffer: {} bytes pinned and DMA-mapped for the device", host.size());

    match MemStats::read(info.index) {
        Ok(s) => println!(
            "memory now: VRAM {} of {} bytes used in {} BOs, {} bytes of host memory pinned",
            s.vram_used, s.vram_total, s.vram_bos, s.host_pinned
        ),
        Err(e) => println!("memory now: unavailable ({e})"),
    }
    if same {
        Ok(())
    } else {
        Err(radiance::Error::InvalidArgument("dma-buf contents differ from the buffer's".into()))
    }
}

fn main() -> ExitCode {
    let name = std::env::args().nth(1).unwrap_or_else(|| "kmod:0".into());
    match run(&name) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kmod_buffers: {e}");
            ExitCode::FAILURE
        }
    }
}
