// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Every field of every frame, response and launch block, byte by byte,
//! against the layouts in shared/GLUON.md (gluon-sim e554ff7, Merlin's
//! `packet_layout.h`), gluon-sim 013add5's own decoders (`gluon_24_frames`
//! cites the lines) and, where no public source gives one, against the
//! layout our dialect files document. One row per field: the offset, the
//! width and the value it must hold.

use radiance_gluon::{
    by_id,
    by_name,
    gluon24::Gluon24,
    sim16::Sim16,
    Command,
    CopyDir,
    Dialect,
    Error,
    Launch,
    Response,
    DIALECTS, //
};

/// One field: name, byte offset, width in bytes, value.
type Row = (&'static str, usize, usize, u64);

fn field(bytes: &[u8], at: usize, width: usize) -> u64 {
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(&bytes[at..at + width]);
    u64::from_le_bytes(v)
}

/// Encodes `cmd` on `stream`, checks every row, that the rows and zeroes
/// cover the frame (no stray byte), and that it decodes back.
fn check(d: &dyn Dialect, stream: u8, cmd: Command, rows: &[Row]) -> Result<(), Error> {
    let frame = d.encode(stream, &cmd)?;
    let bytes = frame.as_bytes();
    assert_eq!(bytes.len(), d.frame_size(), "{cmd:?}");
    let mut covered = vec![false; bytes.len()];
    for &(name, at, width, value) in rows {
        assert_eq!(
            field(bytes, at, width),
            value,
            "{} {cmd:?}: field {name} at {at}",
            d.name()
        );
        covered[at..at + width].iter_mut().for_each(|c| *c = true);
    }
    for (i, b) in bytes.iter().enumerate() {
        assert!(
            covered[i] || *b == 0,
            "{} {cmd:?}: byte {i} is {b:#x}, in no field",
            d.name()
        );
    }
    assert_eq!(d.decode(bytes), Ok((stream, cmd)), "{}", d.name());
    Ok(())
}

#[test]
fn gluon_sim_16_frames() -> Result<(), Error> {
    let d = &Sim16;
    check(
        d,
        3,
        Command::Kernel {
            host_addr: 0x1122_3344,
            size: 0x60,
            gpu_addr: 0x5566_7788,
        },
        &[
            ("stream", 0, 1, 3),
            ("opcode KERNEL", 1, 1, 0),
            ("host address", 2, 4, 0x1122_3344),
            ("size", 6, 4, 0x60),
            ("GPU address", 10, 4, 0x5566_7788),
        ],
    )?;
    check(
        d,
        1,
        Command::Copy {
            src: 0x1000,
            dst: 0x2000_0000,
            len: 0x300,
            dir: CopyDir::HostToDevice,
        },
        &[
            ("stream", 0, 1, 1),
            ("opcode MEM", 1, 1, 1),
            ("sub-op COPY", 2, 1, 0),
            ("src", 3, 4, 0x1000),
            ("dst", 7, 4, 0x2000_0000),
            ("len", 11, 4, 0x300),
            ("flags", 15, 1, 0),
        ],
    )?;
    check(
        d,
        2,
        Command::Copy {
            src: 0x2000_0000,
            dst: 0x8000,
            len: 4,
            dir: CopyDir::DeviceToHost,
        },
        &[
            ("stream", 0, 1, 2),
            ("opcode MEM", 1, 1, 1),
            ("sub-op COPY", 2, 1, 0),
            ("src", 3, 4, 0x2000_0000),
            ("dst", 7, 4, 0x8000),
            ("len", 11, 4, 4),
            ("flags: device to host", 15, 1, 1),
        ],
    )?;
    check(
        d,
        0,
        Command::Copy {
            src: 0x100,
            dst: 0x200,
            len: 8,
            dir: CopyDir::DeviceToDevice,
        },
        &[
            ("opcode MEM", 1, 1, 1),
            ("src", 3, 4, 0x100),
            ("dst", 7, 4, 0x200),
            ("len", 11, 4, 8),
            ("flags: device to device (ours)", 15, 1, 2),
        ],
    )?;
    check(
        d,
        0,
        Command::Set {
            dst: 0x4000,
            value: 0xdead_beef,
            len: 64,
        },
        &[
            ("opcode MEM", 1, 1, 1),
            ("sub-op SET", 2, 1, 1),
            ("dst", 3, 4, 0x4000),
            ("value", 7, 4, 0xdead_beef),
            ("len", 11, 4, 64),
        ],
    )?;
    check(
        d,
        3,
        Command::Fence,
        &[("stream", 0, 1, 3), ("opcode FENCE", 1, 1, 3)],
    )?;
    check(
        d,
        0,
        Command::ReadCounter {
            counter: 2,
            dst: 0x1_0008,
        },
        &[
            ("opcode CSR", 1, 1, 2),
            ("counter (ours)", 2, 4, 2),
            ("dst (ours)", 6, 4, 0x1_0008),
        ],
    )?;
    Ok(())
}

/// gluon-24 against gluon-sim's own decoders at Sh-Anand/gluon 013add5
/// (013add5801b723857c87443b9358482547522e65), `gluon-sim/src/`:
/// - `common/base.rs` 34-37 (`Command`: 24 bytes), 44-52 (`cmd_type`: byte
///   1), 58-60 (`get_wait_ids`: byte 2, u64 at 3..11), 62-64 (`sid`: byte 0);
/// - `glug/engines/kernel_engine.rs` 43-48 (`KernelCommand::from_engine_cmd`:
///   engine bytes 0..8, 8..12, 12..16, i.e. frame bytes 2..10, 10..14,
///   14..18);
/// - `glug/engines/mem_engine.rs` 89-93 (`MemCommand::from_engine_cmd`:
///   sub-op at engine byte 0, fields from engine byte 1 = frame byte 3),
///   59-66 (`CopyCommand::from_bytes`: src 0..8, dst 8..16, len 16..20,
///   flags 20) and 78-85 (`SetCommand::from_bytes`: dst 0..4, value 4..8,
///   len 8..12, flags 12), and state `C0` (`flags & 1`: device to host).
///
/// KERNEL and COPY agree with Merlin's `packet_layout.h`, which has no SET
/// or WAIT. CSR's payload is ours (gluon24.rs says why).
#[test]
fn gluon_24_frames() -> Result<(), Error> {
    let d = &Gluon24;
    check(
        d,
        5,
        Command::Kernel {
            host_addr: 0x1_2233_4455,
            size: 0x80,
            gpu_addr: 0x6677_8899,
        },
        &[
            ("stream", 0, 1, 5),
            ("type KERNEL", 1, 1, 0),
            ("host address", 2, 8, 0x1_2233_4455),
            ("size", 10, 4, 0x80),
            ("GPU address", 14, 4, 0x6677_8899),
        ],
    )?;
    check(
        d,
        1,
        Command::Copy {
            src: 0x7_0000_1000,
            dst: 0x2000,
            len: 0x400,
            dir: CopyDir::HostToDevice,
        },
        &[
            ("stream", 0, 1, 1),
            ("type MEM", 1, 1, 1),
            ("sub-op COPY", 2, 1, 0),
            ("src", 3, 8, 0x7_0000_1000),
            ("dst", 11, 8, 0x2000),
            ("len", 19, 4, 0x400),
            ("flags", 23, 1, 0),
        ],
    )?;
    check(
        d,
        1,
        Command::Copy {
            src: 0x2000,
            dst: 0x9_0000_0000,
            len: 12,
            dir: CopyDir::DeviceToHost,
        },
        &[
            ("stream", 0, 1, 1),
            ("type MEM", 1, 1, 1),
            ("src", 3, 8, 0x2000),
            ("dst", 11, 8, 0x9_0000_0000),
            ("len", 19, 4, 12),
            ("flags: device to host", 23, 1, 1),
        ],
    )?;
    check(
        d,
        0,
        Command::Set {
            dst: 0x4000,
            value: 0x0102_0304,
            len: 16,
        },
        &[
            ("type MEM", 1, 1, 1),
            ("sub-op SET", 2, 1, 1),
            ("dst: SetCommand bytes 0..4", 3, 4, 0x4000),
            ("value: SetCommand bytes 4..8", 7, 4, 0x0102_0304),
            ("len: SetCommand bytes 8..12", 11, 4, 16),
            ("flags: SetCommand byte 12", 15, 1, 0),
        ],
    )?;
    check(
        d,
        7,
        Command::Wait {
            stream: 2,
            count: 0x1_0a0b_0c0d,
        },
        &[
            ("stream", 0, 1, 7),
            ("type WAIT", 1, 1, 3),
            ("stream waited on: get_wait_ids byte 2", 2, 1, 2),
            ("count: get_wait_ids bytes 3..11", 3, 8, 0x1_0a0b_0c0d),
        ],
    )?;
    check(
        d,
        0,
        Command::ReadCounter {
            counter: 1,
            dst: 0x1_0000,
        },
        &[
            ("type CSR", 1, 1, 2),
            ("counter (ours)", 2, 4, 1),
            ("dst (ours)", 6, 4, 0x1_0000),
        ],
    )?;
    Ok(())
}

#[test]
fn what_a_dialect_cannot_say_is_refused() {
    assert_eq!(
        Sim16.encode(
            0,
            &Command::Wait {
                stream: 1,
                count: 1
            }
        ),
        Err(Error::Unrepresentable)
    );
    assert_eq!(
        Gluon24.encode(0, &Command::Fence),
        Err(Error::Unrepresentable)
    );
    let far = Command::Kernel {
        host_addr: 1 << 32,
        size: 64,
        gpu_addr: 0,
    };
    assert_eq!(Sim16.encode(0, &far), Err(Error::OutOfRange));
    assert!(Gluon24.encode(0, &far).is_ok());
}

/// gluon-24's SET flags byte (15) has no defined bit: a SET with one set
/// is not ours to guess at.
#[test]
fn gluon_24_set_flags_must_be_zero() -> Result<(), Error> {
    let set = Gluon24.encode(
        0,
        &Command::Set {
            dst: 0,
            value: 1,
            len: 4,
        },
    )?;
    let mut bytes = set.as_bytes().to_vec();
    bytes[15] = 1;
    assert_eq!(Gluon24.decode(&bytes), Err(Error::Malformed));
    Ok(())
}

#[test]
fn malformed_frames_are_refused() -> Result<(), Error> {
    for d in DIALECTS {
        let good = d.encode(
            0,
            &Command::Copy {
                src: 0,
                dst: 0,
                len: 4,
                dir: CopyDir::HostToDevice,
            },
        )?;
        let mut bytes = good.as_bytes().to_vec();
        assert_eq!(
            d.decode(&bytes[..bytes.len() - 1]),
            Err(Error::Malformed),
            "{}: short",
            d.name()
        );
        bytes[2] = 7;
        assert_eq!(
            d.decode(&bytes),
            Err(Error::Malformed),
            "{}: sub-op",
            d.name()
        );
        bytes[2] = 0;
        let flags = bytes.len() - 1;
        bytes[flags] = 3;
        assert_eq!(
            d.decode(&bytes),
            Err(Error::Malformed),
            "{}: flags",
            d.name()
        );
        bytes[1] = 9;
        assert_eq!(
            d.decode(&bytes),
            Err(Error::Malformed),
            "{}: opcode",
            d.name()
        );
    }
    Ok(())
}

#[test]
fn responses() {
    for d in DIALECTS {
        let r = Response {
            stream: 3,
            status: 1,
            pc: 0x8000_0040,
            warp: 0x0506_0708,
        };
        let b = d.encode_response(&r);
        let rows: [Row; 4] = [
            ("stream", 0, 1, 3),
            ("status EXECUTION", 1, 1, 1),
            ("PC", 2, 4, 0x8000_0040),
            ("warp", 6, 4, 0x0506_0708),
        ];
        for (name, at, width, value) in rows {
            assert_eq!(field(&b, at, width), value, "{}: response {name}", d.name());
        }
        assert!(b[10..].iter().all(|&x| x == 0));
        assert_eq!(d.decode_response(&b), r);
    }
}

#[test]
fn launch_blocks() -> Result<(), Error> {
    let l = Launch {
        start_pc: 0x1000_0000,
        kernel_pc: 0x1000_0100,
        params_size: 24,
        binary_size: 0,
        stack_base: 0x2000_fffc,
        tls_base: 0x3000_0000,
        grid: [2, 3, 4],
        block: [32, 1, 1],
        printf_host_addr: 0x8000_1000,
        regs_per_thread: 32,
        shmem_per_block: 0x0001_0203,
        flags: 0x5a,
    };
    let rows: [Row; 18] = [
        ("start_pc", 0, 4, 0x1000_0000),
        ("kernel_pc", 4, 4, 0x1000_0100),
        ("params_sz", 8, 4, 24),
        ("binary_sz", 12, 4, 0),
        ("stack_base", 16, 4, 0x2000_fffc),
        ("tls_base", 20, 4, 0x3000_0000),
        ("grid x", 24, 4, 2),
        ("grid y", 28, 4, 3),
        ("grid z", 32, 4, 4),
        ("block x", 36, 4, 32),
        ("block y", 40, 4, 1),
        ("block z", 44, 4, 1),
        ("printf_host_addr", 48, 4, 0x8000_1000),
        ("regs_per_thread", 52, 1, 32),
        ("shmem_per_block (unaligned)", 53, 4, 0x0001_0203),
        ("flags", 57, 1, 0x5a),
        ("padding", 58, 4, 0),
        ("padding", 62, 2, 0),
    ];
    for d in DIALECTS {
        let mut b = [0xffu8; 80];
        d.encode_launch(&l, &mut b)?;
        assert_eq!(d.launch_header_size(), 64);
        for (name, at, width, value) in rows {
            assert_eq!(field(&b, at, width), value, "{}: launch {name}", d.name());
        }
        assert!(
            b[64..].iter().all(|&x| x == 0xff),
            "{}: the header writes only its own 64 bytes",
            d.name()
        );
        assert_eq!(d.decode_launch(&b), Ok(l));
        assert_eq!(d.decode_launch(&b[..63]), Err(Error::Malformed));
        assert_eq!(d.encode_launch(&l, &mut [0u8; 63]), Err(Error::OutOfRange));
        // No shared memory is encoded as the least there is: gluon-sim
        // divides by the field.
        d.encode_launch(
            &Launch {
                shmem_per_block: 0,
                ..l
            },
            &mut b,
        )?;
        assert_eq!(field(&b, 53, 4), 1, "{}: shmem_per_block 0", d.name());
    }
    Ok(())
}

#[test]
fn dialects_are_found_by_name_and_by_the_uapi_id() {
    use radiance_uapi::dialect;
    assert_eq!(
        by_name("gluon-sim-16").map(|d| d.id()),
        Some(dialect::GLUON_SIM_16)
    );
    assert_eq!(by_name("gluon-24").map(|d| d.id()), Some(dialect::GLUON_24));
    assert!(by_name("gluon-sim").is_none());
    for d in DIALECTS {
        assert_eq!(by_id(d.id()).map(|x| x.name()), Some(d.name()));
    }
    assert_eq!(Sim16.max_streams(), 4);
}
