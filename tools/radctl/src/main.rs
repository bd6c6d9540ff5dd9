// SPDX-License-Identifier: GPL-2.0 OR MIT

//! radctl: inspect Radiance devices. A verb per noun, aligned tables for
//! people, `--json` for scripts; exit code 0 on success, 1 on any error
//! (with a one-line message on stderr), 2 on bad usage.

use clap::{Parser, Subcommand};
use radiance::kmod::{self, DeviceInfo, MemStats, QueueStats};
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
        /// kmod:N, N, radianceN or a /dev path.
        #[arg(default_value = "kmod:0")]
        device: String,
    },
    /// List every process's queues on a device, with their faults (needs
    /// debugfs).
    Queues {
        /// kmod:N, N, radianceN or a /dev path.
        #[arg(default_value = "kmod:0")]
        device: String,
    },
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
        Command::List => list(cli.json),
        Command::Info { device } => info(&device, cli.json),
        Command::Mem { device } => mem(&device, cli.json),
        Command::Queues { device } => queues(&device, cli.json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("radctl: {e}");
            ExitCode::FAILURE
        }
    }
}

fn list(as_json: bool) -> radiance::Result<()> {
    let nodes = kmod::enumerate()?;
    if nodes.is_empty() {
        return Err(radiance::Error::NoDevices);
    }
    let devices = nodes
        .iter()
        .map(|path| kmod::Device::open(&path.to_string_lossy()))
        .collect::<radiance::Result<Vec<_>>>()?;
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

fn info(device: &str, as_json: bool) -> radiance::Result<()> {
    let dev = kmod::Device::open(device)?;
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
    ];
    print_pairs(&rows);
    Ok(())
}

fn mem(device: &str, as_json: bool) -> radiance::Result<()> {
    let dev = kmod::Device::open(device)?;
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

fn queues(device: &str, as_json: bool) -> radiance::Result<()> {
    let dev = kmod::Device::open(device)?;
    let queues = QueueStats::read(dev.info().index)?;
    if as_json {
        let list: Vec<Value> = queues
            .iter()
            .map(|q| {
                json!({
                    "pid": q.pid, "queue": q.queue, "ring": q.ring, "submitted": q.submitted,
                    "completed": q.completed, "status": if q.faulted { "faulted" } else { "active" },
                    "error": q.error, "fault_index": q.fault_index, "err_code": q.err_code,
                    "err_pc": q.err_pc, "err_thread": q.err_thread,
                })
            })
            .collect();
        println!("{}", Value::Array(list));
        return Ok(());
    }
    let rows: Vec<[String; 7]> = queues
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
                format!("{}/{}", q.submitted - q.completed, q.ring),
                q.completed.to_string(),
                (if q.faulted { "faulted" } else { "active" }).into(),
                fault,
                q.submitted.to_string(),
            ]
        })
        .collect();
    print_table(["PID", "QUEUE", "IN FLIGHT", "COMPLETED", "STATE", "FAULT", "SUBMITTED"], &rows);
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
