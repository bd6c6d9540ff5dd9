/* SPDX-License-Identifier: GPL-2.0 */
/* A user-mode queue for the Radiance kselftests: its ring and control block
 * mapped, packets written and published as a process does it. */
#ifndef RADIANCE_QUEUE_H
#define RADIANCE_QUEUE_H

#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"

struct queue {
	int fd;
	uint32_t id;
	uint32_t packets;
	struct radiance_packet *ring;
	struct radiance_queue_control *ctl;
	uint64_t written;
};

static inline int queue_open(int fd, uint32_t packets, struct queue *q)
{
	struct radiance_queue_create c = { .ring_packets = packets };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_CREATE, &c);

	if (ret)
		return ret;
	memset(q, 0, sizeof(*q));
	q->fd = fd;
	q->id = c.queue_id;
	q->packets = packets;
	q->ring = mmap(NULL, packets * RADIANCE_PACKET_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       c.ring_offset);
	q->ctl = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.control_offset);
	return q->ring == MAP_FAILED || q->ctl == MAP_FAILED ? -ENOMEM : 0;
}

static inline void queue_close(struct queue *q)
{
	struct radiance_queue_destroy d = { .queue_id = q->id };

	munmap(q->ring, q->packets * RADIANCE_PACKET_SIZE);
	munmap(q->ctl, getpagesize());
	radiance_ioctl(q->fd, RADIANCE_IOCTL_QUEUE_DESTROY, &d);
}

/* Kicks only when the scheduler asked for it; returns whether it did. */
static inline int queue_publish(struct queue *q)
{
	struct radiance_queue_kick kick = { .queue_id = q->id };

	atomic_store_explicit((_Atomic uint64_t *)&q->ctl->write_index, q->written, memory_order_seq_cst);
	if (atomic_load_explicit((_Atomic uint32_t *)&q->ctl->needs_kick, memory_order_seq_cst)) {
		radiance_ioctl(q->fd, RADIANCE_IOCTL_QUEUE_KICK, &kick);
		return 1;
	}
	return 0;
}

/* Writes one packet (waiting for ring space) without publishing it. */
static inline void queue_put(struct queue *q, const void *packet)
{
	while (q->written - atomic_load((_Atomic uint64_t *)&q->ctl->read_index) >= q->packets) {
		queue_publish(q);
		usleep(100);
	}
	memcpy(&q->ring[q->written % q->packets], packet, RADIANCE_PACKET_SIZE);
	q->written++;
}

/* Waits until every written packet completed, or the queue faulted and
 * the packets before the fault completed, or CLOCK_MONOTONIC `deadline_ns`
 * passed; returns the queue status. */
static inline uint32_t queue_drain_until(struct queue *q, int64_t deadline_ns)
{
	while (radiance_now_ns() < deadline_ns) {
		uint64_t done = atomic_load((_Atomic uint64_t *)&q->ctl->read_index);

		if (atomic_load((_Atomic uint32_t *)&q->ctl->status) != RADIANCE_QUEUE_ACTIVE &&
		    done == q->ctl->fault_index)
			break;
		if (done == q->written)
			break;
		usleep(100);
	}
	return q->ctl->status;
}

/* queue_drain_until() 10 s from now. */
static inline uint32_t queue_drain(struct queue *q)
{
	return queue_drain_until(q, radiance_now_ns() + 10 * 1000000000LL);
}

/* Moves `size` bytes between `buf` and VRAM BO `bo` at `off` through a new
 * HOST BO, by a COPY on `q` after everything before it, and waits for it:
 * how a test reaches VRAM that the CPU may not be able to map (gluon-sim
 * mode). 0 or -errno. */
static inline int queue_vram_io(struct queue *q, uint32_t bo, uint64_t off, void *buf, size_t size, int to_vram)
{
	struct radiance_bo_create c;
	int h = radiance_bo_create(q->fd, RADIANCE_PLACEMENT_HOST, size, RADIANCE_BO_MAPPABLE, &c);
	struct radiance_copy_packet p = {
		.header = { .kind = RADIANCE_PACKET_COPY, .flags = RADIANCE_PACKET_BARRIER },
		.src = to_vram ? (uint32_t)h : bo, .dst = to_vram ? bo : (uint32_t)h,
		.src_offset = to_vram ? 0 : off, .dst_offset = to_vram ? off : 0, .size = size,
	};
	uint8_t *m;
	int ret = 0;

	if (h < 0)
		return h;
	m = mmap(NULL, c.size, PROT_READ | PROT_WRITE, MAP_SHARED, q->fd, c.mmap_offset);
	if (m == MAP_FAILED) {
		ret = -errno;
		radiance_bo_destroy(q->fd, h);
		return ret;
	}
	if (to_vram)
		memcpy(m, buf, size);
	queue_put(q, &p);
	queue_publish(q);
	if (queue_drain(q) != RADIANCE_QUEUE_ACTIVE)
		ret = -EIO;
	else if (!to_vram)
		memcpy(buf, m, size);
	munmap(m, c.size);
	radiance_bo_destroy(q->fd, h);
	return ret;
}

/* Reads `size` bytes at `off` of VRAM BO `bo` into `out` (see above). */
static inline int queue_read_vram(struct queue *q, uint32_t bo, uint64_t off, void *out, size_t size)
{
	return queue_vram_io(q, bo, off, out, size, 0);
}

/* Writes `size` bytes of `in` at `off` of VRAM BO `bo` (see above). */
static inline int queue_write_vram(struct queue *q, uint32_t bo, uint64_t off, const void *in, size_t size)
{
	return queue_vram_io(q, bo, off, (void *)in, size, 1);
}

/* A NOP (with packet `flags`). */
static inline void queue_nop(struct queue *q, uint8_t flags)
{
	struct radiance_packet p = { .header = { .kind = RADIANCE_PACKET_NOP, .flags = flags } };

	queue_put(q, &p);
}

/* A WAIT_SEMAPHORE or SIGNAL_SEMAPHORE (`kind`) of `handle` at `value`;
 * `skip` packets after a failed wait are skipped with SKIP_ON_FAILURE. */
static inline void queue_sem(struct queue *q, uint8_t kind, uint8_t flags, uint32_t handle, uint64_t value,
			     uint32_t skip)
{
	struct radiance_semaphore_packet p = {
		.header = { .kind = kind, .flags = flags }, .handle = handle, .value = value, .skip = skip,
	};

	queue_put(q, &p);
}

/* A LAUNCH of built-in `pc` with `nparams` u32 params over `grid` blocks of
 * `block` threads, its launch block at the start of HOST BO `blk_handle`
 * (mapped at `blk`). */
static inline void queue_launch(struct queue *q, uint32_t blk_handle, uint8_t *blk, uint32_t pc,
				const uint32_t *params, uint32_t nparams, uint16_t grid, uint16_t block)
{
	struct radiance_launch_block b = {
		.entry_pc = pc, .grid = { grid, 1, 1 }, .block = { block, 1, 1 },
		.params_size = nparams * 4,
	};
	struct radiance_launch_packet p = {
		.header = { .kind = RADIANCE_PACKET_LAUNCH }, .block = blk_handle,
		.block_offset = 0, .block_size = sizeof(b) + nparams * 4,
	};

	memcpy(blk, &b, sizeof(b));
	memcpy(blk + sizeof(b), params, nparams * 4);
	queue_put(q, &p);
}

/* Submits `before`, then `packet`, on a fresh queue, checks that the queue
 * faults at `packet` with `error` once `before` completed, and returns the
 * fault. */
static inline void expect_fault_after(struct __test_metadata *_metadata, int fd, const void *before,
				      const void *packet, uint32_t error, struct radiance_queue_query *out)
{
	struct radiance_queue_query query = { 0 };
	struct queue q, other;

	ASSERT_EQ(0, queue_open(fd, 16, &q));
	ASSERT_EQ(0, queue_open(fd, 16, &other));
	queue_put(&q, before);
	queue_put(&q, packet);
	queue_nop(&q, 0);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(error, q.ctl->error);
	EXPECT_EQ(1, q.ctl->fault_index);
	EXPECT_EQ(1, q.ctl->read_index) TH_LOG("the packet before completed");
	query.queue_id = q.id;
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_QUERY, &query));
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, query.status);
	EXPECT_EQ(error, query.error);
	EXPECT_EQ(1, query.fault_index);
	if (out)
		*out = query;
	/* Another queue of the same file goes on. */
	queue_nop(&other, 0);
	queue_publish(&other);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&other));
	EXPECT_EQ(1, other.ctl->read_index);
	queue_close(&q);
	queue_close(&other);
}

/* Submits `packet` alone (behind a NOP) on a fresh queue and returns the
 * queue's fault. */
static inline void expect_fault(struct __test_metadata *_metadata, int fd, const void *packet,
				uint32_t error, struct radiance_queue_query *out)
{
	struct radiance_packet nop = { .header = { .kind = RADIANCE_PACKET_NOP } };

	expect_fault_after(_metadata, fd, &nop, packet, error, out);
}

/* A queue of `fd` waits twice on `handle` (a semaphore or an alias at 1 or
 * more, its value at `offset` of the value page): the second wait is
 * answered from the page. Then `handle` is destroyed and a new semaphore at
 * 5 takes its slot: a third wait on the old handle must still fault the
 * queue with ENOENT, not read the slot's new owner. */
static inline void expect_wait_after_its_slot_is_reused_faults(struct __test_metadata *_metadata, int fd,
							       uint32_t handle, uint64_t offset)
{
	struct radiance_sem_create reuse = { .initial = 5 };
	struct queue q;

	ASSERT_EQ(0, queue_open(fd, 16, &q));
	/* Looked up under the table, then answered from the page. */
	queue_sem(&q, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, handle, 1, 0);
	queue_sem(&q, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, handle, 1, 0);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	ASSERT_EQ(2, q.ctl->read_index);
	ASSERT_EQ(0, radiance_sem_destroy(fd, handle));
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &reuse));
	ASSERT_EQ(offset, reuse.value_offset) TH_LOG("the new semaphore has the destroyed handle's slot");
	queue_sem(&q, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, handle, 1, 0);
	queue_publish(&q);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(ENOENT, q.ctl->error);
	EXPECT_EQ(2, q.ctl->fault_index);
	queue_close(&q);
}

#endif
