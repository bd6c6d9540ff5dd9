// SPDX-License-Identifier: GPL-2.0 OR MIT

//! gluon-bridge: serves a Radiance device from userspace through
//! radiance.ko's control node (`/dev/radiance-control`), so that the whole
//! kernel stack (queues, scheduler, VRAM management, semaphores, dma-buf)
//! runs in front of a Gluon that is a process:
//! - `socket`: gluon-sim, over its Unix socket (either of its handshakes);
//! - `model`: the software Gluon model, the command core the kernel's
//!   emulated device runs (for tests, and as a reference);
//! - `soc`: a Radiance SoC over a memory link, its launch protocol carried
//!   out by the bridge.
//!
//! And `sim-model`, which is no server of the control node: the model
//! behind a socket as gluon-sim serves it, for `socket` to connect to where
//! there is no gluon-sim (CI); and `bench-launch` and `bench-scrub`, which
//! serve the model and time operations through its device: launches
//! against the same launches run straight on the model, and what a free's
//! scrub costs the next operation (tools/bench.sh).
//!
//! The device lives as long as the bridge: when it exits or is killed,
//! radiance.ko removes the device and its clients get ENODEV.

mod bench;
mod bench_launch;
mod bench_scrub;
mod bench_tsi;
mod control;
mod cpu_time;
mod error;
mod handshake;
mod l2;
mod link;
mod model;
mod sim;
mod sim_config;
mod sim_model;
mod soc;
mod soc_map;
mod soc_model;
mod tsi;
mod vram;

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
    /// Serve gluon-sim, connecting to its Unix socket.
    Socket {
        /// gluon-sim's `socket_path`.
        socket: String,
        /// gluon-sim's handshake: memfd (e554ff7, 16-byte frames) or pid
        /// (013add5 and later, 24-byte frames).
        #[arg(long, value_enum, default_value = "memfd")]
        handshake: handshake::Handshake,
        /// VRAM to declare, in MiB (gluon-sim's is a flat 4 GiB).
        #[arg(long, default_value_t = 4096)]
        vram_mib: u32,
        /// Staging space for host bytes, in MiB (memfd: the region shared
        /// with the sim).
        #[arg(long, default_value_t = 64)]
        shared_mib: u32,
        /// Where the shared region is mapped (memfd; below 4 GiB).
        #[arg(long, default_value = "0x40000000", value_parser = parse_u64)]
        shared_addr: u64,
        /// Milliseconds a command may go unanswered while the sim computes
        /// nothing (or, after a reset, a copy stay at the sim) before the
        /// device is removed; a launch still at the sim after a reset
        /// retires its stream instead.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// gluon-sim's config.toml: GET_INFO's cores, warps and threads
        /// from its `[[glug.gluls]]`.
        #[arg(long)]
        sim_config: Option<String>,
        /// GET_INFO's cores, warps per core and threads per warp, as
        /// C,W,T (instead of, or over, --sim-config).
        #[arg(long, value_parser = parse_shape)]
        shape: Option<sim_config::Shape>,
        /// GET_INFO's built-in kernels (uapi::builtin bits): gluon-sim runs
        /// none; `sim-model` runs the model's (0x3f).
        #[arg(long, default_value = "0", value_parser = parse_u64)]
        builtins: u64,
        /// Report the sim's CPU time as the progress of the commands it
        /// holds, for a sim that sleeps when idle (gluon-sim spins a CPU
        /// once a client connects: its CPU time says nothing).
        #[arg(long)]
        cpu_progress: bool,
        /// Bytes a second the sim copies, declared without --cpu-progress:
        /// the kernel's watchdog gives a copy its size over this, its
        /// launch timeout at least (0: the timeout only).
        #[arg(long, default_value_t = 0)]
        bytes_per_s: u64,
        /// Threads a second the sim runs, as --bytes-per-s for launches.
        #[arg(long, default_value_t = 0)]
        threads_per_s: u64,
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
        /// `model[:hang|:epilogue|:nightly|:print=TEXT]` (the in-repo SoC
        /// model), `unix:PATH` (a process serving the link protocol,
        /// Documentation/deploy/soc.md) or `tsi:PORT[,baud=N]` (UART-TSI).
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
        /// How a launch starts and ends: `reset` (release reset, poll
        /// all-finished), `epilogue` (poll the tapeout epilogue's DONE
        /// slots) or `nightly` (write LAUNCH to printBuf, poll END slots).
        #[arg(long, default_value = "reset")]
        protocol: String,
        /// Over `tsi:`, do not flush GPU DRAM's lines from the chip's L2
        /// before the link touches them: for a target whose accesses go
        /// through the L2, unlike a bring-up FPGA's.
        #[arg(long)]
        no_l2_flush: bool,
        /// Milliseconds a launch may run before the bridge resets the GPU.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// Microseconds between polls of finished.
        #[arg(long, default_value_t = 100)]
        poll_us: u64,
    },
    /// Serve the model and time a launch through its device against the
    /// same launch run straight on the model.
    BenchLaunch {
        /// Wire format: gluon-sim-16 or gluon-24.
        #[arg(long, default_value = "gluon-sim-16")]
        dialect: String,
        /// Implement only what gluon-sim e554ff7 does.
        #[arg(long)]
        gluon_sim: bool,
        /// Interleaved rounds (the figures are their medians).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Launches per round on each side (at least 2: the client's pace
        /// is timed between two).
        #[arg(long, default_value_t = 200)]
        launches: usize,
    },
    /// Serve the model and time a 4 KiB fill after a free (whose VRAM the
    /// kernel scrubs by commands) against the same fill alone.
    BenchScrub {
        /// Implement only what gluon-sim e554ff7 does (no SET: scrubs are
        /// copies of zeros).
        #[arg(long)]
        gluon_sim: bool,
        /// Interleaved rounds (the figures are their medians).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Samples per round of each figure.
        #[arg(long, default_value_t = 9)]
        samples: usize,
        /// The BO freed, in KiB.
        #[arg(long, default_value_t = 1024)]
        freed_kib: u64,
    },
    /// Measure the UART-TSI link against its line: payload bytes a second
    /// over baud/10, writes and reads, through `tsi-target`'s model on a
    /// pseudo-terminal paced at --baud.
    BenchTsi {
        /// The line's rate (the bring-up FPGA's: 921600).
        #[arg(long, default_value_t = tsi::DEFAULT_BAUD)]
        baud: u32,
        /// KiB a transfer.
        #[arg(long, default_value_t = 64)]
        kib: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Measure the target on this port instead, `PATH[,baud=N]` (a
        /// board, or a target of one's own): the rounds overwrite GPU DRAM
        /// from device address 0, and the launch runs what is at
        /// 0x1000_0000.
        #[arg(long)]
        port: Option<String>,
        /// Measure the link only, with no launch (a board with no image
        /// loaded yet).
        #[arg(long)]
        no_launch: bool,
    },
    /// Play a bring-up FPGA's UART-TSI client in front of the SoC model, on
    /// a pseudo-terminal (real termios on both ends): prints the terminal's
    /// path, for `soc --link tsi:PATH`, and serves one host until it
    /// closes the terminal.
    TsiTarget {
        /// The SoC model's GPU, as `soc --link model...` takes it
        /// (`:hang`, `:epilogue`, `:nightly`, `:print=TEXT`; nothing: it
        /// finishes).
        #[arg(long, default_value = "")]
        gpu: String,
        /// Clusters of Muon cores, as `soc --clusters`.
        #[arg(long, default_value_t = 1)]
        clusters: u32,
        /// Cores per cluster, as `soc --cores-per-cluster`.
        #[arg(long, default_value_t = 2)]
        cores_per_cluster: u32,
        /// Answer every read with garbage.
        #[arg(long)]
        garbage: bool,
        /// Stop answering once this many words were read.
        #[arg(long)]
        silent_after_words: Option<u64>,
        /// Bytes' time the parser takes no byte after a write (its bus
        /// acknowledging it); bytes past the 8-byte queue meanwhile are
        /// dropped. The default is what the queue absorbs.
        #[arg(long, default_value_t = 8)]
        write_busy_bytes: usize,
        /// Print each request on stderr: what the host sent, where.
        #[arg(long)]
        log: bool,
        /// Pace the bytes as on a line of this rate (a pty's take no time).
        #[arg(long)]
        baud: Option<u32>,
    },
    /// Play gluon-sim: serve the model on a Unix socket, one client.
    SimModel {
        /// The socket to listen on.
        socket: String,
        /// The handshake (and frames) of the gluon-sim version to play.
        #[arg(long, value_enum, default_value = "memfd")]
        handshake: handshake::Handshake,
        /// VRAM, in MiB.
        #[arg(long, default_value_t = 256)]
        vram_mib: u32,
        /// Milliseconds each command keeps its engine busy.
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
        /// Spend `--latency-ms` computing, as a cycle simulator does,
        /// instead of asleep (which looks like a sim that stopped).
        #[arg(long)]
        compute: bool,
        /// Drop a command whose engine is busy, as gluon-sim e554ff7 does.
        #[arg(long)]
        drop_busy: bool,
        /// Milliseconds the built-in SPIN runs (default: for ever, as a
        /// kernel that never ends on gluon-sim).
        #[arg(long)]
        spin_ms: Option<u64>,
        /// Exit right after the handshake, as gluon-sim does on a machine
        /// that refuses its 4 GiB VRAM reservation.
        #[arg(long)]
        die_at_connect: bool,
    },
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let (digits, radix) = s.strip_prefix("0x").map_or((s, 10), |h| (h, 16));
    u64::from_str_radix(digits, radix).map_err(|e| format!("{s}: {e}"))
}

fn parse_shape(s: &str) -> Result<sim_config::Shape, String> {
    let v: Vec<u32> = s.split(',').map(str::parse).collect::<Result<_, _>>().map_err(|e| format!("{s}: {e}"))?;
    match v[..] {
        [cores, warps_per_core, threads_per_warp] => Ok(sim_config::Shape { cores, warps_per_core, threads_per_warp }),
        _ => Err(format!("{s}: cores,warps,threads")),
    }
}

fn dialect_named(name: &str) -> error::Result<&'static dyn radiance_gluon::Dialect> {
    radiance_gluon::by_name(name)
        .ok_or_else(|| error::Error::Usage(format!("unknown dialect {name}: gluon-sim-16 or gluon-24")))
}

/// Says which device is being served: `radianceN` on stdout for scripts,
/// the rest on stderr.
fn announce(index: u32, what: &str) {
    println!("radiance{index}");
    eprintln!("gluon-bridge: /dev/radiance{index} is {what}");
}

fn run(cli: Cli) -> error::Result<()> {
    match cli.mode {
        Mode::Socket {
            socket,
            handshake,
            vram_mib,
            shared_mib,
            shared_addr,
            timeout_ms,
            sim_config,
            shape,
            builtins,
            cpu_progress,
            bytes_per_s,
            threads_per_s,
        } => {
            let from_config = sim_config
                .map(|path| {
                    let text =
                        std::fs::read_to_string(&path).map_err(|e| error::Error::Usage(format!("read {path}: {e}")))?;
                    sim_config::shape(&text)
                })
                .transpose()?;
            let shape = shape.or(from_config).unwrap_or_default();
            let builtins =
                u32::try_from(builtins).map_err(|_| error::Error::Usage(format!("--builtins {builtins:#x}")))?;
            let control = control::Control::open(&cli.control)?;
            let opts = sim::SimOptions {
                socket,
                handshake,
                vram_mib,
                shared_mib,
                shared_addr,
                timeout_ms,
                shape,
                builtins,
                cpu_progress,
                bytes_per_s,
                threads_per_s,
            };
            sim::serve(control, &opts)
        }
        Mode::Model { dialect, gluon_sim, vram_mib } => {
            let dialect = dialect_named(&dialect)?;
            let control = control::Control::open(&cli.control)?;
            model::serve(control, &model::ModelOptions { dialect, gluon_sim, vram_mib })
        }
        Mode::BenchLaunch { dialect, gluon_sim, rounds, launches } => {
            if rounds == 0 || launches < 2 {
                return Err(error::Error::Usage("--rounds at least 1, --launches at least 2".into()));
            }
            let model = model::ModelOptions { dialect: dialect_named(&dialect)?, gluon_sim, vram_mib: 256 };
            let control = control::Control::open(&cli.control)?;
            bench_launch::run(control, bench_launch::BenchOptions { model, rounds, launches })
        }
        Mode::BenchScrub { gluon_sim, rounds, samples, freed_kib } => {
            if rounds == 0 || samples == 0 || freed_kib == 0 || freed_kib % 4 != 0 {
                return Err(error::Error::Usage("--rounds, --samples: at least 1; --freed-kib: whole pages".into()));
            }
            let model = model::ModelOptions { dialect: dialect_named("gluon-sim-16")?, gluon_sim, vram_mib: 256 };
            let control = control::Control::open(&cli.control)?;
            bench_scrub::run(control, bench_scrub::BenchOptions { model, rounds, samples, freed_kib })
        }
        Mode::Soc { link, vram_mib, clusters, cores_per_cluster, protocol, no_l2_flush, timeout_ms, poll_us } => {
            let geometry = soc_map::Geometry { clusters, cores_per_cluster };
            let protocol = soc_map::Protocol::named(&protocol)
                .ok_or_else(|| error::Error::Usage(format!("--protocol {protocol}: {}", soc_map::Protocol::NAMES)))?;
            let l2_flush = link.starts_with("tsi:") && !no_l2_flush;
            let timeout = std::time::Duration::from_millis(timeout_ms);
            let poll = std::time::Duration::from_micros(poll_us);
            let control = control::Control::open(&cli.control)?;
            let opts = soc::SocOptions { link, geometry, vram_mib, protocol, l2_flush, timeout, poll };
            soc::serve(control, &opts)
        }
        Mode::BenchTsi { baud, kib, rounds, port, no_launch } => {
            bench_tsi::run(&bench_tsi::BenchOptions { baud, kib, rounds, port, launch: !no_launch })
        }
        Mode::TsiTarget {
            gpu,
            clusters,
            cores_per_cluster,
            garbage,
            silent_after_words,
            write_busy_bytes,
            log,
            baud,
        } => {
            let fault = match (garbage, silent_after_words) {
                (true, _) => tsi::target::Fault::Garbage,
                (false, Some(n)) => tsi::target::Fault::SilentAfter(n),
                (false, None) => tsi::target::Fault::None,
            };
            let how = tsi::target::Behaviour { fault, write_busy: write_busy_bytes, baud, log };
            tsi_target(&gpu, soc_map::Geometry { clusters, cores_per_cluster }, how)
        }
        Mode::SimModel { socket, handshake, vram_mib, latency_ms, compute, drop_busy, spin_ms, die_at_connect } => {
            let spin = spin_ms.map(std::time::Duration::from_millis);
            let opts = sim_model::SimModelOptions {
                socket,
                handshake,
                vram_mib,
                latency_ms,
                compute,
                drop_busy,
                spin,
                die_at_connect,
            };
            sim_model::serve(&opts)
        }
    }
}

/// Serves `tsi-target`: a TSI target over the SoC model on a pty.
fn tsi_target(gpu: &str, geometry: soc_map::Geometry, how: tsi::target::Behaviour) -> error::Result<()> {
    let mut model = soc_model::SocModel::from_spec(gpu, geometry)
        .ok_or_else(|| error::Error::Usage(format!("--gpu {gpu}: :hang, :epilogue, :nightly or :print=TEXT")))?;
    let pty = tsi::target::pty().map_err(|e| error::Error::os("open a pseudo-terminal", e))?;
    println!("{}", pty.path);
    let served = tsi::target::serve(pty, &mut model, how);
    eprintln!("tsi-target: {} reads, {} writes, {} bytes dropped", served.reads, served.writes, served.dropped);
    Ok(())
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
