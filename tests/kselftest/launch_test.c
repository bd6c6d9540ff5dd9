// SPDX-License-Identifier: GPL-2.0
/*
 * LAUNCH_DESC (ABI 1.8): a launch described field by field, which the kernel
 * builds into the device's launch block in its dialect. The emulated device
 * runs no Muon code: its START built-in is start code that runs the
 * built-in at kernel_pc, and any other PC is an execution fault there.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"
#include "radiance_queue.h"

FIXTURE(launch)
{
	int fd;
	/* A host BO for descriptors (at 0) and their params (at PARAMS). */
	int host;
	uint8_t *h;
};

enum { PARAMS = 1024 };

FIXTURE_SETUP(launch)
{
	struct radiance_bo_create c;

	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
	self->host = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &c);
	ASSERT_LT(0, self->host);
	self->h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, c.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->h);
}

FIXTURE_TEARDOWN(launch)
{
	close(self->fd);
}

/* A one-dimensional launch of `pc` at start code `start`, `n` u32 params
 * at PARAMS of the descriptor's BO. */
static struct radiance_launch_desc desc(uint32_t start, uint32_t pc, uint32_t n, uint32_t grid, uint32_t block)
{
	struct radiance_launch_desc d = {
		.start_pc = start, .kernel_pc = pc, .grid = { grid, 1, 1 }, .block = { block, 1, 1 },
		.regs_per_thread = 32, .params_size = 4 * n, .params_offset = PARAMS,
	};

	return d;
}

/* Writes `d` (and its params) into the host BO and queues a LAUNCH_DESC
 * naming it, with printf buffer `printf` if not 0. */
static void put_launch(struct queue *q, FIXTURE_DATA(launch) *self, const struct radiance_launch_desc *d,
		       const uint32_t *params, uint32_t printf, uint64_t printf_size)
{
	struct radiance_launch_packet p = {
		.header = { .kind = RADIANCE_PACKET_LAUNCH_DESC }, .block = self->host,
		.block_size = sizeof(*d), .printf = printf, .printf_size = printf_size,
	};

	memcpy(self->h, d, sizeof(*d));
	memcpy(self->h + PARAMS, params, d->params_size);
	queue_put(q, &p);
}

TEST_F(launch, start_code_runs_the_kernel_at_kernel_pc)
{
	enum { N = 700 };
	struct radiance_bo_create ac, bc, cc, sc;
	uint32_t a[N], b[N], c[N], params[4];
	struct radiance_launch_desc d;
	struct queue q;

	RADIANCE_SKIP_ON_SOC();
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, N * 4, 0, &ac));
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, N * 4, 0, &bc));
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, N * 4, 0, &cc));
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 8192, 0, &sc));
	for (int i = 0; i < N; i++) {
		a[i] = 7 * i;
		b[i] = 1000000 - i;
	}
	params[0] = ac.device_address;
	params[1] = bc.device_address;
	params[2] = cc.device_address;
	params[3] = N;
	d = desc(RADIANCE_BUILTIN_START, RADIANCE_BUILTIN_VECADD_U32, 4, 3, 256);
	/* A stack and TLS from one VRAM BO: the kernel checks and places them. */
	d.stack = sc.handle;
	d.stack_size = 4096;
	d.tls = sc.handle;
	d.tls_offset = 4096;
	d.tls_size = 4096;
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	ASSERT_EQ(0, queue_write_vram(&q, ac.handle, 0, a, sizeof(a)));
	ASSERT_EQ(0, queue_write_vram(&q, bc.handle, 0, b, sizeof(b)));
	put_launch(&q, self, &d, params, 0, 0);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	ASSERT_EQ(0, queue_read_vram(&q, cc.handle, 0, c, sizeof(c)));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(1000000u + 6 * i, c[i]) TH_LOG("element %d", i);
	}
	queue_close(&q);
}

TEST_F(launch, an_empty_pc_is_an_execution_fault_at_that_pc)
{
	const uint32_t none[1] = { 0 };
	struct radiance_launch_desc d = desc(0x10000000, 0x10000000, 0, 1, 1);
	struct queue q;

	RADIANCE_SKIP_ON_SOC();
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	put_launch(&q, self, &d, none, 0, 0);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(EIO, q.ctl->error);
	EXPECT_EQ(1, q.ctl->err_code) TH_LOG("Gluon's EXECUTION status");
	EXPECT_EQ(0x10000000u, q.ctl->err_pc);
	queue_close(&q);
	/* Start code calling an empty kernel_pc faults there. */
	d = desc(RADIANCE_BUILTIN_START, 0x10000100, 0, 1, 1);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	put_launch(&q, self, &d, none, 0, 0);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(1, q.ctl->err_code);
	EXPECT_EQ(0x10000100u, q.ctl->err_pc);
	queue_close(&q);
}

TEST_F(launch, printf_through_a_descriptor)
{
	const uint32_t params[2] = { 5, 3 };
	struct radiance_launch_desc d = desc(RADIANCE_BUILTIN_PRINTF_U32, RADIANCE_BUILTIN_PRINTF_U32, 2, 1, 4);
	struct radiance_bo_create oc;
	int out = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &oc);
	const char *want = "thread 0: 5\nthread 1: 6\nthread 2: 7\n";
	uint8_t *o;
	struct queue q;

	RADIANCE_SKIP_ON_SOC();
	RADIANCE_SKIP_ON_SIM(RADIANCE_SIM_PRINTF);
	ASSERT_LT(0, out);
	o = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, oc.mmap_offset);
	ASSERT_NE(MAP_FAILED, o);
	memset(o, 0xee, 4096);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	put_launch(&q, self, &d, params, out, 512);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	EXPECT_EQ(strlen(want), *(uint32_t *)o);
	EXPECT_EQ(0, memcmp(want, o + 4, strlen(want)));
	EXPECT_EQ(0xee, o[512]) TH_LOG("nothing past the buffer");
	queue_close(&q);
}

TEST_F(launch, nothing_after_a_faulting_launch_runs)
{
	/* Long enough that the kernel has long taken the rest when it ends. */
	enum { N = 65536 };
	struct radiance_bo_create big, small;
	struct radiance_launch_desc d[3] = {
		desc(RADIANCE_BUILTIN_START, RADIANCE_BUILTIN_FILL_U32, 3, N / 256, 256),
		desc(0x10000000, 0x10000000, 0, 1, 1),
		desc(RADIANCE_BUILTIN_START, RADIANCE_BUILTIN_FILL_U32, 3, 1, 4),
	};
	uint32_t params[3][3] = { { 0, 5, N }, { 0 }, { 0, 7, 4 } }, first, last, after[4];
	struct queue q;

	RADIANCE_SKIP_ON_SOC();
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, N * 4, 0, &big));
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, sizeof(after), 0, &small));
	params[0][0] = big.device_address;
	params[2][0] = small.device_address;
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	/* The long fill, a launch that faults and a fill behind it, published
	 * at once: the device is given them as the kernel takes them, and it
	 * would run the last one after the fault. */
	for (int i = 0; i < 3; i++) {
		struct radiance_launch_packet p = {
			.header = { .kind = RADIANCE_PACKET_LAUNCH_DESC }, .block = self->host,
			.block_offset = 128 * i, .block_size = sizeof(d[i]),
		};

		d[i].params_offset = PARAMS + 64 * i;
		memcpy(self->h + 128 * i, &d[i], sizeof(d[i]));
		memcpy(self->h + PARAMS + 64 * i, params[i], sizeof(params[i]));
		queue_put(&q, &p);
	}
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(1, q.ctl->fault_index);
	EXPECT_EQ(1, q.ctl->read_index) TH_LOG("the fill before the fault completed");
	EXPECT_EQ(0x10000000u, q.ctl->err_pc);
	queue_close(&q);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	ASSERT_EQ(0, queue_read_vram(&q, big.handle, 0, &first, 4));
	ASSERT_EQ(0, queue_read_vram(&q, big.handle, 4 * (N - 1), &last, 4));
	EXPECT_EQ(5, first);
	EXPECT_EQ(5, last);
	ASSERT_EQ(0, queue_read_vram(&q, small.handle, 0, after, sizeof(after)));
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(0, after[i]) TH_LOG("element %d: the launch after the fault ran", i);
	}
	queue_close(&q);
}

/*
 * radiance-fuzz found it: the kernel counted a launch's threads as the
 * product of its six dimensions, which overflows a u64 (2^192 at most) and,
 * with Rust's overflow checks, panicked the kernel in the scheduler's work
 * item. The count saturates now; the launch runs its `count` threads.
 */
TEST_F(launch, a_launch_of_more_threads_than_a_u64_counts_runs)
{
	struct radiance_launch_desc d = desc(RADIANCE_BUILTIN_START, RADIANCE_BUILTIN_FILL_U32, 3, 1, 1);
	struct radiance_bo_create dst;
	uint32_t params[3] = { 0, 9, 4 }, got[5];
	struct queue q;

	RADIANCE_SKIP_ON_SOC();
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, sizeof(got), 0, &dst));
	params[0] = dst.device_address;
	for (int i = 0; i < 3; i++) {
		d.grid[i] = UINT32_MAX;
		d.block[i] = UINT32_MAX;
	}
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	put_launch(&q, self, &d, params, 0, 0);
	queue_publish(&q);
	/* A dialect with narrower fields than u32 cannot encode it: EINVAL. */
	if (queue_drain(&q) == RADIANCE_QUEUE_FAULTED) {
		EXPECT_EQ(EINVAL, q.ctl->error);
		queue_close(&q);
		return;
	}
	queue_close(&q);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	ASSERT_EQ(0, queue_read_vram(&q, dst.handle, 0, got, sizeof(got)));
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(9, got[i]) TH_LOG("element %d", i);
	}
	EXPECT_EQ(0, got[4]) TH_LOG("only `count` threads ran");
	queue_close(&q);
}

TEST_F(launch, every_field_is_checked)
{
	struct radiance_bo_create sc;
	struct radiance_launch_desc good = desc(RADIANCE_BUILTIN_START, RADIANCE_BUILTIN_SPIN, 0, 1, 1), d;
	struct radiance_launch_packet p = {
		.header = { .kind = RADIANCE_PACKET_LAUNCH_DESC }, .block = self->host,
		.block_size = sizeof(good),
	};
	int stack = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, &sc);

	ASSERT_LT(0, stack);
	/* The descriptor's size is its struct's. */
	memcpy(self->h, &good, sizeof(good));
	p.block_size = sizeof(good) - 8;
	expect_fault(_metadata, self->fd, &p, EINVAL, NULL);
	p.block_size = sizeof(good);
#define BAD(field, value, error)                                          \
	do {                                                              \
		d = good;                                                 \
		d.field = value;                                          \
		memcpy(self->h, &d, sizeof(d));                           \
		expect_fault(_metadata, self->fd, &p, error, NULL);       \
	} while (0)
	BAD(grid[1], 0, EINVAL);
	BAD(block[2], 0, EINVAL);
	BAD(regs_per_thread, 0, EINVAL);
	BAD(pad, 1, EINVAL);
	BAD(pad1, 1, EINVAL);
	/* Params past their BO's end; a handle that does not exist. */
	BAD(params_size, 4096, EINVAL);
	BAD(params, 999, ENOENT);
	/* The stack must be a VRAM range of at least a word; none means none. */
	BAD(stack, self->host, EINVAL);
	BAD(stack_offset, 8, EINVAL);
	d = good;
	d.stack = stack;
	d.stack_size = 2;
	memcpy(self->h, &d, sizeof(d));
	expect_fault(_metadata, self->fd, &p, EINVAL, NULL);
	d.stack_size = 8192;
	memcpy(self->h, &d, sizeof(d));
	expect_fault(_metadata, self->fd, &p, EINVAL, NULL);
	BAD(tls, 999, ENOENT);
#undef BAD
}

TEST_HARNESS_MAIN
