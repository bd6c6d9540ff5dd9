// SPDX-License-Identifier: GPL-2.0
/*
 * Host signal -> host wake round trip, run in the guest by tools/bench.sh:
 * two threads play ping-pong ROUNDS times through Radiance semaphores
 * (SEM_SIGNAL + SEM_WAIT), through futexes and through eventfds, in one run.
 * Prints each mean round trip and the ratios to futex and eventfd: absolute
 * times under TCG are noise, ratios within one run are not.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "radiance_test.h"

#define ROUNDS 2000

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void check(int ret, const char *what)
{
	if (ret) {
		fprintf(stderr, "%s: %d\n", what, ret);
		exit(1);
	}
}

/* --- Radiance semaphores: ping is signalled to n, pong answers n. */
static int fd;
static uint32_t ping, pong;

static void sem_signal(uint32_t h, uint64_t v)
{
	struct radiance_sem_signal s = { .handle = h, .value = v };

	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_SIGNAL, &s), "SEM_SIGNAL");
}

static void sem_wait(uint32_t h, uint64_t v)
{
	struct radiance_sem_wait_point p = { .handle = h, .value = v };
	struct radiance_sem_wait w = { .points = (uintptr_t)&p, .count = 1, .deadline_ns = INT64_MAX };

	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_WAIT, &w), "SEM_WAIT");
}

static void *sem_echo(void *arg)
{
	(void)arg;
	for (uint64_t n = 1; n <= ROUNDS; n++) {
		sem_wait(ping, n);
		sem_signal(pong, n);
	}
	return NULL;
}

static double sem_rounds(void)
{
	struct radiance_sem_create c = { 0 };
	pthread_t t;
	double start;

	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &c), "SEM_CREATE");
	ping = c.handle;
	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &c), "SEM_CREATE");
	pong = c.handle;
	pthread_create(&t, NULL, sem_echo, NULL);
	start = now_ns();
	for (uint64_t n = 1; n <= ROUNDS; n++) {
		sem_signal(ping, n);
		sem_wait(pong, n);
	}
	pthread_join(t, NULL);
	return (now_ns() - start) / ROUNDS;
}

/* --- futexes: the word counts rounds; the waiter sleeps until it moves. */
static _Atomic uint32_t fping, fpong;

static void futex_signal(_Atomic uint32_t *w, uint32_t v)
{
	atomic_store(w, v);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_wait(_Atomic uint32_t *w, uint32_t v)
{
	uint32_t cur;

	while ((cur = atomic_load(w)) < v)
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
}

static void *futex_echo(void *arg)
{
	(void)arg;
	for (uint32_t n = 1; n <= ROUNDS; n++) {
		futex_wait(&fping, n);
		futex_signal(&fpong, n);
	}
	return NULL;
}

static double futex_rounds(void)
{
	pthread_t t;
	double start;

	pthread_create(&t, NULL, futex_echo, NULL);
	start = now_ns();
	for (uint32_t n = 1; n <= ROUNDS; n++) {
		futex_signal(&fping, n);
		futex_wait(&fpong, n);
	}
	pthread_join(t, NULL);
	return (now_ns() - start) / ROUNDS;
}

/* --- eventfds: one write wakes one blocking read. */
static int eping, epong;

static void *eventfd_echo(void *arg)
{
	uint64_t v;

	(void)arg;
	for (int n = 0; n < ROUNDS; n++) {
		check(read(eping, &v, 8) != 8, "read");
		v = 1;
		check(write(epong, &v, 8) != 8, "write");
	}
	return NULL;
}

static double eventfd_rounds(void)
{
	pthread_t t;
	uint64_t v = 1;
	double start;

	eping = eventfd(0, 0);
	epong = eventfd(0, 0);
	pthread_create(&t, NULL, eventfd_echo, NULL);
	start = now_ns();
	for (int n = 0; n < ROUNDS; n++) {
		check(write(eping, &v, 8) != 8, "write");
		check(read(epong, &v, 8) != 8, "read");
	}
	pthread_join(t, NULL);
	return (now_ns() - start) / ROUNDS;
}

int main(void)
{
	double sem, futex, efd;

	fd = radiance_open(0);
	if (fd < 0) {
		perror("/dev/radiance0");
		return 1;
	}
	/* Interleaved, so drift in the machine's speed hits all three. */
	sem = sem_rounds();
	futex = futex_rounds();
	efd = eventfd_rounds();
	printf("signal -> wake round trip over %d rounds:\n", ROUNDS);
	printf("  radiance semaphore %8.0f ns\n", sem);
	printf("  futex              %8.0f ns  (semaphore / futex   = %.2f)\n", futex, sem / futex);
	printf("  eventfd            %8.0f ns  (semaphore / eventfd = %.2f)\n", efd, sem / efd);
	return 0;
}
