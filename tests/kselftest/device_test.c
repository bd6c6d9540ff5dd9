// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/radianceN basics: open and close, GET_INFO contents, and the errors
 * every ioctl must give for unknown numbers, bad sizes, reserved bits and bad
 * pointers. Expects the module loaded with emulated_devices=2
 * emulated_vram_mib=64 (radiance_test.h).
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"

/* GET_INFO's command word with another size or direction. */
#define GET_INFO_SIZED(size) \
	_IOC(_IOC_READ | _IOC_WRITE, RADIANCE_IOCTL_TYPE, 0x00, (size))

FIXTURE(dev)
{
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/radiance0: %s", strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST(open_close_every_device)
{
	for (int i = 0; i < RADIANCE_TEST_DEVICES; i++) {
		int fd = radiance_open(i);

		ASSERT_LE(0, fd) TH_LOG("open /dev/radiance%d: %s", i, strerror(errno));
		ASSERT_EQ(0, close(fd));
	}
	/* Only the devices asked for exist. */
	ASSERT_EQ(-1, radiance_open(RADIANCE_TEST_DEVICES));
	ASSERT_EQ(ENOENT, errno);
}

TEST(get_info_reports_each_device)
{
	for (int i = 0; i < RADIANCE_TEST_DEVICES; i++) {
		struct radiance_get_info info;
		int fd = radiance_open(i);

		ASSERT_LE(0, fd);
		/* Output fields are overwritten, whatever userspace left there. */
		memset(&info, 0xa5, sizeof(info));
		info.flags = 0;
		info.pad0 = 0;
		ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_GET_INFO, &info));
		EXPECT_EQ(RADIANCE_ABI_MAJOR, info.abi_major);
		EXPECT_EQ(RADIANCE_ABI_MINOR, info.abi_minor);
		EXPECT_EQ(i, info.device_index);
		EXPECT_EQ(radiance_test_backend(), info.backend);
		EXPECT_EQ(0, info.pad1);
		ASSERT_EQ('\0', info.name[RADIANCE_NAME_LEN - 1]);
		EXPECT_STREQ(radiance_served_by_soc()	   ? "Radiance SoC, launch: reset" :
			     radiance_served_by_bridge() ? "Radiance (gluon-bridge model)" :
							   "Radiance (emulated Gluon)",
			     info.name);
		/* The name is zero-padded, not followed by stale bytes. */
		for (size_t j = strlen(info.name); j < RADIANCE_NAME_LEN; j++)
			EXPECT_EQ('\0', info.name[j]);
		EXPECT_EQ(4, info.cores);
		EXPECT_EQ(8, info.warps_per_core);
		EXPECT_EQ(16, info.threads_per_warp);
		EXPECT_EQ(64, info.max_queues);
		EXPECT_EQ((__u64)RADIANCE_TEST_VRAM_MIB << 20, info.vram_size);
		EXPECT_EQ(64, info.packet_size);
		EXPECT_EQ(getpagesize(), info.doorbell_page_size);
		EXPECT_EQ(0, info.features);
		/* FILL_U32, COPY_U32, VECADD_U32, SPIN, PRINTF_U32, START. */
		EXPECT_EQ(radiance_served_by_soc() ? 0 : 0x3f, info.builtins);
		EXPECT_EQ(0, info.pad2);
		EXPECT_TRUE(info.dialect == RADIANCE_DIALECT_GLUON_SIM_16 ||
			    info.dialect == RADIANCE_DIALECT_GLUON_24);
		EXPECT_EQ(4, info.streams);
		/* The emulated VRAM is kernel memory, mappable, except that
		 * in gluon-sim mode it acts as gluon-sim's, which lives in
		 * the sim's process; a bridge's lives in the bridge's. */
		EXPECT_EQ(!radiance_gluon_sim_mode() && !radiance_served_by_bridge(),
			  !!(info.caps & RADIANCE_CAP_VRAM_MAPPABLE))
			TH_LOG("caps %#llx", (unsigned long long)info.caps);
		close(fd);
	}
}

TEST_F(dev, unknown_ioctls_are_enotty)
{
	struct radiance_get_info info = { 0 };

	/* An unused number of ours. */
	EXPECT_EQ(-ENOTTY, radiance_ioctl(self->fd,
		_IOWR(RADIANCE_IOCTL_TYPE, 0x7f, struct radiance_get_info), &info));
	/* GET_INFO's number under another type byte. */
	EXPECT_EQ(-ENOTTY, radiance_ioctl(self->fd,
		_IOWR(RADIANCE_IOCTL_TYPE + 1, 0x00, struct radiance_get_info), &info));
	/* GET_INFO's number and size with the wrong direction. */
	EXPECT_EQ(-ENOTTY, radiance_ioctl(self->fd,
		_IOR(RADIANCE_IOCTL_TYPE, 0x00, struct radiance_get_info), &info));
	EXPECT_EQ(-ENOTTY, radiance_ioctl(self->fd, _IO(RADIANCE_IOCTL_TYPE, 0x00), NULL));
	/* A generic ioctl a misc device does not implement. */
	EXPECT_EQ(-ENOTTY, radiance_ioctl(self->fd, FIONREAD, &info));
}

TEST_F(dev, bad_sizes_are_einval)
{
	/* Room for the largest size tried, so only the size is wrong. */
	char buf[2 * sizeof(struct radiance_get_info)] = { 0 };
	/* Released sizes are 96, 104, 120 and 128: anything else is garbage. */
	size_t sizes[] = { 0, 8, 95, 97, 100, 103, 105, 112, 124, 136, sizeof(buf) };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, GET_INFO_SIZED(sizes[i]), buf))
			TH_LOG("size %zu", sizes[i]);
	}
}

TEST_F(dev, an_older_shorter_get_info_still_works)
{
	unsigned char buf[sizeof(struct radiance_get_info)];
	struct radiance_get_info *info = (void *)buf;

	memset(buf, 0xa5, sizeof(buf));
	info->flags = 0;
	info->pad0 = 0;
	ASSERT_EQ(0, radiance_ioctl(self->fd, GET_INFO_SIZED(RADIANCE_GET_INFO_SIZE_V1), buf));
	EXPECT_EQ(RADIANCE_ABI_MAJOR, info->abi_major);
	EXPECT_EQ(radiance_test_backend(), info->backend);
	EXPECT_EQ(0, info->features);
	/* Nothing past the caller's 96 bytes is written. */
	for (size_t i = RADIANCE_GET_INFO_SIZE_V1; i < sizeof(buf); i++)
		EXPECT_EQ(0xa5, buf[i]);
	/* ABI 1.8's size, as a library of 1.8 to 1.13 asks: no
	 * retired_streams written past it. */
	memset(buf, 0xa5, sizeof(buf));
	info->flags = 0;
	info->pad0 = 0;
	ASSERT_EQ(0, radiance_ioctl(self->fd, GET_INFO_SIZED(RADIANCE_GET_INFO_SIZE_V1_8), buf));
	EXPECT_EQ(RADIANCE_ABI_MINOR, info->abi_minor);
	for (size_t i = RADIANCE_GET_INFO_SIZE_V1_8; i < sizeof(buf); i++)
		EXPECT_EQ(0xa5, buf[i]);
}

TEST_F(dev, reserved_fields_must_be_zero)
{
	struct radiance_get_info info = { 0 };

	info.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	info.flags = 0x80000000u;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	info.flags = 0;
	info.pad0 = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	/* A refused call writes nothing back. */
	EXPECT_EQ(0, info.abi_major);
	info.pad0 = 0;
	EXPECT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, &info));
	EXPECT_EQ(RADIANCE_ABI_MAJOR, info.abi_major);
}

TEST_F(dev, bad_pointers_are_efault)
{
	long page = getpagesize();
	char *none, *ro;

	EXPECT_EQ(-EFAULT, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, NULL));
	EXPECT_EQ(-EFAULT, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, (void *)-4096L));

	none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	EXPECT_EQ(-EFAULT, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, none));

	/* Readable but not writable: the copy-out fails. */
	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO, ro));

	/* A struct that straddles into an unmapped page. */
	char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, two);
	ASSERT_EQ(0, munmap(two + page, page));
	EXPECT_EQ(-EFAULT, radiance_ioctl(self->fd, RADIANCE_IOCTL_GET_INFO,
					  two + page - sizeof(struct radiance_get_info) / 2));

	munmap(none, page);
	munmap(ro, page);
	munmap(two, page);
}

#define PARALLEL_PROCS 8
#define PARALLEL_THREADS 4
#define PARALLEL_ROUNDS 200

/* Opens, queries and closes a device many times; returns 0 on success. */
static int open_query_close_loop(int index)
{
	for (int i = 0; i < PARALLEL_ROUNDS; i++) {
		struct radiance_get_info info = { 0 };
		int fd = radiance_open(index);

		if (fd < 0)
			return 1;
		if (radiance_ioctl(fd, RADIANCE_IOCTL_GET_INFO, &info) ||
		    info.device_index != (unsigned int)index)
			return 2;
		if (close(fd))
			return 3;
	}
	return 0;
}

TEST(many_processes_open_in_parallel)
{
	pid_t pids[PARALLEL_PROCS];

	for (int i = 0; i < PARALLEL_PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(open_query_close_loop(i % RADIANCE_TEST_DEVICES));
	}
	for (int i = 0; i < PARALLEL_PROCS; i++) {
		int status;

		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child %d", i);
	}
}

static void *query_shared_fd(void *arg)
{
	int fd = *(int *)arg;

	for (int i = 0; i < PARALLEL_ROUNDS; i++) {
		struct radiance_get_info info = { 0 };

		if (radiance_ioctl(fd, RADIANCE_IOCTL_GET_INFO, &info) ||
		    info.abi_major != RADIANCE_ABI_MAJOR)
			return (void *)1;
	}
	return NULL;
}

TEST_F(dev, threads_share_one_fd)
{
	pthread_t threads[PARALLEL_THREADS];

	for (int i = 0; i < PARALLEL_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, query_shared_fd, &self->fd));
	for (int i = 0; i < PARALLEL_THREADS; i++) {
		void *ret;

		ASSERT_EQ(0, pthread_join(threads[i], &ret));
		EXPECT_EQ(NULL, ret);
	}
}

TEST_HARNESS_MAIN
