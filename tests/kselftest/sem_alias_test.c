// SPDX-License-Identifier: GPL-2.0
/*
 * SEM_IMPORT_HANDLE: a handle in device 1's file for a semaphore of device
 * 0's file. Host operations and queue packets on the alias act on device 0's
 * semaphore, its value is published in device 1's value page, failure
 * crosses, and device 0's semaphore or file going fails the alias with
 * ECANCELED and wakes its waiters. A chain of edges between the two
 * devices' queues, whose signals wake the other device's scheduler from
 * the signalling one's pass: none is lost, failures cross, and the waiting
 * side may go mid-chain. Bad inputs; leaks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"
#include "radiance_queue.h"

/* Device `index`'s count of semaphores (aliases included). */
static int64_t sems_of(int index)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/radiance%d/mem", index);
	return radiance_debugfs_stat(path, "semaphores");
}

/* The alias's handle in `fd`, or -errno; `offset` (if given) gets its
 * value's mmap offset. */
static int import_handle(int fd, int owner_fd, uint32_t handle, uint64_t *offset)
{
	struct radiance_sem_import_handle args = { .fd = owner_fd, .handle = handle };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_SEM_IMPORT_HANDLE, &args);

	if (!ret && offset)
		*offset = args.value_offset;
	return ret ? ret : (int)args.new_handle;
}

/* The u64 at `offset` of `fd`'s value page, read as a process reads it. */
static uint64_t page_value(int fd, uint64_t offset)
{
	long page = getpagesize();
	uint64_t base = offset & ~(uint64_t)(page - 1);
	void *map = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, base);
	uint64_t value;

	if (map == MAP_FAILED)
		return 0xdeadull;
	value = atomic_load((_Atomic uint64_t *)((char *)map + (offset - base)));
	munmap(map, page);
	return value;
}

FIXTURE(alias)
{
	int a, b;
};

FIXTURE_SETUP(alias)
{
	self->a = radiance_open(0);
	self->b = radiance_open(1);
	ASSERT_LE(0, self->a);
	ASSERT_LE(0, self->b);
}

FIXTURE_TEARDOWN(alias)
{
	if (self->a >= 0)
		close(self->a);
	close(self->b);
}

TEST_F(alias, bad_arguments)
{
	struct radiance_sem_import_handle args = { .fd = self->a };
	int s = radiance_sem_create(self->a, 0);
	int pipes[2];

	ASSERT_LT(0, s);
	ASSERT_EQ(0, pipe(pipes));
	EXPECT_EQ(-EBADF, import_handle(self->b, -1, s, NULL));
	EXPECT_EQ(-EBADF, import_handle(self->b, 1000, s, NULL));
	/* Not a Radiance device file. */
	EXPECT_EQ(-EINVAL, import_handle(self->b, pipes[0], s, NULL));
	/* The file's own semaphore needs no alias. */
	EXPECT_EQ(-EINVAL, import_handle(self->a, self->a, s, NULL));
	EXPECT_EQ(-ENOENT, import_handle(self->b, self->a, s + 100, NULL));
	EXPECT_EQ(-ENOENT, import_handle(self->b, self->a, 0, NULL));
	args.handle = s;
	args.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->b, RADIANCE_IOCTL_SEM_IMPORT_HANDLE, &args));
	/* A struct of another size is not this ioctl. */
	args.flags = 0;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->b, _IOWR(RADIANCE_IOCTL_TYPE, 0x18, struct radiance_sem_signal),
					  &args));
	close(pipes[0]);
	close(pipes[1]);
	EXPECT_EQ(1, sems_of(0));
	EXPECT_EQ(0, sems_of(1));
}

TEST_F(alias, host_operations_act_on_the_semaphore_and_its_value_is_published)
{
	uint64_t offset;
	int s = radiance_sem_create(self->a, 3);
	int x = import_handle(self->b, self->a, s, &offset);
	int y;

	ASSERT_LT(0, s);
	ASSERT_LT(0, x);
	EXPECT_EQ(1, sems_of(1));
	EXPECT_EQ(3, radiance_sem_value(self->b, x));
	EXPECT_EQ(3, page_value(self->b, offset));
	EXPECT_EQ(0, radiance_sem_signal(self->a, s, 7));
	EXPECT_EQ(7, radiance_sem_value(self->b, x));
	EXPECT_EQ(7, page_value(self->b, offset));
	EXPECT_EQ(0, radiance_sem_signal(self->b, x, 9));
	EXPECT_EQ(9, radiance_sem_value(self->a, s));
	EXPECT_EQ(-EINVAL, radiance_sem_signal(self->b, x, 9));
	EXPECT_EQ(0, radiance_sem_wait_for(self->b, x, 9));
	/* An alias of an alias names the semaphore itself. */
	y = import_handle(self->a, self->b, x, NULL);
	EXPECT_EQ(-EINVAL, y) TH_LOG("device 0's alias of its own semaphore");
	EXPECT_EQ(0, radiance_sem_destroy(self->b, x));
	EXPECT_EQ(-ENOENT, radiance_sem_destroy(self->b, x));
	EXPECT_EQ(0, page_value(self->b, offset));
	/* Destroying the alias leaves the semaphore as it is, and its changes
	 * no longer reach the alias's slot. */
	EXPECT_EQ(9, radiance_sem_value(self->a, s));
	EXPECT_EQ(0, radiance_sem_signal(self->a, s, 10));
	EXPECT_EQ(0, page_value(self->b, offset));
	EXPECT_EQ(0, sems_of(1));
}

TEST_F(alias, radctl_sems_shows_an_alias_with_its_semaphores_value)
{
	char out[4096], want[64];
	int s = radiance_sem_create(self->a, 41);
	int x = import_handle(self->b, self->a, s, NULL);

	ASSERT_LT(0, x);
	ASSERT_LT(0, radiance_radctl("sems kmod:1", out, sizeof(out)));
	TH_LOG("%s", out);
	snprintf(want, sizeof(want), "pid %d sem %d", getpid(), s);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("whose semaphore it is");
	EXPECT_NE(NULL, strstr(out, " 41 ")) TH_LOG("the semaphore's value");
	ASSERT_EQ(0, radiance_sem_destroy(self->a, s));
	ASSERT_LT(0, radiance_radctl("sems kmod:1", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "failed: Operation canceled")) TH_LOG("%s", out);
}

TEST_F(alias, a_host_waiter_on_the_alias_wakes_on_the_owners_signal)
{
	int s = radiance_sem_create(self->a, 0);
	struct radiance_waiter w = { .fd = self->b, .result = 1 };
	pthread_t t;

	ASSERT_LT(0, s);
	w.handle = import_handle(self->b, self->a, s, NULL);
	ASSERT_LT(0, (int)w.handle);
	ASSERT_EQ(0, pthread_create(&t, NULL, radiance_waiter_run, &w));
	usleep(20000);
	EXPECT_EQ(1, w.result);
	EXPECT_EQ(0, radiance_sem_signal(self->a, s, 1));
	pthread_join(t, NULL);
	EXPECT_EQ(0, w.result);
}

TEST_F(alias, a_queue_of_device_1_waits_on_device_0s_queue)
{
	uint64_t offset;
	struct queue qa, qb;
	int s = radiance_sem_create(self->a, 0), t = radiance_sem_create(self->b, 0);
	int x = import_handle(self->b, self->a, s, &offset);
	int r = radiance_sem_create(self->a, 0);
	int y = import_handle(self->b, self->a, r, NULL);

	ASSERT_LT(0, x);
	ASSERT_LT(0, y);
	ASSERT_EQ(0, queue_open(self->a, 16, &qa));
	ASSERT_EQ(0, queue_open(self->b, 16, &qb));
	/* B: wait for A's s, signal its own t and A's r through the alias. */
	queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, 1, 0);
	queue_nop(&qb, 0);
	queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, 1, 0);
	queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, y, 2, 0);
	queue_publish(&qb);
	usleep(50000);
	EXPECT_EQ(0, qb.ctl->read_index);
	EXPECT_EQ(0, radiance_sem_value(self->b, t));
	queue_nop(&qa, 0);
	queue_sem(&qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 1, 0);
	queue_publish(&qa);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qa));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qb));
	EXPECT_EQ(4, qb.ctl->read_index);
	EXPECT_EQ(1, radiance_sem_value(self->b, t));
	EXPECT_EQ(1, page_value(self->b, offset));
	EXPECT_EQ(0, radiance_sem_wait_for(self->a, r, 2));
	queue_close(&qa);
	queue_close(&qb);
}

/* Waits up to a second for `q`'s scheduler to ask for a kick (it does so
 * when a pass goes idle); returns the flag. */
static uint32_t kick_asked(struct queue *q)
{
	for (int i = 0; i < 10000 && !atomic_load((_Atomic uint32_t *)&q->ctl->needs_kick); i++)
		usleep(100);
	return atomic_load((_Atomic uint32_t *)&q->ctl->needs_kick);
}

TEST_F(alias, a_pass_that_wakes_the_other_device_goes_on_after_it)
{
	enum { SIGNALS = 600 };
	struct queue qa, qb;
	int s = radiance_sem_create(self->a, 0), x = import_handle(self->b, self->a, s, NULL);

	ASSERT_LT(0, x);
	ASSERT_EQ(0, queue_open(self->a, 1024, &qa));
	ASSERT_EQ(0, queue_open(self->b, 1024, &qb));
	queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, 1, 0);
	queue_nop(&qb, 0);
	queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, 2, 0);
	queue_publish(&qb);
	usleep(50000);
	EXPECT_EQ(0, qb.ctl->read_index);
	/* A's pass hands over to B at each signal: what follows the first
	 * runs in the pass after B's, from this one doorbell. */
	queue_sem(&qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 1, 0);
	queue_nop(&qa, 0);
	queue_nop(&qa, 0);
	queue_sem(&qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 2, 0);
	EXPECT_EQ(1, queue_publish(&qa));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qa));
	EXPECT_EQ(4, qa.ctl->read_index);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qb));
	EXPECT_EQ(3, qb.ctl->read_index);
	/* Both ended idle: each asks for a kick for what comes next. */
	EXPECT_EQ(1, kick_asked(&qa));
	EXPECT_EQ(1, kick_asked(&qb));

	/* More hand-overs than one run of passes takes (1024 passes, two
	 * per signal): A, which waits on nothing, goes on in its work item. */
	for (int n = 3; n < 3 + SIGNALS; n++)
		queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, n, 0);
	queue_publish(&qb);
	usleep(50000);
	for (int n = 3; n < 3 + SIGNALS; n++)
		queue_sem(&qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, n, 0);
	EXPECT_EQ(1, queue_publish(&qa));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qa));
	EXPECT_EQ(4 + SIGNALS, qa.ctl->read_index);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qb));
	EXPECT_EQ(3 + SIGNALS, qb.ctl->read_index);
	queue_close(&qa);
	queue_close(&qb);
}

TEST_F(alias, failure_crosses_to_device_1s_queue)
{
	uint64_t offset;
	struct queue qb;
	int s = radiance_sem_create(self->a, 0), t = radiance_sem_create(self->b, 0);
	int u = radiance_sem_create(self->b, 0);
	int x = import_handle(self->b, self->a, s, &offset);

	ASSERT_LT(0, u);
	ASSERT_LT(0, x);
	ASSERT_EQ(0, queue_open(self->b, 16, &qb));
	/* Submission 1 waits on A's semaphore and is skipped when it fails;
	 * submission 2 runs. */
	queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, RADIANCE_PACKET_SKIP_ON_FAILURE, x, 1, 2);
	queue_nop(&qb, 0);
	queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, 1, 0);
	queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, u, 1, 0);
	queue_publish(&qb);
	usleep(20000);
	EXPECT_EQ(0, qb.ctl->read_index);
	ASSERT_EQ(0, radiance_sem_fail(self->a, s, EHOSTDOWN));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qb));
	EXPECT_EQ(4, qb.ctl->read_index);
	EXPECT_EQ(-EHOSTDOWN, radiance_sem_wait_for(self->b, t, 1));
	EXPECT_EQ(1, radiance_sem_value(self->b, u));
	EXPECT_EQ(-EHOSTDOWN, radiance_sem_value(self->b, x));
	EXPECT_EQ(RADIANCE_SEM_FAILED_VALUE, page_value(self->b, offset));
	queue_close(&qb);
}

TEST_F(alias, a_queue_that_fails_fails_the_owners_semaphore)
{
	struct radiance_packet bad = { 0 };
	struct queue qb;
	int s = radiance_sem_create(self->a, 0);
	int x = import_handle(self->b, self->a, s, NULL);

	ASSERT_LT(0, x);
	ASSERT_EQ(0, queue_open(self->b, 16, &qb));
	queue_put(&qb, &bad);
	queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, x, 1, 0);
	queue_publish(&qb);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&qb));
	EXPECT_EQ(-EINVAL, radiance_sem_wait_for(self->a, s, 1));
	queue_close(&qb);
}

TEST_F(alias, destroying_the_semaphore_cancels_the_alias)
{
	uint64_t offset;
	int s = radiance_sem_create(self->a, 0);
	int x = import_handle(self->b, self->a, s, &offset);
	struct radiance_waiter w = { .fd = self->b, .handle = x, .result = 1 };
	pthread_t t;

	ASSERT_LT(0, x);
	ASSERT_EQ(0, pthread_create(&t, NULL, radiance_waiter_run, &w));
	usleep(20000);
	EXPECT_EQ(0, radiance_sem_destroy(self->a, s));
	pthread_join(t, NULL);
	EXPECT_EQ(-ECANCELED, w.result);
	EXPECT_EQ(-ECANCELED, radiance_sem_value(self->b, x));
	EXPECT_EQ(RADIANCE_SEM_FAILED_VALUE, page_value(self->b, offset));
	EXPECT_EQ(-ECANCELED, radiance_sem_signal(self->b, x, 1));
	EXPECT_EQ(0, radiance_sem_fail(self->b, x, EIO)) TH_LOG("it has failed already");
	EXPECT_EQ(0, radiance_sem_destroy(self->b, x));
	EXPECT_EQ(0, sems_of(0));
	EXPECT_EQ(0, sems_of(1));
}

/*
 * A queue's WAIT on an alias, like one on the file's own semaphore, is
 * answered from the alias's slot when the handle is its last wait's and the
 * point is reached there; not once the alias is destroyed and its slot has
 * a new owner.
 */
TEST_F(alias, a_wait_on_a_destroyed_alias_does_not_read_its_reused_slot)
{
	uint64_t offset;
	int s = radiance_sem_create(self->a, 1);
	int x = import_handle(self->b, self->a, s, &offset);

	ASSERT_LT(0, x);
	expect_wait_after_its_slot_is_reused_faults(_metadata, self->b, x, offset);
}

TEST_F(alias, closing_the_owners_file_cancels_waiters_and_queues)
{
	uint64_t offset;
	struct queue qb;
	int s = radiance_sem_create(self->a, 0), t = radiance_sem_create(self->b, 0);
	int x = import_handle(self->b, self->a, s, &offset);
	struct radiance_waiter w = { .fd = self->b, .handle = x, .result = 1 };
	pthread_t th;

	ASSERT_LT(0, x);
	ASSERT_EQ(0, queue_open(self->b, 16, &qb));
	queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, 1, 0);
	queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, 1, 0);
	queue_publish(&qb);
	ASSERT_EQ(0, pthread_create(&th, NULL, radiance_waiter_run, &w));
	usleep(20000);
	EXPECT_EQ(1, w.result);
	close(self->a);
	self->a = -1;
	pthread_join(th, NULL);
	EXPECT_EQ(-ECANCELED, w.result);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&qb));
	EXPECT_EQ(ECANCELED, qb.ctl->error);
	EXPECT_EQ(-ECANCELED, radiance_sem_wait_for(self->b, t, 1));
	EXPECT_EQ(-ECANCELED, radiance_sem_value(self->b, x));
	EXPECT_EQ(RADIANCE_SEM_FAILED_VALUE, page_value(self->b, offset));
	EXPECT_EQ(0, sems_of(0));
	queue_close(&qb);
}

/* Queues `edges` edges of a ping-pong chain: qa signals s to n, qb (whose
 * handle x aliases s) waits for n and signals its own t to n, which qa
 * (through y, its alias of t) waits for before signalling n + 1. */
static void chain(struct queue *qa, struct queue *qb, int s, int x, int t, int y, int edges)
{
	for (int n = 1; n <= edges; n++) {
		queue_sem(qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, n, 0);
		queue_sem(qa, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, y, n, 0);
		queue_sem(qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, n, 0);
		queue_sem(qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, n, 0);
	}
}

/* Reads device `index`'s debugfs queue list until `stop`: each read holds
 * that scheduler's lock, so a pass of the other device that signals this
 * one now and then finds the lock held and wakes it the slow way. */
struct lister {
	int index;
	_Atomic int stop;
};

static void *list_queues(void *arg)
{
	struct lister *l = arg;
	char path[64], buf[4096];

	snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/radiance%d/queues", l->index);
	while (!atomic_load(&l->stop)) {
		int f = open(path, O_RDONLY);

		if (f < 0)
			break;
		while (read(f, buf, sizeof(buf)) > 0)
			;
		close(f);
	}
	return NULL;
}

TEST_F(alias, a_chain_of_edges_between_the_devices_loses_no_wake_up)
{
	enum { EDGES = 300 };
	struct lister lists[2] = { { .index = 0 }, { .index = 1 } };
	pthread_t th[2];
	struct queue qa, qb;
	int s = radiance_sem_create(self->a, 0), t = radiance_sem_create(self->b, 0);
	int x = import_handle(self->b, self->a, s, NULL);
	int y = import_handle(self->a, self->b, t, NULL);

	ASSERT_LT(0, x);
	ASSERT_LT(0, y);
	ASSERT_EQ(0, queue_open(self->a, 1024, &qa));
	ASSERT_EQ(0, queue_open(self->b, 1024, &qb));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, list_queues, &lists[i]));
	chain(&qa, &qb, s, x, t, y, EDGES);
	queue_publish(&qb);
	queue_publish(&qa);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qa));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qb));
	for (int i = 0; i < 2; i++) {
		atomic_store(&lists[i].stop, 1);
		pthread_join(th[i], NULL);
	}
	EXPECT_EQ(2 * EDGES, qa.ctl->read_index);
	EXPECT_EQ(2 * EDGES, qb.ctl->read_index);
	EXPECT_EQ(EDGES, radiance_sem_value(self->a, s));
	EXPECT_EQ(EDGES, radiance_sem_value(self->b, t));
	queue_close(&qa);
	queue_close(&qb);
}

TEST_F(alias, a_signal_skipped_in_a_pass_fails_the_other_devices_waiter)
{
	struct queue qa, qb;
	int f = radiance_sem_create(self->a, 0), s = radiance_sem_create(self->a, 0);
	int t = radiance_sem_create(self->b, 0), x = import_handle(self->b, self->a, s, NULL);

	ASSERT_LT(0, x);
	ASSERT_EQ(0, queue_open(self->a, 16, &qa));
	ASSERT_EQ(0, queue_open(self->b, 16, &qb));
	/* B waits for A's s; A's signal of s is skipped, in A's pass, when f
	 * fails: B's wait fails with f's error and so does what B signals. */
	queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, 1, 0);
	queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, 1, 0);
	queue_publish(&qb);
	queue_sem(&qa, RADIANCE_PACKET_WAIT_SEMAPHORE, RADIANCE_PACKET_SKIP_ON_FAILURE, f, 1, 1);
	queue_sem(&qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, 1, 0);
	queue_publish(&qa);
	usleep(20000);
	EXPECT_EQ(0, qb.ctl->read_index);
	ASSERT_EQ(0, radiance_sem_fail(self->a, f, EHOSTDOWN));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qa));
	EXPECT_EQ(2, qa.ctl->read_index);
	EXPECT_EQ(-EHOSTDOWN, radiance_sem_wait_for(self->a, s, 1));
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&qb));
	EXPECT_EQ(EHOSTDOWN, qb.ctl->error);
	EXPECT_EQ(-EHOSTDOWN, radiance_sem_wait_for(self->b, t, 1));
	queue_close(&qa);
	queue_close(&qb);
}

TEST_F(alias, a_queue_beside_one_stopped_at_an_alias_wait_is_still_kicked)
{
	enum { EDGES = 20 };
	struct queue qa, qb, qc;
	int s = radiance_sem_create(self->a, 0), x = import_handle(self->b, self->a, s, NULL);

	ASSERT_LT(0, x);
	ASSERT_EQ(0, queue_open(self->a, 64, &qa));
	ASSERT_EQ(0, queue_open(self->b, 64, &qb));
	ASSERT_EQ(0, queue_open(self->b, 64, &qc));
	for (int n = 1; n <= EDGES; n++) {
		queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, n, 0);
		queue_nop(&qb, 0);
	}
	queue_publish(&qb);
	for (int n = 1; n <= EDGES; n++) {
		/* A's signal runs B's pass, which ends idle with qb stopped
		 * at its next wait and qc, beside it, empty. */
		queue_sem(&qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, n, 0);
		queue_publish(&qa);
		ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qa));
		for (int i = 0; i < 100000 && atomic_load((_Atomic uint64_t *)&qb.ctl->read_index) < 2 * n; i++)
			usleep(100);
		ASSERT_EQ(2 * n, qb.ctl->read_index);
		/* qc's next packet needs a doorbell, and gets it. */
		ASSERT_EQ(1, kick_asked(&qc)) TH_LOG("edge %d: an empty queue was not asked to kick", n);
		if (n < EDGES) {
			usleep(2000);
			EXPECT_EQ(0, qb.ctl->needs_kick) TH_LOG("edge %d: a queue stopped at a wait", n);
		}
		queue_nop(&qc, 0);
		EXPECT_EQ(1, queue_publish(&qc));
		ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qc));
		EXPECT_EQ(n, qc.ctl->read_index);
	}
	/* Past its last wait, qb is empty and asks for kicks again. */
	EXPECT_EQ(1, kick_asked(&qb));
	queue_nop(&qb, 0);
	EXPECT_EQ(1, queue_publish(&qb));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&qb));
	EXPECT_EQ(2 * EDGES + 1, qb.ctl->read_index);
	queue_close(&qa);
	queue_close(&qb);
	queue_close(&qc);
}

TEST(the_waiting_side_of_a_chain_may_go_mid_chain)
{
	enum { EDGES = 400 };
	int ready[2], status;
	pid_t pid;

	for (int round = 0; round < 4; round++) {
		int a = radiance_open(0), s = radiance_sem_create(a, 0);
		struct queue qa;

		ASSERT_LT(0, s);
		ASSERT_EQ(0, queue_open(a, 1024, &qa));
		ASSERT_EQ(0, pipe(ready));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			/* Device 1's side: waits for each of A's signals and
			 * answers it, until killed. */
			int b = radiance_open(1), t = radiance_sem_create(b, 0);
			int x = import_handle(b, a, s, NULL);
			int y = import_handle(a, b, t, NULL);
			struct queue qb;

			if (x <= 0 || y <= 0 || queue_open(b, 1024, &qb) || write(ready[1], &y, sizeof(y)) != sizeof(y))
				_exit(1);
			for (int n = 1; n <= EDGES; n++) {
				queue_sem(&qb, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, x, n, 0);
				queue_sem(&qb, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, t, n, 0);
			}
			queue_publish(&qb);
			pause();
			_exit(0);
		}
		{
			int y;

			ASSERT_EQ(sizeof(y), read(ready[0], &y, sizeof(y)));
			for (int n = 1; n <= EDGES; n++) {
				queue_sem(&qa, RADIANCE_PACKET_SIGNAL_SEMAPHORE, 0, s, n, 0);
				queue_sem(&qa, RADIANCE_PACKET_WAIT_SEMAPHORE, 0, y, n, 0);
			}
		}
		queue_publish(&qa);
		/* Killed at a different point of the chain each round. */
		usleep(2000 + round * 5000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status));
		close(ready[0]);
		close(ready[1]);
		/* A stops at its first wait that B's going cancelled, or ran
		 * the whole chain before B went. */
		if (queue_drain(&qa) == RADIANCE_QUEUE_FAULTED) {
			EXPECT_EQ(ECANCELED, qa.ctl->error);
		} else {
			EXPECT_EQ(2 * EDGES, qa.ctl->read_index);
		}
		queue_close(&qa);
		close(a);
		for (int i = 0; i < 1000 && radiance_mem_stat("open_files"); i++)
			usleep(10000);
		EXPECT_EQ(0, sems_of(0));
		EXPECT_EQ(0, sems_of(1));
		EXPECT_EQ(0, radiance_mem_stat("open_files"));
	}
}

TEST(alias_cycles_leak_nothing)
{
	for (int i = 0; i < 50; i++) {
		int a = radiance_open(0), b = radiance_open(1);
		int s = radiance_sem_create(a, 0);
		int x = import_handle(b, a, s, NULL);
		int t = radiance_sem_create(b, 0);
		int y = import_handle(a, b, t, NULL);

		ASSERT_LT(0, x);
		ASSERT_LT(0, y);
		/* Each file aliases the other's: closing in either order ends
		 * both. */
		if (i % 2) {
			close(a);
			close(b);
		} else {
			close(b);
			close(a);
		}
	}
	EXPECT_EQ(0, sems_of(0));
	EXPECT_EQ(0, sems_of(1));
	EXPECT_EQ(0, radiance_mem_stat("open_files"));
}

TEST_HARNESS_MAIN
