/* SPDX-License-Identifier: GPL-2.0 */
/* A user-mode queue as the benchmarks drive it, on one device file `fd`:
 * packets written, published (a kick when the scheduler asks), drained by
 * spinning on the read index; and the clock and medians they report. */
#ifndef BENCH_QUEUE_H
#define BENCH_QUEUE_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "radiance_test.h"

static int fd;

struct queue {
	uint32_t id, packets;
	struct radiance_packet *ring;
	struct radiance_queue_control *ctl;
	uint64_t written;
	long kicks;
};

static inline double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline void die(const char *what)
{
	perror(what);
	exit(1);
}

static inline void queue_open(struct queue *q, uint32_t packets)
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

static inline uint64_t read_index(struct queue *q)
{
	return atomic_load((_Atomic uint64_t *)&q->ctl->read_index);
}

static inline void publish(struct queue *q)
{
	struct radiance_queue_kick kick = { .queue_id = q->id };

	atomic_store_explicit((_Atomic uint64_t *)&q->ctl->write_index, q->written, memory_order_seq_cst);
	if (atomic_load_explicit((_Atomic uint32_t *)&q->ctl->needs_kick, memory_order_seq_cst)) {
		radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_KICK, &kick);
		q->kicks++;
	}
}

static inline void put(struct queue *q, const void *packet)
{
	while (q->written - read_index(q) >= q->packets)
		publish(q);
	memcpy(&q->ring[q->written % q->packets], packet, 64);
	q->written++;
}

static inline void drain(struct queue *q)
{
	while (read_index(q) != q->written) {
		if (q->ctl->status)
			die("queue faulted");
	}
}

static inline void nop(struct queue *q)
{
	struct radiance_packet p = { .header = { .kind = RADIANCE_PACKET_NOP } };

	put(q, &p);
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Waits until the scheduler is idle: it asks for a kick. */
static inline void idle(struct queue *q)
{
	while (!atomic_load_explicit((_Atomic uint32_t *)&q->ctl->needs_kick, memory_order_seq_cst))
		;
}

/* ns of one packet's round trip: published to drained. */
static inline double round_trip(struct queue *q, const void *packet)
{
	double t = now_ns();

	put(q, packet);
	publish(q);
	drain(q);
	return now_ns() - t;
}

/* ns per packet of `n` copies of `packet` published at once, to drained. */
static inline double burst(struct queue *q, const void *packet, int n)
{
	double t;

	for (int i = 0; i < n; i++)
		put(q, packet);
	t = now_ns();
	publish(q);
	drain(q);
	return (now_ns() - t) / n;
}

#endif /* BENCH_QUEUE_H */
