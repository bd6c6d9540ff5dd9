// SPDX-License-Identifier: GPL-2.0 OR MIT

//! `radctl submit`: puts one kind of work on a fresh queue of a device,
//! waits for it, reads back what it made and compares that, byte for byte,
//! with what it should have made. The report counts the packets the queue
//! was given and the bytes compared; the first byte that differs fails the
//! command with a data error (exit status 4) that names its offset.

use crate::error::{Mismatch, Result};
use clap::{Args, Subcommand};
use radiance::{
    node::{BufferObject, Device, Frame, Placement, Queue},
    Launch, Pattern,
};
use radiance_uapi::builtin;
use serde_json::json;
use std::time::{Duration, Instant};

/// `radctl submit`'s arguments.
#[derive(Args)]
pub(crate) struct Submit {
    #[command(subcommand)]
    work: Work,
    /// kmod:N, N, radianceN or a /dev path.
    #[arg(long, default_value = "kmod:0", global = true)]
    device: String,
    /// Inverts byte N of what was read back before the comparison: a data
    /// error on purpose, to test how radctl reports one.
    #[arg(long, value_name = "N", global = true, hide = true)]
    flip_byte: Option<usize>,
}

#[derive(Subcommand)]
enum Work {
    /// NOP packets.
    Nop {
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// Fill VRAM with a 32-bit pattern (a last partial word with the
    /// pattern's first bytes), copy it back to host memory, check.
    Fill {
        #[arg(long, default_value_t = 4096)]
        bytes: u64,
        #[arg(long, default_value_t = 0xdead_beef, value_parser = parse_u32)]
        pattern: u32,
    },
    /// Copy host -> VRAM -> host and compare.
    Copy {
        #[arg(long, default_value_t = 1 << 20)]
        bytes: u64,
    },
    /// Launch the built-in vector add over `count` elements and check them.
    Launch {
        #[arg(long, default_value_t = 1024)]
        count: u32,
    },
    /// Launch the built-in printf over `count` threads, print what the
    /// device printed and check it.
    Printf {
        #[arg(long, default_value_t = 4)]
        count: u32,
    },
}

fn parse_u32(s: &str) -> Result<u32, String> {
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|e| e.to_string())
}

/// What a piece of work should have made, and what was read back.
#[derive(Default)]
struct Readback {
    expected: Vec<u8>,
    got: Vec<u8>,
}

/// Runs `radctl submit`.
pub(crate) fn submit(args: &Submit, as_json: bool) -> Result<()> {
    let dev = Device::open(&args.device)?;
    let mut q = dev.create_queue(1024)?;
    let start = Instant::now();
    let (name, mut readback) = match args.work {
        Work::Nop { count } => ("nop", nop(&mut q, count)?),
        Work::Fill { bytes, pattern } => ("fill", fill(&dev, &mut q, bytes, pattern)?),
        Work::Copy { bytes } => ("copy", copy(&dev, &mut q, bytes)?),
        Work::Launch { count } => ("launch", vecadd(&dev, &mut q, count)?),
        Work::Printf { count } => ("printf", printf(&dev, &mut q, count, as_json)?),
    };
    if let Some(offset) = args.flip_byte {
        flip(&mut readback.got, offset)?;
    }
    let checked = compare(name, &readback.expected, &readback.got)?;
    report(name, q.written(), checked, start.elapsed(), as_json);
    Ok(())
}

fn nop(q: &mut Queue, count: u32) -> Result<Readback> {
    for _ in 0..count {
        q.nop()?;
    }
    q.finish(None)?;
    Ok(Readback::default())
}

/// Fills `bytes` of VRAM with `pattern` and copies them back to host memory.
fn fill(dev: &Device, q: &mut Queue, bytes: u64, pattern: u32) -> Result<Readback> {
    let (vram, host) = (dev.create_bo(bytes, Placement::Vram, false)?, dev.create_bo(bytes, Placement::Host, true)?);
    let words = bytes & !3;
    if words > 0 {
        q.fill(&vram, 0, words, Pattern::U32(pattern))?;
    }
    // A 32-bit fill covers whole words: the partial one is filled byte by byte.
    for (offset, byte) in (words..bytes).zip(pattern.to_le_bytes()) {
        q.fill(&vram, offset, 1, Pattern::U8(byte))?;
    }
    q.barrier()?;
    q.copy(&vram, 0, &host, 0, bytes)?;
    q.finish(None)?;
    let expected = pattern.to_le_bytes().into_iter().cycle().take(bytes as usize).collect();
    Ok(Readback { expected, got: read_host(&host, bytes)? })
}

/// Copies `bytes` of host memory to VRAM and back into other host memory.
fn copy(dev: &Device, q: &mut Queue, bytes: u64) -> Result<Readback> {
    let vram = dev.create_bo(bytes, Placement::Vram, false)?;
    let (src, dst) = (dev.create_bo(bytes, Placement::Host, true)?, dev.create_bo(bytes, Placement::Host, true)?);
    let expected: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    src.map()?.get_mut(..expected.len()).ok_or_else(|| too_small(&src))?.copy_from_slice(&expected);
    q.copy(&src, 0, &vram, 0, bytes)?;
    q.barrier()?;
    q.copy(&vram, 0, &dst, 0, bytes)?;
    q.finish(None)?;
    Ok(Readback { expected, got: read_host(&dst, bytes)? })
}

/// Launches the built-in vector add on `count` words (a[i] = i,
/// b[i] = 3i) and copies c back to host memory: c[i] should be 4i.
fn vecadd(dev: &Device, q: &mut Queue, count: u32) -> Result<Readback> {
    let size = u64::from(count) * 4;
    // Not mappable: not every device lets the CPU map VRAM (gluon-sim keeps
    // it in its own process), so the data goes in and out by queue packets.
    let bos = [0, 1, 2].map(|_| dev.create_bo(size, Placement::Vram, false));
    let [a, b, c] = bos;
    let (a, b, c) = (a?, b?, c?);
    let words = |scale: u32| -> Vec<u8> { (0..count).flat_map(|i| i.wrapping_mul(scale).to_le_bytes()).collect() };
    q.update(dev, &words(1), &a, 0)?;
    q.update(dev, &words(3), &b, 0)?;
    q.barrier()?;
    let addr = |bo: &BufferObject| bo.device_address() as u32;
    let launch = builtin_launch(builtin::VECADD_U32, count, 256, &[addr(&a), addr(&b), addr(&c), count]);
    q.launch(dev, &launch, Frame::default())?;
    q.barrier()?;
    let out = dev.create_bo(size, Placement::Host, true)?;
    q.copy(&c, 0, &out, 0, size)?;
    q.finish(None)?;
    Ok(Readback { expected: words(4), got: read_host(&out, size)? })
}

/// Launches the built-in printf over `count` threads, and prints the text
/// (but for JSON): thread t prints `thread t: t`, in order of t.
fn printf(dev: &Device, q: &mut Queue, count: u32, as_json: bool) -> Result<Readback> {
    let launch = builtin_launch(builtin::PRINTF_U32, count, 64, &[0, count]);
    // Room for every line of up to 24 bytes, within one page; the device
    // keeps what fits.
    let limit = count.saturating_mul(24).min(3000);
    let out = q.launch_with_printf(dev, &launch, limit)?;
    q.finish(None)?;
    let text = out.text()?;
    if !as_json {
        print!("{text}");
    }
    let expected = (0..count).flat_map(|t| format!("thread {t}: {t}\n").into_bytes()).take(limit as usize).collect();
    Ok(Readback { expected, got: text.into_bytes() })
}

/// A launch of the built-in kernel at `start_pc` over `threads` threads in
/// blocks of `block`, with the words `params` as its params.
fn builtin_launch(start_pc: u32, threads: u32, block: u32, params: &[u32]) -> Launch {
    Launch {
        start_pc,
        grid: [threads.div_ceil(block), 1, 1],
        block: [block, 1, 1],
        regs_per_thread: 8,
        params: params.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..Default::default()
    }
}

/// The first `len` bytes of a mappable host buffer object.
fn read_host(bo: &BufferObject, len: u64) -> Result<Vec<u8>> {
    Ok(bo.map()?.get(..len as usize).ok_or_else(|| too_small(bo))?.to_vec())
}

fn too_small(bo: &BufferObject) -> radiance::Error {
    radiance::Error::OutOfRange(format!("a mapping of {} bytes is shorter than its buffer object", bo.size()))
}

/// Inverts byte `offset` of `got` (`--flip-byte`).
fn flip(got: &mut [u8], offset: usize) -> Result<()> {
    let len = got.len();
    let byte = got
        .get_mut(offset)
        .ok_or_else(|| radiance::Error::InvalidArgument(format!("--flip-byte {offset}: {len} bytes were read back")))?;
    *byte = !*byte;
    Ok(())
}

/// Compares what `what` read back with what it should have made: the
/// bytes compared, or the first that differs (or where one ends early).
fn compare(what: &'static str, expected: &[u8], got: &[u8]) -> Result<u64, Mismatch> {
    match expected.iter().zip(got).position(|(e, g)| e != g) {
        None if expected.len() == got.len() => Ok(expected.len() as u64),
        differs => {
            let offset = differs.unwrap_or(expected.len().min(got.len()));
            Err(Mismatch { what, offset, expected: expected.get(offset).copied(), got: got.get(offset).copied() })
        }
    }
}

fn report(name: &str, packets: u64, checked: u64, elapsed: Duration, as_json: bool) {
    if as_json {
        let seconds = elapsed.as_secs_f64();
        println!(
            "{}",
            json!({ "submitted": name, "packets": packets, "bytes": checked, "ok": true, "seconds": seconds })
        );
    } else {
        println!("{name}: {packets} packet(s), {checked} bytes checked, ok in {:.3} ms", elapsed.as_secs_f64() * 1e3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_data_counts_every_byte_compared() {
        assert_eq!(compare("copy", b"abcd", b"abcd"), Ok(4));
        assert_eq!(compare("nop", b"", b""), Ok(0));
    }

    #[test]
    fn a_differing_byte_is_named_by_offset_expected_and_got() {
        let m = compare("fill", &[0xef, 0xbe, 0xad, 0xde], &[0xef, 0xbe, 0x52, 0x00]);
        assert_eq!(m, Err(Mismatch { what: "fill", offset: 2, expected: Some(0xad), got: Some(0x52) }));
    }

    #[test]
    fn data_that_ends_early_or_late_differs_where_it_ends() {
        let short = compare("printf", b"thread 0: 0\n", b"thread 0");
        assert_eq!(short, Err(Mismatch { what: "printf", offset: 8, expected: Some(b':'), got: None }));
        let long = compare("printf", b"ab", b"abc");
        assert_eq!(long, Err(Mismatch { what: "printf", offset: 2, expected: None, got: Some(b'c') }));
    }

    #[test]
    fn a_flipped_byte_fails_the_comparison_there() {
        let expected = vec![7u8; 10003];
        let mut got = expected.clone();
        flip(&mut got, 10001).unwrap();
        assert_eq!(
            compare("fill", &expected, &got),
            Err(Mismatch { what: "fill", offset: 10001, expected: Some(7), got: Some(!7) })
        );
        assert!(flip(&mut got, 10003).is_err(), "past what was read back");
    }
}
