// SPDX-License-Identifier: GPL-2.0
/*
 * The fuzzer's calls and the executor that runs a program; see calls.h.
 *
 * Every access to memory the driver mapped is guarded (guarded_*): a mapping
 * at a bogus offset, or one another thread unmapped, faults, and the fault
 * ends that access only. Asynchronous calls run on the worker's second
 * thread with a copy of the resources as they were when the call was
 * queued, so close, destroy and munmap race with the calls after them.
 */
#define _GNU_SOURCE
#include "calls.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kcov.h>
#include <linux/perf_event.h>
#include <linux/udmabuf.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "radiance.h"
#include "sys.h"

#define RES_MAX 16
#define PAGE 4096ul

struct bo_res {
	int fd;
	uint32_t handle, placement, flags;
	uint64_t size, mmap_offset;
	uint64_t device_address;	/* a VRAM BO's; 0 if not known */
	uint8_t *map;		/* mappable ones are mapped at creation */
};

struct sem_res {
	int fd;
	uint32_t handle;
	uint64_t value;		/* as far as we signalled it */
};

struct queue_res {
	int fd;
	uint32_t id, packets;
	uint64_t ring_offset, control_offset, written;
	struct radiance_packet *ring;
	struct radiance_queue_control *ctl;
};

/* Resources of one kind: slots reused round-robin once full. */
#define RES_LIST(type, name) \
	struct {             \
		uint32_t n;  \
		type v[RES_MAX]; \
	} name

struct state {
	RES_LIST(int, devs);
	RES_LIST(int, bufs);	/* dma-buf fds */
	RES_LIST(int, syncs);	/* sync_file fds */
	RES_LIST(int, ctls);	/* control node fds */
	RES_LIST(int, timelines); /* sw_sync timelines */
	RES_LIST(struct bo_res, bos);
	RES_LIST(struct sem_res, sems);
	RES_LIST(struct queue_res, queues);
	RES_LIST(struct { void *p; size_t len; }, maps);
	uint32_t user_frame;	/* frame bytes of the device declared last */
	int user_inline;	/* it declared RADIANCE_USER_DECLARE_INLINE_BLOCKS */
	uint32_t user_index;	/* its N in /dev/radianceN */
};

#define RES_ADD(list) (&(list).v[(list).n++ % RES_MAX])
#define RES_COUNT(list) ((list).n < RES_MAX ? (list).n : RES_MAX)
/* The selected resource, or NULL if there is none or the selector is raw. */
#define RES_GET(list, sel) (RES_COUNT(list) && (sel) != RES_RAW ? &(list).v[(sel) % RES_COUNT(list)] : NULL)

struct async_job {
	struct call call;
	struct state st;
};

/* Every mapping a program made, from either thread, for the cleanup. */
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t len;
} all_maps[256];
static unsigned int n_all_maps;

static void map_register(void *p, size_t len)
{
	pthread_mutex_lock(&maps_lock);
	if (n_all_maps < sizeof(all_maps) / sizeof(all_maps[0])) {
		all_maps[n_all_maps].p = p;
		all_maps[n_all_maps].len = len;
		n_all_maps++;
	}
	pthread_mutex_unlock(&maps_lock);
}

/* munmap, and forget it (so the cleanup does not unmap a reused range). */
static void map_drop(void *p)
{
	pthread_mutex_lock(&maps_lock);
	for (unsigned int i = 0; i < n_all_maps; i++) {
		if (all_maps[i].p == p) {
			munmap(p, all_maps[i].len);
			all_maps[i] = all_maps[--n_all_maps];
			break;
		}
	}
	pthread_mutex_unlock(&maps_lock);
}

static void maps_drop_all(void)
{
	pthread_mutex_lock(&maps_lock);
	for (unsigned int i = 0; i < n_all_maps; i++)
		munmap(all_maps[i].p, all_maps[i].len);
	n_all_maps = 0;
	pthread_mutex_unlock(&maps_lock);
}

static void *map(int fd, size_t len, int prot, int flags, uint64_t off)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		return NULL;
	map_register(p, len);
	return p;
}

static __thread sigjmp_buf guard_jmp;
static __thread volatile int guard_armed;

static void on_fault(int sig, siginfo_t *info, void *uc)
{
	(void)info;
	(void)uc;
	if (guard_armed) {
		guard_armed = 0;
		siglongjmp(guard_jmp, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The accesses to driver mappings: each returns 0, or -EFAULT if touching
 * the mapping faulted. Out of line, so that nothing of the caller's lives
 * across the longjmp. */
static __attribute__((noinline)) int guarded_copy(void *dst, const void *src, size_t len)
{
	if (sigsetjmp(guard_jmp, 1))
		return -EFAULT;
	guard_armed = 1;
	memcpy(dst, src, len);
	guard_armed = 0;
	return 0;
}

static __attribute__((noinline)) int guarded_load(const void *p, size_t size, uint64_t *out)
{
	if (sigsetjmp(guard_jmp, 1))
		return -EFAULT;
	guard_armed = 1;
	*out = size == 8 ? __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE)
			 : __atomic_load_n((const uint32_t *)p, __ATOMIC_ACQUIRE);
	guard_armed = 0;
	return 0;
}

static __attribute__((noinline)) int guarded_store64(uint64_t *p, uint64_t v)
{
	if (sigsetjmp(guard_jmp, 1))
		return -EFAULT;
	guard_armed = 1;
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
	guard_armed = 0;
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Arms SIGALRM every `usec` from now (0: disarms it), with a handler that
 * does nothing: a call it interrupts returns EINTR, or with `restart` is
 * restarted where the kernel may. Again and again, since the first may
 * come before the call sleeps. */
static void alarm_in(uint64_t usec, int restart)
{
	struct timeval every = { .tv_sec = usec / 1000000, .tv_usec = usec % 1000000 };
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0 };
	struct itimerval t = { .it_interval = every, .it_value = every };

	if (usec)
		sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &t, NULL);
}

static const char *const op_names[OP_COUNT] = {
	[OP_OPEN_DEVICE] = "open_device", [OP_CLOSE] = "close", [OP_DUP] = "dup",
	[OP_GET_INFO] = "get_info", [OP_BO_CREATE] = "bo_create", [OP_BO_DESTROY] = "bo_destroy",
	[OP_BO_INFO] = "bo_info", [OP_BO_EXPORT] = "bo_export", [OP_BO_IMPORT] = "bo_import",
	[OP_SEM_CREATE] = "sem_create", [OP_SEM_DESTROY] = "sem_destroy",
	[OP_SEM_SIGNAL] = "sem_signal", [OP_SEM_QUERY] = "sem_query", [OP_SEM_FAIL] = "sem_fail",
	[OP_SEM_WAIT] = "sem_wait", [OP_SEM_EXPORT_SYNC_FILE] = "sem_export_sync_file",
	[OP_SEM_IMPORT_SYNC_FILE] = "sem_import_sync_file", [OP_SEM_IMPORT_HANDLE] = "sem_import_handle",
	[OP_QUEUE_CREATE] = "queue_create",
	[OP_QUEUE_DESTROY] = "queue_destroy", [OP_QUEUE_QUERY] = "queue_query",
	[OP_QUEUE_KICK] = "queue_kick", [OP_SUBMIT] = "submit", [OP_QUEUE_WAIT] = "queue_wait",
	[OP_MMAP] = "mmap", [OP_MUNMAP] = "munmap", [OP_RAW_IOCTL] = "raw_ioctl",
	[OP_SEND_TO_PEER] = "send_to_peer", [OP_FORK] = "fork", [OP_SIGNAL_WAIT] = "signal_wait",
	[OP_UDMABUF] = "udmabuf", [OP_SW_SYNC_FENCE] = "sw_sync_fence",
	[OP_SW_SYNC_INC] = "sw_sync_inc", [OP_CONTROL_OPEN] = "control_open",
	[OP_USER_DECLARE] = "user_declare", [OP_USER_HOST_ACCESS] = "user_host_access",
	[OP_USER_RESET] = "user_reset", [OP_CONTROL_READ] = "control_read",
	[OP_CONTROL_WRITE] = "control_write", [OP_POLL] = "poll", [OP_USER_SERVE] = "user_serve",
	[OP_USER_RETIRE] = "user_retire", [OP_USER_PROGRESS] = "user_progress",
	[OP_DEBUGFS_READ] = "debugfs_read", [OP_TRACE_EVENTS] = "trace_events",
};

const char *op_name(enum op op)
{
	return op < OP_COUNT ? op_names[op] : "?";
}

/* How often each call is picked: the packet paths and the objects they
 * name most, the slow and rare paths least. */
static const uint8_t op_weight[OP_COUNT] = {
	[OP_OPEN_DEVICE] = 4, [OP_CLOSE] = 3, [OP_DUP] = 1, [OP_GET_INFO] = 2,
	[OP_BO_CREATE] = 10, [OP_BO_DESTROY] = 4, [OP_BO_INFO] = 2, [OP_BO_EXPORT] = 3,
	[OP_BO_IMPORT] = 3, [OP_SEM_CREATE] = 6, [OP_SEM_DESTROY] = 3, [OP_SEM_SIGNAL] = 4,
	[OP_SEM_QUERY] = 2, [OP_SEM_FAIL] = 2, [OP_SEM_WAIT] = 3, [OP_SEM_EXPORT_SYNC_FILE] = 3,
	[OP_SEM_IMPORT_SYNC_FILE] = 3, [OP_SEM_IMPORT_HANDLE] = 4, [OP_QUEUE_CREATE] = 8, [OP_QUEUE_DESTROY] = 3,
	[OP_QUEUE_QUERY] = 2, [OP_QUEUE_KICK] = 3, [OP_SUBMIT] = 16, [OP_QUEUE_WAIT] = 4,
	[OP_MMAP] = 5, [OP_MUNMAP] = 2, [OP_RAW_IOCTL] = 4, [OP_SEND_TO_PEER] = 2, [OP_FORK] = 1,
	[OP_SIGNAL_WAIT] = 1, [OP_UDMABUF] = 2, [OP_SW_SYNC_FENCE] = 2, [OP_SW_SYNC_INC] = 2,
	[OP_CONTROL_OPEN] = 1, [OP_USER_DECLARE] = 2, [OP_USER_HOST_ACCESS] = 1,
	[OP_USER_RESET] = 1, [OP_CONTROL_READ] = 1, [OP_CONTROL_WRITE] = 1, [OP_POLL] = 1,
	[OP_USER_SERVE] = 4, [OP_USER_RETIRE] = 1, [OP_USER_PROGRESS] = 2,
	[OP_DEBUGFS_READ] = 2, [OP_TRACE_EVENTS] = 1,
};

enum op call_pick_op(struct rng *r)
{
	unsigned int total = 0, pick;

	for (int i = 0; i < OP_COUNT; i++)
		total += op_weight[i];
	pick = rng_below(r, total);
	for (int i = 0; i < OP_COUNT; i++) {
		if (pick < op_weight[i])
			return i;
		pick -= op_weight[i];
	}
	return OP_GET_INFO;
}

/* How a call's arguments are drawn: mostly as a valid call has them and
 * sometimes anything, or, for a creator that call_append puts before a
 * call (`valid`), only as a valid call has them. */
struct gen {
	struct rng *r;
	const struct hints *h;
	int valid;
};

/* True once in n, never for a valid call: where an argument goes wild. */
static int wild(struct gen *g, uint64_t n)
{
	return !g->valid && rng_one_in(g->r, n);
}

/* Mostly v, sometimes anything: for fields that must be zero or valid. */
static uint64_t mostly(struct gen *g, uint64_t v)
{
	return wild(g, 12) ? rng_value(g->r, g->h) : v;
}

static void generate(struct call *c, enum op op, struct gen *g)
{
	struct rng *r = g->r;
	const struct hints *h = g->h;

	memset(c, 0, sizeof(*c));
	c->op = op;
	c->how = wild(g, 10) ? CALL_ASYNC : 0;
	if (wild(g, 16))
		c->how |= (1 + rng_below(r, ARG_PLACES - 1)) << CALL_PLACE_SHIFT;
	if (rng_one_in(r, 32))
		c->how |= (1 + rng_below(r, 3)) << CALL_REPEAT_SHIFT;
	/* Mostly an early fault site; now and then one deep in a call that
	 * makes many objects (a declared device, a queue). */
	c->fail_nth = wild(g, 16) ? 1 + rng_below(r, rng_one_in(r, 4) ? 64 : 8) : 0;
	for (int i = 0; i < CALL_RES; i++)
		c->res[i] = rng_one_in(r, 24) ? RES_RAW : rng_below(r, 8);
	for (int i = 0; i < CALL_ARGS; i++)
		c->a[i] = rng_value(r, h);
	switch (op) {
	case OP_OPEN_DEVICE:
		c->a[0] = wild(g, 16) ? rng_below(r, 8) : rng_below(r, 2);
		/* Bit 0: O_NONBLOCK, bit 1: O_RDONLY; a creator's is O_RDWR. */
		c->a[1] = g->valid ? 0 : rng_below(r, 4);
		break;
	case OP_GET_INFO:
		c->a[0] = rng_below(r, 6);
		c->a[2] = mostly(g, 0);
		c->a[3] = mostly(g, 0);
		break;
	case OP_BO_CREATE:
		c->a[0] = wild(g, 3) ? rng_value(r, h) : (1 + rng_below(r, 16)) * PAGE;
		c->a[1] = mostly(g, 1 + rng_below(r, 2));
		c->a[2] = mostly(g, rng_below(r, 4));
		c->a[3] = mostly(g, 0);
		c->a[4] = rng_one_in(r, 2) ? rng_below(r, 64) * PAGE : rng_value(r, h);
		break;
	case OP_BO_DESTROY:
	case OP_BO_INFO:
	case OP_SEM_DESTROY:
	case OP_SEM_QUERY:
	case OP_QUEUE_DESTROY:
	case OP_QUEUE_QUERY:
	case OP_QUEUE_KICK:
	case OP_USER_RESET:
		c->a[0] = mostly(g, 0);
		c->a[1] = mostly(g, 0);
		break;
	case OP_BO_EXPORT:
	case OP_BO_IMPORT:
	case OP_SEM_IMPORT_SYNC_FILE:
		c->a[0] = mostly(g, rng_below(r, 2));
		c->a[1] = mostly(g, 0);
		c->a[2] = mostly(g, rng_below(r, 8));
		break;
	case OP_SEM_CREATE:
		c->a[0] = wild(g, 4) ? rng_value(r, h) : rng_below(r, 4);
		c->a[1] = mostly(g, 0);
		break;
	case OP_SEM_SIGNAL:
	case OP_SEM_EXPORT_SYNC_FILE:
		c->a[0] = rng_below(r, 4);
		c->a[1] = rng_below(r, 8);	/* bit 0: raw value a[2] */
		c->a[2] = rng_value(r, h);
		c->a[3] = mostly(g, 0);
		break;
	case OP_SEM_FAIL:
		c->a[0] = mostly(g, 1 + rng_below(r, 133));
		break;
	case OP_SEM_IMPORT_HANDLE:
		c->a[0] = mostly(g, 0);
		break;
	case OP_SEM_WAIT:
	case OP_SIGNAL_WAIT:
		/* A few points, or now and then up to the 300 sem_wait has. */
		c->a[0] = mostly(g, rng_one_in(r, 4) ? 5 + rng_below(r, 296) : 1 + rng_below(r, 4));
		c->a[1] = mostly(g, rng_below(r, 2));
		c->a[2] = rng_below(r, 5);
		c->a[3] = rng_below(r, 20);
		c->a[4] = rng_below(r, 16);
		break;
	case OP_QUEUE_CREATE:
		c->a[0] = mostly(g, 16u << rng_below(r, 6));
		c->a[1] = mostly(g, 0);
		c->a[2] = mostly(g, 0);
		break;
	case OP_SUBMIT:
		/* Mostly a few packets; now and then a burst that fills the
		 * ring or the device's streams. */
		c->a[0] = rng_below(r, rng_one_in(r, 8) ? 64 : 12);
		c->a[1] = rng_next(r);
		c->a[2] = rng_below(r, 16);
		c->a[4] = rng_below(r, 4);
		break;
	case OP_QUEUE_WAIT:
		/* Under TCG a command takes milliseconds: sometimes wait long. */
		c->a[0] = rng_one_in(r, 3) ? rng_below(r, 300) : rng_below(r, 30);
		break;
	case OP_MMAP:
		c->a[0] = rng_below(r, 7);
		c->a[1] = wild(g, 4) ? rng_value(r, h) : 0;
		c->a[2] = rng_below(r, 6);
		c->a[3] = rng_below(r, 8);
		break;
	case OP_RAW_IOCTL:
		c->a[0] = rng_one_in(r, 4) ? rng_next(r) : rng_below(r, 0x48);
		c->a[1] = rng_below(r, 5);
		c->a[2] = rng_one_in(r, 2) ? 8 * rng_below(r, 16) : rng_value(r, h);
		c->a[4] = rng_below(r, 12);
		break;
	case OP_CLOSE:
	case OP_SEND_TO_PEER:
		c->a[0] = rng_below(r, 4);
		c->a[1] = rng_next(r);
		break;
	case OP_UDMABUF:
		c->a[0] = wild(g, 4) ? rng_value(r, h) : (1 + rng_below(r, 8)) * PAGE;
		c->a[1] = mostly(g, 0);
		break;
	case OP_SW_SYNC_FENCE:
	case OP_SW_SYNC_INC:
		c->a[0] = rng_below(r, 8);
		break;
	case OP_USER_DECLARE:
		c->a[0] = mostly(g, 1 + rng_below(r, 2));
		c->a[1] = mostly(g, 1 + rng_below(r, 4));
		c->a[2] = mostly(g, 1 + rng_below(r, 16));
		/* The shape, the builtins, then rates of 1 to 255 MiB and
		 * kilothreads a second (or none: the timeout alone). */
		c->a[3] = mostly(g, 0x01040401 | (rng_one_in(r, 2) ? (uint64_t)rng_below(r, 1 << 16) << 32 : 0));
		c->a[4] = mostly(g, (1 + rng_below(r, 16)) << 20);
		/* The flags (every one known is below 16) over the caps: none,
		 * or any of those a served device may have. */
		c->a[5] = mostly(g, (uint64_t)rng_below(r, 16) << 32 |
					    (rng_one_in(r, 2) ? rng_below(r, RADIANCE_CAP_VRAM_MAPPABLE) : 0));
		break;
	case OP_USER_RETIRE:
		c->a[0] = mostly(g, rng_below(r, 16));
		c->a[1] = mostly(g, 0);
		break;
	case OP_USER_PROGRESS:
		c->a[0] = mostly(g, rng_below(r, 4));
		c->a[1] = mostly(g, 0);
		c->a[2] = mostly(g, 1 + rng_below(r, 1 << 16));
		break;
	case OP_USER_HOST_ACCESS:
		c->a[0] = rng_below(r, 4);
		c->a[3] = rng_one_in(r, 2) ? rng_below(r, 256) : rng_value(r, h);
		c->a[4] = mostly(g, 0);
		break;
	case OP_CONTROL_READ:
	case OP_CONTROL_WRITE:
		c->a[0] = rng_one_in(r, 2) ? 16 * rng_below(r, 8) : rng_value(r, h);
		break;
	case OP_DEBUGFS_READ:
		c->a[0] = rng_below(r, 4);
		c->a[1] = rng_below(r, 5);
		c->a[2] = rng_one_in(r, 2) ? 4096 : rng_value(r, h);
		break;
	case OP_TRACE_EVENTS:
		c->a[0] = rng_below(r, 5);
		c->a[1] = rng_below(r, 8);
		c->a[2] = rng_below(r, 2);
		break;
	case OP_USER_SERVE:
		/* Mostly answered as a server would. */
		c->a[0] = rng_below(r, 4) | (rng_one_in(r, 2) ? rng_below(r, 4) << 2 : 0);
		c->a[5] = rng_next(r);
		c->a[1] = wild(g, 3) ? rng_next(r) : 0;
		c->a[2] = rng_one_in(r, 2) ? rng_below(r, 4) : rng_value(r, h);
		c->a[4] = rng_below(r, 4);
		break;
	default:
		break;
	}
}

void call_generate(struct call *c, enum op op, struct rng *r, const struct hints *h)
{
	struct gen g = { .r = r, .h = h };

	generate(c, op, &g);
}

/* What a call needs made before it. */
enum need {
	NEED_DEV = 1 << 0,
	NEED_VRAM_BO = 1 << 1,
	NEED_HOST_BO = 1 << 2,
	NEED_SEM = 1 << 3,
	NEED_QUEUE = 1 << 4,
	NEED_CTL = 1 << 5,
	NEED_USER_DEVICE = 1 << 6,
};

static unsigned int call_needs(enum op op)
{
	switch (op) {
	case OP_GET_INFO:
	case OP_BO_CREATE:
	case OP_SEM_CREATE:
	case OP_QUEUE_CREATE:
	case OP_RAW_IOCTL:
	case OP_DUP:
		return NEED_DEV;
	case OP_BO_DESTROY:
	case OP_BO_INFO:
	case OP_BO_EXPORT:
	case OP_BO_IMPORT:
	case OP_MMAP:
		return NEED_DEV | NEED_VRAM_BO | NEED_HOST_BO;
	case OP_SEM_DESTROY:
	case OP_SEM_SIGNAL:
	case OP_SEM_QUERY:
	case OP_SEM_FAIL:
	case OP_SEM_WAIT:
	case OP_SIGNAL_WAIT:
	case OP_SEM_EXPORT_SYNC_FILE:
	case OP_SEM_IMPORT_SYNC_FILE:
	case OP_SEM_IMPORT_HANDLE:
		return NEED_DEV | NEED_SEM;
	case OP_QUEUE_DESTROY:
	case OP_QUEUE_QUERY:
	case OP_QUEUE_KICK:
	case OP_QUEUE_WAIT:
		return NEED_DEV | NEED_QUEUE;
	case OP_SUBMIT:
		return NEED_DEV | NEED_VRAM_BO | NEED_HOST_BO | NEED_SEM | NEED_QUEUE;
	case OP_USER_DECLARE:
	case OP_CONTROL_READ:
	case OP_CONTROL_WRITE:
		return NEED_CTL;
	case OP_USER_HOST_ACCESS:
	case OP_USER_RESET:
	case OP_USER_SERVE:
	case OP_USER_RETIRE:
	case OP_USER_PROGRESS:
		return NEED_CTL | NEED_USER_DEVICE;
	default:
		return 0;
	}
}

/* What the calls of `p` make. */
static unsigned int prog_makes(const struct prog *p)
{
	unsigned int made = 0;

	for (uint32_t i = 0; i < p->n; i++) {
		const struct call *c = &p->c[i];

		switch (c->op) {
		case OP_OPEN_DEVICE:
			made |= NEED_DEV;
			break;
		case OP_BO_CREATE:
			made |= c->a[1] == RADIANCE_PLACEMENT_VRAM ? NEED_VRAM_BO : c->a[1] == RADIANCE_PLACEMENT_HOST ? NEED_HOST_BO : 0;
			break;
		case OP_SEM_CREATE:
			made |= NEED_SEM;
			break;
		case OP_QUEUE_CREATE:
			made |= NEED_QUEUE;
			break;
		case OP_CONTROL_OPEN:
			made |= NEED_CTL;
			break;
		case OP_USER_DECLARE:
			/* It opens the device it declares: the calls after it
			 * make their objects there, and its server answers. */
			made |= NEED_USER_DEVICE | NEED_DEV;
			break;
		default:
			break;
		}
	}
	return made;
}

/* SEM_IMPORT_HANDLE of the program's first semaphore into a file that is
 * not its own (see its runner), opened for it if the program has one file. */
static void import_alias(struct call *c, struct gen *valid)
{
	generate(c, OP_SEM_IMPORT_HANDLE, valid);
	c->res[0] = 1;	/* odd: the file is the call's pick, not the semaphore's */
	c->res[1] = 0;
	c->res[2] = 1;	/* into another file than the semaphore's */
}

int call_append(struct prog *p, const struct call *c, struct rng *r, const struct hints *h)
{
	/* In the order they are made: a device file before its objects. */
	static const struct {
		unsigned int need;
		enum op op;
	} creators[] = {
		{ NEED_CTL, OP_CONTROL_OPEN }, { NEED_USER_DEVICE, OP_USER_DECLARE },
		{ NEED_DEV, OP_OPEN_DEVICE }, { NEED_VRAM_BO, OP_BO_CREATE },
		{ NEED_HOST_BO, OP_BO_CREATE }, { NEED_SEM, OP_SEM_CREATE },
		{ NEED_QUEUE, OP_QUEUE_CREATE },
	};
	unsigned int made = prog_makes(p), missing = call_needs(c->op) & ~made;
	struct gen valid = { .r = r, .h = h, .valid = 1 };
	struct call last = *c;
	/* One semaphore in three that a call needs is an alias in another
	 * file (as a consumer of another process's timeline holds one): its
	 * calls, imports, waits and packets then take the alias paths. */
	int alias = (missing & NEED_SEM) && rng_one_in(r, 3);

	/* One program in three gets a device it declares and serves itself
	 * (user_declare opens it), so that its commands reach a server. */
	if ((missing & NEED_DEV) && rng_one_in(r, 3))
		missing = (missing & ~NEED_DEV) | NEED_CTL | NEED_USER_DEVICE;

	for (size_t i = 0; i < sizeof(creators) / sizeof(creators[0]); i++) {
		struct call *m = &p->c[p->n];

		if (!(missing & creators[i].need))
			continue;
		if (p->n >= PROG_MAX_CALLS - 1)
			return 0;
		generate(m, creators[i].op, &valid);
		/* A BO that a packet can name, and that the fuzzer maps. */
		if (creators[i].op == OP_BO_CREATE) {
			m->a[1] = creators[i].need == NEED_VRAM_BO ? RADIANCE_PLACEMENT_VRAM
								   : RADIANCE_PLACEMENT_HOST;
			m->a[2] = RADIANCE_BO_MAPPABLE;
		}
		p->n++;
		if (creators[i].op == OP_SEM_CREATE && alias) {
			if (p->n >= PROG_MAX_CALLS - 1)
				return 0;
			import_alias(&p->c[p->n++], &valid);
			/* The call's semaphore is the second: the alias. */
			if (c->op != OP_SUBMIT)
				last.res[1] = 1;
		}
	}
	if (p->n >= PROG_MAX_CALLS)
		return 0;
	p->c[p->n++] = last;
	/* A submission to a device the program serves, then often an answer. */
	if (c->op == OP_SUBMIT && ((made | missing) & NEED_USER_DEVICE) && p->n < PROG_MAX_CALLS &&
	    rng_one_in(r, 2))
		generate(&p->c[p->n++], OP_USER_SERVE, &valid);
	return 1;
}

/* The worker's own fds (KCOV, the peer's socket) are below this: a raw fd
 * argument never names them. */
static int fd_floor = 3;

static int raw_fd(uint64_t raw)
{
	return (int)raw >= 0 && (int)raw < fd_floor ? -1 : (int)raw;
}

/* The device fd a call works on; -1 when there is none (a raw one then). */
static int dev_fd(struct state *st, const struct call *c, int i)
{
	int *fd = RES_GET(st->devs, c->res[i]);

	return fd ? *fd : (c->res[i] == RES_RAW ? raw_fd(c->a[5]) : -1);
}

/* The device fd for a call on an object of file `own` (-1: none): that
 * file when the call's own selector is even, since handles are per file;
 * else the call's own pick, so that a handle meets another file too. */
static int obj_dev(struct state *st, const struct call *c, int own)
{
	return own >= 0 && !(c->res[0] & 1) ? own : dev_fd(st, c, 0);
}

static struct bo_res *pick_bo(struct state *st, uint32_t sel)
{
	return RES_GET(st->bos, sel);
}

static uint32_t bo_handle(struct state *st, const struct call *c, int i)
{
	struct bo_res *bo = pick_bo(st, c->res[i]);

	return bo ? bo->handle : (uint32_t)c->a[5];
}

static uint32_t sem_handle(struct state *st, const struct call *c, int i)
{
	struct sem_res *s = RES_GET(st->sems, c->res[i]);

	return s ? s->handle : (uint32_t)c->a[5];
}

static struct queue_res *pick_queue(struct state *st, uint32_t sel)
{
	return RES_GET(st->queues, sel);
}

static int sel_fd(int *v, uint32_t n, uint32_t sel, uint64_t raw)
{
	uint32_t count = n < RES_MAX ? n : RES_MAX;

	return count && sel != RES_RAW ? v[sel % count] : raw_fd(raw);
}

#define SEL_FD(list, sel, raw) sel_fd((list).v, (list).n, (sel), (raw))

/* A user pointer for an ioctl that takes one: a real buffer, or not. */
static void *bogus_ptr(uint64_t kind, void *real, size_t len)
{
	switch (kind % 12) {
	case 0:
		return NULL;
	case 1:
		return (void *)0xffff888000000000ul;	/* kernel memory */
	case 2:
		return (void *)0x1000;			/* unmapped */
	case 3:
		return (uint8_t *)real + len - 1;	/* runs off the end */
	default:
		return real;
	}
}

/* Three pages of each thread's: writable, unmapped, read-only. */
static __thread uint8_t *arg_pages;

/*
 * A typed ioctl, with its argument where `c` says (enum arg_place); what
 * the driver writes back lands in `arg` as ever. -errno, or 0.
 */
static int call_ioctl(const struct call *c, int fd, unsigned long cmd, void *arg)
{
	size_t size = _IOC_SIZE(cmd);
	uint8_t *at;
	int ret;

	if (!arg_pages) {
		arg_pages = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (arg_pages == MAP_FAILED || mprotect(arg_pages + PAGE, PAGE, PROT_NONE)) {
			arg_pages = NULL;
			return xioctl(fd, cmd, arg);
		}
	}
	switch ((c->how & CALL_PLACE) >> CALL_PLACE_SHIFT) {
	case ARG_STRADDLE:
		/* Its last 8 bytes in the unmapped page. */
		at = arg_pages + PAGE - size + 8;
		memcpy(at, arg, size - 8);
		return xioctl(fd, cmd, at);
	case ARG_READ_ONLY:
		at = arg_pages + 2 * PAGE;
		if (mprotect(at, PAGE, PROT_READ | PROT_WRITE))
			return xioctl(fd, cmd, arg);
		memcpy(at, arg, size);
		mprotect(at, PAGE, PROT_READ);
		ret = xioctl(fd, cmd, at);
		memcpy(arg, at, size);
		return ret;
	case ARG_SHORT:
		/* USER_DECLARE's layout of ABI 1.9 is still taken: the
		 * copy of an older layout into the current one's defaults. */
		if (cmd == RADIANCE_IOCTL_USER_DECLARE)
			size = RADIANCE_USER_DECLARE_SIZE_V1_9;
		else
			size -= 8;
		return xioctl(fd, _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size), arg);
	case ARG_LONG:
		at = arg_pages;
		memcpy(at, arg, size);
		memset(at + size, 0, 8);
		ret = xioctl(fd, _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size + 8), at);
		memcpy(arg, at, size);
		return ret;
	case ARG_WRITE_ONLY:
		return xioctl(fd, _IOC(_IOC_WRITE, _IOC_TYPE(cmd), _IOC_NR(cmd), size), arg);
	default:
		return xioctl(fd, cmd, arg);
	}
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

/* A word of VRAM BO `vram` that a kernel of up to 64 threads can index
 * from (the device's 32-bit address), or anything if there is none. */
static uint32_t vram_word(struct rng *r, const struct bo_res *vram)
{
	if (!vram || !vram->device_address || vram->size < 512 || rng_one_in(r, 16))
		return rng_next(r);
	return vram->device_address + 4 * rng_below(r, (vram->size - 256) / 4);
}

#define PRINTF_LIMIT 64

/*
 * Puts a launch block (or, with `desc`, a descriptor and its params) at
 * `off` of mapped HOST BO `bo`: a builtin kernel whose params name words of
 * `vram`, then an empty printf ring, so that most launches run to their
 * end; one in six has fewer params than its kernel reads, one in eight a
 * field of anything. Returns the bytes the packet names, 0 if `bo` is not
 * mapped there.
 */
static uint64_t write_launch(struct bo_res *bo, uint64_t off, struct rng *r, int desc, const struct bo_res *vram)
{
	static const uint32_t pcs[] = {
		RADIANCE_BUILTIN_FILL_U32, RADIANCE_BUILTIN_COPY_U32, RADIANCE_BUILTIN_VECADD_U32,
		RADIANCE_BUILTIN_PRINTF_U32,
	};
	uint32_t pc = rng_one_in(r, 32) ? (rng_one_in(r, 2) ? RADIANCE_BUILTIN_SPIN : 0x1000) :
					  pcs[rng_below(r, sizeof(pcs) / sizeof(pcs[0]))];
	uint32_t params[4] = { vram_word(r, vram), vram_word(r, vram), vram_word(r, vram), 1 + rng_below(r, 64) };
	uint32_t psize = rng_one_in(r, 6) ? 4 * rng_below(r, 4) : sizeof(params);
	/* One in eight runs more threads than the device's progress step
	 * (1024 threads), and off the end of its BO. */
	uint32_t block = rng_one_in(r, 8) ? 1 + rng_below(r, 2048) : 1 + rng_below(r, 32);
	uint8_t buf[256];
	uint64_t len;

	if (pc == RADIANCE_BUILTIN_PRINTF_U32)
		params[1] = 1 + rng_below(r, 8);
	if (!bo || !bo->map || off + PAGE > bo->size)
		return 0;
	memset(buf, 0, sizeof(buf));
	if (desc) {
		struct radiance_launch_desc *d = (void *)buf;

		d->start_pc = RADIANCE_BUILTIN_START;
		d->kernel_pc = pc;
		d->regs_per_thread = 1 + rng_below(r, 4);
		for (int i = 0; i < 3; i++) {
			d->grid[i] = i ? 1 : 1 + rng_below(r, 2);
			d->block[i] = i ? 1 : block;
		}
		/* The params after the descriptor, in the same BO. */
		d->params = bo->handle;
		d->params_offset = off + 128;
		d->params_size = psize;
		memcpy(buf + 128, params, psize);
		len = sizeof(*d);
	} else {
		struct radiance_launch_block *b = (void *)buf;
		struct radiance_printf_ring *ring = (void *)(buf + sizeof(*b) + psize);

		b->entry_pc = pc;
		b->regs_per_thread = 1 + rng_below(r, 4);
		for (int i = 0; i < 3; i++) {
			b->grid[i] = i ? 1 : 1 + rng_below(r, 2);
			b->block[i] = i ? 1 : block;
		}
		b->params_size = psize;
		memcpy(b + 1, params, psize);
		ring->limit = PRINTF_LIMIT;
		len = sizeof(*b) + psize + sizeof(*ring) + PRINTF_LIMIT;
	}
	if (rng_one_in(r, 8))
		((uint32_t *)buf)[rng_below(r, 40)] = rng_value(r, NULL);
	guarded_copy(bo->map + off, buf, sizeof(buf));
	return len;
}

/* A BO of the queue's file (handles are per file) and of `placement`
 * (0: any), from selector `sel` on; NULL if the file has none. */
static struct bo_res *queue_bo(struct state *st, const struct queue_res *q, uint32_t placement, uint32_t sel)
{
	uint32_t n = RES_COUNT(st->bos);

	for (uint32_t i = 0; i < n; i++) {
		struct bo_res *b = &st->bos.v[(sel + i) % n];

		if (b->fd == q->fd && b->size && (!placement || b->placement == placement))
			return b;
	}
	return NULL;
}

static struct sem_res *queue_sem(struct state *st, const struct queue_res *q, uint32_t sel)
{
	uint32_t n = RES_COUNT(st->sems);

	for (uint32_t i = 0; i < n; i++) {
		struct sem_res *s = &st->sems.v[(sel + i) % n];

		if (s->fd == q->fd)
			return s;
	}
	return NULL;
}

/* A range of `unit`-aligned bytes in a BO of `size` bytes, at most 64 KiB:
 * the emulated device's time goes by the byte. */
static void pick_range(struct rng *r, uint64_t size, uint64_t unit, uint64_t *off, uint64_t *len)
{
	uint64_t units = size / unit, first = units ? rng_below(r, units) : 0;
	uint64_t most = units - first < 65536 / unit ? units - first : 65536 / unit;

	*off = first * unit;
	*len = most ? (1 + rng_below(r, most)) * unit : unit;
}

/*
 * One packet for queue `q`, naming objects of its file. Valid, so that the
 * queue goes on to issue commands, run them and complete (a queue stops at
 * its first bad packet); one in eight has one thing wrong with it.
 */
static void gen_packet(struct state *st, struct queue_res *q, struct rng *r, struct radiance_packet *out)
{
	static const uint8_t kinds[] = {
		RADIANCE_PACKET_NOP, RADIANCE_PACKET_FENCE, RADIANCE_PACKET_FILL, RADIANCE_PACKET_FILL,
		RADIANCE_PACKET_FILL, RADIANCE_PACKET_COPY, RADIANCE_PACKET_COPY, RADIANCE_PACKET_COPY,
		RADIANCE_PACKET_LAUNCH, RADIANCE_PACKET_LAUNCH, RADIANCE_PACKET_LAUNCH_DESC,
		RADIANCE_PACKET_READ_COUNTER, RADIANCE_PACKET_TIMESTAMP, RADIANCE_PACKET_WAIT_SEMAPHORE,
		RADIANCE_PACKET_SIGNAL_SEMAPHORE, RADIANCE_PACKET_SIGNAL_SEMAPHORE,
	};
	uint32_t sel = rng_below(r, 8);
	struct bo_res *vram = queue_bo(st, q, RADIANCE_PLACEMENT_VRAM, sel);
	struct bo_res *host = queue_bo(st, q, RADIANCE_PLACEMENT_HOST, sel);
	struct sem_res *s = queue_sem(st, q, sel);
	uint64_t off, len;

	memset(out, 0, sizeof(*out));
	out->header.kind = kinds[rng_below(r, sizeof(kinds))];
	out->header.flags = rng_one_in(r, 4) ? RADIANCE_PACKET_BARRIER : 0;
	switch (out->header.kind) {
	case RADIANCE_PACKET_FILL: {
		struct radiance_fill_packet *p = (void *)out;

		if (!vram)
			break;
		p->dst = vram->handle;
		p->pattern_size = 1u << rng_below(r, 3);
		pick_range(r, vram->size, p->pattern_size, &off, &len);
		p->dst_offset = off;
		p->size = len;
		p->pattern = rng_next(r) & (p->pattern_size == 4 ? ~0u : (1u << (8 * p->pattern_size)) - 1);
		break;
	}
	case RADIANCE_PACKET_COPY: {
		struct radiance_copy_packet *p = (void *)out;
		struct bo_res *src = rng_one_in(r, 2) || !host ? vram : host;
		struct bo_res *dst = src == host || rng_one_in(r, 2) || !host ? vram : host;

		if (!src || !dst)
			break;
		p->src = src->handle;
		p->dst = dst->handle;
		pick_range(r, src->size < dst->size ? src->size : dst->size, 1, &off, &len);
		p->src_offset = off;
		p->size = len;
		/* Within one BO, the two halves: ranges must not overlap. */
		if (src == dst) {
			p->size = src->size / 2 < len ? src->size / 2 : len;
			p->src_offset = 0;
			p->dst_offset = src->size - p->size;
		}
		break;
	}
	case RADIANCE_PACKET_LAUNCH:
	case RADIANCE_PACKET_LAUNCH_DESC: {
		struct radiance_launch_packet *p = (void *)out;
		struct bo_res *ring = queue_bo(st, q, RADIANCE_PLACEMENT_HOST, sel + 1);
		int desc = out->header.kind == RADIANCE_PACKET_LAUNCH_DESC;

		if (!host || host->size < PAGE)
			break;
		p->block = host->handle;
		p->block_offset = PAGE * rng_below(r, host->size / PAGE);
		p->block_size = write_launch(host, p->block_offset, r, desc, vram);
		if (!p->block_size) {
			p->block = 0;	/* not mapped: a NOP below */
			break;
		}
		/* The printf buffer: another page than the block's. */
		if (ring && ring->size >= 2 * PAGE && !rng_one_in(r, 3)) {
			p->printf = ring->handle;
			p->printf_offset = PAGE * rng_below(r, ring->size / PAGE);
			if (ring == host && p->printf_offset == p->block_offset)
				p->printf_offset = (p->printf_offset + PAGE) % ring->size;
			p->printf_size = 4 + PRINTF_LIMIT;
		}
		break;
	}
	case RADIANCE_PACKET_READ_COUNTER:
	case RADIANCE_PACKET_TIMESTAMP: {
		struct radiance_counter_packet *p = (void *)out;

		if (!vram)
			break;
		p->dst = vram->handle;
		p->counter = out->header.kind == RADIANCE_PACKET_READ_COUNTER ? rng_below(r, 3) : 0;
		p->dst_offset = vram->size >= 8 ? 8 * rng_below(r, vram->size / 8) : 0;
		break;
	}
	case RADIANCE_PACKET_WAIT_SEMAPHORE:
	case RADIANCE_PACKET_SIGNAL_SEMAPHORE: {
		struct radiance_semaphore_packet *p = (void *)out;

		if (!s)
			break;
		p->handle = s->handle;
		if (out->header.kind == RADIANCE_PACKET_SIGNAL_SEMAPHORE) {
			p->value = s->value + 1 + rng_below(r, 3);
			s->value = p->value;
		} else {
			/* Mostly a value reached or about to be; now and then one never is. */
			p->value = rng_one_in(r, 8) ? s->value + 100
						     : s->value - rng_below(r, (s->value < 3 ? s->value : 3) + 1);
			if (rng_one_in(r, 3)) {
				out->header.flags |= RADIANCE_PACKET_SKIP_ON_FAILURE;
				p->skip = rng_below(r, 4);
			}
		}
		break;
	}
	default:
		break;
	}
	/* A kind whose objects the file lacks: a NOP instead. */
	if (out->header.kind != RADIANCE_PACKET_NOP && out->header.kind != RADIANCE_PACKET_FENCE &&
	    !out->body[0]) {
		out->header.kind = RADIANCE_PACKET_NOP;
		out->header.flags = 0;
	}
	if (!rng_one_in(r, 8))
		return;
	switch (rng_below(r, 6)) {
	case 0: {
		static const uint8_t bad_kinds[] = { 0, RADIANCE_PACKET_LAUNCH_DESC + 1, 255 };

		out->header.kind = bad_kinds[rng_below(r, sizeof(bad_kinds))];
		break;
	}
	case 1:
		out->header.flags = 1u << rng_below(r, 8);
		break;
	case 2:
		if (rng_one_in(r, 2))
			out->header.reserved = 1 + rng_below(r, 0xffff);
		else
			out->header.pad = 1 + rng_below(r, 0xffffffff);
		break;
	case 3:
		/* A handle the file does not have. */
		out->body[0] ^= (uint64_t)(1 + rng_below(r, 64));
		break;
	default:
		/* Any field: offsets past the end, sizes that wrap, junk in reserved. */
		out->body[rng_below(r, 7)] = rng_value(r, NULL);
		break;
	}
}

static void queue_publish(struct queue_res *q, uint64_t mode, uint64_t raw)
{
	uint64_t wi = q->written;

	if (mode == 6)
		wi = q->written + q->packets + 1;	/* past what the ring holds */
	else if (mode == 7)
		wi = raw;
	guarded_store64((uint64_t *)&q->ctl->write_index, wi);
}

static int queue_wait(struct state *st, const struct call *c)
{
	struct queue_res *q = pick_queue(st, c->res[0]);
	uint64_t deadline = now_ns() + (c->a[0] % 300) * 1000000ull;

	if (!q || !q->ctl)
		return -ENOENT;
	do {
		uint64_t done = 0;
		uint64_t status = 0;

		if (guarded_load(&q->ctl->read_index, 8, &done) || guarded_load(&q->ctl->status, 4, &status))
			return -EFAULT;
		if (done >= q->written || status != RADIANCE_QUEUE_ACTIVE)
			return status;
		usleep(500);
	} while (now_ns() < deadline);
	return -ETIME;
}

static int submit(struct state *st, const struct call *c)
{
	struct queue_res *q = pick_queue(st, c->res[0]);
	struct rng r;
	uint32_t n = 1 + c->a[0] % 64;
	uint64_t needs_kick = 1;
	int faulted = 0;

	if (!q || !q->ring || !q->ctl)
		return -ENOENT;
	rng_seed(&r, c->a[1]);
	for (uint32_t i = 0; i < n; i++) {
		struct radiance_packet p;
		uint64_t done = 0;

		faulted |= guarded_load(&q->ctl->read_index, 8, &done);
		if (faulted || q->written - done >= q->packets)
			break;		/* full: the wraparound is the stress test's */
		gen_packet(st, q, &r, &p);
		faulted |= guarded_copy(&q->ring[q->written % q->packets], &p, sizeof(p));
		q->written++;
	}
	queue_publish(q, c->a[2] % 8, c->a[3]);
	guarded_load(&q->ctl->needs_kick, 4, &needs_kick);
	if (needs_kick || (c->a[2] & 8)) {
		struct radiance_queue_kick k = { .queue_id = q->id };
		int ret = xioctl(q->fd, RADIANCE_IOCTL_QUEUE_KICK, &k);

		if (ret)
			return ret;
	}
	if (faulted)
		return -EFAULT;
	/* Half the time, let the device run what was submitted: a program
	 * that ends at once destroys its queues before their commands issue. */
	if (c->a[4] % 4 < 2) {
		struct call wait = { .op = OP_QUEUE_WAIT, .res = { c->res[0] }, .a = { 100 } };

		return queue_wait(st, &wait);
	}
	return 0;
}


static int sem_wait(struct state *st, const struct call *c)
{
	struct radiance_sem_wait_point points[300];
	struct radiance_sem_wait w = { 0 };
	uint32_t count = c->a[0];
	struct sem_res *first = RES_GET(st->sems, c->res[1]);
	int dev = obj_dev(st, c, first ? first->fd : -1);

	for (uint32_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		struct sem_res *s = RES_GET(st->sems, c->res[1] + i);

		points[i].handle = s ? s->handle : (uint32_t)c->a[5];
		points[i].pad = 0;
		points[i].value = s ? s->value + (i & 1) : i;
	}
	w.points = (uintptr_t)bogus_ptr(c->a[4], points, count <= 300 ? count * sizeof(points[0]) : 16);
	w.count = count;
	w.flags = c->a[1];
	switch (c->a[2] % 5) {
	case 0:
		w.deadline_ns = 0;
		break;
	case 1:
		w.deadline_ns = now_ns() - 1000;
		break;
	case 4:
		w.deadline_ns = -1 - (int64_t)c->a[3];
		break;
	default:
		w.deadline_ns = now_ns() + (c->a[3] % 20) * 1000000ull;
		break;
	}
	return call_ioctl(c, dev, RADIANCE_IOCTL_SEM_WAIT, &w);
}

static int signal_wait(struct state *st, const struct call *c)
{
	struct call wait = *c;
	int ret;

	alarm_in(1000 + (c->a[3] % 5) * 1000, c->a[1] & 1);
	wait.a[1] = 0;
	wait.a[2] = 2;		/* a deadline ahead */
	wait.a[3] = 10;
	wait.a[4] = 4;
	ret = sem_wait(st, &wait);
	alarm_in(0, 0);
	return ret;
}

static int do_mmap(struct state *st, const struct call *c)
{
	struct queue_res *q = pick_queue(st, c->res[1]);
	struct bo_res *bo = pick_bo(st, c->res[1]);
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_READ | PROT_EXEC, PROT_NONE,
		PROT_READ | PROT_WRITE, PROT_READ, PROT_READ | PROT_WRITE,
	};
	int dev = dev_fd(st, c, 0), prot = prots[c->a[3] % 8];
	uint64_t off, len;
	uint8_t *p, sink = 0;

	switch (c->a[0] % 7) {
	case 0:
		dev = obj_dev(st, c, bo ? bo->fd : -1);
		off = bo ? bo->mmap_offset : 0;
		len = bo ? bo->size : PAGE;
		break;
	case 1:
		dev = obj_dev(st, c, q ? q->fd : -1);
		off = q ? q->ring_offset : 0;
		len = q ? ((q->packets * 64ul + PAGE - 1) & ~(PAGE - 1)) : PAGE;
		break;
	case 2:
		dev = obj_dev(st, c, q ? q->fd : -1);
		off = q ? q->control_offset : 0;
		len = PAGE;
		break;
	case 3:
		off = PAGE;		/* the semaphore page */
		len = PAGE;
		break;
	case 4:
		off = 0;
		len = PAGE;
		break;
	case 5:
		/* A dma-buf of ours (or anyone's): the exporter's mmap. */
		dev = SEL_FD(st->bufs, c->res[2], c->a[5]);
		off = 0;
		len = PAGE;
		break;
	default:
		off = c->a[5] & ~(PAGE - 1);
		len = PAGE;
		break;
	}
	off += c->a[1] & ~(PAGE - 1);
	if (c->a[2] % 6 == 5)
		len += PAGE;
	else if (c->a[2] % 6 == 4 && len > PAGE)
		len -= PAGE;
	if (!len || len > (64u << 20))
		len = PAGE;
	p = map(dev, len, prot, (c->a[3] & 8) ? MAP_PRIVATE : MAP_SHARED, off);
	if (!p)
		return -errno;
	if (prot & PROT_READ)
		guarded_copy(&sink, p + len - 1, 1);
	if (prot & PROT_WRITE)
		guarded_copy(p, &sink, 1);
	*(void **)&RES_ADD(st->maps)->p = p;
	st->maps.v[(st->maps.n - 1) % RES_MAX].len = len;
	return 0;
}

static int raw_ioctl(struct state *st, const struct call *c)
{
	static const unsigned int sizes[] = { 0, 8, 16, 24, 32, 40, 56, 88, 96, 104, 120, 128 };
	uint8_t buf[512];
	struct rng r;
	unsigned long cmd;
	unsigned int nr = c->a[0] & 0xff, dir = c->a[1] % 4;
	unsigned int size = c->a[2] < 128 ? sizes[c->a[2] % 12] : c->a[2] & 0x3fff;
	int fd;

	switch (c->a[1] % 5) {
	case 3:
		fd = SEL_FD(st->ctls, c->res[0], c->a[5]);
		break;
	case 4:
		fd = SEL_FD(st->bufs, c->res[0], c->a[5]);
		break;
	default:
		fd = dev_fd(st, c, 0);
		break;
	}
	rng_seed(&r, c->a[3]);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rng_one_in(&r, 2) ? 0 : rng_next(&r);
	cmd = (c->a[0] >> 8) && (c->a[0] & 0x100) ? (unsigned long)c->a[0]
						 : _IOC(dir, RADIANCE_IOCTL_TYPE, nr, size);
	return xioctl(fd, cmd, bogus_ptr(c->a[4], buf, size < sizeof(buf) ? sizeof(buf) - size + 1 : 1));
}

/* The peer: takes an fd, does what a second process would with it, gives
 * it back. Its coverage goes to the worker's maps. */
static int send_fd(int sock, int fd, uint64_t word)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &word, .iov_len = sizeof(word) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (fd >= 0) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == sizeof(word) ? 0 : -1;
}

static int recv_fd(int sock, uint64_t *word)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = word, .iov_len = sizeof(*word) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != sizeof(*word))
		return -2;
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* What the peer does with a received fd: as a device file, it makes
 * objects in it and runs a queue; anything else it imports into its own
 * device file. Objects it makes stay in the file it sends back. */
static void peer_use(int fd, uint64_t word, int own_dev)
{
	struct radiance_bo_create bo = { .size = PAGE, .placement = RADIANCE_PLACEMENT_HOST,
					 .flags = RADIANCE_BO_MAPPABLE };
	struct radiance_queue_create qc = { .ring_packets = 16 };
	struct radiance_bo_import imp = { .fd = fd };
	struct radiance_sem_create sc = { .initial = word & 7 };
	struct radiance_get_info info = { 0 };
	struct radiance_sem_import_sync_file sif = { .fd = fd, .value = 1 };

	if (xioctl(fd, RADIANCE_IOCTL_GET_INFO, &info)) {
		xioctl(own_dev, RADIANCE_IOCTL_BO_IMPORT, &imp);
		if (!xioctl(own_dev, RADIANCE_IOCTL_SEM_CREATE, &sc)) {
			sif.handle = sc.handle;
			xioctl(own_dev, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &sif);
		}
		return;
	}
	if ((word & 1) && !xioctl(fd, RADIANCE_IOCTL_BO_CREATE, &bo)) {
		uint8_t *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bo.mmap_offset);

		if (p != MAP_FAILED) {
			static const uint8_t fill[PAGE] = { 0x5a };

			guarded_copy(p, fill, PAGE);
			munmap(p, PAGE);
		}
	}
	if (word & 2)
		xioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &sc);
	if ((word & 4) && !xioctl(fd, RADIANCE_IOCTL_QUEUE_CREATE, &qc)) {
		struct radiance_packet *ring = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
						    qc.ring_offset);
		struct radiance_queue_control *ctl = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
							  fd, qc.control_offset);
		struct radiance_queue_kick k = { .queue_id = qc.queue_id };

		if (ring != MAP_FAILED && ctl != MAP_FAILED) {
			ring[0].header.kind = RADIANCE_PACKET_NOP;
			__atomic_store_n(&ctl->write_index, 1, __ATOMIC_RELEASE);
			xioctl(fd, RADIANCE_IOCTL_QUEUE_KICK, &k);
		}
		if (ring != MAP_FAILED)
			munmap(ring, PAGE);
		if (ctl != MAP_FAILED)
			munmap(ctl, PAGE);
	}
}

static void peer_main(int sock, struct exec_env *env)
{
	struct kcov k;
	int have_kcov = !kcov_open(&k);

	for (;;) {
		uint64_t word;
		int fd = recv_fd(sock, &word);
		uint32_t fresh = 0;

		if (fd == -2)
			_exit(0);
		if (have_kcov)
			kcov_start(&k, KCOV_TRACE_PC);
		if (fd >= 0) {
			int own_dev = open("/dev/radiance0", O_RDWR | O_CLOEXEC);

			peer_use(fd, word, own_dev);
			close(own_dev);
		}
		if (have_kcov) {
			fresh = kcov_collect_pcs(&k, env->maps, env->nmaps);
			kcov_stop(&k);
		}
		__atomic_add_fetch(env->remote_fresh, fresh, __ATOMIC_RELAXED);
		send_fd(sock, fd, fresh);
		if (fd >= 0)
			close(fd);
	}
}

static int send_to_peer(struct exec_env *env, struct state *st, const struct call *c)
{
	uint64_t word = c->a[1];
	int fd, back;

	switch (c->a[0] % 4) {
	case 1:
		fd = SEL_FD(st->bufs, c->res[0], c->a[5]);
		break;
	case 2:
		fd = SEL_FD(st->syncs, c->res[0], c->a[5]);
		break;
	default:
		fd = dev_fd(st, c, 0);
		break;
	}
	if (fd < 0 || env->peer < 0)
		return -EBADF;
	if (send_fd(env->peer, fd, word))
		return -errno;
	back = recv_fd(env->peer, &word);
	if (back < 0)
		return back == -2 ? -EPIPE : 0;
	*RES_ADD(st->devs) = back;	/* the same file, under a new number */
	return 0;
}

/* A child with every object and mapping of the program: it kicks the
 * queues it inherited, signals a semaphore and makes a BO, then exits; its
 * files close under the parent's feet only as far as they are its own. */
static int do_fork(struct exec_env *env, struct state *st, const struct call *c)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (!pid) {
		struct kcov k;
		int have_kcov = !kcov_open(&k);
		struct call sub = *c;

		if (have_kcov)
			kcov_start(&k, KCOV_TRACE_PC);
		for (uint32_t i = 0; i < RES_COUNT(st->queues); i++) {
			sub.res[0] = i;
			sub.a[0] = 2;
			sub.a[2] = 8;
			submit(st, &sub);
		}
		for (uint32_t i = 0; i < RES_COUNT(st->sems); i++) {
			struct radiance_sem_signal s = { .handle = st->sems.v[i].handle,
							 .value = st->sems.v[i].value + 1 };

			xioctl(st->sems.v[i].fd, RADIANCE_IOCTL_SEM_SIGNAL, &s);
		}
		if (RES_COUNT(st->devs)) {
			struct radiance_bo_create bo = { .size = PAGE, .placement = RADIANCE_PLACEMENT_HOST };

			xioctl(st->devs.v[0], RADIANCE_IOCTL_BO_CREATE, &bo);
		}
		if (have_kcov)
			__atomic_add_fetch(env->remote_fresh, kcov_collect_pcs(&k, env->maps, env->nmaps),
					   __ATOMIC_RELAXED);
		_exit(0);
	}
	for (int i = 0; i < 400; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? 0 : -ECHILD;
		usleep(5000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -ETIME;
}

/* Opens /dev/radianceN as a resource of the program. */
static int open_device(struct state *st, unsigned int index, int flags)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/dev/radiance%u", index);
	fd = open(path, flags);
	if (fd < 0)
		return -errno;
	*RES_ADD(st->devs) = fd;
	return 0;
}

/* A device fd of the program's other than `fd`: an open one, or a new one
 * (-1 if it cannot open one). */
static int other_dev(struct state *st, int fd)
{
	for (uint32_t i = 0; i < RES_COUNT(st->devs); i++)
		if (st->devs.v[i] != fd)
			return st->devs.v[i];
	return open_device(st, 0, O_RDWR | O_CLOEXEC) ? -1 : st->devs.v[(st->devs.n - 1) % RES_MAX];
}

/* Declares a device on a control node (opening one if the program has
 * none) and opens the device it makes, which the calls after it then use
 * like any other. */
static int user_declare(struct state *st, const struct call *c)
{
	struct radiance_user_declare d = {
		.flags = c->a[5] >> 32, .dialect = c->a[0], .streams = c->a[1], .stream_depth = c->a[2],
		.cores = c->a[3] & 0xff, .warps_per_core = (c->a[3] >> 8) & 0xff,
		.threads_per_warp = (c->a[3] >> 16) & 0xff, .builtins = c->a[3] >> 24 & 0x3f,
		.vram_size = c->a[4], .caps = c->a[5] & 0xff, .pad = c->a[3] >> 48,
		.bytes_per_s = (c->a[3] >> 32 & 0xff) << 20, .threads_per_s = (c->a[3] >> 40 & 0xff) << 10,
	};
	int fd = SEL_FD(st->ctls, c->res[0], -1), ret;

	if (fd < 0 && c->res[0] != RES_RAW) {
		fd = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return -errno;
		*RES_ADD(st->ctls) = fd;
	}
	memcpy(d.name, "fuzz", 5);
	ret = call_ioctl(c, fd, RADIANCE_IOCTL_USER_DECLARE, &d);
	if (ret)
		return ret;
	st->user_frame = d.dialect == RADIANCE_DIALECT_GLUON_24 ? 24 : 16;
	st->user_inline = !!(d.flags & RADIANCE_USER_DECLARE_INLINE_BLOCKS);
	st->user_index = d.device_index;
	return open_device(st, d.device_index, O_RDWR | O_CLOEXEC);
}

/*
 * One round of serving the device declared on `fd`: reads the frames there
 * are (in a read of a few frames when a[5] is odd) and answers each on its
 * own stream, the way a server does, or not quite (per frame, 4 bits of
 * a[1]): done, failed with status a[2] at PC a[3], on another stream, or
 * never. Before answering, a host access at a frame's first address word (a
 * copy's source in both dialects) when a[4] says so, and `extra`: 1 reports
 * progress on each frame's stream, 2 retires the first frame's stream until
 * the answers are written, 3 resets the device instead of answering.
 */
static int serve_round(struct state *st, const struct call *c, int fd, unsigned int extra)
{
	uint8_t frames[4096], data[256];
	size_t size = st->user_frame ? st->user_frame : 16;
	size_t want = c->a[5] & 1 ? size * (1 + (c->a[5] >> 1) % 4) + (st->user_inline ? 8 : 0)
				  : sizeof(frames);
	ssize_t n = read(fd, frames, want);
	struct radiance_user_retire retire = { 0 };

	if (n < 0)
		return -errno;
	if (extra == 3) {
		struct radiance_user_reset a = { 0 };

		return call_ioctl(c, fd, RADIANCE_IOCTL_USER_RESET, &a);
	}
	for (ssize_t i = 0, k = 0; i + (ssize_t)size <= n; k++) {
		const uint8_t *f = frames + i;
		uint8_t r[16] = { f[0] };
		uint32_t way = (c->a[1] >> (k * 4 % 64)) & 15, addr, len;
		struct radiance_user_host_access a = { .user_ptr = (uintptr_t)data, .len = sizeof(data) };

		i += size;
		/* A KERNEL frame (type 0 in both dialects) with its block inline:
		 * the block's length, the block, zeros to 8 bytes. */
		if (st->user_inline && f[1] == 0 && i + 8 <= n) {
			memcpy(&len, frames + i, 4);
			i += 8 + ((len + 7ul) & ~7ul);
		}

		if (c->a[4] & 1) {
			memcpy(&addr, f + 3, 4);
			a.addr = addr;
			xioctl(fd, (c->a[4] & 2) ? RADIANCE_IOCTL_USER_HOST_WRITE : RADIANCE_IOCTL_USER_HOST_READ, &a);
		}
		if (extra == 1) {
			struct radiance_user_progress p = { .stream = f[0], .units = 1 + k };

			xioctl(fd, RADIANCE_IOCTL_USER_PROGRESS, &p);
		} else if (extra == 2 && k == 0) {
			retire.streams = 1u << (f[0] % 32);
			xioctl(fd, RADIANCE_IOCTL_USER_RETIRE, &retire);
		}
		if (way == 15)
			continue;
		if (way >= 12) {
			r[1] = c->a[2];
			memcpy(r + 2, &c->a[3], 4);
		} else if (way >= 10) {
			r[0] = c->a[2];
		}
		if (write(fd, r, sizeof(r)) < 0)
			break;
	}
	if (retire.streams) {
		retire.streams = 0;
		xioctl(fd, RADIANCE_IOCTL_USER_RETIRE, &retire);
	}
	return 0;
}

/* The program as the server of the devices it declared: up to four rounds
 * (a[0] bits 0-1) of serve_round, each of which the answers of the one
 * before may have given frames, with what else a server does in a[0] bits
 * 2-3. A reset the kernel made is acknowledged, and serving goes on. */
static int user_serve(struct state *st, const struct call *c)
{
	int fd = SEL_FD(st->ctls, c->res[0], -1), ret = 0, served = 0;

	for (uint64_t round = 0; round <= (c->a[0] & 3); round++) {
		ret = serve_round(st, c, fd, c->a[0] >> 2 & 3);
		if (ret == -ECONNRESET) {
			struct radiance_user_reset ack = { 0 };

			xioctl(fd, RADIANCE_IOCTL_USER_RESET, &ack);
		} else if (ret) {
			break;
		}
		served |= !ret;
	}
	/* Frames ran out after a round that answered some: served. */
	return served && ret == -EAGAIN ? 0 : ret;
}

static int user_host_access(struct state *st, const struct call *c)
{
	uint8_t buf[256];
	struct radiance_user_host_access a = {
		.addr = c->a[1], .len = c->a[3], .flags = c->a[4],
	};
	int fd = SEL_FD(st->ctls, c->res[0], -1);

	a.user_ptr = (uintptr_t)bogus_ptr(c->a[2], buf, a.len <= sizeof(buf) ? sizeof(buf) - a.len + 1 : 1);
	return call_ioctl(c, fd, (c->a[0] & 1) ? RADIANCE_IOCTL_USER_HOST_WRITE : RADIANCE_IOCTL_USER_HOST_READ, &a);
}

static int udmabuf(struct state *st, const struct call *c)
{
	/* A source of dma-bufs, not a target: udmabuf WARNs on sizes past
	 * INT_MAX pages itself, so the size stays that of the memfd. */
	uint64_t size = (c->a[0] % (64u << 20) + PAGE - 1) & ~(PAGE - 1);
	struct udmabuf_create u = { .flags = c->a[1] & 1 ? UDMABUF_FLAGS_CLOEXEC : 0, .size = size };
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC), ret, memfd;

	if (dev < 0)
		return -errno;
	memfd = memfd_create("fuzz", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	u.memfd = memfd;
	if (memfd < 0 || ftruncate(memfd, size) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		ret = -errno;
		goto out;
	}
	ret = ioctl(dev, UDMABUF_CREATE, &u);
	if (ret >= 0) {
		*RES_ADD(st->bufs) = ret;
		ret = 0;
	} else {
		ret = -errno;
	}
out:
	if (memfd >= 0)
		close(memfd);
	close(dev);
	return ret;
}

static int control_rw(struct state *st, const struct call *c, int write_it)
{
	uint8_t buf[512];
	size_t len = c->a[0] % (sizeof(buf) + 1);
	/* One in eight on a device file, which has no read or write. */
	int fd = c->res[1] % 8 == 7 ? dev_fd(st, c, 2) : SEL_FD(st->ctls, c->res[0], -1);
	ssize_t n;

	int flags = fcntl(fd, F_GETFL);

	for (size_t i = 0; i < sizeof(buf); i += 8)
		memcpy(buf + i, &c->a[1 + (i / 8) % 4], 8);
	if (write_it) {
		n = write(fd, buf, len);
	} else if (flags >= 0 && (c->a[5] & 1) && !(c->how & CALL_ASYNC)) {
		/* A read that may sleep (on a device declared READ_WAITS)
		 * until a frame, a reset or, after 1 to 4 ms, a signal (which
		 * only the main thread takes). */
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
		alarm_in(1000 * (1 + c->a[5] / 2 % 4), 0);
		n = read(fd, buf, len);
		alarm_in(0, 0);
		fcntl(fd, F_SETFL, flags);
	} else {
		n = read(fd, buf, len);
	}
	return n < 0 ? -errno : 0;
}

static int do_poll(struct state *st, const struct call *c)
{
	struct pollfd p[3] = {
		{ .fd = SEL_FD(st->ctls, c->res[0], -1), .events = POLLIN | POLLPRI | POLLOUT },
		{ .fd = SEL_FD(st->syncs, c->res[1], -1), .events = POLLIN },
		{ .fd = dev_fd(st, c, 2), .events = POLLIN },
	};

	return poll(p, 3, 0) < 0 ? -errno : 0;
}

/* A call's runner: 0, a count, or -errno. Each runs the calls of one kind
 * of object; call_exec picks it by the call's op. */
typedef int call_fn(struct exec_env *env, struct state *st, const struct call *c);

/* Opening, duplicating and closing fds; polling them; GET_INFO and raw
 * ioctls. */
static int fd_call(struct exec_env *env, struct state *st, const struct call *c)
{
	int dev = dev_fd(st, c, 0);

	switch (c->op) {
	case OP_OPEN_DEVICE: {
		int flags = O_CLOEXEC | (c->a[1] & 1 ? O_NONBLOCK : 0) | (c->a[1] & 2 ? O_RDONLY : O_RDWR);

		return open_device(st, c->a[0] % 8, flags);
	}
	case OP_CLOSE:
		switch (c->a[0] % 4) {
		case 1:
			return close(SEL_FD(st->bufs, c->res[0], c->a[5])) ? -errno : 0;
		case 2:
			return close(SEL_FD(st->syncs, c->res[0], c->a[5])) ? -errno : 0;
		case 3:
			return close(SEL_FD(st->ctls, c->res[0], c->a[5])) ? -errno : 0;
		default:
			return close(dev) ? -errno : 0;
		}
	case OP_DUP: {
		int fd = fcntl(dev, F_DUPFD_CLOEXEC, env->fd_base);

		if (fd < 0)
			return -errno;
		*RES_ADD(st->devs) = fd;
		return 0;
	}
	case OP_POLL:
		return do_poll(st, c);
	case OP_GET_INFO: {
		static const unsigned int sizes[] = { 96, 104, 120, 120, 112, 8 };
		uint8_t buf[256] = { 0 };
		unsigned int size = sizes[c->a[0] % 6];
		uint32_t in[2] = { c->a[2], c->a[3] };

		memcpy(buf, in, sizeof(in));
		return xioctl(dev, _IOC(_IOC_READ | _IOC_WRITE, RADIANCE_IOCTL_TYPE, 0x00, size), buf);
	}
	case OP_RAW_IOCTL:
		return raw_ioctl(st, c);
	default:
		return -ENOSYS;
	}
}

/* BO_CREATE: a mappable BO of up to 64 MiB is mapped at once. */
static int bo_create(struct state *st, const struct call *c, int dev)
{
	struct radiance_bo_create a = {
		.size = c->a[0], .placement = c->a[1], .flags = c->a[2], .pad = c->a[3],
		.device_address = c->a[4],
	};
	struct bo_res *bo;
	int ret = call_ioctl(c, dev, RADIANCE_IOCTL_BO_CREATE, &a);

	if (ret)
		return ret;
	bo = RES_ADD(st->bos);
	*bo = (struct bo_res){ .fd = dev, .handle = a.handle, .placement = a.placement,
			       .flags = a.flags, .size = a.size, .mmap_offset = a.mmap_offset,
			       .device_address = a.device_address };
	if ((a.flags & RADIANCE_BO_MAPPABLE) && a.size <= (64u << 20))
		bo->map = map(dev, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, a.mmap_offset);
	return 0;
}

/* Buffer objects, and dma-bufs in and out. */
static int bo_call(struct exec_env *env, struct state *st, const struct call *c)
{
	struct bo_res *bo = pick_bo(st, c->res[1]);
	int dev = c->op == OP_BO_CREATE || c->op == OP_BO_IMPORT ? dev_fd(st, c, 0)
								  : obj_dev(st, c, bo ? bo->fd : -1);

	switch (c->op) {
	case OP_BO_CREATE:
		return bo_create(st, c, dev);
	case OP_BO_DESTROY: {
		struct radiance_bo_destroy a = { .handle = bo_handle(st, c, 1), .pad = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_BO_DESTROY, &a);
	}
	case OP_BO_INFO: {
		struct radiance_bo_info a = { .handle = bo_handle(st, c, 1), .pad = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_BO_INFO, &a);
	}
	case OP_BO_EXPORT: {
		struct radiance_bo_export a = { .handle = bo_handle(st, c, 1), .flags = c->a[0],
						.pad = c->a[1] };
		int ret = call_ioctl(c, dev, RADIANCE_IOCTL_BO_EXPORT, &a);

		if (!ret)
			*RES_ADD(st->bufs) = a.fd;
		return ret;
	}
	case OP_BO_IMPORT: {
		struct radiance_bo_import a = { .fd = SEL_FD(st->bufs, c->res[1], c->a[5]),
						.flags = c->a[0] & ~1ull, .pad = c->a[1] };
		int ret = call_ioctl(c, dev, RADIANCE_IOCTL_BO_IMPORT, &a);

		if (!ret)
			*RES_ADD(st->bos) = (struct bo_res){ .fd = dev, .handle = a.handle,
							     .placement = RADIANCE_PLACEMENT_HOST,
							     .size = a.size };
		return ret;
	}
	default:
		return -ENOSYS;
	}
}

/* A file's own semaphores: create, destroy, signal, query, fail, wait. */
static int sem_call(struct exec_env *env, struct state *st, const struct call *c)
{
	struct sem_res *s = RES_GET(st->sems, c->res[1]);
	int dev = c->op == OP_SEM_CREATE ? dev_fd(st, c, 0) : obj_dev(st, c, s ? s->fd : -1);

	switch (c->op) {
	case OP_SEM_CREATE: {
		struct radiance_sem_create a = { .initial = c->a[0], .flags = c->a[1] };
		int ret = call_ioctl(c, dev, RADIANCE_IOCTL_SEM_CREATE, &a);

		if (!ret)
			*RES_ADD(st->sems) = (struct sem_res){ .fd = dev, .handle = a.handle,
							       .value = a.initial };
		return ret;
	}
	case OP_SEM_DESTROY: {
		struct radiance_sem_destroy a = { .handle = sem_handle(st, c, 1), .pad = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_SEM_DESTROY, &a);
	}
	case OP_SEM_SIGNAL: {
		struct radiance_sem_signal a = { .handle = sem_handle(st, c, 1), .pad = c->a[3] };

		a.value = (c->a[1] & 1) || !s ? c->a[2] : s->value + c->a[0];
		if (s && a.value > s->value && !call_ioctl(c, dev, RADIANCE_IOCTL_SEM_SIGNAL, &a)) {
			s->value = a.value;
			return 0;
		}
		return call_ioctl(c, dev, RADIANCE_IOCTL_SEM_SIGNAL, &a);
	}
	case OP_SEM_QUERY: {
		struct radiance_sem_query a = { .handle = sem_handle(st, c, 1), .pad = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_SEM_QUERY, &a);
	}
	case OP_SEM_FAIL: {
		struct radiance_sem_fail a = { .handle = sem_handle(st, c, 1), .error = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_SEM_FAIL, &a);
	}
	case OP_SEM_WAIT:
		return sem_wait(st, c);
	default:
		return -ENOSYS;
	}
}

/* Semaphores across files: sync_files out and in, handles of another
 * file imported as aliases. */
static int sem_share_call(struct exec_env *env, struct state *st, const struct call *c)
{
	struct sem_res *s = RES_GET(st->sems, c->res[1]);
	int dev = obj_dev(st, c, s ? s->fd : -1);

	switch (c->op) {
	case OP_SEM_EXPORT_SYNC_FILE: {
		struct radiance_sem_export_sync_file a = {
			.handle = sem_handle(st, c, 1), .flags = c->a[1] >> 1 & 3, .pad = c->a[3],
			.value = (c->a[1] & 1) || !s ? c->a[2] : s->value + c->a[0],
		};
		int ret = call_ioctl(c, dev, RADIANCE_IOCTL_SEM_EXPORT_SYNC_FILE, &a);

		if (!ret)
			*RES_ADD(st->syncs) = a.fd;
		return ret;
	}
	case OP_SEM_IMPORT_SYNC_FILE: {
		struct radiance_sem_import_sync_file a = {
			.handle = sem_handle(st, c, 1), .fd = SEL_FD(st->syncs, c->res[2], c->a[5]),
			.value = c->a[2], .flags = c->a[0] & ~1ull, .pad = c->a[1],
		};

		return call_ioctl(c, dev, RADIANCE_IOCTL_SEM_IMPORT_SYNC_FILE, &a);
	}
	case OP_SEM_IMPORT_HANDLE: {
		/* A semaphore of another file (or this one, or none) into this one:
		 * the alias joins this file's semaphores for later calls and packets.
		 * Mostly into a file that is not the semaphore's (its own is EINVAL),
		 * opened for it if the program has none. */
		struct radiance_sem_import_handle a = {
			.fd = s && c->res[2] != RES_RAW ? s->fd : dev_fd(st, c, 2),
			.handle = sem_handle(st, c, 1), .flags = c->a[0],
		};
		int into = s && dev == s->fd && (c->res[2] & 3) ? other_dev(st, s->fd) : dev;
		int ret = call_ioctl(c, into, RADIANCE_IOCTL_SEM_IMPORT_HANDLE, &a);

		if (!ret)
			*RES_ADD(st->sems) = (struct sem_res){ .fd = into, .handle = a.new_handle,
							       .value = s ? s->value : 0 };
		return ret;
	}
	default:
		return -ENOSYS;
	}
}

/* QUEUE_CREATE: the ring and the control block are mapped at once. */
static int queue_create(struct state *st, const struct call *c, int dev)
{
	struct radiance_queue_create a = { .ring_packets = c->a[0], .priority = c->a[1],
					   .flags = c->a[2] };
	struct queue_res *q;
	size_t ring_len;
	int ret = call_ioctl(c, dev, RADIANCE_IOCTL_QUEUE_CREATE, &a);

	if (ret)
		return ret;
	q = RES_ADD(st->queues);
	*q = (struct queue_res){ .fd = dev, .id = a.queue_id, .packets = a.ring_packets,
				 .ring_offset = a.ring_offset, .control_offset = a.control_offset };
	ring_len = ((size_t)a.ring_packets * RADIANCE_PACKET_SIZE + PAGE - 1) & ~(PAGE - 1);
	q->ring = map(dev, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, a.ring_offset);
	q->ctl = map(dev, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, a.control_offset);
	return 0;
}

/* Queues: their ioctls, packets written into their rings, waits on them. */
static int queue_call(struct exec_env *env, struct state *st, const struct call *c)
{
	struct queue_res *q = pick_queue(st, c->res[1]);
	int dev = c->op == OP_QUEUE_CREATE ? dev_fd(st, c, 0) : obj_dev(st, c, q ? q->fd : -1);

	switch (c->op) {
	case OP_QUEUE_CREATE:
		return queue_create(st, c, dev);
	case OP_QUEUE_DESTROY: {
		struct radiance_queue_destroy a = { .queue_id = q ? q->id : c->a[5], .pad = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_QUEUE_DESTROY, &a);
	}
	case OP_QUEUE_QUERY: {
		struct radiance_queue_query a = { .queue_id = q ? q->id : c->a[5], .pad = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_QUEUE_QUERY, &a);
	}
	case OP_QUEUE_KICK: {
		struct radiance_queue_kick a = { .queue_id = q ? q->id : c->a[5], .pad = c->a[0] };

		return call_ioctl(c, dev, RADIANCE_IOCTL_QUEUE_KICK, &a);
	}
	case OP_SUBMIT:
		return submit(st, c);
	case OP_QUEUE_WAIT:
		return queue_wait(st, c);
	default:
		return -ENOSYS;
	}
}

/* Mappings of the device's fds, and unmapping them. */
static int map_call(struct exec_env *env, struct state *st, const struct call *c)
{
	void **p;

	switch (c->op) {
	case OP_MMAP:
		return do_mmap(st, c);
	case OP_MUNMAP:
		p = (void **)RES_GET(st->maps, c->res[0]);
		if (!p || !*p)
			return -ENOENT;
		map_drop(*p);
		*p = NULL;
		return 0;
	default:
		return -ENOSYS;
	}
}

/* Other processes and signals: fds through the peer, fork with live
 * objects, signals into blocking waits. */
static int process_call(struct exec_env *env, struct state *st, const struct call *c)
{
	switch (c->op) {
	case OP_SEND_TO_PEER:
		return send_to_peer(env, st, c);
	case OP_FORK:
		return do_fork(env, st, c);
	case OP_SIGNAL_WAIT:
		return signal_wait(st, c);
	default:
		return -ENOSYS;
	}
}

/* Other drivers' objects: udmabuf's dma-bufs, sw_sync's fences. */
static int foreign_call(struct exec_env *env, struct state *st, const struct call *c)
{
	int *tl = RES_GET(st->timelines, c->res[0]);

	switch (c->op) {
	case OP_UDMABUF:
		return udmabuf(st, c);
	case OP_SW_SYNC_FENCE: {
		struct sw_sync_create_fence_data a = { .value = c->a[0] };

		if (!tl || (c->a[0] & 4)) {
			int fd = open("/sys/kernel/debug/sync/sw_sync", O_RDWR | O_CLOEXEC);

			if (fd < 0)
				return -errno;
			tl = RES_ADD(st->timelines);
			*tl = fd;
		}
		strcpy(a.name, "fuzz");
		if (ioctl(*tl, SW_SYNC_IOC_CREATE_FENCE, &a))
			return -errno;
		*RES_ADD(st->syncs) = a.fence;
		return 0;
	}
	case OP_SW_SYNC_INC: {
		uint32_t inc = c->a[0];

		return tl ? xioctl(*tl, SW_SYNC_IOC_INC, &inc) : -ENOENT;
	}
	default:
		return -ENOSYS;
	}
}

/* The control node: declaring devices and serving them. */
static int control_call(struct exec_env *env, struct state *st, const struct call *c)
{
	switch (c->op) {
	case OP_CONTROL_OPEN: {
		int fd = open("/dev/" RADIANCE_CONTROL_NODE, O_RDWR | O_CLOEXEC | O_NONBLOCK);

		if (fd < 0)
			return -errno;
		*RES_ADD(st->ctls) = fd;
		return 0;
	}
	case OP_USER_DECLARE:
		return user_declare(st, c);
	case OP_USER_HOST_ACCESS:
		return user_host_access(st, c);
	case OP_USER_RESET: {
		struct radiance_user_reset a = { .flags = c->a[0], .pad = c->a[1] };

		return call_ioctl(c, SEL_FD(st->ctls, c->res[0], -1), RADIANCE_IOCTL_USER_RESET, &a);
	}
	case OP_USER_RETIRE: {
		struct radiance_user_retire a = { .streams = c->a[0], .flags = c->a[1] };

		return call_ioctl(c, SEL_FD(st->ctls, c->res[0], -1), RADIANCE_IOCTL_USER_RETIRE, &a);
	}
	case OP_USER_PROGRESS: {
		struct radiance_user_progress a = { .stream = c->a[0], .flags = c->a[1], .units = c->a[2] };

		return call_ioctl(c, SEL_FD(st->ctls, c->res[0], -1), RADIANCE_IOCTL_USER_PROGRESS, &a);
	}
	case OP_CONTROL_READ:
		return control_rw(st, c, 0);
	case OP_CONTROL_WRITE:
		return control_rw(st, c, 1);
	case OP_USER_SERVE:
		return user_serve(st, c);
	default:
		return -ENOSYS;
	}
}

/* Reads a file to its end (or 64 KiB) in reads of `chunk` bytes (a whole
 * buffer if that is 0 modulo its size). */
static int read_all(const char *path, size_t chunk)
{
	static __thread char buf[4096];
	size_t total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ssize_t n = 0;

	if (fd < 0)
		return -errno;
	chunk %= sizeof(buf);
	if (!chunk)
		chunk = sizeof(buf);
	while (total < 65536 && (n = read(fd, buf, chunk)) > 0)
		total += n;
	close(fd);
	return n < 0 ? -errno : 0;
}

/* Where the module's events are: tracefs, which exec_env_init mounts if
 * the guest has not (it is no longer reached through debugfs). */
#define TRACEFS "/sys/kernel/tracing"

/* A perf event on the module's tracepoint `name`, on every task of CPU
 * `cpu` (work items too) until the program's fds are closed. */
static int perf_tracepoint(const char *name, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr), .sample_period = 1,
		.sample_type = PERF_SAMPLE_RAW,
	};
	char path[128], id[32] = { 0 };
	int fd;

	snprintf(path, sizeof(path), "%s/events/radiance/%s/id", TRACEFS, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (read(fd, id, sizeof(id) - 1) <= 0) {
		close(fd);
		return -EIO;
	}
	close(fd);
	attr.config = strtoull(id, NULL, 10);
	fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : 0;
}

/* What a person debugging sees, read while the program's objects live:
 * the module's debugfs files (an emulated device's, the one the program
 * declared last, or the module's own list), and its tracepoints, turned
 * on, read, cleared and off, or watched by perf. */
static int observe_call(struct exec_env *env, struct state *st, const struct call *c)
{
	static const char *const device_files[] = { "mem", "queues", "streams", "semaphores" };
	char path[128];

	switch (c->op) {
	case OP_DEBUGFS_READ:
		if (c->a[1] % 5 == 4)
			snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/devices");
		else
			snprintf(path, sizeof(path), "/sys/kernel/debug/radiance/radiance%u/%s",
				 c->a[0] % 4 == 3 ? st->user_index : (unsigned int)(c->a[0] % 4),
				 device_files[c->a[1] % 5]);
		return read_all(path, c->a[2]);
	case OP_TRACE_EVENTS:
		switch (c->a[0] % 5) {
		case 0:
		case 1: {
			int fd, on = c->a[0] % 5;
			ssize_t n;

			snprintf(path, sizeof(path), "%s/events/radiance/enable", TRACEFS);
			fd = open(path, O_WRONLY | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			n = write(fd, on ? "1" : "0", 1);
			close(fd);
			if (n != 1)
				return -EIO;
			__atomic_store_n(&env->tracing, on, __ATOMIC_RELAXED);
			return 0;
		}
		case 2:
			snprintf(path, sizeof(path), "%s/trace", TRACEFS);
			return read_all(path, 0);
		case 4: {
			static const char *const events[] = {
				"radiance_packet", "radiance_packet_done", "radiance_cmd_issue",
				"radiance_cmd_done", "radiance_sem_signal", "radiance_wait_done",
				"radiance_reset", "radiance_user_io",
			};

			return perf_tracepoint(events[c->a[1] % 8], c->a[2] % 2);
		}
		default: {
			int fd;

			snprintf(path, sizeof(path), "%s/trace", TRACEFS);
			fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
			if (fd < 0)
				return -errno;
			close(fd);
			return 0;
		}
		}
	default:
		return -ENOSYS;
	}
}

static call_fn *const call_fns[OP_COUNT] = {
	[OP_OPEN_DEVICE] = fd_call, [OP_CLOSE] = fd_call, [OP_DUP] = fd_call,
	[OP_GET_INFO] = fd_call, [OP_RAW_IOCTL] = fd_call, [OP_POLL] = fd_call,
	[OP_BO_CREATE] = bo_call, [OP_BO_DESTROY] = bo_call, [OP_BO_INFO] = bo_call,
	[OP_BO_EXPORT] = bo_call, [OP_BO_IMPORT] = bo_call,
	[OP_SEM_CREATE] = sem_call, [OP_SEM_DESTROY] = sem_call, [OP_SEM_SIGNAL] = sem_call,
	[OP_SEM_QUERY] = sem_call, [OP_SEM_FAIL] = sem_call, [OP_SEM_WAIT] = sem_call,
	[OP_SEM_EXPORT_SYNC_FILE] = sem_share_call, [OP_SEM_IMPORT_SYNC_FILE] = sem_share_call,
	[OP_SEM_IMPORT_HANDLE] = sem_share_call,
	[OP_QUEUE_CREATE] = queue_call, [OP_QUEUE_DESTROY] = queue_call,
	[OP_QUEUE_QUERY] = queue_call, [OP_QUEUE_KICK] = queue_call, [OP_SUBMIT] = queue_call,
	[OP_QUEUE_WAIT] = queue_call,
	[OP_MMAP] = map_call, [OP_MUNMAP] = map_call,
	[OP_SEND_TO_PEER] = process_call, [OP_FORK] = process_call, [OP_SIGNAL_WAIT] = process_call,
	[OP_UDMABUF] = foreign_call, [OP_SW_SYNC_FENCE] = foreign_call, [OP_SW_SYNC_INC] = foreign_call,
	[OP_CONTROL_OPEN] = control_call, [OP_USER_DECLARE] = control_call,
	[OP_USER_HOST_ACCESS] = control_call, [OP_USER_RESET] = control_call,
	[OP_CONTROL_READ] = control_call, [OP_CONTROL_WRITE] = control_call,
	[OP_USER_SERVE] = control_call, [OP_USER_RETIRE] = control_call, [OP_USER_PROGRESS] = control_call,
	[OP_DEBUGFS_READ] = observe_call, [OP_TRACE_EVENTS] = observe_call,
};

/* Runs one call; returns its result (0, a count, or -errno). */
static int call_exec(struct exec_env *env, struct state *st, const struct call *c)
{
	call_fn *run = c->op < OP_COUNT ? call_fns[c->op] : NULL;

	return run ? run(env, st, c) : -ENOSYS;
}

static void *thread_main(void *arg)
{
	struct exec_env *env = arg;
	struct kcov k;
	int have_kcov = !kcov_open(&k);
	sigset_t alarm;

	/* The timer's signal is for the main thread's waits. */
	sigemptyset(&alarm);
	sigaddset(&alarm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alarm, NULL);
	pthread_mutex_lock(&env->lock);
	env->busy = 0;		/* ready: its KCOV fd is open */
	pthread_cond_broadcast(&env->cond);
	for (;;) {
		struct async_job *job;

		while (!env->job && !env->stop)
			pthread_cond_wait(&env->cond, &env->lock);
		if (env->stop)
			break;
		job = env->job;
		env->job = NULL;
		pthread_mutex_unlock(&env->lock);
		if (have_kcov)
			kcov_start(&k, KCOV_TRACE_PC);
		call_exec(env, &job->st, &job->call);
		if (have_kcov) {
			uint32_t fresh = kcov_collect_pcs(&k, env->maps, env->nmaps);

			__atomic_add_fetch(&env->thread_fresh, fresh, __ATOMIC_RELAXED);
		}
		free(job);
		pthread_mutex_lock(&env->lock);
		env->busy = 0;
		pthread_cond_broadcast(&env->cond);
	}
	pthread_mutex_unlock(&env->lock);
	if (have_kcov)
		kcov_close(&k);
	return NULL;
}

/* Hands a call to the thread, waiting while it still runs the last one. */
static void run_async(struct exec_env *env, const struct state *st, const struct call *c)
{
	struct async_job *job = malloc(sizeof(*job));

	if (!job)
		return;
	job->call = *c;
	job->st = *st;
	pthread_mutex_lock(&env->lock);
	while (env->busy)
		pthread_cond_wait(&env->cond, &env->lock);
	env->job = job;
	env->busy = 1;
	pthread_cond_broadcast(&env->cond);
	pthread_mutex_unlock(&env->lock);
}

static void wait_async(struct exec_env *env)
{
	pthread_mutex_lock(&env->lock);
	while (env->busy)
		pthread_cond_wait(&env->cond, &env->lock);
	pthread_mutex_unlock(&env->lock);
}

int exec_env_init(struct exec_env *env, struct cover_map *maps, int nmaps, int task_maps,
		  const struct module_text *text)
{
	struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER };
	int sv[2];

	memset(env, 0, sizeof(*env));
	if (access(TRACEFS "/trace", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	env->maps = maps;
	env->nmaps = nmaps;
	env->remote_nmaps = nmaps - task_maps;
	env->text = text;
	env->kcov.fd = -1;
	env->remote.fd = -1;
	env->peer = -1;
	/* Slab allocations and user copies fail on a call's fail_nth; page
	 * allocations do not: their numbering moves between runs. */
	env->fail_nth = fault_setup(text, FAULT_SLAB | FAULT_USERCOPY) ? -1 : fault_open();
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	env->remote_fresh = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (env->remote_fresh == MAP_FAILED)
		return -errno;
	/* Before the peer and the thread: they inherit its handle. */
	if (kcov_open_remote(&env->remote, getpid()))
		env->remote.fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	env->peer_pid = fork();
	if (env->peer_pid < 0)
		return -errno;
	if (!env->peer_pid) {
		close(sv[0]);
		peer_main(sv[1], env);
	}
	close(sv[1]);
	env->peer = sv[0];
	if (kcov_open(&env->kcov))
		env->kcov.fd = -1;
	pthread_mutex_init(&env->lock, NULL);
	pthread_cond_init(&env->cond, NULL);
	env->busy = 1;
	if (pthread_create(&env->thread, NULL, thread_main, env))
		return -EAGAIN;
	wait_async(env);
	/* Everything above stays; a program's own fds come after. */
	env->fd_base = fcntl(0, F_DUPFD_CLOEXEC, 3);
	if (env->fd_base < 0)
		return -errno;
	close(env->fd_base);
	fd_floor = env->fd_base;
	return 0;
}

void exec_env_fini(struct exec_env *env)
{
	pthread_mutex_lock(&env->lock);
	env->stop = 1;
	pthread_cond_broadcast(&env->cond);
	pthread_mutex_unlock(&env->lock);
	pthread_join(env->thread, NULL);
	if (env->peer >= 0) {
		close(env->peer);
		waitpid(env->peer_pid, NULL, 0);
	}
	kcov_close(&env->kcov);
	kcov_close(&env->remote);
	if (env->fail_nth >= 0)
		close(env->fail_nth);
}

/* How many times in a row a call runs: CALL_REPEAT counts for the calls
 * that make an object (waits, forks and serving would only take long). */
static unsigned int call_repeats(const struct call *c)
{
	switch (c->op) {
	case OP_OPEN_DEVICE:
	case OP_DUP:
	case OP_BO_CREATE:
	case OP_BO_EXPORT:
	case OP_BO_IMPORT:
	case OP_SEM_CREATE:
	case OP_SEM_EXPORT_SYNC_FILE:
	case OP_SEM_IMPORT_SYNC_FILE:
	case OP_SEM_IMPORT_HANDLE:
	case OP_QUEUE_CREATE:
	case OP_MMAP:
	case OP_UDMABUF:
	case OP_SW_SYNC_FENCE:
		return 1u << 2 * ((c->how & CALL_REPEAT) >> CALL_REPEAT_SHIFT);
	default:
		return 1;
	}
}

uint32_t prog_exec(struct exec_env *env, const struct prog *p, int trace)
{
	struct state *st = calloc(1, sizeof(*st));
	uint32_t fresh = 0;

	if (!st)
		return 0;
	__atomic_store_n(env->remote_fresh, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&env->thread_fresh, 0, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < p->n; i++) {
		const struct call *c = &p->c[i];
		int ret;

		if ((c->how & CALL_ASYNC) && c->op != OP_FORK && c->op != OP_SEND_TO_PEER) {
			if (trace)
				printf("# %2u: %s (async)\n", i, op_name(c->op));
			run_async(env, st, c);
			continue;
		}
		for (unsigned int rep = 0, reps = call_repeats(c); rep < reps; rep++) {
			int fail = rep == 0 && c->fail_nth && env->fail_nth >= 0;

			if (env->kcov.fd >= 0)
				kcov_start(&env->kcov, KCOV_TRACE_PC);
			if (fail)
				fault_arm(env->fail_nth, c->fail_nth);
			ret = call_exec(env, st, c);
			if (fail)
				fault_arm(env->fail_nth, 0);
			if (env->kcov.fd >= 0)
				fresh += kcov_collect_pcs(&env->kcov, env->maps, env->nmaps);
			if (trace)
				printf("# %2u: %s = %d (%s), fail-nth %u%s\n", i, op_name(c->op), ret,
				       ret < 0 ? strerror(-ret) : "ok", fail ? c->fail_nth : 0,
				       reps > 1 ? " (repeated)" : "");
		}
	}
	wait_async(env);
	/* The cleanup's coverage (release, teardown of what is left) counts too. */
	if (env->kcov.fd >= 0)
		kcov_start(&env->kcov, KCOV_TRACE_PC);
	maps_drop_all();
	close_range(env->fd_base, ~0u, 0);
	if (__atomic_exchange_n(&env->tracing, 0, __ATOMIC_RELAXED)) {
		struct call off = { .op = OP_TRACE_EVENTS };

		call_exec(env, st, &off);
	}
	if (env->kcov.fd >= 0)
		fresh += kcov_collect_pcs(&env->kcov, env->maps, env->nmaps);
	/* What the work items did for the program, as far as they got. */
	fresh += kcov_collect_pcs(&env->remote, env->maps, env->remote_nmaps);
	free(st);
	return fresh + __atomic_load_n(&env->thread_fresh, __ATOMIC_RELAXED) +
	       __atomic_load_n(env->remote_fresh, __ATOMIC_RELAXED);
}

void prog_collect_hints(struct exec_env *env, const struct prog *p, struct hints *h)
{
	struct state *st = calloc(1, sizeof(*st));

	if (!st || env->kcov.fd < 0) {
		free(st);
		return;
	}
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->c[i].op == OP_FORK || p->c[i].op == OP_SEND_TO_PEER)
			continue;
		kcov_start(&env->kcov, KCOV_TRACE_CMP);
		call_exec(env, st, &p->c[i]);
		kcov_collect_hints(&env->kcov, env->text, h);
	}
	kcov_stop(&env->kcov);
	maps_drop_all();
	close_range(env->fd_base, ~0u, 0);
	free(st);
}
