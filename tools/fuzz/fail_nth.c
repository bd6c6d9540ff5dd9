// SPDX-License-Identifier: GPL-2.0
/*
 * The fail-nth sweep: a program that makes, uses and frees every kind of
 * object runs once per (step, n), with the n-th fault site of that step
 * failed (/proc/thread-self/fail-nth; failslab, fail_page_alloc and
 * fail_usercopy armed for GFP_KERNEL allocations too) and only sites with
 * radiance.ko on the stack counted (require-start/end). n grows from 1
 * until the step completes with no fault injected. Each step must succeed
 * or fail with an errno an allocation or copy failure explains; then
 * everything is closed and the device's counters must be back where they
 * started.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/udmabuf.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "radiance.h"
#include "sys.h"

#define PAGE 4096ul
/* A step with more sites than this is reported, not swept to the end. */
#define MAX_NTH 400

struct scen {
	int fd, ctl, dmabuf, udmabuf, sync_fd, sw_timeline, sw_fence, other;
	uint32_t vram, host, imported, uimported, sem, sem2, alias, queue;
	uint64_t host_off, ring_off, ctl_off;
	uint8_t *host_map;
	const uint64_t *sem_page;
	struct radiance_packet *ring;
	struct radiance_queue_control *qctl;
	int vram_mappable;
	/* The device the control node serves, and its client's queue. */
	int user_fd;
	uint32_t user_index, user_queue;
	struct radiance_packet *user_ring;
	struct radiance_queue_control *user_qctl;
};

static int s_open(struct scen *s)
{
	s->fd = open("/dev/radiance0", O_RDWR | O_CLOEXEC);
	return s->fd < 0 ? -errno : 0;
}

static int s_get_info(struct scen *s)
{
	struct radiance_get_info a = { 0 };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_GET_INFO, &a);

	s->vram_mappable = !ret && (a.caps & RADIANCE_CAP_VRAM_MAPPABLE);
	return ret;
}

static int s_bo_vram(struct scen *s)
{
	struct radiance_bo_create a = { .size = 64 * 1024, .placement = RADIANCE_PLACEMENT_VRAM };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_BO_CREATE, &a);

	s->vram = a.handle;
	return ret;
}

static int s_bo_host(struct scen *s)
{
	struct radiance_bo_create a = { .size = 4 * PAGE, .placement = RADIANCE_PLACEMENT_HOST,
					.flags = RADIANCE_BO_MAPPABLE };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_BO_CREATE, &a);

	s->host = a.handle;
	s->host_off = a.mmap_offset;
	return ret;
}

static int s_bo_info(struct scen *s)
{
	struct radiance_bo_info a = { .handle = s->host };

	return xioctl(s->fd, RADIANCE_IOCTL_BO_INFO, &a);
}

static int s_mmap_host(struct scen *s)
{
	uint8_t *p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, s->host_off);

	if (p == MAP_FAILED)
		return -errno;
	s->host_map = p;
	memset(p, 0, 4 * PAGE);
	return 0;
}

static int s_export(struct scen *s)
{
	struct radiance_bo_export a = { .handle = s->host, .flags = RADIANCE_EXPORT_CLOEXEC };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_BO_EXPORT, &a);

	s->dmabuf = ret ? -1 : a.fd;
	return ret;
}

/* The exported buffer through its own fd, with the CPU access brackets. */
static int s_mmap_dma_buf(struct scen *s)
{
	struct dma_buf_sync start = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW };
	struct dma_buf_sync end = { .flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW };
	uint8_t *p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, s->dmabuf, 0);
	int ret = 0;

	if (p == MAP_FAILED)
		return -errno;
	if (ioctl(s->dmabuf, DMA_BUF_IOCTL_SYNC, &start))
		ret = -errno;
	memset(p, 0x5a, 4 * PAGE);
	if (!ret && ioctl(s->dmabuf, DMA_BUF_IOCTL_SYNC, &end))
		ret = -errno;
	munmap(p, 4 * PAGE);
	return ret;
}

static int s_import(struct scen *s)
{
	struct radiance_bo_import a = { .fd = s->dmabuf };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_BO_IMPORT, &a);

	s->imported = a.handle;
	return ret;
}

/* Not a radiance call: made outside the armed step. */
static int make_udmabuf(void)
{
	struct udmabuf_create u = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = 2 * PAGE };
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC), fd = -1;
	int memfd = memfd_create("fail-nth", MFD_ALLOW_SEALING | MFD_CLOEXEC);

	u.memfd = memfd;
	if (dev >= 0 && memfd >= 0 && !ftruncate(memfd, 2 * PAGE) && !fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		fd = ioctl(dev, UDMABUF_CREATE, &u);
	if (memfd >= 0)
		close(memfd);
	if (dev >= 0)
		close(dev);
	return fd;
}

static int s_import_udmabuf(struct scen *s)
{
	struct radiance_bo_import a = { .fd = s->udmabuf };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_BO_IMPORT, &a);

	s->uimported = a.handle;
	return ret;
}

static int s_sem_create(struct scen *s)
{
	struct radiance_sem_create a = { .initial = 1 }, b = { 0 };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_SEM_CREATE, &a);

	s->sem = a.handle;
	if (ret)
		return ret;
	ret = xioctl(s->fd, RADIANCE_IOCTL_SEM_CREATE, &b);
	s->sem2 = b.handle;
	return ret;
}

static int s_mmap_sem(struct scen *s)
{
	const uint64_t *p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, s->fd, PAGE);

	if (p == MAP_FAILED)
		return -errno;
	s->sem_page = p;
	return 0;
}

static int s_sem_signal(struct scen *s)
{
	struct radiance_sem_signal a = { .handle = s->sem, .value = 2 };

	return xioctl(s->fd, RADIANCE_IOCTL_SEM_SIGNAL, &a);
}

static int s_sem_query(struct scen *s)
{
	struct radiance_sem_query a = { .handle = s->sem };

	return xioctl(s->fd, RADIANCE_IOCTL_SEM_QUERY, &a);
}

static int s_sem_wait(struct scen *s)
{
	struct radiance_sem_wait_point p[2] = { { .handle = s->sem, .value = 1 },
						{ .handle = s->sem2, .value = 0 } };
	struct radiance_sem_wait a = { .points = (uintptr_t)p, .count = 2 };

	return xioctl(s->fd, RADIANCE_IOCTL_SEM_WAIT, &a);
}

static int s_export_sync_file(struct scen *s)
{
	struct radiance_sem_export_sync_file a = { .handle = s->sem, .value = 5,
						   .flags = RADIANCE_EXPORT_CLOEXEC };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &a);

	s->sync_fd = ret ? -1 : a.fd;
	return ret;
}

static int s_import_sync_file(struct scen *s)
{
	struct radiance_sem_import_sync_file a = { .handle = s->sem2, .fd = s->sync_fd, .value = 3 };

	return xioctl(s->fd, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &a);
}

static int make_sw_fence(struct scen *s)
{
	struct sw_sync_create_fence_data f = { .value = 1, .name = "fail-nth" };

	s->sw_timeline = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);
	if (s->sw_timeline < 0 || ioctl(s->sw_timeline, SW_SYNC_IOC_CREATE_FENCE, &f))
		return -1;
	return f.fence;
}

static int s_import_sw_fence(struct scen *s)
{
	struct radiance_sem_import_sync_file a = { .handle = s->sem2, .fd = s->sw_fence, .value = 4 };

	return xioctl(s->fd, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &a);
}

/* An alias of this file's semaphore in another device file (opened
 * outside the armed step). */
static int s_sem_import_handle(struct scen *s)
{
	struct radiance_sem_import_handle a = { .fd = s->fd, .handle = s->sem };
	int ret = xioctl(s->other, RADIANCE_IOCTL_SEM_IMPORT_HANDLE, &a);

	s->alias = a.new_handle;
	return ret;
}

static int s_sem_fail(struct scen *s)
{
	struct radiance_sem_fail a = { .handle = s->sem2, .error = EIO };

	return xioctl(s->fd, RADIANCE_IOCTL_SEM_FAIL, &a);
}

static int s_queue_create(struct scen *s)
{
	struct radiance_queue_create a = { .ring_packets = 64 };
	int ret = xioctl(s->fd, RADIANCE_IOCTL_QUEUE_CREATE, &a);

	s->queue = a.queue_id;
	s->ring_off = a.ring_offset;
	s->ctl_off = a.control_offset;
	return ret;
}

static int s_mmap_ring(struct scen *s)
{
	void *r = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, s->ring_off);
	void *c = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, s->ctl_off);

	if (r != MAP_FAILED)
		s->ring = r;
	if (c != MAP_FAILED)
		s->qctl = c;
	return r == MAP_FAILED || c == MAP_FAILED ? -errno : 0;
}

/* Every kind of packet the kernel translates, then the doorbell. */
static int s_submit(struct scen *s)
{
	struct radiance_launch_block blk = { .entry_pc = RADIANCE_BUILTIN_FILL_U32, .grid = { 1, 1, 1 },
					     .block = { 4, 1, 1 }, .regs_per_thread = 1 };
	struct radiance_launch_desc desc = {
		.start_pc = RADIANCE_BUILTIN_START, .kernel_pc = RADIANCE_BUILTIN_FILL_U32,
		.grid = { 1, 1, 1 }, .block = { 1, 1, 1 }, .regs_per_thread = 1,
	};
	struct radiance_packet p[8];
	struct radiance_fill_packet *fill = (void *)&p[0];
	struct radiance_copy_packet *copy = (void *)&p[1], *back = (void *)&p[2];
	struct radiance_counter_packet *ts = (void *)&p[3];
	struct radiance_launch_packet *launch = (void *)&p[4], *ldesc = (void *)&p[5];
	struct radiance_semaphore_packet *wait = (void *)&p[6], *sig = (void *)&p[7];
	struct radiance_queue_kick k = { .queue_id = s->queue };

	if (!s->ring || !s->qctl || !s->host_map)
		return -ENOENT;
	memset(p, 0, sizeof(p));
	*fill = (struct radiance_fill_packet){ .header.kind = RADIANCE_PACKET_FILL, .dst = s->vram,
					       .pattern_size = 4, .size = 4096, .pattern = 7 };
	*copy = (struct radiance_copy_packet){ .header.kind = RADIANCE_PACKET_COPY, .src = s->host,
					       .dst = s->vram, .size = PAGE };
	*back = (struct radiance_copy_packet){ .header = { RADIANCE_PACKET_COPY, RADIANCE_PACKET_BARRIER },
					       .src = s->vram, .dst = s->imported, .size = PAGE };
	*ts = (struct radiance_counter_packet){ .header.kind = RADIANCE_PACKET_TIMESTAMP, .dst = s->vram,
						.dst_offset = 64 };
	memcpy(s->host_map + PAGE, &blk, sizeof(blk));
	*launch = (struct radiance_launch_packet){ .header.kind = RADIANCE_PACKET_LAUNCH, .block = s->host,
						   .block_offset = PAGE, .block_size = sizeof(blk) };
	memcpy(s->host_map + 2 * PAGE, &desc, sizeof(desc));
	*ldesc = (struct radiance_launch_packet){ .header.kind = RADIANCE_PACKET_LAUNCH_DESC,
						  .block = s->host, .block_offset = 2 * PAGE,
						  .block_size = sizeof(desc) };
	*wait = (struct radiance_semaphore_packet){ .header.kind = RADIANCE_PACKET_WAIT_SEMAPHORE,
						    .handle = s->sem, .value = 1 };
	*sig = (struct radiance_semaphore_packet){ .header.kind = RADIANCE_PACKET_SIGNAL_SEMAPHORE,
						   .handle = s->sem, .value = 10 };
	memcpy(s->ring, p, sizeof(p));
	__atomic_store_n(&s->qctl->write_index, 8, __ATOMIC_RELEASE);
	return xioctl(s->fd, RADIANCE_IOCTL_QUEUE_KICK, &k);
}

static int s_queue_query(struct scen *s)
{
	struct radiance_queue_query a = { .queue_id = s->queue };

	/* What the queue did is not this step's question: let it finish. */
	for (int i = 0; s->qctl && i < 2000; i++) {
		if (__atomic_load_n(&s->qctl->read_index, __ATOMIC_ACQUIRE) >= 8 ||
		    __atomic_load_n(&s->qctl->status, __ATOMIC_ACQUIRE) != RADIANCE_QUEUE_ACTIVE)
			break;
		usleep(1000);
	}
	return xioctl(s->fd, RADIANCE_IOCTL_QUEUE_QUERY, &a);
}

static int s_queue_destroy(struct scen *s)
{
	struct radiance_queue_destroy a = { .queue_id = s->queue };

	return xioctl(s->fd, RADIANCE_IOCTL_QUEUE_DESTROY, &a);
}

static int s_sem_destroy(struct scen *s)
{
	struct radiance_sem_destroy a = { .handle = s->sem };

	return xioctl(s->fd, RADIANCE_IOCTL_SEM_DESTROY, &a);
}

static int s_bo_destroy(struct scen *s)
{
	struct radiance_bo_destroy a = { .handle = s->vram };

	return xioctl(s->fd, RADIANCE_IOCTL_BO_DESTROY, &a);
}

static int s_close_fds(struct scen *s)
{
	if (s->dmabuf >= 0)
		close(s->dmabuf);
	if (s->sync_fd >= 0)
		close(s->sync_fd);
	s->dmabuf = s->sync_fd = -1;
	return 0;
}

static int s_close(struct scen *s)
{
	int ret = close(s->fd) ? -errno : 0;

	s->fd = -1;
	return ret;
}

/* The smallest device a server may declare. */
static const struct radiance_user_declare small_user_device = {
	.dialect = RADIANCE_DIALECT_GLUON_SIM_16, .streams = 1, .stream_depth = 4, .cores = 1,
	.warps_per_core = 4, .threads_per_warp = 4, .vram_size = 1 << 20, .name = "fail-nth",
};

static int s_control_declare(struct scen *s)
{
	struct radiance_user_declare d = small_user_device;

	int ret;

	s->ctl = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (s->ctl < 0)
		return -errno;
	ret = xioctl(s->ctl, RADIANCE_IOCTL_USER_DECLARE, &d);
	s->user_index = d.device_index;
	return ret;
}

/* A client of the served device: a host BO copied into a VRAM BO. */
static int s_user_submit(struct scen *s)
{
	struct radiance_bo_create host = { .size = PAGE, .placement = RADIANCE_PLACEMENT_HOST };
	struct radiance_bo_create vram = { .size = PAGE, .placement = RADIANCE_PLACEMENT_VRAM };
	struct radiance_queue_create q = { .ring_packets = 16 };
	struct radiance_queue_kick k;
	struct radiance_copy_packet *copy;
	char path[32];
	void *r, *c;
	int ret;

	snprintf(path, sizeof(path), "/dev/radiance%u", s->user_index);
	s->user_fd = open(path, O_RDWR | O_CLOEXEC);
	if (s->user_fd < 0)
		return -errno;
	ret = xioctl(s->user_fd, RADIANCE_IOCTL_BO_CREATE, &host);
	ret = ret ? ret : xioctl(s->user_fd, RADIANCE_IOCTL_BO_CREATE, &vram);
	ret = ret ? ret : xioctl(s->user_fd, RADIANCE_IOCTL_QUEUE_CREATE, &q);
	if (ret)
		return ret;
	s->user_queue = q.queue_id;
	r = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, s->user_fd, q.ring_offset);
	c = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, s->user_fd, q.control_offset);
	if (r != MAP_FAILED)
		s->user_ring = r;
	if (c != MAP_FAILED)
		s->user_qctl = c;
	if (r == MAP_FAILED || c == MAP_FAILED)
		return -errno;
	copy = (struct radiance_copy_packet *)&s->user_ring[0];
	*copy = (struct radiance_copy_packet){ .header.kind = RADIANCE_PACKET_COPY, .src = host.handle,
					       .dst = vram.handle, .size = PAGE };
	__atomic_store_n(&s->user_qctl->write_index, 1, __ATOMIC_RELEASE);
	k = (struct radiance_queue_kick){ .queue_id = s->user_queue };
	return xioctl(s->user_fd, RADIANCE_IOCTL_QUEUE_KICK, &k);
}

/* The server's side: poll, read the frames (VRAM scrubs, the copy), read
 * the host memory each names at its first address word (a copy's source),
 * and answer each done. A kernel reset (the launch timeout passed while the
 * guest was slow) is acknowledged: the kernel's answer to a slow server,
 * not to a fault. */
static int s_control_serve(struct scen *s)
{
	struct pollfd p = { .fd = s->ctl, .events = POLLIN };
	uint8_t frames[16 * 16], data[PAGE];
	ssize_t n;

	if (poll(&p, 1, 2000) < 0)
		return -errno;
	n = read(s->ctl, frames, sizeof(frames));
	if (n < 0 && errno == ECONNRESET) {
		struct radiance_user_reset ack = { 0 };

		return xioctl(s->ctl, RADIANCE_IOCTL_USER_RESET, &ack);
	}
	if (n < 0)
		return -errno;
	for (ssize_t i = 0; i + 16 <= n; i += 16) {
		uint8_t done[16] = { frames[i] };
		uint32_t addr;
		struct radiance_user_host_access a = { .user_ptr = (uintptr_t)data, .len = sizeof(data) };
		int ret;

		memcpy(&addr, frames + i + 3, 4);
		a.addr = addr;
		/* EFAULT: a scrub's word is VRAM, not host memory. */
		ret = xioctl(s->ctl, RADIANCE_IOCTL_USER_HOST_READ, &a);
		if (ret && ret != -EFAULT)
			return ret;
		if (write(s->ctl, done, sizeof(done)) != sizeof(done))
			return -errno;
	}
	return 0;
}

static int s_user_close(struct scen *s)
{
	int ret;

	if (s->user_ring)
		munmap(s->user_ring, PAGE);
	if (s->user_qctl)
		munmap(s->user_qctl, PAGE);
	s->user_ring = NULL;
	s->user_qctl = NULL;
	ret = close(s->user_fd) ? -errno : 0;
	s->user_fd = -1;
	return ret;
}

static int s_control_close(struct scen *s)
{
	int ret = close(s->ctl) ? -errno : 0;

	s->ctl = -1;
	return ret;
}

static const struct step {
	const char *name;
	int (*run)(struct scen *s);
} steps[] = {
	{ "open", s_open },
	{ "get_info", s_get_info },
	{ "bo_create_vram", s_bo_vram },
	{ "bo_create_host", s_bo_host },
	{ "bo_info", s_bo_info },
	{ "mmap_bo", s_mmap_host },
	{ "bo_export", s_export },
	{ "mmap_dma_buf", s_mmap_dma_buf },
	{ "bo_import", s_import },
	{ "bo_import_udmabuf", s_import_udmabuf },
	{ "sem_create", s_sem_create },
	{ "mmap_sem_page", s_mmap_sem },
	{ "sem_signal", s_sem_signal },
	{ "sem_query", s_sem_query },
	{ "sem_wait", s_sem_wait },
	{ "sem_export_sync_file", s_export_sync_file },
	{ "sem_import_sync_file", s_import_sync_file },
	{ "sem_import_sw_sync", s_import_sw_fence },
	{ "sem_import_handle", s_sem_import_handle },
	{ "sem_fail", s_sem_fail },
	{ "queue_create", s_queue_create },
	{ "mmap_queue", s_mmap_ring },
	{ "queue_kick_packets", s_submit },
	{ "queue_query", s_queue_query },
	{ "queue_destroy", s_queue_destroy },
	{ "sem_destroy", s_sem_destroy },
	{ "bo_destroy", s_bo_destroy },
	{ "close_dma_buf_sync_file", s_close_fds },
	{ "close", s_close },
	{ "user_declare", s_control_declare },
	{ "user_device_submit", s_user_submit },
	{ "control_serve", s_control_serve },
	{ "user_device_close", s_user_close },
	{ "control_close", s_control_close },
};
#define N_STEPS (sizeof(steps) / sizeof(steps[0]))

/*
 * Two passes over each step, with different fault types counting for
 * fail-nth: slab allocations and user copies, whose sites come in the same
 * order every run; then page allocations, which come when a slab or
 * KASAN's stack depot happens to need a page, so their numbering moves
 * between runs. A type is left out of a pass by a require range no stack
 * can match.
 */
static const struct pass {
	const char *name;
	unsigned int types;	/* FAULT_* bits that count */
} passes[] = {
	{ "slab+usercopy", FAULT_SLAB | FAULT_USERCOPY },
	{ "page", FAULT_PAGE },
};
#define N_PASSES (sizeof(passes) / sizeof(passes[0]))

static int fail_nth_fd = -1;

/* The device's counters, and the dma-bufs alive in the whole system: an
 * import that keeps its reference keeps the exporter's memory. */
static const char *const counter_keys[] = {
	"vram_bos", "host_pinned", "semaphores", "queues", "commands_in_flight", "open_files",
	"devices_live", "user_devices", "dma_bufs",
};
#define N_COUNTERS (sizeof(counter_keys) / sizeof(counter_keys[0]))
/* The first keys are device 0's (debugfs radiance/radiance0/mem), then the
 * module's (radiance/devices: devices alive, with or without a node), the
 * user devices' faux devices, the system's dma-bufs. */
#define DEVICE_KEYS 6
#define USER_DEVICES (N_COUNTERS - 2)
#define DMA_BUFS (N_COUNTERS - 1)

/* debugfs dma_buf/bufinfo ends with `Total N objects, M bytes`. */
static long long dma_bufs_alive(void)
{
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");
	char line[256];
	long long n = -1;

	if (!f)
		return -1;
	/* Each buffer's own `Total N devices attached` comes before. */
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " objects, ") && sscanf(line, "Total %lld objects", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* User devices whose faux device is registered (a User alive). */
static int user_faux_devices(void)
{
	DIR *d = opendir("/sys/devices/faux");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "radiance-user", 13);
	closedir(d);
	return n;
}

/* Reads `key value` lines of `path` into v[from, to). */
static void read_keys(const char *path, long long *v, size_t from, size_t to)
{
	FILE *f = fopen(path, "r");
	char key[64];
	long long value;

	if (!f)
		return;
	while (fscanf(f, "%63s %lld", key, &value) == 2)
		for (size_t i = from; i < to; i++)
			if (!strcmp(key, counter_keys[i]))
				v[i] = value;
	fclose(f);
}

static void read_counters(long long *v)
{
	for (size_t i = 0; i < N_COUNTERS; i++)
		v[i] = -1;
	read_keys("/sys/kernel/debug/radiance/radiance0/mem", v, 0, DEVICE_KEYS);
	read_keys("/sys/kernel/debug/radiance/devices", v, DEVICE_KEYS, USER_DEVICES);
	v[USER_DEVICES] = user_faux_devices();
	v[DMA_BUFS] = dma_bufs_alive();
}

/* Waits up to 5 s (work in flight drains, files release) for the counters
 * to be back at `base`; returns the index of the first that is not, or -1. */
static int counters_back(const long long *base, long long *now)
{
	for (int tries = 0; tries < 500; tries++) {
		size_t i;

		read_counters(now);
		for (i = 0; i < N_COUNTERS && now[i] == base[i]; i++)
			;
		if (i == N_COUNTERS)
			return -1;
		if (tries == 499)
			return i;
		usleep(10000);
	}
	return -1;
}

static void scen_teardown(struct scen *s)
{
	if (s->host_map)
		munmap(s->host_map, 4 * PAGE);
	if (s->sem_page)
		munmap((void *)s->sem_page, PAGE);
	if (s->ring)
		munmap(s->ring, PAGE);
	if (s->qctl)
		munmap(s->qctl, PAGE);
	if (s->user_ring)
		munmap(s->user_ring, PAGE);
	if (s->user_qctl)
		munmap(s->user_qctl, PAGE);
	for (int fd = 3; fd < 1024; fd++)
		if (fd != fail_nth_fd)
			close(fd);
}

/*
 * Regression tests for what the sweep found, each on its own so that its
 * name says what it guards. They run the one call with every site failed
 * in turn and return NULL or why they failed.
 */

/* BO_IMPORT failing after it mapped the attachment (an allocation made
 * after it) returned without unmapping, detaching or putting the dma-buf:
 * the exporter's buffer stayed alive for good (kmemleak saw its sg_table). */
static const char *import_failing_past_its_mapping_puts_the_dma_buf(char *why, size_t len)
{
	long long base = dma_bufs_alive(), now = -1;

	for (unsigned int n = 1; n <= MAX_NTH; n++) {
		int fd = open("/dev/radiance0", O_RDWR | O_CLOEXEC), buf = make_udmabuf(), left, ret;
		struct radiance_bo_import a = { .fd = buf };

		if (fd < 0 || buf < 0)
			return "cannot open the device or make a udmabuf";
		fault_arm(fail_nth_fd, n);
		ret = xioctl(fd, RADIANCE_IOCTL_BO_IMPORT, &a);
		left = fault_left(fail_nth_fd);
		fault_arm(fail_nth_fd, 0);
		close(buf);
		close(fd);
		for (int i = 0; i < 300 && (now = dma_bufs_alive()) != base; i++)
			usleep(10000);
		if (now != base) {
			snprintf(why, len, "site %u (import %s): %lld dma-bufs alive, %lld before", n,
				 ret ? strerror(-ret) : "succeeded", now, base);
			return why;
		}
		if (left)
			return NULL;
	}
	return "more sites than the sweep's bound";
}

/* USER_DECLARE of the smallest device on a fresh control file, with its
 * n-th fault site failed; the file is closed after (the device goes).
 * Returns the ioctl's result; *left is what fail-nth had left. */
static int declare_at_site(unsigned int n, int *left)
{
	struct radiance_user_declare d = small_user_device;
	int ctl = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC | O_NONBLOCK), ret;

	*left = -1;
	if (ctl < 0)
		return -errno;
	fault_arm(fail_nth_fd, n);
	ret = xioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d);
	*left = fault_left(fail_nth_fd);
	fault_arm(fail_nth_fd, 0);
	close(ctl);
	return ret;
}

/* USER_DECLARE answered ENODEV when an allocation in faux_device_create
 * failed (7.3's faux::Registration reports any failure so); a failed copy
 * of its argument is EFAULT. */
static const char *user_declare_failing_allocation_says_enomem(char *why, size_t len)
{
	for (unsigned int n = 1; n <= MAX_NTH; n++) {
		int left, ret = declare_at_site(n, &left);

		if (left < 0)
			return "cannot open the control node";
		if (ret && ret != -ENOMEM && ret != -EFAULT) {
			snprintf(why, len, "site %u: %s", n, strerror(-ret));
			return why;
		}
		if (left)
			return NULL;
	}
	return "more sites than the sweep's bound";
}

/* A device whose creation failed after its scheduler was made stayed
 * alive with it: the hardware's interrupt held the scheduler, which held
 * the hardware. A user device's faux device (and pages) outlived the
 * failed USER_DECLARE. */
static const char *a_device_failing_after_its_scheduler_frees_both(char *why, size_t len)
{
	int base = user_faux_devices(), now = -1;

	if (base < 0)
		return "no /sys/devices/faux";
	for (unsigned int n = 1; n <= MAX_NTH; n++) {
		int left, ret = declare_at_site(n, &left);

		if (left < 0)
			return "cannot open the control node";
		for (int i = 0; i < 300 && (now = user_faux_devices()) != base; i++)
			usleep(10000);
		if (now != base) {
			snprintf(why, len, "site %u (declare %s): %d user devices alive, %d before", n,
				 ret ? strerror(-ret) : "succeeded", now, base);
			return why;
		}
		if (left)
			return NULL;
	}
	return "more sites than the sweep's bound";
}

/* Closing a file with a queue collected the queue ids into a vector first:
 * with that allocation failed, the queue stayed, holding the file's
 * context and device for good (kmemleak saw both). */
static const char *a_file_closing_without_memory_frees_its_queues(char *why, size_t len)
{
	long long base[N_COUNTERS], now[N_COUNTERS];

	read_counters(base);
	for (unsigned int n = 1; n <= MAX_NTH; n++) {
		struct radiance_queue_create q = { .ring_packets = 16 };
		int fd = open("/dev/radiance0", O_RDWR | O_CLOEXEC), left, i;

		if (fd < 0 || xioctl(fd, RADIANCE_IOCTL_QUEUE_CREATE, &q) ||
		    xioctl(fd, RADIANCE_IOCTL_QUEUE_CREATE, &q))
			return "cannot open the device or create its queues";
		fault_arm(fail_nth_fd, n);
		close(fd);
		left = fault_left(fail_nth_fd);
		fault_arm(fail_nth_fd, 0);
		i = counters_back(base, now);
		if (i >= 0) {
			snprintf(why, len, "site %u: %s is %lld, was %lld", n, counter_keys[i], now[i], base[i]);
			return why;
		}
		if (left)
			return NULL;
	}
	return "more sites than the sweep's bound";
}

/* A server's write from a buffer that faults answered EINVAL (the kernel
 * judged the zero bytes it could copy as a short response): EFAULT, as
 * for any write(2), and the responses before the fault count. */
static const char *a_server_write_from_a_faulting_buffer_says_efault(char *why, size_t len)
{
	struct radiance_user_declare d = small_user_device;
	int ctl = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC | O_NONBLOCK), err;
	void *none = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t n;

	if (ctl < 0 || none == MAP_FAILED || xioctl(ctl, RADIANCE_IOCTL_USER_DECLARE, &d))
		return "cannot declare a device";
	n = write(ctl, none, 16);
	err = n < 0 ? errno : 0;
	munmap(none, PAGE);
	close(ctl);
	if (err == EFAULT)
		return NULL;
	snprintf(why, len, "write from an inaccessible page: %zd (%s)", n, err ? strerror(err) : "no error");
	return why;
}

static const struct regression {
	const char *name;
	const char *(*run)(char *why, size_t len);
} regressions[] = {
#define REGRESSION(f) { #f, f }
	REGRESSION(import_failing_past_its_mapping_puts_the_dma_buf),
	REGRESSION(user_declare_failing_allocation_says_enomem),
	REGRESSION(a_device_failing_after_its_scheduler_frees_both),
	REGRESSION(a_file_closing_without_memory_frees_its_queues),
	REGRESSION(a_server_write_from_a_faulting_buffer_says_efault),
};
#define N_REGRESSIONS (sizeof(regressions) / sizeof(regressions[0]))

static int clean_errno(int err)
{
	return err == -ENOMEM || err == -EFAULT || err == -ENOBUFS || err == -EAGAIN;
}

/* Sweeps step k in one pass; NULL, or why it failed. */
static const char *sweep_step(size_t k, const long long *base, unsigned int *injected,
			      unsigned int *absorbed, char *detail, size_t len)
{
	long long now[N_COUNTERS];

	for (unsigned int n = 1; n <= MAX_NTH; n++) {
		struct scen s = { .fd = -1, .ctl = -1, .dmabuf = -1, .sync_fd = -1, .other = -1, .user_fd = -1 };
		int ret = 0, left, i;

		s.udmabuf = make_udmabuf();
		s.sw_fence = make_sw_fence(&s);
		s.other = open("/dev/radiance1", O_RDWR | O_CLOEXEC);
		for (size_t j = 0; j < k; j++) {
			ret = steps[j].run(&s);
			if (ret) {
				snprintf(detail, len, "setup step %s failed: %s", steps[j].name, strerror(-ret));
				scen_teardown(&s);
				return detail;
			}
		}
		fault_arm(fail_nth_fd, n);
		ret = steps[k].run(&s);
		left = fault_left(fail_nth_fd);
		fault_arm(fail_nth_fd, 0);
		for (size_t j = k + 1; j < N_STEPS; j++)
			steps[j].run(&s);
		scen_teardown(&s);
		if (left != 0) {
			/* No site left to fail: the sweep of this step is done. */
			if (!ret)
				return NULL;
			snprintf(detail, len, "fails with no fault injected: %s", strerror(-ret));
			return detail;
		}
		++*injected;
		if (!ret) {
			++*absorbed;
		} else if (!clean_errno(ret)) {
			snprintf(detail, len, "site %u: %s, not an allocation or copy failure's errno", n,
				 strerror(-ret));
			return detail;
		}
		i = counters_back(base, now);
		if (i >= 0) {
			snprintf(detail, len, "site %u: %s is %lld, was %lld", n, counter_keys[i], now[i], base[i]);
			return detail;
		}
	}
	return "more sites than the sweep's bound";
}

int fail_nth_sweep(const struct module_text *text, const char *only, uint32_t *sites)
{
	long long base[N_COUNTERS];
	int failed = 0;

	*sites = 0;
	fail_nth_fd = fault_open();
	if (fail_nth_fd < 0) {
		printf("# fail-nth: no /proc/thread-self/fail-nth: %s\n", strerror(-fail_nth_fd));
		return -1;
	}
	read_counters(base);
	printf("1..%zu\n", N_STEPS + N_REGRESSIONS);
	for (size_t k = 0; k < N_STEPS; k++) {
		const char *why = NULL;
		char detail[160] = "";

		if (only && strcmp(only, steps[k].name)) {
			printf("ok %zu fail_nth_%s # SKIP not asked for\n", k + 1, steps[k].name);
			continue;
		}
		for (size_t p = 0; p < N_PASSES && !why; p++) {
			unsigned int injected = 0, absorbed = 0;

			if (fault_setup(text, passes[p].types)) {
				printf("# fail-nth: cannot configure %s in debugfs\n", passes[p].name);
				close(fail_nth_fd);
				return -1;
			}
			why = sweep_step(k, base, &injected, &absorbed, detail, sizeof(detail));
			*sites += injected;
			printf("# fail-nth %s, %s faults: %u sites failed, %u absorbed (the call succeeded)%s%s\n",
			       steps[k].name, passes[p].name, injected, absorbed, why ? "; " : "", why ? why : "");
		}
		printf("%s %zu fail_nth_%s\n", why ? "not ok" : "ok", k + 1, steps[k].name);
		fflush(stdout);
		if (why) {
			failed++;
			/* Judge the next steps on their own, not on this one's leak. */
			read_counters(base);
		}
	}
	fault_setup(text, passes[0].types);
	for (size_t r = 0; r < N_REGRESSIONS; r++) {
		char detail[160];
		const char *why = regressions[r].run(detail, sizeof(detail));

		if (why)
			printf("# %s: %s\n", regressions[r].name, why);
		printf("%s %zu %s\n", why ? "not ok" : "ok", N_STEPS + r + 1, regressions[r].name);
		failed += !!why;
	}
	close(fail_nth_fd);
	return failed;
}
