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
#define RADIANCE_ABI_MINOR 0

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

#define RADIANCE_IOCTL_GET_INFO _IOWR(RADIANCE_IOCTL_TYPE, 0x00, struct radiance_get_info)

#endif /* _RADIANCE_UAPI_H */
