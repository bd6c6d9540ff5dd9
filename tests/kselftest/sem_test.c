// SPDX-License-Identifier: GPL-2.0
/*
 * Timeline semaphores from the host: create, signal, query, fail, wait (all,
 * any, deadlines, polls, signals), the read-only value page, sharing with
 * another process through the device file, and every bad input.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"

#define MS (1000 * 1000LL)

/* The new handle, or -errno; `value_offset` (if given) gets its offset. */
static int sem_create(int fd, uint64_t initial, uint64_t *value_offset)
{
	struct radiance_sem_create args = { .initial = initial };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &args);

	if (value_offset)
		*value_offset = args.value_offset;
	return ret ? ret : (int)args.handle;
}

static int sem_query(int fd, uint32_t handle, uint64_t *value, uint32_t *error)
{
	struct radiance_sem_query args = { .handle = handle };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_SEM_QUERY, &args);

	*value = args.value;
	*error = args.error;
	return ret;
}

/* Waits on `n` points; returns 0 or -errno, and the reported index. */
static int sem_wait(int fd, const struct radiance_sem_wait_point *points, uint32_t n,
		    uint32_t flags, int64_t deadline_ns, uint32_t *index)
{
	struct radiance_sem_wait args = {
		.points = (uintptr_t)points, .count = n, .flags = flags, .deadline_ns = deadline_ns,
	};
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_SEM_WAIT, &args);

	if (index)
		*index = args.index;
	return ret;
}

static int wait_one(int fd, uint32_t handle, uint64_t value, int64_t deadline_ns)
{
	struct radiance_sem_wait_point p = { .handle = handle, .value = value };

	return sem_wait(fd, &p, 1, 0, deadline_ns, NULL);
}

FIXTURE(sem)
{
	int fd;
};

FIXTURE_SETUP(sem)
{
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(sem)
{
	close(self->fd);
}

TEST_F(sem, create_signal_query_and_value_page)
{
	uint64_t off_a, off_b, value;
	uint32_t error;
	long page = getpagesize();
	int a = sem_create(self->fd, 5, &off_a);
	int b = sem_create(self->fd, 0, &off_b);
	_Atomic uint64_t *values;

	ASSERT_LT(0, a);
	ASSERT_LT(0, b);
	EXPECT_NE(a, b);
	EXPECT_EQ(0, off_a % 8);
	EXPECT_EQ(off_a / page, off_b / page) TH_LOG("one value page per file");
	EXPECT_NE(off_a, off_b);
	values = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, off_a / page * page);
	ASSERT_NE(MAP_FAILED, values);
#define VALUE(off) atomic_load(&values[(off) % page / 8])
	EXPECT_EQ(5, VALUE(off_a));
	EXPECT_EQ(0, VALUE(off_b));

	ASSERT_EQ(0, radiance_sem_signal(self->fd, a, 9));
	ASSERT_EQ(0, sem_query(self->fd, a, &value, &error));
	EXPECT_EQ(9, value);
	EXPECT_EQ(0, error);
	EXPECT_EQ(9, VALUE(off_a));
	EXPECT_EQ(0, VALUE(off_b));
	/* Only upwards, and never to the failure value. */
	EXPECT_EQ(-EINVAL, radiance_sem_signal(self->fd, a, 9));
	EXPECT_EQ(-EINVAL, radiance_sem_signal(self->fd, a, 3));
	EXPECT_EQ(-EINVAL, radiance_sem_signal(self->fd, a, RADIANCE_SEM_FAILED_VALUE));
	ASSERT_EQ(0, sem_query(self->fd, a, &value, &error));
	EXPECT_EQ(9, value);
	munmap(values, page);
#undef VALUE
}

TEST_F(sem, value_page_is_read_only)
{
	uint64_t off;
	long page = getpagesize();
	void *p;

	ASSERT_LT(0, sem_create(self->fd, 1, &off));
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, off / page * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, off / page * page);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, page, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, page);
	p = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, self->fd, off / page * page);
	EXPECT_EQ(MAP_FAILED, p);
}

struct signaller {
	int fd;
	uint32_t handle;
	uint64_t value;
	int delay_ms;
};

static void *signal_later(void *arg)
{
	struct signaller *s = arg;

	usleep(s->delay_ms * 1000);
	return (void *)(intptr_t)radiance_sem_signal(s->fd, s->handle, s->value);
}

TEST_F(sem, host_signal_wakes_a_waiting_thread)
{
	int h = sem_create(self->fd, 0, NULL);
	struct signaller s = { .fd = self->fd, .handle = h, .value = 7, .delay_ms = 50 };
	pthread_t t;
	void *ret;

	ASSERT_LT(0, h);
	ASSERT_EQ(0, pthread_create(&t, NULL, signal_later, &s));
	EXPECT_EQ(0, wait_one(self->fd, h, 7, INT64_MAX));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(NULL, ret);
}

TEST_F(sem, host_signal_wakes_another_process)
{
	int h = sem_create(self->fd, 0, NULL);
	int status;
	pid_t pid;

	ASSERT_LT(0, h);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		/* The child shares the file: its semaphores are the parent's. */
		_exit(wait_one(self->fd, h, 3, radiance_now_ns() + 10000 * MS) ? 1 : 0);
	usleep(50 * 1000);
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 3));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(sem, wait_all_and_wait_any)
{
	int a = sem_create(self->fd, 0, NULL), b = sem_create(self->fd, 0, NULL), c = sem_create(self->fd, 0, NULL);
	struct radiance_sem_wait_point p[3] = {
		{ .handle = a, .value = 2 }, { .handle = b, .value = 2 }, { .handle = c, .value = 2 },
	};
	uint32_t index = 99;

	ASSERT_LT(0, c);
	ASSERT_EQ(0, radiance_sem_signal(self->fd, b, 5));
	/* ANY: b is past its point. */
	EXPECT_EQ(0, sem_wait(self->fd, p, 3, RADIANCE_SEM_WAIT_ANY, 0, &index));
	EXPECT_EQ(1, index);
	/* ALL: a and c are not. */
	EXPECT_EQ(-ETIME, sem_wait(self->fd, p, 3, 0, 0, NULL));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, a, 1));
	EXPECT_EQ(-ETIME, sem_wait(self->fd, p, 3, 0, 0, NULL));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, a, 2));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, c, 3));
	EXPECT_EQ(0, sem_wait(self->fd, p, 3, 0, 0, NULL));
	/* ANY picks the first satisfied point. */
	EXPECT_EQ(0, sem_wait(self->fd, p, 3, RADIANCE_SEM_WAIT_ANY, 0, &index));
	EXPECT_EQ(0, index);
}

/* Waits of four points (read onto the stack) and of five (allocated). */
TEST_F(sem, waits_of_four_and_of_five_points)
{
	struct radiance_sem_wait_point p[5];
	uint32_t index = 99;

	for (int i = 0; i < 5; i++) {
		int h = sem_create(self->fd, i, NULL);

		ASSERT_LT(0, h);
		p[i] = (struct radiance_sem_wait_point){ .handle = h, .value = 3 };
	}
	EXPECT_EQ(0, sem_wait(self->fd, p, 4, RADIANCE_SEM_WAIT_ANY, 0, &index));
	EXPECT_EQ(3, index);
	EXPECT_EQ(-ETIME, sem_wait(self->fd, p, 4, 0, 0, NULL));
	EXPECT_EQ(-ETIME, sem_wait(self->fd, p, 5, 0, 0, NULL));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, radiance_sem_signal(self->fd, p[i].handle, 3));
	EXPECT_EQ(0, sem_wait(self->fd, p, 4, 0, 0, NULL));
	EXPECT_EQ(0, sem_wait(self->fd, p, 5, 0, 0, NULL));
	/* The fifth point is read too: failing it fails the wait of five. */
	ASSERT_EQ(0, radiance_sem_fail(self->fd, p[4].handle, EIO));
	EXPECT_EQ(0, sem_wait(self->fd, p, 4, 0, 0, NULL));
	EXPECT_EQ(-EIO, sem_wait(self->fd, p, 5, 0, 0, &index));
	EXPECT_EQ(4, index);
}

TEST_F(sem, timeouts_end_at_the_deadline_not_before)
{
	int h = sem_create(self->fd, 0, NULL);
	int64_t start = radiance_now_ns(), deadline = start + 100 * MS;

	ASSERT_LT(0, h);
	EXPECT_EQ(-ETIME, wait_one(self->fd, h, 1, deadline));
	EXPECT_LE(deadline, radiance_now_ns());
	/* A zero deadline polls: satisfied or not, at once. */
	EXPECT_EQ(-ETIME, wait_one(self->fd, h, 1, 0));
	EXPECT_EQ(0, wait_one(self->fd, h, 0, 0));
	/* A deadline already past behaves the same. */
	EXPECT_EQ(-ETIME, wait_one(self->fd, h, 1, start));
}

TEST_F(sem, failure_reaches_waiters_and_sticks)
{
	uint64_t off, value;
	int h = sem_create(self->fd, 0, &off);
	int other = sem_create(self->fd, 0, NULL);
	struct radiance_sem_wait_point p[2] = { { .handle = other, .value = 1 }, { .handle = h, .value = 1 } };
	long page = getpagesize();
	_Atomic uint64_t *values;
	uint32_t error, index = 99;
	pid_t pid, lone;
	int status;

	ASSERT_LT(0, h);
	ASSERT_LT(0, other);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(-sem_wait(self->fd, p, 2, 0, INT64_MAX, NULL));
	lone = fork();
	ASSERT_LE(0, lone);
	if (lone == 0)
		_exit(-wait_one(self->fd, h, 1, INT64_MAX));
	usleep(50 * 1000);
	ASSERT_EQ(0, radiance_sem_fail(self->fd, h, EIO));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(EIO, WEXITSTATUS(status)) TH_LOG("a blocked waiter gets the error");
	ASSERT_EQ(lone, waitpid(lone, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	/* Its page slot reads the failure value, which is above any point. */
	EXPECT_EQ(EIO, WEXITSTATUS(status)) TH_LOG("a blocked wait on it alone gets the error");

	/* Later waits, ALL or ANY, get it too, and say which point failed. */
	EXPECT_EQ(-EIO, sem_wait(self->fd, p, 2, 0, 0, &index));
	EXPECT_EQ(1, index);
	EXPECT_EQ(-EIO, wait_one(self->fd, h, 0, 0));
	/* Sticky: a second failure changes nothing, signals are refused. */
	EXPECT_EQ(0, radiance_sem_fail(self->fd, h, ENODEV));
	EXPECT_EQ(-EIO, radiance_sem_signal(self->fd, h, 10));
	ASSERT_EQ(0, sem_query(self->fd, h, &value, &error));
	EXPECT_EQ(EIO, error);
	EXPECT_EQ(RADIANCE_SEM_FAILED_VALUE, value);
	/* The value page shows the failure value. */
	values = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, off / page * page);
	ASSERT_NE(MAP_FAILED, values);
	EXPECT_EQ(RADIANCE_SEM_FAILED_VALUE, atomic_load(&values[off % page / 8]));
	munmap(values, page);
}

TEST_F(sem, destroy_cancels_waiters)
{
	int h = sem_create(self->fd, 0, NULL);
	pid_t pid;
	int status;

	ASSERT_LT(0, h);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(-wait_one(self->fd, h, 1, INT64_MAX));
	usleep(50 * 1000);
	ASSERT_EQ(0, radiance_sem_destroy(self->fd, h));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(ECANCELED, WEXITSTATUS(status));
	EXPECT_EQ(-ENOENT, radiance_sem_destroy(self->fd, h));
}

static atomic_int handled;

static void on_alarm(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

TEST_F(sem, signals_restart_or_interrupt_the_wait)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	int h = sem_create(self->fd, 0, NULL);
	struct signaller s = { .fd = self->fd, .handle = h, .value = 1, .delay_ms = 300 };
	int64_t deadline;
	pthread_t t;

	ASSERT_LT(0, h);
	/* Without SA_RESTART, a handled signal ends the wait with EINTR. */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ualarm(50 * 1000, 0);
	EXPECT_EQ(-EINTR, wait_one(self->fd, h, 1, radiance_now_ns() + 5000 * MS));
	EXPECT_EQ(1, atomic_load(&handled));
	/* So too a wait with no deadline, which sleeps without a timer. */
	ualarm(50 * 1000, 0);
	EXPECT_EQ(-EINTR, wait_one(self->fd, h, 1, INT64_MAX));
	EXPECT_EQ(2, atomic_load(&handled));

	/* With SA_RESTART the wait goes on to the same absolute deadline. */
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ualarm(50 * 1000, 0);
	deadline = radiance_now_ns() + 150 * MS;
	EXPECT_EQ(-ETIME, wait_one(self->fd, h, 1, deadline));
	EXPECT_EQ(3, atomic_load(&handled));
	EXPECT_LE(deadline, radiance_now_ns());

	/* ... and still sees a later signal. */
	ASSERT_EQ(0, pthread_create(&t, NULL, signal_later, &s));
	ualarm(50 * 1000, 0);
	EXPECT_EQ(0, wait_one(self->fd, h, 1, INT64_MAX));
	EXPECT_EQ(4, atomic_load(&handled));
	pthread_join(t, NULL);
	signal(SIGALRM, SIG_DFL);
}

TEST_F(sem, bad_arguments)
{
	struct radiance_sem_create create = { .flags = 1 };
	struct radiance_sem_wait_point p[RADIANCE_SEM_WAIT_MAX_POINTS + 1] = { 0 };
	struct radiance_sem_wait w = { 0 };
	struct radiance_sem_signal sig = { 0 };
	int h = sem_create(self->fd, 0, NULL);

	ASSERT_LT(0, h);
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_CREATE, &create));
	EXPECT_EQ(-EINVAL, sem_create(self->fd, RADIANCE_SEM_FAILED_VALUE, NULL));
	EXPECT_EQ(-ENOENT, radiance_sem_signal(self->fd, h + 1, 1));
	EXPECT_EQ(-ENOENT, radiance_sem_signal(self->fd, 0, 1));
	EXPECT_EQ(-ENOENT, radiance_sem_fail(self->fd, h + 1, EIO));
	EXPECT_EQ(-ENOENT, radiance_sem_destroy(self->fd, h + 1));
	EXPECT_EQ(-EINVAL, radiance_sem_fail(self->fd, h, 0));
	EXPECT_EQ(-EINVAL, radiance_sem_fail(self->fd, h, 4096));
	sig.handle = h;
	sig.value = 1;
	sig.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_SIGNAL, &sig));

	for (int i = 0; i <= RADIANCE_SEM_WAIT_MAX_POINTS; i++)
		p[i].handle = h;
	EXPECT_EQ(-EINVAL, sem_wait(self->fd, p, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, sem_wait(self->fd, p, RADIANCE_SEM_WAIT_MAX_POINTS + 1, 0, 0, NULL));
	EXPECT_EQ(0, sem_wait(self->fd, p, RADIANCE_SEM_WAIT_MAX_POINTS, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, sem_wait(self->fd, p, 1, 2, 0, NULL));
	p[1].pad = 1;
	EXPECT_EQ(-EINVAL, sem_wait(self->fd, p, 2, 0, 0, NULL));
	p[1].pad = 0;
	p[1].handle = h + 1;
	EXPECT_EQ(-ENOENT, sem_wait(self->fd, p, 2, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, sem_wait(self->fd, p, 2, RADIANCE_SEM_WAIT_ANY, 0, NULL))
		TH_LOG("every handle is checked, even past a point already reached");
	EXPECT_EQ(-EFAULT, sem_wait(self->fd, NULL, 1, 0, 0, NULL));
	w.points = (uintptr_t)p;
	w.count = 1;
	w.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_WAIT, &w));
	/* Nothing above changed the semaphore. */
	EXPECT_EQ(0, wait_one(self->fd, h, 0, 0));
	EXPECT_EQ(-ETIME, wait_one(self->fd, h, 1, 0));
}

TEST_F(sem, radctl_sems_shows_values_waiters_and_failures)
{
	int ok = sem_create(self->fd, 41, NULL), bad = sem_create(self->fd, 0, NULL);
	char out[4096];
	pid_t pid;
	int status;

	ASSERT_LT(0, bad);
	ASSERT_EQ(0, radiance_sem_fail(self->fd, bad, EPIPE));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(wait_one(self->fd, ok, 42, INT64_MAX) ? 1 : 0);
	usleep(50 * 1000);
	ASSERT_LT(0, radiance_radctl("sems kmod:0", out, sizeof(out)));
	TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, " 41 ")) TH_LOG("the value");
	EXPECT_NE(NULL, strstr(out, "failed: Broken pipe"));
	/* One waiter, sleeping on the live semaphore. */
	EXPECT_NE(NULL, strstr(out, "41     1")) TH_LOG("its waiter");
	ASSERT_EQ(0, radiance_sem_signal(self->fd, ok, 42));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* A waiter that woke, or timed out, no longer counts. */
	EXPECT_EQ(-ETIME, wait_one(self->fd, ok, 43, radiance_now_ns() + 20 * 1000 * 1000));
	ASSERT_LT(0, radiance_radctl("sems kmod:0", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "42     0")) TH_LOG("%s", out);
}

/* Semaphore `handle`'s `waiters` in debugfs (this process's file), or -1. */
static int waiters_on(uint32_t handle)
{
	FILE *f = fopen("/sys/kernel/debug/radiance/radiance0/semaphores", "r");
	char line[256], key[64];
	int waiters = -1;

	if (!f)
		return -1;
	snprintf(key, sizeof(key), "pid=%d sem=%u ", getpid(), handle);
	while (fgets(line, sizeof(line), f)) {
		char *w = strstr(line, " waiters=");

		if (!strncmp(line, key, strlen(key)) && w)
			waiters = atoi(w + strlen(" waiters="));
	}
	fclose(f);
	return waiters;
}

/*
 * A sleeping wait is counted on the points it still waits for, and on none
 * once it returns, however it returns.
 */
TEST_F(sem, a_wait_counts_itself_on_the_points_not_reached)
{
	int a = sem_create(self->fd, 5, NULL), b = sem_create(self->fd, 0, NULL), c = sem_create(self->fd, 0, NULL);
	struct radiance_sem_wait_point all[3] = {
		{ .handle = a, .value = 1 }, { .handle = b, .value = 1 }, { .handle = c, .value = 1 },
	};
	struct radiance_sem_wait_point any[2] = { { .handle = b, .value = 2 }, { .handle = a, .value = 1 } };
	uint32_t index = 99;
	int status;
	pid_t pid;

	ASSERT_LT(0, c);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(sem_wait(self->fd, all, 3, 0, INT64_MAX, NULL) ? 1 : 0);
	usleep(50 * 1000);
	EXPECT_EQ(0, waiters_on(a)) TH_LOG("a is past its point");
	EXPECT_EQ(1, waiters_on(b));
	EXPECT_EQ(1, waiters_on(c));
	/* The wait wakes, looks, and sleeps on c alone. */
	ASSERT_EQ(0, radiance_sem_signal(self->fd, b, 1));
	usleep(50 * 1000);
	EXPECT_EQ(0, waiters_on(b));
	EXPECT_EQ(1, waiters_on(c));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, c, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, waiters_on(c));
	/* Timed out: uncounted. */
	EXPECT_EQ(-ETIME, sem_wait(self->fd, any, 1, 0, radiance_now_ns() + 20 * 1000 * 1000, NULL));
	EXPECT_EQ(0, waiters_on(b));
	/* ANY decided by a later point: the earlier, pending one uncounted. */
	EXPECT_EQ(0, sem_wait(self->fd, any, 2, RADIANCE_SEM_WAIT_ANY, INT64_MAX, &index));
	EXPECT_EQ(1, index);
	EXPECT_EQ(0, waiters_on(b));
	/* A handle that names nothing: ENOENT, and b is not left counted. */
	all[2].handle = 9999;
	all[1].value = 3;
	EXPECT_EQ(-ENOENT, sem_wait(self->fd, all, 3, 0, INT64_MAX, NULL));
	EXPECT_EQ(0, waiters_on(b));
}

struct point_waiter {
	int fd;
	struct radiance_sem_wait_point point;
	int64_t deadline_ns; /* 0: none */
	int result;
	atomic_int done;
};

static void *wait_for_point(void *arg)
{
	struct point_waiter *w = arg;

	w->result = sem_wait(w->fd, &w->point, 1, 0, w->deadline_ns ? w->deadline_ns : INT64_MAX, NULL);
	atomic_store(&w->done, 1);
	return NULL;
}

/* How many of `n` point_waiters are done, after up to 5 s for all of them. */
static int done_within_5s(struct point_waiter *w, int n)
{
	int done = 0;

	for (int i = 0; i < 500; i++) {
		done = 0;
		for (int j = 0; j < n; j++)
			done += atomic_load(&w[j].done);
		if (done == n)
			break;
		usleep(10 * 1000);
	}
	return done;
}

/*
 * A change wakes host waiters only once it reaches the lowest point one of
 * them waits for; the others look again and wait on for theirs. Here waits
 * for points 5 and 10 of one semaphore, and for 10 through an alias in
 * another file: 5 wakes the first, and 10 the other two (a wait that did
 * not set its point again after the first wake-up would sleep through 10).
 */
TEST_F(sem, waits_for_higher_points_wake_at_theirs)
{
	/* A first semaphore, so that h's handle is not the alias's in the
	 * other file: debugfs lists both under this pid. */
	int first = sem_create(self->fd, 0, NULL), h = sem_create(self->fd, 0, NULL), other = radiance_open(0);
	struct radiance_sem_import_handle import = { .fd = self->fd, .handle = h };
	struct point_waiter w[3] = {
		{ .fd = self->fd, .point = { .handle = h, .value = 5 } },
		{ .fd = self->fd, .point = { .handle = h, .value = 10 } },
		{ .fd = other },
	};
	pthread_t t[3];

	ASSERT_LT(0, first);
	ASSERT_LT(0, h);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, radiance_ioctl(other, RADIANCE_IOCTL_SEM_IMPORT_HANDLE, &import));
	ASSERT_NE(h, (int)import.new_handle);
	w[2].point = (struct radiance_sem_wait_point){ .handle = import.new_handle, .value = 10 };
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, wait_for_point, &w[i]));
	usleep(50 * 1000);
	EXPECT_EQ(3, waiters_on(h)) TH_LOG("the alias's wait counts on its owner's semaphore too");
	for (int v = 1; v <= 4; v++)
		ASSERT_EQ(0, radiance_sem_signal(self->fd, h, v));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 5));
	ASSERT_EQ(0, pthread_join(t[0], NULL));
	EXPECT_EQ(0, w[0].result);
	usleep(50 * 1000);
	EXPECT_EQ(0, atomic_load(&w[1].done));
	EXPECT_EQ(0, atomic_load(&w[2].done));
	/* 5 uncounted all three; the two still waiting counted themselves again. */
	EXPECT_EQ(2, waiters_on(h));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 7));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 10));
	/* Woken, not left asleep: a lost wake-up is failed after 5 s (no
	 * deadline would end those waits), and the failure releases them. */
	done_within_5s(&w[1], 2);
	EXPECT_EQ(1, atomic_load(&w[1].done)) TH_LOG("the wait for 10 slept through 10");
	EXPECT_EQ(1, atomic_load(&w[2].done)) TH_LOG("the alias's wait for 10 slept through 10");
	if (!atomic_load(&w[1].done) || !atomic_load(&w[2].done))
		radiance_sem_fail(self->fd, h, EIO);
	for (int i = 1; i < 3; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].result) TH_LOG("wait %d for point 10", i);
	}
	close(other);
}

/*
 * Waits asleep on one file are listed under its table, the last to sleep
 * first. Here four sleep in turn on one point, and three of them time out
 * in the order they slept, each then unlisting itself from the middle of
 * the list, the middle again, and its head: the one left must still be
 * listed, and woken by the change.
 */
TEST_F(sem, waits_that_time_out_leave_the_others_asleep_and_wakeable)
{
	int h = sem_create(self->fd, 0, NULL);
	struct point_waiter w[4];
	pthread_t t[4];
	int i;

	ASSERT_LT(0, h);
	for (i = 0; i < 4; i++) {
		w[i] = (struct point_waiter){ .fd = self->fd, .point = { .handle = h, .value = 1 } };
		/* The first sleeps on; the others time out 150 ms after they start. */
		if (i > 0)
			w[i].deadline_ns = radiance_now_ns() + 150 * MS;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, wait_for_point, &w[i]));
		usleep(20 * 1000);
	}
	for (i = 1; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(-ETIME, w[i].result) TH_LOG("wait %d", i);
	}
	EXPECT_EQ(0, atomic_load(&w[0].done));
	EXPECT_EQ(1, waiters_on(h)) TH_LOG("the one left still counts");
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 1));
	/* A lost wake-up is failed after 5 s, which releases the wait. */
	done_within_5s(w, 1);
	EXPECT_EQ(1, atomic_load(&w[0].done)) TH_LOG("the wait left listed slept through the change");
	if (!atomic_load(&w[0].done))
		radiance_sem_fail(self->fd, h, EIO);
	ASSERT_EQ(0, pthread_join(t[0], NULL));
	EXPECT_EQ(0, w[0].result);
	EXPECT_EQ(0, waiters_on(h));
}

/*
 * A change wakes every wait asleep on its file, marked woken under the
 * table and woken once it is dropped: the first few through references the
 * waker keeps, any more under the table (kmod/wrappers/sleep_lock.rs). Here eight
 * waits on one point, more than are woken after the unlock, all end at its
 * change; two waits on another semaphore of the file, woken with them, look
 * again and sleep on, counted, until theirs comes.
 */
TEST_F(sem, a_change_wakes_every_wait_asleep_on_its_file)
{
	int h = sem_create(self->fd, 0, NULL), g = sem_create(self->fd, 0, NULL), i;
	struct point_waiter w[10];
	pthread_t t[10];

	ASSERT_LT(0, h);
	ASSERT_LT(0, g);
	for (i = 0; i < 10; i++) {
		w[i] = (struct point_waiter){ .fd = self->fd, .point = { .handle = i < 8 ? h : g, .value = 1 } };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, wait_for_point, &w[i]));
	}
	for (i = 0; i < 500 && (waiters_on(h) != 8 || waiters_on(g) != 2); i++)
		usleep(10 * 1000);
	ASSERT_EQ(8, waiters_on(h));
	ASSERT_EQ(2, waiters_on(g));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 1));
	/* A lost wake-up is failed after 5 s, which releases the waits. */
	EXPECT_EQ(8, done_within_5s(w, 8)) TH_LOG("waits for h slept through its change");
	radiance_sem_fail(self->fd, h, EIO);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].result) TH_LOG("wait %d", i);
	}
	usleep(50 * 1000);
	EXPECT_EQ(0, atomic_load(&w[8].done));
	EXPECT_EQ(0, atomic_load(&w[9].done));
	EXPECT_EQ(2, waiters_on(g)) TH_LOG("g's waits, woken by h's change, sleep on counted");
	ASSERT_EQ(0, radiance_sem_signal(self->fd, g, 1));
	EXPECT_EQ(2, done_within_5s(&w[8], 2)) TH_LOG("waits for g slept through its change");
	radiance_sem_fail(self->fd, g, EIO);
	for (i = 8; i < 10; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].result) TH_LOG("wait %d", i);
	}
}

struct spinner {
	atomic_int running, stop;
};

/* Spins until told to stop, as SCHED_FIFO on the CPU it is pinned to. */
static void *spin_until_stopped(void *arg)
{
	struct spinner *s = arg;

	atomic_store(&s->running, 1);
	while (!atomic_load(&s->stop))
		;
	return NULL;
}

/* Runs `fn(arg)` as a new thread pinned to `cpu`, SCHED_FIFO if `fifo`. */
static int start_on_cpu(pthread_t *t, int cpu, int fifo, void *(*fn)(void *), void *arg)
{
	struct sched_param param = { .sched_priority = 1 };
	pthread_attr_t attr;
	cpu_set_t set;
	int ret;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (fifo) {
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &param);
	}
	ret = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return ret;
}

/*
 * A wait for one point, woken, reads it in the value page rather than under
 * the table. Its semaphore destroyed meanwhile, the slot may already hold a
 * new semaphore's value, above the point: the wait must still fail with
 * ECANCELED. A SCHED_FIFO spinner on the waiter's CPU keeps the woken
 * waiter from running until the new semaphore is made.
 */
TEST_F(sem, a_woken_wait_does_not_take_a_reused_slot_for_its_point)
{
	uint64_t off, reused;
	int h = sem_create(self->fd, 0, &off), h2;
	struct point_waiter w = { .fd = self->fd, .point = { .handle = h, .value = 1 } };
	struct spinner spin = { 0 };
	pthread_t waiter, spinner;
	cpu_set_t cpu0;

	ASSERT_LT(0, h);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs two CPUs");
	/* This thread makes the new semaphore on CPU 0 while CPU 1 spins. */
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpu0), &cpu0));
	ASSERT_EQ(0, start_on_cpu(&waiter, 1, 0, wait_for_point, &w));
	usleep(50 * 1000);
	ASSERT_EQ(1, waiters_on(h)) TH_LOG("the wait sleeps");
	if (start_on_cpu(&spinner, 1, 1, spin_until_stopped, &spin)) {
		radiance_sem_destroy(self->fd, h);
		pthread_join(waiter, NULL);
		SKIP(return, "no SCHED_FIFO thread (needs CAP_SYS_NICE)");
	}
	while (!atomic_load(&spin.running))
		;
	ASSERT_EQ(0, radiance_sem_destroy(self->fd, h));
	h2 = sem_create(self->fd, 5, &reused);
	atomic_store(&spin.stop, 1);
	ASSERT_EQ(0, pthread_join(spinner, NULL));
	ASSERT_EQ(0, pthread_join(waiter, NULL));
	ASSERT_LT(0, h2);
	ASSERT_EQ(off, reused) TH_LOG("the new semaphore has the destroyed one's slot");
	EXPECT_EQ(-ECANCELED, w.result);
}

/*
 * An argument a call leaves as it was is not copied back: SEM_SIGNAL's may
 * be read-only. One it changes is: an ALL wait's index comes back 0.
 */
TEST_F(sem, only_a_changed_argument_is_copied_back)
{
	long page = getpagesize();
	struct radiance_sem_signal *sig = mmap(NULL, page, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int h = sem_create(self->fd, 0, NULL);
	struct radiance_sem_wait_point p = { .handle = h, .value = 1 };
	struct radiance_sem_wait w = { .points = (uintptr_t)&p, .count = 1, .index = 99 };

	ASSERT_LT(0, h);
	ASSERT_NE(MAP_FAILED, sig);
	sig->handle = h;
	sig->value = 1;
	ASSERT_EQ(0, mprotect(sig, page, PROT_READ));
	EXPECT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_SIGNAL, sig));
	EXPECT_EQ(1, radiance_sem_value(self->fd, h));
	EXPECT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_WAIT, &w));
	EXPECT_EQ(0, w.index);
	munmap(sig, page);
}

/*
 * Answers ping n with pong n once the value page shows n, after a spin that
 * grows with n and starts over every 64 pings, so that the answers sweep
 * the other side's path from its signal to its sleep.
 */
struct echo {
	int fd;
	uint32_t pong;
	const _Atomic uint64_t *ping;
	int trips;
};

static void *echo_pings(void *arg)
{
	struct echo *e = arg;

	for (int n = 1; n <= e->trips; n++) {
		while (atomic_load(e->ping) < (uint64_t)n)
			;
		for (volatile int spin = 0; spin < n % 64 * 100; spin++)
			;
		if (radiance_sem_signal(e->fd, e->pong, n))
			return (void *)1;
	}
	return NULL;
}

/*
 * Ping-pong against a thread that answers without sleeping, so that its
 * signal often lands while this thread's wait is between a look at the
 * points and its sleep. That wait is on `extra` points (reached) as well as
 * on pong: 0 for a wait on own semaphores alone (it sleeps under the table
 * it looked under), 1 for one with an alias point too (it sleeps unless a
 * change moved the file's count since it looked). A wake-up lost there
 * leaves the wait asleep (no deadline), and the harness's timeout fails the
 * test.
 */
static void ping_pong(struct __test_metadata *_metadata, int fd, int extra)
{
	enum { TRIPS = 2000 };
	long page = getpagesize();
	uint64_t off;
	int ping = sem_create(fd, 0, &off), other = radiance_open(0);
	struct radiance_sem_import_handle import = { .fd = other };
	struct radiance_sem_wait_point p[2];
	struct echo e = { .fd = fd, .pong = sem_create(fd, 0, NULL), .trips = TRIPS };
	const _Atomic uint64_t *values;
	pthread_t t;
	void *ret;

	ASSERT_LT(0, ping);
	ASSERT_LT(0, e.pong);
	ASSERT_LE(0, other);
	import.handle = sem_create(other, 1, NULL);
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_IMPORT_HANDLE, &import));
	p[0] = (struct radiance_sem_wait_point){ .handle = e.pong };
	p[1] = (struct radiance_sem_wait_point){ .handle = import.new_handle, .value = 1 };
	values = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, off / page * page);
	ASSERT_NE(MAP_FAILED, values);
	e.ping = &values[off % page / 8];
	ASSERT_EQ(0, pthread_create(&t, NULL, echo_pings, &e));
	for (int n = 1; n <= TRIPS; n++) {
		p[0].value = n;
		ASSERT_EQ(0, radiance_sem_signal(fd, ping, n));
		ASSERT_EQ(0, sem_wait(fd, p, 1 + extra, 0, INT64_MAX, NULL));
	}
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(NULL, ret);
	munmap((void *)values, page);
	close(other);
}

TEST_F(sem, a_signal_between_a_waits_look_and_its_sleep_wakes_it)
{
	ping_pong(_metadata, self->fd, 0);
}

TEST_F(sem, a_signal_between_an_alias_waits_look_and_its_sleep_wakes_it)
{
	ping_pong(_metadata, self->fd, 1);
}

TEST(handles_belong_to_their_file_and_close_frees)
{
	int a = radiance_open(0), b = radiance_open(0);
	int h;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	h = sem_create(a, 0, NULL);
	ASSERT_LT(0, h);
	EXPECT_EQ(-ENOENT, radiance_sem_signal(b, h, 1));
	for (int i = 0; i < 100; i++)
		ASSERT_LT(0, sem_create(b, i, NULL));
	EXPECT_EQ(101, radiance_mem_stat("semaphores"));
	close(a);
	close(b);
	EXPECT_EQ(0, radiance_mem_stat("semaphores"));
}

TEST(a_file_holds_512_semaphores)
{
	int fd = radiance_open(0);
	int first = sem_create(fd, 0, NULL), h = 0;

	ASSERT_LT(0, first);
	for (int i = 1; i < 512; i++)
		ASSERT_LT(0, sem_create(fd, i, NULL));
	EXPECT_EQ(-ENOSPC, sem_create(fd, 0, NULL));
	/* A destroyed one's slot is reused. */
	ASSERT_EQ(0, radiance_sem_destroy(fd, first));
	h = sem_create(fd, 0, NULL);
	EXPECT_LT(first, h);
	close(fd);
}

TEST_HARNESS_MAIN
