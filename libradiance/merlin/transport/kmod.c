// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The kmod transport of Merlin's radiance IREE HAL driver
 * (runtime/src/iree/hal/drivers/radiance/transport/kmod.c), over
 * libradiance's transport C ABI (radiance_transport_*), which holds all of
 * the logic: streams, the allocation table, staging, stacks and TLS,
 * failures. This file is glue only: radiance statuses become IREE statuses
 * (the codes are IREE's), and the device options become a device URI.
 *
 * The device is kmod:0, or what $RADIANCE_DEVICE names: kmod:N, N, or
 * /dev/radianceN; anything else (host, cuda:0, ...) is refused, so that a
 * radiance://kmod device never runs elsewhere. Merlin's device path is
 * "kmod" alone (its driver.c refuses "kmod/N"), so the environment is how
 * one picks the device. The options' socket paths are for the other
 * transports. See libradiance/merlin/README.md for the build lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libradiance.h>

#include "transport.h"

typedef struct iree_hal_radiance_kmod_transport_t {
	iree_hal_radiance_transport_t base;
	radiance_transport_t *transport;
} iree_hal_radiance_kmod_transport_t;

static const iree_hal_radiance_transport_vtable_t iree_hal_radiance_kmod_transport_vtable;

static radiance_transport_t *iree_hal_radiance_kmod_transport(iree_hal_radiance_transport_t *base_transport)
{
	return ((iree_hal_radiance_kmod_transport_t *)base_transport)->transport;
}

/*
 * A radiance status as an IREE status, with its message, located at the
 * call (`file`:`line`), not here; frees it. Through IREE_HAL_RADIANCE_KMOD.
 */
static iree_status_t iree_hal_radiance_kmod_status(const char *file, uint32_t line, radiance_status_t status)
{
	if (!status)
		return iree_ok_status();
	iree_status_t result = iree_make_status_with_location(file, line,
							      (iree_status_code_t)radiance_status_code(status),
							      "radiance: %s", radiance_status_message(status));
	radiance_status_free(status);
	return result;
}

#define IREE_HAL_RADIANCE_KMOD(call) iree_hal_radiance_kmod_status(__FILE__, __LINE__, (call))

static void iree_hal_radiance_kmod_destroy(iree_hal_radiance_transport_t *base_transport)
{
	iree_allocator_t host_allocator = base_transport->host_allocator;
	radiance_transport_destroy(iree_hal_radiance_kmod_transport(base_transport));
	iree_allocator_free(host_allocator, base_transport);
}

static iree_status_t iree_hal_radiance_kmod_alloc_device(iree_hal_radiance_transport_t *base_transport,
							  uint32_t bytes, uint64_t *out_device_address)
{
	return IREE_HAL_RADIANCE_KMOD(radiance_transport_alloc_device(
		iree_hal_radiance_kmod_transport(base_transport), bytes, out_device_address));
}

static iree_status_t iree_hal_radiance_kmod_submit_copy(iree_hal_radiance_transport_t *base_transport,
							 uint8_t stream_id, uint64_t src_address,
							 uint64_t dst_address, uint32_t length,
							 iree_hal_radiance_copy_direction_t direction)
{
	/* IREE_HAL_RADIANCE_COPY_DIRECTION_H2D/D2H are RADIANCE_COPY_H2D/D2H. */
	return IREE_HAL_RADIANCE_KMOD(
		radiance_transport_submit_copy(iree_hal_radiance_kmod_transport(base_transport), stream_id,
					       src_address, dst_address, length, (uint32_t)direction));
}

static iree_status_t iree_hal_radiance_kmod_submit_fill(iree_hal_radiance_transport_t *base_transport,
							 uint8_t stream_id, uint64_t dst_address, uint32_t value,
							 uint32_t length)
{
	return IREE_HAL_RADIANCE_KMOD(radiance_transport_submit_fill(
		iree_hal_radiance_kmod_transport(base_transport), stream_id, dst_address, value, length));
}

static iree_status_t iree_hal_radiance_kmod_submit_dispatch(iree_hal_radiance_transport_t *base_transport,
							     const iree_hal_radiance_launch_params_t *launch_params)
{
	const radiance_transport_launch_t launch = {
		.stream_id = launch_params->stream_id,
		.start_pc = launch_params->start_pc,
		.kernel_pc = launch_params->kernel_pc,
		.grid = { launch_params->grid_x, launch_params->grid_y, launch_params->grid_z },
		.block = { launch_params->block_x, launch_params->block_y, launch_params->block_z },
		.regs_per_thread = launch_params->regs_per_thread,
		.shmem_per_block = launch_params->shmem_per_block,
		.params = launch_params->params_data.data,
		.params_length = launch_params->params_data.data_length,
	};
	return IREE_HAL_RADIANCE_KMOD(
		radiance_transport_submit_dispatch(iree_hal_radiance_kmod_transport(base_transport), &launch));
}

static iree_status_t iree_hal_radiance_kmod_synchronize(iree_hal_radiance_transport_t *base_transport,
							 uint8_t stream_id)
{
	return IREE_HAL_RADIANCE_KMOD(
		radiance_transport_synchronize(iree_hal_radiance_kmod_transport(base_transport), stream_id));
}

static const iree_hal_radiance_transport_vtable_t iree_hal_radiance_kmod_transport_vtable = {
	.destroy = iree_hal_radiance_kmod_destroy,
	.alloc_device = iree_hal_radiance_kmod_alloc_device,
	.submit_copy = iree_hal_radiance_kmod_submit_copy,
	.submit_fill = iree_hal_radiance_kmod_submit_fill,
	.submit_dispatch = iree_hal_radiance_kmod_submit_dispatch,
	.synchronize = iree_hal_radiance_kmod_synchronize,
};

/*
 * The libradiance URI of $RADIANCE_DEVICE (`value`, NULL or empty: kmod:0)
 * in `uri`; INVALID_ARGUMENT, naming it, for a device that radiance.ko does
 * not serve.
 */
static iree_status_t iree_hal_radiance_kmod_uri(const char *value, char *uri, size_t size)
{
	char *end = NULL;
	if (!value || !*value)
		value = "0";
	if (!strncmp(value, "kmod:", 5) || !strncmp(value, "/dev/radiance", 13)) {
		snprintf(uri, size, "%s", value);
		return iree_ok_status();
	}
	unsigned long index = strtoul(value, &end, 10);
	if (*value >= '0' && *value <= '9' && !*end) {
		snprintf(uri, size, "kmod:%lu", index);
		return iree_ok_status();
	}
	return iree_make_status(IREE_STATUS_INVALID_ARGUMENT,
				"RADIANCE_DEVICE=%s is no radiance.ko device: the kmod transport "
				"(radiance://kmod) opens kmod:N, N or /dev/radianceN",
				value);
}

iree_status_t iree_hal_radiance_transport_kmod_create(const iree_hal_radiance_device_options_t *options,
						      iree_allocator_t host_allocator,
						      iree_hal_radiance_transport_t **out_transport)
{
	IREE_ASSERT_ARGUMENT(options);
	IREE_ASSERT_ARGUMENT(out_transport);
	*out_transport = NULL;
	char uri[64];
	IREE_RETURN_IF_ERROR(iree_hal_radiance_kmod_uri(getenv("RADIANCE_DEVICE"), uri, sizeof(uri)));
	iree_hal_radiance_kmod_transport_t *transport = NULL;
	IREE_RETURN_IF_ERROR(iree_allocator_malloc(host_allocator, sizeof(*transport), (void **)&transport));
	transport->base.vtable = &iree_hal_radiance_kmod_transport_vtable;
	transport->base.host_allocator = host_allocator;
	transport->transport = NULL;
	iree_status_t status = IREE_HAL_RADIANCE_KMOD(radiance_transport_create(uri, &transport->transport));
	if (!iree_status_is_ok(status)) {
		iree_allocator_free(host_allocator, transport);
		return status;
	}
	*out_transport = &transport->base;
	return iree_ok_status();
}
