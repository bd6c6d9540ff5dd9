// SPDX-License-Identifier: GPL-2.0
/*
 * User devices: the test is both the server behind /dev/radiance-control
 * (a tiny gluon-sim-16 Gluon that runs MEM COPY through the host windows)
 * and the client of the device it declares. Needs the module loaded as
 * radiance_test.h says (two emulated devices, so the user device is
 * /dev/radiance2), and its file at $RADIANCE_KO: the test reloads it with
 * a launch timeout of USER_TIMEOUT_MS, and back as it found it at the end.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"
#include "radiance_queue.h"
#include "radiance_module.h"

/* The launch timeout of the user devices here. Their server is this test,
 * which holds commands unanswered on purpose for a few hundred
 * milliseconds between its steps (radiance_test.h's timeout is the
 * emulated device's, which reports progress as it works). */
#define USER_TIMEOUT_MS 1000

#define VRAM_SIZE (2u << 20)

struct server {
	int ctl;
	unsigned int index;
	uint8_t vram[VRAM_SIZE];
};

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* An access of host memory at DMA address `addr`: 0 or -errno. */
static int host_access(int ctl, int to_host, uint64_t addr, void *buf, uint32_t len)
{
	struct radiance_user_host_access a = { .addr = addr, .user_ptr = (uintptr_t)buf, .len = len };

	return radiance_ioctl(ctl, to_host ? RADIANCE_IOCTL_USER_HOST_WRITE : RADIANCE_IOCTL_USER_HOST_READ, &a);
}

static struct radiance_user_declare declaration(void)
{
	struct radiance_user_declare d = {
		.dialect = RADIANCE_DIALECT_GLUON_SIM_16, .streams = 4, .stream_depth = 1,
		.cores = 1, .warps_per_core = 1, .threads_per_warp = 1, .vram_size = VRAM_SIZE,
	};

	strcpy(d.name, "kselftest server");
	return d;
}

/* Opens the control node and declares the device `d` says by `cmd` (a
 * USER_DECLARE of some size); 0 or -errno. */
static int server_declare(struct server *s, struct radiance_user_declare *d, unsigned long cmd)
{
	int ret;

	memset(s->vram, 0, sizeof(s->vram));
	s->ctl = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC);
	if (s->ctl < 0)
		return -errno;
	ret = radiance_ioctl(s->ctl, cmd, d);
	s->index = d->device_index;
	return ret;
}

/* Opens the control node and declares the device with `flags`
 * (RADIANCE_USER_DECLARE_*); 0 or -errno. */
static int server_start(struct server *s, uint32_t flags)
{
	struct radiance_user_declare d = declaration();

	d.flags = flags;
	return server_declare(s, &d, RADIANCE_IOCTL_USER_DECLARE);
}

/* Runs each MEM COPY of the `n` bytes of frames read (anything else
 * fails), answering them if `answer`: 0 or -errno of a write. */
static int server_run(struct server *s, const uint8_t *frames, ssize_t n, int answer)
{
	for (ssize_t i = 0; i < n; i += 16) {
		const uint8_t *f = frames + i;
		uint32_t src = le32(f + 3), dst = le32(f + 7), len = le32(f + 11);
		uint8_t r[16] = { f[0], RADIANCE_GLUON_ERR_BAD_COMMAND };

		if (!answer)
			continue;
		if (f[1] == 1 && f[2] == 0) {
			int d2h = f[15] & 1;
			uint32_t at = d2h ? src : dst;

			r[1] = RADIANCE_GLUON_ERR_BAD_ADDRESS;
			if (at < VRAM_SIZE && len <= VRAM_SIZE - at)
				r[1] = host_access(s->ctl, d2h, d2h ? dst : src, s->vram + at, len) ?
					RADIANCE_GLUON_ERR_DMA : 0;
		}
		if (write(s->ctl, r, sizeof(r)) != sizeof(r))
			return -errno;
	}
	return 0;
}

/* Reads the frames there are and runs them (server_run): how many it
 * read, or -errno. */
static int server_serve(struct server *s, int answer)
{
	uint8_t frames[16 * 64];
	ssize_t n = read(s->ctl, frames, sizeof(frames));
	int ret;

	if (n < 0)
		return -errno;
	ret = server_run(s, frames, n, answer);
	return ret ? ret : n / 16;
}

/* What drain_serving() returns for a queue still running when it gives up:
 * no status the kernel writes. */
#define NOT_DRAINED UINT32_MAX

/* Serves until every packet written on `q` completed or it faulted: the
 * queue's status, or NOT_DRAINED after 20000 rounds. */
static uint32_t drain_serving(struct server *s, struct queue *q)
{
	for (int i = 0; i < 20000; i++) {
		uint64_t done = atomic_load((_Atomic uint64_t *)&q->ctl->read_index);

		if (done == q->written || q->ctl->status != RADIANCE_QUEUE_ACTIVE)
			return q->ctl->status;
		server_serve(s, 1);
		usleep(100);
	}
	return NOT_DRAINED;
}

/* A COPY of `size` bytes from the start of BO `src` to `dst_offset` in BO
 * `dst`. */
static void copy_to(struct queue *q, uint32_t src, uint32_t dst, uint64_t dst_offset, uint64_t size)
{
	struct radiance_copy_packet p = {
		.header = { .kind = RADIANCE_PACKET_COPY }, .src = src, .dst = dst,
		.dst_offset = dst_offset, .size = size,
	};

	queue_put(q, &p);
}

static void copy(struct queue *q, uint32_t src, uint32_t dst, uint64_t size)
{
	copy_to(q, src, dst, 0, size);
}

/* Counter `key` of the server's device's debugfs `mem`, or -1. Reading it
 * takes the scheduler's lock: a pass that runs ends first. */
static int64_t mem_stat(const struct server *s, const char *key)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/radiance%u/mem", s->index);
	return radiance_debugfs_stat(path, key);
}

/* Commands the scheduler has given the server's device so far, or -1. */
static int64_t issued(const struct server *s)
{
	return mem_stat(s, "commands_issued");
}

/* Waits until no pass of the device's scheduler has begun for 10 ms: one
 * that ran meanwhile has ended (see mem_stat()), and a worker woken for one
 * had the CPU this thread left it. A test that needs its next doorbell to be
 * the only thing that brings a pass calls it first. 0, or -1 after 5 s. */
static int settle(const struct server *s)
{
	int64_t passes = mem_stat(s, "scheduler_passes");

	for (int i = 0; i < 500 && passes >= 0; i++) {
		int64_t now;

		usleep(10 * 1000);
		now = mem_stat(s, "scheduler_passes");
		if (now == passes)
			return 0;
		passes = now;
	}
	return -1;
}

/* Waits until the scheduler has given the device `n` commands in all (so
 * that the last is queued for the server): 0, or -1 after 5 s. */
static int wait_issued(const struct server *s, int64_t n)
{
	for (int i = 0; i < 5000; i++) {
		if (issued(s) >= n)
			return 0;
		usleep(1000);
	}
	return -1;
}

/* A registry counter from debugfs `radiance/devices`, or -1. */
static int64_t devices_stat(const char *key)
{
	return radiance_debugfs_stat("/sys/kernel/debug/radiance/devices", key);
}

FIXTURE(user)
{
	struct server *s;
	int fd;
};

FIXTURE_SETUP(user)
{
	self->s = calloc(1, sizeof(*self->s));
	ASSERT_NE(NULL, self->s);
	ASSERT_EQ(0, server_start(self->s, 0));
	EXPECT_EQ(RADIANCE_TEST_DEVICES, self->s->index) TH_LOG("the lowest free index");
	self->fd = radiance_open(self->s->index);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(user)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->s->ctl >= 0)
		close(self->s->ctl);
	free(self->s);
}

TEST_F(user, the_declared_device_is_what_get_info_says)
{
	struct radiance_get_info info = { 0 };

	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	EXPECT_EQ(RADIANCE_BACKEND_USER, info.backend);
	EXPECT_STREQ("kselftest server", info.name);
	EXPECT_EQ(self->s->index, info.device_index);
	EXPECT_EQ(VRAM_SIZE, info.vram_size);
	EXPECT_EQ(RADIANCE_DIALECT_GLUON_SIM_16, info.dialect);
	EXPECT_EQ(4, info.streams);
	EXPECT_EQ(0, info.caps);
	EXPECT_EQ(0, info.builtins);
	/* Its VRAM is in the server's process. */
	EXPECT_EQ(-EOPNOTSUPP, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096,
						  RADIANCE_BO_MAPPABLE, NULL));
}

TEST_F(user, declarations_are_checked)
{
	struct radiance_user_declare d = declaration();
	int ctl = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC);
	struct radiance_user_host_access a = { .len = 4 };
	uint8_t buf[16];

	ASSERT_LE(0, ctl);
	/* Nothing is declared on this file yet. */
	EXPECT_EQ(-ENXIO, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_HOST_READ, &a));
	EXPECT_EQ(-1, read(ctl, buf, sizeof(buf)));
	EXPECT_EQ(ENXIO, errno);
	d.flags = RADIANCE_USER_DECLARE_REPORTS_PROGRESS << 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d));
	d = declaration();
	d.streams = 5;
	EXPECT_EQ(-EINVAL, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d));
	d = declaration();
	d.vram_size = 4097;
	EXPECT_EQ(-EINVAL, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d));
	d = declaration();
	d.dialect = 99;
	EXPECT_EQ(-EINVAL, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d));
	d = declaration();
	memset(d.name, 'x', sizeof(d.name));
	EXPECT_EQ(-EINVAL, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d));
	d = declaration();
	d.caps = RADIANCE_CAP_VRAM_MAPPABLE;
	EXPECT_EQ(-EOPNOTSUPP, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d));
	d = declaration();
	ASSERT_EQ(0, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d));
	EXPECT_EQ(self->s->index + 1, d.device_index);
	EXPECT_EQ(-EBUSY, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d)) TH_LOG("one per file");
	close(ctl);
}

TEST_F(user, copies_run_through_the_server_and_only_mapped_memory_is_reachable)
{
	struct radiance_bo_create host, back, dev;
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, &dev);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &host);
	int dst = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &back);
	uint32_t *in, *out;
	struct queue q;
	uint8_t word[4];

	ASSERT_LE(0, vram);
	ASSERT_LE(0, src);
	ASSERT_LE(0, dst);
	in = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, host.mmap_offset);
	out = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, back.mmap_offset);
	ASSERT_NE(MAP_FAILED, in);
	ASSERT_NE(MAP_FAILED, out);
	for (int i = 0; i < 1024; i++)
		in[i] = 0xC0DE0000 + i;

	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	copy(&q, src, vram, 4096);
	copy(&q, vram, dst, 4096);
	queue_publish(&q);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q));
	EXPECT_EQ(2, q.ctl->read_index);
	for (int i = 0; i < 1024; i++) {
		ASSERT_EQ(0xC0DE0000 + i, out[i]) TH_LOG("word %d", i);
	}
	ASSERT_GE(VRAM_SIZE - 4096, dev.device_address);
	EXPECT_EQ(0, memcmp(self->s->vram + dev.device_address, in, 4096))
		TH_LOG("the server's VRAM holds the bytes");

	/* No command names these: the kernel is the device's IOMMU. */
	EXPECT_EQ(-EFAULT, host_access(self->s->ctl, 0, 0, word, 4));
	EXPECT_EQ(-EFAULT, host_access(self->s->ctl, 1, 0x1000, word, 4));
	EXPECT_EQ(-EINVAL, host_access(self->s->ctl, 0, 0, word, RADIANCE_USER_HOST_ACCESS_MAX + 1));
	queue_close(&q);
	munmap(in, 4096);
	munmap(out, 4096);
}

/* Host accesses move whole runs of a window at once, straight into the
 * server's buffer where its pages are there, else a page at a time (a
 * buffer never touched); a buffer the server cannot write is EFAULT. */
TEST_F(user, host_accesses_reach_touched_untouched_and_read_only_buffers)
{
	enum { SIZE = 64 << 10 };
	struct radiance_bo_create host;
	struct pollfd pfd = { .fd = self->s->ctl, .events = POLLIN };
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, SIZE, 0, NULL);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, SIZE, RADIANCE_BO_MAPPABLE, &host);
	uint8_t frame[16], r[16] = { 0 };
	uint8_t *in, *fresh, *fresh2, *ro, *page;
	uint32_t addr, len;
	struct queue q;

	ASSERT_LE(0, vram);
	ASSERT_LE(0, src);
	in = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, host.mmap_offset);
	fresh = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fresh2 = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	page = malloc(SIZE);
	ASSERT_NE(MAP_FAILED, in);
	ASSERT_NE(MAP_FAILED, fresh);
	ASSERT_NE(MAP_FAILED, fresh2);
	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(NULL, page);
	for (int i = 0; i < SIZE; i++)
		in[i] = i * 7 + i / 4096;

	/* The command keeps its host memory in a window until answered. */
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	copy(&q, src, vram, SIZE);
	queue_publish(&q);
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	ASSERT_EQ(16, read(self->s->ctl, frame, sizeof(frame)));
	addr = le32(frame + 3);
	len = le32(frame + 11);
	ASSERT_LT(4096, len) TH_LOG("a run of more than a page");

	/* Never touched: no page there, so a page at a time. */
	ASSERT_EQ(0, host_access(self->s->ctl, 0, addr, fresh, len));
	EXPECT_EQ(0, memcmp(fresh, in, len));
	/* Touched: straight. */
	memset(page, 0, SIZE);
	ASSERT_EQ(0, host_access(self->s->ctl, 0, addr, page, len));
	EXPECT_EQ(0, memcmp(page, in, len));
	EXPECT_EQ(-EFAULT, host_access(self->s->ctl, 0, addr, ro, len));
	/* The other way: from a touched buffer, then from one never touched
	 * (which reads as zeros). */
	for (int i = 0; i < SIZE; i++)
		page[i] = ~in[i];
	ASSERT_EQ(0, host_access(self->s->ctl, 1, addr, page, len));
	EXPECT_EQ(0, memcmp(page, in, len));
	ASSERT_EQ(0, host_access(self->s->ctl, 1, addr, fresh2, len));
	for (uint32_t i = 0; i < len; i++) {
		ASSERT_EQ(0, in[i]) TH_LOG("byte %u", i);
	}

	r[0] = frame[0];
	EXPECT_EQ(16, write(self->s->ctl, r, sizeof(r)));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q));
	queue_close(&q);
	free(page);
	munmap(ro, SIZE);
	munmap(fresh2, SIZE);
	munmap(fresh, SIZE);
	munmap(in, SIZE);
}

TEST_F(user, freed_vram_is_scrubbed_by_commands)
{
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 8192, 0, NULL);
	uint8_t frames[16 * 8];
	uint8_t zeros[4096], r[16] = { 0 };
	ssize_t n;

	ASSERT_LE(0, vram);
	memset(self->s->vram, 0xAB, 8192);
	ASSERT_EQ(0, radiance_bo_destroy(self->fd, vram));
	/* A device without MEM SET: copies from a page of zeros. */
	n = read(self->s->ctl, frames, sizeof(frames));
	ASSERT_LE(16, n);
	EXPECT_EQ(1, frames[1]) TH_LOG("MEM");
	EXPECT_EQ(0, frames[2]) TH_LOG("COPY");
	EXPECT_EQ(0, frames[15] & 1) TH_LOG("host to device");
	ASSERT_EQ(0, host_access(self->s->ctl, 0, le32(frames + 3), zeros, le32(frames + 11) < 4096 ?
				  le32(frames + 11) : 4096));
	for (int i = 0; i < 4096 && i < (int)le32(frames + 11); i++) {
		ASSERT_EQ(0, zeros[i]) TH_LOG("byte %d", i);
	}
	/* Answered, the scrub is the kernel's business: the scheduler never
	 * sees it. */
	for (ssize_t i = 0; i < n; i += 16) {
		r[0] = frames[i];
		EXPECT_EQ(16, write(self->s->ctl, r, sizeof(r)));
	}
}

/* A scrub's command sizes (kmod/hw/user/scrub.rs): a short first one, which an
 * operation right after a free may find running, then longer ones. */
enum { SCRUB_FIRST = 32 << 10, SCRUB = 256 << 10 };

/* A scrub's commands go one at a time, and copies that keep off the freed
 * range go between two of them, but no more than 16 (so that the scrub
 * does not starve); the range's next user, writing where the scrub has not
 * reached yet, comes after the scrub's command there. */
TEST_F(user, copies_elsewhere_go_between_a_scrubs_commands)
{
	enum { FREED = 512 << 10, COPIES = 17, BESIDE = 16 };
	struct radiance_bo_create big, small, again, host;
	struct pollfd pfd = { .fd = self->s->ctl, .events = POLLIN };
	struct queue q0, q1;
	uint8_t frame[16 * 8], *in;
	uint32_t zeros_at;
	int copies = 0, scrubbed = 0;
	ssize_t n;

	ASSERT_LE(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, FREED, 0, &big));
	ASSERT_LE(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, &small));
	ASSERT_LE(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &host));
	in = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, host.mmap_offset);
	ASSERT_NE(MAP_FAILED, in);
	memset(in, 0x5A, 4096);
	memset(self->s->vram + big.device_address, 0xAB, FREED);
	/* The first queue runs on stream 0, the scrubs' own; the second on
	 * stream 1. */
	ASSERT_EQ(0, queue_open(self->fd, 32, &q0));
	ASSERT_EQ(0, queue_open(self->fd, 32, &q1));

	ASSERT_EQ(0, radiance_bo_destroy(self->fd, big.handle));
	n = read(self->s->ctl, frame, sizeof(frame));
	ASSERT_EQ(16, n) TH_LOG("one scrub command at a time");
	EXPECT_EQ(big.device_address, le32(frame + 7));
	EXPECT_EQ(SCRUB_FIRST, le32(frame + 11)) TH_LOG("a short first command");
	zeros_at = le32(frame + 3);

	/* Published while the first scrub command runs: one may be read now
	 * (the device takes one command per stream). */
	for (int i = 0; i < COPIES; i++)
		copy(&q1, host.handle, small.handle, 4096);
	queue_publish(&q1);
	ASSERT_EQ(1, poll(&pfd, 1, 5000)) TH_LOG("the copies wait for the whole scrub");
	n = read(self->s->ctl, frame + 16, sizeof(frame) - 16);
	ASSERT_EQ(16, n) TH_LOG("a copy, not the scrub's next command");
	EXPECT_EQ(small.device_address, le32(frame + 16 + 7));
	EXPECT_EQ(1, frame[16]) TH_LOG("on stream 1");
	ASSERT_EQ(0, host_access(self->s->ctl, 0, zeros_at, self->s->vram + big.device_address, SCRUB_FIRST));
	ASSERT_EQ(0, server_run(self->s, frame + 16, n, 1));
	copies++;
	{
		uint8_t r[16] = { frame[0] };

		ASSERT_EQ(16, write(self->s->ctl, r, sizeof(r)));
	}
	/* More copies go while they come, then the scrub's next command: at
	 * most 16 between two. */
	while (!scrubbed) {
		ASSERT_EQ(1, poll(&pfd, 1, 5000)) TH_LOG("after %d copies", copies);
		n = read(self->s->ctl, frame, sizeof(frame));
		ASSERT_LE(16, n);
		for (ssize_t i = 0; i < n && !scrubbed; i += 16) {
			if (le32(frame + i + 7) == small.device_address) {
				copies++;
				continue;
			}
			scrubbed = 1;
			EXPECT_EQ(zeros_at, le32(frame + i + 3));
			EXPECT_EQ(big.device_address + SCRUB_FIRST, le32(frame + i + 7)) TH_LOG("the scrub's second command");
			EXPECT_EQ(SCRUB, le32(frame + i + 11)) TH_LOG("a full one");
		}
		ASSERT_EQ(0, server_run(self->s, frame, n, 1));
	}
	EXPECT_GE(BESIDE, copies) TH_LOG("the scrub starved");

	/* The range's next user writes its last page, in the scrub's last
	 * command. (A write of its first page, zeroed already, may go beside
	 * that command: the_freed_ranges_next_user_waits_only_for_its_part_of_the_scrub.) */
	ASSERT_LE(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, FREED, 0, &again));
	ASSERT_EQ(big.device_address, again.device_address) TH_LOG("the freed range again");
	copy_to(&q0, host.handle, again.handle, FREED - 4096, 4096);
	queue_publish(&q0);
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q0));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q1));

	/* The scrub zeroed the range before its next user wrote it. */
	for (uint32_t i = 0; i < FREED; i++) {
		ASSERT_EQ(i >= FREED - 4096 ? 0x5A : 0, self->s->vram[again.device_address + i])
			TH_LOG("byte %u", i);
	}
	for (int i = 0; i < 4096; i++) {
		ASSERT_EQ(0x5A, self->s->vram[small.device_address + i]) TH_LOG("byte %d", i);
	}
	queue_close(&q0);
	queue_close(&q1);
	munmap(in, 4096);
}

/* For the scrub tests: a VRAM BO of `freed` bytes (to free), a page of VRAM
 * elsewhere, a mappable page of host memory, and two queues, the first on
 * stream 0 (the scrubs' own), the second on stream 1. 0, or -1. */
static int scrub_setup(int fd, uint64_t freed, struct radiance_bo_create *big, struct radiance_bo_create *small,
		       struct radiance_bo_create *host, struct queue *q0, struct queue *q1)
{
	if (radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, freed, 0, big) < 0 ||
	    radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, small) < 0 ||
	    radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, host) < 0 ||
	    queue_open(fd, 32, q0) || queue_open(fd, 32, q1))
		return -1;
	return 0;
}

/* A copy that keeps off a freed range need not wait for any of its scrub:
 * behind it when the server reads, it goes before the first command. */
TEST_F(user, a_copy_elsewhere_goes_before_a_scrubs_first_command)
{
	enum { FREED = 512 << 10 };
	struct radiance_bo_create big, small, host;
	struct pollfd pfd = { .fd = self->s->ctl, .events = POLLIN };
	struct queue q0, q1;
	uint8_t frame[16 * 8];
	int64_t before;
	ssize_t n;

	ASSERT_EQ(0, scrub_setup(self->fd, FREED, &big, &small, &host, &q0, &q1));
	before = issued(self->s);
	ASSERT_LE(0, before);

	ASSERT_EQ(0, radiance_bo_destroy(self->fd, big.handle));
	copy(&q1, host.handle, small.handle, 4096);
	queue_publish(&q1);
	ASSERT_EQ(0, wait_issued(self->s, before + 1)) TH_LOG("the copy never reached the device");
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	n = read(self->s->ctl, frame, sizeof(frame));
	ASSERT_EQ(32, n) TH_LOG("the copy and the scrub's first command");
	EXPECT_EQ(small.device_address, le32(frame + 7)) TH_LOG("the copy first");
	EXPECT_EQ(1, frame[0]) TH_LOG("on stream 1");
	EXPECT_EQ(big.device_address, le32(frame + 16 + 7)) TH_LOG("then the scrub");
	EXPECT_EQ(0, frame[16]) TH_LOG("on stream 0");
	ASSERT_EQ(0, server_run(self->s, frame, n, 1));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q1));
	queue_close(&q0);
	queue_close(&q1);
}

/* Keeps a CPU busy until `stop` is set. */
static void *spin(void *stop)
{
	while (!atomic_load((_Atomic int *)stop))
		;
	return NULL;
}

/* The scrub's next command waits until the scheduler has taken the answer
 * of a frame that went beside it: the server does not go on with the
 * scrub while what it answered waits to be completed. With every CPU
 * busy (as a client spinning for a completion and the server keep them),
 * the work item that completes it would otherwise run only once the
 * server sleeps: after the whole scrub. */
TEST_F(user, a_scrubs_next_command_waits_until_what_went_beside_it_completes)
{
	enum { FREED = 512 << 10 };
	struct radiance_bo_create big, small, host;
	struct pollfd pfd = { .fd = self->s->ctl, .events = POLLIN };
	int cpus = sysconf(_SC_NPROCESSORS_ONLN), ready;
	pthread_t spinners[8];
	_Atomic int stop = 0;
	struct queue q0, q1;
	uint8_t frame[16 * 8];
	uint64_t done;
	ssize_t n;

	ASSERT_EQ(0, scrub_setup(self->fd, FREED, &big, &small, &host, &q0, &q1));
	cpus = cpus < 1 ? 1 : cpus > 8 ? 8 : cpus;

	ASSERT_EQ(0, radiance_bo_destroy(self->fd, big.handle));
	n = read(self->s->ctl, frame, sizeof(frame));
	ASSERT_EQ(16, n) TH_LOG("the scrub's first command");
	/* While it runs, a copy elsewhere comes, and goes beside it. */
	copy(&q1, host.handle, small.handle, 4096);
	queue_publish(&q1);
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	n = read(self->s->ctl, frame + 16, sizeof(frame) - 16);
	ASSERT_EQ(16, n) TH_LOG("the copy");
	EXPECT_EQ(small.device_address, le32(frame + 16 + 7));
	/* The scrub's command answered, then the copy: the scrub's next
	 * command is read only once the copy is complete. */
	for (int i = 0; i < cpus; i++)
		ASSERT_EQ(0, pthread_create(&spinners[i], NULL, spin, &stop));
	usleep(20000);
	ASSERT_EQ(0, server_run(self->s, frame, 16, 1));
	ASSERT_EQ(0, server_run(self->s, frame + 16, 16, 1));
	ready = poll(&pfd, 1, 5000);
	n = read(self->s->ctl, frame, sizeof(frame));
	done = atomic_load((_Atomic uint64_t *)&q1.ctl->read_index);
	atomic_store(&stop, 1);
	for (int i = 0; i < cpus; i++)
		pthread_join(spinners[i], NULL);
	ASSERT_EQ(1, ready) TH_LOG("the scrub stalled");
	ASSERT_EQ(16, n);
	EXPECT_EQ(big.device_address + SCRUB_FIRST, le32(frame + 7)) TH_LOG("the scrub's second command");
	EXPECT_EQ(q1.written, done) TH_LOG("the copy is complete");
	ASSERT_EQ(0, server_run(self->s, frame, n, 1));
	queue_close(&q0);
	queue_close(&q1);
}

/* The freed range's next user waits only for the scrub's commands over
 * its part: a copy there goes once they are answered, before the rest of
 * the scrub; a copy over the rest waits for it; the data is right. */
TEST_F(user, the_freed_ranges_next_user_waits_only_for_its_part_of_the_scrub)
{
	/* Two commands: the first, then the rest. */
	enum { FREED = SCRUB_FIRST + SCRUB };
	struct radiance_bo_create big, small, again, host;
	struct pollfd pfd = { .fd = self->s->ctl, .events = POLLIN };
	struct queue q0, q1;
	uint8_t frame[16 * 8], *in;
	int64_t before;
	ssize_t n;

	ASSERT_EQ(0, scrub_setup(self->fd, FREED, &big, &small, &host, &q0, &q1));
	in = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, host.mmap_offset);
	ASSERT_NE(MAP_FAILED, in);
	memset(in, 0x5A, 4096);
	memset(self->s->vram + big.device_address, 0xAB, FREED);

	ASSERT_EQ(0, radiance_bo_destroy(self->fd, big.handle));
	n = read(self->s->ctl, frame, sizeof(frame));
	ASSERT_EQ(16, n) TH_LOG("the scrub's first command");
	EXPECT_EQ(SCRUB_FIRST, le32(frame + 11));
	ASSERT_EQ(0, server_run(self->s, frame, n, 1));
	ASSERT_LE(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, FREED, 0, &again));
	ASSERT_EQ(big.device_address, again.device_address) TH_LOG("the freed range again");

	/* Its first page, zeroed already; then its last, not yet. */
	before = issued(self->s);
	copy(&q1, host.handle, again.handle, 4096);
	copy_to(&q1, host.handle, again.handle, FREED - 4096, 4096);
	queue_publish(&q1);
	ASSERT_EQ(0, wait_issued(self->s, before + 1));
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	n = read(self->s->ctl, frame, sizeof(frame));
	ASSERT_EQ(32, n) TH_LOG("the first page's copy and the scrub's second command");
	EXPECT_EQ(again.device_address, le32(frame + 7)) TH_LOG("the first page, before the scrub's rest");
	EXPECT_EQ(again.device_address + SCRUB_FIRST, le32(frame + 16 + 7)) TH_LOG("the scrub's second command");
	/* The copy answered, the scrub's command not yet: the last page's copy
	 * (stream 1 takes one command at a time) waits for it. */
	ASSERT_EQ(0, server_run(self->s, frame, 16, 1));
	ASSERT_EQ(0, wait_issued(self->s, before + 2));
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("the last page went before its part was zeroed");
	ASSERT_EQ(0, server_run(self->s, frame + 16, 16, 1));
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	n = read(self->s->ctl, frame, sizeof(frame));
	ASSERT_EQ(16, n);
	EXPECT_EQ(again.device_address + FREED - 4096, le32(frame + 7)) TH_LOG("the last page");
	ASSERT_EQ(0, server_run(self->s, frame, n, 1));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q1));

	for (uint32_t i = 0; i < FREED; i++) {
		ASSERT_EQ(i < 4096 || i >= FREED - 4096 ? 0x5A : 0, self->s->vram[again.device_address + i])
			TH_LOG("byte %u", i);
	}
	queue_close(&q0);
	queue_close(&q1);
	munmap(in, 4096);
}

TEST_F(user, a_response_for_nothing_is_eproto)
{
	uint8_t r[16] = { 0 };
	struct pollfd p = { .fd = self->s->ctl, .events = POLLIN | POLLPRI | POLLOUT };

	EXPECT_EQ(-1, write(self->s->ctl, r, sizeof(r)));
	EXPECT_EQ(EPROTO, errno);
	r[0] = 9;
	EXPECT_EQ(-1, write(self->s->ctl, r, sizeof(r)));
	EXPECT_EQ(EPROTO, errno);
	EXPECT_EQ(-1, write(self->s->ctl, r, 5));
	EXPECT_EQ(EINVAL, errno) TH_LOG("whole responses only");
	/* Nothing to read, no reset: writable only. */
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLOUT, p.revents & (POLLIN | POLLPRI | POLLOUT));
	EXPECT_EQ(-1, read(self->s->ctl, r, sizeof(r)));
	EXPECT_EQ(EAGAIN, errno);
}

/* What a_read_waits_for_a_frame_a_reset_or_a_signal's helper thread does
 * 50 ms after it starts: publishes `q`'s packets, or (no queue) signals
 * `reader`. */
struct later {
	struct queue *q;
	pthread_t reader;
};

static void *act_later(void *arg)
{
	struct later *l = arg;

	usleep(50 * 1000);
	if (l->q)
		queue_publish(l->q);
	else
		pthread_kill(l->reader, SIGUSR1);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* A copy published 50 ms after the server went to sleep in read(): that
 * read returns its frame, which the server answers. 0, or -errno. */
static int serve_copy_published_while_asleep(struct server *w, struct queue *q, int src, int vram)
{
	struct later later = { .q = q };
	uint8_t frames[16 * 64];
	pthread_t t;
	ssize_t n;

	copy(q, src, vram, 4096);
	if (pthread_create(&t, NULL, act_later, &later))
		return -EAGAIN;
	n = read(w->ctl, frames, sizeof(frames));
	pthread_join(t, NULL);
	if (n != 16 || frames[1] != 1)
		return n < 0 ? -errno : -EPROTO;
	return server_run(w, frames, 16, 1);
}

/* A server of the test's own, declared with `flags`, and as its client a
 * queue, a page of VRAM and a mappable page of host memory. */
struct own {
	struct server *w;
	int fd, vram, src;
	struct queue q;
};

/* Declares `d` by `cmd` (as server_declare()) and opens its device: 0 or
 * -errno; `own_close` it either way. */
static int own_open_as(struct own *o, struct radiance_user_declare *d, unsigned long cmd)
{
	int ret;

	o->fd = -1;
	o->q.fd = -1;
	o->w = calloc(1, sizeof(*o->w));
	if (!o->w)
		return -ENOMEM;
	ret = server_declare(o->w, d, cmd);
	if (ret)
		return ret;
	o->fd = radiance_open(o->w->index);
	if (o->fd < 0)
		return o->fd;
	o->vram = radiance_bo_create(o->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	o->src = radiance_bo_create(o->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, NULL);
	if (o->vram < 0 || o->src < 0)
		return o->vram < 0 ? o->vram : o->src;
	return queue_open(o->fd, 16, &o->q);
}

/* As own_open_as(), declared with `flags`. */
static int own_open(struct own *o, uint32_t flags)
{
	struct radiance_user_declare d = declaration();

	d.flags = flags;
	return own_open_as(o, &d, RADIANCE_IOCTL_USER_DECLARE);
}

static void own_close(struct own *o)
{
	if (o->q.fd >= 0)
		queue_close(&o->q);
	if (o->fd >= 0)
		close(o->fd);
	if (o->w && o->w->ctl >= 0)
		close(o->w->ctl);
	free(o->w);
}

TEST_F(user, a_read_waits_for_a_frame_a_reset_or_a_signal)
{
	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	struct radiance_user_reset ack = { 0 };
	struct later later = { .reader = pthread_self() };
	uint8_t frames[16 * 64];
	struct own o;
	pthread_t t;
	int flags;

	ASSERT_EQ(0, own_open(&o, RADIANCE_USER_DECLARE_READ_WAITS));

	/* O_NONBLOCK: nothing to read is EAGAIN, as without the flag. */
	flags = fcntl(o.w->ctl, F_GETFL);
	ASSERT_EQ(0, fcntl(o.w->ctl, F_SETFL, flags | O_NONBLOCK));
	EXPECT_EQ(-1, read(o.w->ctl, frames, sizeof(frames)));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, fcntl(o.w->ctl, F_SETFL, flags));

	/* A signal ends the wait (no SA_RESTART: EINTR). */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, &old));
	ASSERT_EQ(0, pthread_create(&t, NULL, act_later, &later));
	EXPECT_EQ(-1, read(o.w->ctl, frames, sizeof(frames)));
	EXPECT_EQ(EINTR, errno);
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);

	/* A frame published while the server sleeps in read() wakes it. */
	EXPECT_EQ(0, serve_copy_published_while_asleep(o.w, &o.q, o.src, o.vram));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));
	EXPECT_EQ(1, o.q.ctl->read_index);

	/* Left unanswered, the copy times out (500 ms): the reset wakes the
	 * server's next read with ECONNRESET until it acknowledges. */
	copy(&o.q, o.src, o.vram, 4096);
	queue_publish(&o.q);
	EXPECT_EQ(16, read(o.w->ctl, frames, sizeof(frames)));
	EXPECT_EQ(-1, read(o.w->ctl, frames, sizeof(frames)));
	EXPECT_EQ(ECONNRESET, errno);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&o.q));
	EXPECT_EQ(ETIMEDOUT, o.q.ctl->error);
	EXPECT_EQ(0, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_RESET, &ack));
	own_close(&o);
}

/* A copy published when the server is not reading, which its next read()
 * returns and it answers: 0 or -errno. */
static int serve_copy(struct own *o)
{
	uint8_t frames[16 * 64];
	ssize_t n;

	copy(&o->q, o->src, o->vram, 4096);
	queue_publish(&o->q);
	n = read(o->w->ctl, frames, sizeof(frames));
	if (n != 16)
		return n < 0 ? -errno : -EPROTO;
	return server_run(o->w, frames, 16, 1);
}

TEST_F(user, a_server_that_takes_doorbells_runs_their_passes_in_its_read)
{
	uint8_t frames[16 * 64];
	struct own o, plain;
	struct pollfd pfd;
	int flags;

	ASSERT_EQ(0, own_open(&o, RADIANCE_USER_DECLARE_READ_WAITS | RADIANCE_USER_DECLARE_TAKES_DOORBELLS));

	/* The server has read nothing yet: the doorbell's pass runs without it. */
	ASSERT_EQ(0, serve_copy(&o));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));

	/* It answered all it read: a doorbell now waits for its next read(),
	 * which poll reports; a read with no frame to give runs the pass. (A
	 * pass the answer left to the scheduler's worker, or the new queue's,
	 * would take the NOP too: none runs first.) */
	ASSERT_EQ(0, settle(o.w));
	queue_nop(&o.q, 0);
	EXPECT_EQ(1, queue_publish(&o.q)) TH_LOG("the idle queue asks for its doorbell");
	usleep(20 * 1000);
	EXPECT_EQ(1, atomic_load((_Atomic uint64_t *)&o.q.ctl->read_index)) TH_LOG("the NOP waits for the server");
	pfd = (struct pollfd){ .fd = o.w->ctl, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLIN);
	flags = fcntl(o.w->ctl, F_GETFL);
	ASSERT_EQ(0, fcntl(o.w->ctl, F_SETFL, flags | O_NONBLOCK));
	EXPECT_EQ(-1, read(o.w->ctl, frames, sizeof(frames)));
	EXPECT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, fcntl(o.w->ctl, F_SETFL, flags));
	EXPECT_EQ(2, atomic_load((_Atomic uint64_t *)&o.q.ctl->read_index)) TH_LOG("that read ran the NOP");
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	/* Rung while it sleeps in read(): the ringer runs the pass, and the
	 * frame wakes the read. */
	EXPECT_EQ(0, serve_copy_published_while_asleep(o.w, &o.q, o.src, o.vram));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));
	EXPECT_EQ(3, o.q.ctl->read_index);
	own_close(&o);

	/* A server that did not declare it: the doorbell's pass runs at once. */
	ASSERT_EQ(0, own_open(&plain, RADIANCE_USER_DECLARE_READ_WAITS));
	ASSERT_EQ(0, serve_copy(&plain));
	ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&plain.q));
	queue_nop(&plain.q, 0);
	queue_publish(&plain.q);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&plain.q));
	EXPECT_EQ(2, plain.q.ctl->read_index);
	own_close(&plain);
}

/* Publishes on `q` a LAUNCH (of no built-in: the test's server answers it
 * without running it) with `n` u32 params counting up from `first`, its
 * block at the start of mapped HOST BO `h` (at `blk`); the doorbell's pass
 * stages it at once (the server does not take doorbells). */
static void launch_counting(struct queue *q, int h, uint8_t *blk, uint32_t first, uint32_t n)
{
	uint32_t params[64];

	for (uint32_t i = 0; i < n; i++)
		params[i] = first + i;
	queue_launch(q, h, blk, 0x10000, params, n, 1, 1);
	queue_publish(q);
}

/* A mappable page of host memory of `fd`, its handle (or -errno) in `*h`:
 * its mapping, or MAP_FAILED. */
static uint8_t *host_page(int fd, int *h)
{
	struct radiance_bo_create c;

	*h = radiance_bo_create(fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &c);
	if (*h < 0)
		return MAP_FAILED;
	return mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.mmap_offset);
}

/* Checks the KERNEL frame at `rec` (`n` bytes read from there on) of a
 * launch_counting(`first`, `nparams`), and the inline block after it,
 * whole if `inlined`, else the header saying 0; answers it. Returns the
 * record's length. */
static ssize_t check_record(struct __test_metadata *_metadata, int ctl, const uint8_t *rec, ssize_t n,
			    int inlined, uint32_t first, uint32_t nparams)
{
	struct radiance_user_inline_block h;
	uint8_t block[RADIANCE_USER_INLINE_BLOCK_MAX], r[16] = { rec[0], 0 };
	uint32_t size = le32(rec + 6), padded = (size + 7) & ~7u;

	EXPECT_LE(16 + (ssize_t)sizeof(h), n);
	EXPECT_EQ(0, rec[1]) TH_LOG("a KERNEL frame");
	EXPECT_GE(sizeof(block), size);
	memcpy(&h, rec + 16, sizeof(h));
	EXPECT_EQ(0, h.pad);
	/* The block as USER_HOST_READ reaches it ends with the params. */
	EXPECT_EQ(0, host_access(ctl, 0, le32(rec + 2), block, size));
	for (uint32_t i = 0; i < nparams; i++)
		EXPECT_EQ(first + i, le32(block + size - 4 * (nparams - i)));
	EXPECT_EQ(sizeof(r), write(ctl, r, sizeof(r)));
	if (!inlined) {
		EXPECT_EQ(0, h.len);
		return 16 + sizeof(h);
	}
	EXPECT_EQ(size, h.len);
	EXPECT_LE(16 + sizeof(h) + padded, n);
	EXPECT_EQ(0, memcmp(rec + 24, block, size));
	for (uint32_t i = size; i < padded; i++)
		EXPECT_EQ(0, rec[24 + i]) TH_LOG("zeros up to 8 bytes");
	return 16 + sizeof(h) + padded;
}

TEST_F(user, a_server_that_inlines_blocks_reads_each_after_its_kernel_frame)
{
	uint8_t buf[2 * (24 + RADIANCE_USER_INLINE_BLOCK_MAX)], *b1, *b2;
	int ctl, h1, h2;
	struct own o, plain;
	struct queue q2;
	ssize_t n, at, rec3;

	ASSERT_EQ(0, own_open(&o, RADIANCE_USER_DECLARE_READ_WAITS | RADIANCE_USER_DECLARE_INLINE_BLOCKS));
	ctl = o.w->ctl;
	/* Its own stream: the fewest queues. */
	ASSERT_EQ(0, queue_open(o.fd, 16, &q2));
	b1 = host_page(o.fd, &h1);
	b2 = host_page(o.fd, &h2);
	ASSERT_LT(0, h1);
	ASSERT_LT(0, h2);
	ASSERT_NE(MAP_FAILED, b1);
	ASSERT_NE(MAP_FAILED, b2);

	/* Two launches on two streams, read at once: each block after its
	 * frame. Each is queued for the server before the next is published:
	 * a doorbell's pass may run in a worker, after the next one's. */
	launch_counting(&o.q, h1, b1, 100, 3);
	ASSERT_EQ(0, wait_issued(o.w, 1));
	launch_counting(&q2, h2, b2, 200, 9);
	ASSERT_EQ(0, wait_issued(o.w, 2));
	n = read(ctl, buf, sizeof(buf));
	ASSERT_LT(0, n) TH_LOG("read: %s", strerror(errno));
	at = check_record(_metadata, ctl, buf, n, 1, 100, 3);
	EXPECT_EQ(n, at + check_record(_metadata, ctl, buf + at, n - at, 1, 200, 9));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q2));

	/* A buffer short of a frame and the header is EINVAL; a frame whose
	 * block does not fit what is left of one waits for the next read;
	 * one that does not fit the buffer goes without it. */
	launch_counting(&o.q, h1, b1, 300, 5);
	ASSERT_EQ(0, wait_issued(o.w, 3));
	launch_counting(&q2, h2, b2, 400, 7);
	ASSERT_EQ(0, wait_issued(o.w, 4));
	EXPECT_EQ(-1, read(ctl, buf, 16 + sizeof(struct radiance_user_inline_block) - 1));
	EXPECT_EQ(EINVAL, errno);
	/* The first launch's block: 3 params, 12 bytes, less than this one. */
	rec3 = 24 + ((le32(buf + 6) + 8 + 7) & ~7u);
	n = read(ctl, buf, rec3 + 24);
	EXPECT_EQ(rec3, n) TH_LOG("the second frame waits");
	EXPECT_EQ(rec3, check_record(_metadata, ctl, buf, n, 1, 300, 5));
	n = read(ctl, buf, 24);
	EXPECT_EQ(24, check_record(_metadata, ctl, buf, n, 0, 400, 7));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q2));
	EXPECT_EQ(2, o.q.ctl->read_index);
	EXPECT_EQ(2, q2.ctl->read_index);
	munmap(b1, 4096);
	munmap(b2, 4096);
	queue_close(&q2);
	own_close(&o);

	/* Without the flag, a KERNEL frame comes alone. */
	ASSERT_EQ(0, own_open(&plain, RADIANCE_USER_DECLARE_READ_WAITS));
	b1 = host_page(plain.fd, &h1);
	ASSERT_LT(0, h1);
	ASSERT_NE(MAP_FAILED, b1);
	launch_counting(&plain.q, h1, b1, 500, 1);
	EXPECT_EQ(16, read(plain.w->ctl, buf, sizeof(buf)));
	EXPECT_EQ(0, buf[1]) TH_LOG("a KERNEL frame");
	memset(buf + 1, 0, 15);
	EXPECT_EQ(16, write(plain.w->ctl, buf, 16));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&plain.q));
	munmap(b1, 4096);
	own_close(&plain);
}

/* A queue whose stream runs nothing is served at its doorbell while
 * another stream's command is on the device: nothing else would look at it
 * before that command ends (here, never: the server holds it). */
TEST_F(user, a_queue_on_an_idle_stream_goes_while_another_streams_command_runs)
{
	uint8_t held[16], f[16];
	struct own o;
	struct queue q2;
	ssize_t n;

	ASSERT_EQ(0, own_open(&o, RADIANCE_USER_DECLARE_READ_WAITS));
	/* Its own stream: the fewest queues. */
	ASSERT_EQ(0, queue_open(o.fd, 16, &q2));
	copy(&o.q, o.src, o.vram, 4096);
	queue_publish(&o.q);
	ASSERT_EQ(16, read(o.w->ctl, held, sizeof(held)));
	/* q2's first copy may find it not served yet (a new queue); the pass
	 * that completes it leaves it served, the other copy still running. */
	for (int i = 0; i < 2; i++) {
		copy(&q2, o.src, o.vram, 4096);
		queue_publish(&q2);
		n = read(o.w->ctl, f, sizeof(f));
		ASSERT_EQ(16, n) TH_LOG("copy %d: %s", i, n < 0 ? strerror(errno) : "short");
		EXPECT_NE(held[0], f[0]) TH_LOG("on q2's own stream");
		ASSERT_EQ(0, server_run(o.w, f, 16, 1));
		ASSERT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q2));
		ASSERT_EQ(i + 1, q2.ctl->read_index);
	}
	EXPECT_EQ(0, o.q.ctl->read_index) TH_LOG("held by the server");
	ASSERT_EQ(0, server_run(o.w, held, 16, 1));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));
	EXPECT_EQ(1, o.q.ctl->read_index);
	queue_close(&q2);
	own_close(&o);
}

TEST_F(user, garbage_answering_a_command_faults_only_its_queue)
{
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, NULL);
	uint8_t f[16], r[16];
	struct queue a, b;
	int i;

	ASSERT_LE(0, vram);
	ASSERT_LE(0, src);
	ASSERT_EQ(0, queue_open(self->fd, 16, &a));
	ASSERT_EQ(0, queue_open(self->fd, 16, &b));
	copy(&a, src, vram, 4096);
	queue_publish(&a);
	for (i = 0; i < 20000 && read(self->s->ctl, f, sizeof(f)) != sizeof(f); i++)
		usleep(100);
	ASSERT_LT(i, 20000) TH_LOG("the copy's frame");
	/* Bytes no Gluon sends, on the command's own stream. */
	memset(r, 0xEE, sizeof(r));
	r[0] = f[0];
	ASSERT_EQ(sizeof(r), write(self->s->ctl, r, sizeof(r)));
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, drain_serving(self->s, &a));
	EXPECT_EQ(0xEE, a.ctl->err_code);
	EXPECT_EQ(0xEEEEEEEE, a.ctl->err_pc);
	/* The device and the other queue go on. */
	copy(&b, src, vram, 4096);
	queue_publish(&b);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &b));
	EXPECT_EQ(1, b.ctl->read_index);
	queue_close(&a);
	queue_close(&b);
}

TEST_F(user, an_unanswered_command_resets_the_device_until_acknowledged)
{
	struct radiance_bo_create host;
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &host);
	struct pollfd p = { .fd = self->s->ctl, .events = POLLIN | POLLPRI };
	struct radiance_user_reset ack = { 0 };
	struct queue q, next;
	uint8_t r[16] = { 0 };

	ASSERT_LE(0, vram);
	ASSERT_LE(0, src);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	copy(&q, src, vram, 4096);
	queue_publish(&q);
	ASSERT_EQ(1, poll(&p, 1, 5000));
	EXPECT_TRUE(p.revents & POLLIN);
	ASSERT_EQ(1, server_serve(self->s, 0)) TH_LOG("read, never answered");
	/* After the launch timeout (radiance_test.h). */
	ASSERT_EQ(1, poll(&p, 1, 5000));
	EXPECT_TRUE(p.revents & POLLPRI);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(ETIMEDOUT, q.ctl->error);
	/* Nothing the server says counts until it acknowledges. */
	EXPECT_EQ(-1, write(self->s->ctl, r, sizeof(r)));
	EXPECT_EQ(ECONNRESET, errno);
	EXPECT_EQ(-1, read(self->s->ctl, r, sizeof(r)));
	EXPECT_EQ(ECONNRESET, errno);
	ASSERT_EQ(0, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RESET, &ack));
	EXPECT_EQ(0, poll(&p, 1, 0));

	/* The device works again. */
	ASSERT_EQ(0, queue_open(self->fd, 16, &next));
	copy(&next, src, vram, 4096);
	queue_publish(&next);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &next));
	EXPECT_EQ(1, next.ctl->read_index);
	queue_close(&next);
	queue_close(&q);
}

TEST_F(user, a_server_reset_fails_what_is_outstanding)
{
	struct radiance_bo_create host;
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &host);
	struct radiance_user_reset reset = { 0 };
	struct queue q;

	ASSERT_LE(0, vram);
	ASSERT_LE(0, src);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	copy(&q, src, vram, 4096);
	queue_publish(&q);
	for (int i = 0; i < 1000 && server_serve(self->s, 0) <= 0; i++)
		usleep(1000);
	ASSERT_EQ(0, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RESET, &reset));
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q));
	EXPECT_EQ(EIO, q.ctl->error);
	EXPECT_EQ(RADIANCE_GLUON_ERR_RESET, q.ctl->err_code);
	reset.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RESET, &reset));
	queue_close(&q);
}

/* Reads one frame (waiting up to 2 s for it): its stream, or -1. */
static int read_one(struct server *s, uint8_t f[16])
{
	for (int i = 0; i < 20000; i++) {
		if (read(s->ctl, f, 16) == 16)
			return f[0];
		usleep(100);
	}
	return -1;
}

static void fill(struct queue *q, uint32_t dst, uint64_t size, uint32_t pattern)
{
	struct radiance_fill_packet p = {
		.header = { .kind = RADIANCE_PACKET_FILL }, .dst = dst, .pattern_size = 4, .size = size,
		.pattern = pattern,
	};

	queue_put(q, &p);
}

/* Whether every word of `len` bytes of the server's VRAM at `at` is
 * `pattern`. */
static int holds(const struct server *s, uint64_t at, uint64_t len, uint32_t pattern)
{
	for (uint64_t i = at; i < at + len; i += 4) {
		if (le32(s->vram + i) != pattern)
			return 0;
	}
	return 1;
}

/* The device has no MEM SET: a fill copies from host memory full of its
 * pattern, a command per contiguous run of it (not per page). Two such
 * sources: fills of a third pattern wait while two others run. */
TEST_F(user, fills_without_set_copy_from_pattern_sources_and_a_third_pattern_waits)
{
	enum { SIZE = 256 << 10 };
	const uint32_t patterns[3] = { 0x11111111, 0xa5a51234, 0xfeedf00d };
	struct radiance_bo_create bo[3];
	struct queue q[3];
	uint8_t f[2][16], none[16];
	int i, frames = 0;

	for (i = 0; i < 3; i++) {
		ASSERT_LE(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, SIZE, 0, &bo[i]));
		ASSERT_EQ(0, queue_open(self->fd, 16, &q[i]));
	}
	/* Two fills of two patterns, each read and held by the server. */
	for (i = 0; i < 2; i++) {
		fill(&q[i], bo[i].handle, SIZE, patterns[i]);
		queue_publish(&q[i]);
		ASSERT_LE(0, read_one(self->s, f[i])) TH_LOG("fill %d's first copy", i);
		EXPECT_EQ(1, f[i][1]) TH_LOG("fill %d: a MEM command", i);
		EXPECT_EQ(0, f[i][2]) TH_LOG("fill %d: a COPY", i);
		EXPECT_LT(4096, le32(f[i] + 11)) TH_LOG("fill %d: more than a page a command", i);
	}
	/* A third pattern finds no source free: nothing of it comes. */
	fill(&q[2], bo[2].handle, SIZE, patterns[2]);
	queue_publish(&q[2]);
	usleep(200 * 1000);
	EXPECT_EQ(-1, read(self->s->ctl, none, sizeof(none))) TH_LOG("the third fill went");
	EXPECT_EQ(EAGAIN, errno);
	/* Answered, the first frees its source: the third goes. */
	ASSERT_EQ(0, server_run(self->s, f[0], 16, 1));
	ASSERT_EQ(0, server_run(self->s, f[1], 16, 1));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q[i]));
		EXPECT_EQ(1, q[i].ctl->read_index);
		EXPECT_TRUE(holds(self->s, bo[i].device_address, SIZE, patterns[i])) TH_LOG("fill %d", i);
	}
	/* A 1 MiB fill of a pattern a source holds: a command per contiguous
	 * run of a 1 MiB source, where a page of pattern took 257. */
	ASSERT_LE(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 1 << 20, 0, &bo[0]));
	frames = issued(self->s);
	fill(&q[0], bo[0].handle, 1 << 20, patterns[1]);
	queue_publish(&q[0]);
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, drain_serving(self->s, &q[0]));
	frames = issued(self->s) - frames;
	EXPECT_TRUE(holds(self->s, bo[0].device_address, 1 << 20, patterns[1]));
	EXPECT_GE(16, frames) TH_LOG("%d commands for a 1 MiB fill", frames);
	for (i = 0; i < 3; i++)
		queue_close(&q[i]);
}

TEST_F(user, a_retired_stream_fails_what_it_holds_and_its_queues_move)
{
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, NULL);
	struct radiance_user_retire retire = { 0 };
	struct radiance_get_info info = { 0 };
	struct queue q[5];
	uint8_t f[16];
	int held, i;

	ASSERT_LE(0, vram);
	ASSERT_LE(0, src);
	/* One queue on each of the four streams, and a fifth beside the
	 * first (the stream with fewest queues, the lowest first). */
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, queue_open(self->fd, 16, &q[i]));
	copy(&q[0], src, vram, 4096);
	queue_publish(&q[0]);
	held = read_one(self->s, f);
	ASSERT_LE(0, held);

	/* Read and never answered: it fails as its stream is retired. */
	retire.streams = 1u << held;
	ASSERT_EQ(0, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RETIRE, &retire));
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&q[0]));
	EXPECT_EQ(EIO, q[0].ctl->error);
	EXPECT_EQ(RADIANCE_GLUON_ERR_RESET, q[0].ctl->err_code);
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	EXPECT_EQ(retire.streams, info.retired_streams);

	/* The queue that shared the stream goes on another, as does a new
	 * one; nothing goes to the retired stream. */
	queue_close(&q[0]);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q[0]));
	for (i = 4; i >= 0; i -= 4) {
		copy(&q[i], src, vram, 4096);
		queue_publish(&q[i]);
		ASSERT_LE(0, read_one(self->s, f)) TH_LOG("queue %d's copy", i);
		EXPECT_NE(held, f[0]) TH_LOG("queue %d's copy on the retired stream", i);
		ASSERT_EQ(0, server_run(self->s, f, 16, 1));
		EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&q[i]));
		EXPECT_EQ(1, q[i].ctl->read_index);
	}

	/* What it refuses: a flag, a stream the device lacks, none left. */
	retire.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RETIRE, &retire));
	retire = (struct radiance_user_retire){ .streams = 1u << 4 };
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RETIRE, &retire));
	retire.streams = 0xf;
	EXPECT_EQ(-EBUSY, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RETIRE, &retire));
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	EXPECT_EQ(1u << held, info.retired_streams) TH_LOG("unchanged by a refusal");

	/* Back in service. */
	retire.streams = 0;
	ASSERT_EQ(0, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_RETIRE, &retire));
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	EXPECT_EQ(0, info.retired_streams);
	for (i = 0; i < 5; i++)
		queue_close(&q[i]);
}

TEST(a_control_file_retires_nothing_before_it_declares)
{
	struct radiance_user_retire retire = { .streams = 1 };
	int ctl = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, ctl);
	EXPECT_EQ(-ENXIO, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_RETIRE, &retire));
	close(ctl);
}

/* Field `key` of stream `stream`'s line in debugfs `streams` of device
 * `index`, or -1. */
static int64_t stream_field(unsigned int index, int stream, const char *key)
{
	char path[64], match[16];

	snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/radiance%u/streams", index);
	snprintf(match, sizeof(match), "stream=%d ", stream);
	return radiance_line_field(path, match, key);
}

/* A copy on `o`'s queue, read into `f` and held, the server reporting
 * nothing: the watchdog resets the device (POLLPRI) and the queue faults
 * with ETIMEDOUT. */
static void expect_held_copy_reset(struct __test_metadata *_metadata, struct own *o, uint8_t f[16])
{
	struct pollfd p = { .fd = o->w->ctl, .events = POLLPRI };

	copy(&o->q, o->src, o->vram, 4096);
	queue_publish(&o->q);
	ASSERT_LE(0, read_one(o->w, f));
	ASSERT_EQ(1, poll(&p, 1, 50 * USER_TIMEOUT_MS));
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, queue_drain(&o->q));
	EXPECT_EQ(ETIMEDOUT, o->q.ctl->error);
}

TEST(a_server_that_reports_nothing_gets_its_commands_size_over_its_rate)
{
	/* USER_DECLARE as ABI 1.9 released it: no rates. */
	const unsigned long declare_1_9 =
		_IOWR(RADIANCE_IOCTL_TYPE, 0x40, char[RADIANCE_USER_DECLARE_SIZE_V1_9]);
	struct radiance_user_declare d = declaration();
	struct radiance_user_reset ack = { 0 };
	struct pollfd p = { .events = POLLPRI };
	uint8_t f[16];
	struct own o;

	/* 4 KiB at this rate take three timeouts. */
	d.bytes_per_s = 4096 * 1000ull / (3 * USER_TIMEOUT_MS);
	ASSERT_EQ(0, own_open_as(&o, &d, RADIANCE_IOCTL_USER_DECLARE));
	p.fd = o.w->ctl;
	copy(&o.q, o.src, o.vram, 4096);
	queue_publish(&o.q);
	ASSERT_LE(0, read_one(o.w, f));
	/* Held for two timeouts, reporting nothing: within its deadline. */
	EXPECT_EQ(0, poll(&p, 1, 2 * USER_TIMEOUT_MS)) TH_LOG("reset before its size over its rate");
	ASSERT_EQ(0, server_run(o.w, f, 16, 1));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));
	EXPECT_EQ(1, o.q.ctl->read_index);
	own_close(&o);

	/* Declared as ABI 1.9 did (the rates past its 88 bytes unread), a
	 * held command gets the timeout alone. */
	ASSERT_EQ(0, own_open_as(&o, &d, declare_1_9));
	p.fd = o.w->ctl;
	expect_held_copy_reset(_metadata, &o, f);
	EXPECT_EQ(0, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_RESET, &ack));
	own_close(&o);
}

TEST(a_server_that_reports_progress_keeps_a_slow_command_alive)
{
	struct radiance_user_progress up = { .units = 4096 };
	struct pollfd p;
	struct radiance_user_reset ack = { 0 };
	uint8_t f[16];
	int64_t resets;
	char path[64];
	struct own o;

	ASSERT_EQ(0, own_open(&o, RADIANCE_USER_DECLARE_REPORTS_PROGRESS));
	p = (struct pollfd){ .fd = o.w->ctl, .events = POLLPRI };
	snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/radiance%u/mem", o.w->index);
	resets = radiance_debugfs_stat(path, "device_resets");
	copy(&o.q, o.src, o.vram, 4096);
	queue_publish(&o.q);
	ASSERT_LE(0, read_one(o.w, f));
	up.stream = f[0];
	/* Five launch timeouts, reporting four times in each: no reset. */
	for (int i = 0; i < 20; i++) {
		EXPECT_EQ(0, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_PROGRESS, &up)) TH_LOG("report %d", i);
		EXPECT_EQ(0, poll(&p, 1, USER_TIMEOUT_MS / 4)) TH_LOG("reset after %d reports", i);
	}
	/* debugfs shows what the command did so far. */
	EXPECT_EQ(20 * 4096, stream_field(o.w->index, f[0], "done"));
	EXPECT_EQ(4096, stream_field(o.w->index, f[0], "units"));
	ASSERT_EQ(0, server_run(o.w, f, 16, 1));
	EXPECT_EQ(RADIANCE_QUEUE_ACTIVE, queue_drain(&o.q));
	EXPECT_EQ(1, o.q.ctl->read_index);
	EXPECT_EQ(resets, radiance_debugfs_stat(path, "device_resets"));

	/* What it refuses: nothing outstanding on the stream, a flag, no
	 * work, a stream the device lacks. */
	EXPECT_EQ(-EPROTO, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_PROGRESS, &up));
	up.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_PROGRESS, &up));
	up = (struct radiance_user_progress){ .stream = f[0] };
	EXPECT_EQ(-EINVAL, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_PROGRESS, &up));
	up = (struct radiance_user_progress){ .stream = 4, .units = 1 };
	EXPECT_EQ(-EINVAL, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_PROGRESS, &up));

	/* Reporting nothing, the next command is reset, and nothing counts
	 * until the server acknowledges. */
	expect_held_copy_reset(_metadata, &o, f);
	EXPECT_EQ(resets + 1, radiance_debugfs_stat(path, "device_resets"));
	up = (struct radiance_user_progress){ .stream = f[0], .units = 1 };
	EXPECT_EQ(-ECONNRESET, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_PROGRESS, &up));
	EXPECT_EQ(0, radiance_ioctl(o.w->ctl, RADIANCE_IOCTL_USER_RESET, &ack));
	own_close(&o);
}

TEST_F(user, a_server_that_did_not_declare_progress_cannot_report_it)
{
	struct radiance_user_progress up = { .units = 1 };
	int ctl = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC);

	EXPECT_EQ(-ENXIO, radiance_ioctl(self->s->ctl, RADIANCE_IOCTL_USER_PROGRESS, &up));
	ASSERT_LE(0, ctl);
	EXPECT_EQ(-ENXIO, radiance_ioctl(ctl, RADIANCE_IOCTL_USER_PROGRESS, &up)) TH_LOG("before USER_DECLARE");
	close(ctl);
}

/* Closes the server's control file after a while. */
static void *die_later(void *arg)
{
	struct server *s = arg;

	usleep(300 * 1000);
	close(s->ctl);
	s->ctl = -1;
	return NULL;
}

TEST_F(user, the_server_going_faults_queues_wakes_waiters_and_frees_everything)
{
	struct radiance_bo_create host;
	int vram = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int src = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, &host);
	int sem = radiance_sem_create(self->fd, 0);
	struct radiance_semaphore_packet sig = {
		.header = { .kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE }, .handle = sem, .value = 1,
	};
	struct radiance_get_info info = { 0 };
	int64_t live = devices_stat("devices_live");
	char path[32];
	pthread_t t;
	struct queue q;

	ASSERT_LE(0, vram);
	ASSERT_LE(0, src);
	ASSERT_LE(0, sem);
	ASSERT_EQ(RADIANCE_TEST_DEVICES + 1, live);
	ASSERT_EQ(0, queue_open(self->fd, 16, &q));
	copy(&q, src, vram, 4096);
	queue_put(&q, &sig);
	queue_publish(&q);
	for (int i = 0; i < 1000 && server_serve(self->s, 0) <= 0; i++)
		usleep(1000);
	/* The server dies with the copy in its hands; the waiter wakes. */
	ASSERT_EQ(0, pthread_create(&t, NULL, die_later, self->s));
	/* Begun before the server went: it ends with the semaphore's failure,
	 * not its 10 s deadline. */
	EXPECT_EQ(-ENODEV, radiance_sem_wait_for(self->fd, sem, 1));
	pthread_join(t, NULL);
	EXPECT_EQ(RADIANCE_QUEUE_FAULTED, q.ctl->status);
	EXPECT_EQ(ENODEV, q.ctl->error);
	EXPECT_EQ(-ENODEV, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	snprintf(path, sizeof(path), "/dev/radiance%u", self->s->index);
	EXPECT_NE(0, access(path, F_OK)) TH_LOG("the node is gone");
	/* The client's file keeps the device until it closes. */
	EXPECT_EQ(live, devices_stat("devices_live"));
	munmap(q.ring, q.packets * RADIANCE_PACKET_SIZE);
	munmap(q.ctl, getpagesize());
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(live - 1, devices_stat("devices_live"));
	EXPECT_EQ(RADIANCE_TEST_DEVICES, devices_stat("nodes"));
}

/* The tests, on user devices with a launch timeout of USER_TIMEOUT_MS. */
int main(int argc, char **argv)
{
	int ret;

	if (unload() || load_params(USER_TIMEOUT_MS, "")) {
		fprintf(stderr, "user_test: cannot reload radiance.ko with launch_timeout_ms=%d\n", USER_TIMEOUT_MS);
		return KSFT_FAIL;
	}
	ret = test_harness_run(argc, argv);
	if (unload() || load()) {
		fprintf(stderr, "user_test: cannot reload radiance.ko as radiance_test.h says\n");
		return KSFT_FAIL;
	}
	return ret;
}
