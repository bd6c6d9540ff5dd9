// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The Radiance ioctl ABI: the one source of truth shared by the kernel module
//! and userspace.
//!
//! The kernel module includes this file directly (`#[path = ...] mod uapi;`),
//! so it must stay `no_std` and free of dependencies. The C header
//! `include/radiance.h` mirrors it for C users; `tests/c_header.rs` compiles
//! that header and checks every size, offset and ioctl number against this
//! file, so the two cannot drift.
//!
//! Rules for every argument struct:
//! - `#[repr(C)]`, fixed-width integer fields only, explicit padding
//!   (`tests/c_header.rs` checks that the fields cover every byte);
//! - `flags` fields reject unknown bits and `pad`/reserved fields must be zero
//!   (EINVAL), so they can be given a meaning later;
//! - a released struct is never reordered or resized in place: it grows at the
//!   end. The ioctl number encodes the size userspace was built with; the
//!   kernel accepts any size from the first released one up to its own and
//!   zero-extends the rest.

#![no_std]

/// Major ABI version: bumped only for an incompatible change (never, we hope).
pub const ABI_MAJOR: u16 = 1;
/// Minor ABI version: bumped when structs grow or ioctls are added.
pub const ABI_MINOR: u16 = 15;

/// The ioctl type byte ("magic") of every Radiance ioctl; unassigned in
/// Documentation/userspace-api/ioctl/ioctl-number.rst.
pub const IOCTL_TYPE: u8 = 0xB9;

/// Most devices a host can have (`/dev/radiance0` .. `/dev/radiance7`).
pub const MAX_DEVICES: u32 = 8;

// Linux's generic `_IOC` encoding (include/uapi/asm-generic/ioctl.h), which
// x86, arm64 and riscv share.
const IOC_NRBITS: u32 = 8;
const IOC_TYPEBITS: u32 = 8;
const IOC_SIZEBITS: u32 = 14;
const IOC_NRSHIFT: u32 = 0;
const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;

/// `_IOC_WRITE`: userspace writes the argument (kernel reads it).
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: userspace reads the argument (kernel writes it).
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)`.
pub const fn ioc(dir: u32, nr: u8, size: usize) -> u32 {
    (dir << IOC_DIRSHIFT)
        | ((IOCTL_TYPE as u32) << IOC_TYPESHIFT)
        | ((nr as u32) << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
}

/// `_IOWR(type, nr, T)` for a Radiance ioctl.
pub const fn iowr<T>(nr: u8) -> u32 {
    ioc(IOC_READ | IOC_WRITE, nr, core::mem::size_of::<T>())
}

/// The fields of an ioctl command word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoctlCmd {
    /// `IOC_READ | IOC_WRITE` bits.
    pub dir: u32,
    /// The type byte; ours is [`IOCTL_TYPE`].
    pub ty: u8,
    /// The command number within the type.
    pub nr: u8,
    /// The argument size the caller was built with.
    pub size: usize,
}

impl IoctlCmd {
    /// Splits a command word into its fields (`_IOC_DIR` and friends).
    pub const fn decode(cmd: u32) -> Self {
        Self {
            dir: cmd >> IOC_DIRSHIFT,
            ty: (cmd >> IOC_TYPESHIFT) as u8,
            nr: (cmd >> IOC_NRSHIFT) as u8,
            size: ((cmd >> IOC_SIZESHIFT) & ((1 << IOC_SIZEBITS) - 1)) as usize,
        }
    }
}

/// What kind of hardware stands behind a device node.
pub mod backend {
    /// The software Gluon inside the kernel module (no hardware).
    pub const EMULATED: u32 = 1;
    /// A Radiance FPGA board on PCI.
    pub const PCI: u32 = 2;
    /// A Radiance SoC described by the device tree.
    pub const PLATFORM: u32 = 3;
    /// A Gluon served by a userspace process through the control node
    /// (ABI 1.9): gluon-sim through `gluon-bridge`, an RTL simulation, a
    /// bring-up link.
    pub const USER: u32 = 4;
}

/// Built-in kernels of the emulated Gluon (and of the host backend, which
/// matches it). The emulator cannot execute Radiance machine code, so a launch
/// whose entry PC is one of these runs the built-in; any other entry PC is
/// answered with a bad-PC error, as hardware would answer it.
///
/// Every built-in reads its parameters as little-endian `u32`s from the
/// launch's params, and thread `t` of the grid (`t = block_linear *
/// threads_per_block + thread_linear`) handles element `t`; threads past the
/// element count do nothing.
pub mod builtin {
    /// `dst[t] = value` for `t < count`. Params: `dst, value, count`.
    pub const FILL_U32: u32 = 0xFFFF_0000;
    /// `dst[t] = src[t]` for `t < count` (u32 elements). Params: `dst, src, count`.
    pub const COPY_U32: u32 = 0xFFFF_0100;
    /// `c[t] = a[t] + b[t]` (wrapping) for `t < count`. Params: `a, b, c, count`.
    pub const VECADD_U32: u32 = 0xFFFF_0200;
    /// Never completes: for timeout and reset tests. No params.
    pub const SPIN: u32 = 0xFFFF_0300;
    /// Thread `t < count` prints `thread <t>: <value + t>` and a newline
    /// into the launch's printf ring. Params: `value, count`.
    pub const PRINTF_U32: u32 = 0xFFFF_0400;
    /// Start code (ABI 1.8): reads the launch block's `kernel_pc` and runs
    /// that built-in, as real start code calls the kernel at `kernel_pc`.
    pub const START: u32 = 0xFFFF_0500;
    /// Every built-in entry PC.
    pub const ALL: [u32; 6] = [FILL_U32, COPY_U32, VECADD_U32, SPIN, PRINTF_U32, START];
}

/// The wire format a device speaks (GET_INFO's `dialect`, ABI 1.8); the
/// kernel translates every packet into it.
pub mod dialect {
    /// 16-byte frames of gluon-sim (Sh-Anand/gluon e554ff7).
    pub const GLUON_SIM_16: u32 = 1;
    /// 24-byte frames with 64-bit host addresses and WAIT (Merlin's
    /// `packet_layout.h`).
    pub const GLUON_24: u32 = 2;
}

/// What a device implements (GET_INFO's `caps`, ABI 1.8). Userspace sees the
/// same packets on every device: the kernel makes up what a device lacks
/// (Documentation/design/gluon.md), so these are for information and tests.
pub mod caps {
    /// MEM SET; without it fills are copies of a pattern from host memory.
    pub const SET: u64 = 1 << 0;
    /// FENCE.
    pub const FENCE: u64 = 1 << 1;
    /// WAIT on another stream.
    pub const WAIT: u64 = 1 << 2;
    /// COPY from VRAM to VRAM; without it such copies bounce through host
    /// memory.
    pub const COPY_D2D: u64 = 1 << 3;
    /// Counter reads (READ_COUNTER, TIMESTAMP); without them those packets
    /// fail with EOPNOTSUPP.
    pub const COUNTERS: u64 = 1 << 4;
    /// Memory accesses of any size and alignment; without it, every
    /// address and length the device sees is a multiple of 4.
    pub const SUBWORD: u64 = 1 << 5;
    /// The CPU can map VRAM (mappable VRAM buffer objects); without it,
    /// BO_CREATE of a [`super::bo_flags::MAPPABLE`] VRAM BO fails with
    /// EOPNOTSUPP (the VRAM lives where the kernel cannot map it, e.g. in
    /// gluon-sim's process).
    pub const VRAM_MAPPABLE: u64 = 1 << 6;
}

/// Length of [`GetInfo::name`], including the terminating NUL.
pub const NAME_LEN: usize = 32;

/// `RADIANCE_IOCTL_GET_INFO`: what the device is and what it can do.
///
/// `flags` and `pad0` are inputs and must be zero; everything else is output.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetInfo {
    /// In: no flags are defined yet; must be zero.
    pub flags: u32,
    /// In: must be zero.
    pub pad0: u32,
    /// Out: [`ABI_MAJOR`] of the running module.
    pub abi_major: u16,
    /// Out: [`ABI_MINOR`] of the running module.
    pub abi_minor: u16,
    /// Out: N of `/dev/radianceN`.
    pub device_index: u32,
    /// Out: one of [`backend`].
    pub backend: u32,
    /// Out: zero.
    pub pad1: u32,
    /// Out: a human-readable device name, NUL-terminated.
    pub name: [u8; NAME_LEN],
    /// Out: SIMT cores.
    pub cores: u32,
    /// Out: hardware warps per core.
    pub warps_per_core: u32,
    /// Out: threads (lanes) per warp.
    pub threads_per_warp: u32,
    /// Out: most user-mode queues the device accepts at once.
    pub max_queues: u32,
    /// Out: bytes of device memory.
    pub vram_size: u64,
    /// Out: bytes per user queue packet.
    pub packet_size: u32,
    /// Out: bytes of a doorbell page mapping.
    pub doorbell_page_size: u32,
    /// Out: `feature::*` bits; none are defined in ABI 1.0.
    pub features: u64,
    /// Out (ABI 1.4): bit `i` set: [`builtin::ALL`]`[i]` runs on this device.
    pub builtins: u32,
    /// Out: zero.
    pub pad2: u32,
    /// Out (ABI 1.8): one of [`dialect`].
    pub dialect: u32,
    /// Out (ABI 1.8): the device's hardware streams; queues are spread
    /// over them, each queue's packets in order on one stream.
    pub streams: u32,
    /// Out (ABI 1.8): [`caps`] bits.
    pub caps: u64,
    /// Out (ABI 1.14): bit `i` set: stream `i` is retired and runs nothing
    /// (a device served by a process said so with USER_RETIRE).
    pub retired_streams: u32,
    /// Out: zero.
    pub pad3: u32,
}

/// Where a buffer object's memory lives.
pub mod placement {
    /// Device memory. Its device address is the raw VRAM address.
    pub const VRAM: u32 = 1;
    /// Pinned system memory the device reaches by DMA (32-bit addresses).
    /// Its DMA addresses stay inside the kernel: `device_address` is 0.
    pub const HOST: u32 = 2;
}

/// `BoCreate::flags`.
pub mod bo_flags {
    /// The BO can be mmapped: it is page-aligned and gets an mmap offset.
    /// EOPNOTSUPP for VRAM on a device without [`super::caps::VRAM_MAPPABLE`].
    pub const MAPPABLE: u32 = 1 << 0;
    /// ABI 1.8, VRAM only: the BO is at `device_address`, which is an input
    /// too (executables are linked at fixed addresses). EBUSY if any of the
    /// range is taken; EINVAL outside the allocatable VRAM or not aligned
    /// (256 B, or a page if mappable).
    pub const FIXED_ADDRESS: u32 = 1 << 1;
    /// Every flag the kernel knows; it refuses any other bit.
    pub const ALL: u32 = MAPPABLE | FIXED_ADDRESS;
}

/// `RADIANCE_IOCTL_BO_CREATE`: allocates a buffer object.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoCreate {
    /// In: bytes; rounded up to the allocation granule (256 B, or a page if
    /// mappable). BO_INFO reports the rounded size.
    pub size: u64,
    /// In: one of [`placement`].
    pub placement: u32,
    /// In: [`bo_flags`].
    pub flags: u32,
    /// Out: the BO's handle in this file (never 0).
    pub handle: u32,
    /// In: must be zero.
    pub pad: u32,
    /// Out: the address the device uses for byte 0 (VRAM placement); in
    /// too with [`bo_flags::FIXED_ADDRESS`] (ABI 1.8).
    pub device_address: u64,
    /// Out: the offset to mmap this file at (0 unless mappable).
    pub mmap_offset: u64,
}

/// `RADIANCE_IOCTL_BO_DESTROY`: drops the handle. Memory stays alive while
/// mappings of it exist.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoDestroy {
    /// In: a handle from BO_CREATE.
    pub handle: u32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_BO_INFO`: what a handle refers to.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoInfo {
    /// In: a handle from BO_CREATE.
    pub handle: u32,
    /// In: must be zero.
    pub pad: u32,
    /// Out: bytes (as rounded at creation).
    pub size: u64,
    /// Out: one of [`placement`].
    pub placement: u32,
    /// Out: [`bo_flags`] it was created with.
    pub flags: u32,
    /// Out: as in [`BoCreate`].
    pub device_address: u64,
    /// Out: as in [`BoCreate`].
    pub mmap_offset: u64,
}

/// `BoExport::flags`.
pub mod export_flags {
    /// The new file descriptor is close-on-exec.
    pub const CLOEXEC: u32 = 1 << 0;
    /// Every flag ABI 1.2 knows; the kernel refuses any other bit.
    pub const ALL: u32 = CLOEXEC;
}

/// `RADIANCE_IOCTL_BO_EXPORT`: a dma-buf file descriptor for a mappable BO.
/// The dma-buf keeps the memory alive after BO_DESTROY.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoExport {
    /// In: a handle of a mappable BO (VRAM or HOST, not imported).
    pub handle: u32,
    /// In: [`export_flags`].
    pub flags: u32,
    /// Out: the dma-buf file descriptor (read-write).
    pub fd: i32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_BO_IMPORT`: a HOST BO over anyone's dma-buf.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoImport {
    /// In: a dma-buf file descriptor; the BO holds its own reference.
    pub fd: i32,
    /// In: must be zero.
    pub flags: u32,
    /// Out: the new BO's handle (placement HOST, not mappable).
    pub handle: u32,
    /// In: must be zero.
    pub pad: u32,
    /// Out: the dma-buf's size in bytes.
    pub size: u64,
}

/// The value a failed semaphore shows in its value page; no signal may reach
/// it. Read SEM_QUERY for the error.
pub const SEM_FAILED_VALUE: u64 = u64::MAX;

/// Most points one SEM_WAIT takes.
pub const SEM_WAIT_MAX_POINTS: u32 = 256;

/// `RADIANCE_IOCTL_SEM_CREATE`: a timeline semaphore of this file.
///
/// Its value can be read without a syscall: mmap the file read-only at the
/// page holding `value_offset` and read the little-endian u64 there
/// atomically. The file's semaphores share that page.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemCreate {
    /// In: the starting value (below [`SEM_FAILED_VALUE`]).
    pub initial: u64,
    /// In: must be zero.
    pub flags: u32,
    /// Out: the semaphore's handle in this file (never 0).
    pub handle: u32,
    /// Out: the mmap offset of the value's 8 bytes.
    pub value_offset: u64,
}

/// `RADIANCE_IOCTL_SEM_DESTROY`: drops a semaphore; its waiters get
/// ECANCELED.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemDestroy {
    /// In.
    pub handle: u32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_SEM_SIGNAL`: raises the value from the host.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemSignal {
    /// In.
    pub handle: u32,
    /// In: must be zero.
    pub pad: u32,
    /// In: above the current value and below [`SEM_FAILED_VALUE`] (EINVAL
    /// otherwise); a failed semaphore answers with its error.
    pub value: u64,
}

/// `RADIANCE_IOCTL_SEM_QUERY`: the value and failure of a semaphore.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemQuery {
    /// In.
    pub handle: u32,
    /// In: must be zero.
    pub pad: u32,
    /// Out: the value ([`SEM_FAILED_VALUE`] once failed).
    pub value: u64,
    /// Out: 0, or the positive errno the semaphore failed with.
    pub error: u32,
    /// Out: zero.
    pub pad1: u32,
}

/// `RADIANCE_IOCTL_SEM_FAIL`: fails a semaphore for good. Every current and
/// future waiter gets `error`; the first failure sticks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemFail {
    /// In.
    pub handle: u32,
    /// In: a positive errno, 1 to 4095.
    pub error: u32,
}

/// One (semaphore, value) of a [`SemWait`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemWaitPoint {
    /// A semaphore of this file.
    pub handle: u32,
    /// Must be zero.
    pub pad: u32,
    /// Satisfied when the value is at least this.
    pub value: u64,
}

/// `SemWait::flags`.
pub mod sem_wait_flags {
    /// Return when any point is satisfied (default: all of them).
    pub const ANY: u32 = 1 << 0;
    /// Every flag ABI 1.2 knows.
    pub const ALL: u32 = ANY;
}

/// `RADIANCE_IOCTL_SEM_WAIT`: waits for all (or any) of several points.
///
/// Errors: ETIME at the deadline (never before); the positive errno of a
/// failed semaphore (its index in `index`); ECANCELED if a semaphore is
/// destroyed meanwhile; interrupted by a signal, the call restarts (the
/// deadline is absolute) or fails with EINTR.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemWait {
    /// In: user pointer to `count` [`SemWaitPoint`]s.
    pub points: u64,
    /// In: 1 to [`SEM_WAIT_MAX_POINTS`].
    pub count: u32,
    /// In: [`sem_wait_flags`].
    pub flags: u32,
    /// In: absolute CLOCK_MONOTONIC deadline in ns; 0 polls, `i64::MAX`
    /// waits for ever.
    pub deadline_ns: i64,
    /// Out: for ANY, the satisfied point; on a failure, the failed one.
    pub index: u32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE`: a sync_file whose fence signals
/// when the semaphore reaches `value` (at once if it has), signals with the
/// semaphore's error if it fails, and with ECANCELED if the semaphore is
/// destroyed or its file closed first. This is how a semaphore point crosses
/// to other processes, devices and drivers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemExportSyncFile {
    /// In.
    pub handle: u32,
    /// In: [`export_flags`].
    pub flags: u32,
    /// In: the point.
    pub value: u64,
    /// Out: the sync_file descriptor.
    pub fd: i32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE`: the semaphore advances to `value`
/// when the sync_file's fence signals (never lowering it), or fails with the
/// fence's error. Already signalled fences apply at once.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemImportSyncFile {
    /// In.
    pub handle: u32,
    /// In: a sync_file descriptor; the semaphore holds its own reference to
    /// the fence.
    pub fd: i32,
    /// In: the point to reach.
    pub value: u64,
    /// In: must be zero.
    pub flags: u32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_SEM_IMPORT_HANDLE` (ABI 1.10): a handle in this file for
/// a semaphore of another file of this module (any of its devices), so that
/// this file's queues wait on and signal it directly, with no sync_file.
/// Every operation on the new handle acts on that semaphore; its value is
/// also published in this file's value page at `value_offset`. If the
/// semaphore is destroyed or its file closes, the handle reads as failed
/// with ECANCELED. Destroy it with SEM_DESTROY as any other.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemImportHandle {
    /// In: an open file of a Radiance device, this one included (EBADF: no
    /// such descriptor; EINVAL: another kind of file).
    pub fd: i32,
    /// In: a semaphore handle in `fd`'s file. An alias names the semaphore
    /// it aliases, so importing one, even through this file, gives another
    /// alias of that semaphore. EINVAL if the semaphore is this file's own,
    /// named directly or through an alias in `fd`'s file.
    pub handle: u32,
    /// In: must be zero.
    pub flags: u32,
    /// Out: the new handle in this file.
    pub new_handle: u32,
    /// Out: mmap offset of the u64 that holds its value, in this file.
    pub value_offset: u64,
}

/// Ring sizes, in packets: a power of two in this range.
pub const QUEUE_MIN_PACKETS: u32 = 16;
/// See [`QUEUE_MIN_PACKETS`].
pub const QUEUE_MAX_PACKETS: u32 = 65536;

/// `QueueControl::status`.
pub mod queue_status {
    /// Consuming packets.
    pub const ACTIVE: u32 = 0;
    /// Stopped at `fault_index`; destroy and recreate it to go on.
    pub const FAULTED: u32 = 1;
}

/// A queue's control block: the first bytes of the page mapped read-write at
/// `QueueCreate::control_offset`. The process writes only `write_index`; the
/// kernel trusts nothing else in the page and rewrites its own fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueControl {
    /// Process: packets written so far (free-running; store with release
    /// ordering after writing the packets).
    pub write_index: u64,
    /// Kernel: packets completed so far.
    pub read_index: u64,
    /// Kernel: 1 while the scheduler looks at this queue only once it is
    /// kicked: it sleeps, or serves other queues only (since ABI 1.7,
    /// never 1 on a queue stopped at a WAIT_SEMAPHORE, whose semaphore
    /// wakes it); after publishing `write_index`, a process that sees 1
    /// here calls QUEUE_KICK once.
    pub needs_kick: u32,
    /// Kernel: one of [`queue_status`].
    pub status: u32,
    /// Kernel: the positive errno a faulted queue stopped with.
    pub error: u32,
    /// Kernel: Gluon's ERR_CODE for a device fault, one of [`gluon_err`]
    /// (0 otherwise).
    pub err_code: u32,
    /// Kernel: the index of the packet that faulted.
    pub fault_index: u64,
    /// Kernel: Gluon's ERR_PC for a device fault.
    pub err_pc: u32,
    /// Kernel: Gluon's ERR_THREAD for a device fault.
    pub err_thread: u32,
}

/// `RADIANCE_IOCTL_QUEUE_CREATE`: a user-mode queue: a ring of 64-byte
/// packets and a control block, both mapped read-write by the process.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCreate {
    /// In: ring size in packets, a power of two within
    /// [`QUEUE_MIN_PACKETS`]..=[`QUEUE_MAX_PACKETS`].
    pub ring_packets: u32,
    /// In: must be zero (one priority in ABI 1.3).
    pub priority: u32,
    /// In: must be zero.
    pub flags: u32,
    /// Out: the queue's id in this file (never 0).
    pub queue_id: u32,
    /// Out: mmap offset of the ring (`ring_packets * 64` bytes).
    pub ring_offset: u64,
    /// Out: mmap offset of the control block (one page).
    pub control_offset: u64,
}

/// `RADIANCE_IOCTL_QUEUE_DESTROY`: what the queue has not completed is
/// cancelled: its SIGNAL_SEMAPHOREs fail with ECANCELED (a value already
/// reached stays), and a launch the device is running for it is stopped by a
/// device reset (ABI 1.7; before, packets in flight finished).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueDestroy {
    /// In.
    pub queue_id: u32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_QUEUE_KICK`: the doorbell; only needed when
/// `QueueControl::needs_kick` is set. Released in 1.3 as `QueueDestroy`'s
/// layout, which it keeps (so the ioctl number is unchanged).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueKick {
    /// In.
    pub queue_id: u32,
    /// In: must be zero.
    pub pad: u32,
}

/// The control node, `/dev/radiance-control` (ABI 1.9): a process with
/// CAP_SYS_ADMIN serves a Gluon through it, the way VDUSE and ublk put
/// devices in userspace.
///
/// Its file is the device: USER_DECLARE makes `/dev/radianceN` appear, and
/// closing the file (or the process dying) removes it. The server reads
/// command frames of the declared dialect with `read()` (whole frames only;
/// EAGAIN when there are none, `poll()` POLLIN when there are, unless it
/// declared [`user_declare_flags::READ_WAITS`]; each KERNEL frame followed
/// by its launch block if it declared
/// [`user_declare_flags::INLINE_BLOCKS`]), reaches the host memory they
/// name with USER_HOST_READ and USER_HOST_WRITE, and answers each with a 16-byte response by `write()`
/// (whole responses only), in order per stream. A response on a stream with
/// no command read and unanswered is EPROTO. When the kernel resets the
/// device (a command overran the launch timeout), the frames not read and
/// the answers not given are dropped, `poll()` reports POLLPRI, and `read()`
/// and `write()` fail with ECONNRESET until the server acknowledges with
/// USER_RESET.
pub const CONTROL_NODE: &str = "radiance-control";

/// `RADIANCE_IOCTL_USER_DECLARE`: declares the control file's device.
///
/// EPERM without CAP_SYS_ADMIN, EBUSY if this file already declared one,
/// ENOSPC when all [`MAX_DEVICES`] exist, EINVAL for a field out of range.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserDeclare {
    /// In: [`user_declare_flags`].
    pub flags: u32,
    /// In: one of [`dialect`].
    pub dialect: u32,
    /// In: hardware streams, 1 to the dialect's (gluon-sim: 4).
    pub streams: u32,
    /// In: commands one stream takes at once, 1 to 16 (gluon-sim: 1).
    pub stream_depth: u32,
    /// In: the compute shape GET_INFO reports.
    pub cores: u32,
    pub warps_per_core: u32,
    pub threads_per_warp: u32,
    /// In: which [`builtin`] kernels the server runs.
    pub builtins: u32,
    /// In: bytes of VRAM, a non-zero multiple of the page size, at most
    /// 4 GiB (Gluon's addresses are 32-bit).
    pub vram_size: u64,
    /// In: [`caps`] bits. [`caps::VRAM_MAPPABLE`] is EOPNOTSUPP: the
    /// device's VRAM lives in the server's process, where the kernel has
    /// no pages to map.
    pub caps: u64,
    /// In: GET_INFO's name, NUL-terminated.
    pub name: [u8; NAME_LEN],
    /// Out: N of `/dev/radianceN`.
    pub device_index: u32,
    /// In: must be zero.
    pub pad: u32,
    /// In (ABI 1.15): bytes a second the device copies or fills, for a
    /// server that does not report progress
    /// ([`user_declare_flags::REPORTS_PROGRESS`]): a copy or fill may take
    /// its size over this before the watchdog resets the device, the
    /// launch timeout at least. 0: not declared (the timeout only).
    pub bytes_per_s: u64,
    /// In (ABI 1.15): threads a second the device runs, as `bytes_per_s`
    /// for launches.
    pub threads_per_s: u64,
}

/// `UserDeclare::flags`.
pub mod user_declare_flags {
    /// ABI 1.11: `read()` on the control file waits, as read(2) does, until
    /// a frame may be read, a reset waits to be acknowledged (ECONNRESET) or
    /// a signal comes; a file opened O_NONBLOCK still gets EAGAIN. A server
    /// with nothing else to wait for then needs no `poll()` before each
    /// `read()`.
    pub const READ_WAITS: u32 = 1 << 0;
    /// ABI 1.12: the server comes back to `read()` once it has answered
    /// every frame it read. A doorbell (QUEUE_KICK) rung while it is in
    /// `write()` past its answers, or on its way back, is then left to it:
    /// that `write()` (or `read()`) runs the scheduler's pass, which
    /// pushes the frames it reads, and `poll()` reports POLLIN for it. The
    /// ringing process neither runs the pass nor wakes a server that would
    /// have fallen asleep meanwhile. A server that does not come back holds
    /// up its own device's queues, as one that stops answering does.
    pub const TAKES_DOORBELLS: u32 = 1 << 1;
    /// ABI 1.13: `read()` follows each KERNEL frame with a
    /// [`UserInlineBlock`](super::UserInlineBlock) and the launch block the
    /// frame names, read from host memory as the frame was read, so that
    /// the server needs no USER_HOST_READ for it.
    pub const INLINE_BLOCKS: u32 = 1 << 2;
    /// ABI 1.15: the server reports the progress of the commands it runs
    /// ([`UserProgress`](super::UserProgress)): the watchdog then resets
    /// the device only for a command whose stream made no progress for the
    /// launch timeout, however long the command takes. Without it, a
    /// command has a deadline from its size and the declared rates.
    pub const REPORTS_PROGRESS: u32 = 1 << 3;
    /// Every flag ABI 1.15 knows; 1.13 knew all but `REPORTS_PROGRESS`,
    /// 1.12 `READ_WAITS` and `TAKES_DOORBELLS`, 1.11 `READ_WAITS`; before
    /// it, none.
    pub const ALL: u32 = READ_WAITS | TAKES_DOORBELLS | INLINE_BLOCKS | REPORTS_PROGRESS;
}

/// What follows a KERNEL frame in `read()` on the control file of a server
/// that declared [`user_declare_flags::INLINE_BLOCKS`] (ABI 1.13): `len`
/// bytes of the launch block the frame names (its size), then zeros up to
/// a multiple of 8 bytes, where the next frame begins.
///
/// `len` is 0, and no bytes follow, when the block is larger than
/// [`USER_INLINE_BLOCK_MAX`], larger than what is left of the read's
/// buffer with nothing before it, or not in host memory mapped for the
/// device: the server reads it with USER_HOST_READ, as without the flag
/// (which fails with EFAULT in the last case). A frame whose block would
/// fit a read's buffer but not what is left of it is left for the next
/// read. A buffer smaller than a frame and this header is EINVAL.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserInlineBlock {
    /// Bytes of the block that follow.
    pub len: u32,
    /// Zero.
    pub pad: u32,
}

/// Most bytes of a launch block [`user_declare_flags::INLINE_BLOCKS`]
/// inlines: a page, which covers a launch's header and params; a larger
/// block (a binary, a printf ring) is read with USER_HOST_READ.
pub const USER_INLINE_BLOCK_MAX: u32 = 4096;

/// `RADIANCE_IOCTL_USER_HOST_READ` and `_WRITE`: the server reads or writes
/// host memory at a DMA address a command named, as the device's DMA would.
///
/// Only memory currently DMA-mapped for the device can be reached: EFAULT
/// for anything else, and for a bad `user_ptr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserHostAccess {
    /// In: the DMA address, as the command frame gave it.
    pub addr: u64,
    /// In: the server's buffer.
    pub user_ptr: u64,
    /// In: bytes, at most [`USER_HOST_ACCESS_MAX`].
    pub len: u32,
    /// In: no flags are defined yet; must be zero.
    pub flags: u32,
}

/// Most bytes one USER_HOST_READ or USER_HOST_WRITE moves.
pub const USER_HOST_ACCESS_MAX: u32 = 1 << 20;

/// `RADIANCE_IOCTL_USER_RESET`: acknowledges the kernel's reset (POLLPRI);
/// with none pending, the server says its device reset itself: every
/// command read and not answered, and every frame not read, completes with
/// [`gluon_err::RESET`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserReset {
    /// In: no flags are defined yet; must be zero.
    pub flags: u32,
    /// In: must be zero.
    pub pad: u32,
}

/// `RADIANCE_IOCTL_USER_RETIRE` (ABI 1.14): the server says which of its
/// streams take no command from now on. A device that cannot reset a
/// stream (gluon-sim, still running a launch the kernel gave up at a
/// reset) retires it instead of being removed; it puts the stream back in
/// service once the stream is usable again.
///
/// Every command read and not answered on a stream this retires, and
/// every frame for it not read, completes with [`gluon_err::RESET`], as
/// at a server's own reset; the queues on it move to streams in service
/// once their commands on it have completed, and nothing is issued to it
/// until a later USER_RETIRE leaves it out. GET_INFO's `retired_streams`
/// reports the set.
///
/// EINVAL for a flag or a bit at or past the declared streams, EBUSY if no
/// stream would be left in service (close the control file to remove the
/// device), ENXIO before USER_DECLARE.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserRetire {
    /// In: bit `i` set: stream `i` is retired; clear: in service.
    pub streams: u32,
    /// In: no flags are defined yet; must be zero.
    pub flags: u32,
}

/// `RADIANCE_IOCTL_USER_PROGRESS` (ABI 1.15): the server says that the
/// command it runs on `stream` (its oldest read and not answered) did
/// `units` more of its work: bytes for a copy or fill, threads for a
/// launch, or whatever else it counts (a simulator's CPU time). The
/// watchdog of a device declared with
/// [`user_declare_flags::REPORTS_PROGRESS`] resets it only for a command
/// whose stream reported nothing for the launch timeout; debugfs
/// `streams` shows what each stream's command did so far.
///
/// EINVAL for a flag, `units` 0, or a stream the device lacks; EPROTO for
/// a stream that runs nothing the server read; ECONNRESET while a reset
/// waits to be acknowledged (the command was given up); ENXIO before
/// USER_DECLARE, or on a device declared without `REPORTS_PROGRESS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserProgress {
    /// In: the stream.
    pub stream: u32,
    /// In: no flags are defined yet; must be zero.
    pub flags: u32,
    /// In: work done since the stream's last report, more than 0.
    pub units: u64,
}

/// `RADIANCE_IOCTL_QUEUE_QUERY`: the kernel's view of a queue.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueQuery {
    /// In.
    pub queue_id: u32,
    /// In: must be zero.
    pub pad: u32,
    /// Out: packets completed.
    pub read_index: u64,
    /// Out: packets taken from the ring (completed or in flight).
    pub submit_index: u64,
    /// Out: as in [`QueueControl`].
    pub status: u32,
    /// Out: as in [`QueueControl`].
    pub error: u32,
    /// Out: as in [`QueueControl`].
    pub fault_index: u64,
    /// Out: as in [`QueueControl`].
    pub err_code: u32,
    /// Out: as in [`QueueControl`].
    pub err_pc: u32,
    /// Out: as in [`QueueControl`].
    pub err_thread: u32,
    /// Out: zero.
    pub pad1: u32,
}

/// Bytes of one queue packet.
pub const PACKET_SIZE: usize = 64;

/// `PacketHeader::kind`. Zero is no packet: a ring slot never written
/// faults the queue.
pub mod packet_kind {
    /// Does nothing (completes in order).
    pub const NOP: u8 = 1;
    /// Waits for everything before it to complete.
    pub const FENCE: u8 = 2;
    /// [`super::FillPacket`].
    pub const FILL: u8 = 3;
    /// [`super::CopyPacket`].
    pub const COPY: u8 = 4;
    /// [`super::LaunchPacket`].
    pub const LAUNCH: u8 = 5;
    /// [`super::CounterPacket`]: a device counter into VRAM.
    pub const READ_COUNTER: u8 = 6;
    /// [`super::CounterPacket`] (`counter` zero): the device clock, in
    /// nanoseconds, into VRAM.
    pub const TIMESTAMP: u8 = 7;
    /// [`super::SemaphorePacket`]: the queue goes no further until the
    /// semaphore reaches the value. A failed semaphore faults the queue with
    /// its error, unless the packet has
    /// [`SKIP_ON_FAILURE`](super::packet_flags::SKIP_ON_FAILURE).
    pub const WAIT_SEMAPHORE: u8 = 8;
    /// [`super::SemaphorePacket`]: raises the semaphore to the value once
    /// everything before it on the queue has completed. A queue that faults
    /// first (or is destroyed, or skips the packet) fails the semaphore
    /// with that error instead, unless the semaphore has already reached
    /// the value.
    pub const SIGNAL_SEMAPHORE: u8 = 9;
    /// [`super::LaunchPacket`] naming a [`super::LaunchDesc`] (ABI 1.8):
    /// the kernel builds the launch block in the device's dialect.
    pub const LAUNCH_DESC: u8 = 10;
}

/// Gluon's `ERR_CODE` values, as a device fault reports them in
/// [`QueueControl::err_code`] and [`QueueQuery::err_code`].
pub mod gluon_err {
    /// Gluon's EXECUTION status: a warp faulted (on the emulated device:
    /// no built-in at the PC).
    pub const BAD_PC: u8 = 1;
    /// A thread touched an address outside VRAM.
    pub const BAD_ADDRESS: u8 = 2;
    /// The command header is malformed.
    pub const BAD_COMMAND: u8 = 3;
    /// A DMA transfer failed.
    pub const DMA: u8 = 4;
    /// The launch block is malformed.
    pub const BAD_LAUNCH: u8 = 5;
    /// The device was reset under the command (a user device's server
    /// reset itself, ABI 1.9).
    pub const RESET: u8 = 6;
}

/// `PacketHeader::flags`.
pub mod packet_flags {
    /// Everything before this packet completes before it starts.
    pub const BARRIER: u8 = 1 << 0;
    /// WAIT_SEMAPHORE only (ABI 1.7): if the semaphore has failed, the queue
    /// does not fault. Instead this packet and the
    /// [`SemaphorePacket::skip`](super::SemaphorePacket::skip) packets after
    /// it complete without running, and each SIGNAL_SEMAPHORE among them
    /// fails its semaphore with the same error; the queue goes on after
    /// them. This is how one submission (waits, work, signals) fails as a
    /// unit while its queue lives on.
    pub const SKIP_ON_FAILURE: u8 = 1 << 1;
    /// Every flag ABI 1.7 knows.
    pub const ALL: u8 = BARRIER | SKIP_ON_FAILURE;
}

/// The first 8 bytes of every packet.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketHeader {
    /// One of [`packet_kind`].
    pub kind: u8,
    /// [`packet_flags`].
    pub flags: u8,
    /// Must be zero.
    pub reserved: u16,
    /// Must be zero.
    pub pad: u32,
}

/// A packet as the ring holds it; every byte not named by its kind's struct
/// must be zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    pub header: PacketHeader,
    pub body: [u64; 7],
}

/// FILL: `size` bytes of BO `dst` from `dst_offset` with a 1, 2 or 4 byte
/// little-endian `pattern`; offset and size are multiples of the pattern
/// size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FillPacket {
    pub header: PacketHeader,
    pub dst: u32,
    pub pattern_size: u32,
    pub dst_offset: u64,
    pub size: u64,
    pub pattern: u32,
    pub pad: u32,
    pub reserved: [u64; 3],
}

/// COPY: `size` bytes between two BOs of the file (VRAM and HOST in any
/// direction but HOST to HOST); the ranges must not overlap.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyPacket {
    pub header: PacketHeader,
    pub src: u32,
    pub dst: u32,
    pub src_offset: u64,
    pub dst_offset: u64,
    pub size: u64,
    pub reserved: [u64; 3],
}

/// LAUNCH: runs the kernel described by the launch block at `block_offset`
/// of HOST BO `block` (`block_size` bytes, within one page: a
/// [`LaunchBlock`], then the binary, the params, and the printf ring).
///
/// The kernel copies the block and sets its `printf_host_addr` itself: to
/// the device address of `printf_offset` in HOST BO `printf` (ABI 1.6; 0:
/// no printf), where the device drains the ring after the launch as a
/// little-endian u32 byte count and the text. That range must hold
/// `4 + limit` bytes within one page.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchPacket {
    pub header: PacketHeader,
    pub block: u32,
    pub pad: u32,
    pub block_offset: u64,
    pub block_size: u64,
    /// A HOST BO handle, or 0.
    pub printf: u32,
    pub pad2: u32,
    pub printf_offset: u64,
    pub printf_size: u64,
    pub reserved: u64,
}

/// A launch, field by field (ABI 1.8), in a HOST BO that a
/// [`packet_kind::LAUNCH_DESC`] packet names (its `block*` fields; its
/// `printf*` fields as for LAUNCH). The kernel builds the device's launch
/// block from it: a process never writes a raw block. Executables live in
/// VRAM (no binary travels with a launch): `start_pc` and `kernel_pc` are
/// device addresses, or built-in PCs on the emulated device.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchDesc {
    /// Where warps start (the start code).
    pub start_pc: u32,
    /// The kernel the start code calls.
    pub kernel_pc: u32,
    /// Blocks per grid, x y z; each at least 1.
    pub grid: [u32; 3],
    /// Threads per block, x y z; each at least 1.
    pub block: [u32; 3],
    pub shmem_per_block: u32,
    /// At least 1.
    pub regs_per_thread: u8,
    /// Gluon's launch flags, passed through.
    pub flags: u8,
    /// Must be zero.
    pub pad: u16,
    /// The params: `params_size` bytes at `params_offset` of HOST BO
    /// `params` (0: the descriptor's own BO); copied into the block.
    pub params: u32,
    pub params_size: u32,
    pub params_offset: u64,
    /// The stack: a range of a VRAM BO (handle 0: none). The block gets the
    /// address of the range's last word: stacks grow down.
    pub stack: u32,
    /// Must be zero.
    pub pad1: u32,
    pub stack_offset: u64,
    pub stack_size: u64,
    /// Thread-local storage: a range of a VRAM BO (handle 0: none). The
    /// block gets the range's first address.
    pub tls: u32,
    /// Must be zero.
    pub pad2: u32,
    pub tls_offset: u64,
    pub tls_size: u64,
}

/// The printf ring of a launch block, right after the params: the device's
/// kernels append text at `head`; it holds `limit` bytes after this header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrintfRing {
    pub lock: u32,
    pub head: u32,
    pub tail: u32,
    pub limit: u32,
}

/// Device counters READ_COUNTER reads.
pub mod counter {
    /// Commands the device has executed.
    pub const COMMANDS: u32 = 0;
    /// Threads of launched kernels the device has run.
    pub const THREADS: u32 = 1;
    /// The device clock, in nanoseconds (what TIMESTAMP reads).
    pub const CLOCK_NS: u32 = 2;
    /// Counters there are.
    pub const COUNT: u32 = 3;
}

/// READ_COUNTER and TIMESTAMP: the device writes a little-endian u64 at
/// `dst_offset` (8-aligned) of VRAM BO `dst`, after everything before it
/// on the queue.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterPacket {
    pub header: PacketHeader,
    pub dst: u32,
    /// One of [`counter`] (zero for TIMESTAMP).
    pub counter: u32,
    pub dst_offset: u64,
    pub reserved: [u64; 5],
}

/// WAIT_SEMAPHORE and SIGNAL_SEMAPHORE: a semaphore of the queue's file.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemaphorePacket {
    pub header: PacketHeader,
    pub handle: u32,
    /// WAIT_SEMAPHORE with `SKIP_ON_FAILURE` (ABI 1.7): how many packets
    /// after this one to skip if the semaphore has failed. Zero otherwise
    /// (ABI 1.6 called it `pad`).
    pub skip: u32,
    pub value: u64,
    pub reserved: [u64; 5],
}

/// The head of Gluon's launch block, as the device reads it from host
/// memory; the binary and then the params follow it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchBlock {
    /// Where the device starts executing (a [`builtin`] on the emulator).
    pub entry_pc: u32,
    pub grid: [u16; 3],
    pub block: [u16; 3],
    pub regs_per_thread: u8,
    pub flags: u8,
    pub pad: u16,
    pub shmem_per_block: u32,
    /// 0: no printf ring.
    pub printf_host_addr: u32,
    pub binary_size: u32,
    pub params_size: u32,
    pub pad1: u32,
}

/// Ioctl numbers within [`IOCTL_TYPE`].
pub mod nr {
    /// [`super::GetInfo`].
    pub const GET_INFO: u8 = 0x00;
    /// [`super::BoCreate`].
    pub const BO_CREATE: u8 = 0x01;
    /// [`super::BoDestroy`].
    pub const BO_DESTROY: u8 = 0x02;
    /// [`super::BoInfo`].
    pub const BO_INFO: u8 = 0x03;
    /// [`super::BoExport`].
    pub const BO_EXPORT: u8 = 0x04;
    /// [`super::BoImport`].
    pub const BO_IMPORT: u8 = 0x05;
    /// [`super::SemCreate`].
    pub const SEM_CREATE: u8 = 0x10;
    /// [`super::SemDestroy`].
    pub const SEM_DESTROY: u8 = 0x11;
    /// [`super::SemSignal`].
    pub const SEM_SIGNAL: u8 = 0x12;
    /// [`super::SemQuery`].
    pub const SEM_QUERY: u8 = 0x13;
    /// [`super::SemFail`].
    pub const SEM_FAIL: u8 = 0x14;
    /// [`super::SemWait`].
    pub const SEM_WAIT: u8 = 0x15;
    /// [`super::SemExportSyncFile`].
    pub const SEM_EXPORT_SYNC_FILE: u8 = 0x16;
    /// [`super::SemImportSyncFile`].
    pub const SEM_IMPORT_SYNC_FILE: u8 = 0x17;
    /// [`super::SemImportHandle`].
    pub const SEM_IMPORT_HANDLE: u8 = 0x18;
    /// [`super::QueueCreate`].
    pub const QUEUE_CREATE: u8 = 0x20;
    /// [`super::QueueDestroy`].
    pub const QUEUE_DESTROY: u8 = 0x21;
    /// [`super::QueueQuery`].
    pub const QUEUE_QUERY: u8 = 0x22;
    /// [`super::QueueKick`].
    pub const QUEUE_KICK: u8 = 0x23;
    /// [`super::UserDeclare`], on the control node.
    pub const USER_DECLARE: u8 = 0x40;
    /// [`super::UserHostAccess`] reading host memory, on the control node.
    pub const USER_HOST_READ: u8 = 0x41;
    /// [`super::UserHostAccess`] writing host memory, on the control node.
    pub const USER_HOST_WRITE: u8 = 0x42;
    /// [`super::UserReset`], on the control node.
    pub const USER_RESET: u8 = 0x43;
    /// [`super::UserRetire`], on the control node (ABI 1.14).
    pub const USER_RETIRE: u8 = 0x44;
    /// [`super::UserProgress`], on the control node (ABI 1.15).
    pub const USER_PROGRESS: u8 = 0x45;
}

/// `RADIANCE_IOCTL_GET_INFO`.
pub const IOCTL_GET_INFO: u32 = iowr::<GetInfo>(nr::GET_INFO);
/// `RADIANCE_IOCTL_BO_CREATE`.
pub const IOCTL_BO_CREATE: u32 = iowr::<BoCreate>(nr::BO_CREATE);
/// `RADIANCE_IOCTL_BO_DESTROY`.
pub const IOCTL_BO_DESTROY: u32 = iowr::<BoDestroy>(nr::BO_DESTROY);
/// `RADIANCE_IOCTL_BO_INFO`.
pub const IOCTL_BO_INFO: u32 = iowr::<BoInfo>(nr::BO_INFO);
/// `RADIANCE_IOCTL_BO_EXPORT`.
pub const IOCTL_BO_EXPORT: u32 = iowr::<BoExport>(nr::BO_EXPORT);
/// `RADIANCE_IOCTL_BO_IMPORT`.
pub const IOCTL_BO_IMPORT: u32 = iowr::<BoImport>(nr::BO_IMPORT);
/// `RADIANCE_IOCTL_SEM_CREATE`.
pub const IOCTL_SEM_CREATE: u32 = iowr::<SemCreate>(nr::SEM_CREATE);
/// `RADIANCE_IOCTL_SEM_DESTROY`.
pub const IOCTL_SEM_DESTROY: u32 = iowr::<SemDestroy>(nr::SEM_DESTROY);
/// `RADIANCE_IOCTL_SEM_SIGNAL`.
pub const IOCTL_SEM_SIGNAL: u32 = iowr::<SemSignal>(nr::SEM_SIGNAL);
/// `RADIANCE_IOCTL_SEM_QUERY`.
pub const IOCTL_SEM_QUERY: u32 = iowr::<SemQuery>(nr::SEM_QUERY);
/// `RADIANCE_IOCTL_SEM_FAIL`.
pub const IOCTL_SEM_FAIL: u32 = iowr::<SemFail>(nr::SEM_FAIL);
/// `RADIANCE_IOCTL_SEM_WAIT`.
pub const IOCTL_SEM_WAIT: u32 = iowr::<SemWait>(nr::SEM_WAIT);
/// `RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE`.
pub const IOCTL_SEM_EXPORT_SYNC_FILE: u32 = iowr::<SemExportSyncFile>(nr::SEM_EXPORT_SYNC_FILE);
/// `RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE`.
pub const IOCTL_SEM_IMPORT_SYNC_FILE: u32 = iowr::<SemImportSyncFile>(nr::SEM_IMPORT_SYNC_FILE);
/// `RADIANCE_IOCTL_SEM_IMPORT_HANDLE`.
pub const IOCTL_SEM_IMPORT_HANDLE: u32 = iowr::<SemImportHandle>(nr::SEM_IMPORT_HANDLE);
/// `RADIANCE_IOCTL_QUEUE_CREATE`.
pub const IOCTL_QUEUE_CREATE: u32 = iowr::<QueueCreate>(nr::QUEUE_CREATE);
/// `RADIANCE_IOCTL_QUEUE_DESTROY`.
pub const IOCTL_QUEUE_DESTROY: u32 = iowr::<QueueDestroy>(nr::QUEUE_DESTROY);
/// `RADIANCE_IOCTL_QUEUE_QUERY`.
pub const IOCTL_QUEUE_QUERY: u32 = iowr::<QueueQuery>(nr::QUEUE_QUERY);
/// `RADIANCE_IOCTL_QUEUE_KICK`.
pub const IOCTL_QUEUE_KICK: u32 = iowr::<QueueKick>(nr::QUEUE_KICK);
/// `RADIANCE_IOCTL_USER_DECLARE`.
pub const IOCTL_USER_DECLARE: u32 = iowr::<UserDeclare>(nr::USER_DECLARE);
/// `RADIANCE_IOCTL_USER_HOST_READ`.
pub const IOCTL_USER_HOST_READ: u32 = iowr::<UserHostAccess>(nr::USER_HOST_READ);
/// `RADIANCE_IOCTL_USER_HOST_WRITE`.
pub const IOCTL_USER_HOST_WRITE: u32 = iowr::<UserHostAccess>(nr::USER_HOST_WRITE);
/// `RADIANCE_IOCTL_USER_RESET`.
pub const IOCTL_USER_RESET: u32 = iowr::<UserReset>(nr::USER_RESET);
/// `RADIANCE_IOCTL_USER_RETIRE`.
pub const IOCTL_USER_RETIRE: u32 = iowr::<UserRetire>(nr::USER_RETIRE);
/// `RADIANCE_IOCTL_USER_PROGRESS`.
pub const IOCTL_USER_PROGRESS: u32 = iowr::<UserProgress>(nr::USER_PROGRESS);

/// Every argument size ever released for each ioctl, oldest first (the
/// last is the current struct): the kernel accepts exactly these, and
/// zero-extends an older, shorter one.
pub mod sizes {
    /// [`super::GetInfo`] as released in ABI 1.0, grown by `builtins` in
    /// 1.4, by `dialect`, `streams` and `caps` in 1.8 and by
    /// `retired_streams` in 1.14.
    pub const GET_INFO: &[usize] = &[96, 104, 120, 128];
    /// [`super::BoCreate`] as released in ABI 1.1.
    pub const BO_CREATE: &[usize] = &[40];
    /// [`super::BoDestroy`] as released in ABI 1.1.
    pub const BO_DESTROY: &[usize] = &[8];
    /// [`super::BoInfo`] as released in ABI 1.1.
    pub const BO_INFO: &[usize] = &[40];
    /// [`super::BoExport`] as released in ABI 1.1.
    pub const BO_EXPORT: &[usize] = &[16];
    /// [`super::BoImport`] as released in ABI 1.1.
    pub const BO_IMPORT: &[usize] = &[24];
    /// [`super::SemCreate`] as released in ABI 1.2.
    pub const SEM_CREATE: &[usize] = &[24];
    /// [`super::SemDestroy`] as released in ABI 1.2.
    pub const SEM_DESTROY: &[usize] = &[8];
    /// [`super::SemSignal`] as released in ABI 1.2.
    pub const SEM_SIGNAL: &[usize] = &[16];
    /// [`super::SemQuery`] as released in ABI 1.2.
    pub const SEM_QUERY: &[usize] = &[24];
    /// [`super::SemFail`] as released in ABI 1.2.
    pub const SEM_FAIL: &[usize] = &[8];
    /// [`super::SemWait`] as released in ABI 1.2.
    pub const SEM_WAIT: &[usize] = &[32];
    /// [`super::SemExportSyncFile`] as released in ABI 1.2.
    pub const SEM_EXPORT_SYNC_FILE: &[usize] = &[24];
    /// [`super::SemImportSyncFile`] as released in ABI 1.2.
    pub const SEM_IMPORT_SYNC_FILE: &[usize] = &[24];
    /// [`super::SemImportHandle`] as released in ABI 1.10.
    pub const SEM_IMPORT_HANDLE: &[usize] = &[24];
    /// [`super::QueueCreate`] as released in ABI 1.3.
    pub const QUEUE_CREATE: &[usize] = &[32];
    /// [`super::QueueDestroy`] as released in ABI 1.3.
    pub const QUEUE_DESTROY: &[usize] = &[8];
    /// [`super::QueueKick`] as released in ABI 1.3.
    pub const QUEUE_KICK: &[usize] = &[8];
    /// [`super::QueueQuery`] as released in ABI 1.3.
    pub const QUEUE_QUERY: &[usize] = &[56];
    /// [`super::UserDeclare`] as released in ABI 1.9, grown by
    /// `bytes_per_s` and `threads_per_s` in 1.15.
    pub const USER_DECLARE: &[usize] = &[88, 104];
    /// [`super::UserHostAccess`] as released in ABI 1.9.
    pub const USER_HOST_ACCESS: &[usize] = &[24];
    /// [`super::UserReset`] as released in ABI 1.9.
    pub const USER_RESET: &[usize] = &[8];
    /// [`super::UserRetire`] as released in ABI 1.14.
    pub const USER_RETIRE: &[usize] = &[8];
    /// [`super::UserProgress`] as released in ABI 1.15.
    pub const USER_PROGRESS: &[usize] = &[16];
}

// Sizes are part of the ABI: a change here is a change to a released struct.
const _: () = assert!(core::mem::size_of::<GetInfo>() == 128);
const _: () = assert!(core::mem::size_of::<UserInlineBlock>() == 8);
const _: () = assert!(core::mem::size_of::<BoCreate>() == 40);
const _: () = assert!(core::mem::size_of::<BoDestroy>() == 8);
const _: () = assert!(core::mem::size_of::<BoInfo>() == 40);
const _: () = assert!(core::mem::size_of::<BoExport>() == 16);
const _: () = assert!(core::mem::size_of::<BoImport>() == 24);
const _: () = assert!(core::mem::size_of::<SemCreate>() == 24);
const _: () = assert!(core::mem::size_of::<SemDestroy>() == 8);
const _: () = assert!(core::mem::size_of::<SemSignal>() == 16);
const _: () = assert!(core::mem::size_of::<SemQuery>() == 24);
const _: () = assert!(core::mem::size_of::<SemFail>() == 8);
const _: () = assert!(core::mem::size_of::<SemWaitPoint>() == 16);
const _: () = assert!(core::mem::size_of::<SemWait>() == 32);
const _: () = assert!(core::mem::size_of::<SemExportSyncFile>() == 24);
const _: () = assert!(core::mem::size_of::<SemImportSyncFile>() == 24);
const _: () = assert!(core::mem::size_of::<SemImportHandle>() == 24);
const _: () = assert!(core::mem::size_of::<QueueControl>() == 48);
const _: () = assert!(core::mem::size_of::<QueueCreate>() == 32);
const _: () = assert!(core::mem::size_of::<QueueQuery>() == 56);
const _: () = assert!(core::mem::size_of::<QueueKick>() == 8);
const _: () = assert!(core::mem::size_of::<UserDeclare>() == 104);
const _: () = assert!(core::mem::size_of::<UserHostAccess>() == 24);
const _: () = assert!(core::mem::size_of::<UserReset>() == 8);
const _: () = assert!(core::mem::size_of::<UserRetire>() == 8);
const _: () = assert!(core::mem::size_of::<UserProgress>() == 16);
const _: () = assert!(core::mem::size_of::<PacketHeader>() == 8);
const _: () = assert!(core::mem::size_of::<Packet>() == PACKET_SIZE);
const _: () = assert!(core::mem::size_of::<FillPacket>() == PACKET_SIZE);
const _: () = assert!(core::mem::size_of::<CopyPacket>() == PACKET_SIZE);
const _: () = assert!(core::mem::size_of::<LaunchPacket>() == PACKET_SIZE);
const _: () = assert!(core::mem::size_of::<SemaphorePacket>() == PACKET_SIZE);
const _: () = assert!(core::mem::size_of::<CounterPacket>() == PACKET_SIZE);
const _: () = assert!(core::mem::size_of::<LaunchBlock>() == 40);
const _: () = assert!(core::mem::size_of::<PrintfRing>() == 16);
const _: () = assert!(core::mem::size_of::<LaunchDesc>() == 104);
const _: () =
    assert!(sizes::GET_INFO[sizes::GET_INFO.len() - 1] == core::mem::size_of::<GetInfo>());
