// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Drives libradiance's C ABI end to end against a device (argv[1], default
 * "host"): open, allocate, fill, copy, signal, wait, read back; failure
 * statuses; a command buffer; then the IREE HAL driver's seam sequence
 * through the transport part of the ABI. Prints one line per check; exits non-zero on any failure.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS, sysconf under -std=c11 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libradiance.h"
#include "radiance.h"

static int failures;

#define CHECK(cond, ...)                                              \
	do {                                                          \
		if (!(cond)) {                                        \
			failures++;                                   \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);   \
			printf(__VA_ARGS__);                          \
			printf("\n");                                 \
		}                                                     \
	} while (0)

/* Consumes a status and checks its code. */
static void expect(radiance_status_t status, uint32_t code, const char *what)
{
	uint32_t got = radiance_status_code(status);
	CHECK(got == code, "%s: status %u (%s), expected %u", what, got, radiance_status_message(status), code);
	radiance_status_free(status);
}

#define OK(call) expect((call), RADIANCE_STATUS_OK, #call)

static const radiance_semaphore_list_t none = { 0, NULL, NULL };

static radiance_semaphore_list_t one(radiance_semaphore_t **semaphore, const uint64_t *value)
{
	return (radiance_semaphore_list_t){ 1, semaphore, value };
}

static radiance_buffer_t *allocate(radiance_device_t *device, uint64_t size, uint32_t memory_type, uint32_t usage)
{
	radiance_buffer_params_t params = { .size = size, .memory_type = memory_type, .usage = usage };
	radiance_buffer_t *buffer = NULL;
	OK(radiance_buffer_allocate(device, &params, &buffer));
	return buffer;
}

static void test_open_errors(void)
{
	radiance_device_t *device = NULL;
	expect(radiance_device_open("nonsense:0", &device), RADIANCE_STATUS_INVALID_ARGUMENT, "unknown scheme");
	expect(radiance_device_open("kmod:99", &device), RADIANCE_STATUS_NOT_FOUND, "a kmod device that is not there");
	expect(radiance_device_open(NULL, &device), RADIANCE_STATUS_INVALID_ARGUMENT, "NULL uri");
	CHECK(device == NULL, "a failed open wrote a device");
	radiance_status_t status = radiance_device_open("nonsense:0", &device);
	CHECK(strstr(radiance_status_message(status), "nonsense:0") != NULL, "message names the URI: %s",
	      radiance_status_message(status));
	radiance_status_free(status);
}

/* Fill, copy, host signal, wait, read back. */
static void test_fill_copy_signal_wait(radiance_device_t *device)
{
	const uint32_t usage = RADIANCE_BUFFER_USAGE_TRANSFER | RADIANCE_BUFFER_USAGE_MAPPING;
	radiance_buffer_t *src = allocate(device, 4096, RADIANCE_MEMORY_DEVICE, RADIANCE_BUFFER_USAGE_TRANSFER);
	radiance_buffer_t *dst = allocate(device, 4096, RADIANCE_MEMORY_HOST_VISIBLE, usage);
	radiance_queue_t *queue = NULL;
	radiance_semaphore_t *sem = NULL;
	OK(radiance_queue_create(device, &queue));
	OK(radiance_semaphore_create(device, 0, &sem));
	CHECK(radiance_buffer_device_address(src) != 0 && radiance_buffer_device_address(src) <= UINT32_MAX,
	      "device address %#" PRIx64 " is not a non-zero 32-bit address", radiance_buffer_device_address(src));
	CHECK(radiance_buffer_size(dst) == 4096, "size %" PRIu64, radiance_buffer_size(dst));

	/* The fill waits for the host's signal of 1; the copy waits for the fill. */
	uint64_t v1 = 1, v2 = 2, v3 = 3;
	uint32_t pattern = 0xA5A5F00D;
	OK(radiance_queue_fill(queue, one(&sem, &v1), one(&sem, &v2), src, 0, 4096, &pattern, sizeof(pattern)));
	OK(radiance_queue_copy(queue, one(&sem, &v2), one(&sem, &v3), src, 16, dst, 8, 100));
	expect(radiance_semaphore_wait(sem, 3, 20 * 1000 * 1000), RADIANCE_STATUS_DEADLINE_EXCEEDED,
	       "wait before the host signal");
	OK(radiance_semaphore_signal(sem, 1));
	OK(radiance_semaphore_wait(sem, 3, RADIANCE_TIMEOUT_INFINITE));
	uint64_t value = 0;
	OK(radiance_semaphore_query(sem, &value));
	CHECK(value == 3, "payload %" PRIu64, value);

	/* Many semaphores: any is reached by sem alone, all is not. */
	radiance_semaphore_t *other = NULL;
	OK(radiance_semaphore_create(device, 0, &other));
	radiance_semaphore_t *both[2] = { sem, other };
	const uint64_t values[2] = { 3, 1 };
	radiance_semaphore_list_t list = { 2, both, values };
	OK(radiance_device_wait_semaphores(device, RADIANCE_WAIT_ANY, list, 0));
	expect(radiance_device_wait_semaphores(device, RADIANCE_WAIT_ALL, list, 1000), RADIANCE_STATUS_DEADLINE_EXCEEDED,
	       "wait all with one unreached");
	expect(radiance_device_wait_semaphores(device, 7, list, 0), RADIANCE_STATUS_INVALID_ARGUMENT, "bad wait mode");
	radiance_semaphore_release(other);

	radiance_mapping_t mapping;
	OK(radiance_buffer_map(dst, 0, 4096, &mapping));
	const uint8_t *bytes = mapping.contents;
	int good = 1;
	for (size_t i = 0; i < 4096; i++) {
		uint8_t want = (i >= 8 && i < 108) ? (uint8_t)(pattern >> (8 * ((i - 8 + 16) % 4))) : 0;
		good &= bytes[i] == want;
	}
	CHECK(good, "copied bytes differ from the fill pattern");
	OK(radiance_buffer_unmap(&mapping));

	/* What the host wrote through a mapping reaches queue work after the
	 * unmap (where the host cannot map VRAM, the unmap writes it back). */
	static const uint8_t marks[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	uint64_t v4 = 4;
	OK(radiance_buffer_map(dst, 201, sizeof(marks), &mapping));
	memcpy(mapping.contents, marks, sizeof(marks));
	OK(radiance_buffer_unmap(&mapping));
	OK(radiance_queue_copy(queue, one(&sem, &v3), one(&sem, &v4), dst, 201, dst, 403, sizeof(marks)));
	OK(radiance_semaphore_wait(sem, 4, RADIANCE_TIMEOUT_INFINITE));
	OK(radiance_buffer_map(dst, 400, 16, &mapping));
	bytes = mapping.contents;
	CHECK(bytes[2] == 0 && !memcmp(bytes + 3, marks, sizeof(marks)) && bytes[15] == 0,
	      "the device's copy of what the host wrote differs");
	OK(radiance_buffer_unmap(&mapping));
	expect(radiance_buffer_map(src, 0, 16, &mapping), RADIANCE_STATUS_INVALID_ARGUMENT, "map device memory");
	expect(radiance_semaphore_signal(sem, 2), RADIANCE_STATUS_OUT_OF_RANGE, "signal backwards");

	radiance_semaphore_release(sem);
	radiance_queue_release(queue);
	radiance_buffer_release(src);
	radiance_buffer_release(dst);
}

/* A failed semaphore fails the queue work that waits on it, and its signals. */
static void test_failure_propagation(radiance_device_t *device)
{
	radiance_buffer_t *buffer = allocate(device, 64, RADIANCE_MEMORY_DEVICE, RADIANCE_BUFFER_USAGE_TRANSFER);
	radiance_queue_t *queue = NULL;
	radiance_semaphore_t *a = NULL, *b = NULL;
	OK(radiance_queue_create(device, &queue));
	OK(radiance_semaphore_create(device, 0, &a));
	OK(radiance_semaphore_create(device, 0, &b));
	uint64_t v1 = 1;
	uint8_t byte = 7;
	OK(radiance_queue_fill(queue, one(&a, &v1), one(&b, &v1), buffer, 0, 64, &byte, 1));
	OK(radiance_semaphore_fail(a, RADIANCE_STATUS_DATA_LOSS, "injected"));
	radiance_status_t status = radiance_semaphore_wait(b, 1, RADIANCE_TIMEOUT_INFINITE);
	CHECK(radiance_status_code(status) == RADIANCE_STATUS_DATA_LOSS, "dependent signal: %s",
	      radiance_status_message(status));
	CHECK(strstr(radiance_status_message(status), "injected") != NULL, "message carried: %s",
	      radiance_status_message(status));
	radiance_status_free(status);
	uint64_t value;
	expect(radiance_semaphore_query(a, &value), RADIANCE_STATUS_DATA_LOSS, "query of the failed semaphore");
	expect(radiance_semaphore_fail(a, RADIANCE_STATUS_OK, NULL), RADIANCE_STATUS_INVALID_ARGUMENT, "fail with OK");

	/* A bad entry PC is a device fault. */
	radiance_semaphore_t *c = NULL;
	OK(radiance_semaphore_create(device, 0, &c));
	radiance_launch_t launch = { .entry_pc = 0x1000, .grid = { 1, 1, 1 }, .block = { 1, 1, 1 } };
	OK(radiance_queue_dispatch(queue, none, one(&c, &v1), &launch));
	expect(radiance_semaphore_wait(c, 1, RADIANCE_TIMEOUT_INFINITE), RADIANCE_STATUS_ABORTED, "bad PC");

	radiance_semaphore_release(a);
	radiance_semaphore_release(b);
	radiance_semaphore_release(c);
	radiance_queue_release(queue);
	radiance_buffer_release(buffer);
}

/* A host-visible buffer of three 4-word vectors a, b and c, and a VECADD
 * launch of c = a + b over it, whose params (which must outlive the
 * launch) are `params`. */
static radiance_buffer_t *vecadd(radiance_device_t *device, uint32_t params[4], radiance_launch_t *launch)
{
	const uint32_t usage = RADIANCE_BUFFER_USAGE_TRANSFER | RADIANCE_BUFFER_USAGE_DISPATCH |
			       RADIANCE_BUFFER_USAGE_MAPPING;
	radiance_buffer_t *buffer = allocate(device, 3 * 16, RADIANCE_MEMORY_HOST_VISIBLE, usage);
	uint32_t base = (uint32_t)radiance_buffer_device_address(buffer);
	params[0] = base;
	params[1] = base + 16;
	params[2] = base + 32;
	params[3] = 4;
	*launch = (radiance_launch_t){
		.entry_pc = RADIANCE_BUILTIN_VECADD_U32,
		.grid = { 1, 1, 1 },
		.block = { 4, 1, 1 },
		.params = params,
		.params_length = 4 * sizeof(uint32_t),
	};
	return buffer;
}

/* Checks that `buffer` (of `vecadd`) holds c = a + b. */
static void check_vecadd(radiance_buffer_t *buffer, const uint32_t a[4], const uint32_t b[4], const char *what)
{
	radiance_mapping_t mapping;
	OK(radiance_buffer_map(buffer, 32, 16, &mapping));
	const uint32_t *c = mapping.contents;
	for (int i = 0; i < 4; i++)
		CHECK(c[i] == a[i] + b[i], "%s: c[%d] = %u", what, i, c[i]);
	OK(radiance_buffer_unmap(&mapping));
	expect(radiance_buffer_unmap(&mapping), RADIANCE_STATUS_INVALID_ARGUMENT, "unmap twice");
}

/* Record once (update, barrier, VECADD), execute three times. */
static void test_command_buffer(radiance_device_t *device)
{
	uint32_t a[4] = { 1, 2, 3, 4 }, b[4] = { 10, 20, 30, 40 }, params[4];
	radiance_launch_t launch;
	radiance_buffer_t *buffer = vecadd(device, params, &launch);
	radiance_command_buffer_t *cb = NULL;
	OK(radiance_command_buffer_create(device, &cb));
	OK(radiance_command_buffer_update(cb, a, buffer, 0, sizeof(a)));
	OK(radiance_command_buffer_update(cb, b, buffer, 16, sizeof(b)));
	OK(radiance_command_buffer_barrier(cb));
	OK(radiance_command_buffer_dispatch(cb, &launch));
	radiance_queue_t *queue = NULL;
	expect(radiance_queue_execute(queue, none, none, cb), RADIANCE_STATUS_INVALID_ARGUMENT, "NULL queue");
	OK(radiance_queue_create(device, &queue));
	expect(radiance_queue_execute(queue, none, none, cb), RADIANCE_STATUS_INVALID_ARGUMENT, "still recording");
	OK(radiance_command_buffer_end(cb));
	expect(radiance_command_buffer_barrier(cb), RADIANCE_STATUS_INVALID_ARGUMENT, "record after end");

	radiance_semaphore_t *sem = NULL;
	OK(radiance_semaphore_create(device, 0, &sem));
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t wait = i, signal = i + 1;
		OK(radiance_queue_execute(queue, one(&sem, &wait), one(&sem, &signal), cb));
	}
	OK(radiance_semaphore_wait(sem, 3, RADIANCE_TIMEOUT_INFINITE));
	check_vecadd(buffer, a, b, "replayed");

	radiance_command_buffer_release(cb);
	radiance_semaphore_release(sem);
	radiance_queue_release(queue);
	radiance_buffer_release(buffer);
}

/* A dispatch with no waits and no signals (the backend may queue it at
 * once, not as a command) still runs before what is queued after it; one
 * with an empty dimension is refused. */
static void test_lone_dispatch(radiance_device_t *device)
{
	uint32_t a[4] = { 5, 6, 7, 8 }, b[4] = { 50, 60, 70, 80 }, params[4];
	radiance_launch_t launch;
	radiance_buffer_t *buffer = vecadd(device, params, &launch);
	radiance_queue_t *queue = NULL;
	radiance_semaphore_t *sem = NULL;
	OK(radiance_queue_create(device, &queue));
	OK(radiance_semaphore_create(device, 0, &sem));
	uint64_t v1 = 1;
	OK(radiance_queue_update(queue, none, none, a, buffer, 0, sizeof(a)));
	OK(radiance_queue_update(queue, none, none, b, buffer, 16, sizeof(b)));
	OK(radiance_queue_dispatch(queue, none, none, &launch));
	OK(radiance_queue_barrier(queue, none, one(&sem, &v1)));
	OK(radiance_semaphore_wait(sem, 1, RADIANCE_TIMEOUT_INFINITE));
	check_vecadd(buffer, a, b, "lone dispatch");

	launch.grid[2] = 0;
	expect(radiance_queue_dispatch(queue, none, none, &launch), RADIANCE_STATUS_INVALID_ARGUMENT,
	       "an empty grid dimension");
	expect(radiance_queue_dispatch(queue, none, none, NULL), RADIANCE_STATUS_INVALID_ARGUMENT, "a NULL launch");

	radiance_semaphore_release(sem);
	radiance_queue_release(queue);
	radiance_buffer_release(buffer);
}

/* The IREE radiance HAL driver's sequence, through the transport seam. */
static void test_transport(const char *uri)
{
	enum { N = 1000 };
	static uint32_t a[N], b[N], c[N], filled[N];
	for (uint32_t i = 0; i < N; i++) {
		a[i] = i;
		b[i] = 3 * i + 0x10000;
	}
	radiance_transport_t *t = NULL;
	OK(radiance_transport_create(uri, &t));
	if (!t)
		return;
	uint64_t da = 0, db = 0, dc = 0;
	OK(radiance_transport_alloc_device(t, sizeof(a), &da));
	OK(radiance_transport_alloc_device(t, sizeof(b), &db));
	OK(radiance_transport_alloc_device(t, sizeof(c), &dc));
	OK(radiance_transport_submit_copy(t, 0, (uintptr_t)a, da, sizeof(a), RADIANCE_COPY_H2D));
	OK(radiance_transport_submit_copy(t, 0, (uintptr_t)b, db, sizeof(b), RADIANCE_COPY_H2D));
	OK(radiance_transport_submit_fill(t, 0, dc, 0xDEADBEEF, sizeof(c)));
	OK(radiance_transport_submit_copy(t, 0, dc, (uintptr_t)filled, sizeof(filled), RADIANCE_COPY_D2H));
	uint32_t params[4] = { (uint32_t)da, (uint32_t)db, (uint32_t)dc, N };
	radiance_transport_launch_t launch = {
		.stream_id = 0,
		/* Start code that calls the kernel at kernel_pc. */
		.start_pc = RADIANCE_BUILTIN_START,
		.kernel_pc = RADIANCE_BUILTIN_VECADD_U32,
		.grid = { 4, 1, 1 },
		.block = { 256, 1, 1 },
		.regs_per_thread = 32,
		.params = params,
		.params_length = sizeof(params),
	};
	OK(radiance_transport_submit_dispatch(t, &launch));
	OK(radiance_transport_submit_copy(t, 0, dc, (uintptr_t)c, sizeof(c), RADIANCE_COPY_D2H));
	OK(radiance_transport_synchronize(t, 0));
	int good = 1;
	for (uint32_t i = 0; i < N; i++)
		good &= filled[i] == 0xDEADBEEF && c[i] == a[i] + b[i];
	CHECK(good, "transport results differ (c[1] = %u, filled[1] = %#x)", c[1], filled[1]);
	/* A stream never used synchronizes at once. */
	OK(radiance_transport_synchronize(t, 7));
	/* What the seam refuses: a range outside the allocations, a bad
	 * direction, NULL arguments. */
	expect(radiance_transport_submit_fill(t, 1, dc + sizeof(c) - 4, 0, 8), RADIANCE_STATUS_INVALID_ARGUMENT,
	       "a fill past its allocation");
	expect(radiance_transport_submit_copy(t, 1, (uintptr_t)a, da, 4, 2), RADIANCE_STATUS_INVALID_ARGUMENT,
	       "copy direction 2");
	expect(radiance_transport_submit_dispatch(t, NULL), RADIANCE_STATUS_INVALID_ARGUMENT, "a NULL launch");
	/* Host addresses that are no memory of this process: errors, not
	 * crashes (Merlin's smoke test passes a device address as one). */
	expect(radiance_transport_submit_copy(t, 1, 0x10, da, 64, RADIANCE_COPY_H2D), RADIANCE_STATUS_INVALID_ARGUMENT,
	       "an H2D source that is not mapped");
	expect(radiance_transport_submit_copy(t, 1, da, 0x10, 64, RADIANCE_COPY_D2H), RADIANCE_STATUS_INVALID_ARGUMENT,
	       "a D2H destination that is not mapped");
	/* D2H destinations the process cannot write: errors, not SIGSEGV. A
	 * read-only one is refused at submit; one made read-only after its
	 * submit fails the synchronize that would have written it. */
	static const uint32_t read_only[16] = { 1 };
	expect(radiance_transport_submit_copy(t, 4, dc, (uintptr_t)read_only, sizeof(read_only), RADIANCE_COPY_D2H),
	       RADIANCE_STATUS_INVALID_ARGUMENT, "a read-only D2H destination");
	long page = sysconf(_SC_PAGESIZE);
	uint32_t *late = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(late != MAP_FAILED, "mmap: %s", strerror(errno));
	if (late != MAP_FAILED) {
		OK(radiance_transport_submit_copy(t, 4, dc, (uintptr_t)late, 64, RADIANCE_COPY_D2H));
		CHECK(mprotect(late, page, PROT_READ) == 0, "mprotect: %s", strerror(errno));
		expect(radiance_transport_synchronize(t, 4), RADIANCE_STATUS_INVALID_ARGUMENT,
		       "a D2H destination made read-only before synchronize");
		munmap(late, page);
	}
	/* A launch at a PC where no kernel lives (Merlin's smoke test uses
	 * 0x100): synchronize reports the device fault, with the PC, and the
	 * stream stays failed; another stream goes on. */
	launch.stream_id = 2;
	launch.start_pc = launch.kernel_pc = 0x100;
	OK(radiance_transport_submit_dispatch(t, &launch));
	radiance_status_t status = radiance_transport_synchronize(t, 2);
	const char *message = radiance_status_message(status);
	CHECK(radiance_status_code(status) == RADIANCE_STATUS_ABORTED && message && strstr(message, "pc 0x00000100"),
	      "a bad PC's synchronize: status %u (%s)", radiance_status_code(status), message);
	printf("transport: a launch at 0x100 synchronizes to status %u: %s\n", radiance_status_code(status), message);
	radiance_status_free(status);
	OK(radiance_transport_submit_fill(t, 2, dc, 1, 4));
	CHECK(radiance_transport_synchronize(t, 2) != NULL, "a failed stream stays failed");
	OK(radiance_transport_submit_fill(t, 3, dc, 1, 4));
	OK(radiance_transport_synchronize(t, 3));
	radiance_transport_destroy(t);
	radiance_transport_destroy(NULL);
}

/* A group of `uri` and a host device: its topology, and one device's queue
 * waiting on and signalling the other's semaphores, a failure crossing with
 * its message. */
static void test_device_group(const char *uri)
{
	radiance_device_t *a = NULL, *b = NULL, *got = NULL;
	radiance_device_group_t *group = NULL, *second = NULL;
	radiance_device_group_builder_t builder;
	radiance_topology_edge_t edge;
	OK(radiance_device_open(uri, &a));
	OK(radiance_device_open("host", &b));
	radiance_device_group_builder_initialize(&builder);
	expect(radiance_device_group_builder_finalize(&builder, &group), RADIANCE_STATUS_INVALID_ARGUMENT, "an empty group");
	expect(radiance_device_group_builder_add_device(&builder, NULL), RADIANCE_STATUS_INVALID_ARGUMENT, "a NULL device");
	OK(radiance_device_group_builder_add_device(&builder, a));
	OK(radiance_device_group_builder_add_device(&builder, b));
	CHECK(builder.device_count == 2, "builder holds %u devices", builder.device_count);
	OK(radiance_device_group_builder_finalize(&builder, &group));
	CHECK(builder.device_count == 0, "the builder was not consumed");
	CHECK(radiance_device_group_device_count(group) == 2, "group of %u", radiance_device_group_device_count(group));
	OK(radiance_device_group_device(group, 1, &got));
	CHECK(got == b, "device 1 is not the second added");
	expect(radiance_device_group_device(group, 2, &got), RADIANCE_STATUS_OUT_OF_RANGE, "device 2 of 2");
	OK(radiance_device_group_edge(group, 0, 0, &edge));
	CHECK(edge.semaphore_route == RADIANCE_SEMAPHORE_ROUTE_LOCAL && edge.link_class == RADIANCE_LINK_CLASS_LOCAL,
	      "edge 0->0: %u %u", edge.semaphore_route, edge.link_class);
	OK(radiance_device_group_edge(group, 0, 1, &edge));
	CHECK(edge.semaphore_route == RADIANCE_SEMAPHORE_ROUTE_HOST_HOP && edge.buffer_route == RADIANCE_BUFFER_ROUTE_HOST &&
		      edge.link_class == RADIANCE_LINK_CLASS_HOST,
	      "edge 0->1: %u %u %u", edge.semaphore_route, edge.buffer_route, edge.link_class);
	expect(radiance_device_group_edge(group, 0, 2, &edge), RADIANCE_STATUS_OUT_OF_RANGE, "edge 0->2");
	radiance_device_group_builder_initialize(&builder);
	OK(radiance_device_group_builder_add_device(&builder, a));
	expect(radiance_device_group_builder_finalize(&builder, &second), RADIANCE_STATUS_FAILED_PRECONDITION,
	       "a device in two groups");

	/* b's queue waits on a's semaphore and signals another of a's. */
	radiance_queue_t *queue = NULL;
	radiance_semaphore_t *s = NULL, *t = NULL;
	OK(radiance_queue_create(b, &queue));
	OK(radiance_semaphore_create(a, 0, &s));
	OK(radiance_semaphore_create(a, 0, &t));
	const uint64_t v1 = 1, v2 = 2;
	OK(radiance_queue_barrier(queue, one(&s, &v1), one(&t, &v1)));
	OK(radiance_semaphore_signal(s, 1));
	OK(radiance_semaphore_wait(t, 1, RADIANCE_TIMEOUT_INFINITE));
	OK(radiance_queue_barrier(queue, one(&s, &v2), one(&t, &v2)));
	OK(radiance_semaphore_fail(s, RADIANCE_STATUS_DATA_LOSS, "lost on the other device"));
	radiance_status_t status = radiance_semaphore_wait(t, 2, RADIANCE_TIMEOUT_INFINITE);
	CHECK(radiance_status_code(status) == RADIANCE_STATUS_DATA_LOSS &&
		      strcmp(radiance_status_message(status), "lost on the other device") == 0,
	      "the failure across the group: %u %s", radiance_status_code(status), radiance_status_message(status));
	radiance_status_free(status);
	radiance_semaphore_release(s);
	radiance_semaphore_release(t);
	radiance_queue_release(queue);
	/* The group and its devices go in either order. */
	radiance_device_release(a);
	radiance_device_group_release(group);
	radiance_device_release(b);
}

int main(int argc, char **argv)
{
	const char *uri = argc > 1 ? argv[1] : "host";
	radiance_device_t *device = NULL;
	test_open_errors();
	OK(radiance_device_open(uri, &device));
	if (!device)
		return 1;
	test_fill_copy_signal_wait(device);
	test_failure_propagation(device);
	test_command_buffer(device);
	test_lone_dispatch(device);
	radiance_device_release(device);
	test_transport(uri);
	test_device_group(uri);
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
	return failures != 0;
}
