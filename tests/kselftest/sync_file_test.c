// SPDX-License-Identifier: GPL-2.0
/*
 * Semaphores and sync_files: export a point as a fence that signals, fails
 * or is cancelled with the semaphore; import outside fences (our own, and
 * sw_sync's) that advance or fail a semaphore; cross-process waits; closing
 * files with fences outstanding; bad inputs; leaks.
 */
#define _GNU_SOURCE
#include <linux/sync_file.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"

/* drivers/dma-buf/sw_sync.c's private ABI (CONFIG_SW_SYNC, in debugfs). */
struct sw_sync_create_fence_data {
	__u32 value;
	char name[32];
	__s32 fence;
};
#define SW_SYNC_IOC_CREATE_FENCE _IOWR('W', 0, struct sw_sync_create_fence_data)
#define SW_SYNC_IOC_INC _IOW('W', 1, __u32)

/*
 * A sw_sync timeline's fd, or -errno: -ENOENT on a kernel without
 * CONFIG_SW_SYNC (Debian's), where the tests that need one skip.
 */
static int sw_sync_open(void)
{
	int fd = open("/sys/kernel/debug/sync/sw_sync", O_RDWR);

	return fd < 0 ? -errno : fd;
}
#define NO_SW_SYNC "no /sys/kernel/debug/sync/sw_sync: the kernel lacks CONFIG_SW_SYNC"

/* A sync_file fd, or -errno. */
static int export_point(int fd, uint32_t handle, uint64_t value)
{
	struct radiance_sem_export_sync_file args = {
		.handle = handle, .value = value, .flags = RADIANCE_EXPORT_CLOEXEC,
	};
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &args);

	return ret ? ret : args.fd;
}

static int import_fence(int fd, uint32_t handle, int sync_file, uint64_t value)
{
	struct radiance_sem_import_sync_file args = { .handle = handle, .fd = sync_file, .value = value };

	return radiance_ioctl(fd, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &args);
}

/* 1 signalled, 0 pending, -errno signalled with an error. */
static int fence_status(int sync_file)
{
	struct sync_file_info info = { 0 };

	if (ioctl(sync_file, SYNC_IOC_FILE_INFO, &info))
		return -1000;
	return info.status;
}

static int readable(int sync_file, int timeout_ms)
{
	struct pollfd p = { .fd = sync_file, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

FIXTURE(sync)
{
	int fd;
};

FIXTURE_SETUP(sync)
{
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(sync)
{
	close(self->fd);
}

TEST_F(sync, exported_fence_signals_when_the_value_is_reached)
{
	int h = radiance_sem_create(self->fd, 2);
	int reached, later;

	ASSERT_LT(0, h);
	reached = export_point(self->fd, h, 2);
	ASSERT_LE(0, reached);
	EXPECT_TRUE(readable(reached, 0));
	EXPECT_EQ(1, fence_status(reached));

	later = export_point(self->fd, h, 5);
	ASSERT_LE(0, later);
	EXPECT_FALSE(readable(later, 0));
	EXPECT_EQ(0, fence_status(later));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 4));
	EXPECT_FALSE(readable(later, 20)) TH_LOG("4 is not 5");
	ASSERT_EQ(0, radiance_sem_signal(self->fd, h, 6));
	EXPECT_TRUE(readable(later, 1000));
	EXPECT_EQ(1, fence_status(later));
	close(reached);
	close(later);
}

TEST_F(sync, an_export_whose_answer_faults_leaves_no_fd)
{
	struct radiance_sem_export_sync_file args = { .value = 1, .flags = RADIANCE_EXPORT_CLOEXEC };
	int h = radiance_sem_create(self->fd, 1), free_fd = radiance_lowest_free_fd();

	ASSERT_LT(0, h);
	ASSERT_LE(0, free_fd);
	args.handle = h;
	EXPECT_EQ(-EFAULT,
		  radiance_ioctl_read_only(self->fd, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &args));
	EXPECT_EQ(free_fd, radiance_lowest_free_fd())
		TH_LOG("the failed export left fd %d open, a number the caller never got", free_fd);
}

TEST_F(sync, exported_fence_carries_failure_and_cancellation)
{
	int h = radiance_sem_create(self->fd, 0), g = radiance_sem_create(self->fd, 0);
	int failed, cancelled, after;
	struct radiance_sem_destroy d = { .handle = g };

	ASSERT_LT(0, g);
	failed = export_point(self->fd, h, 1);
	cancelled = export_point(self->fd, g, 1);
	ASSERT_LE(0, failed);
	ASSERT_LE(0, cancelled);
	ASSERT_EQ(0, radiance_sem_fail(self->fd, h, EIO));
	EXPECT_TRUE(readable(failed, 1000));
	EXPECT_EQ(-EIO, fence_status(failed));
	/* Exported after the failure: failed at once. */
	after = export_point(self->fd, h, 1);
	ASSERT_LE(0, after);
	EXPECT_EQ(-EIO, fence_status(after));

	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_DESTROY, &d));
	EXPECT_TRUE(readable(cancelled, 1000));
	EXPECT_EQ(-ECANCELED, fence_status(cancelled));
	close(failed);
	close(cancelled);
	close(after);
}

TEST(closing_the_file_cancels_a_waiter_in_another_process)
{
	int sv[2], status, fd = radiance_open(0);
	int h = radiance_sem_create(fd, 0);
	int fence = export_point(fd, h, 1);
	pid_t pid;

	ASSERT_LT(0, h);
	ASSERT_LE(0, fence);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int f;

		close(sv[0]);
		close(fd);
		close(fence);
		f = radiance_recv_fd(sv[1]);
		if (f < 0)
			_exit(100);
		/* Blocks until the owner's file goes: never hangs. */
		if (!readable(f, 10000))
			_exit(101);
		_exit(-fence_status(f));
	}
	close(sv[1]);
	ASSERT_EQ(0, radiance_send_fd(sv[0], fence));
	close(fence);
	usleep(50 * 1000);
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(ECANCELED, WEXITSTATUS(status));
	close(sv[0]);
}

TEST_F(sync, import_of_a_signalled_fence_advances_at_once)
{
	int a = radiance_sem_create(self->fd, 3), b = radiance_sem_create(self->fd, 10);
	int fence = export_point(self->fd, a, 3);

	ASSERT_LT(0, b);
	ASSERT_LE(0, fence);
	ASSERT_EQ(0, import_fence(self->fd, a, fence, 8));
	EXPECT_EQ(0, radiance_sem_wait_for(self->fd, a, 8));
	EXPECT_EQ(8, radiance_sem_value(self->fd, a));
	/* Never lowers a value. */
	ASSERT_EQ(0, import_fence(self->fd, b, fence, 4));
	usleep(20 * 1000);
	EXPECT_EQ(10, radiance_sem_value(self->fd, b));
	close(fence);
}

TEST_F(sync, import_of_a_pending_fence_advances_when_it_signals)
{
	int a = radiance_sem_create(self->fd, 0), b = radiance_sem_create(self->fd, 0);
	int other = radiance_open(1);
	int c, fence;

	ASSERT_LE(0, other);
	c = radiance_sem_create(other, 0);
	ASSERT_LT(0, c);
	/* a:5 drives b (this file) and c (another device's file) to 7. */
	fence = export_point(self->fd, a, 5);
	ASSERT_LE(0, fence);
	ASSERT_EQ(0, import_fence(self->fd, b, fence, 7));
	ASSERT_EQ(0, import_fence(other, c, fence, 7));
	close(fence);
	usleep(20 * 1000);
	EXPECT_EQ(0, radiance_sem_value(self->fd, b));
	ASSERT_EQ(0, radiance_sem_signal(self->fd, a, 5));
	EXPECT_EQ(0, radiance_sem_wait_for(self->fd, b, 7));
	EXPECT_EQ(0, radiance_sem_wait_for(other, c, 7));
	close(other);
}

TEST_F(sync, import_of_a_sw_sync_fence)
{
	struct sw_sync_create_fence_data data = { .value = 1, .name = "radiance-test" };
	int timeline = sw_sync_open();
	int h = radiance_sem_create(self->fd, 0);
	__u32 one = 1;

	if (timeline == -ENOENT)
		SKIP(return, NO_SW_SYNC);
	ASSERT_LE(0, timeline) TH_LOG("sw_sync: %s", strerror(-timeline));
	ASSERT_EQ(0, ioctl(timeline, SW_SYNC_IOC_CREATE_FENCE, &data));
	ASSERT_EQ(0, import_fence(self->fd, h, data.fence, 42));
	usleep(20 * 1000);
	EXPECT_EQ(0, radiance_sem_value(self->fd, h));
	ASSERT_EQ(0, ioctl(timeline, SW_SYNC_IOC_INC, &one));
	EXPECT_EQ(0, radiance_sem_wait_for(self->fd, h, 42));
	close(data.fence);
	close(timeline);
}

TEST_F(sync, import_of_a_failed_fence_fails_the_semaphore)
{
	int a = radiance_sem_create(self->fd, 0), b = radiance_sem_create(self->fd, 0);
	int fence = export_point(self->fd, a, 1);

	ASSERT_LE(0, fence);
	ASSERT_EQ(0, import_fence(self->fd, b, fence, 1));
	ASSERT_EQ(0, radiance_sem_fail(self->fd, a, ENOLINK));
	EXPECT_EQ(-ENOLINK, radiance_sem_wait_for(self->fd, b, 1));
	EXPECT_EQ(-ENOLINK, radiance_sem_value(self->fd, b));
	close(fence);
}

TEST(closing_with_a_pending_import_leaks_nothing)
{
	struct sw_sync_create_fence_data data = { .value = 1, .name = "radiance-test" };
	int timeline = sw_sync_open();
	__u32 one = 1;

	if (timeline == -ENOENT)
		SKIP(return, NO_SW_SYNC);
	ASSERT_LE(0, timeline) TH_LOG("sw_sync: %s", strerror(-timeline));
	ASSERT_EQ(0, ioctl(timeline, SW_SYNC_IOC_CREATE_FENCE, &data));
	for (int i = 0; i < 100; i++) {
		int fd = radiance_open(0);
		int h = radiance_sem_create(fd, 0);

		ASSERT_EQ(0, import_fence(fd, h, data.fence, 1));
		ASSERT_EQ(0, close(fd));
	}
	EXPECT_EQ(0, radiance_mem_stat("semaphores"));
	/* Signalling after every file closed is harmless. */
	ASSERT_EQ(0, ioctl(timeline, SW_SYNC_IOC_INC, &one));
	close(data.fence);
	close(timeline);
}

TEST_F(sync, bad_arguments)
{
	struct radiance_sem_export_sync_file exp = { 0 };
	struct radiance_sem_import_sync_file imp = { 0 };
	int h = radiance_sem_create(self->fd, 0);
	int fence = export_point(self->fd, h, 1);
	int pipefd[2];

	ASSERT_LE(0, fence);
	EXPECT_EQ(-ENOENT, export_point(self->fd, h + 1, 1));
	exp.handle = h;
	exp.flags = 2;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &exp));
	exp.flags = 0;
	exp.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &exp));

	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(-EINVAL, import_fence(self->fd, h, pipefd[0], 1));
	EXPECT_EQ(-EINVAL, import_fence(self->fd, h, -1, 1));
	EXPECT_EQ(-ENOENT, import_fence(self->fd, h + 1, fence, 1));
	EXPECT_EQ(-EINVAL, import_fence(self->fd, h, fence, RADIANCE_SEM_FAILED_VALUE));
	imp.handle = h;
	imp.fd = fence;
	imp.value = 1;
	imp.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &imp));
	imp.flags = 0;
	imp.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &imp));
	close(pipefd[0]);
	close(pipefd[1]);
	close(fence);
}

TEST(export_import_close_cycles_leak_nothing)
{
	for (int i = 0; i < 2000; i++) {
		int fd = radiance_open(0);
		int a = radiance_sem_create(fd, 0), b = radiance_sem_create(fd, 0);
		int fence = export_point(fd, a, 1);

		ASSERT_LE(0, fence);
		ASSERT_EQ(0, import_fence(fd, b, fence, 1));
		if (i % 2)
			ASSERT_EQ(0, radiance_sem_signal(fd, a, 1));
		ASSERT_EQ(0, close(fence));
		ASSERT_EQ(0, close(fd));
	}
	EXPECT_EQ(0, radiance_mem_stat("semaphores"));
	EXPECT_EQ(0, radiance_mem_stat("open_files"));
}

TEST_HARNESS_MAIN
