// SPDX-License-Identifier: GPL-2.0
/*
 * VRAM buffer objects: create, info, destroy, mmap, scrubbing, exhaustion,
 * per-file handles and every bad input. Reads the device's debugfs `mem`
 * file to see VRAM use. Expects the module loaded as radiance_test.h says.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"

/* Allocatable VRAM: all of it but the 64 KiB kept for the device. */
#define VRAM_TOTAL (((uint64_t)RADIANCE_TEST_VRAM_MIB << 20) - 65536)

static void *map_bo(int fd, const struct radiance_bo_create *bo, int prot)
{
	return mmap(NULL, bo->size, prot, MAP_SHARED, fd, bo->mmap_offset);
}

FIXTURE(bo)
{
	int fd;
};

FIXTURE_SETUP(bo)
{
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
	/* Every test starts from an idle device: earlier files freed all. */
	ASSERT_EQ(0, radiance_mem_stat("vram_used"));
}

FIXTURE_TEARDOWN(bo)
{
	close(self->fd);
}

TEST_F(bo, create_info_destroy)
{
	struct radiance_bo_create c;
	struct radiance_bo_info info = { 0 };
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 1000, 0, &c);

	ASSERT_LT(0, h);
	/* Rounded up to the 256-byte granule, above the reserved 64 KiB. */
	EXPECT_EQ(0, c.device_address % 256);
	EXPECT_LE(65536, c.device_address);
	EXPECT_EQ(0, c.mmap_offset);
	EXPECT_EQ(1024, radiance_mem_stat("vram_used"));
	EXPECT_EQ(1, radiance_mem_stat("vram_bos"));

	info.handle = h;
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_INFO, &info));
	EXPECT_EQ(1024, info.size);
	EXPECT_EQ(RADIANCE_PLACEMENT_VRAM, info.placement);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(c.device_address, info.device_address);
	EXPECT_EQ(0, info.mmap_offset);

	ASSERT_EQ(0, radiance_bo_destroy(self->fd, h));
	EXPECT_EQ(0, radiance_mem_stat("vram_used"));
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	/* Gone, and never destroyed twice. */
	EXPECT_EQ(-ENOENT, radiance_bo_destroy(self->fd, h));
	EXPECT_EQ(-ENOENT, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_INFO, &info));
}

TEST_F(bo, mappable_bos_are_page_aligned_and_distinct)
{
	struct radiance_bo_create a, b;
	long page = getpagesize();

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 1, RADIANCE_BO_MAPPABLE, &a));
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, page + 1, RADIANCE_BO_MAPPABLE, &b));
	EXPECT_EQ(0, a.device_address % page);
	EXPECT_EQ(0, b.device_address % page);
	EXPECT_NE(0, a.mmap_offset);
	EXPECT_EQ(0, a.mmap_offset % page);
	EXPECT_NE(a.mmap_offset, b.mmap_offset);
	EXPECT_NE(a.handle, b.handle);
	/* Ranges do not overlap. */
	EXPECT_TRUE(a.device_address + page <= b.device_address ||
		    b.device_address + 2 * page <= a.device_address);
	EXPECT_EQ(3 * page, radiance_mem_stat("vram_used"));
}

/* Mappable VRAM exactly where the device says the CPU can map it; without
 * it (gluon-sim mode) one precise errno, and nothing is allocated. */
TEST_F(bo, mappable_vram_follows_the_cap)
{
	struct radiance_bo_create c, at;
	long page = getpagesize();
	uint32_t *p;
	int h;

	h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, page, RADIANCE_BO_MAPPABLE, &c);
	if (!radiance_vram_mappable()) {
		EXPECT_EQ(-EOPNOTSUPP, h);
		at = (struct radiance_bo_create){ .size = page, .placement = RADIANCE_PLACEMENT_VRAM,
						  .flags = RADIANCE_BO_MAPPABLE | RADIANCE_BO_FIXED_ADDRESS,
						  .device_address = 0x200000 };
		EXPECT_EQ(-EOPNOTSUPP, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_CREATE, &at));
		EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
		/* Plain VRAM and mappable host memory are still there. */
		EXPECT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, page, 0, NULL));
		ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, page, RADIANCE_BO_MAPPABLE, &c));
		p = map_bo(self->fd, &c, PROT_READ | PROT_WRITE);
		ASSERT_NE(MAP_FAILED, p);
		munmap(p, c.size);
		return;
	}
	/* Mappable VRAM maps, and the CPU's writes stay. */
	ASSERT_LT(0, h);
	p = map_bo(self->fd, &c, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 0x5eed;
	munmap(p, c.size);
	p = map_bo(self->fd, &c, PROT_READ);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0x5eedu, p[0]);
	munmap(p, c.size);
}

TEST_F(bo, mapping_is_shared_memory)
{
	struct radiance_bo_create c;
	long page = getpagesize();
	uint32_t *p, *q;
	pid_t pid;
	int status;

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4 * page, RADIANCE_BO_MAPPABLE, &c));
	p = map_bo(self->fd, &c, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	/* Fresh VRAM reads as zeros. */
	for (size_t i = 0; i < c.size / 4; i++)
		ASSERT_EQ(0, p[i]);
	for (size_t i = 0; i < c.size / 4; i++)
		p[i] = 0xc0de0000u + i;

	/* A second mapping of the same BO sees the writes. */
	q = map_bo(self->fd, &c, PROT_READ);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, memcmp(p, q, c.size));

	/* So does a child process through the inherited file, and its writes
	 * come back. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint32_t *r = map_bo(self->fd, &c, PROT_READ | PROT_WRITE);

		if (r == MAP_FAILED || r[7] != 0xc0de0007u)
			_exit(1);
		r[8] = 0xfeedf00d;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0xfeedf00du, p[8]);
	EXPECT_EQ(0xfeedf00du, q[8]);
	munmap(p, c.size);
	munmap(q, c.size);
}

TEST_F(bo, freed_vram_is_scrubbed)
{
	struct radiance_bo_create c, again;
	long page = getpagesize();
	unsigned char *p;
	int h;

	SKIP_UNLESS_VRAM_MAPPABLE();
	h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 2 * page, RADIANCE_BO_MAPPABLE, &c);
	ASSERT_LT(0, h);
	p = map_bo(self->fd, &c, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0xab, c.size);
	ASSERT_EQ(0, munmap(p, c.size));
	ASSERT_EQ(0, radiance_bo_destroy(self->fd, h));

	/* Best fit hands the same range out again: it must read as zeros. */
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 2 * page, RADIANCE_BO_MAPPABLE, &again));
	ASSERT_EQ(c.device_address, again.device_address);
	p = map_bo(self->fd, &again, PROT_READ);
	ASSERT_NE(MAP_FAILED, p);
	for (size_t i = 0; i < again.size; i++) {
		ASSERT_EQ(0, p[i]) TH_LOG("byte %zu", i);
	}
	munmap(p, again.size);
}

TEST_F(bo, old_mapping_never_shows_new_owner)
{
	struct radiance_bo_create c, again;
	long page = getpagesize();
	unsigned char *old, *fresh;
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, page, RADIANCE_BO_MAPPABLE, &c);

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, h);
	old = map_bo(self->fd, &c, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, old);
	memset(old, 0x11, page);
	ASSERT_EQ(0, radiance_bo_destroy(self->fd, h));
	/* The offset is stale now. */
	EXPECT_EQ(MAP_FAILED, map_bo(self->fd, &c, PROT_READ));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, page, RADIANCE_BO_MAPPABLE, &again));
	ASSERT_EQ(c.device_address, again.device_address);
	fresh = map_bo(self->fd, &again, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, fresh);
	EXPECT_EQ(0, fresh[0]);
	memset(fresh, 0x22, page);
	/* The old mapping kept its own pages. */
	EXPECT_EQ(0x11, old[0]);
	munmap(old, page);
	munmap(fresh, page);
}

TEST_F(bo, exhaustion_then_full_recovery)
{
	const uint64_t chunk = 1 << 20;
	static uint32_t handles[RADIANCE_TEST_VRAM_MIB + 1];
	int n = 0, h;

	while ((h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, chunk, 0, NULL)) > 0) {
		ASSERT_GT(RADIANCE_TEST_VRAM_MIB, n);
		handles[n++] = h;
	}
	EXPECT_EQ(-ENOMEM, h);
	/* All but the reserved 64 KiB were handed out in 1 MiB pieces. */
	EXPECT_EQ(VRAM_TOTAL / chunk, n);
	/* What is left is still usable by a smaller request. */
	h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, VRAM_TOTAL - n * chunk, 0, NULL);
	EXPECT_LT(0, h);
	EXPECT_EQ(VRAM_TOTAL, radiance_mem_stat("vram_used"));
	EXPECT_EQ(0, radiance_mem_stat("vram_largest_free"));

	/* Free in an order that exercises merging on both sides. */
	for (int i = 0; i < n; i += 2)
		ASSERT_EQ(0, radiance_bo_destroy(self->fd, handles[i]));
	EXPECT_EQ((int64_t)chunk, radiance_mem_stat("vram_largest_free"));
	for (int i = 1; i < n; i += 2)
		ASSERT_EQ(0, radiance_bo_destroy(self->fd, handles[i]));
	ASSERT_EQ(0, radiance_bo_destroy(self->fd, h));
	EXPECT_EQ(0, radiance_mem_stat("vram_used"));
	EXPECT_EQ((int64_t)VRAM_TOTAL, radiance_mem_stat("vram_largest_free"));
	EXPECT_EQ(1, radiance_mem_stat("vram_free_blocks"));
}

TEST_F(bo, bad_create_arguments)
{
	struct radiance_bo_create args;

#define BAD_CREATE(field, value)                                                      \
	do {                                                                          \
		memset(&args, 0, sizeof(args));                                       \
		args.size = 4096;                                                     \
		args.placement = RADIANCE_PLACEMENT_VRAM;                             \
		args.field = value;                                                   \
		EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_CREATE, &args)) \
			TH_LOG(#field " = " #value);                                  \
	} while (0)

	BAD_CREATE(size, 0);
	BAD_CREATE(size, VRAM_TOTAL + 1);
	BAD_CREATE(size, UINT64_MAX);
	BAD_CREATE(placement, 0);
	BAD_CREATE(placement, 99);
	BAD_CREATE(flags, 1u << 31);
	BAD_CREATE(flags, RADIANCE_BO_MAPPABLE | (1u << 2));
	BAD_CREATE(pad, 1);
#undef BAD_CREATE
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	/* The same arguments less the bad field do work. */
	memset(&args, 0, sizeof(args));
	args.size = 4096;
	args.placement = RADIANCE_PLACEMENT_VRAM;
	EXPECT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_CREATE, &args));
	EXPECT_EQ(1, radiance_mem_stat("vram_bos"));
}

TEST_F(bo, bad_handles_and_padding)
{
	struct radiance_bo_destroy d = { 0 };
	struct radiance_bo_info info = { 0 };
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 256, 0, NULL);

	ASSERT_LT(0, h);
	EXPECT_EQ(-ENOENT, radiance_bo_destroy(self->fd, 0));
	EXPECT_EQ(-ENOENT, radiance_bo_destroy(self->fd, h + 1));
	EXPECT_EQ(-ENOENT, radiance_bo_destroy(self->fd, UINT32_MAX));
	info.handle = h + 1;
	EXPECT_EQ(-ENOENT, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_INFO, &info));
	d.handle = h;
	d.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_DESTROY, &d));
	info.handle = h;
	info.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_INFO, &info));
	/* Refused calls destroyed nothing. */
	EXPECT_EQ(0, radiance_bo_destroy(self->fd, h));
}

TEST_F(bo, bad_mmaps)
{
	struct radiance_bo_create c, plain;
	long page = getpagesize();
	/* Any mappable BO: VRAM where the CPU maps it. */
	uint32_t placement = radiance_vram_mappable() ? RADIANCE_PLACEMENT_VRAM : RADIANCE_PLACEMENT_HOST;
	void *p;

	ASSERT_LT(0, radiance_bo_create(self->fd, placement, 2 * page, RADIANCE_BO_MAPPABLE, &c));
	ASSERT_LT(0, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, page, 0, &plain));
	/* Beyond the BO. */
	p = mmap(NULL, 3 * page, PROT_READ, MAP_SHARED, self->fd, c.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* Not at the BO's start. */
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, c.mmap_offset + page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* An offset nothing was given. */
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, 1ull << 40);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* Executable device memory. */
	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd, c.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* ... and not later through mprotect either. */
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, c.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, page, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	munmap(p, page);
}

TEST(handles_belong_to_their_file)
{
	struct radiance_bo_info info = { 0 };
	struct radiance_bo_create c;
	int a = radiance_open(0), b = radiance_open(0);

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	info.handle = radiance_bo_create(a, RADIANCE_PLACEMENT_VRAM, 4096, RADIANCE_BO_MAPPABLE, &c);
	ASSERT_LT(0, (int)info.handle);
	EXPECT_EQ(-ENOENT, radiance_ioctl(b, RADIANCE_IOCTL_BO_INFO, &info));
	EXPECT_EQ(-ENOENT, radiance_bo_destroy(b, info.handle));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, b, c.mmap_offset));
	/* Closing a file frees everything it owned. */
	EXPECT_EQ(1, radiance_mem_stat("vram_bos"));
	close(a);
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	EXPECT_EQ(0, radiance_mem_stat("vram_used"));
	close(b);
}

TEST(many_create_destroy_close_cycles_leak_nothing)
{
	uint32_t mappable = radiance_vram_mappable() ? RADIANCE_BO_MAPPABLE : 0;
	/* A bridge's device scrubs every freed range by a command that makes
	 * a round trip through the bridge: fewer cycles fit the harness's
	 * timeout under TCG. */
	int cycles = radiance_served_by_bridge() ? 1000 : 10000;

	for (int i = 0; i < cycles; i++) {
		int fd = radiance_open(0);
		int h = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, 4096 + i % 7 * 256, i % 2 ? mappable : 0, NULL);

		ASSERT_LT(0, h);
		/* Every third one is left for close to free. */
		if (i % 3)
			ASSERT_EQ(0, radiance_bo_destroy(fd, h));
		ASSERT_EQ(0, close(fd));
	}
	/* Ranges scrubbed by commands go back to the allocator when their
	 * scrub completes. */
	for (int i = 0; i < 100 && radiance_mem_stat("vram_used"); i++)
		usleep(50000);
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	EXPECT_EQ(0, radiance_mem_stat("vram_used"));
	EXPECT_EQ(1, radiance_mem_stat("vram_free_blocks"));
	EXPECT_EQ(0, radiance_mem_stat("open_files"));
}

/* Creates a VRAM BO at `addr` (RADIANCE_BO_FIXED_ADDRESS): its handle, or -errno. */
static int fixed(int fd, uint64_t addr, uint64_t size, uint32_t flags)
{
	struct radiance_bo_create c = {
		.size = size, .placement = RADIANCE_PLACEMENT_VRAM,
		.flags = RADIANCE_BO_FIXED_ADDRESS | flags, .device_address = addr,
	};
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_BO_CREATE, &c);

	if (ret)
		return ret;
	return c.device_address == addr ? (int)c.handle : -EFAULT;
}

TEST_F(bo, vram_at_a_fixed_address)
{
	struct radiance_bo_destroy d = { 0 };
	struct radiance_bo_create h = { .size = 4096, .placement = RADIANCE_PLACEMENT_HOST,
					.flags = RADIANCE_BO_FIXED_ADDRESS, .device_address = 0x200000 };
	uint64_t end = (uint64_t)RADIANCE_TEST_VRAM_MIB << 20;
	int a = fixed(self->fd, 0x200000, 8192, 0);

	ASSERT_LT(0, a) TH_LOG("at the address asked for");
	/* Taken, wholly or in part. */
	EXPECT_EQ(-EBUSY, fixed(self->fd, 0x200000, 256, 0));
	EXPECT_EQ(-EBUSY, fixed(self->fd, 0x201f00, 512, 0));
	EXPECT_EQ(-EBUSY, fixed(self->fd, 0x1fff00, 512, 0));
	/* Misaligned: 256 bytes, or a page when mappable. */
	EXPECT_EQ(-EINVAL, fixed(self->fd, 0x300010, 256, 0));
	if (radiance_vram_mappable()) {
		EXPECT_EQ(-EINVAL, fixed(self->fd, 0x300100, 4096, RADIANCE_BO_MAPPABLE));
		EXPECT_LT(0, fixed(self->fd, 0x301000, 4096, RADIANCE_BO_MAPPABLE));
	} else {
		/* Mappable VRAM is refused before the address is looked at. */
		EXPECT_EQ(-EOPNOTSUPP, fixed(self->fd, 0x301000, 4096, RADIANCE_BO_MAPPABLE));
	}
	/* Outside the allocatable VRAM: the device's first 64 KiB, the end. */
	EXPECT_EQ(-EINVAL, fixed(self->fd, 0, 256, 0));
	EXPECT_EQ(-EINVAL, fixed(self->fd, end - 256, 512, 0));
	EXPECT_EQ(-EINVAL, fixed(self->fd, end, 256, 0));
	/* Host memory has no device address to ask for. */
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_CREATE, &h));
	/* Freed, the range can be had again. */
	d.handle = a;
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_DESTROY, &d));
	EXPECT_LT(0, fixed(self->fd, 0x200000, 8192, 0));
}

TEST_HARNESS_MAIN
