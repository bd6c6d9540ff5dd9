// SPDX-License-Identifier: GPL-2.0
/*
 * Queue benchmarks, run in the guest by tools/bench.sh. In one run:
 *  1. cost per packet submitted through the ring with suppressed kicks
 *     (10,000 NOPs written and published in bursts of 64, kicking only when
 *     asked), against one null ioctl (QUEUE_QUERY: the syscall floor);
 *  2. NOP round trip: one packet published to the read index moving, with
 *     the share of them that had to kick (a pass still running takes the
 *     next NOP without one; a kick runs the pass in the ioctl itself when
 *     no other holds the scheduler); and the same from an idle scheduler
 *     (waiting until it asks for a kick);
 *  3. a cross-queue dependency edge (SIGNAL on queue A, WAIT on queue B)
 *     per edge over a chain of 256 edges, against the NOP round trip,
 *     against the round trip from idle, and against two NOPs taken in one
 *     pass (a burst published at once): an edge is two packets, each taken
 *     by the scheduler, so this is its floor where no host round trip is
 *     left. Where the NOP round trips needed no kick, each is one packet
 *     taken in a pass too, and edge / NOP round trip cannot go below
 *     about 2: printed as its floor, two NOPs taken in a pass / NOP round
 *     trip (well under 1 where each round trip rings the doorbell). An
 *     edge's two packets also look a semaphore up and raise it: a SIGNAL
 *     and the WAIT it satisfies, taken in a pass on one queue (pairs
 *     published at once), are the same work with no second queue to hand
 *     over to, the floor of what the edge does; printed as edge / such a
 *     pair and such a pair / NOP round trip. It runs
 *     right after the round trips it is compared with: in a scratch
 *     program, the same chain run right after 4's copies (24 MiB of
 *     memory traffic: the COPY, a memcpy and a pread) took 1.1 to 1.6
 *     times as long, while the kernel ran the same instructions per edge;
 *  4. COPY HOST->VRAM bandwidth against a plain memcpy of the same size,
 *     and against a copy the kernel makes (a pread of a memfd: under TCG
 *     the kernel's copy routines and userspace's memcpy differ in speed,
 *     and the emulated device copies in the kernel); and the device
 *     commands it took per MiB (debugfs commands_issued);
 *  5. VRAM scrub on free: a 4 KiB FILL round trip right after freeing a
 *     written 1 MiB BO, against the same FILL with nothing freed;
 *  6. launches back to back: 64 one-thread FILL launches published at
 *     once, per launch, against one launch's round trip (the median of
 *     nine). A queue's next command waits until its launch has completed
 *     (a queue stops at its fault), so on a device that takes more than
 *     one command per stream this is about 1: what that rule costs;
 *  7. a 1 MiB FILL against a 1 MiB COPY HOST->VRAM, and the device
 *     commands each took: on a device without MEM SET a fill copies from
 *     host memory full of its pattern, and should cost about a copy. Each
 *     round's first fill has a new pattern (the CPU writes the source
 *     first), its second the same one (the source holds it).
 * 2 to 7 run in interleaved rounds and print medians. Absolute
 * times under TCG are noise; the ratios within one run are not.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "radiance_test.h"
#include "bench_queue.h"

/* ns per pair of `n` pairs, each a SIGNAL of `sem` to the next value and
 * a WAIT for it, published at once on `q`, to drained. */
static double sem_pairs(struct queue *q, uint32_t sem, uint64_t *value, int n)
{
	struct radiance_semaphore_packet sig = { .header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE }, .handle = sem };
	struct radiance_semaphore_packet wait = { .header = { .kind = RADIANCE_PACKET_WAIT_SEMAPHORE }, .handle = sem };
	double t;

	for (int i = 0; i < n; i++) {
		sig.value = wait.value = ++*value;
		put(q, &sig);
		put(q, &wait);
	}
	t = now_ns();
	publish(q);
	drain(q);
	return (now_ns() - t) / n;
}

static void fill(struct queue *q, uint32_t bo, uint64_t size, double *ns)
{
	struct radiance_fill_packet p = {
		.header = { .kind = RADIANCE_PACKET_FILL }, .dst = bo, .pattern_size = 4, .size = size, .pattern = 7,
	};

	*ns = round_trip(q, &p);
}

int main(void)
{
	enum { PACKETS = 10000, NULLS = 10000, TRIPS = 50, EDGES = 256, ROUNDS = 7, BURST = 1024, LAUNCHES = 64, ALONE = 9 };
	struct radiance_queue_query query = { 0 };
	struct queue q, a, b;
	double t, submit, null, in_pass[ROUNDS], pass_ratio[ROUNDS], from_idle[ROUNDS], idle_ratio[ROUNDS], kicked[ROUNDS];
	double trip[ROUNDS], copy_ns[ROUNDS], memcpy_ns[ROUNDS], copy_ratio[ROUNDS], edge[ROUNDS], edge_ratio[ROUNDS];
	double edge_floor[ROUNDS], pair[ROUNDS], pair_ratio[ROUNDS], pair_floor[ROUNDS];
	double kcopy_ns[ROUNDS], kcopy_ratio[ROUNDS], per_mib[ROUNDS], fill_ns[ROUNDS], after_free_ns[ROUNDS], free_ns[ROUNDS], scrub_ratio[ROUNDS];
	double launch_ns[ROUNDS], launches_ns[ROUNDS], launch_ratio[ROUNDS], alone[ALONE];
	double mib_fill_ns[ROUNDS], mib_copy_ns[ROUNDS], mib_ratio[ROUNDS], fill_cmds[ROUNDS], copy_cmds[ROUNDS];
	double held_ns[ROUNDS], held_ratio[ROUNDS];
	struct radiance_launch_packet launch = { .header = { .kind = RADIANCE_PACKET_LAUNCH_DESC } };
	struct radiance_launch_desc desc = {
		.start_pc = RADIANCE_BUILTIN_START, .kernel_pc = RADIANCE_BUILTIN_FILL_U32, .grid = { 1, 1, 1 },
		.block = { 1, 1, 1 }, .regs_per_thread = 1, .params_size = 12,
	};
	uint32_t fill_params[3] = { 0, 7, 1 };
	long burst_kicks;
	const size_t size = 8 << 20, freed = 1 << 20;
	struct radiance_bo_create hc, vc, small;
	struct radiance_sem_create s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
	uint64_t n = 0, n3 = 0;
	char *src, *dst;
	int memfd;

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

	if (radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, size, RADIANCE_BO_MAPPABLE, &hc) < 0 ||
	    radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, size, 0, &vc) < 0 ||
	    radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, &small) < 0)
		die("BO_CREATE");
	src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, hc.mmap_offset);
	dst = malloc(size);
	if (src == MAP_FAILED || !dst)
		die("buffers");
	memset(src, 1, size);
	memset(dst, 2, size);
	/* The launch's descriptor and params in the host BO's last page, which
	 * the copies only read. */
	fill_params[0] = small.device_address;
	desc.params_offset = size - 4096 + sizeof(desc);
	memcpy(src + size - 4096, &desc, sizeof(desc));
	memcpy(src + size - 4096 + sizeof(desc), fill_params, sizeof(fill_params));
	launch.block = hc.handle, launch.block_offset = size - 4096, launch.block_size = sizeof(desc);
	memfd = memfd_create("kernel-copy", 0);
	if (memfd < 0 || write(memfd, src, size) != (ssize_t)size)
		die("memfd");
	queue_open(&a, 1024);
	queue_open(&b, 1024);
	if (radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &s1) || radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &s2) ||
	    radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &s3))
		die("SEM_CREATE");

	for (int r = 0; r < ROUNDS; r++) {
		struct radiance_packet nop_packet = { .header = { .kind = RADIANCE_PACKET_NOP } };
		struct radiance_copy_packet p = {
			.header = { .kind = RADIANCE_PACKET_COPY }, .src = hc.handle, .dst = vc.handle, .size = size,
		};
		struct radiance_bo_create big;
		struct radiance_bo_destroy d;
		int64_t before;

		/* 2. NOPs taken in one pass: BURST published at once. */
		in_pass[r] = burst(&q, &nop_packet, BURST);
		/* A SIGNAL and the WAIT it satisfies, as many packets. */
		pair[r] = sem_pairs(&q, s3.handle, &n3, BURST / 2);

		/* NOP round trip, and the share that kicked. */
		trip[r] = 0;
		kicked[r] = q.kicks;
		for (int i = 0; i < TRIPS; i++)
			trip[r] += round_trip(&q, &nop_packet) / TRIPS;
		kicked[r] = (q.kicks - kicked[r]) / TRIPS;

		/* NOP round trip from an idle scheduler. */
		from_idle[r] = 0;
		for (int i = 0; i < TRIPS; i++) {
			idle(&q);
			from_idle[r] += round_trip(&q, &nop_packet) / TRIPS;
		}

		/* 3. Cross-queue edges: A signals n, B waits for n and signals
		 * n on another semaphore that A waits for next. */
		t = now_ns();
		for (int i = 0; i < EDGES / 2; i++) {
			struct radiance_semaphore_packet sig = { .header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE } };
			struct radiance_semaphore_packet wait = { .header = { .kind = RADIANCE_PACKET_WAIT_SEMAPHORE } };

			n++;
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
		edge[r] = (now_ns() - t) / EDGES;
		edge_ratio[r] = edge[r] / trip[r];
		idle_ratio[r] = edge[r] / from_idle[r];
		pass_ratio[r] = edge[r] / (2 * in_pass[r]);
		edge_floor[r] = 2 * in_pass[r] / trip[r];
		pair_ratio[r] = edge[r] / pair[r];
		pair_floor[r] = pair[r] / trip[r];

		/* 4. COPY HOST -> VRAM against memcpy. */
		before = radiance_mem_stat("commands_issued");
		copy_ns[r] = round_trip(&q, &p);
		per_mib[r] = (double)(radiance_mem_stat("commands_issued") - before) / (size >> 20);
		t = now_ns();
		memcpy(dst, src, size);
		memcpy_ns[r] = now_ns() - t + (dst[size - 1] == 3);
		copy_ratio[r] = memcpy_ns[r] / copy_ns[r];
		t = now_ns();
		if (pread(memfd, dst, size, 0) != (ssize_t)size)
			die("pread");
		kcopy_ns[r] = now_ns() - t;
		kcopy_ratio[r] = kcopy_ns[r] / copy_ns[r];

		/* 5. A 4 KiB FILL alone, then right after freeing a written
		 * 1 MiB BO (its scrub before or around the FILL). */
		fill(&q, small.handle, 4096, &fill_ns[r]);
		if (radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, freed, 0, &big) < 0)
			die("BO_CREATE");
		{
			struct radiance_fill_packet fp = {
				.header = { .kind = RADIANCE_PACKET_FILL }, .dst = big.handle, .pattern_size = 4,
				.size = freed, .pattern = 9,
			};

			round_trip(&q, &fp);
		}
		d.handle = big.handle;
		t = now_ns();
		if (radiance_ioctl(fd, RADIANCE_IOCTL_BO_DESTROY, &d))
			die("BO_DESTROY");
		free_ns[r] = now_ns() - t;
		fill(&q, small.handle, 4096, &after_free_ns[r]);
		after_free_ns[r] += free_ns[r];
		scrub_ratio[r] = after_free_ns[r] / fill_ns[r];

		/* 6. Launches back to back against one alone, last: run just
		 * before 5, they made its FILL alone two to three times faster
		 * and its ratio as much larger. On a device served by a process
		 * the first launches may wait for what is left of 5's scrub:
		 * the median. */
		for (int i = 0; i < ALONE; i++)
			alone[i] = round_trip(&q, &launch);
		launch_ns[r] = median(alone, ALONE);
		launches_ns[r] = burst(&q, &launch, LAUNCHES);
		launch_ratio[r] = launches_ns[r] / launch_ns[r];

		/* 7. A 1 MiB FILL against a 1 MiB COPY into the same VRAM. */
		{
			struct radiance_fill_packet fp = {
				.header = { .kind = RADIANCE_PACKET_FILL }, .dst = vc.handle, .pattern_size = 4,
				.size = 1 << 20, .pattern = 0x5a5a0000 + r,
			};
			struct radiance_copy_packet cp = p;

			cp.size = 1 << 20;
			before = radiance_mem_stat("commands_issued");
			mib_copy_ns[r] = round_trip(&q, &cp);
			copy_cmds[r] = radiance_mem_stat("commands_issued") - before;
			before = radiance_mem_stat("commands_issued");
			mib_fill_ns[r] = round_trip(&q, &fp);
			fill_cmds[r] = radiance_mem_stat("commands_issued") - before;
			mib_ratio[r] = mib_fill_ns[r] / mib_copy_ns[r];
			held_ns[r] = round_trip(&q, &fp);
			held_ratio[r] = held_ns[r] / mib_copy_ns[r];
		}
	}

	printf("queue packets: %d NOPs in bursts of 64, %ld kicks\n", PACKETS, burst_kicks);
	printf("  per packet submitted        %8.0f ns\n", submit);
	printf("  null ioctl (QUEUE_QUERY)    %8.0f ns  (packet / ioctl = %.3f)\n", null, submit / null);
	printf("medians of %d interleaved rounds:\n", ROUNDS);
	printf("  NOP round trip              %8.0f ns  (%.1f null ioctls; %.0f%% kicked)\n", median(trip, ROUNDS),
	       median(trip, ROUNDS) / null, 100 * median(kicked, ROUNDS));
	printf("  NOP round trip from idle    %8.0f ns  (%.1f null ioctls)\n", median(from_idle, ROUNDS),
	       median(from_idle, ROUNDS) / null);
	printf("COPY HOST->VRAM %zu MiB: %.1f MB/s; memcpy %.1f MB/s (copy / memcpy = %.3f)\n", size >> 20,
	       size / median(copy_ns, ROUNDS) * 1e3, size / median(memcpy_ns, ROUNDS) * 1e3, median(copy_ratio, ROUNDS));
	printf("  kernel copy (memfd pread) %.1f MB/s (COPY / kernel copy = %.3f)\n", size / median(kcopy_ns, ROUNDS) * 1e3,
	       median(kcopy_ratio, ROUNDS));
	printf("COPY HOST->VRAM device commands per MiB: %.2f\n", median(per_mib, ROUNDS));
	printf("cross-queue edge (SIGNAL on A, WAIT on B), %d edges: %.0f ns per edge (edge / NOP round trip = %.2f)\n",
	       EDGES, median(edge, ROUNDS), median(edge_ratio, ROUNDS));
	printf("  floor of edge / NOP round trip, two packets taken in a pass / NOP round trip = %.2f\n",
	       median(edge_floor, ROUNDS));
	printf("  edge / NOP round trip from idle = %.2f\n", median(idle_ratio, ROUNDS));
	printf("  NOP taken in a pass (%d published at once) %.0f ns (edge / 2 such NOPs = %.2f)\n", BURST,
	       median(in_pass, ROUNDS), median(pass_ratio, ROUNDS));
	printf("  a SIGNAL and the WAIT it satisfies taken in a pass (%d pairs published at once on one queue) %.0f ns (edge / such a pair = %.2f)\n",
	       BURST / 2, median(pair, ROUNDS), median(pair_ratio, ROUNDS));
	printf("  floor of edge / NOP round trip, such a pair / NOP round trip = %.2f\n", median(pair_floor, ROUNDS));
	printf("4 KiB FILL after freeing %zu KiB: %.0f ns (free %.0f ns) vs %.0f ns alone (after free / alone = %.2f)\n",
	       freed >> 10, median(after_free_ns, ROUNDS), median(free_ns, ROUNDS), median(fill_ns, ROUNDS),
	       median(scrub_ratio, ROUNDS));
	printf("FILL_U32 launch of 1 thread: %.0f ns alone (median of %d); %d published at once: %.0f ns each (back to back / alone = %.2f)\n",
	       median(launch_ns, ROUNDS), ALONE, LAUNCHES, median(launches_ns, ROUNDS), median(launch_ratio, ROUNDS));
	printf("1 MiB FILL of a new pattern %.0f ns (%.0f device commands) vs 1 MiB COPY HOST->VRAM %.0f ns (%.0f) (fill / copy = %.2f)\n",
	       median(mib_fill_ns, ROUNDS), median(fill_cmds, ROUNDS), median(mib_copy_ns, ROUNDS),
	       median(copy_cmds, ROUNDS), median(mib_ratio, ROUNDS));
	printf("1 MiB FILL of the same pattern again %.0f ns (held fill / copy = %.2f)\n", median(held_ns, ROUNDS),
	       median(held_ratio, ROUNDS));
	return 0;
}
