// SPDX-License-Identifier: GPL-2.0
/*
 * Stress in the manner of IGT and KFDTest, for a guest with two CPUs or
 * more: signals into the blocking ioctl (SEM_WAIT) while it sleeps and
 * into the others while they run, close racing ioctls and mmap on other
 * threads, a destroy racing its queue's create, fork with live objects and
 * queues, more queues than the device has streams, and rings wrapping many
 * times under load. Every test ends by checking the device's counters are
 * back to zero: nothing leaked, nothing left in flight.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "radiance_queue.h"
#include "radiance_test.h"

#define MS (1000 * 1000LL)

/* Waits up to 10 s for device 0's counters to come back to zero. */
static void expect_nothing_left(struct __test_metadata *_metadata)
{
	static const char *const keys[] = {
		"vram_bos", "host_pinned", "semaphores", "queues", "commands_in_flight", "open_files",
	};

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		int64_t v = -1;

		for (int i = 0; i < 1000 && (v = radiance_mem_stat(keys[k])) != 0; i++)
			usleep(10000);
		EXPECT_EQ(0, v) TH_LOG("%s left", keys[k]);
	}
}

static void on_signal(int sig)
{
	(void)sig;
}

struct waiter {
	int fd;
	uint32_t sems[4];
	atomic_int done;
	atomic_int result;
	pthread_t thread;
};

/* Waits on all four semaphores reaching 1, with a deadline far away. */
static void *wait_all(void *arg)
{
	struct waiter *w = arg;
	struct radiance_sem_wait_point p[4];
	struct radiance_sem_wait args = { .points = (uintptr_t)p, .count = 4 };

	for (int i = 0; i < 4; i++)
		p[i] = (struct radiance_sem_wait_point){ .handle = w->sems[i], .value = 1 };
	args.deadline_ns = radiance_now_ns() + 20000 * MS;
	atomic_store(&w->result, radiance_ioctl(w->fd, RADIANCE_IOCTL_SEM_WAIT, &args));
	atomic_store(&w->done, 1);
	return NULL;
}

/* Without SA_RESTART a signal ends the wait with EINTR, long before its
 * deadline; with SA_RESTART the wait goes on through a storm of signals
 * and returns when the semaphores are signalled. */
TEST(signals_interrupt_or_restart_sem_wait)
{
	int fd = radiance_open(0);

	ASSERT_LE(0, fd);
	for (int restart = 0; restart < 2; restart++) {
		struct sigaction sa = { .sa_handler = on_signal, .sa_flags = restart ? SA_RESTART : 0 };
		struct waiter w = { .fd = fd };
		int64_t start = radiance_now_ns();

		ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
		for (int i = 0; i < 4; i++) {
			int h = radiance_sem_create(fd, 0);

			ASSERT_LT(0, h);
			w.sems[i] = h;
		}
		ASSERT_EQ(0, pthread_create(&w.thread, NULL, wait_all, &w));
		for (int i = 0; i < 200 && !atomic_load(&w.done); i++) {
			pthread_kill(w.thread, SIGUSR1);
			usleep(1000);
		}
		if (restart) {
			EXPECT_EQ(0, atomic_load(&w.done)) TH_LOG("SA_RESTART: the wait goes on");
			for (int i = 0; i < 4; i++) {
				struct radiance_sem_signal s = { .handle = w.sems[i], .value = 1 };

				pthread_kill(w.thread, SIGUSR1);
				ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_SIGNAL, &s));
			}
		}
		pthread_join(w.thread, NULL);
		EXPECT_EQ(restart ? 0 : -EINTR, atomic_load(&w.result));
		EXPECT_GT(10000 * MS, radiance_now_ns() - start) TH_LOG("long before the deadline");
		for (int i = 0; i < 4; i++) {
			struct radiance_sem_destroy d = { .handle = w.sems[i] };

			EXPECT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_DESTROY, &d));
		}
	}
	signal(SIGUSR1, SIG_DFL);
	close(fd);
	expect_nothing_left(_metadata);
}

struct caller {
	int fd;
	atomic_int stop;
	long rounds, failures;
	pthread_t thread;
};

/* One of each call that does not sleep, over and over: each must succeed. */
static void *call_everything(void *arg)
{
	struct caller *c = arg;

	while (!atomic_load(&c->stop)) {
		struct radiance_queue_create qc = { .ring_packets = 16 };
		struct radiance_bo_export ex = { .flags = RADIANCE_EXPORT_CLOEXEC };
		struct radiance_sem_export_sync_file sf = { .value = 1, .flags = RADIANCE_EXPORT_CLOEXEC };
		int bo = radiance_bo_create(c->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, NULL);
		int sem = radiance_sem_create(c->fd, 0);
		int failed = bo <= 0 || sem <= 0;

		if (!failed) {
			struct radiance_sem_signal sig = { .handle = sem, .value = 1 };
			struct radiance_sem_query q = { .handle = sem };
			struct radiance_sem_destroy d = { .handle = sem };

			ex.handle = bo;
			sf.handle = sem;
			failed |= radiance_ioctl(c->fd, RADIANCE_IOCTL_BO_EXPORT, &ex) != 0;
			failed |= radiance_ioctl(c->fd, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &sf) != 0;
			failed |= radiance_ioctl(c->fd, RADIANCE_IOCTL_SEM_SIGNAL, &sig) != 0;
			failed |= radiance_ioctl(c->fd, RADIANCE_IOCTL_SEM_QUERY, &q) != 0 || q.value != 1;
			failed |= radiance_ioctl(c->fd, RADIANCE_IOCTL_SEM_DESTROY, &d) != 0;
			failed |= radiance_bo_destroy(c->fd, bo) != 0;
			if (!failed) {
				close(ex.fd);
				close(sf.fd);
			}
		}
		if (radiance_ioctl(c->fd, RADIANCE_IOCTL_QUEUE_CREATE, &qc)) {
			failed = 1;
		} else {
			struct radiance_queue_kick k = { .queue_id = qc.queue_id };
			struct radiance_queue_destroy d = { .queue_id = qc.queue_id };

			failed |= radiance_ioctl(c->fd, RADIANCE_IOCTL_QUEUE_KICK, &k) != 0;
			failed |= radiance_ioctl(c->fd, RADIANCE_IOCTL_QUEUE_DESTROY, &d) != 0;
		}
		c->failures += failed;
		c->rounds++;
	}
	return NULL;
}

/* SEM_WAIT is the one ioctl that sleeps interruptibly; a storm of signals
 * (no SA_RESTART) must not make any other fail, not even with EINTR. */
TEST(signals_never_fail_the_calls_that_do_not_sleep)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct caller c = { .fd = radiance_open(0) };

	ASSERT_LE(0, c.fd);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&c.thread, NULL, call_everything, &c));
	for (int i = 0; i < 3000; i++) {
		pthread_kill(c.thread, SIGUSR1);
		usleep(200);
	}
	atomic_store(&c.stop, 1);
	pthread_join(c.thread, NULL);
	signal(SIGUSR1, SIG_DFL);
	TH_LOG("%ld rounds under 3000 signals", c.rounds);
	EXPECT_LT(0, c.rounds);
	EXPECT_EQ(0, c.failures);
	close(c.fd);
	expect_nothing_left(_metadata);
}

struct racer {
	atomic_int *fd;		/* the number the main thread closes and reopens */
	atomic_int stop;
	long calls, mapped;
};

/* Makes and frees objects on whatever file the number names now. */
static void *ioctl_racer(void *arg)
{
	struct racer *r = arg;

	while (!atomic_load(&r->stop)) {
		int fd = atomic_load(r->fd);
		struct radiance_queue_create qc = { .ring_packets = 16 };
		int bo = radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, NULL);
		int sem = radiance_sem_create(fd, 0);

		if (!radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_CREATE, &qc)) {
			struct radiance_queue_kick k = { .queue_id = qc.queue_id };
			struct radiance_queue_destroy d = { .queue_id = qc.queue_id };

			radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_KICK, &k);
			radiance_ioctl(fd, RADIANCE_IOCTL_QUEUE_DESTROY, &d);
		}
		if (bo > 0)
			radiance_bo_destroy(fd, bo);
		if (sem > 0) {
			struct radiance_sem_destroy d = { .handle = sem };

			radiance_ioctl(fd, RADIANCE_IOCTL_SEM_DESTROY, &d);
		}
		r->calls++;
	}
	return NULL;
}

/* Maps what it can find of the file: a fresh BO, the semaphore page. */
static void *mmap_racer(void *arg)
{
	struct racer *r = arg;

	while (!atomic_load(&r->stop)) {
		int fd = atomic_load(r->fd);
		struct radiance_bo_create c;
		int bo = radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 8192, RADIANCE_BO_MAPPABLE, &c);
		void *p;

		if (bo > 0) {
			p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.mmap_offset);
			radiance_bo_destroy(fd, bo);
			if (p != MAP_FAILED) {
				/* The mapping keeps the pages: still writable after destroy and close. */
				memset(p, 0xa5, 8192);
				munmap(p, 8192);
				r->mapped++;
			}
		}
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
		if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	return NULL;
}

TEST(close_races_ioctl_and_mmap_on_other_threads)
{
	atomic_int fd = radiance_open(0);
	struct racer r = { .fd = &fd };
	pthread_t t[3];

	ASSERT_LE(0, atomic_load(&fd));
	ASSERT_EQ(0, pthread_create(&t[0], NULL, ioctl_racer, &r));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, ioctl_racer, &r));
	ASSERT_EQ(0, pthread_create(&t[2], NULL, mmap_racer, &r));
	for (int i = 0; i < 150; i++) {
		int old = atomic_load(&fd), fresh;

		usleep(2000 + (i % 7) * 1000);
		/* The number goes away under the racers, then names a new file. */
		close(old);
		usleep(500);
		fresh = radiance_open(i & 1);
		ASSERT_LE(0, fresh);
		atomic_store(&fd, fresh);
	}
	atomic_store(&r.stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	close(atomic_load(&fd));
	TH_LOG("%ld ioctl rounds, %ld mappings", r.calls, r.mapped);
	EXPECT_LT(0, r.calls);
	expect_nothing_left(_metadata);
}

struct guesser {
	int fd;
	atomic_uint next_id;	/* the id the next QUEUE_CREATE will give */
	atomic_int stop;
	long destroyed;
};

/* Destroys the queue QUEUE_CREATE is making on another thread, by its
 * id guessed ahead of time, as early as it can. */
static void *destroy_guessed(void *arg)
{
	struct guesser *g = arg;

	while (!atomic_load(&g->stop)) {
		struct radiance_queue_destroy d = { .queue_id = atomic_load(&g->next_id) };

		if (!radiance_ioctl(g->fd, RADIANCE_IOCTL_QUEUE_DESTROY, &d))
			g->destroyed++;
	}
	return NULL;
}

/* Regression: QUEUE_CREATE listed the queue in its file before handing it
 * to the scheduler, so a destroy in between left it scheduled, holding its
 * file open for ever (found by close_races_ioctl_and_mmap_on_other_threads,
 * where a closed and reopened number gave one thread's destroy the id of
 * another thread's new queue). Every queue, destroyed by whichever thread
 * got there first, must be gone once the file closes. */
TEST(queue_destroyed_while_being_created_is_not_left_scheduled)
{
	struct guesser g = { .fd = radiance_open(0), .next_id = 1 };
	pthread_t t;
	long created = 0;

	ASSERT_LE(0, g.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, destroy_guessed, &g));
	for (int i = 0; i < 3000; i++) {
		struct radiance_queue_create qc = { .ring_packets = 16 };
		struct radiance_queue_destroy d;

		if (radiance_ioctl(g.fd, RADIANCE_IOCTL_QUEUE_CREATE, &qc))
			continue;
		created++;
		atomic_store(&g.next_id, qc.queue_id + 1);
		d = (struct radiance_queue_destroy){ .queue_id = qc.queue_id };
		radiance_ioctl(g.fd, RADIANCE_IOCTL_QUEUE_DESTROY, &d);
	}
	atomic_store(&g.stop, 1);
	pthread_join(t, NULL);
	TH_LOG("%ld queues, %ld destroyed by the guessing thread", created, g.destroyed);
	EXPECT_LT(0, created);
	EXPECT_EQ(0, radiance_mem_stat("queues")) TH_LOG("every queue destroyed, the file still open");
	close(g.fd);
	expect_nothing_left(_metadata);
}

/* A child inherits the file, its mapped ring and semaphores: it submits on
 * the parent's queue and exits (or is killed); the parent's queue, objects
 * and values are as they should be either way. */
TEST(fork_with_live_objects_and_queues)
{
	int fd = radiance_open(0);
	struct queue q;
	int sem;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_open(fd, 64, &q));
	sem = radiance_sem_create(fd, 0);
	ASSERT_LT(0, sem);
	for (int round = 0; round < 6; round++) {
		struct radiance_semaphore_packet sig = {
			.header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE, .flags = RADIANCE_PACKET_BARRIER },
			.handle = sem, .value = round + 1,
		};
		int status, ready[2];
		char byte = 0;
		pid_t pid;

		ASSERT_EQ(0, pipe(ready));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			/* The child's own objects in the shared file, then work on the queue. */
			radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, NULL);
			for (int i = 0; i < 8; i++)
				queue_nop(&q, 0);
			queue_put(&q, &sig);
			queue_publish(&q);
			if (write(ready[1], &byte, 1) != 1)
				_exit(1);
			if (round & 1)
				pause();	/* killed below, its work maybe still in flight */
			_exit(0);
		}
		close(ready[1]);
		ASSERT_EQ(1, read(ready[0], &byte, 1));
		close(ready[0]);
		if (round & 1)
			kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		/* The parent's view of the shared ring: what the child wrote. */
		q.written = atomic_load((_Atomic uint64_t *)&q.ctl->write_index);
		queue_publish(&q);
		EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q));
		EXPECT_EQ(0, radiance_sem_wait_for(fd, sem, round + 1));
		EXPECT_EQ(round + 1, radiance_sem_value(fd, sem));
	}
	queue_close(&q);
	close(fd);
	expect_nothing_left(_metadata);
}

/* Every queue a file may have (64), far more than the streams: each
 * fills its own part of one VRAM BO and signals its own semaphore, and
 * the scheduler gets to all of them. */
TEST(more_queues_than_streams_all_complete)
{
	struct radiance_get_info info = { 0 };
	struct queue *q;
	uint32_t sems[64], n;
	int fd = radiance_open(0), bo;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_GET_INFO, &info));
	n = info.max_queues < 64 ? info.max_queues : 64;
	ASSERT_LT(info.streams, n) TH_LOG("more queues than streams");
	q = calloc(n, sizeof(*q));
	ASSERT_NE(NULL, q);
	bo = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, n * 256, 0, NULL);
	ASSERT_LT(0, bo);
	for (uint32_t i = 0; i < n; i++) {
		struct radiance_fill_packet fill = {
			.header.kind = RADIANCE_PACKET_FILL, .dst = bo, .pattern_size = 4,
			.dst_offset = i * 256, .size = 256, .pattern = 0x1000 + i,
		};
		struct radiance_semaphore_packet sig = {
			.header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE, .flags = RADIANCE_PACKET_BARRIER },
			.value = 1,
		};
		int h = radiance_sem_create(fd, 0);

		ASSERT_LT(0, h);
		sems[i] = sig.handle = h;
		ASSERT_EQ(0, queue_open(fd, 16, &q[i]));
		queue_put(&q[i], &fill);
		queue_put(&q[i], &sig);
	}
	for (uint32_t i = 0; i < n; i++)
		queue_publish(&q[i]);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t word = 0;

		EXPECT_EQ(0, radiance_sem_wait_for(fd, sems[i], 1)) TH_LOG("queue %u", i);
		EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q[i]));
		EXPECT_EQ(0, queue_read_vram(&q[i], bo, i * 256 + 252, &word, 4));
		EXPECT_EQ(0x1000 + i, word);
	}
	for (uint32_t i = 0; i < n; i++)
		queue_close(&q[i]);
	free(q);
	radiance_bo_destroy(fd, bo);
	close(fd);
	expect_nothing_left(_metadata);
}

struct wrapper {
	int fd;
	uint32_t sem;
	uint32_t packets;
	int rounds;
	uint64_t read_index;
	uint32_t status;
};

/* A 16-packet ring wrapped `rounds` times: NOPs and FENCEs with a
 * semaphore signal every ring's worth, the last one the total. */
static void *wrap_ring(void *arg)
{
	struct wrapper *w = arg;
	struct queue q;

	if (queue_open(w->fd, w->packets, &q))
		return NULL;
	for (int i = 1; i <= w->rounds * (int)w->packets; i++) {
		if (i % w->packets == 0) {
			struct radiance_semaphore_packet sig = {
				.header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE },
				.handle = w->sem, .value = i / w->packets,
			};

			queue_put(&q, &sig);
		} else {
			struct radiance_packet p = {
				.header = { .kind = i % 3 ? RADIANCE_PACKET_NOP : RADIANCE_PACKET_FENCE },
			};

			queue_put(&q, &p);
		}
		if (i % 5 == 0)
			queue_publish(&q);
	}
	queue_publish(&q);
	w->status = queue_drain(&q);
	w->read_index = atomic_load((_Atomic uint64_t *)&q.ctl->read_index);
	queue_close(&q);
	return NULL;
}

TEST(rings_wrap_many_times_under_load)
{
	struct wrapper w[4];
	pthread_t t[4];
	int fd = radiance_open(0);

	ASSERT_LE(0, fd);
	for (int i = 0; i < 4; i++) {
		int sem = radiance_sem_create(fd, 0);

		ASSERT_LT(0, sem);
		w[i] = (struct wrapper){ .fd = fd, .sem = sem, .packets = 16, .rounds = 40 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, wrap_ring, &w[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, w[i].status);
		EXPECT_EQ(16 * 40, w[i].read_index) TH_LOG("ring %d: every packet completed", i);
		EXPECT_EQ(40, radiance_sem_value(fd, w[i].sem));
	}
	close(fd);
	expect_nothing_left(_metadata);
}

struct ringer {
	int fd;
	int rounds;
	int stranded;
};

/*
 * One NOP at a time, each rung in (when the ring asks) and waited for
 * without ringing again: a doorbell dropped while another thread's pass
 * held the scheduler strands it.
 */
static void *ring_one_at_a_time(void *arg)
{
	struct radiance_packet nop = { .header.kind = RADIANCE_PACKET_NOP };
	struct ringer *r = arg;
	struct queue q;

	if (queue_open(r->fd, 16, &q)) {
		r->stranded = -1;
		return NULL;
	}
	for (int i = 0; i < r->rounds && !r->stranded; i++) {
		int64_t deadline = radiance_now_ns() + 2000000000LL;

		queue_put(&q, &nop);
		queue_publish(&q);
		while (atomic_load((_Atomic uint64_t *)&q.ctl->read_index) != q.written) {
			if (radiance_now_ns() > deadline) {
				r->stranded = i + 1;
				break;
			}
			sched_yield();
		}
	}
	queue_close(&q);
	return NULL;
}

TEST(doorbells_rung_while_another_pass_runs_are_not_lost)
{
	struct ringer r[4];
	pthread_t t[4];
	int fd = radiance_open(0);

	ASSERT_LE(0, fd);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct ringer){ .fd = fd, .rounds = 1500 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, ring_one_at_a_time, &r[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, r[i].stranded) TH_LOG("ring %d: NOP %d not done 2 s after its doorbell", i, r[i].stranded);
	}
	close(fd);
	expect_nothing_left(_metadata);
}

/*
 * A wait for one point, woken, reads the point in the value page. Here the
 * semaphore is destroyed while its waiters sleep (or start), and new ones
 * made at once with values above the point take its slot: every wait
 * must fail (ECANCELED, or ENOENT for one that began after the destroy),
 * none succeed on the new owner's value. The deterministic case is
 * sem_test's sem.a_woken_wait_does_not_take_a_reused_slot_for_its_point.
 */
TEST(waits_on_a_destroyed_semaphore_never_see_its_slots_next_owner)
{
	enum { ROUNDS = 300, WAITERS = 3 };
	int fd = radiance_open(0), succeeded = 0;

	ASSERT_LE(0, fd);
	for (int r = 0; r < ROUNDS; r++) {
		struct radiance_sem_create sem = { 0 }, next[2] = { { .initial = 5 }, { .initial = 5 } };
		struct radiance_sem_destroy d = { 0 };
		struct radiance_waiter w[WAITERS];
		pthread_t t[WAITERS];

		ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &sem));
		for (int i = 0; i < WAITERS; i++) {
			w[i] = (struct radiance_waiter){ .fd = fd, .handle = sem.handle };
			ASSERT_EQ(0, pthread_create(&t[i], NULL, radiance_waiter_run, &w[i]));
		}
		/* Sometimes before the waiters sleep, mostly after. */
		usleep(r % 4 * 500);
		d.handle = sem.handle;
		ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_DESTROY, &d));
		ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &next[0]));
		ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &next[1]));
		for (int i = 0; i < WAITERS; i++) {
			pthread_join(t[i], NULL);
			if (w[i].result == 0)
				succeeded++;
			else
				EXPECT_TRUE(w[i].result == -ECANCELED || w[i].result == -ENOENT)
					TH_LOG("round %d: %d", r, w[i].result);
		}
		for (int i = 0; i < 2; i++) {
			d.handle = next[i].handle;
			ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_SEM_DESTROY, &d));
		}
	}
	EXPECT_EQ(0, succeeded) TH_LOG("waits that took a new semaphore's value for their point");
	close(fd);
	expect_nothing_left(_metadata);
}

TEST_HARNESS_MAIN
