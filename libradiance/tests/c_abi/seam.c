// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The seam adapter: a stream is a queue plus a timeline semaphore that
 * counts the stream's operations (each waits for the current value and
 * signals the next, so a stream stays in order); synchronize waits for the
 * last value. A device address is a device buffer's address. D2H copies go
 * through a host-visible staging buffer that reaches the host pointer at
 * synchronize.
 */
#include "seam.h"

#include <stdlib.h>
#include <string.h>

#define SEAM_MAX_ALLOCS 64
#define SEAM_MAX_PENDING 16
#define SEAM_STREAMS 256

struct seam_alloc {
	radiance_buffer_t *buffer;
	uint64_t address;
	uint64_t size;
};

/* A D2H copy waiting for synchronize to reach the host. */
struct seam_pending {
	radiance_buffer_t *staging;
	void *host;
	uint32_t length;
};

struct seam_stream {
	radiance_queue_t *queue;
	radiance_semaphore_t *semaphore;
	uint64_t value;
	struct seam_pending pending[SEAM_MAX_PENDING];
	size_t pending_count;
};

struct seam {
	radiance_device_t *device;
	struct seam_alloc allocs[SEAM_MAX_ALLOCS];
	size_t alloc_count;
	struct seam_stream streams[SEAM_STREAMS];
};

static radiance_status_t seam_error(uint32_t code, const char *what)
{
	return radiance_status_allocate(code, what);
}

radiance_status_t seam_create(const char *uri, seam_t **out_seam)
{
	seam_t *seam = calloc(1, sizeof(*seam));
	if (!seam)
		return seam_error(RADIANCE_STATUS_RESOURCE_EXHAUSTED, "seam: out of memory");
	radiance_status_t status = radiance_device_open(uri, &seam->device);
	if (status) {
		free(seam);
		return status;
	}
	*out_seam = seam;
	return NULL;
}

radiance_status_t seam_alloc_device(seam_t *seam, uint32_t bytes, uint32_t *out_device_address)
{
	if (seam->alloc_count == SEAM_MAX_ALLOCS)
		return seam_error(RADIANCE_STATUS_RESOURCE_EXHAUSTED, "seam: too many allocations");
	radiance_buffer_params_t params = {
		.size = bytes,
		.memory_type = RADIANCE_MEMORY_DEVICE,
		.usage = RADIANCE_BUFFER_USAGE_TRANSFER | RADIANCE_BUFFER_USAGE_DISPATCH,
	};
	struct seam_alloc *a = &seam->allocs[seam->alloc_count];
	radiance_status_t status = radiance_buffer_allocate(seam->device, &params, &a->buffer);
	if (status)
		return status;
	a->address = radiance_buffer_device_address(a->buffer);
	a->size = bytes;
	if (a->address > UINT32_MAX) {
		radiance_buffer_release(a->buffer);
		return seam_error(RADIANCE_STATUS_OUT_OF_RANGE, "seam: device address does not fit 32 bits");
	}
	seam->alloc_count++;
	*out_device_address = (uint32_t)a->address;
	return NULL;
}

/* The buffer and offset of `length` bytes at a device address. */
static radiance_status_t seam_find(seam_t *seam, uint64_t address, uint64_t length, radiance_buffer_t **buffer,
				   uint64_t *offset)
{
	for (size_t i = 0; i < seam->alloc_count; i++) {
		struct seam_alloc *a = &seam->allocs[i];
		if (address >= a->address && address - a->address + length <= a->size) {
			*buffer = a->buffer;
			*offset = address - a->address;
			return NULL;
		}
	}
	return seam_error(RADIANCE_STATUS_INVALID_ARGUMENT, "seam: address range is not in one allocation");
}

/* The stream's queue, created on first use. */
static radiance_status_t seam_stream(seam_t *seam, uint8_t id, struct seam_stream **out)
{
	struct seam_stream *s = &seam->streams[id];
	radiance_status_t status = NULL;
	if (!s->semaphore)
		status = radiance_semaphore_create(seam->device, 0, &s->semaphore);
	if (!status && !s->queue)
		status = radiance_queue_create(seam->device, &s->queue);
	*out = s;
	return status;
}

/* The stream's wait (current value) and signal (next value) lists. */
struct seam_lists {
	uint64_t wait_value, signal_value;
	radiance_semaphore_list_t waits, signals;
};

static void seam_lists(struct seam_stream *s, struct seam_lists *l)
{
	l->wait_value = s->value;
	l->signal_value = s->value + 1;
	l->waits = (radiance_semaphore_list_t){ 1, &s->semaphore, &l->wait_value };
	l->signals = (radiance_semaphore_list_t){ 1, &s->semaphore, &l->signal_value };
}

/* Counts a queued operation on the stream (only when it was queued). */
static radiance_status_t seam_queued(struct seam_stream *s, radiance_status_t status)
{
	if (!status)
		s->value++;
	return status;
}

radiance_status_t seam_submit_copy(seam_t *seam, uint8_t stream_id, uint64_t src, uint64_t dst, uint32_t length,
				   seam_direction_t direction)
{
	struct seam_stream *s;
	struct seam_lists l;
	radiance_buffer_t *buffer;
	uint64_t offset;
	radiance_status_t status = seam_stream(seam, stream_id, &s);
	if (status)
		return status;
	seam_lists(s, &l);
	if (direction == SEAM_H2D) {
		status = seam_find(seam, dst, length, &buffer, &offset);
		if (status)
			return status;
		return seam_queued(s, radiance_queue_update(s->queue, l.waits, l.signals, (const void *)(uintptr_t)src,
							    buffer, offset, length));
	}
	if (s->pending_count == SEAM_MAX_PENDING)
		return seam_error(RADIANCE_STATUS_RESOURCE_EXHAUSTED, "seam: too many D2H copies before synchronize");
	status = seam_find(seam, src, length, &buffer, &offset);
	if (status)
		return status;
	struct seam_pending *p = &s->pending[s->pending_count];
	radiance_buffer_params_t params = {
		.size = length,
		.memory_type = RADIANCE_MEMORY_HOST_VISIBLE,
		.usage = RADIANCE_BUFFER_USAGE_TRANSFER | RADIANCE_BUFFER_USAGE_MAPPING,
	};
	status = radiance_buffer_allocate(seam->device, &params, &p->staging);
	if (status)
		return status;
	status = radiance_queue_copy(s->queue, l.waits, l.signals, buffer, offset, p->staging, 0, length);
	if (status) {
		radiance_buffer_release(p->staging);
		return status;
	}
	p->host = (void *)(uintptr_t)dst;
	p->length = length;
	s->pending_count++;
	return seam_queued(s, NULL);
}

radiance_status_t seam_submit_fill(seam_t *seam, uint8_t stream_id, uint32_t dst, uint32_t value, uint32_t length)
{
	struct seam_stream *s;
	struct seam_lists l;
	radiance_buffer_t *buffer;
	uint64_t offset;
	radiance_status_t status = seam_stream(seam, stream_id, &s);
	if (!status)
		status = seam_find(seam, dst, length, &buffer, &offset);
	if (status)
		return status;
	seam_lists(s, &l);
	return seam_queued(s, radiance_queue_fill(s->queue, l.waits, l.signals, buffer, offset, length, &value,
						  sizeof(value)));
}

radiance_status_t seam_submit_dispatch(seam_t *seam, const seam_launch_params_t *launch)
{
	struct seam_stream *s;
	struct seam_lists l;
	radiance_status_t status = seam_stream(seam, launch->stream_id, &s);
	if (status)
		return status;
	seam_lists(s, &l);
	radiance_launch_t desc = {
		.entry_pc = launch->start_pc,
		.grid = { launch->grid[0], launch->grid[1], launch->grid[2] },
		.block = { launch->block[0], launch->block[1], launch->block[2] },
		.shmem_per_block = launch->shmem_per_block,
		.regs_per_thread = launch->regs_per_thread,
		.params = launch->params,
		.params_length = launch->params_size,
		.kernel_pc = launch->kernel_pc,
	};
	return seam_queued(s, radiance_queue_dispatch(s->queue, l.waits, l.signals, &desc));
}

radiance_status_t seam_synchronize(seam_t *seam, uint8_t stream_id)
{
	struct seam_stream *s = &seam->streams[stream_id];
	if (!s->queue)
		return NULL;
	radiance_status_t status = radiance_semaphore_wait(s->semaphore, s->value, RADIANCE_TIMEOUT_INFINITE);
	for (size_t i = 0; i < s->pending_count; i++) {
		struct seam_pending *p = &s->pending[i];
		radiance_mapping_t mapping;
		if (!status)
			status = radiance_buffer_map(p->staging, 0, p->length, &mapping);
		if (!status) {
			memcpy(p->host, mapping.contents, p->length);
			status = radiance_buffer_unmap(&mapping);
		}
		radiance_buffer_release(p->staging);
	}
	s->pending_count = 0;
	return status;
}

void seam_destroy(seam_t *seam)
{
	for (size_t i = 0; i < SEAM_STREAMS; i++) {
		struct seam_stream *s = &seam->streams[i];
		for (size_t j = 0; j < s->pending_count; j++)
			radiance_buffer_release(s->pending[j].staging);
		radiance_queue_release(s->queue);
		radiance_semaphore_release(s->semaphore);
	}
	for (size_t i = 0; i < seam->alloc_count; i++)
		radiance_buffer_release(seam->allocs[i].buffer);
	radiance_device_release(seam->device);
	free(seam);
}
