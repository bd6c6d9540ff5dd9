// SPDX-License-Identifier: GPL-2.0
/*
 * Queue benchmarks, run in the guest by tools/bench.sh. In one run:
 *  1. cost per packet submitted through the ring with suppressed kicks
 *     (10,000 NOPs written and published in bursts of 64, kicking only when
 *     asked), against one null ioctl (QUEUE_QUERY: the syscall floor);
 *  2. NOP round trip: one packet published to the read index moving;
 *  3. COPY HOST->VRAM bandwidth against a plain memcpy of the same size;
 *  4. a cross-queue dependency edge (SIGNAL on queue A, WAIT on queue B)
 *     per edge over a chain of 512 edges.
 * Absolute times under TCG are noise; the ratios within one run are not.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "radiance_test.h"

static int fd;

struct queue {
	uint32_t id, packets;
	struct radiance_packet *ring;
	struct radiance_queue_control *ctl;
	uint64_t written;
	long kicks;
};

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void queue_open(struct queue *q, uint32_t packets)
{
	struct radiance_queue_create c = { .ring_packets = packets };

	if (radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_CREATE, &c))
		die("QUEUE_CREATE");
	memset(q, 0, sizeof(*q));
	q->id = c.queue_id;
	q->packets = packets;
	q->ring = mmap(NULL, packets * 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.ring_offset);
	q->ctl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.control_offset);
	if (q->ring == MAP_FAILED || q->ctl == MAP_FAILED)
		die("mmap");
}

static uint64_t read_index(struct queue *q)
{
	return atomic_load((_Atomic uint64_t *)&q->ctl->read_index);
}

static void publish(struct queue *q)
{
	struct radiance_queue_kick kick = { .queue_id = q->id };

	atomic_store_explicit((_Atomic uint64_t *)&q->ctl->write_index, q->written, memory_order_seq_cst);
	if (atomic_load_explicit((_Atomic uint32_t *)&q->ctl->needs_kick, memory_order_seq_cst)) {
		radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_KICK, &kick);
		q->kicks++;
	}
}

static void put(struct queue *q, const void *packet)
{
	while (q->written - read_index(q) >= q->packets)
		publish(q);
	memcpy(&q->ring[q->written % q->packets], packet, 64);
	q->written++;
}

static void drain(struct queue *q)
{
	while (read_index(q) != q->written) {
		if (q->ctl->status)
			die("queue faulted");
	}
}

static void nop(struct queue *q)
{
	struct radiance_packet p = { .header = { .kind = RADIANCE_PACKET_NOP } };

	put(q, &p);
}

int main(void)
{
	enum { PACKETS = 10000, NULLS = 10000, TRIPS = 200, EDGES = 512 };
	struct radiance_queue_query query = { 0 };
	struct queue q, a, b;
	double t, submit, null, trip, copy_ns, memcpy_ns, edge;
	long burst_kicks;
	const size_t size = 8 << 20;
	struct radiance_bo_create hc, vc;

	fd = radiance_open(0);
	if (fd < 0)
		die("/dev/radiance0");
	/* Room for every packet: the submission is measured, not the device. */
	queue_open(&q, 16384);

	/* 1. Submission through the ring, kicks only when asked. */
	t = now_ns();
	for (int i = 0; i < PACKETS; i++) {
		nop(&q);
		if (i % 64 == 63)
			publish(&q);
	}
	publish(&q);
	submit = (now_ns() - t) / PACKETS;
	burst_kicks = q.kicks;
	drain(&q);
	query.queue_id = q.id;
	t = now_ns();
	for (int i = 0; i < NULLS; i++)
		radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_QUERY, &query);
	null = (now_ns() - t) / NULLS;

	/* 2. NOP round trip. */
	t = now_ns();
	for (int i = 0; i < TRIPS; i++) {
		nop(&q);
		publish(&q);
		drain(&q);
	}
	trip = (now_ns() - t) / TRIPS;

	/* 3. COPY HOST -> VRAM against memcpy. */
	if (radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, size, RADIANCE_BO_MAPPABLE, &hc) < 0 ||
	    radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, size, 0, &vc) < 0)
		die("BO_CREATE");
	{
		struct radiance_copy_packet p = {
			.header = { .kind = RADIANCE_PACKET_COPY }, .src = hc.handle, .dst = vc.handle, .size = size,
		};
		char *src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, hc.mmap_offset);
		char *dst = malloc(size);

		if (src == MAP_FAILED || !dst)
			die("buffers");
		memset(src, 1, size);
		memset(dst, 2, size);
		t = now_ns();
		put(&q, &p);
		publish(&q);
		drain(&q);
		copy_ns = now_ns() - t;
		t = now_ns();
		memcpy(dst, src, size);
		memcpy_ns = now_ns() - t + (dst[size - 1] == 3);
		free(dst);
	}

	/* 4. Cross-queue edges: A signals n, B waits for n and signals n on
	 * another semaphore that A waits for next. */
	{
		struct radiance_sem_create s1 = { 0 }, s2 = { 0 };

		queue_open(&a, 1024);
		queue_open(&b, 1024);
		if (radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &s1) || radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &s2))
			die("SEM_CREATE");
		t = now_ns();
		for (uint64_t n = 1; n <= EDGES / 2; n++) {
			struct radiance_semaphore_packet sig = { .header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE } };
			struct radiance_semaphore_packet wait = { .header = { .kind = RADIANCE_PACKET_WAIT_SEMAPHORE } };

			sig.handle = s1.handle, sig.value = n;
			put(&a, &sig);
			wait.handle = s1.handle, wait.value = n;
			put(&b, &wait);
			sig.handle = s2.handle;
			put(&b, &sig);
			wait.handle = s2.handle;
			put(&a, &wait);
		}
		publish(&a);
		publish(&b);
		drain(&a);
		drain(&b);
		edge = (now_ns() - t) / EDGES;
	}

	printf("queue packets: %d NOPs in bursts of 64, %ld kicks\n", PACKETS, burst_kicks);
	printf("  per packet submitted        %8.0f ns\n", submit);
	printf("  null ioctl (QUEUE_QUERY)    %8.0f ns  (packet / ioctl = %.3f)\n", null, submit / null);
	printf("  NOP round trip              %8.0f ns  (%.1f null ioctls)\n", trip, trip / null);
	printf("COPY HOST->VRAM %zu MiB: %.1f MB/s; memcpy %.1f MB/s (copy / memcpy = %.3f)\n", size >> 20,
	       size / copy_ns * 1e3, size / memcpy_ns * 1e3, memcpy_ns / copy_ns);
	printf("cross-queue edge (SIGNAL on A, WAIT on B), %d edges: %.0f ns per edge (%.1f null ioctls)\n", EDGES,
	       edge, edge / null);
	return 0;
}
