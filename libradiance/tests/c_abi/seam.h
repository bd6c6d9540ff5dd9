/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The IREE radiance HAL driver's transport seam (alloc_device, submit_copy,
 * submit_fill, submit_dispatch, synchronize, destroy) as a thin adapter over
 * libradiance.h: what the driver's `radiance://kmod` transport does. See
 * libradiance/README.md for the mapping.
 */
#ifndef RADIANCE_SEAM_H
#define RADIANCE_SEAM_H

#include <stdint.h>

#include "libradiance.h"

typedef struct seam seam_t;

typedef enum seam_direction_e {
	SEAM_H2D = 0,
	SEAM_D2H = 1,
} seam_direction_t;

typedef struct seam_launch_params_t {
	uint8_t stream_id;
	uint32_t start_pc;
	uint32_t kernel_pc;
	uint32_t grid[3];
	uint32_t block[3];
	uint8_t regs_per_thread;
	uint32_t shmem_per_block;
	const void *params;
	uint32_t params_size;
} seam_launch_params_t;

radiance_status_t seam_create(const char *uri, seam_t **out_seam);
radiance_status_t seam_alloc_device(seam_t *seam, uint32_t bytes, uint32_t *out_device_address);
/* H2D: src is a host pointer, dst a device address; D2H the other way. */
radiance_status_t seam_submit_copy(seam_t *seam, uint8_t stream_id, uint64_t src, uint64_t dst, uint32_t length,
				   seam_direction_t direction);
radiance_status_t seam_submit_fill(seam_t *seam, uint8_t stream_id, uint32_t dst, uint32_t value, uint32_t length);
radiance_status_t seam_submit_dispatch(seam_t *seam, const seam_launch_params_t *launch);
radiance_status_t seam_synchronize(seam_t *seam, uint8_t stream_id);
void seam_destroy(seam_t *seam);

#endif
