// SPDX-License-Identifier: GPL-2.0
/*
 * Host signal -> host wake round trip, run in the guest by tools/bench.sh:
 * two threads play ping-pong through Radiance semaphores (SEM_SIGNAL +
 * SEM_WAIT), through futexes and through eventfds. The three take turns,
 * ROUNDS rounds of TRIPS round trips each (sem futex eventfd sem futex ...),
 * so drift in the machine's speed hits all three alike. Prints the median
 * over the rounds of each mean round trip and of each round's ratios:
 * absolute times under TCG are noise, ratios within one run are not.
 *
 * The rounds run twice. First both threads are pinned to one CPU, the same
 * for all three: what each mechanism's own path costs, around a context
 * switch. Then placement is left to the scheduler, as a user's threads
 * are: a wake-up of a thread on the other CPU costs several times one on
 * the same CPU (under TCG, the other vCPU's host thread must wake too), so
 * there one round's ratio moves with where the echo thread went.
 *
 * Each round also times a null ioctl on the device file (a number the
 * driver does not know: ENOTTY) and a null futex call (an op futex does
 * not know: ENOSYS), the entry costs of the two paths. A semaphore is an
 * ioctl on a device file, and pays the ioctl path's entry (the file
 * lookup, the LSMs' ioctl hooks, do_vfs_ioctl, the miscdevice call) on
 * each call, where a futex pays a system call's. Its floor is a futex
 * reached through that path: the futex's round trip with each of its
 * calls priced at a null ioctl instead of a null futex call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "radiance_test.h"

#define ROUNDS 9
#define TRIPS 400
#define NULLS 1000

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

/*
 * Each mechanism runs TRIPS round trips numbered from base + 1, so the
 * semaphores' and futex words' values keep growing across rounds.
 */
static uint64_t base;

/*
 * --- Radiance semaphores: ping is signalled to n, pong answers n. A wait
 * reads the semaphore's value page first and calls SEM_WAIT only if its
 * point is not there yet, as libradiance does (and as futex_wait() below
 * reads its word before FUTEX_WAIT).
 */
static int fd;
static uint32_t ping, pong;
static const _Atomic uint64_t *ping_value, *pong_value;

static void sem_signal(uint32_t h, uint64_t v)
{
	struct radiance_sem_signal s = { .handle = h, .value = v };

	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_SIGNAL, &s), "SEM_SIGNAL");
}

static void sem_wait(uint32_t h, const _Atomic uint64_t *value, uint64_t v)
{
	struct radiance_sem_wait_point p = { .handle = h, .value = v };
	struct radiance_sem_wait w = { .points = (uintptr_t)&p, .count = 1, .deadline_ns = INT64_MAX };

	if (atomic_load(value) >= v)
		return;
	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_WAIT, &w), "SEM_WAIT");
}

static void *sem_echo(void *arg)
{
	(void)arg;
	for (uint64_t n = base + 1; n <= base + TRIPS; n++) {
		sem_wait(ping, ping_value, n);
		sem_signal(pong, n);
	}
	return NULL;
}

/* Both semaphores' values are in the file's one value page. */
static void sem_setup(void)
{
	struct radiance_sem_create c = { 0 };
	const long page = sysconf(_SC_PAGESIZE);
	uint64_t ping_at, pong_at;
	const char *values;

	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &c), "SEM_CREATE");
	ping = c.handle;
	ping_at = c.value_offset;
	check(radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &c), "SEM_CREATE");
	pong = c.handle;
	pong_at = c.value_offset;
	check(ping_at / page != pong_at / page, "value offsets in one page");
	values = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, ping_at / page * page);
	check(values == MAP_FAILED, "mmap of the value page");
	ping_value = (const _Atomic uint64_t *)(values + ping_at % page);
	pong_value = (const _Atomic uint64_t *)(values + pong_at % page);
}

static void sem_trips(void)
{
	for (uint64_t n = base + 1; n <= base + TRIPS; n++) {
		sem_signal(ping, n);
		sem_wait(pong, pong_value, n);
	}
}

/*
 * --- futexes: the word counts rounds; the waiter sleeps until it moves.
 * Each side counts its futex calls (for the floor), adding them up once
 * its round is over.
 */
static _Atomic uint32_t fping, fpong;
static _Atomic unsigned long futex_calls;

static unsigned long futex_signal(_Atomic uint32_t *w, uint32_t v)
{
	atomic_store(w, v);
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return 1;
}

static unsigned long futex_wait(_Atomic uint32_t *w, uint32_t v)
{
	unsigned long calls = 0;
	uint32_t cur;

	for (; (cur = atomic_load(w)) < v; calls++)
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, cur, NULL, NULL, 0);
	return calls;
}

static void *futex_echo(void *arg)
{
	unsigned long calls = 0;

	(void)arg;
	for (uint32_t n = base + 1; n <= base + TRIPS; n++) {
		calls += futex_wait(&fping, n);
		calls += futex_signal(&fpong, n);
	}
	atomic_fetch_add(&futex_calls, calls);
	return NULL;
}

static void futex_trips(void)
{
	unsigned long calls = 0;

	for (uint32_t n = base + 1; n <= base + TRIPS; n++) {
		calls += futex_signal(&fping, n);
		calls += futex_wait(&fpong, n);
	}
	atomic_fetch_add(&futex_calls, calls);
}

/* --- eventfds: one write wakes one blocking read. */
static int eping, epong;

static void *eventfd_echo(void *arg)
{
	uint64_t v;

	(void)arg;
	for (int n = 0; n < TRIPS; n++) {
		check(read(eping, &v, 8) != 8, "read");
		v = 1;
		check(write(epong, &v, 8) != 8, "write");
	}
	return NULL;
}

static void eventfd_setup(void)
{
	eping = eventfd(0, 0);
	epong = eventfd(0, 0);
	check(eping < 0 || epong < 0, "eventfd");
}

static void eventfd_trips(void)
{
	uint64_t v = 1;

	for (int n = 0; n < TRIPS; n++) {
		check(write(eping, &v, 8) != 8, "write");
		check(read(epong, &v, 8) != 8, "read");
	}
}

/* --- the entry costs: calls neither path knows, so each does no work. */
static void null_ioctl(void)
{
	check(ioctl(fd, _IO(RADIANCE_IOCTL_TYPE, 0xff), NULL) != -1 || errno != ENOTTY, "null ioctl");
}

static void null_futex(void)
{
	check(syscall(SYS_futex, &fping, 0x7f, 0, NULL, NULL, 0) != -1 || errno != ENOSYS, "null futex call");
}

/* One call's mean time over NULLS calls. */
static double call_ns(void (*call)(void))
{
	double start = now_ns();

	for (int n = 0; n < NULLS; n++)
		call();
	return (now_ns() - start) / NULLS;
}

struct mechanism {
	const char *name;
	void *(*echo)(void *);
	void (*trips)(void);
	double ns[ROUNDS];
};

/*
 * One round of one mechanism: TRIPS round trips against its echo thread,
 * which inherits the caller's CPUs (see pin()).
 */
static double round_trip_ns(const struct mechanism *m)
{
	pthread_t t;
	double start;

	check(pthread_create(&t, NULL, m->echo, NULL), "pthread_create");
	start = now_ns();
	m->trips();
	check(pthread_join(t, NULL), "pthread_join");
	return (now_ns() - start) / TRIPS;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/*
 * Pins the calling thread to CPU cpu, or lets it run anywhere if cpu < 0;
 * a thread it starts then starts with the same CPUs.
 */
static void pin(int cpu)
{
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (c == cpu || cpu < 0)
			CPU_SET(c, &cpus);
	check(sched_setaffinity(0, sizeof(cpus), &cpus), "sched_setaffinity");
}

/*
 * ROUNDS interleaved rounds with both threads on CPU cpu (anywhere if < 0).
 * m[0] is the semaphore, m[1] the futex.
 */
static void run(struct mechanism *m, int count, int cpu, const char *placement)
{
	double ratio[ROUNDS], ioctl_ns[ROUNDS], futex_ns[ROUNDS], calls[ROUNDS], floor_ns[ROUNDS];

	pin(cpu);
	for (int r = 0; r < ROUNDS; r++, base += TRIPS) {
		for (int i = 0; i < count; i++) {
			atomic_store(&futex_calls, 0);
			m[i].ns[r] = round_trip_ns(&m[i]);
			if (i == 1)
				calls[r] = (double)atomic_load(&futex_calls) / TRIPS;
		}
		ioctl_ns[r] = call_ns(null_ioctl);
		futex_ns[r] = call_ns(null_futex);
		floor_ns[r] = m[1].ns[r] + calls[r] * (ioctl_ns[r] - futex_ns[r]);
	}
	printf("signal -> wake round trip, %s, %d interleaved rounds of %d, medians:\n", placement, ROUNDS,
	       TRIPS);
	printf("  %-18s %8.0f ns\n", m[0].name, median(m[0].ns, ROUNDS));
	for (int i = 1; i < count; i++) {
		for (int r = 0; r < ROUNDS; r++)
			ratio[r] = m[0].ns[r] / m[i].ns[r];
		printf("  %-18s %8.0f ns  (semaphore / %-7s = %.2f)\n", m[i].name, median(m[i].ns, ROUNDS),
		       m[i].name, median(ratio, ROUNDS));
	}
	for (int r = 0; r < ROUNDS; r++)
		ratio[r] = m[0].ns[r] / floor_ns[r];
	printf("  its floor, a futex reached through the ioctl path: %.0f ns  (semaphore / floor = %.2f)\n",
	       median(floor_ns, ROUNDS), median(ratio, ROUNDS));
	printf("    the futex's %.1f calls per round trip, each at a null ioctl's %.0f ns, not a null futex call's %.0f ns\n",
	       median(calls, ROUNDS), median(ioctl_ns, ROUNDS), median(futex_ns, ROUNDS));
}

int main(void)
{
	struct mechanism m[] = {
		{ .name = "radiance semaphore", .echo = sem_echo, .trips = sem_trips },
		{ .name = "futex", .echo = futex_echo, .trips = futex_trips },
		{ .name = "eventfd", .echo = eventfd_echo, .trips = eventfd_trips },
	};
	const int count = sizeof(m) / sizeof(m[0]);

	fd = radiance_open(0);
	if (fd < 0) {
		perror("/dev/radiance0");
		return 1;
	}
	sem_setup();
	eventfd_setup();
	run(m, count, 0, "both threads on CPU 0");
	run(m, count, -1, "threads placed by the scheduler");
	return 0;
}
