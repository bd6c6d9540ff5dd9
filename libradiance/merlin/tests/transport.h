// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A stand-in for the IREE and Merlin declarations transport/kmod.c uses
 * (Merlin's transport.h and iree/base/api.h, same names and shapes), so
 * that kmod_test.c can build and run kmod.c without an IREE tree. A status
 * keeps its code, message and the file and line it was made at.
 */
#ifndef RADIANCE_MERLIN_TEST_TRANSPORT_H
#define RADIANCE_MERLIN_TEST_TRANSPORT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

typedef enum iree_status_code_e {
	IREE_STATUS_OK = 0,
	IREE_STATUS_INVALID_ARGUMENT = 3,
	IREE_STATUS_NOT_FOUND = 5,
} iree_status_code_t;

typedef struct iree_status_handle_t {
	iree_status_code_t code;
	const char *file;
	uint32_t line;
	char message[256];
} *iree_status_t;

iree_status_t iree_make_status_with_location(const char *file, uint32_t line, iree_status_code_t code,
					     const char *format, ...);
#define iree_make_status(code, ...) iree_make_status_with_location(__FILE__, __LINE__, (code), __VA_ARGS__)
#define iree_ok_status() ((iree_status_t)NULL)
#define iree_status_is_ok(status) ((status) == NULL)
#define IREE_RETURN_IF_ERROR(expr)                  \
	do {                                        \
		iree_status_t status_ = (expr);     \
		if (!iree_status_is_ok(status_))    \
			return status_;             \
	} while (0)
#define IREE_ASSERT_ARGUMENT(arg) assert(arg)

typedef struct iree_allocator_t {
	void *self;
} iree_allocator_t;
iree_status_t iree_allocator_malloc(iree_allocator_t allocator, size_t size, void **out_ptr);
void iree_allocator_free(iree_allocator_t allocator, void *ptr);

typedef struct iree_const_byte_span_t {
	const uint8_t *data;
	size_t data_length;
} iree_const_byte_span_t;

typedef struct iree_hal_radiance_device_options_t {
	int backend;
} iree_hal_radiance_device_options_t;

typedef enum iree_hal_radiance_copy_direction_e {
	IREE_HAL_RADIANCE_COPY_DIRECTION_H2D = 0,
	IREE_HAL_RADIANCE_COPY_DIRECTION_D2H = 1,
} iree_hal_radiance_copy_direction_t;

typedef struct iree_hal_radiance_launch_params_t {
	uint8_t stream_id;
	uint32_t start_pc;
	uint32_t kernel_pc;
	uint32_t grid_x, grid_y, grid_z;
	uint32_t block_x, block_y, block_z;
	uint8_t regs_per_thread;
	uint32_t shmem_per_block;
	iree_const_byte_span_t params_data;
} iree_hal_radiance_launch_params_t;

typedef struct iree_hal_radiance_transport_t iree_hal_radiance_transport_t;

typedef struct iree_hal_radiance_transport_vtable_t {
	void (*destroy)(iree_hal_radiance_transport_t *transport);
	iree_status_t (*alloc_device)(iree_hal_radiance_transport_t *transport, uint32_t bytes,
				      uint64_t *out_device_address);
	iree_status_t (*submit_copy)(iree_hal_radiance_transport_t *transport, uint8_t stream_id,
				     uint64_t src_address, uint64_t dst_address, uint32_t length,
				     iree_hal_radiance_copy_direction_t direction);
	iree_status_t (*submit_fill)(iree_hal_radiance_transport_t *transport, uint8_t stream_id,
				     uint64_t dst_address, uint32_t value, uint32_t length);
	iree_status_t (*submit_dispatch)(iree_hal_radiance_transport_t *transport,
					 const iree_hal_radiance_launch_params_t *launch_params);
	iree_status_t (*synchronize)(iree_hal_radiance_transport_t *transport, uint8_t stream_id);
} iree_hal_radiance_transport_vtable_t;

struct iree_hal_radiance_transport_t {
	const iree_hal_radiance_transport_vtable_t *vtable;
	iree_allocator_t host_allocator;
};

iree_status_t iree_hal_radiance_transport_kmod_create(const iree_hal_radiance_device_options_t *options,
						      iree_allocator_t host_allocator,
						      iree_hal_radiance_transport_t **out_transport);

#endif
