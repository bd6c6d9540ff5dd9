// SPDX-License-Identifier: GPL-2.0 OR MIT

//! gluon-bridge: serves a Radiance device from userspace through
//! radiance.ko's control node (`/dev/radiance-control`), so that the whole
//! kernel stack (queues, scheduler, VRAM management, semaphores, dma-buf)
//! runs in front of a Gluon that is a process:
//! - `socket`: gluon-sim, over its Unix socket;
//! - `model`: the software Gluon model, the command core the kernel's
//!   emulated device runs (for tests, and as a reference);
//! - `soc`: a Radiance SoC over a memory link, its launch protocol carried
//!   out by the bridge.
//!
//! The device lives as long as the bridge: when it exits or is killed,
//! radiance.ko removes the device and its clients get ENODEV.

mod control;
mod error;
mod link;
mod model;
mod sim;
mod soc;
mod soc_map;
mod soc_model;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(version, about = "Serve a Radiance device from userspace through radiance.ko's control node")]
struct Cli {
    /// The control node.
    #[arg(long, default_value = "/dev/radiance-control")]
    control: String,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Serve gluon-sim, listening on its Unix socket.
    Socket {
        /// gluon-sim's `socket_path`.
        socket: String,
        /// VRAM to declare, in MiB (gluon-sim's is a flat 4 GiB).
        #[arg(long, default_value_t = 4096)]
        vram_mib: u32,
        /// Size of the region shared with the sim, in MiB.
        #[arg(long, default_value_t = 64)]
        shared_mib: u32,
        /// Where the shared region is mapped (below 4 GiB).
        #[arg(long, default_value = "0x40000000", value_parser = parse_u64)]
        shared_addr: u64,
        /// Milliseconds a command may go unanswered before the sim counts as
        /// dead and the device is removed.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
    },
    /// Serve the software Gluon model.
    Model {
        /// Wire format: gluon-sim-16 or gluon-24.
        #[arg(long, default_value = "gluon-sim-16")]
        dialect: String,
        /// Implement only what gluon-sim e554ff7 does.
        #[arg(long)]
        gluon_sim: bool,
        /// VRAM, in MiB.
        #[arg(long, default_value_t = 256)]
        vram_mib: u32,
    },
    /// Serve a Radiance SoC reached over a memory link.
    Soc {
        /// `model[:hang|:epilogue|:print=TEXT]` (the in-repo SoC model) or
        /// `unix:PATH` (a process serving the link protocol, README).
        #[arg(long, default_value = "model")]
        link: String,
        /// GPU DRAM to declare, in MiB (the SoC has 2048).
        #[arg(long, default_value_t = 2048)]
        vram_mib: u32,
        /// Clusters of Muon cores (the taped-out part: 1).
        #[arg(long, default_value_t = 1)]
        clusters: u32,
        /// Cores per cluster (the taped-out part: 2).
        #[arg(long, default_value_t = 2)]
        cores_per_cluster: u32,
        /// Wait for the tapeout epilogue's DONE slots, not finished.
        #[arg(long)]
        done_slots: bool,
        /// Milliseconds a launch may run before the bridge resets the GPU.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// Microseconds between polls of finished.
        #[arg(long, default_value_t = 100)]
        poll_us: u64,
    },
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let (digits, radix) = s.strip_prefix("0x").map_or((s, 10), |h| (h, 16));
    u64::from_str_radix(digits, radix).map_err(|e| format!("{s}: {e}"))
}

/// Says which device is being served: `radianceN` on stdout for scripts,
/// the rest on stderr.
fn announce(index: u32, what: &str) {
    println!("radiance{index}");
    eprintln!("gluon-bridge: /dev/radiance{index} is {what}");
}

fn run(cli: Cli) -> error::Result<()> {
    let control = control::Control::open(&cli.control)?;
    match cli.mode {
        Mode::Socket { socket, vram_mib, shared_mib, shared_addr, timeout_ms } => {
            sim::serve(control, &sim::SimOptions { socket, vram_mib, shared_mib, shared_addr, timeout_ms })
        }
        Mode::Model { dialect, gluon_sim, vram_mib } => {
            let dialect = radiance_gluon::by_name(&dialect)
                .ok_or_else(|| error::Error::Usage(format!("unknown dialect {dialect}: gluon-sim-16 or gluon-24")))?;
            model::serve(control, &model::ModelOptions { dialect, gluon_sim, vram_mib })
        }
        Mode::Soc { link, vram_mib, clusters, cores_per_cluster, done_slots, timeout_ms, poll_us } => {
            let geometry = soc_map::Geometry { clusters, cores_per_cluster };
            let timeout = std::time::Duration::from_millis(timeout_ms);
            let poll = std::time::Duration::from_micros(poll_us);
            soc::serve(control, &soc::SocOptions { link, geometry, vram_mib, done_slots, timeout, poll })
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gluon-bridge: {e}");
            ExitCode::FAILURE
        }
    }
}
