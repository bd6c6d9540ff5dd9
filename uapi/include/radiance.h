/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/**
 * DOC: Radiance ioctl ABI
 *
 * The ioctls of the Radiance GPU driver, for C users (kselftests, the IREE HAL driver).
 * uapi/src/lib.rs is the source of truth; uapi/tests/c_header.rs compiles this header
 * and checks every size, offset and ioctl number against it.
 *
 * Every ioctl is _IOWR(%RADIANCE_IOCTL_TYPE, nr, struct), and the size in the command
 * word is the size of the struct the caller was built with. Every argument struct
 * follows these rules:
 *
 * - Its fields are fixed-width integers, and its padding is spelled out.
 * - A flags field refuses unknown bits, and pad and reserved fields must be zero
 *   (EINVAL), so that a later version can give them a meaning.
 * - Once released, it is never reordered or resized in place: it grows at its end. The
 *   kernel accepts every size it ever released, zero-extends an older, shorter struct on
 *   the way in and writes back only that struct's bytes.
 *
 * In the field descriptions, "In" marks what the caller fills and "Out" what the kernel
 * fills.
 */
#ifndef _RADIANCE_UAPI_H
#define _RADIANCE_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

/**
 * define RADIANCE_ABI_MAJOR - Major ABI version.
 *
 * Bumped only for an incompatible change, which has not happened.
 */
#define RADIANCE_ABI_MAJOR 1
/**
 * define RADIANCE_ABI_MINOR - Minor ABI version.
 *
 * Bumped when a struct grows or an ioctl is added. %RADIANCE_IOCTL_GET_INFO reports the
 * version of the running module.
 */
#define RADIANCE_ABI_MINOR 15

/**
 * define RADIANCE_IOCTL_TYPE - The ioctl type byte ("magic") of every Radiance ioctl.
 *
 * It is unassigned in the kernel's Documentation/userspace-api/ioctl/ioctl-number.rst.
 */
#define RADIANCE_IOCTL_TYPE 0xB9
/**
 * define RADIANCE_MAX_DEVICES - Most devices a host can have.
 *
 * They are /dev/radiance0 to /dev/radiance7.
 */
#define RADIANCE_MAX_DEVICES 8

/**
 * DOC: Backends
 *
 * What kind of hardware stands behind a device node (the backend field of
 * &struct radiance_get_info):
 *
 * - %RADIANCE_BACKEND_EMULATED: the software Gluon inside the kernel module, no hardware.
 * - %RADIANCE_BACKEND_PCI: a Radiance FPGA board on PCI.
 * - %RADIANCE_BACKEND_PLATFORM: a Radiance SoC described by the device tree.
 * - %RADIANCE_BACKEND_USER (ABI 1.9): a Gluon served by a process through the control
 *   node: gluon-sim through gluon-bridge, an RTL simulation, a bring-up link.
 */
#define RADIANCE_BACKEND_EMULATED 1
#define RADIANCE_BACKEND_PCI 2
#define RADIANCE_BACKEND_PLATFORM 3
#define RADIANCE_BACKEND_USER 4

/**
 * define RADIANCE_NAME_LEN - Length of a device name, including the terminating NUL.
 */
#define RADIANCE_NAME_LEN 32

/**
 * DOC: Built-in kernels
 *
 * Built-in kernels of the emulated Gluon. The emulator cannot execute Radiance machine
 * code, so a launch whose entry PC is one of these runs the built-in; any other entry PC
 * faults with %RADIANCE_GLUON_ERR_BAD_PC, as hardware would.
 *
 * Every built-in reads its params as little-endian u32s, and thread t of the grid
 * (t = block_linear * threads_per_block + thread_linear) handles element t; threads past
 * the element count do nothing.
 *
 * - %RADIANCE_BUILTIN_FILL_U32: dst[t] = value for t < count. Params: dst, value, count.
 * - %RADIANCE_BUILTIN_COPY_U32: dst[t] = src[t] for t < count, u32 elements. Params:
 *   dst, src, count.
 * - %RADIANCE_BUILTIN_VECADD_U32: c[t] = a[t] + b[t], wrapping, for t < count. Params:
 *   a, b, c, count.
 * - %RADIANCE_BUILTIN_SPIN: never completes, for timeout and reset tests. No params.
 * - %RADIANCE_BUILTIN_PRINTF_U32: thread t < count prints "thread <t>: <value + t>" and
 *   a newline into the launch's printf ring. Params: value, count.
 * - %RADIANCE_BUILTIN_START (ABI 1.8): start code. It runs the built-in at the launch
 *   block's kernel_pc, as real start code calls the kernel at kernel_pc.
 *
 * Bit i of a builtins field (&struct radiance_get_info, &struct radiance_user_declare)
 * stands for the i-th of these, in the order they are defined here.
 */
#define RADIANCE_BUILTIN_FILL_U32 0xFFFF0000u
#define RADIANCE_BUILTIN_COPY_U32 0xFFFF0100u
#define RADIANCE_BUILTIN_VECADD_U32 0xFFFF0200u
#define RADIANCE_BUILTIN_SPIN 0xFFFF0300u
#define RADIANCE_BUILTIN_PRINTF_U32 0xFFFF0400u
#define RADIANCE_BUILTIN_START 0xFFFF0500u

/**
 * DOC: Dialects
 *
 * The wire format a device speaks (the dialect field of &struct radiance_get_info, ABI
 * 1.8). The kernel translates every packet into it.
 *
 * - %RADIANCE_DIALECT_GLUON_SIM_16: the 16-byte frames of gluon-sim.
 * - %RADIANCE_DIALECT_GLUON_24: 24-byte frames with 64-bit host addresses and WAIT
 *   (Merlin's packet_layout.h).
 */
#define RADIANCE_DIALECT_GLUON_SIM_16 1
#define RADIANCE_DIALECT_GLUON_24 2

/**
 * DOC: Capabilities
 *
 * What a device implements (the caps field of &struct radiance_get_info, ABI 1.8). Every
 * device takes the same packets, because the kernel makes up what a device lacks, so
 * these bits are for information and tests.
 *
 * - %RADIANCE_CAP_SET: MEM SET. Without it, fills are copies of a pattern from host memory.
 * - %RADIANCE_CAP_FENCE: FENCE.
 * - %RADIANCE_CAP_WAIT: WAIT on another stream.
 * - %RADIANCE_CAP_COPY_D2D: copies from VRAM to VRAM. Without it, such copies bounce
 *   through host memory.
 * - %RADIANCE_CAP_COUNTERS: counter reads. Without it, READ_COUNTER and TIMESTAMP packets
 *   fault their queue with EOPNOTSUPP.
 * - %RADIANCE_CAP_SUBWORD: memory accesses of any size and alignment. Without it, every
 *   address and length the device sees is a multiple of 4.
 * - %RADIANCE_CAP_VRAM_MAPPABLE: the CPU can map VRAM. Without it, creating a mappable
 *   VRAM buffer object fails with EOPNOTSUPP: the VRAM lives where the kernel cannot map
 *   it, for instance in gluon-sim's process.
 */
#define RADIANCE_CAP_SET (1ull << 0)
#define RADIANCE_CAP_FENCE (1ull << 1)
#define RADIANCE_CAP_WAIT (1ull << 2)
#define RADIANCE_CAP_COPY_D2D (1ull << 3)
#define RADIANCE_CAP_COUNTERS (1ull << 4)
#define RADIANCE_CAP_SUBWORD (1ull << 5)
#define RADIANCE_CAP_VRAM_MAPPABLE (1ull << 6)

/**
 * struct radiance_get_info - What a device is and what it can do.
 * @flags: In: no flags are defined yet; must be zero.
 * @pad0: In: must be zero.
 * @abi_major: Out: %RADIANCE_ABI_MAJOR of the running module.
 * @abi_minor: Out: %RADIANCE_ABI_MINOR of the running module.
 * @device_index: Out: N of /dev/radianceN.
 * @backend: Out: one of %RADIANCE_BACKEND_*.
 * @pad1: Out: zero.
 * @name: Out: a human-readable device name, NUL-terminated.
 * @cores: Out: SIMT cores.
 * @warps_per_core: Out: hardware warps per core.
 * @threads_per_warp: Out: threads (lanes) per warp.
 * @max_queues: Out: most user-mode queues the device accepts at once.
 * @vram_size: Out: bytes of device memory.
 * @packet_size: Out: bytes per queue packet, %RADIANCE_PACKET_SIZE.
 * @doorbell_page_size: Out: bytes of a doorbell page mapping.
 * @features: Out: feature bits; none are defined, so it is zero.
 * @builtins: Out (ABI 1.4): bit i set: the i-th %RADIANCE_BUILTIN_*, in the order they
 *	are defined, runs on this device.
 * @pad2: Out: zero.
 * @dialect: Out (ABI 1.8): the wire format the device speaks, one of
 *	%RADIANCE_DIALECT_*.
 * @streams: Out (ABI 1.8): the device's hardware streams. Queues are spread over them,
 *	each queue's packets in order on one stream.
 * @caps: Out (ABI 1.8): %RADIANCE_CAP_* bits.
 * @retired_streams: Out (ABI 1.14): bit i set: stream i is retired and runs nothing (the
 *	server of a user device said so with %RADIANCE_IOCTL_USER_RETIRE).
 * @pad3: Out: zero.
 *
 * The argument of %RADIANCE_IOCTL_GET_INFO. @flags and @pad0 are inputs; everything else
 * is output.
 */
struct radiance_get_info {
	__u32 flags;
	__u32 pad0;
	__u16 abi_major;
	__u16 abi_minor;
	__u32 device_index;
	__u32 backend;
	__u32 pad1;
	char name[RADIANCE_NAME_LEN];
	__u32 cores;
	__u32 warps_per_core;
	__u32 threads_per_warp;
	__u32 max_queues;
	__u64 vram_size;
	__u32 packet_size;
	__u32 doorbell_page_size;
	__u64 features;
	__u32 builtins;
	__u32 pad2;
	__u32 dialect;
	__u32 streams;
	__u64 caps;
	__u32 retired_streams;
	__u32 pad3;
};

/**
 * DOC: GET_INFO sizes
 *
 * The earlier sizes of &struct radiance_get_info, which the kernel still accepts; it
 * fills only the fields that fit.
 *
 * - %RADIANCE_GET_INFO_SIZE_V1: as released in ABI 1.0.
 * - %RADIANCE_GET_INFO_SIZE_V1_4: as grown by builtins and pad2 in ABI 1.4.
 * - %RADIANCE_GET_INFO_SIZE_V1_8: as grown by dialect, streams and caps in ABI 1.8.
 *
 * ABI 1.14 grew it by retired_streams and pad3 to its current size.
 */
#define RADIANCE_GET_INFO_SIZE_V1 96
#define RADIANCE_GET_INFO_SIZE_V1_4 104
#define RADIANCE_GET_INFO_SIZE_V1_8 120

/**
 * DOC: Placements
 *
 * Where a buffer object's memory lives (the placement field of
 * &struct radiance_bo_create):
 *
 * - %RADIANCE_PLACEMENT_VRAM: device memory. Its device address is the raw VRAM address.
 * - %RADIANCE_PLACEMENT_HOST: pinned system memory the device reaches by DMA, with 32-bit
 *   addresses. Its DMA addresses stay inside the kernel: its device_address is 0.
 */
#define RADIANCE_PLACEMENT_VRAM 1
#define RADIANCE_PLACEMENT_HOST 2

/**
 * DOC: Buffer object flags
 *
 * The flags field of &struct radiance_bo_create; the kernel refuses any other bit.
 *
 * - %RADIANCE_BO_MAPPABLE: the BO can be mmapped: it is page-aligned and gets an mmap
 *   offset. EOPNOTSUPP for VRAM on a device without %RADIANCE_CAP_VRAM_MAPPABLE.
 * - %RADIANCE_BO_FIXED_ADDRESS (ABI 1.8, VRAM only): the BO is at device_address, which
 *   is then an input too, for executables linked at fixed addresses. EBUSY if any of the
 *   range is taken; EINVAL outside the allocatable VRAM or not aligned (256 bytes, or a
 *   page if mappable).
 */
#define RADIANCE_BO_MAPPABLE (1u << 0)
#define RADIANCE_BO_FIXED_ADDRESS (1u << 1)

/**
 * struct radiance_bo_create - Allocates a buffer object.
 * @size: In: bytes, rounded up to 256 bytes, or to a page if mappable.
 *	%RADIANCE_IOCTL_BO_INFO reports the rounded size.
 * @placement: In: one of %RADIANCE_PLACEMENT_*.
 * @flags: In: %RADIANCE_BO_* flags.
 * @handle: Out: the BO's handle in this file, never 0.
 * @pad: In: must be zero.
 * @device_address: Out: the address the device uses for byte 0 of a VRAM BO. In too
 *	with %RADIANCE_BO_FIXED_ADDRESS (ABI 1.8).
 * @mmap_offset: Out: the offset to mmap this file at; 0 unless mappable.
 *
 * The argument of %RADIANCE_IOCTL_BO_CREATE.
 */
struct radiance_bo_create {
	__u64 size;
	__u32 placement;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 device_address;
	__u64 mmap_offset;
};

/**
 * struct radiance_bo_destroy - Drops a buffer object's handle.
 * @handle: In: the handle.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_BO_DESTROY. The memory stays alive while mappings of
 * it exist.
 */
struct radiance_bo_destroy {
	__u32 handle;
	__u32 pad;
};

/**
 * struct radiance_bo_info - What a buffer object's handle refers to.
 * @handle: In: the handle.
 * @pad: In: must be zero.
 * @size: Out: bytes, as rounded at creation.
 * @placement: Out: one of %RADIANCE_PLACEMENT_*.
 * @flags: Out: the %RADIANCE_BO_* flags it was created with.
 * @device_address: Out: as in &struct radiance_bo_create.
 * @mmap_offset: Out: as in &struct radiance_bo_create.
 *
 * The argument of %RADIANCE_IOCTL_BO_INFO.
 */
struct radiance_bo_info {
	__u32 handle;
	__u32 pad;
	__u64 size;
	__u32 placement;
	__u32 flags;
	__u64 device_address;
	__u64 mmap_offset;
};

/**
 * define RADIANCE_EXPORT_CLOEXEC - The new file descriptor is close-on-exec.
 *
 * The one flag of the flags fields of &struct radiance_bo_export and
 * &struct radiance_sem_export_sync_file; the kernel refuses any other bit.
 */
#define RADIANCE_EXPORT_CLOEXEC (1u << 0)

/**
 * struct radiance_bo_export - Exports a mappable buffer object as a dma-buf.
 * @handle: In: a handle of a mappable BO, VRAM or HOST, not imported.
 * @flags: In: %RADIANCE_EXPORT_CLOEXEC or 0.
 * @fd: Out: the dma-buf file descriptor, read-write.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_BO_EXPORT. The dma-buf keeps the memory alive after
 * %RADIANCE_IOCTL_BO_DESTROY.
 */
struct radiance_bo_export {
	__u32 handle;
	__u32 flags;
	__s32 fd;
	__u32 pad;
};

/**
 * struct radiance_bo_import - Makes a HOST buffer object over anyone's dma-buf.
 * @fd: In: a dma-buf file descriptor; the BO holds its own reference.
 * @flags: In: must be zero.
 * @handle: Out: the new BO's handle; its placement is HOST, and it is not mappable.
 * @pad: In: must be zero.
 * @size: Out: the dma-buf's size in bytes.
 *
 * The argument of %RADIANCE_IOCTL_BO_IMPORT.
 */
struct radiance_bo_import {
	__s32 fd;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 size;
};

/**
 * DOC: Timeline semaphores
 *
 * A semaphore's value is a u64 that only goes up. It is readable without a syscall: mmap
 * the file read-only at the page holding the semaphore's value_offset and read the
 * little-endian u64 there atomically. The file's semaphores share that page.
 * %RADIANCE_SEM_FAILED_VALUE there means failed: read %RADIANCE_IOCTL_SEM_QUERY for the
 * error.
 */
/**
 * define RADIANCE_SEM_FAILED_VALUE - The value a failed semaphore shows.
 *
 * No signal may reach it.
 */
#define RADIANCE_SEM_FAILED_VALUE 0xffffffffffffffffull
/**
 * define RADIANCE_SEM_WAIT_MAX_POINTS - Most points one %RADIANCE_IOCTL_SEM_WAIT takes.
 */
#define RADIANCE_SEM_WAIT_MAX_POINTS 256
/**
 * define RADIANCE_SEM_WAIT_ANY - Return when any point is satisfied.
 *
 * The one flag of the flags field of &struct radiance_sem_wait. Without it, the wait is
 * for all of the points.
 */
#define RADIANCE_SEM_WAIT_ANY (1u << 0)

/**
 * struct radiance_sem_create - Creates a timeline semaphore of this file.
 * @initial: In: the starting value, below %RADIANCE_SEM_FAILED_VALUE.
 * @flags: In: must be zero.
 * @handle: Out: the semaphore's handle in this file, never 0.
 * @value_offset: Out: the mmap offset of the value's 8 bytes.
 *
 * The argument of %RADIANCE_IOCTL_SEM_CREATE.
 */
struct radiance_sem_create {
	__u64 initial;
	__u32 flags;
	__u32 handle;
	__u64 value_offset;
};

/**
 * struct radiance_sem_destroy - Drops a semaphore; its waiters get ECANCELED.
 * @handle: In: the semaphore.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_SEM_DESTROY.
 */
struct radiance_sem_destroy {
	__u32 handle;
	__u32 pad;
};

/**
 * struct radiance_sem_signal - Raises a semaphore's value from the host.
 * @handle: In: the semaphore.
 * @pad: In: must be zero.
 * @value: In: above the current value and below %RADIANCE_SEM_FAILED_VALUE, else
 *	EINVAL. A failed semaphore answers with its error.
 *
 * The argument of %RADIANCE_IOCTL_SEM_SIGNAL.
 */
struct radiance_sem_signal {
	__u32 handle;
	__u32 pad;
	__u64 value;
};

/**
 * struct radiance_sem_query - Reads a semaphore's value and failure.
 * @handle: In: the semaphore.
 * @pad: In: must be zero.
 * @value: Out: the value; %RADIANCE_SEM_FAILED_VALUE once failed.
 * @error: Out: 0, or the positive errno the semaphore failed with.
 * @pad1: Out: zero.
 *
 * The argument of %RADIANCE_IOCTL_SEM_QUERY.
 */
struct radiance_sem_query {
	__u32 handle;
	__u32 pad;
	__u64 value;
	__u32 error;
	__u32 pad1;
};

/**
 * struct radiance_sem_fail - Fails a semaphore for good.
 * @handle: In: the semaphore.
 * @error: In: a positive errno, 1 to 4095.
 *
 * The argument of %RADIANCE_IOCTL_SEM_FAIL. Every current and future waiter gets @error;
 * the first failure sticks.
 */
struct radiance_sem_fail {
	__u32 handle;
	__u32 error;
};

/**
 * struct radiance_sem_wait_point - One point (a semaphore and a value) of a wait.
 * @handle: A semaphore of this file.
 * @pad: Must be zero.
 * @value: The point is satisfied when the semaphore's value is at least this.
 *
 * The points field of &struct radiance_sem_wait points to an array of these.
 */
struct radiance_sem_wait_point {
	__u32 handle;
	__u32 pad;
	__u64 value;
};

/**
 * struct radiance_sem_wait - Waits for all, or any, of several semaphore points.
 * @points: In: a user pointer to @count &struct radiance_sem_wait_point.
 * @count: In: 1 to %RADIANCE_SEM_WAIT_MAX_POINTS.
 * @flags: In: %RADIANCE_SEM_WAIT_ANY or 0.
 * @deadline_ns: In: an absolute CLOCK_MONOTONIC deadline in ns. 0 polls; INT64_MAX waits
 *	for ever.
 * @index: Out: with %RADIANCE_SEM_WAIT_ANY, the satisfied point; on a failure, the
 *	failed one.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_SEM_WAIT. It fails with ETIME at the deadline, never
 * before; with the positive errno of a failed semaphore, whose point @index gives; and
 * with ECANCELED if a semaphore is destroyed meanwhile. Interrupted by a signal, the call
 * restarts (the deadline is absolute) or fails with EINTR.
 */
struct radiance_sem_wait {
	__u64 points;
	__u32 count;
	__u32 flags;
	__s64 deadline_ns;
	__u32 index;
	__u32 pad;
};

/**
 * struct radiance_sem_export_sync_file - Exports a semaphore point as a sync_file.
 * @handle: In: the semaphore.
 * @flags: In: %RADIANCE_EXPORT_CLOEXEC or 0.
 * @value: In: the point.
 * @fd: Out: the sync_file descriptor.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE. The sync_file's fence signals
 * when the semaphore reaches @value (at once if it has), signals with the semaphore's
 * error if it fails, and with ECANCELED if the semaphore is destroyed or its file closed
 * first. This is how a semaphore point crosses to other processes, devices and drivers.
 */
struct radiance_sem_export_sync_file {
	__u32 handle;
	__u32 flags;
	__u64 value;
	__s32 fd;
	__u32 pad;
};

/**
 * struct radiance_sem_import_sync_file - Advances a semaphore when a sync_file signals.
 * @handle: In: the semaphore.
 * @fd: In: a sync_file descriptor; the semaphore holds its own reference to the fence.
 * @value: In: the point to reach.
 * @flags: In: must be zero.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE. The semaphore advances to @value
 * when the fence signals, never lowering it, or fails with the fence's error. An already
 * signalled fence applies at once.
 */
struct radiance_sem_import_sync_file {
	__u32 handle;
	__s32 fd;
	__u64 value;
	__u32 flags;
	__u32 pad;
};

/**
 * struct radiance_sem_import_handle - A handle in this file for another file's semaphore.
 * @fd: In: an open file of a Radiance device, this one included. EBADF if there is no
 *	such descriptor; EINVAL for another kind of file.
 * @handle: In: a semaphore handle in @fd's file. An alias names the semaphore it
 *	aliases, so importing one, even through this file, gives another alias of that
 *	semaphore. EINVAL if the semaphore is this file's own, named directly or through an
 *	alias in @fd's file.
 * @flags: In: must be zero.
 * @new_handle: Out: the new handle, in this file.
 * @value_offset: Out: the mmap offset, in this file, of the u64 that holds its value.
 *
 * The argument of %RADIANCE_IOCTL_SEM_IMPORT_HANDLE (ABI 1.10). The semaphore may belong
 * to any device of this module; this file's queues then wait on and signal it directly,
 * with no sync_file. Every operation on the new handle acts on that semaphore, and its
 * value is also published in this file's value page. If the semaphore is destroyed or its
 * file closes, the handle reads as failed with ECANCELED. Destroy the handle with
 * %RADIANCE_IOCTL_SEM_DESTROY as any other.
 */
struct radiance_sem_import_handle {
	__s32 fd;
	__u32 handle;
	__u32 flags;
	__u32 new_handle;
	__u64 value_offset;
};

/**
 * DOC: User-mode queues
 *
 * A queue is a ring of 64-byte packets and a control block
 * (&struct radiance_queue_control), both mapped read-write by the process. The process
 * writes packets, then stores write_index with release ordering. If it then sees
 * needs_kick set, it calls %RADIANCE_IOCTL_QUEUE_KICK once: until then the scheduler does
 * not look at the queue. Since ABI 1.7 the scheduler leaves needs_kick 0 on a queue
 * stopped at a WAIT_SEMAPHORE packet: the semaphore's change wakes it.
 *
 * - %RADIANCE_QUEUE_MIN_PACKETS, %RADIANCE_QUEUE_MAX_PACKETS: the size of a ring, in
 *   packets, is a power of two in this range.
 * - %RADIANCE_QUEUE_ACTIVE: the queue is consuming packets (the status field of the
 *   control block).
 * - %RADIANCE_QUEUE_FAULTED: the queue stopped at fault_index. Destroy it and create
 *   another to go on.
 */
#define RADIANCE_QUEUE_MIN_PACKETS 16
#define RADIANCE_QUEUE_MAX_PACKETS 65536
#define RADIANCE_QUEUE_ACTIVE 0
#define RADIANCE_QUEUE_FAULTED 1

/**
 * DOC: Gluon error codes
 *
 * Gluon's ERR_CODE values, as a device fault reports them in the err_code field of
 * &struct radiance_queue_control and &struct radiance_queue_query:
 *
 * - %RADIANCE_GLUON_ERR_BAD_PC: Gluon's EXECUTION status: a warp faulted. On the emulated
 *   device, no built-in kernel is at the entry PC.
 * - %RADIANCE_GLUON_ERR_BAD_ADDRESS: a thread touched an address outside VRAM.
 * - %RADIANCE_GLUON_ERR_BAD_COMMAND: the command header is malformed.
 * - %RADIANCE_GLUON_ERR_DMA: a DMA transfer failed.
 * - %RADIANCE_GLUON_ERR_BAD_LAUNCH: the launch block is malformed.
 * - %RADIANCE_GLUON_ERR_RESET (ABI 1.9): the device was reset under the command: the
 *   server of a user device reset itself, or retired the command's stream (ABI 1.14).
 */
#define RADIANCE_GLUON_ERR_BAD_PC 1
#define RADIANCE_GLUON_ERR_BAD_ADDRESS 2
#define RADIANCE_GLUON_ERR_BAD_COMMAND 3
#define RADIANCE_GLUON_ERR_DMA 4
#define RADIANCE_GLUON_ERR_BAD_LAUNCH 5
#define RADIANCE_GLUON_ERR_RESET 6

/**
 * struct radiance_queue_control - A queue's control block.
 * @write_index: Process: packets written so far, free-running. Store it with release
 *	ordering after writing the packets.
 * @read_index: Kernel: packets completed so far.
 * @needs_kick: Kernel: 1 while the scheduler looks at this queue only once it is kicked
 *	(it sleeps, or serves other queues only). After storing @write_index, a process
 *	that sees 1 here calls %RADIANCE_IOCTL_QUEUE_KICK once. Since ABI 1.7 it is never 1
 *	on a queue stopped at a WAIT_SEMAPHORE packet, whose semaphore wakes it.
 * @status: Kernel: %RADIANCE_QUEUE_ACTIVE or %RADIANCE_QUEUE_FAULTED.
 * @error: Kernel: the positive errno a faulted queue stopped with.
 * @err_code: Kernel: for a device fault, Gluon's ERR_CODE, one of
 *	%RADIANCE_GLUON_ERR_*; 0 otherwise.
 * @fault_index: Kernel: the index of the packet that faulted.
 * @err_pc: Kernel: Gluon's ERR_PC for a device fault.
 * @err_thread: Kernel: Gluon's ERR_THREAD for a device fault.
 *
 * The first bytes of the page mapped read-write at the control_offset that
 * %RADIANCE_IOCTL_QUEUE_CREATE returned. The process writes only @write_index; the kernel
 * trusts nothing else in the page and rewrites its own fields.
 */
struct radiance_queue_control {
	__u64 write_index;
	__u64 read_index;
	__u32 needs_kick;
	__u32 status;
	__u32 error;
	__u32 err_code;
	__u64 fault_index;
	__u32 err_pc;
	__u32 err_thread;
};

/**
 * struct radiance_queue_create - Creates a user-mode queue.
 * @ring_packets: In: the ring's size in packets, a power of two from
 *	%RADIANCE_QUEUE_MIN_PACKETS to %RADIANCE_QUEUE_MAX_PACKETS.
 * @priority: In: must be zero; there is one priority.
 * @flags: In: must be zero.
 * @queue_id: Out: the queue's id in this file, never 0.
 * @ring_offset: Out: the mmap offset of the ring, @ring_packets * 64 bytes.
 * @control_offset: Out: the mmap offset of the control block, one page.
 *
 * The argument of %RADIANCE_IOCTL_QUEUE_CREATE.
 */
struct radiance_queue_create {
	__u32 ring_packets;
	__u32 priority;
	__u32 flags;
	__u32 queue_id;
	__u64 ring_offset;
	__u64 control_offset;
};

/**
 * struct radiance_launch_desc - A launch, field by field (ABI 1.8).
 * @start_pc: Where warps start: the start code.
 * @kernel_pc: The kernel the start code calls.
 * @grid: Blocks per grid, x y z; each at least 1.
 * @block: Threads per block, x y z; each at least 1.
 * @shmem_per_block: Shared memory per block, passed to the device's launch block.
 * @regs_per_thread: Registers per thread; at least 1.
 * @flags: Gluon's launch flags, passed through.
 * @pad: Must be zero.
 * @params: The HOST BO holding the params, or 0 for the descriptor's own BO. The params
 *	are copied into the launch block.
 * @params_size: Bytes of params.
 * @params_offset: Where the params start in @params.
 * @stack: The VRAM BO holding the stack, or 0 for none. The launch block gets the
 *	address of the range's last word: stacks grow down.
 * @pad1: Must be zero.
 * @stack_offset: Where the stack's range starts in @stack.
 * @stack_size: Bytes of the stack's range.
 * @tls: The VRAM BO holding thread-local storage, or 0 for none. The launch block gets
 *	the range's first address.
 * @pad2: Must be zero.
 * @tls_offset: Where the thread-local storage's range starts in @tls.
 * @tls_size: Bytes of the thread-local storage's range.
 *
 * It lies in a HOST BO that a %RADIANCE_PACKET_LAUNCH_DESC packet names, in the block
 * fields of &struct radiance_launch_packet; the packet's printf fields are as for
 * %RADIANCE_PACKET_LAUNCH. The kernel builds the device's launch block from it: a process
 * never writes a raw block. Executables live in VRAM, so no binary travels with a
 * launch: @start_pc and @kernel_pc are device addresses, or built-in PCs
 * (%RADIANCE_BUILTIN_*) on the emulated device.
 */
struct radiance_launch_desc {
	__u32 start_pc;
	__u32 kernel_pc;
	__u32 grid[3];
	__u32 block[3];
	__u32 shmem_per_block;
	__u8 regs_per_thread;
	__u8 flags;
	__u16 pad;
	__u32 params;
	__u32 params_size;
	__u64 params_offset;
	__u32 stack;
	__u32 pad1;
	__u64 stack_offset;
	__u64 stack_size;
	__u32 tls;
	__u32 pad2;
	__u64 tls_offset;
	__u64 tls_size;
};

/**
 * struct radiance_queue_destroy - Destroys a queue.
 * @queue_id: In: the queue.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_QUEUE_DESTROY. What the queue has not completed is
 * cancelled: its SIGNAL_SEMAPHORE packets fail their semaphores with ECANCELED (a value
 * already reached stays), and a launch the device runs for it is stopped by a device
 * reset (ABI 1.7; before, packets in flight finished).
 */
struct radiance_queue_destroy {
	__u32 queue_id;
	__u32 pad;
};

/**
 * struct radiance_queue_kick - Rings a queue's doorbell.
 * @queue_id: In: the queue.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_QUEUE_KICK, which is only needed when the control
 * block's needs_kick is set. Until ABI 1.7 the ioctl was declared with
 * &struct radiance_queue_destroy; this struct keeps that layout, so the ioctl number did
 * not change.
 */
struct radiance_queue_kick {
	__u32 queue_id;
	__u32 pad;
};

/**
 * struct radiance_queue_query - The kernel's view of a queue.
 * @queue_id: In: the queue.
 * @pad: In: must be zero.
 * @read_index: Out: packets completed.
 * @submit_index: Out: packets taken from the ring, completed or in flight.
 * @status: Out: as in &struct radiance_queue_control.
 * @error: Out: as in &struct radiance_queue_control.
 * @fault_index: Out: as in &struct radiance_queue_control.
 * @err_code: Out: as in &struct radiance_queue_control.
 * @err_pc: Out: as in &struct radiance_queue_control.
 * @err_thread: Out: as in &struct radiance_queue_control.
 * @pad1: Out: zero.
 *
 * The argument of %RADIANCE_IOCTL_QUEUE_QUERY.
 */
struct radiance_queue_query {
	__u32 queue_id;
	__u32 pad;
	__u64 read_index;
	__u64 submit_index;
	__u32 status;
	__u32 error;
	__u64 fault_index;
	__u32 err_code;
	__u32 err_pc;
	__u32 err_thread;
	__u32 pad1;
};

/**
 * define RADIANCE_PACKET_SIZE - Bytes of one queue packet.
 */
#define RADIANCE_PACKET_SIZE 64
/**
 * DOC: Packet kinds
 *
 * The kind field of &struct radiance_packet_header. Zero is no packet: a ring slot never
 * written faults the queue.
 *
 * - %RADIANCE_PACKET_NOP: does nothing; completes in order.
 * - %RADIANCE_PACKET_FENCE: waits for everything before it to complete.
 * - %RADIANCE_PACKET_FILL: a &struct radiance_fill_packet.
 * - %RADIANCE_PACKET_COPY: a &struct radiance_copy_packet.
 * - %RADIANCE_PACKET_LAUNCH: a &struct radiance_launch_packet.
 * - %RADIANCE_PACKET_READ_COUNTER: a &struct radiance_counter_packet: a device counter
 *   into VRAM.
 * - %RADIANCE_PACKET_TIMESTAMP: a &struct radiance_counter_packet with counter 0: the
 *   device clock, in nanoseconds, into VRAM.
 * - %RADIANCE_PACKET_WAIT_SEMAPHORE: a &struct radiance_semaphore_packet. The queue goes
 *   no further until the semaphore reaches the value. A failed semaphore faults the
 *   queue with its error, unless the packet has %RADIANCE_PACKET_SKIP_ON_FAILURE.
 * - %RADIANCE_PACKET_SIGNAL_SEMAPHORE: a &struct radiance_semaphore_packet. It raises the
 *   semaphore to the value once everything before it on the queue has completed. A queue
 *   that faults first (or is destroyed, or skips the packet) fails the semaphore with
 *   that error instead, unless the semaphore has already reached the value.
 * - %RADIANCE_PACKET_LAUNCH_DESC (ABI 1.8): a &struct radiance_launch_packet naming a
 *   &struct radiance_launch_desc. The kernel builds the launch block in the device's
 *   dialect.
 */
#define RADIANCE_PACKET_NOP 1
#define RADIANCE_PACKET_FENCE 2
#define RADIANCE_PACKET_FILL 3
#define RADIANCE_PACKET_COPY 4
#define RADIANCE_PACKET_LAUNCH 5
#define RADIANCE_PACKET_READ_COUNTER 6
#define RADIANCE_PACKET_TIMESTAMP 7
#define RADIANCE_PACKET_WAIT_SEMAPHORE 8
#define RADIANCE_PACKET_SIGNAL_SEMAPHORE 9
#define RADIANCE_PACKET_LAUNCH_DESC 10
/**
 * define RADIANCE_PACKET_BARRIER - Everything before the packet completes before it starts.
 *
 * A flag of the flags field of &struct radiance_packet_header.
 */
#define RADIANCE_PACKET_BARRIER (1u << 0)
/**
 * define RADIANCE_PACKET_SKIP_ON_FAILURE - A failed semaphore skips packets (ABI 1.7).
 *
 * A flag of the flags field of &struct radiance_packet_header, for WAIT_SEMAPHORE packets
 * only. If the semaphore has failed, the queue does not fault: this packet and the skip
 * packets after it (&struct radiance_semaphore_packet) complete without running, and
 * each SIGNAL_SEMAPHORE among them fails its semaphore with the same error. The queue
 * goes on after them. This is how one submission (waits, work, signals) fails as a unit
 * while its queue lives on.
 */
#define RADIANCE_PACKET_SKIP_ON_FAILURE (1u << 1)

/**
 * struct radiance_packet_header - The first 8 bytes of every packet.
 * @kind: One of the packet kinds, %RADIANCE_PACKET_NOP to %RADIANCE_PACKET_LAUNCH_DESC.
 * @flags: %RADIANCE_PACKET_BARRIER and %RADIANCE_PACKET_SKIP_ON_FAILURE.
 * @reserved: Must be zero.
 * @pad: Must be zero.
 */
struct radiance_packet_header {
	__u8 kind;
	__u8 flags;
	__u16 reserved;
	__u32 pad;
};

/**
 * struct radiance_packet - A packet as the ring holds it.
 * @header: The header; its kind says which struct the packet is.
 * @body: The rest of the packet, laid out by the kind's struct.
 *
 * Every byte that the kind's struct does not name must be zero.
 */
struct radiance_packet {
	struct radiance_packet_header header;
	__u64 body[7];
};

/**
 * struct radiance_fill_packet - Fills a range of a buffer object with a pattern.
 * @header: Kind %RADIANCE_PACKET_FILL.
 * @dst: The handle of a VRAM BO.
 * @pattern_size: 1, 2 or 4 bytes.
 * @dst_offset: Where the range starts in @dst; a multiple of @pattern_size.
 * @size: Bytes to fill; a multiple of @pattern_size.
 * @pattern: The pattern, little-endian, in the low @pattern_size bytes; the bytes above
 *	them must be zero.
 * @pad: Must be zero.
 * @reserved: Must be zero.
 */
struct radiance_fill_packet {
	struct radiance_packet_header header;
	__u32 dst;
	__u32 pattern_size;
	__u64 dst_offset;
	__u64 size;
	__u32 pattern;
	__u32 pad;
	__u64 reserved[3];
};

/**
 * struct radiance_copy_packet - Copies between two buffer objects of the file.
 * @header: Kind %RADIANCE_PACKET_COPY.
 * @src: The source BO's handle.
 * @dst: The destination BO's handle.
 * @src_offset: Where the copy starts in @src.
 * @dst_offset: Where the copy lands in @dst.
 * @size: Bytes to copy.
 * @reserved: Must be zero.
 *
 * VRAM and HOST BOs in any direction but HOST to HOST; the ranges must not overlap.
 */
struct radiance_copy_packet {
	struct radiance_packet_header header;
	__u32 src;
	__u32 dst;
	__u64 src_offset;
	__u64 dst_offset;
	__u64 size;
	__u64 reserved[3];
};

/**
 * struct radiance_launch_packet - Runs a kernel described in host memory.
 * @header: Kind %RADIANCE_PACKET_LAUNCH, or %RADIANCE_PACKET_LAUNCH_DESC (ABI 1.8).
 * @block: The HOST BO holding the launch block (for LAUNCH_DESC, the
 *	&struct radiance_launch_desc).
 * @pad: Must be zero.
 * @block_offset: Where the block starts in @block.
 * @block_size: Bytes of the block, within one page; for LAUNCH_DESC, the size of
 *	&struct radiance_launch_desc.
 * @printf: The HOST BO for printf output, or 0 for none (ABI 1.6).
 * @pad2: Must be zero.
 * @printf_offset: Where the printf output goes in @printf; 0 when @printf is 0.
 * @printf_size: Bytes at @printf_offset: at least 4 + the ring's limit, within one page;
 *	0 when @printf is 0.
 * @reserved: Must be zero.
 *
 * For %RADIANCE_PACKET_LAUNCH the block is a &struct radiance_launch_block, then the
 * binary, the params and the printf ring (&struct radiance_printf_ring). The kernel
 * copies the block and sets its printf_host_addr itself, to the device address of
 * @printf_offset in @printf: after the launch, the device drains the printf ring there
 * as a little-endian u32 byte count and the text.
 */
struct radiance_launch_packet {
	struct radiance_packet_header header;
	__u32 block;
	__u32 pad;
	__u64 block_offset;
	__u64 block_size;
	__u32 printf;
	__u32 pad2;
	__u64 printf_offset;
	__u64 printf_size;
	__u64 reserved;
};

/**
 * struct radiance_printf_ring - The printf ring of a launch block.
 * @lock: The device's; the process writes 0.
 * @head: The device's: bytes of text its kernels appended; the process writes 0.
 * @tail: The device's: bytes of text already drained; the process writes 0.
 * @limit: Bytes of text the ring holds after this header.
 *
 * It lies right after the params in the launch block. The device's kernels append text
 * at @head.
 */
struct radiance_printf_ring {
	__u32 lock;
	__u32 head;
	__u32 tail;
	__u32 limit;
};

/**
 * DOC: Device counters
 *
 * What the counter field of &struct radiance_counter_packet names for READ_COUNTER:
 *
 * - %RADIANCE_COUNTER_COMMANDS: commands the device has executed.
 * - %RADIANCE_COUNTER_THREADS: threads of launched kernels the device has run.
 * - %RADIANCE_COUNTER_CLOCK_NS: the device clock, in nanoseconds, which TIMESTAMP reads.
 */
#define RADIANCE_COUNTER_COMMANDS 0
#define RADIANCE_COUNTER_THREADS 1
#define RADIANCE_COUNTER_CLOCK_NS 2

/**
 * struct radiance_counter_packet - Writes a device counter or the clock into VRAM.
 * @header: Kind %RADIANCE_PACKET_READ_COUNTER or %RADIANCE_PACKET_TIMESTAMP.
 * @dst: The VRAM BO's handle.
 * @counter: One of %RADIANCE_COUNTER_*; zero for TIMESTAMP.
 * @dst_offset: Where the value lands in @dst; a multiple of 8.
 * @reserved: Must be zero.
 *
 * The device writes the value as a little-endian u64, after everything before the packet
 * on the queue.
 */
struct radiance_counter_packet {
	struct radiance_packet_header header;
	__u32 dst;
	__u32 counter;
	__u64 dst_offset;
	__u64 reserved[5];
};

/**
 * struct radiance_semaphore_packet - Waits on or signals a semaphore.
 * @header: Kind %RADIANCE_PACKET_WAIT_SEMAPHORE or %RADIANCE_PACKET_SIGNAL_SEMAPHORE.
 * @handle: A semaphore of the queue's file.
 * @skip: For WAIT_SEMAPHORE with %RADIANCE_PACKET_SKIP_ON_FAILURE (ABI 1.7), how many
 *	packets after this one to skip if the semaphore has failed; zero otherwise. ABI
 *	1.6 called it pad.
 * @value: For WAIT_SEMAPHORE, the value the queue waits for; for SIGNAL_SEMAPHORE, the
 *	value the semaphore is raised to.
 * @reserved: Must be zero.
 */
struct radiance_semaphore_packet {
	struct radiance_packet_header header;
	__u32 handle;
	__u32 skip;
	__u64 value;
	__u64 reserved[5];
};

/**
 * struct radiance_launch_block - The head of Gluon's launch block.
 * @entry_pc: Where the device starts executing; a %RADIANCE_BUILTIN_* on the emulated
 *	device.
 * @grid: Blocks per grid, x y z.
 * @block: Threads per block, x y z.
 * @regs_per_thread: Registers per thread.
 * @flags: Gluon's launch flags.
 * @pad: Padding.
 * @shmem_per_block: Shared memory per block.
 * @printf_host_addr: Where the device drains the printf ring, or 0 for none. The kernel
 *	sets it from the packet's printf fields.
 * @binary_size: Bytes of the binary that follows this head.
 * @params_size: Bytes of the params that follow the binary.
 * @pad1: Padding.
 *
 * The block as the device reads it from host memory: this head, the binary, the params,
 * then the printf ring. A %RADIANCE_PACKET_LAUNCH packet names it.
 */
struct radiance_launch_block {
	__u32 entry_pc;
	__u16 grid[3];
	__u16 block[3];
	__u8 regs_per_thread;
	__u8 flags;
	__u16 pad;
	__u32 shmem_per_block;
	__u32 printf_host_addr;
	__u32 binary_size;
	__u32 params_size;
	__u32 pad1;
};

/**
 * DOC: The control node
 *
 * /dev/radiance-control (ABI 1.9): a process with CAP_SYS_ADMIN serves a Gluon through
 * it, the way VDUSE and ublk put devices in userspace. Its file is the device:
 * %RADIANCE_IOCTL_USER_DECLARE makes /dev/radianceN appear, and closing the file (or the
 * process dying) removes it. Every other control ioctl fails with ENXIO before it.
 *
 * The server reads command frames of the declared dialect with read(), whole frames
 * only. It gets EAGAIN when there are none, and poll() reports POLLIN when there are,
 * unless it declared %RADIANCE_USER_DECLARE_READ_WAITS. With
 * %RADIANCE_USER_DECLARE_INLINE_BLOCKS each KERNEL frame is followed by its launch block.
 * The server reaches the host memory the frames name with %RADIANCE_IOCTL_USER_HOST_READ
 * and %RADIANCE_IOCTL_USER_HOST_WRITE, and answers each frame with a 16-byte response by
 * write(), whole responses only, in order per stream. A response on a stream with no
 * command read and unanswered is EPROTO.
 *
 * When the kernel resets the device (a command overran the launch timeout), the frames
 * not read and the answers not given are dropped, poll() reports POLLPRI, and read() and
 * write() fail with ECONNRESET until the server acknowledges with
 * %RADIANCE_IOCTL_USER_RESET.
 */
/**
 * define RADIANCE_CONTROL_NODE - The control node's name under /dev.
 */
#define RADIANCE_CONTROL_NODE "radiance-control"

/**
 * define RADIANCE_USER_DECLARE_READ_WAITS - read() on the control file waits (ABI 1.11).
 *
 * A flag of the flags field of &struct radiance_user_declare. read() waits, as read(2)
 * does, until a frame may be read, a reset waits to be acknowledged (ECONNRESET) or a
 * signal comes; a file opened O_NONBLOCK still gets EAGAIN. A server with nothing else to
 * wait for then needs no poll() before each read().
 */
#define RADIANCE_USER_DECLARE_READ_WAITS (1u << 0)
/**
 * define RADIANCE_USER_DECLARE_TAKES_DOORBELLS - The server takes doorbells (ABI 1.12).
 *
 * A flag of the flags field of &struct radiance_user_declare. The server comes back to
 * read() once it has answered every frame it read. A doorbell (%RADIANCE_IOCTL_QUEUE_KICK)
 * rung while it is in write() past its answers, or on its way back, is then left to it:
 * that write() or read() runs the scheduler's pass, which pushes the frames it reads, and
 * poll() reports POLLIN for it. The ringing process neither runs the pass nor wakes a
 * server that would have fallen asleep meanwhile. A server that does not come back holds
 * up its own device's queues, as one that stops answering does.
 */
#define RADIANCE_USER_DECLARE_TAKES_DOORBELLS (1u << 1)
/**
 * define RADIANCE_USER_DECLARE_INLINE_BLOCKS - read() inlines launch blocks (ABI 1.13).
 *
 * A flag of the flags field of &struct radiance_user_declare. read() follows each KERNEL
 * frame with a &struct radiance_user_inline_block and the launch block the frame names,
 * read from host memory as the frame was read, so that the server needs no
 * %RADIANCE_IOCTL_USER_HOST_READ for it.
 */
#define RADIANCE_USER_DECLARE_INLINE_BLOCKS (1u << 2)
/**
 * define RADIANCE_USER_DECLARE_REPORTS_PROGRESS - The server reports progress (ABI 1.15).
 *
 * A flag of the flags field of &struct radiance_user_declare. The server reports the
 * progress of the commands it runs with %RADIANCE_IOCTL_USER_PROGRESS: the watchdog then
 * resets the device only for a command whose stream made no progress for the launch
 * timeout, however long the command takes. Without it, a command has a deadline from its
 * size and the declared rates (bytes_per_s, threads_per_s).
 */
#define RADIANCE_USER_DECLARE_REPORTS_PROGRESS (1u << 3)

/**
 * struct radiance_user_inline_block - What follows a KERNEL frame with inline blocks.
 * @len: Bytes of the launch block that follow, the block's size; or 0.
 * @pad: Zero.
 *
 * With %RADIANCE_USER_DECLARE_INLINE_BLOCKS (ABI 1.13), read() on the control file
 * follows each KERNEL frame with this header, @len bytes of the launch block the frame
 * names, then zeros up to a multiple of 8 bytes, where the next frame begins.
 *
 * The length is 0, and no bytes follow, when the block is larger than
 * %RADIANCE_USER_INLINE_BLOCK_MAX, larger than the read's buffer with nothing before it,
 * or not in host memory mapped for the device. The server then reads the block with
 * %RADIANCE_IOCTL_USER_HOST_READ, as without the flag (which fails with EFAULT in the
 * last case). A frame whose block would fit a read's buffer but not what is left of it
 * is left for the next read. A buffer smaller than a frame and this header is EINVAL.
 */
struct radiance_user_inline_block {
	__u32 len;
	__u32 pad;
};
/**
 * define RADIANCE_USER_INLINE_BLOCK_MAX - Most bytes of a launch block that read() inlines.
 *
 * A page, which covers a launch's header and params. A larger block (with a binary or a
 * printf ring) is read with %RADIANCE_IOCTL_USER_HOST_READ.
 */
#define RADIANCE_USER_INLINE_BLOCK_MAX 4096u

/**
 * struct radiance_user_declare - Declares the control file's device.
 * @flags: In: %RADIANCE_USER_DECLARE_* flags.
 * @dialect: In: one of %RADIANCE_DIALECT_*.
 * @streams: In: hardware streams, 1 to the dialect's (gluon-sim: 4).
 * @stream_depth: In: commands one stream takes at once, 1 to 16 (gluon-sim: 1).
 * @cores: In: SIMT cores, as %RADIANCE_IOCTL_GET_INFO reports them.
 * @warps_per_core: In: warps per core, as GET_INFO reports them.
 * @threads_per_warp: In: threads per warp, as GET_INFO reports them.
 * @builtins: In: which built-in kernels the server runs: bit i for the i-th
 *	%RADIANCE_BUILTIN_*, in the order they are defined.
 * @vram_size: In: bytes of VRAM, a non-zero multiple of the page size, at most 4 GiB
 *	(Gluon's addresses are 32-bit).
 * @caps: In: %RADIANCE_CAP_* bits. %RADIANCE_CAP_VRAM_MAPPABLE is EOPNOTSUPP: the
 *	device's VRAM lives in the server's process, where the kernel has no pages to map.
 * @name: In: the name GET_INFO reports, NUL-terminated.
 * @device_index: Out: N of /dev/radianceN.
 * @pad: In: must be zero.
 * @bytes_per_s: In (ABI 1.15): bytes a second the device copies or fills, for a server
 *	that does not report progress (%RADIANCE_USER_DECLARE_REPORTS_PROGRESS): a copy or
 *	fill may take its size over this before the watchdog resets the device, the launch
 *	timeout at least. 0: not declared (the timeout only).
 * @threads_per_s: In (ABI 1.15): threads a second the device runs, as @bytes_per_s for
 *	launches.
 *
 * The argument of %RADIANCE_IOCTL_USER_DECLARE, on the control node. It fails with EPERM
 * without CAP_SYS_ADMIN, EBUSY if this file already declared a device, ENOSPC when all
 * %RADIANCE_MAX_DEVICES devices exist, and EINVAL for a field out of range. ABI 1.15 grew
 * it by @bytes_per_s and @threads_per_s; the struct of ABI 1.9 is still taken
 * (%RADIANCE_USER_DECLARE_SIZE_V1_9).
 */
struct radiance_user_declare {
	__u32 flags;
	__u32 dialect;
	__u32 streams;
	__u32 stream_depth;
	__u32 cores;
	__u32 warps_per_core;
	__u32 threads_per_warp;
	__u32 builtins;
	__u64 vram_size;
	__u64 caps;
	char name[RADIANCE_NAME_LEN];
	__u32 device_index;
	__u32 pad;
	__u64 bytes_per_s;
	__u64 threads_per_s;
};

/**
 * define RADIANCE_USER_DECLARE_SIZE_V1_9 - &struct radiance_user_declare as released in
 * ABI 1.9, without the rates; the kernel still takes it.
 */
#define RADIANCE_USER_DECLARE_SIZE_V1_9 88

/**
 * struct radiance_user_host_access - Reads or writes host memory as the device's DMA would.
 * @addr: In: the DMA address, as the command frame gave it.
 * @user_ptr: In: the server's buffer.
 * @len: In: bytes, at most %RADIANCE_USER_HOST_ACCESS_MAX.
 * @flags: In: no flags are defined yet; must be zero.
 *
 * The argument of %RADIANCE_IOCTL_USER_HOST_READ and %RADIANCE_IOCTL_USER_HOST_WRITE, on
 * the control node. Only host memory DMA-mapped for the device at that moment can be
 * reached: EFAULT for anything else, and for a bad @user_ptr.
 */
struct radiance_user_host_access {
	__u64 addr;
	__u64 user_ptr;
	__u32 len;
	__u32 flags;
};
/**
 * define RADIANCE_USER_HOST_ACCESS_MAX - Most bytes one host read or write moves.
 */
#define RADIANCE_USER_HOST_ACCESS_MAX (1u << 20)

/**
 * struct radiance_user_reset - Acknowledges the kernel's reset, or reports the device's.
 * @flags: In: no flags are defined yet; must be zero.
 * @pad: In: must be zero.
 *
 * The argument of %RADIANCE_IOCTL_USER_RESET, on the control node. It acknowledges the
 * kernel's reset (POLLPRI). With none pending, the server says its device reset itself:
 * every command read and not answered, and every frame not read, completes with
 * %RADIANCE_GLUON_ERR_RESET.
 */
struct radiance_user_reset {
	__u32 flags;
	__u32 pad;
};

/**
 * struct radiance_user_retire - Sets which streams take no command (ABI 1.14).
 * @streams: In: bit i set: stream i is retired; clear: it is in service.
 * @flags: In: no flags are defined yet; must be zero.
 *
 * The argument of %RADIANCE_IOCTL_USER_RETIRE, on the control node. A device that cannot
 * reset a stream (gluon-sim, still running a launch the kernel gave up at a reset)
 * retires it instead of being removed, and puts it back in service once the stream is
 * usable again.
 *
 * Every command read and not answered on a stream this retires, and every frame for it
 * not read, completes with %RADIANCE_GLUON_ERR_RESET, as at a server's own reset. The
 * queues on it move to streams in service once their commands on it have completed, and
 * nothing is issued to it until a later call leaves it out. The retired_streams field of
 * &struct radiance_get_info reports the set.
 *
 * It fails with EINVAL for a flag or a bit at or past the declared streams, EBUSY if no
 * stream would be left in service (close the control file to remove the device instead),
 * and ENXIO before %RADIANCE_IOCTL_USER_DECLARE.
 */
struct radiance_user_retire {
	__u32 streams;
	__u32 flags;
};

/**
 * struct radiance_user_progress - Reports what a stream's command did (ABI 1.15).
 * @stream: In: the stream.
 * @flags: In: no flags are defined yet; must be zero.
 * @units: In: work done since the stream's last report, more than 0: bytes for a copy or
 *	fill, threads for a launch, or whatever else the server counts (a simulator's CPU
 *	time).
 *
 * The argument of %RADIANCE_IOCTL_USER_PROGRESS, on the control node: the command the
 * server runs on @stream (its oldest read and not answered) moved. The watchdog of a
 * device declared with %RADIANCE_USER_DECLARE_REPORTS_PROGRESS resets it only for a
 * command whose stream reported nothing for the launch timeout; debugfs streams shows
 * what each stream's command did so far.
 *
 * It fails with EINVAL for a flag, @units 0 or a stream the device lacks, EPROTO for a
 * stream that runs nothing the server read, ECONNRESET while a reset waits to be
 * acknowledged (the command was given up), and ENXIO before
 * %RADIANCE_IOCTL_USER_DECLARE or on a device declared without
 * %RADIANCE_USER_DECLARE_REPORTS_PROGRESS.
 */
struct radiance_user_progress {
	__u32 stream;
	__u32 flags;
	__u64 units;
};

/**
 * define RADIANCE_IOCTL_GET_INFO - What the device is and what it can do.
 *
 * On a device node; takes &struct radiance_get_info, or one of its earlier sizes
 * (%RADIANCE_GET_INFO_SIZE_V1 and the like).
 */
#define RADIANCE_IOCTL_GET_INFO _IOWR(RADIANCE_IOCTL_TYPE, 0x00, struct radiance_get_info)
/**
 * define RADIANCE_IOCTL_BO_CREATE - Allocates a buffer object in VRAM or pinned host memory.
 *
 * On a device node; takes &struct radiance_bo_create.
 */
#define RADIANCE_IOCTL_BO_CREATE _IOWR(RADIANCE_IOCTL_TYPE, 0x01, struct radiance_bo_create)
/**
 * define RADIANCE_IOCTL_BO_DESTROY - Drops a buffer object's handle.
 *
 * On a device node; takes &struct radiance_bo_destroy.
 */
#define RADIANCE_IOCTL_BO_DESTROY _IOWR(RADIANCE_IOCTL_TYPE, 0x02, struct radiance_bo_destroy)
/**
 * define RADIANCE_IOCTL_BO_INFO - What a buffer object's handle refers to.
 *
 * On a device node; takes &struct radiance_bo_info.
 */
#define RADIANCE_IOCTL_BO_INFO _IOWR(RADIANCE_IOCTL_TYPE, 0x03, struct radiance_bo_info)
/**
 * define RADIANCE_IOCTL_BO_EXPORT - Exports a mappable buffer object as a dma-buf.
 *
 * On a device node; takes &struct radiance_bo_export.
 */
#define RADIANCE_IOCTL_BO_EXPORT _IOWR(RADIANCE_IOCTL_TYPE, 0x04, struct radiance_bo_export)
/**
 * define RADIANCE_IOCTL_BO_IMPORT - Makes a HOST buffer object over a dma-buf.
 *
 * On a device node; takes &struct radiance_bo_import.
 */
#define RADIANCE_IOCTL_BO_IMPORT _IOWR(RADIANCE_IOCTL_TYPE, 0x05, struct radiance_bo_import)
/**
 * define RADIANCE_IOCTL_SEM_CREATE - Creates a timeline semaphore.
 *
 * On a device node; takes &struct radiance_sem_create.
 */
#define RADIANCE_IOCTL_SEM_CREATE _IOWR(RADIANCE_IOCTL_TYPE, 0x10, struct radiance_sem_create)
/**
 * define RADIANCE_IOCTL_SEM_DESTROY - Drops a semaphore.
 *
 * On a device node; takes &struct radiance_sem_destroy.
 */
#define RADIANCE_IOCTL_SEM_DESTROY _IOWR(RADIANCE_IOCTL_TYPE, 0x11, struct radiance_sem_destroy)
/**
 * define RADIANCE_IOCTL_SEM_SIGNAL - Raises a semaphore's value from the host.
 *
 * On a device node; takes &struct radiance_sem_signal.
 */
#define RADIANCE_IOCTL_SEM_SIGNAL _IOWR(RADIANCE_IOCTL_TYPE, 0x12, struct radiance_sem_signal)
/**
 * define RADIANCE_IOCTL_SEM_QUERY - Reads a semaphore's value and failure.
 *
 * On a device node; takes &struct radiance_sem_query.
 */
#define RADIANCE_IOCTL_SEM_QUERY _IOWR(RADIANCE_IOCTL_TYPE, 0x13, struct radiance_sem_query)
/**
 * define RADIANCE_IOCTL_SEM_FAIL - Fails a semaphore for good.
 *
 * On a device node; takes &struct radiance_sem_fail.
 */
#define RADIANCE_IOCTL_SEM_FAIL _IOWR(RADIANCE_IOCTL_TYPE, 0x14, struct radiance_sem_fail)
/**
 * define RADIANCE_IOCTL_SEM_WAIT - Waits for all, or any, of several semaphore points.
 *
 * On a device node; takes &struct radiance_sem_wait.
 */
#define RADIANCE_IOCTL_SEM_WAIT _IOWR(RADIANCE_IOCTL_TYPE, 0x15, struct radiance_sem_wait)
/**
 * define RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE - Exports a semaphore point as a sync_file.
 *
 * On a device node; takes &struct radiance_sem_export_sync_file.
 */
#define RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x16, struct radiance_sem_export_sync_file)
/**
 * define RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE - Advances a semaphore when a sync_file signals.
 *
 * On a device node; takes &struct radiance_sem_import_sync_file.
 */
#define RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x17, struct radiance_sem_import_sync_file)
/**
 * define RADIANCE_IOCTL_SEM_IMPORT_HANDLE - A handle for another file's semaphore (ABI 1.10).
 *
 * On a device node; takes &struct radiance_sem_import_handle.
 */
#define RADIANCE_IOCTL_SEM_IMPORT_HANDLE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x18, struct radiance_sem_import_handle)
/**
 * define RADIANCE_IOCTL_QUEUE_CREATE - Creates a user-mode queue.
 *
 * On a device node; takes &struct radiance_queue_create.
 */
#define RADIANCE_IOCTL_QUEUE_CREATE _IOWR(RADIANCE_IOCTL_TYPE, 0x20, struct radiance_queue_create)
/**
 * define RADIANCE_IOCTL_QUEUE_DESTROY - Destroys a queue, cancelling what it has not completed.
 *
 * On a device node; takes &struct radiance_queue_destroy.
 */
#define RADIANCE_IOCTL_QUEUE_DESTROY _IOWR(RADIANCE_IOCTL_TYPE, 0x21, struct radiance_queue_destroy)
/**
 * define RADIANCE_IOCTL_QUEUE_QUERY - The kernel's view of a queue.
 *
 * On a device node; takes &struct radiance_queue_query.
 */
#define RADIANCE_IOCTL_QUEUE_QUERY _IOWR(RADIANCE_IOCTL_TYPE, 0x22, struct radiance_queue_query)
/**
 * define RADIANCE_IOCTL_QUEUE_KICK - Rings a queue's doorbell, when needs_kick asks for it.
 *
 * On a device node; takes &struct radiance_queue_kick.
 */
#define RADIANCE_IOCTL_QUEUE_KICK _IOWR(RADIANCE_IOCTL_TYPE, 0x23, struct radiance_queue_kick)
/**
 * define RADIANCE_IOCTL_USER_DECLARE - Declares the control file's device (ABI 1.9).
 *
 * On the control node; takes &struct radiance_user_declare.
 */
#define RADIANCE_IOCTL_USER_DECLARE _IOWR(RADIANCE_IOCTL_TYPE, 0x40, struct radiance_user_declare)
/**
 * define RADIANCE_IOCTL_USER_HOST_READ - Reads host memory a command named (ABI 1.9).
 *
 * On the control node; takes &struct radiance_user_host_access.
 */
#define RADIANCE_IOCTL_USER_HOST_READ \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x41, struct radiance_user_host_access)
/**
 * define RADIANCE_IOCTL_USER_HOST_WRITE - Writes host memory a command named (ABI 1.9).
 *
 * On the control node; takes &struct radiance_user_host_access.
 */
#define RADIANCE_IOCTL_USER_HOST_WRITE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x42, struct radiance_user_host_access)
/**
 * define RADIANCE_IOCTL_USER_RESET - Acknowledges a reset, or reports the device's (ABI 1.9).
 *
 * On the control node; takes &struct radiance_user_reset.
 */
#define RADIANCE_IOCTL_USER_RESET _IOWR(RADIANCE_IOCTL_TYPE, 0x43, struct radiance_user_reset)
/**
 * define RADIANCE_IOCTL_USER_RETIRE - Sets which streams take no command (ABI 1.14).
 *
 * On the control node; takes &struct radiance_user_retire.
 */
#define RADIANCE_IOCTL_USER_RETIRE _IOWR(RADIANCE_IOCTL_TYPE, 0x44, struct radiance_user_retire)
/**
 * define RADIANCE_IOCTL_USER_PROGRESS - Reports what a stream's command did (ABI 1.15).
 *
 * On the control node; takes &struct radiance_user_progress.
 */
#define RADIANCE_IOCTL_USER_PROGRESS \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x45, struct radiance_user_progress)

#endif /* _RADIANCE_UAPI_H */
