// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-tsi`: the UART-TSI link's throughput against its line. The link
//! writes and reads GPU DRAM of the SoC model behind `tsi-target`'s UART-TSI
//! client on a pseudo-terminal, whose bytes take their time on a line of
//! `--baud`, or of whatever target answers on `--port`; the figure is payload bytes a second over the line's bytes a
//! second (baud / 10, 8N1), the median of interleaved rounds. What the
//! link adds to the payload (request headers, each write's read) is what
//! keeps it under 1. Then one launch by the reset-aggregator protocol
//! (`Soc::launch`) over the link: the words it put on the wire, against
//! those the protocol's own accesses need (without the reads that
//! confirm writes).

use crate::{
    error::{Error, Result},
    link::{Link, DRAM_BASE},
    soc::{Soc, SocOptions},
    soc_map::{Geometry, Protocol, START_PC},
    soc_model::SocModel,
    tsi::{target, TsiLink},
};
use radiance_gluon::{sim16::Sim16, Dialect, Launch};
use std::time::{Duration, Instant};

/// What `bench-tsi` measures.
pub struct BenchOptions {
    pub baud: u32,
    pub kib: usize,
    pub rounds: usize,
    /// A target of its own to measure, `PATH[,baud=N]`, instead of the
    /// model's.
    pub port: Option<String>,
    /// Count the words of one launch too.
    pub launch: bool,
}

/// Runs the benchmark and prints its figures.
pub fn run(opts: &BenchOptions) -> Result<()> {
    let port = match &opts.port {
        Some(port) => port.clone(),
        None => {
            let pty = target::pty().map_err(|e| Error::os("open a pseudo-terminal", e))?;
            let port = format!("{},baud={}", pty.path, opts.baud);
            let how = target::Behaviour { baud: Some(opts.baud), ..Default::default() };
            std::thread::spawn(move || target::serve(pty, &mut SocModel::default(), how));
            port
        }
    };
    let mut link = TsiLink::open(&port).map_err(|e| Error::Usage(e.to_string()))?;
    let data: Vec<u8> = (0..opts.kib * 1024).map(|i| (i * 13) as u8).collect();
    let mut back = vec![0u8; data.len()];
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    let line = f64::from(link.baud()) / 10.0;
    let ratio = |took: Duration| data.len() as f64 / took.as_secs_f64() / line;
    for _ in 0..opts.rounds {
        let start = Instant::now();
        link.write(DRAM_BASE, &data).map_err(|e| Error::Usage(e.to_string()))?;
        writes.push(ratio(start.elapsed()));
        let start = Instant::now();
        link.read(DRAM_BASE, &mut back).map_err(|e| Error::Usage(e.to_string()))?;
        reads.push(ratio(start.elapsed()));
        if back != data {
            return Err(Error::Usage("what was read back is not what was written".into()));
        }
    }
    println!(
        "UART-TSI at {} baud, {} KiB a transfer, median of {} rounds: payload over the line's baud/10",
        link.baud(),
        opts.kib,
        opts.rounds
    );
    println!("  writes {:>5.3}", crate::bench::median(&mut writes));
    println!("  reads  {:>5.3}", crate::bench::median(&mut reads));
    if !opts.launch {
        return Ok(());
    }
    let (all, needed) = launch_words(link)?;
    println!(
        "  a launch: {all} words on the wire, {needed} without the reads that confirm writes ({:.2}x)",
        all as f64 / needed as f64
    );
    Ok(())
}

/// One launch with no params over `link` to a SoC model's GPU that
/// finishes: the words it took, and those without the confirming reads.
fn launch_words(link: TsiLink) -> Result<(u64, u64)> {
    let opts = SocOptions {
        link: String::new(),
        geometry: Geometry::default(),
        vram_mib: 2048,
        protocol: Protocol::Reset,
        l2_flush: true,
        timeout: Duration::from_secs(60),
        poll: Duration::from_micros(100),
    };
    let before = link.words();
    let soc = Soc::new(link, &opts);
    let l = Launch { start_pc: START_PC, regs_per_thread: 1, ..Default::default() };
    let mut block = vec![0; Sim16.launch_header_size()];
    Sim16.encode_launch(&l, &mut block).map_err(|_| Error::Usage("encode the launch".into()))?;
    match soc.launch(&Sim16, &block, &|| false) {
        Ok(Some(launched)) if launched.fault.is_none() => {}
        other => return Err(Error::Usage(format!("the launch over the link: {other:?}"))),
    }
    let after = soc.into_link().words();
    let all = after.all - before.all;
    Ok((all, all - (after.confirming - before.confirming)))
}
