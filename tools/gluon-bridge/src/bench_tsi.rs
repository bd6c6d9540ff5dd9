// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `bench-tsi`: the UART-TSI link's throughput against its line. The link
//! writes and reads GPU DRAM of the SoC model behind `tsi-target`'s UART-TSI
//! client on a pseudo-terminal, whose bytes take their time on a line of
//! `--baud`; the figure is payload bytes a second over the line's bytes a
//! second (baud / 10, 8N1), the median of interleaved rounds. What the
//! link adds to the payload (request headers, each write's read) is what
//! keeps it under 1.

use crate::{
    error::{Error, Result},
    link::{Link, DRAM_BASE},
    soc_model::SocModel,
    tsi::{target, TsiLink},
};
use std::time::{Duration, Instant};

/// What `bench-tsi` measures.
pub struct BenchOptions {
    pub baud: u32,
    pub kib: usize,
    pub rounds: usize,
}

/// Runs the benchmark and prints its figures.
pub fn run(opts: &BenchOptions) -> Result<()> {
    let pty = target::pty().map_err(|e| Error::os("open a pseudo-terminal", e))?;
    let port = format!("{},baud={}", pty.path, opts.baud);
    let how = target::Behaviour { baud: Some(opts.baud), ..Default::default() };
    std::thread::spawn(move || target::serve(pty, &mut SocModel::default(), how));
    let mut link = TsiLink::open(&port).map_err(|e| Error::Usage(e.to_string()))?;
    let data: Vec<u8> = (0..opts.kib * 1024).map(|i| (i * 13) as u8).collect();
    let mut back = vec![0u8; data.len()];
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    let line = f64::from(opts.baud) / 10.0;
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
        opts.baud, opts.kib, opts.rounds
    );
    println!("  writes {:>5.3}", crate::bench::median(&mut writes));
    println!("  reads  {:>5.3}", crate::bench::median(&mut reads));
    Ok(())
}
