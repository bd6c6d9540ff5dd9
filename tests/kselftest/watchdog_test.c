// SPDX-License-Identifier: GPL-2.0
/*
 * The watchdog resets the device for a command that stopped moving, not for
 * one that is slow: on an emulated device throttled to stand for a slow one
 * (emulated_throttle_us), a 64 MiB fill and a grid of a million threads, each
 * many times the launch timeout long, complete without a reset, while a SPIN,
 * which never moves, is reset within the timeout and one more look. Reloads
 * the module (as radiance_module.h does) and leaves it loaded as it found it.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "radiance_test.h"
#include "radiance_queue.h"
#include "radiance_module.h"

/* What the emulated device sleeps after each step of a command: 64 KiB of
 * a copy or fill, or 1024 threads of a launch. */
#define THROTTLE_US 1000
#define STEP_BYTES (64 << 10)
#define STEP_THREADS 1024
#define FILL_BYTES (64ull << 20)
/* The fill's BO takes all of it, with room for the rest of the tests. */
#define VRAM_MIB 128
#define GRID_THREADS (1 << 20)

/* A FILL of `size` bytes of `bo` with the 4-byte `pattern`. */
static void fill(struct queue *q, uint32_t bo, uint64_t size, uint32_t pattern)
{
	struct radiance_fill_packet p = {
		.header = { .kind = RADIANCE_PACKET_FILL }, .dst = bo, .pattern_size = 4,
		.size = size, .pattern = pattern,
	};

	queue_put(q, &p);
}

/* The kernel log from now on, read by kmsg_find(). */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* The first record of `kmsg` since kmsg_open() that holds `text`, into
 * `out`; 0, or -1 if there is none. */
static int kmsg_find(int kmsg, const char *text, char *out, size_t len)
{
	ssize_t n;

	while ((n = read(kmsg, out, len - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		out[n] = '\0';
		if (strstr(out, text))
			return 0;
	}
	return -1;
}

/* While queue `queue`'s fill runs: debugfs `streams` shows its command at
 * its stream's head, moving, and radctl queues shows how far it got. In
 * gluon-sim mode the fill is copies of 1 MiB from a pattern source. */
static void expect_progress_shown(struct __test_metadata *_metadata, uint32_t queue, int64_t step_ns)
{
	const char *streams = "/sys/kernel/debug/radiance/radiance0/streams";
	int64_t first, later;
	char match[32], out[4096];

	snprintf(match, sizeof(match), " queue=%u ", queue);
	/* Taken from the ring and given to the device within a few steps. */
	for (int i = 0; i < 100 && radiance_line_field(streams, match, "done") < 0; i++)
		usleep(step_ns / 1000);
	first = radiance_line_field(streams, match, "done");
	ASSERT_LE(0, first) TH_LOG("the fill is at no stream's head");
	EXPECT_GT(RADIANCE_TEST_TIMEOUT_MS, radiance_line_field(streams, match, "still_ms"));
	if (radiance_line_field(streams, match, "units") == (int64_t)FILL_BYTES) {
		/* One command: its count grows. */
		usleep(8 * step_ns / 1000);
		later = radiance_line_field(streams, match, "done");
		EXPECT_LT(first, later) TH_LOG("eight steps later, done still %lld", (long long)first);
	}
	ASSERT_LT(0, radiance_radctl("queues", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, " bytes, moved ")) TH_LOG("%s", out);
}

FIXTURE(slow)
{
	int fd;
	struct queue q;
	/* CLOCK_MONOTONIC ns one throttled step took, as measured here. */
	int64_t step_ns;
};

FIXTURE_SETUP(slow)
{
	char extra[64];
	int64_t start;
	int bo;

	snprintf(extra, sizeof(extra), "emulated_throttle_us=%d", THROTTLE_US);
	ASSERT_EQ(0, unload());
	ASSERT_EQ(0, load_module(VRAM_MIB, RADIANCE_TEST_TIMEOUT_MS, extra));
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, queue_open(self->fd, 16, &self->q));
	/* What a step costs on this machine, throttled: the bound of every
	 * wait below is the work times this, so that a slow or busy machine
	 * only waits longer. */
	bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 16 * STEP_BYTES, 0, NULL);
	ASSERT_LT(0, bo);
	start = radiance_now_ns();
	fill(&self->q, bo, 16 * STEP_BYTES, 1);
	queue_publish(&self->q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&self->q));
	self->step_ns = (radiance_now_ns() - start) / 16;
	TH_LOG("one throttled step took %lld us", (long long)self->step_ns / 1000);
	ASSERT_EQ(0, radiance_bo_destroy(self->fd, bo));
}

FIXTURE_TEARDOWN(slow)
{
	queue_close(&self->q);
	close(self->fd);
	EXPECT_EQ(0, unload());
	EXPECT_EQ(0, load());
}

/* The deadline for `steps` throttled steps: four times what they cost
 * here, and a timeout's worth on top. */
static int64_t deadline_for(int64_t step_ns, int64_t steps)
{
	return radiance_now_ns() + 4 * steps * step_ns + 4 * RADIANCE_TEST_TIMEOUT_MS * 1000000LL;
}

TEST_F(slow, a_fill_many_timeouts_long_that_moves_is_not_reset)
{
	const int64_t steps = FILL_BYTES / STEP_BYTES;
	int64_t resets = radiance_mem_stat("device_resets"), start;
	uint32_t first = 0, last = 0;
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, FILL_BYTES, 0, NULL);

	ASSERT_LT(0, bo);
	/* Throttled, it cannot be quicker than this: it proves nothing if
	 * it fits in one timeout. */
	ASSERT_LT(2 * RADIANCE_TEST_TIMEOUT_MS * 1000LL, steps * THROTTLE_US);
	start = radiance_now_ns();
	fill(&self->q, bo, FILL_BYTES, 0x5a5a5a5a);
	queue_publish(&self->q);
	expect_progress_shown(_metadata, self->q.id, self->step_ns);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain_until(&self->q, deadline_for(self->step_ns, steps)))
		TH_LOG("error %u: reset while it moved", self->q.ctl->error);
	EXPECT_EQ(self->q.written, self->q.ctl->read_index) TH_LOG("not done in four times its measured cost");
	TH_LOG("the fill took %lld ms, timeout %d ms", (long long)(radiance_now_ns() - start) / 1000000,
	       RADIANCE_TEST_TIMEOUT_MS);
	EXPECT_EQ(resets, radiance_mem_stat("device_resets"));
	ASSERT_EQ(0, queue_read_vram(&self->q, bo, 0, &first, 4));
	ASSERT_EQ(0, queue_read_vram(&self->q, bo, FILL_BYTES - 4, &last, 4));
	EXPECT_EQ(0x5a5a5a5au, first);
	EXPECT_EQ(0x5a5a5a5au, last);
}

TEST_F(slow, a_grid_many_timeouts_long_that_moves_is_not_reset)
{
	const int64_t steps = GRID_THREADS / STEP_THREADS;
	struct radiance_bo_create dst, blk;
	int64_t resets = radiance_mem_stat("device_resets");
	uint32_t params[3] = { 0, 7, GRID_THREADS }, first = 0, last = 0;
	uint8_t *b;

	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, GRID_THREADS * 4, 0, &dst));
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &blk));
	b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, blk.mmap_offset);
	ASSERT_NE(MAP_FAILED, b);
	ASSERT_LT(2 * RADIANCE_TEST_TIMEOUT_MS * 1000LL, steps * THROTTLE_US);
	params[0] = dst.device_address;
	queue_launch(&self->q, blk.handle, b, RADIANCE_BUILTIN_FILL_U32, params, 3, GRID_THREADS / 256, 256);
	queue_publish(&self->q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain_until(&self->q, deadline_for(self->step_ns, steps)))
		TH_LOG("error %u: reset while it moved", self->q.ctl->error);
	EXPECT_EQ(self->q.written, self->q.ctl->read_index) TH_LOG("not done in four times its measured cost");
	EXPECT_EQ(resets, radiance_mem_stat("device_resets"));
	ASSERT_EQ(0, queue_read_vram(&self->q, dst.handle, 0, &first, 4));
	ASSERT_EQ(0, queue_read_vram(&self->q, dst.handle, GRID_THREADS * 4 - 4, &last, 4));
	EXPECT_EQ(7u, first);
	EXPECT_EQ(7u, last);
	munmap(b, 4096);
}

TEST_F(slow, a_spin_that_never_moves_is_reset_and_says_for_how_long)
{
	struct radiance_bo_create blk;
	int64_t resets = radiance_mem_stat("device_resets"), start, took_ms;
	int kmsg = kmsg_open();
	long still_ms = -1;
	char record[512];
	const char *at;
	uint8_t *b;

	ASSERT_LE(0, kmsg);
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &blk));
	b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, blk.mmap_offset);
	ASSERT_NE(MAP_FAILED, b);
	start = radiance_now_ns();
	queue_launch(&self->q, blk.handle, b, RADIANCE_BUILTIN_SPIN, NULL, 0, 1, 1);
	queue_publish(&self->q);
	/* Caught within the timeout and one more look: two timeouts, and
	 * what a step costs here for the work the reset waits for. */
	ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain_until(&self->q, deadline_for(self->step_ns, 1)));
	took_ms = (radiance_now_ns() - start) / 1000000;
	EXPECT_EQ(ETIMEDOUT, self->q.ctl->error);
	EXPECT_LE(RADIANCE_TEST_TIMEOUT_MS, took_ms) TH_LOG("reset before the timeout");
	EXPECT_EQ(resets + 1, radiance_mem_stat("device_resets"));
	/* The reset says how long the command stood still, and what it was. */
	ASSERT_EQ(0, kmsg_find(kmsg, "no progress for", record, sizeof(record)));
	at = strstr(record, "no progress for ");
	still_ms = strtol(at + strlen("no progress for "), NULL, 10);
	EXPECT_LE(RADIANCE_TEST_TIMEOUT_MS, still_ms) TH_LOG("%s", record);
	EXPECT_NE(NULL, strstr(record, "launch of 1 threads, 0 done")) TH_LOG("%s", record);
	munmap(b, 4096);
	close(kmsg);
}

TEST_HARNESS_MAIN
