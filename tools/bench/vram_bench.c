// SPDX-License-Identifier: GPL-2.0
/*
 * VRAM allocator benchmark, run in the guest by tools/bench.sh:
 *  1. cost of one BO_CREATE + BO_DESTROY pair with 0 and with 10,000 live
 *     BOs (contiguous, and fragmented into 5,000 free holes), as a ratio to
 *     the empty case: the allocator is O(log n), so the ratios stay near 1;
 *  2. fragmentation after a random alloc/free workload: the largest free
 *     block as a share of all free VRAM (100% = no fragmentation).
 * Absolute times under TCG are noise; compare the ratios of one run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "radiance_test.h"

#define LIVE 10000
#define PAIRS 20000
#define RANDOM_OPS 50000

static int fd;

static uint32_t create(uint64_t size)
{
	struct radiance_bo_create a = { .size = size, .placement = RADIANCE_PLACEMENT_VRAM };

	if (radiance_ioctl(fd, RADIANCE_IOCTL_BO_CREATE, &a))
		return 0;
	return a.handle;
}

static void destroy(uint32_t handle)
{
	struct radiance_bo_destroy d = { .handle = handle };

	if (radiance_ioctl(fd, RADIANCE_IOCTL_BO_DESTROY, &d)) {
		perror("BO_DESTROY");
		exit(1);
	}
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Mean ns of one create + destroy pair of a 4 KiB BO. */
static double pair_cost(void)
{
	double start = now_ns();

	for (int i = 0; i < PAIRS; i++) {
		uint32_t h = create(4096);

		if (!h) {
			perror("BO_CREATE");
			exit(1);
		}
		destroy(h);
	}
	return (now_ns() - start) / PAIRS;
}

int main(void)
{
	static uint32_t live[LIVE], slots[LIVE];
	double empty, full, holes;
	int64_t free_bytes, largest;
	int used = 0;

	fd = radiance_open(0);
	if (fd < 0) {
		perror("/dev/radiance0");
		return 1;
	}

	empty = pair_cost();
	for (int i = 0; i < LIVE; i++)
		if (!(live[i] = create(256)))
			return perror("BO_CREATE"), 1;
	full = pair_cost();
	/* Every other BO freed: 5,000 free 256-byte holes the 4 KiB pairs
	 * cannot use, so the by-size tree holds 5,001 blocks. */
	for (int i = 0; i < LIVE; i += 2)
		destroy(live[i]);
	holes = pair_cost();
	for (int i = 1; i < LIVE; i += 2)
		destroy(live[i]);

	printf("alloc+free pair, 0 live BOs:                 %8.0f ns\n", empty);
	printf("alloc+free pair, %d live BOs:            %8.0f ns  (ratio %.2f)\n", LIVE, full, full / empty);
	printf("alloc+free pair, %d live, %d holes:    %8.0f ns  (ratio %.2f)\n", LIVE / 2, LIVE / 2, holes,
	       holes / empty);

	/* Random workload: sizes log-uniform in 256 B .. 1 MiB, half the
	 * operations free a random live BO, VRAM kept below exhaustion. */
	srand(1);
	for (int i = 0; i < RANDOM_OPS; i++) {
		if (used && (rand() % 2 || used == LIVE)) {
			int k = rand() % used;

			destroy(slots[k]);
			slots[k] = slots[--used];
		} else {
			uint64_t size = 256ull << (rand() % 13);
			uint32_t h = create(size + rand() % size);

			if (h)
				slots[used++] = h;
			else if (errno != ENOMEM)
				return perror("BO_CREATE"), 1;
		}
	}
	free_bytes = radiance_mem_stat("vram_free");
	largest = radiance_mem_stat("vram_largest_free");
	printf("random workload: %d ops, %d BOs live, %lld free blocks\n", RANDOM_OPS, used,
	       (long long)radiance_mem_stat("vram_free_blocks"));
	printf("fragmentation: largest free block / free bytes = %lld / %lld = %.1f%%\n", (long long)largest,
	       (long long)free_bytes, 100.0 * largest / free_bytes);
	for (int i = 0; i < used; i++)
		destroy(slots[i]);
	printf("after freeing all: %lld free block(s), %lld bytes free\n", (long long)radiance_mem_stat("vram_free_blocks"),
	       (long long)radiance_mem_stat("vram_free"));
	return 0;
}
