/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * libradiance.h: the C ABI of libradiance, the userspace HAL of the Radiance
 * driver stack. This is what the IREE radiance HAL driver links.
 *
 * Conventions (IREE's HAL C API):
 * - Objects are opaque handles, reference counted: *_retain adds a
 *   reference, *_release drops one; a create call hands the caller one
 *   reference. NULL handles are ignored by retain/release.
 * - Every call that can fail returns a radiance_status_t: NULL means OK;
 *   anything else carries a code (IREE's iree_status_code_t values) and a
 *   message, and the caller frees it with radiance_status_free.
 * - Out-parameters come last.
 * - No callbacks; no Rust panic crosses this ABI (it becomes an INTERNAL
 *   status).
 *
 * Semantics: every queue operation waits for its wait semaphores, runs, then
 * signals its signal semaphores, asynchronously. Only semaphores order queue
 * operations, even on one queue. If a wait semaphore fails, or the operation
 * fails (e.g. a device fault), the operation's signal semaphores fail with
 * that status; a failure is sticky and reaches every waiter. Releasing the
 * last reference to a queue cancels what it has not finished (CANCELLED).
 *
 * The IREE radiance HAL driver's transport seam (Merlin's
 * transport/transport.h) is the radiance_transport_* part below, with all of
 * its logic; a drop-in transport/kmod.c for Merlin (libradiance/merlin/) is
 * only glue over it.
 */
#ifndef LIBRADIANCE_H
#define LIBRADIANCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status ----------------------------------------------------------- */

/* NULL is OK. */
typedef struct radiance_status_s *radiance_status_t;

/* IREE's status codes. */
typedef enum radiance_status_code_e {
	RADIANCE_STATUS_OK = 0,
	RADIANCE_STATUS_CANCELLED = 1,
	RADIANCE_STATUS_UNKNOWN = 2,
	RADIANCE_STATUS_INVALID_ARGUMENT = 3,
	RADIANCE_STATUS_DEADLINE_EXCEEDED = 4,
	RADIANCE_STATUS_NOT_FOUND = 5,
	RADIANCE_STATUS_ALREADY_EXISTS = 6,
	RADIANCE_STATUS_PERMISSION_DENIED = 7,
	RADIANCE_STATUS_RESOURCE_EXHAUSTED = 8,
	RADIANCE_STATUS_FAILED_PRECONDITION = 9,
	RADIANCE_STATUS_ABORTED = 10,
	RADIANCE_STATUS_OUT_OF_RANGE = 11,
	RADIANCE_STATUS_UNIMPLEMENTED = 12,
	RADIANCE_STATUS_INTERNAL = 13,
	RADIANCE_STATUS_UNAVAILABLE = 14,
	RADIANCE_STATUS_DATA_LOSS = 15,
	RADIANCE_STATUS_UNAUTHENTICATED = 16,
	RADIANCE_STATUS_DEFERRED = 17,
	RADIANCE_STATUS_INCOMPATIBLE = 18,
} radiance_status_code_t;

/* The status's code; RADIANCE_STATUS_OK for NULL. */
uint32_t radiance_status_code(radiance_status_t status);
/* The status's message, valid until the status is freed; "OK" for NULL. */
const char *radiance_status_message(radiance_status_t status);
/* A new status, for code layered on this ABI (e.g. a HAL transport). */
radiance_status_t radiance_status_allocate(uint32_t code, const char *message);
/* Frees a status; NULL is fine. */
void radiance_status_free(radiance_status_t status);

/* ---- Handles ------------------------------------------------------------ */

typedef struct radiance_device_t radiance_device_t;
typedef struct radiance_queue_t radiance_queue_t;
typedef struct radiance_semaphore_t radiance_semaphore_t;
typedef struct radiance_buffer_t radiance_buffer_t;
typedef struct radiance_command_buffer_t radiance_command_buffer_t;

/* Semaphores with payload values, to wait for or to signal. */
typedef struct radiance_semaphore_list_t {
	size_t count;
	radiance_semaphore_t *const *semaphores;
	const uint64_t *values;
} radiance_semaphore_list_t;

/* Timeouts are nanoseconds from the call; this one never ends. */
#define RADIANCE_TIMEOUT_INFINITE UINT64_MAX

/* ---- Devices ------------------------------------------------------------ */

/*
 * Opens a device by URI: "host" (the CPU reference backend), "kmod:N" or
 * "/dev/radianceN" (radiance.ko; NOT_FOUND if there is no such node),
 * "cuda:N" (the NVIDIA driver); "hsa:N" is recognised and answers
 * UNIMPLEMENTED; anything else is INVALID_ARGUMENT.
 */
radiance_status_t radiance_device_open(const char *uri, radiance_device_t **out_device);
void radiance_device_retain(radiance_device_t *device);
void radiance_device_release(radiance_device_t *device);

typedef enum radiance_wait_mode_e {
	RADIANCE_WAIT_ALL = 0,
	RADIANCE_WAIT_ANY = 1,
} radiance_wait_mode_t;

/*
 * Waits until all (or any) semaphores of the list reach their values:
 * DEADLINE_EXCEEDED when the timeout passes first (never earlier), the
 * failure status when one of them has failed.
 */
radiance_status_t radiance_device_wait_semaphores(radiance_device_t *device, uint32_t mode,
						  radiance_semaphore_list_t list, uint64_t timeout_ns);

/* ---- Device groups -------------------------------------------------------- */

/*
 * Several devices as one topology (IREE's iree_hal_device_group_t). A
 * builder lives on the caller's stack: initialize it, add devices (each is
 * retained), finalize it into a group (the builder is consumed either way:
 * its references are released), or deinitialize it to give up. The group
 * retains its devices; each device keeps the topology alive as long as it
 * lives, and belongs to one group at most (FAILED_PRECONDITION for a
 * second). In a group, a semaphore of one device stands in the wait and
 * signal lists of another device's queue operations, and a buffer of one
 * device in another's copies, by the routes of the topology: a failure
 * crosses with its code and message, and releasing the group cancels what
 * still waits in a host relay (CANCELLED).
 */
typedef struct radiance_device_group_t radiance_device_group_t;

#define RADIANCE_DEVICE_GROUP_MAX_DEVICES 16
typedef struct radiance_device_group_builder_t {
	uint32_t device_count;
	uint32_t reserved;
	radiance_device_t *devices[RADIANCE_DEVICE_GROUP_MAX_DEVICES];
} radiance_device_group_builder_t;

/* How device `to`'s queues wait on (and signal) device `from`'s semaphores. */
typedef enum radiance_semaphore_route_e {
	RADIANCE_SEMAPHORE_ROUTE_LOCAL = 0,	/* the same device */
	RADIANCE_SEMAPHORE_ROUTE_SYNC_FILE = 1, /* sync_files, in the kernel */
	RADIANCE_SEMAPHORE_ROUTE_HOST_HOP = 2,	/* a relay thread of this process */
	RADIANCE_SEMAPHORE_ROUTE_KERNEL_ALIAS = 3, /* one driver: the semaphore itself, in the kernel */
	RADIANCE_SEMAPHORE_ROUTE_CUDA_EVENT = 4,   /* two CUDA devices: the semaphore itself, its events */
} radiance_semaphore_route_t;

/* How device `to`'s queues copy device `from`'s buffers. */
typedef enum radiance_buffer_route_e {
	RADIANCE_BUFFER_ROUTE_LOCAL = 0,
	RADIANCE_BUFFER_ROUTE_DMA_BUF = 1, /* exported by `from`, imported by `to` */
	RADIANCE_BUFFER_ROUTE_HOST = 2,	   /* `to`'s queues run on the host: host-visible buffers */
	RADIANCE_BUFFER_ROUTE_NONE = 3,
	RADIANCE_BUFFER_ROUTE_PEER = 4,	   /* `to` copies `from`'s memory peer to peer (CUDA) */
} radiance_buffer_route_t;

typedef enum radiance_link_class_e {
	RADIANCE_LINK_CLASS_LOCAL = 0,
	RADIANCE_LINK_CLASS_DRIVER = 1, /* one driver: edges stay in the kernel or the driver */
	RADIANCE_LINK_CLASS_HOST = 2,	/* edges go through this process */
} radiance_link_class_t;

typedef struct radiance_topology_edge_t {
	uint32_t semaphore_route; /* radiance_semaphore_route_t */
	uint32_t buffer_route;	  /* radiance_buffer_route_t */
	uint32_t link_class;	  /* radiance_link_class_t */
	uint32_t reserved;
} radiance_topology_edge_t;

void radiance_device_group_builder_initialize(radiance_device_group_builder_t *builder);
/* RESOURCE_EXHAUSTED past RADIANCE_DEVICE_GROUP_MAX_DEVICES. */
radiance_status_t radiance_device_group_builder_add_device(radiance_device_group_builder_t *builder,
							   radiance_device_t *device);
/* INVALID_ARGUMENT for no device or one added twice. */
radiance_status_t radiance_device_group_builder_finalize(radiance_device_group_builder_t *builder,
							 radiance_device_group_t **out_group);
void radiance_device_group_builder_deinitialize(radiance_device_group_builder_t *builder);
void radiance_device_group_retain(radiance_device_group_t *group);
void radiance_device_group_release(radiance_device_group_t *group);
/* Devices in the group, in the order they were added (0 for NULL). */
uint32_t radiance_device_group_device_count(const radiance_device_group_t *group);
/* Device `index`, borrowed from the group (retain it to keep it longer). */
radiance_status_t radiance_device_group_device(const radiance_device_group_t *group, uint32_t index,
					       radiance_device_t **out_device);
/* How device `to` reaches device `from` (OUT_OF_RANGE for an index past the group). */
radiance_status_t radiance_device_group_edge(const radiance_device_group_t *group, uint32_t from, uint32_t to,
					     radiance_topology_edge_t *out_edge);

/* ---- Semaphores ----------------------------------------------------------- */

radiance_status_t radiance_semaphore_create(radiance_device_t *device, uint64_t initial_value,
					    radiance_semaphore_t **out_semaphore);
void radiance_semaphore_retain(radiance_semaphore_t *semaphore);
void radiance_semaphore_release(radiance_semaphore_t *semaphore);
/* The payload, or the status the semaphore failed with. */
radiance_status_t radiance_semaphore_query(radiance_semaphore_t *semaphore, uint64_t *out_value);
/* Raises the payload; OUT_OF_RANGE unless value is above it. */
radiance_status_t radiance_semaphore_signal(radiance_semaphore_t *semaphore, uint64_t value);
/* Fails the semaphore with a non-OK code and a message (NULL: a default). */
radiance_status_t radiance_semaphore_fail(radiance_semaphore_t *semaphore, uint32_t code, const char *message);
radiance_status_t radiance_semaphore_wait(radiance_semaphore_t *semaphore, uint64_t value, uint64_t timeout_ns);

/* ---- Buffers -------------------------------------------------------------- */

typedef enum radiance_memory_type_e {
	/* Device memory; the host cannot map it. */
	RADIANCE_MEMORY_DEVICE = 0,
	/* Memory the host can map. */
	RADIANCE_MEMORY_HOST_VISIBLE = 1,
} radiance_memory_type_t;

/* Usage bits. */
#define RADIANCE_BUFFER_USAGE_TRANSFER (1u << 0) /* fill, copy, update */
#define RADIANCE_BUFFER_USAGE_DISPATCH (1u << 1) /* kernels, by device address */
#define RADIANCE_BUFFER_USAGE_MAPPING (1u << 2)	 /* host mapping; HOST_VISIBLE only */

typedef struct radiance_buffer_params_t {
	uint64_t size;
	uint32_t memory_type; /* radiance_memory_type_t */
	uint32_t usage;	      /* RADIANCE_BUFFER_USAGE_* */
} radiance_buffer_params_t;

/* A mapped range; holds a reference to its buffer until unmapped. */
typedef struct radiance_mapping_t {
	void *contents;
	uint64_t length;
	radiance_buffer_t *buffer;
} radiance_mapping_t;

radiance_status_t radiance_buffer_allocate(radiance_device_t *device, const radiance_buffer_params_t *params,
					   radiance_buffer_t **out_buffer);
/* A buffer over a dma-buf; the fd stays the caller's. UNIMPLEMENTED on host. */
radiance_status_t radiance_buffer_import_dma_buf(radiance_device_t *device, int fd,
						 const radiance_buffer_params_t *params,
						 radiance_buffer_t **out_buffer);
void radiance_buffer_retain(radiance_buffer_t *buffer);
void radiance_buffer_release(radiance_buffer_t *buffer);
uint64_t radiance_buffer_size(const radiance_buffer_t *buffer);
/* The device address of byte 0 (32-bit on Radiance devices; 0 for NULL). */
uint64_t radiance_buffer_device_address(const radiance_buffer_t *buffer);
/*
 * Maps a range of a MAPPING buffer. Coherent: the host sees what queue work
 * wrote once a semaphore signalled after it is reached, and queue work sees
 * what the host wrote before the work's wait semaphores were reached. The
 * host must not touch a range while queue work uses it.
 *
 * Except on a kmod device whose VRAM the CPU cannot map (no
 * RADIANCE_CAP_VRAM_MAPPABLE, e.g. gluon-sim): there the contents are a copy
 * of the device's bytes made at map, written back at unmap (which can then
 * fail), and a range may be mapped only once at a time. Map after the queue
 * work whose results the host reads and unmap before the queue work that
 * reads what the host wrote: that is correct on every device.
 */
radiance_status_t radiance_buffer_map(radiance_buffer_t *buffer, uint64_t offset, uint64_t length,
				      radiance_mapping_t *out_mapping);
radiance_status_t radiance_buffer_unmap(radiance_mapping_t *mapping);
/* A new dma-buf fd owned by the caller. UNIMPLEMENTED on host, and on kmod
 * for DEVICE memory and for HOST_VISIBLE memory of a device without
 * RADIANCE_CAP_VRAM_MAPPABLE (its bytes are in VRAM no CPU can map). */
radiance_status_t radiance_buffer_export_dma_buf(radiance_buffer_t *buffer, int *out_fd);

/* ---- Queues ------------------------------------------------------------------ */

/* A kernel launch, as Gluon's KERNEL command takes it. */
typedef struct radiance_launch_t {
	uint32_t entry_pc; /* start code, or the kernel; a RADIANCE_BUILTIN_* PC runs that built-in */
	uint32_t grid[3];  /* blocks per grid, each >= 1 */
	uint32_t block[3]; /* threads per block, each >= 1 */
	uint32_t shmem_per_block;
	uint8_t regs_per_thread;
	const void *params; /* the built-ins read little-endian u32s */
	size_t params_length;
	/* Grown at the end in ABI 1.8: the kernel the start code at entry_pc
	 * calls, 0 when there is none (RADIANCE_BUILTIN_START runs the
	 * built-in at kernel_pc). */
	uint32_t kernel_pc;
} radiance_launch_t;

radiance_status_t radiance_queue_create(radiance_device_t *device, radiance_queue_t **out_queue);
void radiance_queue_retain(radiance_queue_t *queue);
void radiance_queue_release(radiance_queue_t *queue);

/* Fills with a 1, 2 or 4-byte pattern; offset and length are multiples of it. */
radiance_status_t radiance_queue_fill(radiance_queue_t *queue, radiance_semaphore_list_t waits,
				      radiance_semaphore_list_t signals, radiance_buffer_t *buffer, uint64_t offset,
				      uint64_t length, const void *pattern, size_t pattern_length);
/* Copies between ranges that do not overlap. */
radiance_status_t radiance_queue_copy(radiance_queue_t *queue, radiance_semaphore_list_t waits,
				      radiance_semaphore_list_t signals, radiance_buffer_t *source,
				      uint64_t source_offset, radiance_buffer_t *target, uint64_t target_offset,
				      uint64_t length);
/* Writes host bytes, copied before the call returns. */
radiance_status_t radiance_queue_update(radiance_queue_t *queue, radiance_semaphore_list_t waits,
					radiance_semaphore_list_t signals, const void *source,
					radiance_buffer_t *target, uint64_t target_offset, size_t length);
radiance_status_t radiance_queue_dispatch(radiance_queue_t *queue, radiance_semaphore_list_t waits,
					  radiance_semaphore_list_t signals, const radiance_launch_t *launch);
/* Only waits and signals. */
radiance_status_t radiance_queue_barrier(radiance_queue_t *queue, radiance_semaphore_list_t waits,
					 radiance_semaphore_list_t signals);
/* Runs an ended command buffer (any number of times). */
radiance_status_t radiance_queue_execute(radiance_queue_t *queue, radiance_semaphore_list_t waits,
					 radiance_semaphore_list_t signals, radiance_command_buffer_t *command_buffer);

/* ---- Command buffers --------------------------------------------------------- */

/* Starts recording; record commands, then end, then execute. */
radiance_status_t radiance_command_buffer_create(radiance_device_t *device,
						 radiance_command_buffer_t **out_command_buffer);
void radiance_command_buffer_retain(radiance_command_buffer_t *command_buffer);
void radiance_command_buffer_release(radiance_command_buffer_t *command_buffer);
radiance_status_t radiance_command_buffer_fill(radiance_command_buffer_t *command_buffer, radiance_buffer_t *buffer,
					       uint64_t offset, uint64_t length, const void *pattern,
					       size_t pattern_length);
radiance_status_t radiance_command_buffer_copy(radiance_command_buffer_t *command_buffer, radiance_buffer_t *source,
					       uint64_t source_offset, radiance_buffer_t *target,
					       uint64_t target_offset, uint64_t length);
radiance_status_t radiance_command_buffer_update(radiance_command_buffer_t *command_buffer, const void *source,
						 radiance_buffer_t *target, uint64_t target_offset, size_t length);
radiance_status_t radiance_command_buffer_dispatch(radiance_command_buffer_t *command_buffer,
						   const radiance_launch_t *launch);
/* Commands after a barrier start only when those before it have finished. */
radiance_status_t radiance_command_buffer_barrier(radiance_command_buffer_t *command_buffer);
radiance_status_t radiance_command_buffer_end(radiance_command_buffer_t *command_buffer);

/* ---- The transport seam of the IREE radiance HAL driver -------------------
 *
 * Merlin's transport vtable, with its semantics:
 * - a stream (0-255) is a queue and a timeline semaphore counting its
 *   operations, made on first use; each operation waits for the stream's
 *   previous one, so a stream stays in order;
 * - alloc_device gives device memory and its device address; every other
 *   call names a range inside one allocation (INVALID_ARGUMENT otherwise);
 * - an H2D copy reads its host bytes during the call; a D2H copy writes its
 *   host destination at the stream's next synchronize, which must find it
 *   still valid;
 * - a dispatch gets the stream's stack (1 MiB) and thread-local storage
 *   (64 KiB) of device memory, which the seam has no field for;
 * - synchronize waits for the stream's operations and returns the first
 *   failure with its message (a device fault names Gluon's status, the PC
 *   and the warp); the stream stays failed after one;
 * - destroy releases everything.
 */
typedef struct radiance_transport_t radiance_transport_t;

typedef enum radiance_copy_direction_e {
	RADIANCE_COPY_H2D = 0, /* src is a host pointer, dst a device address */
	RADIANCE_COPY_D2H = 1, /* src is a device address, dst a host pointer */
} radiance_copy_direction_t;

typedef struct radiance_transport_launch_t {
	uint8_t stream_id;
	uint32_t start_pc;  /* where warps start: the start code */
	uint32_t kernel_pc; /* the kernel the start code calls */
	uint32_t grid[3];   /* blocks per grid, each >= 1 */
	uint32_t block[3];  /* threads per block, each >= 1 */
	uint8_t regs_per_thread;
	uint32_t shmem_per_block;
	const void *params;
	size_t params_length;
} radiance_transport_launch_t;

radiance_status_t radiance_transport_create(const char *uri, radiance_transport_t **out_transport);
void radiance_transport_destroy(radiance_transport_t *transport);
radiance_status_t radiance_transport_alloc_device(radiance_transport_t *transport, uint32_t bytes,
						  uint64_t *out_device_address);
radiance_status_t radiance_transport_submit_copy(radiance_transport_t *transport, uint8_t stream_id,
						 uint64_t src_address, uint64_t dst_address, uint32_t length,
						 uint32_t direction);
radiance_status_t radiance_transport_submit_fill(radiance_transport_t *transport, uint8_t stream_id,
						 uint64_t dst_address, uint32_t value, uint32_t length);
radiance_status_t radiance_transport_submit_dispatch(radiance_transport_t *transport,
						     const radiance_transport_launch_t *launch);
radiance_status_t radiance_transport_synchronize(radiance_transport_t *transport, uint8_t stream_id);

/* Layouts the library checks on its side too. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(radiance_semaphore_list_t) == 24, "radiance_semaphore_list_t layout");
_Static_assert(sizeof(radiance_buffer_params_t) == 16, "radiance_buffer_params_t layout");
_Static_assert(sizeof(radiance_mapping_t) == 24, "radiance_mapping_t layout");
_Static_assert(sizeof(radiance_launch_t) == 64, "radiance_launch_t layout");
_Static_assert(sizeof(radiance_transport_launch_t) == 64, "radiance_transport_launch_t layout");
_Static_assert(sizeof(radiance_device_group_builder_t) == 136, "radiance_device_group_builder_t layout");
_Static_assert(sizeof(radiance_topology_edge_t) == 16, "radiance_topology_edge_t layout");
#endif

#ifdef __cplusplus
}
#endif

#endif /* LIBRADIANCE_H */
