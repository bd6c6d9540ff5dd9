// SPDX-License-Identifier: GPL-2.0
/* Fault injection for radiance-fuzz; see fault.h. */
#define _GNU_SOURCE
#include "fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const fault_types[] = { "failslab", "fail_usercopy", "fail_page_alloc" };
#define N_FAULT_TYPES (sizeof(fault_types) / sizeof(fault_types[0]))

static int write_str(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, v, strlen(v));
	close(fd);
	return n == (ssize_t)strlen(v) ? 0 : -EIO;
}

/* A type is left out by a require range no stack can match. */
int fault_setup(const struct module_text *text, unsigned int types)
{
	char lo[32], hi[32], path[128];
	int ret = 0;

	for (size_t i = 0; i < N_FAULT_TYPES; i++) {
		static const char *const settings[][2] = {
			{ "ignore-gfp-wait", "N" }, { "ignore-gfp-highmem", "N" }, { "min-order", "0" },
			{ "verbose", "0" }, { "stacktrace-depth", "32" },
		};
		int on = types & (1u << i);

		snprintf(lo, sizeof(lo), "%llu", on ? (unsigned long long)text->lo : 0);
		snprintf(hi, sizeof(hi), "%llu", on ? (unsigned long long)text->hi : 1);
		for (size_t j = 0; j < sizeof(settings) / sizeof(settings[0]); j++) {
			snprintf(path, sizeof(path), "/sys/kernel/debug/%s/%s", fault_types[i], settings[j][0]);
			if (access(path, F_OK) == 0)
				ret |= write_str(path, settings[j][1]);
		}
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/require-start", fault_types[i]);
		ret |= write_str(path, lo);
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/require-end", fault_types[i]);
		ret |= write_str(path, hi);
	}
	return ret;
}

int fault_open(void)
{
	int fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

void fault_arm(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(fd, buf, len, 0) != len)
		perror("fail-nth");
}

int fault_left(int fd)
{
	char buf[16] = { 0 };

	if (pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
		return -1;
	return atoi(buf);
}
