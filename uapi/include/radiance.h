/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * The Radiance ioctl ABI for C users (kselftests, the IREE HAL driver).
 *
 * uapi/src/lib.rs is the source of truth; uapi/tests/c_header.rs compiles
 * this header and checks every size, offset and ioctl number against it.
 * Read the rules for flags, padding and struct growth there.
 */
#ifndef _RADIANCE_UAPI_H
#define _RADIANCE_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define RADIANCE_ABI_MAJOR 1
#define RADIANCE_ABI_MINOR 14

#define RADIANCE_IOCTL_TYPE 0xB9
#define RADIANCE_MAX_DEVICES 8

#define RADIANCE_BACKEND_EMULATED 1
#define RADIANCE_BACKEND_PCI 2
#define RADIANCE_BACKEND_PLATFORM 3
#define RADIANCE_BACKEND_USER 4 /* a Gluon served by a process (1.9) */

#define RADIANCE_NAME_LEN 32

/* Built-in kernels of the emulated Gluon: see uapi/src/lib.rs. */
#define RADIANCE_BUILTIN_FILL_U32 0xFFFF0000u
#define RADIANCE_BUILTIN_COPY_U32 0xFFFF0100u
#define RADIANCE_BUILTIN_VECADD_U32 0xFFFF0200u
#define RADIANCE_BUILTIN_SPIN 0xFFFF0300u
#define RADIANCE_BUILTIN_PRINTF_U32 0xFFFF0400u
/* ABI 1.8: start code that runs the built-in at the block's kernel_pc. */
#define RADIANCE_BUILTIN_START 0xFFFF0500u

/* ABI 1.8: the wire format a device speaks (radiance_get_info.dialect). */
#define RADIANCE_DIALECT_GLUON_SIM_16 1
#define RADIANCE_DIALECT_GLUON_24 2

/* ABI 1.8: what a device implements (radiance_get_info.caps). */
#define RADIANCE_CAP_SET (1ull << 0)
#define RADIANCE_CAP_FENCE (1ull << 1)
#define RADIANCE_CAP_WAIT (1ull << 2)
#define RADIANCE_CAP_COPY_D2D (1ull << 3)
#define RADIANCE_CAP_COUNTERS (1ull << 4)
#define RADIANCE_CAP_SUBWORD (1ull << 5)
#define RADIANCE_CAP_VRAM_MAPPABLE (1ull << 6)

/* flags and pad0 are inputs and must be zero; the rest is output. */
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
	/* ABI 1.4: bit i set: the i-th RADIANCE_BUILTIN_* (in the order
	 * below) runs on this device. */
	__u32 builtins;
	__u32 pad2;
	/* ABI 1.8. */
	__u32 dialect;		/* RADIANCE_DIALECT_* */
	__u32 streams;		/* hardware streams */
	__u64 caps;		/* RADIANCE_CAP_* */
	/* ABI 1.14: bit i set: stream i is retired (USER_RETIRE). */
	__u32 retired_streams;
	__u32 pad3;		/* zero */
};

/* GET_INFO as released in ABI 1.0, which the kernel still accepts. */
#define RADIANCE_GET_INFO_SIZE_V1 96
/* GET_INFO as grown in ABI 1.4. */
#define RADIANCE_GET_INFO_SIZE_V1_4 104
/* GET_INFO as grown in ABI 1.8. */
#define RADIANCE_GET_INFO_SIZE_V1_8 120

/* Where a BO's memory lives. */
#define RADIANCE_PLACEMENT_VRAM 1
/* Pinned system memory reached by DMA; device_address is 0 (kernel-only). */
#define RADIANCE_PLACEMENT_HOST 2

/* BO flags. MAPPABLE: EOPNOTSUPP for VRAM on a device without
 * RADIANCE_CAP_VRAM_MAPPABLE (its VRAM is out of the CPU's reach). */
#define RADIANCE_BO_MAPPABLE (1u << 0)
/* ABI 1.8, VRAM only: at device_address (an input then). EBUSY if taken;
 * EINVAL outside VRAM or not aligned (256 B, or a page if mappable). */
#define RADIANCE_BO_FIXED_ADDRESS (1u << 1)

struct radiance_bo_create {
	__u64 size;		/* in: rounded up to 256 B, or a page if mappable */
	__u32 placement;	/* in: RADIANCE_PLACEMENT_* */
	__u32 flags;		/* in: RADIANCE_BO_* */
	__u32 handle;		/* out: never 0 */
	__u32 pad;		/* in: zero */
	__u64 device_address;	/* out; in with RADIANCE_BO_FIXED_ADDRESS */
	__u64 mmap_offset;	/* out: 0 unless mappable */
};

struct radiance_bo_destroy {
	__u32 handle;
	__u32 pad;
};

struct radiance_bo_info {
	__u32 handle;		/* in */
	__u32 pad;		/* in: zero */
	__u64 size;		/* out */
	__u32 placement;	/* out */
	__u32 flags;		/* out */
	__u64 device_address;	/* out */
	__u64 mmap_offset;	/* out */
};

/* BO_EXPORT flags. */
#define RADIANCE_EXPORT_CLOEXEC (1u << 0)

/* A dma-buf fd for a mappable BO; it keeps the memory alive after destroy. */
struct radiance_bo_export {
	__u32 handle;		/* in */
	__u32 flags;		/* in: RADIANCE_EXPORT_* */
	__s32 fd;		/* out */
	__u32 pad;		/* in: zero */
};

/* A HOST BO (not mappable) over anyone's dma-buf. */
struct radiance_bo_import {
	__s32 fd;		/* in */
	__u32 flags;		/* in: zero */
	__u32 handle;		/* out */
	__u32 pad;		/* in: zero */
	__u64 size;		/* out */
};

/*
 * Timeline semaphores. A semaphore's value is readable without a syscall:
 * mmap the file read-only at the page holding value_offset and read the u64
 * there atomically. RADIANCE_SEM_FAILED_VALUE there means failed: read
 * RADIANCE_IOCTL_SEM_QUERY for the error.
 */
#define RADIANCE_SEM_FAILED_VALUE 0xffffffffffffffffull
#define RADIANCE_SEM_WAIT_MAX_POINTS 256
#define RADIANCE_SEM_WAIT_ANY (1u << 0)

struct radiance_sem_create {
	__u64 initial;		/* in */
	__u32 flags;		/* in: zero */
	__u32 handle;		/* out */
	__u64 value_offset;	/* out */
};

struct radiance_sem_destroy {
	__u32 handle;
	__u32 pad;
};

struct radiance_sem_signal {
	__u32 handle;
	__u32 pad;
	__u64 value;		/* above the current value */
};

struct radiance_sem_query {
	__u32 handle;		/* in */
	__u32 pad;		/* in: zero */
	__u64 value;		/* out */
	__u32 error;		/* out: 0 or the positive errno it failed with */
	__u32 pad1;		/* out: zero */
};

struct radiance_sem_fail {
	__u32 handle;
	__u32 error;		/* positive errno, 1 to 4095 */
};

struct radiance_sem_wait_point {
	__u32 handle;
	__u32 pad;
	__u64 value;
};

/* ETIME at the deadline; a failed semaphore's errno (its index in index);
 * ECANCELED if one is destroyed; restarts or EINTR on a signal. */
struct radiance_sem_wait {
	__u64 points;		/* in: pointer to count radiance_sem_wait_point */
	__u32 count;		/* in */
	__u32 flags;		/* in: RADIANCE_SEM_WAIT_* */
	__s64 deadline_ns;	/* in: absolute CLOCK_MONOTONIC; 0 polls */
	__u32 index;		/* out */
	__u32 pad;		/* in: zero */
};

/* A sync_file that signals when the semaphore reaches value; with its error
 * if it fails; with ECANCELED if it is destroyed or its file closed first. */
struct radiance_sem_export_sync_file {
	__u32 handle;		/* in */
	__u32 flags;		/* in: RADIANCE_EXPORT_* */
	__u64 value;		/* in */
	__s32 fd;		/* out */
	__u32 pad;		/* in: zero */
};

/* The semaphore advances to value when the sync_file's fence signals (never
 * lowering it), or fails with the fence's error. */
struct radiance_sem_import_sync_file {
	__u32 handle;		/* in */
	__s32 fd;		/* in: a sync_file */
	__u64 value;		/* in */
	__u32 flags;		/* in: zero */
	__u32 pad;		/* in: zero */
};

/* (1.10) A handle in this file for semaphore handle of the Radiance device
 * file fd (any device of this module): this file's queues wait on and signal
 * it directly. Its value is also published at value_offset in this file's
 * value page; it reads as failed with ECANCELED once the semaphore is
 * destroyed or its file closed. An alias names the semaphore it aliases:
 * importing one (even through this file) gives another alias of that
 * semaphore. EBADF: no such fd; EINVAL: not a Radiance device file, or a
 * semaphore of this very file (named directly or through an alias in fd's
 * file). */
struct radiance_sem_import_handle {
	__s32 fd;		/* in */
	__u32 handle;		/* in: in fd's file */
	__u32 flags;		/* in: zero */
	__u32 new_handle;	/* out: in this file */
	__u64 value_offset;	/* out */
};

/*
 * User-mode queues: a ring of 64-byte packets and a control block, both
 * mapped read-write. The process writes packets, then publishes write_index
 * (release); if needs_kick is then 1 it calls RADIANCE_IOCTL_QUEUE_KICK:
 * until then the scheduler does not look at the queue. The idle scheduler
 * leaves needs_kick 0 on a queue stopped at a WAIT_SEMAPHORE (1.7): the
 * semaphore's change wakes it.
 */
#define RADIANCE_QUEUE_MIN_PACKETS 16
#define RADIANCE_QUEUE_MAX_PACKETS 65536
#define RADIANCE_QUEUE_ACTIVE 0
#define RADIANCE_QUEUE_FAULTED 1

/* Gluon ERR_CODE values of a device fault (err_code). */
#define RADIANCE_GLUON_ERR_BAD_PC 1	 /* the entry PC holds no kernel */
#define RADIANCE_GLUON_ERR_BAD_ADDRESS 2 /* an address outside VRAM */
#define RADIANCE_GLUON_ERR_BAD_COMMAND 3 /* a malformed command header */
#define RADIANCE_GLUON_ERR_DMA 4	 /* a DMA transfer failed */
#define RADIANCE_GLUON_ERR_BAD_LAUNCH 5	 /* a malformed launch block */
#define RADIANCE_GLUON_ERR_RESET 6	 /* the device reset under it (1.9) */

struct radiance_queue_control {
	__u64 write_index;	/* process */
	__u64 read_index;	/* kernel: packets completed */
	__u32 needs_kick;	/* kernel */
	__u32 status;		/* kernel: RADIANCE_QUEUE_* */
	__u32 error;		/* kernel: positive errno of the fault */
	__u32 err_code;		/* kernel: Gluon ERR_CODE */
	__u64 fault_index;	/* kernel */
	__u32 err_pc;		/* kernel: Gluon ERR_PC */
	__u32 err_thread;	/* kernel: Gluon ERR_THREAD */
};

struct radiance_queue_create {
	__u32 ring_packets;	/* in: power of two */
	__u32 priority;		/* in: zero */
	__u32 flags;		/* in: zero */
	__u32 queue_id;		/* out */
	__u64 ring_offset;	/* out */
	__u64 control_offset;	/* out */
};

/*
 * QUEUE_DESTROY. Destroying cancels what the queue has not completed: its
 * signals fail with ECANCELED (values already reached stay), and a launch the
 * device runs for it is stopped by a device reset (1.7).
 */
/*
 * ABI 1.8: a launch, field by field, in a HOST BO that a LAUNCH_DESC packet
 * names (struct radiance_launch_packet: block* name the descriptor). The
 * kernel builds the device's launch block; executables live in VRAM.
 */
struct radiance_launch_desc {
	__u32 start_pc;		/* where warps start (the start code) */
	__u32 kernel_pc;	/* the kernel the start code calls */
	__u32 grid[3];		/* each >= 1 */
	__u32 block[3];		/* each >= 1 */
	__u32 shmem_per_block;
	__u8 regs_per_thread;	/* >= 1 */
	__u8 flags;		/* Gluon's launch flags */
	__u16 pad;		/* zero */
	__u32 params;		/* HOST BO handle, 0: the descriptor's BO */
	__u32 params_size;
	__u64 params_offset;
	__u32 stack;		/* VRAM BO handle, 0: none; the block gets its last word */
	__u32 pad1;		/* zero */
	__u64 stack_offset;
	__u64 stack_size;
	__u32 tls;		/* VRAM BO handle, 0: none; the block gets its first byte */
	__u32 pad2;		/* zero */
	__u64 tls_offset;
	__u64 tls_size;
};

struct radiance_queue_destroy {
	__u32 queue_id;
	__u32 pad;
};

/*
 * QUEUE_KICK, the doorbell: only needed when the control block's needs_kick
 * is set. Same layout (and ioctl number) as struct radiance_queue_destroy,
 * which it was until 1.7.
 */
struct radiance_queue_kick {
	__u32 queue_id;
	__u32 pad;		/* zero */
};

struct radiance_queue_query {
	__u32 queue_id;		/* in */
	__u32 pad;		/* in: zero */
	__u64 read_index;	/* out */
	__u64 submit_index;	/* out */
	__u32 status;		/* out */
	__u32 error;		/* out */
	__u64 fault_index;	/* out */
	__u32 err_code;		/* out */
	__u32 err_pc;		/* out */
	__u32 err_thread;	/* out */
	__u32 pad1;		/* out: zero */
};

#define RADIANCE_PACKET_SIZE 64
#define RADIANCE_PACKET_NOP 1
#define RADIANCE_PACKET_FENCE 2
#define RADIANCE_PACKET_FILL 3
#define RADIANCE_PACKET_COPY 4
#define RADIANCE_PACKET_LAUNCH 5
#define RADIANCE_PACKET_READ_COUNTER 6
#define RADIANCE_PACKET_TIMESTAMP 7
#define RADIANCE_PACKET_WAIT_SEMAPHORE 8
#define RADIANCE_PACKET_SIGNAL_SEMAPHORE 9
/* ABI 1.8: a struct radiance_launch_packet naming a struct radiance_launch_desc. */
#define RADIANCE_PACKET_LAUNCH_DESC 10
#define RADIANCE_PACKET_BARRIER (1u << 0)
/*
 * WAIT_SEMAPHORE only (ABI 1.7): a failed semaphore does not fault the
 * queue; this packet and the `skip` packets after it complete without
 * running, and their SIGNAL_SEMAPHOREs fail with the same error.
 */
#define RADIANCE_PACKET_SKIP_ON_FAILURE (1u << 1)

struct radiance_packet_header {
	__u8 kind;		/* RADIANCE_PACKET_* */
	__u8 flags;		/* RADIANCE_PACKET_BARRIER, _SKIP_ON_FAILURE */
	__u16 reserved;
	__u32 pad;
};

struct radiance_packet {
	struct radiance_packet_header header;
	__u64 body[7];
};

struct radiance_fill_packet {
	struct radiance_packet_header header;
	__u32 dst;		/* BO handle */
	__u32 pattern_size;	/* 1, 2 or 4 */
	__u64 dst_offset;
	__u64 size;
	__u32 pattern;
	__u32 pad;
	__u64 reserved[3];
};

struct radiance_copy_packet {
	struct radiance_packet_header header;
	__u32 src;		/* BO handles */
	__u32 dst;
	__u64 src_offset;
	__u64 dst_offset;
	__u64 size;
	__u64 reserved[3];
};

/* The block (within one page) is copied by the kernel, which sets its
 * printf_host_addr to printf_offset of HOST BO printf (0: none): the device
 * drains the printf ring there as a u32 byte count and the text. */
struct radiance_launch_packet {
	struct radiance_packet_header header;
	__u32 block;		/* HOST BO holding the launch block */
	__u32 pad;
	__u64 block_offset;
	__u64 block_size;
	__u32 printf;		/* HOST BO for printf output, or 0 */
	__u32 pad2;
	__u64 printf_offset;
	__u64 printf_size;	/* at least 4 + the ring's limit, within a page */
	__u64 reserved;
};

/* The printf ring, right after the params in the launch block. */
struct radiance_printf_ring {
	__u32 lock;
	__u32 head;
	__u32 tail;
	__u32 limit;		/* bytes of text after this header */
};

/* Device counters for READ_COUNTER (TIMESTAMP reads the clock). */
#define RADIANCE_COUNTER_COMMANDS 0
#define RADIANCE_COUNTER_THREADS 1
#define RADIANCE_COUNTER_CLOCK_NS 2

/* READ_COUNTER and TIMESTAMP: a u64 into VRAM BO dst at dst_offset. */
struct radiance_counter_packet {
	struct radiance_packet_header header;
	__u32 dst;
	__u32 counter;		/* RADIANCE_COUNTER_*; zero for TIMESTAMP */
	__u64 dst_offset;	/* 8-aligned */
	__u64 reserved[5];
};

/* WAIT_SEMAPHORE: go no further until the semaphore reaches value (a failed
 * one faults the queue). SIGNAL_SEMAPHORE: raise it to value once everything
 * before it completed; a queue that faults first fails it instead. */
struct radiance_semaphore_packet {
	struct radiance_packet_header header;
	__u32 handle;		/* a semaphore of the queue's file */
	__u32 skip;		/* WAIT with SKIP_ON_FAILURE; else 0 (1.6: pad) */
	__u64 value;
	__u64 reserved[5];
};

/* Gluon's launch block head; the binary, then the params follow it. */
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

/*
 * The control node (1.9): a CAP_SYS_ADMIN process serves a Gluon. Its file
 * is the device: USER_DECLARE makes /dev/radianceN appear; closing the file
 * removes it. read() gives whole command frames (EAGAIN when there are none,
 * poll POLLIN when there are; with USER_DECLARE_READ_WAITS (1.11) it waits,
 * unless O_NONBLOCK; with USER_DECLARE_INLINE_BLOCKS (1.13) each KERNEL
 * frame is followed by its launch block), write() takes whole 16-byte responses (EPROTO for a stream with
 * no command outstanding). After a kernel reset, poll reports POLLPRI and
 * read/write fail with ECONNRESET until USER_RESET acknowledges it.
 */
#define RADIANCE_CONTROL_NODE "radiance-control"

#define RADIANCE_USER_DECLARE_READ_WAITS (1u << 0)
/*
 * 1.12: the server comes back to read() once it answered every frame it
 * read; a doorbell rung while it is in write() past its answers or on its
 * way back is left to it (its write() or read() runs the pass; poll reports
 * POLLIN for it). One that does not come back holds up its own device's
 * queues.
 */
#define RADIANCE_USER_DECLARE_TAKES_DOORBELLS (1u << 1)
/*
 * 1.13: read() follows each KERNEL frame with a struct
 * radiance_user_inline_block and `len` bytes of the launch block the frame
 * names, then zeros up to a multiple of 8, where the next frame begins.
 * len is 0 (nothing follows: read it with USER_HOST_READ) for a block over
 * RADIANCE_USER_INLINE_BLOCK_MAX, one larger than the read's buffer with
 * nothing before it, or one not in host memory mapped for the device. A
 * frame whose block fits a buffer but not what is left of it waits for the
 * next read. A buffer smaller than a frame and the header is EINVAL.
 */
#define RADIANCE_USER_DECLARE_INLINE_BLOCKS (1u << 2)

struct radiance_user_inline_block {
	__u32 len;		/* bytes of the block that follow */
	__u32 pad;		/* 0 */
};
#define RADIANCE_USER_INLINE_BLOCK_MAX 4096u

struct radiance_user_declare {
	__u32 flags;		/* RADIANCE_USER_DECLARE_* */
	__u32 dialect;		/* RADIANCE_DIALECT_* */
	__u32 streams;		/* 1 .. the dialect's */
	__u32 stream_depth;	/* 1 .. 16 */
	__u32 cores;
	__u32 warps_per_core;
	__u32 threads_per_warp;
	__u32 builtins;		/* 1 << index in RADIANCE_BUILTIN_* order */
	__u64 vram_size;	/* page multiple, at most 4 GiB */
	__u64 caps;		/* RADIANCE_CAP_*; VRAM_MAPPABLE is EOPNOTSUPP */
	char name[RADIANCE_NAME_LEN];
	__u32 device_index;	/* out */
	__u32 pad;
};

/* Host memory at a DMA address that is mapped for the device; else EFAULT. */
struct radiance_user_host_access {
	__u64 addr;
	__u64 user_ptr;
	__u32 len;		/* at most RADIANCE_USER_HOST_ACCESS_MAX */
	__u32 flags;		/* 0 */
};
#define RADIANCE_USER_HOST_ACCESS_MAX (1u << 20)

/* Acknowledges a kernel reset; else every outstanding command fails RESET. */
struct radiance_user_reset {
	__u32 flags;		/* 0 */
	__u32 pad;
};

/* ABI 1.14: the streams that take no command from now on (bit i: stream
 * i; clear: back in service). What a newly retired stream held fails
 * RESET; its queues move to streams in service. EINVAL for a flag or a
 * bit at or past the streams, EBUSY if none would be left in service,
 * ENXIO before USER_DECLARE. */
struct radiance_user_retire {
	__u32 streams;
	__u32 flags;		/* 0 */
};

#define RADIANCE_IOCTL_GET_INFO _IOWR(RADIANCE_IOCTL_TYPE, 0x00, struct radiance_get_info)
#define RADIANCE_IOCTL_BO_CREATE _IOWR(RADIANCE_IOCTL_TYPE, 0x01, struct radiance_bo_create)
#define RADIANCE_IOCTL_BO_DESTROY _IOWR(RADIANCE_IOCTL_TYPE, 0x02, struct radiance_bo_destroy)
#define RADIANCE_IOCTL_BO_INFO _IOWR(RADIANCE_IOCTL_TYPE, 0x03, struct radiance_bo_info)
#define RADIANCE_IOCTL_BO_EXPORT _IOWR(RADIANCE_IOCTL_TYPE, 0x04, struct radiance_bo_export)
#define RADIANCE_IOCTL_BO_IMPORT _IOWR(RADIANCE_IOCTL_TYPE, 0x05, struct radiance_bo_import)
#define RADIANCE_IOCTL_SEM_CREATE _IOWR(RADIANCE_IOCTL_TYPE, 0x10, struct radiance_sem_create)
#define RADIANCE_IOCTL_SEM_DESTROY _IOWR(RADIANCE_IOCTL_TYPE, 0x11, struct radiance_sem_destroy)
#define RADIANCE_IOCTL_SEM_SIGNAL _IOWR(RADIANCE_IOCTL_TYPE, 0x12, struct radiance_sem_signal)
#define RADIANCE_IOCTL_SEM_QUERY _IOWR(RADIANCE_IOCTL_TYPE, 0x13, struct radiance_sem_query)
#define RADIANCE_IOCTL_SEM_FAIL _IOWR(RADIANCE_IOCTL_TYPE, 0x14, struct radiance_sem_fail)
#define RADIANCE_IOCTL_SEM_WAIT _IOWR(RADIANCE_IOCTL_TYPE, 0x15, struct radiance_sem_wait)
#define RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x16, struct radiance_sem_export_sync_file)
#define RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x17, struct radiance_sem_import_sync_file)
#define RADIANCE_IOCTL_SEM_IMPORT_HANDLE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x18, struct radiance_sem_import_handle)
#define RADIANCE_IOCTL_QUEUE_CREATE _IOWR(RADIANCE_IOCTL_TYPE, 0x20, struct radiance_queue_create)
#define RADIANCE_IOCTL_QUEUE_DESTROY _IOWR(RADIANCE_IOCTL_TYPE, 0x21, struct radiance_queue_destroy)
#define RADIANCE_IOCTL_QUEUE_QUERY _IOWR(RADIANCE_IOCTL_TYPE, 0x22, struct radiance_queue_query)
#define RADIANCE_IOCTL_QUEUE_KICK _IOWR(RADIANCE_IOCTL_TYPE, 0x23, struct radiance_queue_kick)
#define RADIANCE_IOCTL_USER_DECLARE _IOWR(RADIANCE_IOCTL_TYPE, 0x40, struct radiance_user_declare)
#define RADIANCE_IOCTL_USER_HOST_READ \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x41, struct radiance_user_host_access)
#define RADIANCE_IOCTL_USER_HOST_WRITE \
	_IOWR(RADIANCE_IOCTL_TYPE, 0x42, struct radiance_user_host_access)
#define RADIANCE_IOCTL_USER_RESET _IOWR(RADIANCE_IOCTL_TYPE, 0x43, struct radiance_user_reset)
#define RADIANCE_IOCTL_USER_RETIRE _IOWR(RADIANCE_IOCTL_TYPE, 0x44, struct radiance_user_retire)

#endif /* _RADIANCE_UAPI_H */
