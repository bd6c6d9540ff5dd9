// SPDX-License-Identifier: GPL-2.0 OR MIT

//! radctl: inspect Radiance devices. A verb per noun, aligned tables for
//! people, `--json` for scripts; exit code 0 on success, 1 on any error
//! (with a one-line message on stderr), 2 on bad usage, for `run` 3 when
//! the launched code faulted on the device, and for `submit` 4 on a data
//! error: the data read back differs from what the work should have made
//! (the message names the first byte that differs: its offset, the byte
//! expected and the byte got).

mod error;
mod run;
mod submit;
mod timeline;
mod top;
mod topology;
mod trace;

use clap::{Parser, Subcommand};
use error::Result;
use radiance::node::{self, DeviceInfo, HeadCommand, MemStats, QueueStats, SemStats, StreamStats};
use serde_json::{json, Value};
use std::process::ExitCode;

#[derive(Parser)]
#[command(version, about = "Inspect and debug Radiance devices")]
struct Cli {
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the Radiance devices of this machine.
    List,
    /// Show what a device is and what it can do.
    Info {
        /// kmod:N, N, radianceN or a /dev path; or a HAL device of another
        /// backend: host, cuda:N, hsa:N.
        #[arg(default_value = "kmod:0")]
        device: String,
    },
    /// List every process's queues on a device, with their hardware stream
    /// and faults (needs debugfs).
    Queues {
        /// kmod:N, N, radianceN or a /dev path.
        #[arg(default_value = "kmod:0")]
        device: String,
    },
    /// List every process's semaphores on a device: value, waiters, failure
    /// (needs debugfs).
    Sems {
        /// kmod:N, N, radianceN or a /dev path.
        #[arg(default_value = "kmod:0")]
        device: String,
    },
    /// Submit work through a queue and check what comes back, for
    /// debugging a device end to end; exit status 4 if the data read back
    /// differs.
    Submit(submit::Submit),
    /// Load a Muon ELF32 executable into VRAM at its link addresses and
    /// launch it; exit status 3 if the device faults.
    Run(run::Run),
    /// Show how devices reach each other as one device group: for every
    /// ordered pair, the semaphore route, buffer route and link class.
    Topology {
        /// Device URIs (host, kmod:N, cuda:N); default: host and every kmod:N.
        devices: Vec<String>,
    },
    /// A live view of each device, process and queue: busy time, packets,
    /// bytes and threads a second, VRAM, faults (needs debugfs); q quits.
    Top(top::Top),
    /// Record what the devices do while a command runs (`-- CMD ARGS...`)
    /// or for `--duration` seconds, as a timeline that ui.perfetto.dev
    /// opens (needs root: tracefs).
    Trace(trace::Trace),
    /// Show a device's VRAM and pinned host memory use (needs debugfs).
    Mem {
        /// kmod:N, N, radianceN or a /dev path.
        #[arg(default_value = "kmod:0")]
        device: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => return run::run(&args, cli.json),
        Command::Submit(args) => submit::submit(&args, cli.json),
        Command::Trace(args) => trace::trace(&args),
        Command::Top(args) => top::top(&args, cli.json),
        Command::List => list(cli.json),
        Command::Info { device } if is_hal_only(&device) => hal_info(&device, cli.json),
        Command::Topology { devices } => topology::topology(&devices, cli.json),
        Command::Info { device } => info(&device, cli.json),
        Command::Mem { device } => mem(&device, cli.json),
        Command::Queues { device } => queues(&device, cli.json),
        Command::Sems { device } => sems(&device, cli.json),
    };
    result.map_or_else(|e| e.report(), |()| ExitCode::SUCCESS)
}

fn list(as_json: bool) -> Result<()> {
    let nodes = node::enumerate()?;
    if nodes.is_empty() {
        return Err(radiance::Error::NoDevices.into());
    }
    let devices =
        nodes.iter().map(|path| node::Device::open(&path.to_string_lossy())).collect::<radiance::Result<Vec<_>>>()?;
    if as_json {
        let list: Vec<Value> = devices.iter().map(|d| info_json(d.path(), d.info())).collect();
        println!("{}", Value::Array(list));
        return Ok(());
    }
    let rows: Vec<[String; 4]> = devices
        .iter()
        .map(|d| {
            let i = d.info();
            [d.path().display().to_string(), i.backend.as_str().into(), mib(i.vram_size), i.name.clone()]
        })
        .collect();
    print_table(["DEVICE", "BACKEND", "VRAM", "NAME"], &rows);
    Ok(())
}

fn info(device: &str, as_json: bool) -> Result<()> {
    let dev = node::Device::open(device)?;
    let i = dev.info();
    if as_json {
        println!("{}", info_json(dev.path(), i));
        return Ok(());
    }
    let rows = [
        ["device", &dev.path().display().to_string()],
        ["name", &i.name],
        ["backend", i.backend.as_str()],
        ["abi", &format!("{}.{}", i.abi_major, i.abi_minor)],
        ["index", &i.index.to_string()],
        ["cores", &i.cores.to_string()],
        ["warps per core", &i.warps_per_core.to_string()],
        ["threads per warp", &i.threads_per_warp.to_string()],
        ["vram", &mib(i.vram_size)],
        ["max queues", &i.max_queues.to_string()],
        ["packet size", &format!("{} B", i.packet_size)],
        ["doorbell page", &format!("{} B", i.doorbell_page_size)],
        ["features", &format!("{:#x}", i.features)],
        ["builtin kernels", &builtin_names(&i.builtins).join(", ")],
        ["dialect", i.dialect_name()],
        ["streams", &streams_text(i)],
        ["capabilities", &i.cap_names().join(", ")],
    ];
    print_pairs(&rows);
    Ok(())
}

/// The device's streams, and those retired (USER_RETIRE).
fn streams_text(i: &node::DeviceInfo) -> String {
    let retired = i.retired();
    if retired.is_empty() {
        return i.streams.to_string();
    }
    format!("{} ({} retired: {})", i.streams, retired.len(), stream_list(&retired))
}

/// Streams as `0, 2`.
fn stream_list(streams: &[u32]) -> String {
    streams.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// Whether `device` names a HAL device that is not a Radiance node.
fn is_hal_only(device: &str) -> bool {
    device == "host" || device.starts_with("cuda:") || device.starts_with("hsa:")
}

/// What libradiance's HAL says of a device of another backend: opening it
/// is the check (`hsa:0` without `/dev/kfd` fails, saying so).
fn hal_info(uri: &str, as_json: bool) -> Result<()> {
    let dev = radiance::Device::open(uri)?;
    let i = dev.info();
    if as_json {
        let info = json!({
            "device": i.uri,
            "backend": i.backend,
            "name": i.name,
            "builtin_kernels": i.builtin_kernels,
            "memory_protection": i.memory_protection,
        });
        println!("{info}");
        return Ok(());
    }
    let yes_no = |b| if b { "yes" } else { "no" };
    print_pairs(&[
        ["device", &i.uri],
        ["backend", i.backend],
        ["name", &i.name],
        ["builtin kernels", yes_no(i.builtin_kernels)],
        ["memory protection", yes_no(i.memory_protection)],
    ]);
    Ok(())
}

fn mem(device: &str, as_json: bool) -> Result<()> {
    let dev = node::Device::open(device)?;
    let s = MemStats::read(dev.info().index)?;
    if as_json {
        let v = json!({
            "device": dev.path().display().to_string(),
            "vram": {
                "total": s.vram_total, "used": s.vram_used, "free": s.vram_free,
                "largest_free": s.vram_largest_free, "free_blocks": s.vram_free_blocks, "bos": s.vram_bos,
            },
            "host_pinned": { "used": s.host_pinned, "limit": s.host_pinned_limit },
            "open_files": s.open_files,
        });
        println!("{v}");
        return Ok(());
    }
    // Fragmentation: how much of the free VRAM one allocation can get.
    let largest_share = match s.vram_free {
        0 => "-".to_owned(),
        free => format!("{:.1}% of free", s.vram_largest_free as f64 * 100.0 / free as f64),
    };
    print_pairs(&[
        ["device", &dev.path().display().to_string()],
        ["vram total", &bytes(s.vram_total)],
        ["vram used", &bytes(s.vram_used)],
        ["vram free", &bytes(s.vram_free)],
        ["largest free block", &format!("{} ({largest_share})", bytes(s.vram_largest_free))],
        ["free blocks", &s.vram_free_blocks.to_string()],
        ["vram buffer objects", &s.vram_bos.to_string()],
        ["pinned host memory", &format!("{} of {}", bytes(s.host_pinned), bytes(s.host_pinned_limit))],
        ["open files", &s.open_files.to_string()],
    ]);
    Ok(())
}

fn queues(device: &str, as_json: bool) -> Result<()> {
    let dev = node::Device::open(device)?;
    let queues = QueueStats::read(dev.info().index)?;
    let streams = StreamStats::read(dev.info().index)?;
    // The command the watchdog watches for a queue, if one of its commands
    // is at the head of its stream.
    let running =
        |q: &QueueStats| streams.iter().filter_map(|s| s.head.as_ref()).find(|h| h.pid == q.pid && h.queue == q.queue);
    if as_json {
        let list: Vec<Value> = queues
            .iter()
            .map(|q| {
                json!({
                    "pid": q.pid, "queue": q.queue, "stream": q.stream, "ring": q.ring, "submitted": q.submitted,
                    "completed": q.completed, "status": if q.faulted { "faulted" } else { "active" },
                    "error": q.error, "fault_index": q.fault_index, "err_code": q.err_code,
                    "err_pc": q.err_pc, "err_thread": q.err_thread,
                    "running": running(q).map(|h| json!({
                        "packet": h.packet, "command": h.command, "units": h.units, "unit": h.unit,
                        "done": h.done, "still_ms": h.still_ms,
                    })),
                })
            })
            .collect();
        println!("{}", Value::Array(list));
        return Ok(());
    }
    let rows: Vec<[String; 9]> = queues
        .iter()
        .map(|q| {
            let fault = if q.faulted {
                let errno = rustix::io::Errno::from_raw_os_error(q.error as i32);
                let device = if q.err_code != 0 {
                    format!(" (err_code {} pc {:#x} thread {})", q.err_code, q.err_pc, q.err_thread)
                } else {
                    String::new()
                };
                format!("packet {}: {errno}{device}", q.fault_index)
            } else {
                "-".into()
            };
            [
                q.pid.to_string(),
                q.queue.to_string(),
                q.stream.to_string(),
                format!("{}/{}", q.submitted - q.completed, q.ring),
                q.completed.to_string(),
                (if q.faulted { "faulted" } else { "active" }).into(),
                fault,
                q.submitted.to_string(),
                running(q).map_or_else(|| "-".into(), head_progress),
            ]
        })
        .collect();
    print_table(["PID", "QUEUE", "STREAM", "IN FLIGHT", "COMPLETED", "STATE", "FAULT", "SUBMITTED", "RUNNING"], &rows);
    let retired = dev.info().retired();
    if !retired.is_empty() {
        println!("retired streams (their queues moved to the others): {}", stream_list(&retired));
    }
    Ok(())
}

/// A head command's progress, e.g. `packet 7: fill 4194304 of 16777216
/// bytes, moved 3 ms ago`.
fn head_progress(h: &HeadCommand) -> String {
    let done = match h.done {
        Some(done) => format!("{done} of "),
        None => String::new(),
    };
    format!("packet {}: {} {done}{} {}, moved {} ms ago", h.packet, h.command, h.units, h.unit, h.still_ms)
}

fn sems(device: &str, as_json: bool) -> Result<()> {
    let dev = node::Device::open(device)?;
    let sems = SemStats::read(dev.info().index)?;
    if as_json {
        let list: Vec<Value> = sems
            .iter()
            .map(|s| {
                json!({
                    "pid": s.pid, "handle": s.handle, "value": s.value, "error": s.error,
                    "waiters": s.waiters, "fences": s.fences,
                    "alias_of": s.alias_of.map(|(pid, handle)| json!({ "pid": pid, "handle": handle })),
                })
            })
            .collect();
        println!("{}", Value::Array(list));
        return Ok(());
    }
    let rows: Vec<[String; 7]> = sems
        .iter()
        .map(|s| {
            let state = match s.error {
                0 => "ok".to_owned(),
                e => format!("failed: {}", rustix::io::Errno::from_raw_os_error(e as i32)),
            };
            let value = if s.error == 0 { s.value.to_string() } else { "-".into() };
            let alias_of = s.alias_of.map_or("-".into(), |(pid, handle)| format!("pid {pid} sem {handle}"));
            [
                s.pid.to_string(),
                s.handle.to_string(),
                value,
                s.waiters.to_string(),
                s.fences.to_string(),
                state,
                alias_of,
            ]
        })
        .collect();
    print_table(["PID", "SEM", "VALUE", "WAITERS", "FENCES", "STATE", "ALIAS OF"], &rows);
    Ok(())
}

/// Prints `key  value` lines with the values aligned.
fn print_pairs(rows: &[[&str; 2]]) {
    let width = rows.iter().map(|[k, _]| k.len()).max().unwrap_or(0);
    for [key, value] in rows {
        println!("{key:<width$}  {value}");
    }
}

/// Exact bytes, with a readable size beside them.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{n} B ({:.1} MiB)", n as f64 / (1 << 20) as f64),
        n if n >= 1 << 10 => format!("{n} B ({:.1} KiB)", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

fn info_json(path: &std::path::Path, i: &DeviceInfo) -> Value {
    json!({
        "device": path.display().to_string(),
        "name": i.name,
        "backend": i.backend.as_str(),
        "abi": { "major": i.abi_major, "minor": i.abi_minor },
        "index": i.index,
        "cores": i.cores,
        "warps_per_core": i.warps_per_core,
        "threads_per_warp": i.threads_per_warp,
        "vram_bytes": i.vram_size,
        "max_queues": i.max_queues,
        "packet_size": i.packet_size,
        "doorbell_page_size": i.doorbell_page_size,
        "features": i.features,
        "builtin_kernels": builtin_names(&i.builtins),
        "dialect": i.dialect_name(),
        "streams": i.streams,
        "retired_streams": i.retired(),
        "caps": i.cap_names(),
    })
}

/// The names of built-in kernel entry PCs.
fn builtin_names(pcs: &[u32]) -> Vec<String> {
    use radiance_uapi::builtin;
    pcs.iter()
        .map(|&pc| match pc {
            builtin::FILL_U32 => "fill_u32".into(),
            builtin::COPY_U32 => "copy_u32".into(),
            builtin::VECADD_U32 => "vecadd_u32".into(),
            builtin::SPIN => "spin".into(),
            builtin::PRINTF_U32 => "printf_u32".into(),
            builtin::START => "start".into(),
            other => format!("{other:#x}"),
        })
        .collect()
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

/// Prints left-aligned columns two spaces apart.
fn print_table<const N: usize>(header: [&str; N], rows: &[[String; N]]) {
    let mut width = header.map(str::len);
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: [&str; N]| {
        let text: Vec<String> = cells.iter().zip(width).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("{}", text.join("  ").trim_end());
    };
    line(header);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
}
