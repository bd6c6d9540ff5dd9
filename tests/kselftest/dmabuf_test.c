// SPDX-License-Identifier: GPL-2.0
/*
 * HOST buffer objects and dma-buf: export (VRAM and HOST), mmap of the
 * exported buffer in another process (SCM_RIGHTS), import of udmabuf,
 * dma-heap and our own exports, lifetimes, and every bad input. Expects the
 * module loaded as radiance_test.h says (default pinned limit, 512 MiB).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "radiance_test.h"

#define PINNED_LIMIT (512ull << 20)

/* The dma-buf fd, or -errno. */
static int bo_export(int fd, uint32_t handle, uint32_t flags)
{
	struct radiance_bo_export args = { .handle = handle, .flags = flags };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_BO_EXPORT, &args);

	return ret ? ret : args.fd;
}

/* The new handle, or -errno. */
static int bo_import(int fd, int dmabuf, struct radiance_bo_import *out)
{
	struct radiance_bo_import args = { .fd = dmabuf };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_BO_IMPORT, &args);

	if (out)
		*out = args;
	return ret ? ret : (int)args.handle;
}

/*
 * A process that never opened the device receives `dmabuf` over a socket,
 * maps it, checks word i == seed + i, writes word i = ~(seed + i), exits 0.
 */
static int check_in_other_process(int dmabuf, size_t size, uint32_t seed)
{
	int sv[2], status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		uint32_t *p;
		int fd;

		close(sv[0]);
		/* Drop every inherited descriptor but the socket. */
		for (int i = 3; i < 1024; i++)
			if (i != sv[1])
				close(i);
		fd = radiance_recv_fd(sv[1]);
		if (fd < 0)
			_exit(10);
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(11);
		for (size_t i = 0; i < size / 4; i++)
			if (p[i] != seed + i)
				_exit(12);
		for (size_t i = 0; i < size / 4; i++)
			p[i] = ~(seed + i);
		_exit(0);
	}
	close(sv[1]);
	if (radiance_send_fd(sv[0], dmabuf))
		return -1;
	close(sv[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

FIXTURE(dmabuf)
{
	int fd;
};

FIXTURE_SETUP(dmabuf)
{
	self->fd = radiance_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, radiance_mem_stat("vram_bos"));
	ASSERT_EQ(0, radiance_mem_stat("host_pinned"));
}

FIXTURE_TEARDOWN(dmabuf)
{
	close(self->fd);
}

TEST_F(dmabuf, host_bo_is_pinned_zeroed_and_mappable)
{
	struct radiance_bo_create c;
	struct radiance_bo_info info = { 0 };
	long page = getpagesize();
	unsigned char *p;
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 3 * page + 1, RADIANCE_BO_MAPPABLE, &c);

	ASSERT_LT(0, h);
	EXPECT_EQ(0, c.device_address);
	EXPECT_NE(0, c.mmap_offset);
	EXPECT_EQ(4 * page, radiance_mem_stat("host_pinned"));
	info.handle = h;
	ASSERT_EQ(0, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_INFO, &info));
	EXPECT_EQ(RADIANCE_PLACEMENT_HOST, info.placement);
	EXPECT_EQ(4 * page, info.size);
	EXPECT_EQ(0, info.device_address);

	p = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, c.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (size_t i = 0; i < info.size; i++)
		ASSERT_EQ(0, p[i]);
	memset(p, 0x5a, info.size);
	munmap(p, info.size);
	p = mmap(NULL, info.size, PROT_READ, MAP_SHARED, self->fd, c.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0x5a, p[info.size - 1]);
	munmap(p, info.size);

	ASSERT_EQ(0, radiance_bo_destroy(self->fd, h));
	EXPECT_EQ(0, radiance_mem_stat("host_pinned"));
}

TEST_F(dmabuf, pinned_host_memory_is_capped)
{
	int h;

	/* Refused before anything is allocated. */
	EXPECT_EQ(-ENOMEM, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, PINNED_LIMIT + 4096, 0, NULL));
	EXPECT_EQ(0, radiance_mem_stat("host_pinned"));
	h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 1 << 20, 0, NULL);
	ASSERT_LT(0, h);
	EXPECT_EQ(-ENOMEM, radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, PINNED_LIMIT, 0, NULL));
	EXPECT_EQ(1 << 20, radiance_mem_stat("host_pinned"));
	ASSERT_EQ(0, radiance_bo_destroy(self->fd, h));
}

/* Fill through the BO mapping, check and write back through the exported
 * dma-buf in a process that never opened the device, read back here. */
static void export_round_trip(struct __test_metadata *_metadata, int fd, uint32_t placement)
{
	struct radiance_bo_create c;
	long size = 8 * getpagesize();
	uint32_t *p;
	int h, dmabuf;

	h = radiance_bo_create(fd, placement, size, RADIANCE_BO_MAPPABLE, &c);
	ASSERT_LT(0, h);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	for (long i = 0; i < size / 4; i++)
		p[i] = 0x1000 + i;

	dmabuf = bo_export(fd, h, RADIANCE_EXPORT_CLOEXEC);
	ASSERT_LE(0, dmabuf);
	EXPECT_EQ(FD_CLOEXEC, fcntl(dmabuf, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(dmabuf, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(0, check_in_other_process(dmabuf, size, 0x1000));
	for (long i = 0; i < size / 4; i++) {
		ASSERT_EQ((uint32_t)~(0x1000u + i), p[i]) TH_LOG("word %ld", i);
	}
	munmap(p, size);
	close(dmabuf);
	ASSERT_EQ(0, radiance_bo_destroy(fd, h));
}

TEST_F(dmabuf, vram_export_round_trip_through_another_process)
{
	SKIP_UNLESS_VRAM_MAPPABLE();
	export_round_trip(_metadata, self->fd, RADIANCE_PLACEMENT_VRAM);
}

TEST_F(dmabuf, host_export_round_trip_through_another_process)
{
	export_round_trip(_metadata, self->fd, RADIANCE_PLACEMENT_HOST);
}

TEST_F(dmabuf, export_without_cloexec_and_cpu_access_sync)
{
	struct dma_buf_sync sync = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW };
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, RADIANCE_BO_MAPPABLE, NULL);
	int dmabuf;

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LT(0, h);
	dmabuf = bo_export(self->fd, h, 0);
	ASSERT_LE(0, dmabuf);
	EXPECT_EQ(0, fcntl(dmabuf, F_GETFD) & FD_CLOEXEC);
	/* begin/end CPU access */
	EXPECT_EQ(0, ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &sync));
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
	EXPECT_EQ(0, ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &sync));
	close(dmabuf);
}

TEST_F(dmabuf, an_export_whose_answer_faults_leaves_no_fd_nor_buffer)
{
	struct radiance_bo_export args = { .flags = RADIANCE_EXPORT_CLOEXEC };
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 4096, RADIANCE_BO_MAPPABLE, NULL);
	int free_fd = radiance_lowest_free_fd();

	ASSERT_LT(0, h);
	ASSERT_LE(0, free_fd);
	args.handle = h;
	EXPECT_EQ(-EFAULT, radiance_ioctl_read_only(self->fd, RADIANCE_IOCTL_BO_EXPORT, &args));
	EXPECT_EQ(free_fd, radiance_lowest_free_fd())
		TH_LOG("the failed export left fd %d open, a number the caller never got", free_fd);
	/* No dma-buf holds the BO: its pages go with its handle. */
	ASSERT_EQ(0, radiance_bo_destroy(self->fd, h));
	EXPECT_EQ(0, radiance_mem_stat("host_pinned"));
}

TEST_F(dmabuf, export_outlives_destroy_and_close)
{
	struct radiance_bo_create c;
	long size = 2 * getpagesize();
	uint32_t *p, *q;
	int h, dmabuf, fd = radiance_open(0);

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LE(0, fd);
	h = radiance_bo_create(fd, RADIANCE_PLACEMENT_VRAM, size, RADIANCE_BO_MAPPABLE, &c);
	ASSERT_LT(0, h);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, c.mmap_offset);
	ASSERT_NE(MAP_FAILED, p);
	p[5] = 0xabcdef01;
	munmap(p, size);
	dmabuf = bo_export(fd, h, RADIANCE_EXPORT_CLOEXEC);
	ASSERT_LE(0, dmabuf);
	ASSERT_EQ(0, radiance_bo_destroy(fd, h));
	ASSERT_EQ(0, close(fd));
	/* The handle and the file are gone; the memory is not. */
	EXPECT_EQ(1, radiance_mem_stat("vram_bos"));
	EXPECT_EQ(size, radiance_mem_stat("vram_used"));
	q = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, dmabuf, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0xabcdef01u, q[5]);
	munmap(q, size);
	close(dmabuf);
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	EXPECT_EQ(0, radiance_mem_stat("vram_used"));
}

TEST_F(dmabuf, bad_dmabuf_mmaps)
{
	long page = getpagesize();
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_HOST, 2 * page, RADIANCE_BO_MAPPABLE, NULL);
	int dmabuf;
	void *p;

	ASSERT_LT(0, h);
	dmabuf = bo_export(self->fd, h, RADIANCE_EXPORT_CLOEXEC);
	ASSERT_LE(0, dmabuf);
	p = mmap(NULL, 3 * page, PROT_READ, MAP_SHARED, dmabuf, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED, dmabuf, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* The second page alone is fine. */
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, dmabuf, page);
	EXPECT_NE(MAP_FAILED, p);
	munmap(p, page);
	close(dmabuf);
}

/* Imports `dmabuf` and checks what BO_INFO says of it. */
static void import_and_check(struct __test_metadata *_metadata, int fd, int dmabuf, uint64_t size)
{
	struct radiance_bo_import imp;
	struct radiance_bo_info info = { 0 };
	int h = bo_import(fd, dmabuf, &imp);

	ASSERT_LT(0, h);
	EXPECT_EQ(size, imp.size);
	info.handle = h;
	ASSERT_EQ(0, radiance_ioctl(fd, RADIANCE_IOCTL_BO_INFO, &info));
	EXPECT_EQ(RADIANCE_PLACEMENT_HOST, info.placement);
	EXPECT_EQ(size, info.size);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(0, info.device_address);
	EXPECT_EQ(0, info.mmap_offset);
	/* Imported memory is not ours to export again or map. */
	EXPECT_EQ(-EINVAL, bo_export(fd, h, 0));
	ASSERT_EQ(0, radiance_bo_destroy(fd, h));
}

TEST_F(dmabuf, import_udmabuf)
{
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = 1 << 20 };
	int memfd = memfd_create("radiance", MFD_ALLOW_SEALING);
	int dev = open("/dev/udmabuf", O_RDWR);
	int dmabuf;

	ASSERT_LE(0, dev) TH_LOG("/dev/udmabuf: %s", strerror(errno));
	ASSERT_LE(0, memfd);
	ASSERT_EQ(0, ftruncate(memfd, create.size));
	ASSERT_EQ(0, fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK));
	create.memfd = memfd;
	dmabuf = ioctl(dev, UDMABUF_CREATE, &create);
	ASSERT_LE(0, dmabuf) TH_LOG("UDMABUF_CREATE: %s", strerror(errno));
	import_and_check(_metadata, self->fd, dmabuf, create.size);
	close(dmabuf);
	close(memfd);
	close(dev);
}

TEST_F(dmabuf, import_dma_heap)
{
	struct dma_heap_allocation_data alloc = { .len = 256 << 10, .fd_flags = O_RDWR | O_CLOEXEC };
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	ASSERT_LE(0, heap) TH_LOG("/dev/dma_heap/system: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &alloc));
	import_and_check(_metadata, self->fd, alloc.fd, alloc.len);
	close(alloc.fd);
	close(heap);
}

TEST_F(dmabuf, import_own_export_in_another_file)
{
	int other = radiance_open(1);
	int h = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 64 << 10, RADIANCE_BO_MAPPABLE, NULL);
	int dmabuf;

	SKIP_UNLESS_VRAM_MAPPABLE();
	ASSERT_LE(0, other);
	ASSERT_LT(0, h);
	dmabuf = bo_export(self->fd, h, RADIANCE_EXPORT_CLOEXEC);
	ASSERT_LE(0, dmabuf);
	/* Another device, and this one. */
	import_and_check(_metadata, other, dmabuf, 64 << 10);
	import_and_check(_metadata, self->fd, dmabuf, 64 << 10);
	close(dmabuf);
	close(other);
}

TEST_F(dmabuf, bad_export_and_import_arguments)
{
	struct radiance_bo_export exp = { 0 };
	struct radiance_bo_import imp = { 0 };
	/* An exportable BO: VRAM where the CPU maps it. */
	int vram = radiance_vram_mappable();
	int plain = radiance_bo_create(self->fd, RADIANCE_PLACEMENT_VRAM, 4096, 0, NULL);
	int h = radiance_bo_create(self->fd, vram ? RADIANCE_PLACEMENT_VRAM : RADIANCE_PLACEMENT_HOST, 4096,
				   RADIANCE_BO_MAPPABLE, NULL);
	int pipefd[2];

	ASSERT_LT(0, plain);
	ASSERT_LT(0, h);
	EXPECT_EQ(-ENOENT, bo_export(self->fd, 0, 0));
	EXPECT_EQ(-ENOENT, bo_export(self->fd, h + 100, 0));
	/* Not mappable: it does not own whole pages. */
	EXPECT_EQ(-EINVAL, bo_export(self->fd, plain, 0));
	EXPECT_EQ(-EINVAL, bo_export(self->fd, h, 2));
	exp.handle = h;
	exp.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_EXPORT, &exp));

	EXPECT_EQ(-EBADF, bo_import(self->fd, -1, NULL));
	EXPECT_EQ(-EBADF, bo_import(self->fd, 1000, NULL));
	/* Open files that are no dma-buf. */
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(-EINVAL, bo_import(self->fd, pipefd[0], NULL));
	EXPECT_EQ(-EINVAL, bo_import(self->fd, self->fd, NULL));
	close(pipefd[0]);
	close(pipefd[1]);
	imp.fd = bo_export(self->fd, h, RADIANCE_EXPORT_CLOEXEC);
	ASSERT_LE(0, imp.fd);
	imp.flags = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_IMPORT, &imp));
	imp.flags = 0;
	imp.pad = 1;
	EXPECT_EQ(-EINVAL, radiance_ioctl(self->fd, RADIANCE_IOCTL_BO_IMPORT, &imp));
	close(imp.fd);
	/* Nothing above created a BO. */
	EXPECT_EQ(vram ? 2 : 1, radiance_mem_stat("vram_bos"));
}

TEST(create_export_import_close_cycles_leak_nothing)
{
	int vram = radiance_vram_mappable();
	int64_t start = radiance_now_ns();
	int i;

	/* 10000 cycles where the machine runs them in time, 100 at least. */
	for (i = 0; radiance_more_cycles(start, i, 100, 10000); i++) {
		/* Every other one VRAM, where the CPU maps it. */
		uint32_t placement = i % 2 || !vram ? RADIANCE_PLACEMENT_HOST : RADIANCE_PLACEMENT_VRAM;
		int fd = radiance_open(0);
		int h = radiance_bo_create(fd, placement, 4096, RADIANCE_BO_MAPPABLE, NULL);
		int dmabuf = bo_export(fd, h, RADIANCE_EXPORT_CLOEXEC);

		ASSERT_LE(0, dmabuf);
		ASSERT_LT(0, bo_import(fd, dmabuf, NULL));
		ASSERT_EQ(0, close(dmabuf));
		ASSERT_EQ(0, close(fd));
	}
	TH_LOG("%d cycles", i);
	EXPECT_EQ(0, radiance_mem_stat("vram_bos"));
	EXPECT_EQ(0, radiance_mem_stat("vram_used"));
	EXPECT_EQ(0, radiance_mem_stat("host_pinned"));
	EXPECT_EQ(0, radiance_mem_stat("open_files"));
}

TEST_HARNESS_MAIN
