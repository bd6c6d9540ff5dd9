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
#define RADIANCE_ABI_MINOR 1

#define RADIANCE_IOCTL_TYPE 0xB9
#define RADIANCE_MAX_DEVICES 8

#define RADIANCE_BACKEND_EMULATED 1
#define RADIANCE_BACKEND_PCI 2
#define RADIANCE_BACKEND_PLATFORM 3

#define RADIANCE_NAME_LEN 32

/* Built-in kernels of the emulated Gluon: see uapi/src/lib.rs. */
#define RADIANCE_BUILTIN_FILL_U32 0xFFFF0000u
#define RADIANCE_BUILTIN_COPY_U32 0xFFFF0100u
#define RADIANCE_BUILTIN_VECADD_U32 0xFFFF0200u
#define RADIANCE_BUILTIN_SPIN 0xFFFF0300u

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
};

/* Where a BO's memory lives. */
#define RADIANCE_PLACEMENT_VRAM 1
/* Pinned system memory reached by DMA; device_address is 0 (kernel-only). */
#define RADIANCE_PLACEMENT_HOST 2

/* BO flags. */
#define RADIANCE_BO_MAPPABLE (1u << 0)

struct radiance_bo_create {
	__u64 size;		/* in: rounded up to 256 B, or a page if mappable */
	__u32 placement;	/* in: RADIANCE_PLACEMENT_* */
	__u32 flags;		/* in: RADIANCE_BO_* */
	__u32 handle;		/* out: never 0 */
	__u32 pad;		/* in: zero */
	__u64 device_address;	/* out */
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

#define RADIANCE_IOCTL_GET_INFO _IOWR(RADIANCE_IOCTL_TYPE, 0x00, struct radiance_get_info)
#define RADIANCE_IOCTL_BO_CREATE _IOWR(RADIANCE_IOCTL_TYPE, 0x01, struct radiance_bo_create)
#define RADIANCE_IOCTL_BO_DESTROY _IOWR(RADIANCE_IOCTL_TYPE, 0x02, struct radiance_bo_destroy)
#define RADIANCE_IOCTL_BO_INFO _IOWR(RADIANCE_IOCTL_TYPE, 0x03, struct radiance_bo_info)
#define RADIANCE_IOCTL_BO_EXPORT _IOWR(RADIANCE_IOCTL_TYPE, 0x04, struct radiance_bo_export)
#define RADIANCE_IOCTL_BO_IMPORT _IOWR(RADIANCE_IOCTL_TYPE, 0x05, struct radiance_bo_import)

#endif /* _RADIANCE_UAPI_H */
