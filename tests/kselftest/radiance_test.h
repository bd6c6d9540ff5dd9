/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the Radiance kselftests. */
#ifndef RADIANCE_TEST_H
#define RADIANCE_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "radiance.h"

/* The harness (included before this file) gives a test 30 s. On the debug
 * kernel (KASAN, kmemleak, lockdep, under TCG) the long create-and-free
 * cycles need more; a hang still fails, later. */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 120
#endif

/* Whether a loop of many cycles of the same work (a leak test) should go
 * on after `done` cycles begun at CLOCK_MONOTONIC `start_ns`: at least
 * `least`, at most `most`, and no more than fit in a quarter of the
 * harness's per-test timeout at the pace measured so far. A slow machine
 * runs fewer cycles; none runs into the harness's timeout. */
#ifdef TEST_TIMEOUT_DEFAULT
static inline int radiance_more_cycles(int64_t start_ns, int done, int least, int most)
{
	struct timespec t;
	int64_t spent;

	if (done < least)
		return 1;
	if (done >= most)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t);
	spent = t.tv_sec * 1000000000LL + t.tv_nsec - start_ns;
	/* The next cycle too must fit. */
	return spent + spent / done < TEST_TIMEOUT_DEFAULT * 1000000000LL / 4;
}
#endif

/* The device nodes the guest job creates, by loading the module with
 * emulated_devices=RADIANCE_TEST_DEVICES. */
#define RADIANCE_TEST_DEVICES 2
/* ... and emulated_vram_mib=RADIANCE_TEST_VRAM_MIB. */
#define RADIANCE_TEST_VRAM_MIB 64
/* ... and launch_timeout_ms=RADIANCE_TEST_TIMEOUT_MS. */
#define RADIANCE_TEST_TIMEOUT_MS 100

static inline int radiance_open(int index)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/radiance%d", index);
	return open(path, O_RDWR | O_CLOEXEC);
}

/* CLOCK_MONOTONIC in nanoseconds, as SEM_WAIT's deadlines are. */
static inline int64_t radiance_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* ioctl() returning -errno, so a test can compare with one value. */
static inline int radiance_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* What the device behind `fd` implements (RADIANCE_CAP_*), 0 if unknown. */
static inline uint64_t radiance_caps(int fd)
{
	struct radiance_get_info info = { 0 };

	return radiance_ioctl(fd, RADIANCE_IOCTL_GET_INFO, &info) ? 0 : info.caps;
}

/* Whether the CPU can map the test devices' VRAM (device 0's, as they are
 * all alike): not in gluon-sim mode, whose VRAM lives in the sim's process
 * (MAPPABLE VRAM BOs are then EOPNOTSUPP). */
static inline int radiance_vram_mappable(void)
{
	int fd = radiance_open(0);
	uint64_t caps = fd < 0 ? 0 : radiance_caps(fd);

	if (fd >= 0)
		close(fd);
	return !!(caps & RADIANCE_CAP_VRAM_MAPPABLE);
}

/* For a test body (kselftest_harness.h): skips the test, saying why, where
 * the CPU cannot map VRAM. */
#define SKIP_UNLESS_VRAM_MAPPABLE()                                                         \
	do {                                                                                \
		if (!radiance_vram_mappable())                                              \
			SKIP(return, "needs VRAM the CPU can map (RADIANCE_CAP_VRAM_MAPPABLE)"); \
	} while (0)

/* Whether this run loaded the module with emulated_gluon_sim on: the guest
 * job passes the run's module parameters in $RADIANCE_PARAMS_EXTRA (the
 * Rust module's parameters are not in sysfs). Bool values as the kernel
 * parses them (kstrtobool): 1, y, Y, t, T, on; the bare name is true. */
static inline int radiance_gluon_sim_mode(void)
{
	const char *params = getenv("RADIANCE_PARAMS_EXTRA") ?: "";
	const char *name = "emulated_gluon_sim";
	const char *p = params;

	while ((p = strstr(p, name))) {
		const char *v = p + strlen(name);
		int starts_word = p == params || p[-1] == ' ';

		p = v;
		if (!starts_word)
			continue;
		if (*v == '\0' || *v == ' ')
			return 1;
		if (*v == '=')
			return strchr("1yYtT", v[1]) && v[1] ? 1 : !strncmp(v + 1, "on", 2);
	}
	return 0;
}

/* Whether gluon-bridge (model mode) serves the test devices through the
 * control node, rather than the module emulating them: the guest job says
 * so in $RADIANCE_TEST_SERVER=bridge (socket: in socket mode, below). The bridge declares the emulated
 * devices' shape, but its devices are user devices (RADIANCE_BACKEND_USER)
 * whose VRAM lives in its process. */
static inline int radiance_served_by_bridge(void)
{
	const char *server = getenv("RADIANCE_TEST_SERVER");

	return server && (!strcmp(server, "bridge") || !strcmp(server, "soc") || !strcmp(server, "socket"));
}

/* Whether the bridge serves them in socket mode, in front of its sim-model
 * playing gluon-sim ($RADIANCE_TEST_SERVER=socket): every command is a
 * round trip through two processes, and the sim has no reset and prints
 * device printf to its own console. */
static inline int radiance_served_by_sim(void)
{
	const char *server = getenv("RADIANCE_TEST_SERVER");

	return server && !strcmp(server, "socket");
}

#define RADIANCE_SKIP_ON_SIM(why)                                             \
	do {                                                                  \
		if (radiance_served_by_sim())                                 \
			SKIP(return, "socket mode: " why);                    \
	} while (0)

/* Why device printf cannot be tested in socket mode. */
#define RADIANCE_SIM_PRINTF "gluon-sim prints device printf to its own console, none reaches the host"

/* Whether the bridge serves them as a Radiance SoC over a memory link
 * (gluon-bridge soc, $RADIANCE_TEST_SERVER=soc): no built-ins, and a launch
 * runs the image at 0x10000000 by the SoC's reset protocol, so a test of a
 * built-in kernel has nothing to run there. */
static inline int radiance_served_by_soc(void)
{
	const char *server = getenv("RADIANCE_TEST_SERVER");

	return server && !strcmp(server, "soc");
}

#define RADIANCE_SKIP_ON_SOC()                                                \
	do {                                                                  \
		if (radiance_served_by_soc())                                 \
			SKIP(return, "a SoC runs no built-in kernels");       \
	} while (0)

/* The backend GET_INFO must report for the test devices. */
static inline uint32_t radiance_test_backend(void)
{
	return radiance_served_by_bridge() ? RADIANCE_BACKEND_USER : RADIANCE_BACKEND_EMULATED;
}

/*
 * Ioctl `cmd` with a copy of its argument `arg` in a read-only page, so
 * that the driver cannot copy its answer back: what it returns, or -errno.
 */
static inline int radiance_ioctl_read_only(int fd, unsigned long cmd, const void *arg)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	if (page == MAP_FAILED)
		return -errno;
	memcpy(page, arg, _IOC_SIZE(cmd));
	ret = mprotect(page, 4096, PROT_READ) ? -errno : radiance_ioctl(fd, cmd, page);
	munmap(page, 4096);
	return ret;
}

/* The lowest free fd, which the next file opened gets; -errno if none. */
static inline int radiance_lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return fd;
}

/* A new BO's handle, or -errno; `out` (if given) gets what BO_CREATE said. */
static inline int radiance_bo_create(int fd, uint32_t placement, uint64_t size, uint32_t flags,
				     struct radiance_bo_create *out)
{
	struct radiance_bo_create args = {
		.size = size, .placement = placement, .flags = flags,
	};
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_BO_CREATE, &args);

	if (out)
		*out = args;
	return ret ? ret : (int)args.handle;
}

static inline int radiance_bo_destroy(int fd, uint32_t handle)
{
	struct radiance_bo_destroy args = { .handle = handle };

	return radiance_ioctl(fd, RADIANCE_IOCTL_BO_DESTROY, &args);
}

/* A value from a debugfs file of `key value` lines, or -1. */
static inline int64_t radiance_debugfs_stat(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char name[64];
	long long value;
	int64_t found = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", name, &value) == 2)
		if (!strcmp(name, key))
			found = value;
	fclose(f);
	return found;
}

/* Field `key` (key=value, decimal) of the first line of debugfs file `path`
 * (one line of key=value pairs per object) that holds `match`, or -1. */
static inline int64_t radiance_line_field(const char *path, const char *match, const char *key)
{
	FILE *f = fopen(path, "r");
	char line[512], want[64];
	int64_t found = -1;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " %s=", key);
	while (found < 0 && fgets(line, sizeof(line), f)) {
		const char *at = strstr(line, want);

		if (strstr(line, match) && at)
			found = strtoll(at + strlen(want), NULL, 10);
	}
	fclose(f);
	return found;
}

/* A value from device 0's debugfs `mem` file, or -1. */
static inline int64_t radiance_mem_stat(const char *key)
{
	return radiance_debugfs_stat("/sys/kernel/debug/radiance/radiance0/mem", key);
}

/* Runs `radctl ARGS` ($RADCTL, else /radctl) into OUT, NUL-terminated; returns
 * the bytes read, or -1 when it could not run or did not exit 0. */
static inline int radiance_radctl(const char *args, char *out, size_t len)
{
	char cmd[128];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s %s", getenv("RADCTL") ?: "/radctl", args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? (int)n : -1;
}

/* A new semaphore's handle, or -errno. */
static inline int radiance_sem_create(int fd, uint64_t initial)
{
	struct radiance_sem_create args = { .initial = initial };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_SEM_CREATE, &args);

	return ret ? ret : (int)args.handle;
}

static inline int radiance_sem_signal(int fd, uint32_t handle, uint64_t value)
{
	struct radiance_sem_signal args = { .handle = handle, .value = value };

	return radiance_ioctl(fd, RADIANCE_IOCTL_SEM_SIGNAL, &args);
}

static inline int radiance_sem_fail(int fd, uint32_t handle, uint32_t error)
{
	struct radiance_sem_fail args = { .handle = handle, .error = error };

	return radiance_ioctl(fd, RADIANCE_IOCTL_SEM_FAIL, &args);
}

static inline int radiance_sem_destroy(int fd, uint32_t handle)
{
	struct radiance_sem_destroy args = { .handle = handle };

	return radiance_ioctl(fd, RADIANCE_IOCTL_SEM_DESTROY, &args);
}

/* The value, or -errno if the semaphore failed (or the query did). */
static inline int64_t radiance_sem_value(int fd, uint32_t handle)
{
	struct radiance_sem_query args = { .handle = handle };
	int ret = radiance_ioctl(fd, RADIANCE_IOCTL_SEM_QUERY, &args);

	return ret ? ret : args.error ? -(int64_t)args.error : (int64_t)args.value;
}

/* Waits up to 10 s for a semaphore to reach `value`; 0 or -errno. */
static inline int radiance_sem_wait_for(int fd, uint32_t handle, uint64_t value)
{
	struct radiance_sem_wait_point p = { .handle = handle, .value = value };
	struct radiance_sem_wait w = { .points = (uintptr_t)&p, .count = 1 };
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	w.deadline_ns = (t.tv_sec + 10) * 1000000000LL + t.tv_nsec;
	return radiance_ioctl(fd, RADIANCE_IOCTL_SEM_WAIT, &w);
}

/* A thread's wait for point 1 of `handle` (radiance_sem_wait_for). */
struct radiance_waiter {
	int fd;
	uint32_t handle;
	int result;
};

/* pthread start routine: runs a radiance_waiter's wait into `result`. */
static inline void *radiance_waiter_run(void *arg)
{
	struct radiance_waiter *w = arg;

	w->result = radiance_sem_wait_for(w->fd, w->handle, 1);
	return NULL;
}

/* Passes a file descriptor over a unix socket (SCM_RIGHTS). */
static inline int radiance_send_fd(int sock, int fd)
{
	char byte = 0, cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

/* Receives one; -1 on error. */
static inline int radiance_recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

#endif
