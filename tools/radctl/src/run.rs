// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radctl run`: loads a Muon executable (ELF32) into a device's VRAM at its
//! link addresses and launches it, its entry point (or `--entry`) as the
//! start code and a symbol (or the entry point) as the kernel; then prints
//! whether it
//! completed or the device fault (Gluon's status, the PC, the warp), and the
//! VRAM it was asked to read back.
//!
//! An executable that follows riscv-tests' convention (a `tohost` symbol,
//! or `--tohost`) may leave its verdict in memory: once the launch
//! completes, radctl reads the word at `tohost` from VRAM: 1 is a pass,
//! `(n << 1) | 1` the failure of case n (riscv-tests' `write_tohost`).
//! Muon's riscv-tests (Cyclotron's `test/isa-tests`) store there only from
//! their trap handler: they end a pass or a failure with Muon's `tohost`
//! instruction, whose operand (0 pass, `(n << 1) | 1` fail) stops the warp
//! and stays in the core (Cyclotron's scheduler `tohost`); gluon-sim
//! reports no such value, and no response has room for it. So for those
//! radctl can tell a trap from a test that ran to its end, but not a pass
//! from a failed case, and says so.
//!
//! Exit status: 0 when the launch completed (and the `tohost` word, if any,
//! holds a pass or nothing), 4 when it completed with any other `tohost`
//! word, 3 when the device faulted or was lost during the launch
//! (what the executable did, which scripts may expect; the launch's own
//! failure decides, whatever fails after it), 1 when radctl could not load
//! or launch it or read back what was asked, 2 for bad arguments.

use crate::error::{Error, EXIT_DATA_ERROR, EXIT_DEVICE_FAULT};
use clap::Args;
use radiance::{
    node::{self, BufferObject, Frame, Placement},
    Executable, Launch,
};
use serde_json::{json, Value};
use std::{path::PathBuf, process::ExitCode};

/// `radctl run`'s arguments.
#[derive(Args)]
pub(crate) struct Run {
    /// The Muon ELF32 executable, or a fused SoC image (`.soc.elf`).
    file: PathBuf,
    /// kmod:N, N, radianceN or a /dev path.
    #[arg(long, default_value = "kmod:0")]
    device: String,
    /// Where the warps start: a symbol or an address (default: the entry
    /// point). Any address is taken, so a launch can be aimed at code that
    /// is not there, to see how the device reports it.
    #[arg(long)]
    entry: Option<String>,
    /// The kernel the start code calls: a symbol or an address (default:
    /// the entry point, for code without start code).
    #[arg(long)]
    kernel: Option<String>,
    /// Blocks per grid: X[,Y[,Z]].
    #[arg(long, default_value = "1", value_parser = dims)]
    grid: [u32; 3],
    /// Threads per block: X[,Y[,Z]].
    #[arg(long, default_value = "1", value_parser = dims)]
    block: [u32; 3],
    /// The kernel's params: hex bytes, or @FILE for a file's bytes.
    #[arg(long, default_value = "", value_parser = params)]
    params: Params,
    /// Registers per thread.
    #[arg(long, default_value_t = 32)]
    regs: u8,
    /// Bytes of VRAM for the start code's stacks (0: none).
    #[arg(long, default_value_t = 64 << 10)]
    stack: u64,
    /// Bytes of VRAM for thread-local storage (0: none).
    #[arg(long, default_value_t = 64 << 10)]
    tls: u64,
    /// VRAM to print once the launch is over: ADDR:LEN, inside the
    /// executable's segments (or its stack or TLS). May be repeated.
    #[arg(long = "read", value_parser = range)]
    reads: Vec<(u32, u32)>,
    /// riscv-tests' `tohost`, for an executable without that symbol: a
    /// symbol or an address.
    #[arg(long)]
    tohost: Option<String>,
}

/// What a riscv-tests executable left in its `tohost` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Passed,
    /// The number of the case that failed.
    Failed(u32),
    /// Nothing: the verdict, if any, went where no device reports it.
    NotInMemory,
    /// A value the convention has no meaning for.
    Unknown(u32),
}

impl Verdict {
    fn of(tohost: u32) -> Self {
        match tohost {
            0 => Verdict::NotInMemory,
            1 => Verdict::Passed,
            v if v & 1 == 1 => Verdict::Failed(v >> 1),
            v => Verdict::Unknown(v),
        }
    }

    fn describe(self) -> String {
        match self {
            Verdict::Passed => "passed".into(),
            Verdict::Failed(n) => format!("failed case {n}"),
            Verdict::NotInMemory => "not in memory: a Muon riscv-test hands pass or fail to its tohost \
                instruction, which no device reports (gluon-sim drops it); it did not trap"
                .into(),
            Verdict::Unknown(v) => format!("tohost holds {v:#x}, which is no riscv-tests verdict"),
        }
    }

    /// Whether the run counts as a success.
    fn acceptable(self) -> bool {
        matches!(self, Verdict::Passed | Verdict::NotInMemory)
    }
}

/// Params bytes (a type of its own: clap would take `Vec<u8>` as a list).
#[derive(Clone, Debug)]
struct Params(Vec<u8>);

fn number(s: &str) -> Result<u32, String> {
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|e| format!("{s}: {e}"))
}

fn dims(s: &str) -> Result<[u32; 3], String> {
    let mut out = [1; 3];
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("{s}: at most three dimensions"));
    }
    for (d, p) in out.iter_mut().zip(parts) {
        *d = number(p)?;
        if *d == 0 {
            return Err(format!("{s}: every dimension is at least 1"));
        }
    }
    Ok(out)
}

fn params(s: &str) -> Result<Params, String> {
    if let Some(path) = s.strip_prefix('@') {
        return std::fs::read(path).map(Params).map_err(|e| format!("{path}: {e}"));
    }
    // Only hex digits, which are one byte each: the pairs below are chars.
    if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{s}: hex bytes (0-9, a-f), or @FILE"));
    }
    if s.len() % 2 != 0 {
        return Err(format!("{s}: hex bytes come in pairs of digits"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("{s}: {e}")))
        .collect::<Result<_, _>>()
        .map(Params)
}

fn range(s: &str) -> Result<(u32, u32), String> {
    let (addr, len) = s.split_once(':').ok_or_else(|| format!("{s}: ADDR:LEN"))?;
    Ok((number(addr)?, number(len)?))
}

/// How the launch ended.
enum Outcome {
    Completed,
    Faulted(node::QueueFault),
}

/// Runs `radctl run`.
pub(crate) fn run(args: &Run, as_json: bool) -> ExitCode {
    match run_inner(args, as_json) {
        Ok((Outcome::Completed, Some((_, v)))) if !v.acceptable() => ExitCode::from(EXIT_DATA_ERROR),
        Ok((Outcome::Completed, _)) => ExitCode::SUCCESS,
        Ok((Outcome::Faulted(_), _)) => ExitCode::from(EXIT_DEVICE_FAULT),
        Err(e) => Error::from(e).report(),
    }
}

/// What the launch did, and where the executable says it keeps its
/// riscv-tests verdict with what it holds.
type Ran = (Outcome, Option<(u32, Verdict)>);

fn run_inner(args: &Run, as_json: bool) -> radiance::Result<Ran> {
    let bytes =
        std::fs::read(&args.file).map_err(|e| radiance::Error::io(format!("reading {}", args.file.display()), &e))?;
    let exe = Executable::parse(&bytes)?;
    let named = |name: &str| match exe.symbol(name) {
        Some(addr) => Ok(addr),
        None => number(name).map_err(|_| radiance::Error::InvalidArgument(format!("no symbol {name}"))),
    };
    let address = |name: &Option<String>| name.as_deref().map_or(Ok(exe.entry()), named);
    let (start_pc, kernel_pc) = (address(&args.entry)?, address(&args.kernel)?);
    let tohost = match &args.tohost {
        Some(name) => Some(named(name)?),
        None => exe.symbol("tohost"),
    };
    let dev = node::Device::open(&args.device)?;
    let mut q = dev.create_queue(256)?;
    let image = dev.load(&mut q, &exe)?;
    let vram = |size: u64| (size > 0).then(|| dev.create_bo(size, Placement::Vram, false)).transpose();
    let (stack, tls) = (vram(args.stack)?, vram(args.tls)?);
    let frame =
        Frame { stack: stack.as_ref().map(|bo| (bo, 0, args.stack)), tls: tls.as_ref().map(|bo| (bo, 0, args.tls)) };
    let launch = Launch {
        start_pc,
        kernel_pc,
        grid: args.grid,
        block: args.block,
        regs_per_thread: args.regs,
        params: args.params.0.clone(),
        ..Default::default()
    };
    q.launch(&dev, &launch, frame)?;
    let outcome = match q.finish(None) {
        Ok(()) => Outcome::Completed,
        Err(e) => Outcome::Faulted(q.fault().ok_or(e)?),
    };
    // What comes after a fault (the device may be gone) is reported, but
    // the fault is the launch's answer.
    let owned: Vec<&BufferObject> = [Some(&image), stack.as_ref(), tls.as_ref()].into_iter().flatten().collect();
    let after = (|| -> radiance::Result<_> {
        if args.reads.is_empty() && tohost.is_none() {
            return Ok((Vec::new(), None));
        }
        // A faulted queue runs nothing more: the reads go through another.
        let mut reader = dev.create_queue(16)?;
        let mut reads = Vec::new();
        for &(addr, len) in &args.reads {
            reads.push((addr, read(&dev, &mut reader, &owned, addr, len)?));
        }
        let verdict = match (tohost, &outcome) {
            (Some(at), Outcome::Completed) => {
                let word = read(&dev, &mut reader, &owned, at, 4)?;
                Some((at, Verdict::of(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))))
            }
            _ => None,
        };
        Ok((reads, verdict))
    })();
    let (reads, verdict) = match (after, &outcome) {
        (Ok(after), _) => after,
        (Err(e), Outcome::Faulted(_)) => {
            eprintln!("radctl: after the fault: {e}");
            (Vec::new(), None)
        }
        (Err(e), Outcome::Completed) => return Err(e),
    };
    if as_json {
        println!("{}", report_json(args, &exe, &launch, &outcome, verdict, &reads));
    } else {
        report(args, &exe, &launch, &outcome, verdict, &reads);
    }
    Ok((outcome, verdict))
}

/// `len` bytes of VRAM at `addr`, which must lie in one of `owned`.
fn read(
    dev: &node::Device,
    q: &mut node::Queue,
    owned: &[&BufferObject],
    addr: u32,
    len: u32,
) -> radiance::Result<Vec<u8>> {
    let (addr, len) = (u64::from(addr), u64::from(len));
    let bo = owned
        .iter()
        .find(|bo| bo.device_address() <= addr && addr + len <= bo.device_address() + bo.size())
        .ok_or_else(|| {
            radiance::Error::InvalidArgument(format!(
                "{addr:#x}:{len} is not inside the executable's segments, stack or TLS"
            ))
        })?;
    let host = dev.create_bo(len.max(1), Placement::Host, true)?;
    q.copy(bo, addr - bo.device_address(), &host, 0, len)?;
    q.finish(None)?;
    Ok(host.map()?[..len as usize].to_vec())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether the device itself reported the fault, with a PC and a warp; a
/// fault the kernel found (a lost device, a timeout, a bad packet) has
/// only its errno.
fn device_fault(f: &node::QueueFault) -> bool {
    f.err_code != 0
}

/// A fault as `run` prints it: Gluon's status, PC and warp only where the
/// device reported them.
fn fault_text(f: &node::QueueFault) -> String {
    if device_fault(f) {
        format!("Gluon status {} at pc {:#010x}, warp {} ({})", f.err_code, f.err_pc, f.err_thread, f.error())
    } else {
        f.error().to_string()
    }
}

fn report(
    args: &Run,
    exe: &Executable,
    launch: &Launch,
    outcome: &Outcome,
    verdict: Option<(u32, Verdict)>,
    reads: &[(u32, Vec<u8>)],
) {
    let (first, end) = exe.span();
    println!("loaded {}: {} segment(s) at {first:#010x}..{end:#010x}", args.file.display(), exe.segments().len());
    let dims = |d: [u32; 3]| format!("{},{},{}", d[0], d[1], d[2]);
    println!(
        "launch: start_pc {:#010x} kernel_pc {:#010x} grid {} block {}",
        launch.start_pc,
        launch.kernel_pc(),
        dims(launch.grid),
        dims(launch.block)
    );
    match outcome {
        Outcome::Completed => println!("completed"),
        Outcome::Faulted(f) => println!("fault: {}", fault_text(f)),
    }
    if let Some((at, v)) = verdict {
        println!("riscv-tests verdict (tohost {at:#010x}): {}", v.describe());
    }
    for (addr, bytes) in reads {
        for (i, line) in bytes.chunks(16).enumerate() {
            let words: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
            println!("{:#010x}  {}", *addr as usize + 16 * i, words.join(" "));
        }
    }
}

fn report_json(
    args: &Run,
    exe: &Executable,
    launch: &Launch,
    outcome: &Outcome,
    verdict: Option<(u32, Verdict)>,
    reads: &[(u32, Vec<u8>)],
) -> Value {
    let segments: Vec<Value> = exe
        .segments()
        .iter()
        .map(|s| json!({ "address": s.addr, "file_bytes": s.data.len(), "memory_bytes": s.mem_size }))
        .collect();
    let (status, fault) = match outcome {
        Outcome::Completed => ("completed", Value::Null),
        Outcome::Faulted(f) => (
            "faulted",
            if device_fault(f) {
                json!({
                    "errno": f.error, "err_code": f.err_code, "pc": f.err_pc, "warp": f.err_thread,
                    "message": f.error().to_string(),
                })
            } else {
                json!({ "errno": f.error, "err_code": null, "pc": null, "warp": null, "message": f.error().to_string() })
            },
        ),
    };
    json!({
        "file": args.file.display().to_string(),
        "segments": segments,
        "start_pc": launch.start_pc,
        "kernel_pc": launch.kernel_pc(),
        "grid": launch.grid,
        "block": launch.block,
        "status": status,
        "fault": fault,
        "riscv_tests": verdict.map(|(at, v)| {
            let (result, case) = match v {
                Verdict::Passed => ("passed", None),
                Verdict::Failed(n) => ("failed", Some(n)),
                Verdict::NotInMemory => ("not_in_memory", None),
                Verdict::Unknown(_) => ("unknown", None),
            };
            json!({ "tohost": at, "result": result, "case": case, "message": v.describe() })
        }),
        "reads": reads.iter().map(|(addr, bytes)| json!({ "address": addr, "hex": hex(bytes) })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_hex_byte_pairs() {
        assert_eq!(params("00ff10").map(|p| p.0), Ok(vec![0x00, 0xff, 0x10]));
        assert_eq!(params("").map(|p| p.0), Ok(vec![]));
        assert!(params("abc").unwrap_err().contains("pairs"));
        // Not a digit, or not even one byte: an error, never a panic.
        assert!(params("0g").unwrap_err().contains("hex bytes"));
        assert!(params("a\u{e9}a").unwrap_err().contains("hex bytes"));
    }

    /// riscv-tests' `write_tohost` stores 1 for a pass, `(n << 1) | 1` for
    /// case n failing; Muon's store nothing unless they trap.
    #[test]
    fn riscv_tests_verdicts() {
        assert_eq!(Verdict::of(1), Verdict::Passed);
        assert_eq!(Verdict::of(7), Verdict::Failed(3));
        assert_eq!(Verdict::of(0), Verdict::NotInMemory);
        assert!(Verdict::of(0).acceptable() && Verdict::of(1).acceptable());
        assert!(!Verdict::of(7).acceptable() && !Verdict::of(6).acceptable());
        assert_eq!(Verdict::of(6), Verdict::Unknown(6));
    }

    /// A lost device's fault has an errno and nothing of Gluon's: no
    /// status, PC or warp is printed for it.
    #[test]
    fn a_fault_prints_only_what_is_known() {
        let lost = node::QueueFault { queue: 1, error: 19, packet: 2, err_code: 0, err_pc: 0, err_thread: 0 };
        let text = fault_text(&lost);
        assert!(!text.contains("Gluon status") && !text.contains("pc 0x"), "{text}");
        assert!(text.contains("queue 1, packet 2 faulted"), "{text}");
        let bad_pc = node::QueueFault { err_code: 1, err_pc: 0x1000_3000, err_thread: 5, ..lost };
        let text = fault_text(&bad_pc);
        assert!(text.starts_with("Gluon status 1 at pc 0x10003000, warp 5 ("), "{text}");
    }

    #[test]
    fn dims_and_ranges() {
        assert_eq!(dims("4"), Ok([4, 1, 1]));
        assert_eq!(dims("2,0x10,3"), Ok([2, 16, 3]));
        assert!(dims("1,0").unwrap_err().contains("at least 1"));
        assert!(dims("1,1,1,1").unwrap_err().contains("three"));
        assert_eq!(range("0x100:16"), Ok((0x100, 16)));
        assert!(range("0x100").is_err());
    }
}
