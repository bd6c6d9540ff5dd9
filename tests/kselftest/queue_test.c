// SPDX-License-Identifier: GPL-2.0
/*
 * User-mode queues on the emulated Gluon: packets written to mapped rings,
 * doorbells only when asked for, FILL/COPY/LAUNCH results byte-exact, faults
 * that stop only their queue, many queues and processes, and cleanup.
 */
#define _GNU_SOURCE
#include <linux/udmabuf.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"
#include "radiance_queue.h"

static void fill(struct queue *q, uint32_t bo, uint64_t off, uint64_t size, uint32_t pattern, uint32_t psize)
{
	struct radiance_fill_packet p = {
		.header = { .kind = RADIANCE_PACKET_FILL }, .dst = bo, .pattern_size = psize,
		.dst_offset = off, .size = size, .pattern = pattern,
	};

	queue_put(q, &p);
}

static void copy(struct queue *q, uint32_t src, uint64_t src_off, uint32_t dst, uint64_t dst_off, uint64_t size)
{
	struct radiance_copy_packet p = {
		.header = { .kind = RADIANCE_PACKET_COPY }, .src = src, .dst = dst,
		.src_offset = src_off, .dst_offset = dst_off, .size = size,
	};

	queue_put(q, &p);
}

FIXTURE(q)
{
	int fd;
};

FIXTURE_SETUP(q)
{
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(q)
{
	close(self->fd);
}

TEST_F(q, nops_complete_and_the_idle_scheduler_asks_for_a_kick)
{
	struct queue q;
	int kicks = 0;

	ASSERT_EQ(0, queue_open(self->fd, 64, &q));
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 50; i++)
			queue_nop(&q, i % 7 ? 0 : RADIANCE_PACKET_BARRIER);
		kicks += queue_publish(&q);
		ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
		EXPECT_EQ(q.written, q.ctl->read_index);
	}
	/* At most one kick per burst of 50; a burst published while the
	 * scheduler was still busy needed none. */
	EXPECT_LE(kicks, 10);
	EXPECT_LE(1, kicks);
	usleep(10000);
	EXPECT_EQ(1, q.ctl->needs_kick);
	queue_close(&q);
}

/*
 * A queue whose control block asks for the doorbell is looked at only once
 * it rings: the passes that serve other queues skip it (an idle queue costs
 * them nothing). A packet published there without the kick waits for it.
 */
TEST_F(q, a_queue_asking_for_kicks_is_looked_at_only_once_its_doorbell_rings)
{
	struct radiance_queue_kick kick;
	struct queue idle, busy;
	int i;

	ASSERT_EQ(0, queue_open(self->fd, 16, &idle));
	ASSERT_EQ(0, queue_open(self->fd, 64, &busy));
	queue_nop(&idle, 0);
	queue_publish(&idle);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&idle));
	for (i = 0; i < 10000 && !idle.ctl->needs_kick; i++)
		usleep(100);
	ASSERT_EQ(1, idle.ctl->needs_kick) TH_LOG("the scheduler went idle");
	queue_nop(&idle, 0);
	atomic_store_explicit((_Atomic uint64_t *)&idle.ctl->write_index, idle.written, memory_order_seq_cst);
	for (int round = 0; round < 10; round++) {
		for (i = 0; i < 20; i++)
			queue_nop(&busy, 0);
		queue_publish(&busy);
		ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&busy));
	}
	EXPECT_EQ(idle.written - 1, idle.ctl->read_index) TH_LOG("taken without its kick");
	EXPECT_EQ(1, idle.ctl->needs_kick);
	kick = (struct radiance_queue_kick){ .queue_id = idle.id };
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_KICK, &kick));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&idle));
	EXPECT_EQ(idle.written, idle.ctl->read_index);
	queue_close(&idle);
	queue_close(&busy);
}

TEST_F(q, fills_are_byte_exact)
{
	struct queue q;
	uint8_t got[8192], want[8192];
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 8192, 0, NULL);

	ASSERT_LT(0, bo);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	memset(want, 0x11, 8192);
	ASSERT_EQ(0, queue_write_vram(&q, bo, 0, want, 8192));
	fill(&q, bo, 3, 1001, 0xab, 1);
	memset(want + 3, 0xab, 1001);
	fill(&q, bo, 2000, 4098, 0xbeef, 2);
	for (int i = 0; i < 4098; i += 2) {
		want[2000 + i] = 0xef;
		want[2001 + i] = 0xbe;
	}
	fill(&q, bo, 7000, 1188, 0x01020304, 4);
	for (int i = 0; i < 1188; i += 4)
		memcpy(want + 7000 + i, "\x04\x03\x02\x01", 4);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	ASSERT_EQ(0, queue_read_vram(&q, bo, 0, got, 8192));
	EXPECT_EQ(0, memcmp(want, got, 8192));
	queue_close(&q);
}

/* Fills `n` bytes of `p` with a pattern that depends on `seed`. */
static void pattern(uint8_t *p, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

TEST_F(q, copies_in_every_direction_at_odd_offsets)
{
	struct radiance_bo_create hc;
	const size_t size = 3 * 4096 + 123;
	struct queue q;
	uint8_t *host, got[3 * 4096 + 123], want[3 * 4096 + 123];
	int v = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 16384, 0, NULL);
	int v2 = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 16384, 0, NULL);
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 16384, RADIANCE_BO_MAPPABLE, &hc);

	ASSERT_LT(0, v);
	ASSERT_LT(0, v2);
	ASSERT_LT(0, h);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	host = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, hc.mmap_offset);
	ASSERT_NE(MAP_FAILED, host);

	/* HOST -> VRAM, across host pages. */
	pattern(host + 77, size, 1);
	copy(&q, h, 77, v, 5, size);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	pattern(want, size, 1);
	ASSERT_EQ(0, queue_read_vram(&q, v, 5, got, size));
	EXPECT_EQ(0, memcmp(want, got, size));
	/* VRAM -> VRAM. */
	copy(&q, v, 5, v2, 1000, size);
	/* VRAM -> HOST, after a barrier so it sees the copy above. */
	{
		struct radiance_copy_packet p = {
			.header = { .kind = RADIANCE_PACKET_COPY, .flags = RADIANCE_PACKET_BARRIER },
			.src = v2, .dst = h, .src_offset = 1000, .dst_offset = 9, .size = size,
		};

		queue_put(&q, &p);
	}
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	EXPECT_EQ(0, memcmp(want, host + 9, size));
	ASSERT_EQ(0, queue_read_vram(&q, v2, 1000, got, size));
	EXPECT_EQ(0, memcmp(want, got, size));
	queue_close(&q);
}

TEST_F(q, copy_from_an_imported_udmabuf)
{
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = 65536 };
	struct radiance_bo_import imp = { 0 };
	int memfd = memfd_create("radiance", MFD_ALLOW_SEALING), dev = open("/dev/udmabuf", O_RDWR);
	uint8_t *src, got[40000];
	struct queue q;
	int v;

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, ftruncate(memfd, create.size));
	ASSERT_EQ(0, fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK));
	src = mmap(NULL, create.size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	ASSERT_NE(MAP_FAILED, src);
	pattern(src, create.size, 7);
	create.memfd = memfd;
	imp.fd = ioctl(dev, UDMABUF_CREATE, &create);
	ASSERT_LE(0, imp.fd);
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_IMPORT, &imp));
	v = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 65536, 0, NULL);
	ASSERT_LT(0, v);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	copy(&q, imp.handle, 1234, v, 3, sizeof(got));
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	ASSERT_EQ(0, queue_read_vram(&q, v, 3, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(src + 1234, got, sizeof(got)));
	queue_close(&q);
	close(imp.fd);
	close(memfd);
	close(dev);
}

/* Whether the `n` bytes at `p` are all `byte`. */
static int all_bytes(const uint8_t *p, size_t n, uint8_t byte)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != byte)
			return 0;
	return 1;
}

/*
 * A copy spanning many pages and more than one of a HOST BO's contiguous
 * blocks (at most 2 MiB each), with partial words at both ends in the same
 * phase on both sides: byte-exact both ways, nothing written past either
 * end (nor into the VRAM BOs next to it), and fewer device commands than
 * pages (one per contiguous run; on a whole-word device, a few more for the
 * ends).
 */
TEST_F(q, merged_copies_cross_pages_and_blocks_and_keep_their_ends)
{
	const size_t bo_size = 3 << 20, size = (2 << 20) + 3 * 4096 + 123, pages = size / 4096;
	struct radiance_copy_packet to_host = {
		.header = { .kind = RADIANCE_PACKET_COPY, .flags = RADIANCE_PACKET_BARRIER },
		.src_offset = 5, .dst_offset = 9, .size = size,
	};
	struct radiance_bo_create hc, bc;
	uint8_t *host, *back, *got;
	int64_t before, commands;
	struct queue q;
	int below = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int v = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, bo_size, 0, NULL);
	int above = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, bo_size, RADIANCE_BO_MAPPABLE, &hc);
	int b = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, bo_size, RADIANCE_BO_MAPPABLE, &bc);

	ASSERT_LT(0, below);
	ASSERT_LT(0, v);
	ASSERT_LT(0, above);
	ASSERT_LT(0, h);
	ASSERT_LT(0, b);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	host = mmap(NULL, bo_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, hc.mmap_offset);
	back = mmap(NULL, bo_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, bc.mmap_offset);
	got = malloc(bo_size);
	ASSERT_NE(MAP_FAILED, host);
	ASSERT_NE(MAP_FAILED, back);
	ASSERT_NE(NULL, got);
	pattern(host, bo_size, 3);
	fill(&q, below, 0, 4096, 0xa5, 1);
	fill(&q, v, 0, bo_size, 0x5a, 1);
	fill(&q, above, 0, 4096, 0xa5, 1);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));

	/* HOST -> VRAM: offsets 1 and 5, the same phase in their words. */
	before = radiance_mem_stat("commands_issued");
	ASSERT_LE(0, before);
	copy(&q, h, 1, v, 5, size);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	commands = radiance_mem_stat("commands_issued") - before;
	TH_LOG("%zu pages copied in %lld device commands", pages, (long long)commands);
	EXPECT_LT(0, commands);
	EXPECT_GT((int64_t)pages / 4, commands);
	ASSERT_EQ(0, queue_read_vram(&q, v, 0, got, bo_size));
	EXPECT_TRUE(all_bytes(got, 5, 0x5a));
	EXPECT_EQ(0, memcmp(host + 1, got + 5, size));
	EXPECT_TRUE(all_bytes(got + 5 + size, bo_size - 5 - size, 0x5a));
	ASSERT_EQ(0, queue_read_vram(&q, below, 0, got, 4096));
	EXPECT_TRUE(all_bytes(got, 4096, 0xa5));
	ASSERT_EQ(0, queue_read_vram(&q, above, 0, got, 4096));
	EXPECT_TRUE(all_bytes(got, 4096, 0xa5));

	/* VRAM -> HOST: into a zeroed BO at offset 9 (phase 1 again). */
	to_host.src = v;
	to_host.dst = b;
	queue_put(&q, &to_host);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	EXPECT_TRUE(all_bytes(back, 9, 0));
	EXPECT_EQ(0, memcmp(host + 1, back + 9, size));
	EXPECT_TRUE(all_bytes(back + 9 + size, bo_size - 9 - size, 0));
	free(got);
	queue_close(&q);
}

/*
 * Copies to and from an imported udmabuf whose pages were faulted in one by
 * one between the pages of another memfd (so scattered: no run for a COPY
 * to merge), at offsets with partial words at the ends. Under 256 KiB, the
 * most swiotlb maps at once, since udmabuf's table does not split for it.
 */
TEST_F(q, copies_to_and_from_a_scattered_udmabuf)
{
	const size_t buf_size = 192 << 10, half = buf_size / 2, size = half - 4096 + 1;
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = buf_size };
	struct radiance_bo_import imp = { 0 };
	int memfd = memfd_create("radiance", MFD_ALLOW_SEALING), dev = open("/dev/udmabuf", O_RDWR);
	int spacer_fd = memfd_create("spacer", 0);
	uint8_t *buf, *spacer, *want = malloc(buf_size);
	int64_t before;
	struct queue q;
	int v;

	ASSERT_LE(0, dev);
	ASSERT_LE(0, spacer_fd);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, ftruncate(memfd, buf_size));
	ASSERT_EQ(0, ftruncate(spacer_fd, buf_size));
	ASSERT_EQ(0, fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK));
	buf = mmap(NULL, buf_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	spacer = mmap(NULL, buf_size, PROT_READ | PROT_WRITE, MAP_SHARED, spacer_fd, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_NE(MAP_FAILED, spacer);
	for (size_t page = 0; page < buf_size / 4096; page++) {
		buf[page * 4096] = 1;
		spacer[page * 4096] = 1;
	}
	pattern(buf, buf_size, 11);
	memcpy(want, buf, buf_size);
	create.memfd = memfd;
	imp.fd = ioctl(dev, UDMABUF_CREATE, &create);
	ASSERT_LE(0, imp.fd);
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_IMPORT, &imp));
	v = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, buf_size, 0, NULL);
	ASSERT_LT(0, v);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	/* Its first half (from byte 2) to VRAM byte 6, and back into its
	 * second half (byte half + 2), after a barrier. */
	copy(&q, imp.handle, 2, v, 6, size);
	{
		struct radiance_copy_packet p = {
			.header = { .kind = RADIANCE_PACKET_COPY, .flags = RADIANCE_PACKET_BARRIER },
			.src = v, .dst = imp.handle, .src_offset = 6, .dst_offset = half + 2, .size = size,
		};

		queue_put(&q, &p);
	}
	before = radiance_mem_stat("commands_issued");
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	TH_LOG("2 copies of %zu bytes in %lld device commands", size,
	       (long long)(radiance_mem_stat("commands_issued") - before));
	memcpy(want + half + 2, want + 2, size);
	EXPECT_EQ(0, memcmp(want, buf, buf_size));
	queue_close(&q);
	close(imp.fd);
	munmap(buf, buf_size);
	munmap(spacer, buf_size);
	close(memfd);
	close(spacer_fd);
	close(dev);
	free(want);
}

/* A LAUNCH of built-in `pc` with `params`, its block in HOST BO `blk`. */
TEST_F(q, vector_add_launch_checked_element_by_element)
{
	enum { N = 1000 };
	struct radiance_bo_create ac, bc, cc, kc;
	uint32_t a[N], b[N], c[N + 1];
	uint8_t *blk;
	struct queue q;
	int ha = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, N * 4, 0, &ac);
	int hb = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, N * 4, 0, &bc);
	int hc = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, N * 4 + 4096, 0, &cc);
	int hk = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);
	uint32_t params[4];

	RADIANCE_SKIP_ON_SOC();
	ASSERT_LT(0, ha);
	ASSERT_LT(0, hb);
	ASSERT_LT(0, hc);
	ASSERT_LT(0, hk);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	for (int i = 0; i < N; i++) {
		a[i] = i * 3;
		b[i] = 0xfffffff0u + i;
	}
	c[N] = 0x5a5a5a5a;
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	ASSERT_EQ(0, queue_write_vram(&q, ha, 0, a, sizeof(a)));
	ASSERT_EQ(0, queue_write_vram(&q, hb, 0, b, sizeof(b)));
	ASSERT_EQ(0, queue_write_vram(&q, hc, N * 4, &c[N], 4));
	params[0] = ac.device_address;
	params[1] = bc.device_address;
	params[2] = cc.device_address;
	params[3] = N;
	/* 4 blocks of 256 threads: 1024 threads, the last 24 do nothing. */
	queue_launch(&q, hk, blk, RADIANCE_BUILTIN_VECADD_U32, params, 4, 4, 256);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	ASSERT_EQ(0, queue_read_vram(&q, hc, 0, c, sizeof(c)));
	for (int i = 0; i < N; i++) {
		ASSERT_EQ((uint32_t)(i * 3 + 0xfffffff0u + i), c[i]) TH_LOG("element %d", i);
	}
	EXPECT_EQ(0x5a5a5a5au, c[N]) TH_LOG("past the count");
	queue_close(&q);
}

TEST_F(q, each_bad_packet_faults_only_its_queue)
{
	struct radiance_packet raw = { 0 };
	struct radiance_fill_packet f = { .header = { .kind = RADIANCE_PACKET_FILL }, .pattern_size = 4, .size = 4 };
	struct radiance_copy_packet c = { .header = { .kind = RADIANCE_PACKET_COPY }, .size = 16 };
	struct radiance_bo_create vc, hc;
	int v = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, &vc);
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, 0, &hc);
	int h2 = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, 0, NULL);

	ASSERT_LT(0, h2);
	/* No packet at all (kind 0). */
	expect_fault(_metadata, self->fd, &raw, EINVAL, NULL);
	/* A kind that does not exist. */
	raw.header.kind = 10;
	expect_fault(_metadata, self->fd, &raw, EINVAL, NULL);
	/* Reserved bits. */
	raw.header.kind = RADIANCE_PACKET_NOP;
	raw.header.reserved = 1;
	expect_fault(_metadata, self->fd, &raw, EINVAL, NULL);
	raw.header.reserved = 0;
	raw.body[6] = 1;
	expect_fault(_metadata, self->fd, &raw, EINVAL, NULL);
	raw.header.flags = 0x80;
	expect_fault(_metadata, self->fd, &raw, EINVAL, NULL);
	/* SKIP_ON_FAILURE belongs to WAIT_SEMAPHORE only. */
	raw.body[6] = 0;
	raw.header.flags = RADIANCE_PACKET_SKIP_ON_FAILURE;
	expect_fault(_metadata, self->fd, &raw, EINVAL, NULL);
	raw.header.flags = 0;
	/* A handle that is no BO of this file. */
	f.dst = v + 100;
	expect_fault(_metadata, self->fd, &f, ENOENT, NULL);
	/* Past the end of the BO. */
	f.dst = v;
	f.dst_offset = 4096 - 2;
	expect_fault(_metadata, self->fd, &f, EINVAL, NULL);
	/* A misaligned pattern. */
	f.dst_offset = 2;
	expect_fault(_metadata, self->fd, &f, EINVAL, NULL);
	/* Filling host memory: not a device operation. */
	f.dst = h;
	f.dst_offset = 0;
	expect_fault(_metadata, self->fd, &f, EINVAL, NULL);
	/* HOST to HOST, and overlapping ranges. */
	c.src = h;
	c.dst = h2;
	expect_fault(_metadata, self->fd, &c, EINVAL, NULL);
	c.src = v;
	c.dst = v;
	c.dst_offset = 8;
	expect_fault(_metadata, self->fd, &c, EINVAL, NULL);
}

/*
 * A SIGNAL_SEMAPHORE of a handle that names no semaphore faults its queue
 * at that packet, with ENOENT: taken at once (nothing before it on its
 * stream), where the handle is looked up only as it completes, and behind
 * a FILL, where it is looked up as it is taken.
 */
TEST_F(q, a_signal_of_a_handle_that_names_nothing_faults_at_it)
{
	struct radiance_semaphore_packet sig = {
		.header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE }, .handle = 999, .value = 1,
	};
	int v = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	struct radiance_fill_packet f = {
		.header = { .kind = RADIANCE_PACKET_FILL }, .dst = v, .pattern_size = 4, .size = 4096, .pattern = 1,
	};

	ASSERT_LT(0, v);
	expect_fault(_metadata, self->fd, &sig, ENOENT, NULL);
	expect_fault_after(_metadata, self->fd, &f, &sig, ENOENT, NULL);
}

/*
 * A WAIT_SEMAPHORE on the handle its queue's last wait looked up is
 * answered from the value page when its point is reached there; not once
 * the semaphore is destroyed and its slot has a new owner.
 */
TEST_F(q, a_wait_on_a_destroyed_semaphore_does_not_read_its_reused_slot)
{
	struct radiance_sem_create sem = { .initial = 1 };

	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_CREATE, &sem));
	expect_wait_after_its_slot_is_reused_faults(_metadata, self->fd, sem.handle, sem.value_offset);
}

TEST_F(q, a_bad_entry_pc_reports_err_pc)
{
	struct radiance_queue_query query;
	struct radiance_bo_create kc;
	struct radiance_launch_block b = { .entry_pc = 0x1234, .grid = { 1, 1, 1 }, .block = { 1, 1, 1 } };
	struct radiance_launch_packet p = { .header = { .kind = RADIANCE_PACKET_LAUNCH }, .block_size = sizeof(b) };
	int hk = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);
	uint8_t *blk;

	ASSERT_LT(0, hk);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	memcpy(blk, &b, sizeof(b));
	p.block = hk;
	expect_fault(_metadata, self->fd, &p, EIO, &query);
	EXPECT_EQ(1, query.err_code) TH_LOG("BAD_PC");
	EXPECT_EQ(0x1234, query.err_pc);
}

/*
 * After a spinning launch at packet `spin` of `a` and a fill of 0x600d into
 * word 0 of VRAM BO `bo` on `b`: `a` faulted there with ETIMEDOUT, `b` went
 * on, and the device was reset once since `resets`. Closes both queues.
 */
static void expect_spin_reset(struct __test_metadata *_metadata, struct queue *a, uint64_t spin, struct queue *b,
			      uint32_t bo, int64_t resets)
{
	uint32_t word;

	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(a));
	EXPECT_EQ(ETIMEDOUT, a->ctl->error);
	EXPECT_EQ(spin, a->ctl->fault_index);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(b));
	EXPECT_EQ(0, queue_read_vram(b, bo, 0, &word, 4));
	EXPECT_EQ(0x600du, word);
	EXPECT_EQ(resets + 1, radiance_mem_stat("device_resets"));
	queue_close(a);
	queue_close(b);
}

TEST_F(q, a_spinning_launch_times_out_resets_the_device_and_others_go_on)
{
	struct radiance_bo_create kc;
	struct queue a, b;
	uint8_t *blk;
	int64_t resets = radiance_mem_stat("device_resets");
	int hk = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);

	RADIANCE_SKIP_ON_SOC();
	RADIANCE_SKIP_ON_SIM("gluon-sim has no reset, and the sim-model's SPIN ends on its own before the watchdog "
			     "(user-job's reset cases test socket mode's resets)");
	ASSERT_LT(0, hk);
	ASSERT_LT(0, bo);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	queue_launch(&a, hk, blk, RADIANCE_BUILTIN_SPIN, NULL, 0, 1, 1);
	queue_nop(&a, 0);
	queue_publish(&a);
	usleep(20000);
	/* Queued behind the spinning kernel on the one device. */
	fill(&b, bo, 0, 4, 0x600d, 4);
	queue_publish(&b);
	expect_spin_reset(_metadata, &a, 0, &b, bo, resets);
}

/*
 * The emulated device runs one command at a time over all streams. A's long
 * copy runs with A's spinning launch behind it, and B's fill is queued behind
 * both while the copy runs: when the watchdog fires, B's fill has waited
 * longer than the launch has spun, but the launch is what hangs, and it alone
 * is reset.
 */
TEST_F(q, a_command_waiting_behind_another_streams_never_times_out)
{
	const uint64_t big = 16 << 20;
	struct radiance_bo_create kc;
	struct queue a, b;
	uint8_t *blk;
	int64_t resets = radiance_mem_stat("device_resets");
	int hk = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, big, 0, NULL);
	int dst = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, big, 0, NULL);
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);

	RADIANCE_SKIP_ON_SOC();
	if (radiance_served_by_bridge())
		SKIP(return, "a served device's server may run several streams at once: the kernel cannot tell "
			     "which command runs, and a command ages from when the server read it");
	ASSERT_LT(0, hk);
	ASSERT_LT(0, src);
	ASSERT_LT(0, dst);
	ASSERT_LT(0, bo);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	copy(&a, src, 0, dst, 0, big);
	queue_launch(&a, hk, blk, RADIANCE_BUILTIN_SPIN, NULL, 0, 1, 1);
	queue_publish(&a);
	fill(&b, bo, 0, 4, 0x600d, 4);
	queue_publish(&b);
	expect_spin_reset(_metadata, &a, 1, &b, bo, resets);
}

TEST_F(q, radctl_queues_shows_every_queue_and_its_fault)
{
	struct radiance_packet bad = { 0 };
	struct queue good, faulted;
	char out[4096];

	ASSERT_EQ(0, queue_open(self->fd, 32, &good));
	ASSERT_EQ(0, queue_open(self->fd, 16, &faulted));
	queue_nop(&faulted, 0);
	queue_put(&faulted, &bad);
	queue_publish(&faulted);
	ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&faulted));
	ASSERT_LT(0, radiance_radctl("queues kmod:0", out, sizeof(out)));
	TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "STREAM"));
	EXPECT_NE(NULL, strstr(out, "0/32")) TH_LOG("the good queue, nothing in flight");
	EXPECT_NE(NULL, strstr(out, "packet 1: Invalid argument")) TH_LOG("the fault");
	/* The only two queues on the device: the second goes to the idle stream. */
	ASSERT_LT(0, radiance_radctl("--json queues kmod:0", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"stream\":0,"));
	EXPECT_NE(NULL, strstr(out, "\"stream\":1,"));
	queue_close(&good);
	queue_close(&faulted);
}

static void counter(struct queue *q, uint8_t kind, uint32_t bo, uint64_t off, uint32_t which)
{
	struct radiance_counter_packet p = {
		.header = { .kind = kind }, .dst = bo, .counter = which, .dst_offset = off,
	};

	queue_put(q, &p);
}

TEST_F(q, timestamps_and_counters_land_in_vram_in_order)
{
	struct radiance_bo_create bc, hc;
	struct radiance_counter_packet bad = { .header = { .kind = RADIANCE_PACKET_READ_COUNTER }, .counter = 3 };
	struct queue q;
	uint64_t *v = MAP_FAILED;
	/* Mappable only where it can be: reading the counters needs it. */
	int mappable = radiance_vram_mappable();
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, mappable ? RADIANCE_BO_MAPPABLE : 0, &bc);
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, 0, &hc);

	ASSERT_LT(0, bo);
	ASSERT_LT(0, h);
	if (mappable) {
		v = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, bc.mmap_offset);
		ASSERT_NE(MAP_FAILED, v);
	}
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	counter(&q, RADIANCE_PACKET_TIMESTAMP, bo, 0, 0);
	counter(&q, RADIANCE_PACKET_READ_COUNTER, bo, 16, RADIANCE_COUNTER_COMMANDS);
	fill(&q, bo, 256, 1024, 7, 4);
	counter(&q, RADIANCE_PACKET_TIMESTAMP, bo, 8, 0);
	counter(&q, RADIANCE_PACKET_READ_COUNTER, bo, 24, RADIANCE_COUNTER_COMMANDS);
	queue_publish(&q);
	if (!(radiance_caps(self->fd) & RADIANCE_CAP_COUNTERS)) {
		/* A device without counters (gluon-sim) cannot run a valid
		 * counter packet: the queue stops at the first, EOPNOTSUPP. */
		ASSERT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
		EXPECT_EQ(EOPNOTSUPP, q.ctl->error);
		EXPECT_EQ(0, q.ctl->fault_index);
	} else {
		ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
		if (v == MAP_FAILED)
			SKIP(return, "counters read back need VRAM the CPU can map (RADIANCE_CAP_VRAM_MAPPABLE)");
		EXPECT_LT(0, v[0]);
		/* Not strictly: the test kernel's clock may tick in jiffies. */
		EXPECT_LE(v[0], v[1]) TH_LOG("the clock never goes back");
		EXPECT_LT(v[2], v[3]) TH_LOG("commands were counted");
	}
	queue_close(&q);
	/* A counter that does not exist, a TIMESTAMP naming one, a misaligned
	 * or host destination. */
	bad.dst = bo;
	expect_fault(_metadata, self->fd, &bad, EINVAL, NULL);
	bad.header.kind = RADIANCE_PACKET_TIMESTAMP;
	bad.counter = 1;
	expect_fault(_metadata, self->fd, &bad, EINVAL, NULL);
	bad.counter = 0;
	bad.dst_offset = 4;
	expect_fault(_metadata, self->fd, &bad, EINVAL, NULL);
	bad.dst_offset = 0;
	bad.dst = h;
	expect_fault(_metadata, self->fd, &bad, EINVAL, NULL);
}

TEST_F(q, device_printf_is_drained_to_host_memory)
{
	struct radiance_bo_create kc, oc;
	struct radiance_launch_block b = {
		.entry_pc = RADIANCE_BUILTIN_PRINTF_U32, .grid = { 2, 1, 1 }, .block = { 4, 1, 1 }, .params_size = 8,
	};
	struct radiance_printf_ring ring = { .limit = 512 };
	uint32_t params[2] = { 7, 5 };
	struct radiance_launch_packet p = { .header = { .kind = RADIANCE_PACKET_LAUNCH } };
	const char *want = "thread 0: 7\nthread 1: 8\nthread 2: 9\nthread 3: 10\nthread 4: 11\n";
	struct queue q;
	uint8_t *blk, *out;
	uint32_t len;
	int hk = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);
	int ho = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &oc);

	RADIANCE_SKIP_ON_SOC();
	RADIANCE_SKIP_ON_SIM(RADIANCE_SIM_PRINTF);
	ASSERT_LT(0, hk);
	ASSERT_LT(0, ho);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	out = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, oc.mmap_offset);
	ASSERT_NE(MAP_FAILED, out);
	/* A DMA address of the process's choosing is overwritten. */
	b.printf_host_addr = 0x1000;
	memcpy(blk, &b, sizeof(b));
	memcpy(blk + sizeof(b), params, sizeof(params));
	memcpy(blk + sizeof(b) + sizeof(params), &ring, sizeof(ring));
	p.block = hk;
	p.block_size = sizeof(b) + sizeof(params) + sizeof(ring) + ring.limit;
	p.printf = ho;
	p.printf_offset = 100;
	p.printf_size = 4 + ring.limit;
	memset(out, 0xee, 4096);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	queue_put(&q, &p);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	memcpy(&len, out + 100, 4);
	ASSERT_EQ(strlen(want), len);
	EXPECT_EQ(0, memcmp(want, out + 104, len));
	EXPECT_EQ(0xee, out[104 + len]) TH_LOG("nothing past the text");
	/* A printf buffer smaller than the ring can hold is refused. */
	p.printf_size = 4 + ring.limit - 1;
	queue_put(&q, &p);
	queue_publish(&q);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(EINVAL, q.ctl->error);
	queue_close(&q);
}

TEST_F(q, a_write_index_past_the_ring_faults)
{
	struct queue q;

	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	q.written = 17;
	queue_publish(&q);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(EINVAL, q.ctl->error);
	queue_close(&q);
}

TEST_F(q, bad_create_and_handles)
{
	struct radiance_queue_create c = { .ring_packets = 24 };
	struct radiance_queue_destroy d = { .queue_id = 999 };
	struct radiance_queue_query query = { .queue_id = 999 };

	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_CREATE, &c));
	c.ring_packets = 8;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_CREATE, &c));
	c.ring_packets = 1 << 17;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_CREATE, &c));
	c.ring_packets = 16;
	c.priority = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_CREATE, &c));
	c.priority = 0;
	c.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_CREATE, &c));
	EXPECT_EQ(-ENOENT, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_DESTROY, &d));
	EXPECT_EQ(-ENOENT, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_KICK, &d));
	EXPECT_EQ(-ENOENT, radiance_ioctl(self->fd, RADIANCE_IOCTL_QUEUE_QUERY, &query));
	EXPECT_EQ(0, radiance_mem_stat("queues"));
}

/* One process: 4 queues, `per_queue` FILL packets each writing its index
 * into the queue's own word; returns 0 if all completed in order. */
static int fill_storm(int per_queue)
{
	struct queue q[4];
	uint32_t word;
	int fd = radiance_open(0), bo;

	bo = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	if (bo < 0)
		return 1;
	for (int i = 0; i < 4; i++)
		if (queue_open(fd, 64, &q[i]))
			return 2;
	for (int n = 1; n <= per_queue; n++)
		for (int i = 0; i < 4; i++) {
			fill(&q[i], bo, i * 4, 4, n, 4);
			if (n % 16 == 0)
				queue_publish(&q[i]);
		}
	for (int i = 0; i < 4; i++) {
		queue_publish(&q[i]);
		if (queue_drain(&q[i]) != RADIANCE_QUEUE_ACTIVE || q[i].ctl->read_index != (uint64_t)per_queue)
			return 3;
		/* In order per queue: the last write wins. */
		if (queue_read_vram(&q[i], bo, i * 4, &word, 4) || word != (uint32_t)per_queue)
			return 4;
	}
	close(fd);
	return 0;
}

TEST(ten_thousand_packets_across_8_queues_in_2_processes)
{
	pid_t pid;
	int status, mine;

	RADIANCE_SKIP_ON_SIM("10,000 fills, each a round trip through the bridge and the sim: minutes under TCG");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(fill_storm(1250));
	mine = fill_storm(1250);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, mine);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(killing_a_process_mid_stream_leaves_nothing_behind)
{
	int ready[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = radiance_open(0);
		int a = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 1 << 20, 0, NULL);
		int b = radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 1 << 20, 0, NULL);
		struct queue q;

		if (b < 0 || queue_open(fd, 1024, &q))
			_exit(1);
		/* Keeps streaming until killed. */
		for (int i = 0;; i++) {
			copy(&q, i % 2 ? a : b, 0, i % 2 ? b : a, 0, 1 << 20);
			queue_publish(&q);
			if (i == 50 && write(ready[1], "x", 1) != 1)
				_exit(2);
		}
	}
	{
		char x;

		ASSERT_EQ(1, read(ready[0], &x, 1));
	}
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	for (int i = 0; i < 1000 && (radiance_mem_stat("commands_in_flight") || radiance_mem_stat("vram_bos")); i++)
		usleep(10000);
	EXPECT_EQ(0, radiance_mem_stat("commands_in_flight"));
	EXPECT_EQ(0, radiance_mem_stat("queues"));
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	EXPECT_EQ(0, radiance_mem_stat("host_pinned"));
	EXPECT_EQ(0, radiance_mem_stat("open_files"));
}

TEST(closing_with_packets_in_flight_leaves_nothing_behind)
{
	RADIANCE_SKIP_ON_SIM("4,000 copies of a MiB between VRAM, bounced a page at a time through the bridge, "
			     "cannot drain in the 10 s this allows");
	for (int round = 0; round < 20; round++) {
		int fd = radiance_open(0);
		int a = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 1 << 20, 0, NULL);
		int b = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 1 << 20, 0, NULL);
		struct queue q;

		ASSERT_EQ(0, queue_open(fd, 256, &q));
		for (int i = 0; i < 200; i++)
			copy(&q, i % 2 ? a : b, 0, i % 2 ? b : a, 0, 1 << 20);
		queue_publish(&q);
		munmap(q.ring, q.packets * RADIANCE_PACKET_SIZE);
		munmap(q.ctl, getpagesize());
		ASSERT_EQ(0, close(fd));
	}
	/* The device drains what was in flight, then frees it all. */
	for (int i = 0; i < 1000 && radiance_mem_stat("commands_in_flight"); i++)
		usleep(10000);
	EXPECT_EQ(0, radiance_mem_stat("commands_in_flight"));
	EXPECT_EQ(0, radiance_mem_stat("queues"));
	for (int i = 0; i < 1000 && radiance_mem_stat("vram_bos"); i++)
		usleep(10000);
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	EXPECT_EQ(0, radiance_mem_stat("open_files"));
}

TEST_F(q, queue_a_signals_and_queue_b_waits)
{
	struct radiance_bo_create bc;
	struct radiance_sem_signal sig;
	struct queue a, b;
	uint32_t *word;
	int s = radiance_sem_create(self->fd, 0);
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, RADIANCE_BO_MAPPABLE, &bc);

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, s);
	ASSERT_LT(0, bo);
	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, word);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	/* B first: it must not run its fill before A has signalled. */
	queue_sem(&b, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, s, 1, 0);
	fill(&b, bo, 0, 4, 2, 4);
	queue_publish(&b);
	usleep(50000);
	EXPECT_EQ(0, b.ctl->read_index);
	EXPECT_EQ(0, word[0]);
	fill(&a, bo, 0, 4, 1, 4);
	queue_sem(&a, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 1, 0);
	queue_publish(&a);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&a));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&b));
	EXPECT_EQ(2, word[0]) TH_LOG("B's fill ran after A's");
	EXPECT_EQ(1, radiance_sem_value(self->fd, s));
	/* A host signal unblocks a queue too. */
	queue_sem(&b, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, s, 5, 0);
	fill(&b, bo, 0, 4, 3, 4);
	queue_publish(&b);
	usleep(20000);
	EXPECT_EQ(2, word[0]);
	sig.handle = s;
	sig.pad = 0;
	sig.value = 5;
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_SIGNAL, &sig));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&b));
	EXPECT_EQ(3, word[0]);
	queue_close(&a);
	queue_close(&b);
}

/*
 * A packet with no device command (a NOP, a semaphore packet) completes as
 * soon as it is taken only when nothing is ahead of it on its stream: here
 * a 16 MiB fill is, still running when the signal behind it is taken.
 */
TEST_F(q, a_signal_behind_a_fill_is_reached_once_the_fill_is_done)
{
	const uint64_t size = 16 << 20;
	struct radiance_bo_create bc;
	struct queue q;
	uint32_t *words;
	int s = radiance_sem_create(self->fd, 0);
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, size, RADIANCE_BO_MAPPABLE, &bc);

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, s);
	ASSERT_LT(0, bo);
	words = mmap(NULL, size, PROT_READ, MAP_SHARED, self->fd, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, words);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	fill(&q, bo, 0, size, 0x5a5a5a5a, 4);
	queue_sem(&q, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 1, 0);
	queue_publish(&q);
	ASSERT_EQ(0, radiance_sem_wait_for(self->fd, s, 1));
	EXPECT_EQ(0x5a5a5a5a, words[size / 4 - 1]) TH_LOG("the signal was reached before the fill was done");
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	EXPECT_EQ(2, q.ctl->read_index);
	munmap(words, size);
	queue_close(&q);
}

TEST_F(q, a_queue_stopped_at_a_wait_needs_no_kick)
{
	struct radiance_sem_signal sig = { .value = 1 };
	struct queue q;
	int s = radiance_sem_create(self->fd, 0);

	ASSERT_LT(0, s);
	ASSERT_EQ(0, queue_open(self->fd, 64, &q));
	queue_sem(&q, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, s, 1, 0);
	queue_publish(&q);
	usleep(20000);
	/* Idle, but this queue waits on a semaphore: packets published behind
	 * the wait need no doorbell... */
	EXPECT_EQ(0, q.ctl->needs_kick);
	for (int i = 0; i < 40; i++) {
		queue_nop(&q, 0);
		EXPECT_EQ(0, queue_publish(&q)) TH_LOG("kicked behind a wait");
	}
	usleep(20000);
	EXPECT_EQ(0, q.ctl->read_index);
	/* ...because the semaphore's signal wakes the scheduler. */
	sig.handle = s;
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_SIGNAL, &sig));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
	EXPECT_EQ(41, q.ctl->read_index);
	usleep(10000);
	EXPECT_EQ(1, q.ctl->needs_kick);
	queue_close(&q);
}

/*
 * The scheduler clears a queue's needs_kick only while it serves that
 * queue: one it is not serving keeps asking, so what is published there
 * while another queue's launch runs rings the doorbell and is taken at
 * once, not when that launch ends (here it would never end: it spins).
 */
TEST_F(q, a_queue_not_served_while_a_launch_runs_still_asks_for_kicks)
{
	struct radiance_bo_create kc;
	struct queue a, b;
	uint8_t *blk;
	int hk = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);

	RADIANCE_SKIP_ON_SOC();
	RADIANCE_SKIP_ON_SIM("gluon-sim's launches end on their own: none spins for the test's length");
	ASSERT_LT(0, hk);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	queue_nop(&b, 0);
	queue_publish(&b);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&b));
	queue_launch(&a, hk, blk, RADIANCE_BUILTIN_SPIN, NULL, 0, 1, 1);
	queue_publish(&a);
	usleep(20000);
	/* a's launch is in the device; b was not served since it went idle. */
	EXPECT_EQ(0, a.ctl->read_index);
	EXPECT_EQ(0, a.ctl->needs_kick);
	EXPECT_EQ(1, b.ctl->needs_kick);
	queue_nop(&b, 0);
	EXPECT_EQ(1, queue_publish(&b));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&b));
	EXPECT_EQ(2, b.ctl->read_index);
	EXPECT_EQ(0, a.ctl->read_index) TH_LOG("b's NOP was taken only once the launch was done");
	/* Destroyed, a's launch is reset at once. */
	queue_close(&a);
	queue_close(&b);
}

TEST_F(q, a_failed_semaphore_fails_dependent_queues_and_their_signals)
{
	struct radiance_sem_fail fail;
	struct queue b;
	int s = radiance_sem_create(self->fd, 0), t = radiance_sem_create(self->fd, 0);

	ASSERT_LT(0, t);
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	queue_sem(&b, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, s, 1, 0);
	queue_nop(&b, 0);
	queue_sem(&b, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, 1, 0);
	queue_publish(&b);
	usleep(20000);
	fail.handle = s;
	fail.error = EHOSTDOWN;
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_FAIL, &fail));
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&b));
	EXPECT_EQ(EHOSTDOWN, b.ctl->error);
	EXPECT_EQ(0, b.ctl->fault_index);
	/* The waiter of what B was to signal gets the original error. */
	EXPECT_EQ(-EHOSTDOWN, radiance_sem_wait_for(self->fd, t, 1));
	queue_close(&b);
}

static void skip_wait(struct queue *q, uint32_t handle, uint64_t value, uint32_t skip)
{
	struct radiance_semaphore_packet p = {
		.header = { .kind = RADIANCE_PACKET_WAIT_SEMAPHORE, .flags = RADIANCE_PACKET_SKIP_ON_FAILURE },
		.handle = handle, .skip = skip, .value = value,
	};

	queue_put(q, &p);
}

TEST_F(q, a_failed_wait_with_skip_fails_only_its_submission)
{
	struct radiance_semaphore_packet no_flag = {
		.header = { .kind = RADIANCE_PACKET_WAIT_SEMAPHORE }, .skip = 1, .value = 1,
	};
	struct radiance_bo_create bc;
	struct radiance_sem_fail fail;
	struct queue b;
	uint32_t *word;
	int s = radiance_sem_create(self->fd, 0), t = radiance_sem_create(self->fd, 0);
	int u = radiance_sem_create(self->fd, 0);
	int bo = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, RADIANCE_BO_MAPPABLE, &bc);

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, u);
	ASSERT_LT(0, bo);
	no_flag.handle = u;
	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, word);
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	/* Submission 1: wait s, wait s again, fill word 1, signal t. Only its
	 * first packet is published when s fails: the skip covers packets the
	 * process writes afterwards. */
	skip_wait(&b, s, 1, 3);
	queue_publish(&b);
	usleep(20000);
	fail.handle = s;
	fail.error = EHOSTDOWN;
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_FAIL, &fail));
	usleep(20000);
	skip_wait(&b, s, 1, 2);
	fill(&b, bo, 4, 4, 0xbad, 4);
	queue_sem(&b, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, 1, 0);
	/* Submission 2 runs. */
	fill(&b, bo, 0, 4, 0x600d, 4);
	queue_sem(&b, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, u, 1, 0);
	queue_publish(&b);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&b));
	EXPECT_EQ(6, b.ctl->read_index);
	EXPECT_EQ(0, word[1]) TH_LOG("a skipped fill ran");
	EXPECT_EQ(0x600du, word[0]);
	EXPECT_EQ(-EHOSTDOWN, radiance_sem_wait_for(self->fd, t, 1));
	EXPECT_EQ(1, radiance_sem_value(self->fd, u));
	/* A skip count without the flag is refused. */
	queue_put(&b, &no_flag);
	queue_publish(&b);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&b));
	EXPECT_EQ(EINVAL, b.ctl->error);
	queue_close(&b);
}

TEST_F(q, a_faulting_queue_fails_what_it_was_to_signal)
{
	struct radiance_packet bad = { 0 };
	struct queue a;
	int u = radiance_sem_create(self->fd, 0);

	ASSERT_LT(0, u);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	queue_put(&a, &bad);
	queue_sem(&a, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, u, 1, 0);
	queue_publish(&a);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&a));
	EXPECT_EQ(-EINVAL, radiance_sem_wait_for(self->fd, u, 1));
	EXPECT_EQ(-EINVAL, radiance_sem_value(self->fd, u));
	queue_close(&a);
}

/* One stage of a chain: wait for `in` (0: none) to reach 1, fill the
 * stage's number into word 0 of `bo`, signal `out` to 1. */
static void chain_stage(struct queue *q, uint32_t in, uint32_t out, uint32_t bo, uint32_t n)
{
	if (in)
		queue_sem(q, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, in, 1, 0);
	fill(q, bo, 0, 4, n, 4);
	queue_sem(q, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, out, 1, 0);
	queue_publish(q);
}

/* Child of the chain test: stages 3 and 4 in its own file, fed by the
 * parent's stage 2 through a sync_file. 0 on success. */
static int chain_child(int sock)
{
	struct radiance_sem_import_sync_file imp = { .value = 1 };
	struct radiance_bo_create bc;
	struct queue q3, q4;
	uint32_t *word;
	int fd = radiance_open(0);
	int s3 = radiance_sem_create(fd, 0), s4 = radiance_sem_create(fd, 0), s5 = radiance_sem_create(fd, 0);
	int bo = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 4096, RADIANCE_BO_MAPPABLE, &bc);

	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, bc.mmap_offset);
	if (s5 < 0 || bo < 0 || word == MAP_FAILED || queue_open(fd, 16, &q3) || queue_open(fd, 16, &q4))
		return 1;
	/* Last stage first: it must wait for the others. */
	chain_stage(&q4, s4, s5, bo, 4);
	chain_stage(&q3, s3, s4, bo, 3);
	usleep(50000);
	if (word[0] != 0 || q3.ctl->read_index || q4.ctl->read_index)
		return 2;
	if (write(sock, "go", 2) != 2)
		return 3;
	imp.handle = s3;
	imp.fd = radiance_recv_fd(sock);
	if (imp.fd < 0 || radiance_ioctl(fd, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &imp))
		return 4;
	if (radiance_sem_wait_for(fd, s5, 1))
		return 5;
	/* Stage 4 ran last. */
	return word[0] == 4 ? 0 : 6;
}

TEST(a_chain_across_4_queues_and_2_processes_completes_in_order)
{
	struct radiance_sem_export_sync_file exp = { .value = 1, .flags = RADIANCE_EXPORT_CLOEXEC };
	struct radiance_bo_create bc;
	int sv[2], status, fd = radiance_open(0);
	int s1 = radiance_sem_create(fd, 0), s2 = radiance_sem_create(fd, 0);
	int bo = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 4096, RADIANCE_BO_MAPPABLE, &bc);
	struct queue q1, q2;
	uint32_t *word;
	char go[2];
	pid_t pid;

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, s2);
	ASSERT_LT(0, bo);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(sv[0]);
		_exit(chain_child(sv[1]));
	}
	close(sv[1]);
	/* Stage 2's point goes to the child before anything runs. */
	exp.handle = s2;
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &exp));
	ASSERT_EQ(2, read(sv[0], go, 2));
	ASSERT_EQ(0, radiance_send_fd(sv[0], exp.fd));
	close(exp.fd);
	word = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, bc.mmap_offset);
	ASSERT_NE(MAP_FAILED, word);
	ASSERT_EQ(0, queue_open(fd, 16, &q1));
	ASSERT_EQ(0, queue_open(fd, 16, &q2));
	chain_stage(&q2, s1, s2, bo, 2);
	chain_stage(&q1, 0, s1, bo, 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(2, word[0]);
	close(sv[0]);
	close(fd);
}

TEST_F(q, destroying_a_queue_cancels_what_it_was_to_signal)
{
	struct queue a;
	int s = radiance_sem_create(self->fd, 0), never = radiance_sem_create(self->fd, 0);

	ASSERT_LT(0, never);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	queue_sem(&a, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, never, 1, 0);
	queue_sem(&a, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 1, 0);
	queue_publish(&a);
	usleep(20000);
	queue_close(&a);
	EXPECT_EQ(-ECANCELED, radiance_sem_wait_for(self->fd, s, 1));
}

TEST_F(q, a_stopped_queue_leaves_a_value_already_reached_alone)
{
	struct queue a;
	int s = radiance_sem_create(self->fd, 5), t = radiance_sem_create(self->fd, 0);
	int never = radiance_sem_create(self->fd, 0);

	ASSERT_LT(0, never);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	queue_sem(&a, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, never, 1, 0);
	queue_sem(&a, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 3, 0);
	queue_sem(&a, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, 1, 0);
	queue_publish(&a);
	usleep(20000);
	queue_close(&a);
	/* s is already past 3: its waiters are satisfied, and it stays so. */
	EXPECT_EQ(5, radiance_sem_value(self->fd, s));
	EXPECT_EQ(-ECANCELED, radiance_sem_wait_for(self->fd, t, 1));
}

TEST_F(q, destroying_a_queue_cancels_a_launch_in_flight)
{
	struct radiance_bo_create kc;
	struct queue a;
	uint8_t *blk;
	int s = radiance_sem_create(self->fd, 0);
	int hk = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &kc);

	RADIANCE_SKIP_ON_SOC();
	ASSERT_LT(0, hk);
	blk = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, kc.mmap_offset);
	ASSERT_NE(MAP_FAILED, blk);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	queue_launch(&a, hk, blk, RADIANCE_BUILTIN_SPIN, NULL, 0, 1, 1);
	queue_sem(&a, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 1, 0);
	queue_publish(&a);
	usleep(20000);
	EXPECT_EQ(0, radiance_sem_value(self->fd, s));
	queue_close(&a);
	/* Cancelled now, not timed out when the watchdog resets the device. */
	EXPECT_EQ(-ECANCELED, radiance_sem_wait_for(self->fd, s, 1));
}

TEST_HARNESS_MAIN
